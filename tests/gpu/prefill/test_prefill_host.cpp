// Host-only checks of the prefill plan's cost model (no GPU needed: runs in CI). With the reduce
// mode named (kernel) the estimate reads no device and no environment.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "prefill/prefill.hpp"
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
