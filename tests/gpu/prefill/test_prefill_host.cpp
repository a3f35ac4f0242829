// Host-only checks of the prefill plan's cost model (no GPU needed: runs in CI). With the reduce
// mode named (kernel) the estimate reads no device and no environment.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "prefill/prefill.hpp"
#include "tc/tc_weights.hpp"
#include "w4a16/core/error.hpp"

using namespace w4a16::kernels::cuda;

namespace {

bool same_tile(const PrefillConfig& a, const PrefillConfig& b) {
  return a.path == b.path && a.bm == b.bm && a.wg == b.wg && a.mb == b.mb && a.stages == b.stages && a.overlap == b.overlap &&
         a.min_blocks == b.min_blocks;
}

bool is_tma(const PrefillConfig& c) { return c.x_load == PrefillXLoad::tma || c.x_load == PrefillXLoad::tma_eb; }

}  // namespace

// Every planned TMA tile has an estimate; every twin of one (the early-issue orders, the tma_eb x
// load: the same tile and stages) is estimated as that tile, so a forced plan of any of them can
// take the automatic reduce mode; every other config is refused with an error naming "config".
TEST(PrefillHost, TwinsAreEstimatedAsTheirTileAndOthersAreRefused) {
  const std::int64_t shapes[][3] = {{1152, 896, 64}, {4096, 14336, 128}, {8192, 8192, 1024}, {57344, 8192, 4096}};
  int planned = 0, twins = 0, refused = 0;
  for (int i = 0; i < prefill_config_count(); ++i) {
    const PrefillConfig& c = prefill_config(i);
    int base = -1;
    for (int b = 0; b < prefill_config_count(); ++b)
      if (prefill_config_planned(b) && prefill_config(b).x_load == PrefillXLoad::tma && same_tile(prefill_config(b), c)) base = b;
    if (base < 0 || !is_tma(c)) {
      for (const auto& s : shapes)
        EXPECT_THROW(prefill_plan_estimate_us(s[0], s[1], s[2], i, 1, 132, PrefillSplitReduce::kernel), w4a16::Error) << c.name();
      ++refused;
      continue;
    }
    (base == i ? planned : twins) += 1;
    for (const auto& s : shapes)
      for (int split : {1, 2, 4, 8}) {
        const double own = prefill_plan_estimate_us(s[0], s[1], s[2], i, split, 132, PrefillSplitReduce::kernel);
        EXPECT_GT(own, 0.0) << c.name();
        EXPECT_DOUBLE_EQ(own, prefill_plan_estimate_us(s[0], s[1], s[2], base, split, 132, PrefillSplitReduce::kernel))
            << c.name() << " against " << prefill_config(base).name() << " split " << split;
      }
  }
  EXPECT_EQ(planned, 4);  // bm256_bn128, bm128_bn256, bm64_bn128 occ2, bm128_bn128
  EXPECT_GE(twins, 4);    // at least one early-issue twin per planned tile
  EXPECT_GT(refused, 0);  // the cp.async and mma tiles
  try {
    prefill_plan_estimate_us(1024, 1024, 64, 0, 1, 132, PrefillSplitReduce::kernel);
    ADD_FAILURE() << prefill_config(0).name() << " has no measured estimate but got one";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("config"), std::string::npos) << e.what();
  }
}

// The launcher's kernel choice (host only: no device buffers are touched): the ONE_GROUP kernel
// (one scale / zero entry per k tile) exactly for the default plan's early-issue twins of the
// planned tiles at g >= 64 or one group (channelwise, or K <= g), every dtype and scalar type;
// the per-half kernel for g = 32 with several groups, for every other config, and with
// plan.one_group = 0 (the A/B baseline).
TEST(PrefillHost, OneGroupKernelExactlyForPlannedTwinsAndWholeTileGroups) {
  int twins = 0;
  for (int i = 0; i < prefill_config_count(); ++i)
    twins += prefill_config(i).sched == 1 && prefill_config_planned(i) ? 1 : 0;
  EXPECT_EQ(twins, 3);  // bm256_bn128, bm128_bn256, bm64_bn128 occ2 (bm128_bn128 has no early-issue twin)
  for (w4a16::DType act : {w4a16::DType::f16, w4a16::DType::bf16})
    for (w4a16::ScalarType st : {w4a16::ScalarType::uint4b8, w4a16::ScalarType::uint4})
      for (int g : {32, 64, 128, 256, w4a16::kChannelwise})
        for (std::int64_t k : {std::int64_t{32}, std::int64_t{4096}}) {
          TcWeights w;
          w.act_dtype = act;
          w.scalar = st;
          w.group_size = g;
          w.n = w.n_pad = 4096;
          w.k = k;
          w.k_pad = (k + 63) / 64 * 64;
          w.groups = g == w4a16::kChannelwise ? 1 : (k + g - 1) / g;
          const bool whole = w.groups == 1 || g >= 64;
          for (int i = 0; i < prefill_config_count(); ++i) {
            const bool twin = prefill_config(i).sched == 1 && prefill_config_planned(i);
            PrefillPlan p;
            p.config = i;
            const std::string what = prefill_config(i).name() + " g=" + std::to_string(g) + " K=" + std::to_string(k) + " " +
                                     std::string(w4a16::dtype_name(act)) + " " + std::string(w4a16::scalar_type_name(st));
            p.one_group = 1;
            EXPECT_EQ(prefill_plan_uses_one_group(w, p), twin && whole) << what;
            p.one_group = 0;
            EXPECT_FALSE(prefill_plan_uses_one_group(w, p)) << what;
          }
        }
}

// A bad plan.one_group or W4A16_PREFILL_ONE_GROUP is refused with an error naming it (nothing runs).
TEST(PrefillHost, BadOneGroupSwitchIsRejected) {
  TcWeights w;
  w.act_dtype = w4a16::DType::f16;
  w.scalar = w4a16::ScalarType::uint4b8;
  w.group_size = 128;
  w.n = w.n_pad = 4096;
  w.k = w.k_pad = 4096;
  w.groups = 32;
  PrefillPlan p;
  p.config = 20;
  p.one_group = 5;
  try {
    prefill_plan_uses_one_group(w, p);
    ADD_FAILURE() << "plan.one_group = 5 accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan.one_group"), std::string::npos) << e.what();
  }
  p.one_group = -1;
  setenv("W4A16_PREFILL_ONE_GROUP", "yes", 1);
  try {
    prefill_plan_uses_one_group(w, p);
    ADD_FAILURE() << "W4A16_PREFILL_ONE_GROUP=yes accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W4A16_PREFILL_ONE_GROUP"), std::string::npos) << e.what();
  }
  unsetenv("W4A16_PREFILL_ONE_GROUP");
  EXPECT_TRUE(prefill_plan_uses_one_group(w, p));  // unset: on
}
