// Host-only checks of the prefill plan and its cost model (no GPU needed: runs in CI). With the reduce
// mode named (kernel) the estimate reads no device and no environment. Without a GPU the plan
// considers no cluster (no resident clusters to count), so the cluster entries of the measured table
// and the cluster candidates of the model are checked on the device only (the same tests there).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "moe/moe_kernels.cuh"
#include "prefill/prefill.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"
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
  EXPECT_EQ(planned, 13);  // bm256_bn128, bm128_bn256, bm64_bn128 occ2, bm128_bn128, bm128_bn128 occ2, bm192_bn192, bm128_bn192,
                           // the decode-sized bm16_bn128 occ3, bm16_bn64 occ4, bm32_bn128 occ2 / occ3 and the one-warpgroup
                           // bm64_bn128 occ3 / bm64_bn64 occ4 (early-issue order only)
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
  EXPECT_EQ(twins, 12);  // bm256_bn128, bm128_bn256, bm64_bn128 occ2, bm128_bn128 occ2, bm192_bn192, bm128_bn192 (the 8-stage
                         // bm128_bn128 has no early-issue twin), the four decode-sized tiles and the two one-warpgroup
                         // 64-token tiles (early-issue order only)
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
  w4a16::test::ScopedEnv one_group("W4A16_PREFILL_ONE_GROUP", std::string("yes"));
  try {
    prefill_plan_uses_one_group(w, p);
    ADD_FAILURE() << "W4A16_PREFILL_ONE_GROUP=yes accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W4A16_PREFILL_ONE_GROUP"), std::string::npos) << e.what();
  }
  unsetenv("W4A16_PREFILL_ONE_GROUP");
  EXPECT_TRUE(prefill_plan_uses_one_group(w, p));  // unset: on
}

// The grouped mode (the MoE's GEMMs, prefill_run_grouped) says for which configs and layers it runs, and why not:
// only the early-issue TMA configs with an even number of 64-row blocks; GEMM 1 (silu_inter > 0) needs N = 2 I and
// I a multiple of half the tile's rows.
TEST(PrefillHost, GroupedModeRefusalsNameTheReason) {
  auto refusal = [](int config, std::int64_t n, std::int64_t inter) { return prefill_grouped_refusal(config, n, inter); };
  auto has = [](const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; };
  EXPECT_TRUE(has(refusal(-1, 2048, 0), "does not exist"));
  EXPECT_TRUE(has(refusal(prefill_config_count(), 2048, 0), "does not exist"));
  int accepted = 0;
  for (int c = 0; c < prefill_config_count(); ++c) {
    const PrefillConfig& cfg = prefill_config(c);
    const std::string why = refusal(c, 2048, 0);
    SCOPED_TRACE(cfg.name());
    if (cfg.path != PrefillPath::wgmma || !is_tma(cfg) || cfg.sched == 0) {
      EXPECT_TRUE(has(why, "not an early-issue TMA config")) << why;
    } else if (cfg.bn() % 128 != 0) {
      EXPECT_TRUE(has(why, "odd number of 64-row blocks")) << why;  // the 192-row tile
    } else {
      EXPECT_EQ(why, "");
      ++accepted;
      EXPECT_EQ(refusal(c, 2 * 768, 768), "") << "Qwen3-30B-A3B GEMM 1";
      EXPECT_TRUE(has(refusal(c, 2000, 0), "not a multiple of 64"));
      EXPECT_TRUE(has(refusal(c, 1536, 700), "not 2 x silu_inter"));
      if (cfg.bn() / 2 > 64) {  // I = 832: a multiple of 64, not of 128
        EXPECT_TRUE(has(refusal(c, 2 * 832, 832), "is not a multiple of " + std::to_string(cfg.bn() / 2)));
      }
    }
  }
  EXPECT_GE(accepted, 3);  // the MoE's tiles: bm64 2-CTA (23), bm128_bn256 (22), 2-CTA bm128_bn128 (32)
  EXPECT_EQ(refusal(23, 1536, 768), "");
  EXPECT_EQ(refusal(32, 1536, 768), "");
  EXPECT_EQ(refusal(22, 1536, 768), "");
}

// prefill_run_grouped checks its arguments before it touches a device (so this runs without one): each bad
// argument is refused with an error naming it. Pointers are never dereferenced on these paths.
TEST(PrefillHost, GroupedRunRejectsBadArgumentsNamingThem) {
  alignas(16) static unsigned char buf[256];
  auto valid = [] {
    PrefillGrouped g;
    g.qweight = buf;
    g.scales = buf;
    g.n = 1536;
    g.k = 2048;
    g.group_size = 128;
    g.x = buf;
    g.rows = 256;
    g.block_expert = reinterpret_cast<const std::int32_t*>(buf);
    g.silu_inter = 768;
    g.y = buf;
    g.config = 32;
    g.expert_qweight_bytes = 1536 * 2048 / 2;
    g.expert_scales_bytes = 16 * 1536 * 2;
    return g;
  };
  auto expect_refused = [](const PrefillGrouped& g, const std::string& name) {
    try {
      prefill_run_grouped(g, nullptr);
      ADD_FAILURE() << name << ": accepted";
    } catch (const w4a16::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(name + ": ", 0), 0u) << e.what();  // the message starts with the argument
    }
  };
  PrefillGrouped g = valid();
  g.config = 12;  // not an early-issue config
  expect_refused(g, "grouped prefill config");
  g = valid();
  g.k = 2000;
  expect_refused(g, "k");
  g = valid();
  g.rows = 200;  // not a multiple of the tile's 128 tokens
  expect_refused(g, "rows");
  g = valid();
  g.block_row = reinterpret_cast<const std::int32_t*>(buf);  // a block list without its length
  expect_refused(g, "blocks");
  g = valid();
  g.block_expert = nullptr;
  expect_refused(g, "block_expert");
  g = valid();
  g.zeros_present = true;  // uint4 without zero points
  expect_refused(g, "zeros");
  g = valid();
  g.y = nullptr;
  expect_refused(g, "y");
  g = valid();
  g.y = buf + 2;
  expect_refused(g, "y");
  g = valid();
  g.silu_inter = 0;  // GEMM 2 without its row map
  expect_refused(g, "row_map / rows_out");
  g = valid();
  g.expert_scales_bytes = 8;
  expect_refused(g, "expert stride");
  g = valid();
  g.group_size = 96;
  expect_refused(g, "group_size");
}

// The MoE's grouped tiles (moe::grouped_configs): 23 / 23 at block 64, 32 / 32 at 128; W4A16_MOE_GROUPED_CONFIGS picks
// others whose tile has the block's tokens and refuses anything else, naming the knob.
TEST(PrefillHost, MoeGroupedTilesAndTheirKnob) {
  namespace mk = w4a16::kernels::cuda::moe;
  int c1 = -1, c2 = -1;
  mk::grouped_configs(64, &c1, &c2);
  EXPECT_EQ(c1, 23);
  EXPECT_EQ(c2, 23);
  mk::grouped_configs(128, &c1, &c2);
  EXPECT_EQ(c1, 32);
  EXPECT_EQ(c2, 32);
  {
    w4a16::test::ScopedEnv knob("W4A16_MOE_GROUPED_CONFIGS", std::string("22,32"));
    mk::grouped_configs(128, &c1, &c2);
    EXPECT_EQ(c1, 22);
    EXPECT_EQ(c2, 32);
  }
  for (const char* bad : {"22", "22,32,5", "x,y", "-1,32", "99,32", "23,23"}) {  // "23,23": a 64-token tile at block 128
    w4a16::test::ScopedEnv knob("W4A16_MOE_GROUPED_CONFIGS", std::string(bad));
    try {
      mk::grouped_configs(128, &c1, &c2);
      ADD_FAILURE() << bad << ": accepted";
    } catch (const w4a16::Error& e) {
      EXPECT_NE(std::string(e.what()).find("W4A16_MOE_GROUPED_CONFIGS"), std::string::npos) << e.what();
    }
  }
}

// The plans (pure functions, no GPU needed). TMA plan (default, wgmma): a TMA tile, the least
// prefill_plan_estimate_us over every TMA tile and split allowed (split rows, K tiles, no empty
// split), est_us that estimate. cp.async plan and the mma path: the rule of 2026-12-02 (tile by M,
// the smallest split that fills the SMs). Both: K covered, bounds kept, the default workspace covers.
TEST(PrefillPlan, RuleOnPerfShapesWithoutGpu) {
  const std::int64_t shapes[][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096}, {4096, 4096},
                                    {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}, {200, 360}, {392, 1344}};
  const bool wgmma_build = prefill_plan(64, 64, 64, 90, 132).config != prefill_plan(64, 64, 64, 80, 132).config;
  auto bounds = [](const PrefillPlan& p, std::int64_t n, std::int64_t k, std::int64_t m) {
    const PrefillConfig& c = prefill_config(p.config);
    const std::int64_t k_tiles = (k + 63) / 64;
    EXPECT_GE(p.split, 1);
    EXPECT_LE(p.split, kPrefillMaxSplit);
    EXPECT_GE(p.k_tiles_per_split * p.split, k_tiles);        // covers K
    EXPECT_LT((p.split - 1) * p.k_tiles_per_split, k_tiles);  // no empty split
    if (p.split > 1 && p.reduce != PrefillSplitReduce::cluster) {  // partials in the workspace: rows it holds
      const std::int64_t rows = p.split * ((m + c.bm - 1) / c.bm * c.bm);
      EXPECT_LE(static_cast<std::size_t>(rows * n * 4), prefill_workspace_bytes(n, k, 128, false, m, PrefillSplitReduce::kernel));
      if (rows > kPrefillMaxSplitRows) {  // only a table entry passes the bound
        EXPECT_TRUE(prefill_measured_plan(n, k, m, 90, 132, nullptr)) << n << "x" << k << " M " << m;
      }
    }
  };
  for (int cap : {90, 80})
    for (auto& s : shapes)
      for (std::int64_t m : {1, 17, 32, 64, 65, 100, 128, 129, 256, 1000, 1024, 4096, 4097}) {
        const PrefillPlan p = prefill_plan(s[0], s[1], m, cap, 132);
        SCOPED_TRACE("cap " + std::to_string(cap) + " N=" + std::to_string(s[0]) + " K=" + std::to_string(s[1]) +
                     " M=" + std::to_string(m) + ": " + p.describe());
        const PrefillConfig& c = prefill_config(p.config);
        EXPECT_EQ(c.path == PrefillPath::wgmma, cap == 90 && wgmma_build);
        bounds(p, s[0], s[1], m);
        // The rule-based plan: the cp.async plan on wgmma builds, the plan itself on the mma path.
        const PrefillPlan pr = c.path == PrefillPath::wgmma ? prefill_plan(s[0], s[1], m, cap, 132, PrefillXLoad::cp_async) : p;
        const PrefillConfig& cr = prefill_config(pr.config);
        EXPECT_EQ(cr.x_load, PrefillXLoad::cp_async);
        if (cr.path == PrefillPath::wgmma) {
          EXPECT_EQ(cr.bm, m <= 64 ? 64 : (m <= 128 ? 128 : 256));
        }
        bounds(pr, s[0], s[1], m);
        EXPECT_EQ(pr.est_us, 0.0);
        const std::int64_t tiles = ((s[0] + 63) / 64 * 64 + cr.bn() - 1) / cr.bn() * ((m + cr.bm - 1) / cr.bm);
        EXPECT_DOUBLE_EQ(prefill_fill_factor(cr), cr.bm == 64 ? 1.5 : (cr.bm == 128 ? 0.8 : 0.9));
        if (pr.split > 1) {
          EXPECT_LT(static_cast<double>(tiles * (pr.split - 1)), prefill_fill_factor(cr) * 132);  // smallest that fills
        }
        if (c.path != PrefillPath::wgmma) continue;
        // The TMA plan: the least estimate over every TMA tile, allowed split and reduce mode (the
        // cluster where this device runs it, with its resident clusters; none without a GPU).
        EXPECT_EQ(c.x_load, PrefillXLoad::tma);
        EXPECT_EQ(p.split > 1, p.reduce != PrefillSplitReduce::automatic);
        const int own = p.split > 1 && p.reduce == PrefillSplitReduce::cluster ? prefill_max_active_clusters(p.config, p.split) : 0;
        if (p.reduce == PrefillSplitReduce::cluster) {
          EXPECT_GT(own, 0);
        }
        EXPECT_DOUBLE_EQ(p.est_us, prefill_plan_estimate_us(s[0], s[1], m, p.config, p.split, 132, p.reduce, own));
        PrefillPlan measured;
        if (prefill_measured_plan(s[0], s[1], m, cap, 132, &measured)) {  // taken as listed (its early-issue twin)
          const int listed = prefill_sched_twin(p.config, 0);  // none for the decode-sized tiles: listed as they run
          EXPECT_EQ(listed >= 0 ? listed : p.config, measured.config);
          EXPECT_EQ(p.split, measured.split);
          EXPECT_EQ(p.reduce, measured.reduce);
          EXPECT_EQ(p.k_tiles_per_split, measured.k_tiles_per_split);
          continue;
        }
        const std::int64_t k_tiles = (s[1] + 63) / 64;
        int candidates = 0;
        for (int i = 0; i < prefill_config_count(); ++i) {
          const PrefillConfig& o = prefill_config(i);
          if (o.path != PrefillPath::wgmma || o.x_load != PrefillXLoad::tma || !prefill_config_modeled(i, m)) continue;
          for (std::int64_t split = 1; split <= kPrefillMaxSplit && split <= k_tiles; ++split) {
            const int sp = static_cast<int>(split);
            if (split == 1 || split * ((m + o.bm - 1) / o.bm * o.bm) <= kPrefillMaxSplitRows) {
              ++candidates;
              EXPECT_LE(p.est_us, prefill_plan_estimate_us(s[0], s[1], m, i, sp, 132, PrefillSplitReduce::kernel) + 1e-9) << o.name() << " split " << split;
            }
            const int clusters = prefill_max_active_clusters(i, sp);
            if (split > 1 && clusters > 0) {
              ++candidates;
              EXPECT_LE(p.est_us, prefill_plan_estimate_us(s[0], s[1], m, i, sp, 132, PrefillSplitReduce::cluster, clusters) + 1e-9)
                  << o.name() << " split " << split << " in clusters";
            }
          }
        }
        EXPECT_GE(candidates, 4);
      }
  // The measured picture the model reproduces (docs/benchmarks/prefill.md): small N takes the bm64
  // tile with K splits from M = 128 on, large M on large N the bm256 tile unsplit.
  if (wgmma_build) {
    EXPECT_EQ(prefill_config(prefill_plan(1152, 896, 128, 90, 132).config).bm, 64);
    EXPECT_GT(prefill_plan(1152, 896, 128, 90, 132).split, 1);
    EXPECT_EQ(prefill_config(prefill_plan(8192, 8192, 4096, 90, 132).config).bm, 256);
    EXPECT_EQ(prefill_plan(8192, 8192, 4096, 90, 132).split, 1);
  }
  EXPECT_THROW(prefill_plan_estimate_us(1024, 1024, 64, 0, 1, 132), w4a16::Error);  // a cp.async tile: no estimate
}

// The measured plans (prefill_plan.cu kMeasuredPrefillPlans) apply to their shape, token range and device
// only, and W4A16_PREFILL_TABLE=0 or a forced reduce mode gives the cost model back. No GPU needed for
// the entries without a cluster (llama8b.o M = 17..32: bm64, 4 splits, reduce kernel; llama8b.gate_up M = 17..32: the
// decode-sized bm32 tile, split 1).
TEST(PrefillPlan, MeasuredPlansApplyWhereMeasuredOnly) {
  const bool wgmma_build = prefill_plan(64, 64, 64, 90, 132).config != prefill_plan(64, 64, 64, 80, 132).config;
  if (!wgmma_build) GTEST_SKIP() << "this build has no sm_90a kernels: the measured plans are of the TMA tiles";
  w4a16::test::ScopedEnv table("W4A16_PREFILL_TABLE", std::nullopt), reduce("W4A16_PREFILL_SPLIT_REDUCE", std::nullopt);
  PrefillPlan e;
  for (std::int64_t m : {17, 24, 32}) {
    ASSERT_TRUE(prefill_measured_plan(28672, 4096, m, 90, 132, &e)) << "M " << m;
    EXPECT_EQ(prefill_config(e.config).bm, 32);
    EXPECT_EQ(e.split, 1);
    EXPECT_EQ(prefill_plan(28672, 4096, m, 90, 132).config, e.config);  // no measured-order twin: as listed
  }
  for (std::int64_t m : {17, 24, 32}) {
    ASSERT_TRUE(prefill_measured_plan(4096, 4096, m, 90, 132, &e)) << "M " << m;
    EXPECT_EQ(prefill_config(e.config).bm, 64);
    EXPECT_EQ(e.split, 4);
    EXPECT_EQ(e.reduce, PrefillSplitReduce::kernel);
    const PrefillPlan p = prefill_plan(4096, 4096, m, 90, 132);
    EXPECT_EQ(prefill_sched_twin(p.config, 0), e.config) << p.describe();
    EXPECT_EQ(p.split, 4) << p.describe();
  }
  EXPECT_FALSE(prefill_measured_plan(4096, 4096, 33, 90, 132, &e));    // no entry: M = 33..64 was the model's best
  EXPECT_FALSE(prefill_measured_plan(4096, 4096, 16, 90, 114, &e));    // another SM count
  EXPECT_FALSE(prefill_measured_plan(4096, 4096, 16, 80, 132, &e));    // the mma path
  EXPECT_FALSE(prefill_measured_plan(4096, 4160, 16, 90, 132, &e));    // another shape
  // Every planned point stays within the plan's bounds, the tokens of every PERF.md shape through 1100.
  const std::int64_t shapes[][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096},
                                    {4096, 4096}, {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}};
  int hits = 0;
  for (auto& s : shapes)
    for (std::int64_t m = 1; m <= 1100; ++m) {
      if (!prefill_measured_plan(s[0], s[1], m, 90, 132, &e)) continue;
      ++hits;
      const PrefillConfig& c = prefill_config(e.config);
      EXPECT_TRUE(prefill_config_planned(e.config)) << c.name();
      EXPECT_GE(e.k_tiles_per_split * e.split, (s[1] + 63) / 64);
      EXPECT_EQ(e.split > 1, e.reduce != PrefillSplitReduce::automatic);
      if (e.reduce == PrefillSplitReduce::kernel) {  // its partials fit the workspace sized for M
        const std::int64_t rows = e.split * ((m + c.bm - 1) / c.bm * c.bm);
        EXPECT_LE(static_cast<std::size_t>(rows * s[0] * 4), prefill_workspace_bytes(s[0], s[1], 128, false, m, PrefillSplitReduce::kernel))
            << s[0] << "x" << s[1] << " M " << m;
      }
    }
  EXPECT_GE(hits, 32);  // llama8b.o 1..32 alone, whatever the clusters of this machine
  // A table-only tile (no cluster needed at split 1): qwen0.5b.gate_up M = 897..1024 takes the 2-CTA
  // bm128_bn128 (stop 24), which the cost model never picks; the plan runs its early-issue twin.
  for (std::int64_t m : {897, 1000, 1024}) {
    ASSERT_TRUE(prefill_measured_plan(9728, 896, m, 90, 132, &e)) << "M " << m;
    const PrefillConfig& c = prefill_config(e.config);
    EXPECT_EQ(c.bm, 128);
    EXPECT_EQ(c.min_blocks, 2) << c.name();
    EXPECT_TRUE(prefill_config_planned(e.config));
    EXPECT_FALSE(prefill_config_modeled(e.config, m)) << c.name();
    const PrefillPlan p = prefill_plan(9728, 896, m, 90, 132);
    EXPECT_EQ(prefill_sched_twin(p.config, 0), e.config) << p.describe();
    EXPECT_EQ(prefill_config(p.config).sched, 1) << p.describe();
  }
  EXPECT_NE(prefill_sched_twin(prefill_plan(9728, 896, 896, 90, 132).config, 0), e.config);  // M = 896: not an entry of it
  // The other table-only tile: 192 weight rows x 192 tokens (3 warpgroups) takes 8192x8192 at M = 1025..1152 (six
  // 192-token blocks instead of five of 256; stop 25), split 1, its early-issue twin.
  for (std::int64_t m : {1025, 1100, 1152}) {
    ASSERT_TRUE(prefill_measured_plan(8192, 8192, m, 90, 132, &e)) << "M " << m;
    const PrefillConfig& c = prefill_config(e.config);
    EXPECT_EQ(c.bm, 192) << c.name();
    EXPECT_EQ(c.wg, 3) << c.name();
    EXPECT_EQ(e.split, 1);
    EXPECT_TRUE(prefill_config_planned(e.config));
    EXPECT_FALSE(prefill_config_modeled(e.config, m)) << c.name();
    const PrefillPlan p = prefill_plan(8192, 8192, m, 90, 132);
    EXPECT_EQ(prefill_sched_twin(p.config, 0), e.config) << p.describe();
    EXPECT_EQ(prefill_config(p.config).sched, 1) << p.describe();
  }
  EXPECT_NE(prefill_config(prefill_plan(8192, 8192, 1024, 90, 132).config).bm, 192);  // M = 1024: four 256-token blocks
  setenv("W4A16_PREFILL_TABLE", "0", 1);
  EXPECT_FALSE(prefill_measured_plan(4096, 4096, 16, 90, 132, &e));
  const PrefillPlan model = prefill_plan(4096, 4096, 16, 90, 132);
  EXPECT_NE(model.split, 4) << "the model's pick (bm64 8 splits) is what the entry replaces: " << model.describe();
  setenv("W4A16_PREFILL_TABLE", "yes", 1);
  EXPECT_THROW(prefill_plan(4096, 4096, 16, 90, 132), w4a16::Error);
  unsetenv("W4A16_PREFILL_TABLE");
  setenv("W4A16_PREFILL_SPLIT_REDUCE", "kernel", 1);
  EXPECT_FALSE(prefill_measured_plan(4096, 4096, 16, 90, 132, &e));  // a forced mode: tune runs time the model's plans
}

// The knobs name what they expected (no GPU needed: the estimate and the workspace bound read
// W4A16_PREFILL_SPLIT_REDUCE).
TEST(PrefillPlan, ReduceKnobRejectsInvalidValues) {
  w4a16::test::ScopedEnv reduce("W4A16_PREFILL_SPLIT_REDUCE", std::string("clusters"));
  EXPECT_THROW(prefill_plan_estimate_us(1152, 896, 64, 14, 2, 132), w4a16::Error);
  EXPECT_THROW(prefill_workspace_bytes(1152, 896, 128, false, 64), w4a16::Error);
  // The plan refuses it on every path, the mma path (sm_80 code, no cluster reduce) included.
  EXPECT_THROW(prefill_plan(1152, 896, 64, 90, 132), w4a16::Error);
  EXPECT_THROW(prefill_plan(1152, 896, 64, 80, 108), w4a16::Error);
  // An explicit mode does not read the environment.
  EXPECT_NO_THROW(prefill_plan_estimate_us(1152, 896, 64, 14, 2, 132, PrefillSplitReduce::cluster));
  setenv("W4A16_PREFILL_SPLIT_REDUCE", "kernel", 1);
  // The kernel reduce counts the partials in the bound on every device.
  EXPECT_GE(prefill_workspace_bytes(1152, 896, 128, false, 64), static_cast<std::size_t>(8 * 64 * 1152 * 4));
  EXPECT_NO_THROW(prefill_plan_estimate_us(1152, 896, 64, 14, 2, 132));
}

// The workspace holds a kernel-reduce table entry's partials past kPrefillMaxSplitRows (llama8b.down M = 101..128 / 193..256:
// bm128 split 8 / bm256 split 4, 1024 rows) for that layer and the M that reach an entry alone; every other layer keeps
// the bound.
TEST(PrefillPlan, WorkspaceGrowsForAKernelReduceEntryAlone) {
  w4a16::test::ScopedEnv reduce("W4A16_PREFILL_SPLIT_REDUCE", std::nullopt);
  const auto kernel_ws = [](std::int64_t n, std::int64_t k, std::int64_t m) {
    return prefill_workspace_bytes(n, k, 128, false, m, PrefillSplitReduce::kernel);
  };
  const std::size_t bound = static_cast<std::size_t>(kPrefillMaxSplitRows * 4096 * 4);
  EXPECT_GE(kernel_ws(4096, 14336, 101), static_cast<std::size_t>(8 * 128 * 4096 * 4));
  EXPECT_GE(kernel_ws(4096, 14336, 193), static_cast<std::size_t>(4 * 256 * 4096 * 4));
  EXPECT_GE(kernel_ws(4096, 14336, 4096), static_cast<std::size_t>(4 * 256 * 4096 * 4));
  EXPECT_LT(kernel_ws(4096, 14336, 100), static_cast<std::size_t>(8 * 128 * 4096 * 4));  // below the entries' ranges
  EXPECT_LT(kernel_ws(4096, 4096, 4096), 2 * bound);  // llama8b.o: the bound (and the persistent tail), not the entry's
  EXPECT_LT(kernel_ws(4096, 14335, 4096), 2 * bound);  // another K: not the entry's layer
  PrefillPlan e;
  if (prefill_measured_plan(4096, 14336, 256, 90, 132, &e)) {  // the table applies on this build (sm_90a kernels)
    EXPECT_EQ(e.split, 4);
    EXPECT_EQ(e.reduce, PrefillSplitReduce::kernel);
    EXPECT_EQ(prefill_config(e.config).bm, 256);
    ASSERT_TRUE(prefill_measured_plan(4096, 14336, 128, 90, 132, &e));
    EXPECT_EQ(e.split, 8);
    EXPECT_EQ(e.reduce, PrefillSplitReduce::kernel);
    EXPECT_EQ(prefill_config(e.config).bm, 128);
  }
}

// W4A16_PREFILL_SCHED=1|2 swaps the default plan's tile for its early-issue twin (same tile, ring,
// x path and split; prefill_sched_twin), 0 keeps the measured order; other values throw.
TEST(PrefillPlan, SchedKnobTakesTheEarlyIssueTwin) {
  const bool wgmma_build = prefill_plan(64, 64, 64, 90, 132).config != prefill_plan(64, 64, 64, 80, 132).config;
  if (!wgmma_build) GTEST_SKIP() << "this build has no sm_90a kernels: the early-issue twins are TMA tiles";
  w4a16::test::ScopedEnv sched_env("W4A16_PREFILL_SCHED", std::nullopt);
  struct Shape { std::int64_t n, k, m; };
  const Shape shapes[] = {{8192, 8192, 4096}, {28672, 4096, 1024}, {6144, 4096, 256}, {8192, 8192, 200}, {8192, 8192, 32}};
  int twins = 0, kept = 0;
  for (const Shape& sh : shapes) {
    setenv("W4A16_PREFILL_SCHED", "0", 1);
    const PrefillPlan base = prefill_plan(sh.n, sh.k, sh.m, 90, 132);
    EXPECT_EQ(prefill_config(base.config).sched, 0) << base.describe();
    for (int sched : {1, 2}) {
      setenv("W4A16_PREFILL_SCHED", std::to_string(sched).c_str(), 1);
      const PrefillPlan p = prefill_plan(sh.n, sh.k, sh.m, 90, 132);
      const int twin = prefill_sched_twin(base.config, sched);
      if (twin < 0) {  // a tile of the measured table without this order compiled (on a device: bm128_bn192 at M = 32)
        EXPECT_EQ(p.config, base.config) << "no SCHED " << sched << " twin of " << prefill_config(base.config).name();
        ++kept;
        continue;
      }
      EXPECT_EQ(p.config, twin) << p.describe();
      EXPECT_EQ(p.split, base.split) << p.describe();
      EXPECT_EQ(p.k_tiles_per_split, base.k_tiles_per_split) << p.describe();
      const PrefillConfig &a = prefill_config(base.config), &b = prefill_config(p.config);
      EXPECT_TRUE(a.bm == b.bm && a.bn() == b.bn() && a.stages == b.stages && a.x_load == b.x_load && b.sched == sched)
          << a.name() << " vs " << b.name();
      EXPECT_EQ(prefill_sched_twin(p.config, 0), base.config) << b.name();
      // The twin is estimated as its measured tile (no constants of its own yet).
      EXPECT_DOUBLE_EQ(prefill_plan_estimate_us(sh.n, sh.k, sh.m, p.config, p.split, 132),
                       prefill_plan_estimate_us(sh.n, sh.k, sh.m, base.config, base.split, 132));
      ++twins;
    }
  }
  EXPECT_EQ(twins + kept, 10);
  EXPECT_GE(twins, 8);
  setenv("W4A16_PREFILL_SCHED", "3", 1);
  EXPECT_THROW(prefill_plan(8192, 8192, 4096, 90, 132), w4a16::Error);
}

// The token split (prefill_token_split, no GPU needed): where it splits, the head is one of the candidates
// (M rounded down to a multiple of 64, 128, 192 or 256, one such block less, or half of M so rounded), both
// parts take the default plan of their token count, and the two estimates sum below the margin times the
// one-call plan's; never where the measured table plans M, nor on the mma path.
TEST(PrefillPlan, TokenSplitOnlyWhereTwoPlansEstimateLess) {
  const bool wgmma_build = prefill_plan(64, 64, 64, 90, 132).config != prefill_plan(64, 64, 64, 80, 132).config;
  if (!wgmma_build) GTEST_SKIP() << "this build has no sm_90a kernels: the token split plans the TMA tiles";
  w4a16::test::ScopedEnv split("W4A16_PREFILL_TOKEN_SPLIT", std::nullopt), table("W4A16_PREFILL_TABLE", std::nullopt);
  const std::int64_t shapes[][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096}, {4096, 4096},
                                    {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}, {5120, 5120}, {3584, 18944}};
  int splits = 0, points = 0;
  for (auto& s : shapes)
    for (std::int64_t m : {1, 40, 64, 65, 100, 130, 260, 300, 600, 1024, 1030, 1100, 1300, 2050, 2100, 2500, 4100}) {
      ++points;
      const std::string what = std::to_string(s[0]) + "x" + std::to_string(s[1]) + " M " + std::to_string(m);
      const PrefillTokenSplit ts = prefill_token_split(s[0], s[1], m, 90, 132);
      if (ts.head == 0) continue;
      ++splits;
      EXPECT_FALSE(prefill_measured_plan(s[0], s[1], m, 90, 132, nullptr)) << what;
      EXPECT_GT(ts.head, 0) << what;
      EXPECT_LT(ts.head, m) << what;
      bool candidate = false;  // M rounded down to a multiple of b, one block of b less, or half of M so rounded
      for (std::int64_t b : {64, 128, 192, 256}) candidate |= ts.head == m / b * b || ts.head == m / b * b - b || ts.head == m / 2 / b * b;
      EXPECT_TRUE(candidate) << what << ": head " << ts.head << " is not a candidate";
      const PrefillPlan whole = prefill_plan(s[0], s[1], m, 90, 132);
      for (const auto& [part, tokens] : {std::pair{&ts.head_plan, ts.head}, std::pair{&ts.tail_plan, m - ts.head}}) {
        const PrefillPlan own = prefill_plan(s[0], s[1], tokens, 90, 132);
        EXPECT_EQ(part->config, own.config) << what << " part of " << tokens;
        EXPECT_EQ(part->split, own.split) << what << " part of " << tokens;
        EXPECT_DOUBLE_EQ(part->est_us, own.est_us) << what << " part of " << tokens;
      }
      EXPECT_DOUBLE_EQ(ts.est_us, ts.head_plan.est_us + ts.tail_plan.est_us) << what;
      EXPECT_LT(ts.est_us, kPrefillTokenSplitMargin * whole.est_us) << what << ": " << ts.describe();
    }
  EXPECT_GT(splits, 0);
  EXPECT_LT(splits, points / 2);
  // llama8b.o at M = 1030: five 256-token blocks over 128 CTAs' worth of SMs make two waves for 6 more tokens
  // than M = 1024 (one wave); 1024 + 6 tokens estimate about two thirds of that.
  const PrefillTokenSplit o = prefill_token_split(4096, 4096, 1030, 90, 132);
  EXPECT_EQ(o.head, 1024) << o.describe();
  EXPECT_EQ(prefill_default_describe(4096, 4096, 1030, 90, 132).rfind("token split head 1024: ", 0), 0u)
      << prefill_default_describe(4096, 4096, 1030, 90, 132);  // what the benchmarks' plan columns print
  EXPECT_EQ(prefill_default_describe(4096, 4096, 1024, 90, 132), prefill_plan(4096, 4096, 1024, 90, 132).describe());
  EXPECT_EQ(prefill_token_split(4096, 4096, 1030, 80, 132).head, 0);  // the mma path: no estimates
  EXPECT_EQ(prefill_token_split(8192, 8192, 1100, 90, 132).head, 0);  // measured whole (bm192, 1025..1152)
  setenv("W4A16_PREFILL_TOKEN_SPLIT", "0", 1);
  EXPECT_EQ(prefill_token_split(4096, 4096, 1030, 90, 132).head, 0);
  setenv("W4A16_PREFILL_TOKEN_SPLIT", "yes", 1);
  try {
    prefill_token_split(4096, 4096, 1030, 90, 132);
    ADD_FAILURE() << "W4A16_PREFILL_TOKEN_SPLIT=yes accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W4A16_PREFILL_TOKEN_SPLIT"), std::string::npos) << e.what();
  }
}

// A measured cluster plan keeps its waves where the device holds as many clusters as SMs x CTAs per SM / split
// (the packing of the device it was timed on) or enough for the same wave count; else the model plans.
TEST(PrefillHost, ClusterEntryWavesHoldOnlyWhereTheDevicePacksThemAsMeasured) {
  EXPECT_TRUE(prefill_cluster_waves_hold(32, 33, 132, 1, 4));   // 32 clusters of 4: one wave with 33 resident
  EXPECT_TRUE(prefill_cluster_waves_hold(32, 32, 132, 1, 4));
  EXPECT_FALSE(prefill_cluster_waves_hold(32, 30, 132, 1, 4));  // two waves where the packing gives one
  EXPECT_TRUE(prefill_cluster_waves_hold(64, 66, 132, 1, 2));
  EXPECT_FALSE(prefill_cluster_waves_hold(64, 63, 132, 1, 2));
  EXPECT_TRUE(prefill_cluster_waves_hold(100, 50, 132, 1, 2));  // two waves either way
  EXPECT_FALSE(prefill_cluster_waves_hold(100, 49, 132, 1, 2));
  EXPECT_TRUE(prefill_cluster_waves_hold(33, 33, 132, 2, 8));   // two CTAs per SM: 33 clusters of 8
  EXPECT_FALSE(prefill_cluster_waves_hold(33, 31, 132, 2, 8));
  for (const auto& bad : {std::array<long, 5>{0, 1, 132, 1, 2}, {1, 0, 132, 1, 2}, {1, 1, 0, 1, 2}, {1, 1, 132, 0, 2}, {1, 1, 132, 1, 1}}) {
    try {
      prefill_cluster_waves_hold(bad[0], static_cast<int>(bad[1]), static_cast<int>(bad[2]), static_cast<int>(bad[3]), static_cast<int>(bad[4]));
      ADD_FAILURE() << "accepted " << bad[0] << ", " << bad[1] << ", " << bad[2] << ", " << bad[3] << ", " << bad[4];
    } catch (const w4a16::Error& e) {
      EXPECT_NE(std::string(e.what()).find("active_clusters"), std::string::npos) << e.what();
    }
  }
}

// A 4096 x 4096 g = 128 layer's shape without device buffers: the split checks come before any other.
void set_shape_only(TcWeights& w) {
  w.n = w.n_pad = 4096;
  w.k = w.k_pad = 4096;
  w.groups = 32;
}

// A split whose head is not inside 1..M-1 is refused naming split.head, before anything is checked
// or launched (host only).
TEST(PrefillHost, TokenSplitHeadOutsideTheTokensIsRejected) {
  TcWeights w;
  set_shape_only(w);
  alignas(16) static std::uint16_t x[16], y[16];
  for (std::int64_t head : {-1, 0, 100, 130}) {
    PrefillTokenSplit s;
    s.head = head;
    try {
      prefill_run_token_split(w, s, x, 100, 4096, y, 4096, nullptr, 0, nullptr);
      ADD_FAILURE() << "head " << head << " of 100 tokens accepted";
    } catch (const w4a16::Error& e) {
      EXPECT_NE(std::string(e.what()).find("split.head"), std::string::npos) << e.what();
    }
  }
}

// A row split whose head rows are not a multiple of both tiles' rows inside 1..N_pad-1 is refused naming split.rows,
// before anything is checked or launched (host only).
TEST(PrefillHost, RowSplitRowsOffTheTilesAreRejected) {
  TcWeights w;
  set_shape_only(w);
  alignas(16) static std::uint16_t x[16], y[16];
  int bn128 = -1, bn256 = -1;
  for (int i = 0; i < prefill_config_count(); ++i) {
    if (prefill_config(i).bn() == 128 && bn128 < 0) bn128 = i;
    if (prefill_config(i).bn() == 256 && bn256 < 0) bn256 = i;
  }
  ASSERT_GE(bn128, 0);
  ASSERT_GE(bn256, 0);
  for (const auto& [rows, tail] : {std::pair<std::int64_t, int>{-128, bn128}, {0, bn128}, {4096, bn128}, {5000, bn128}, {192, bn128},
                                   {128, bn256}, {384, bn256}}) {
    PrefillRowSplit s;
    s.rows = rows;
    s.head_plan.config = bn128;
    s.tail_plan.config = tail;
    try {
      prefill_run_row_split(w, s, x, 100, 4096, y, 4096, nullptr, 0, nullptr);
      ADD_FAILURE() << "rows " << rows << " accepted (tail rows " << prefill_config(tail).bn() << ")";
    } catch (const w4a16::Error& e) {
      EXPECT_NE(std::string(e.what()).find("split.rows"), std::string::npos) << e.what();
    }
  }
}

// A row split's head rows (prefill_full_wave_rows): the bm256 tile's full waves of whole m-block columns on 132 SMs.
TEST(PrefillPlan, FullWaveRowsAreTheTilesWholeWaves) {
  int bm256 = -1;
  for (int i = 0; i < prefill_config_count() && bm256 < 0; ++i) {
    const PrefillConfig& c = prefill_config(i);
    if (c.bm == 256 && c.bn() == 128 && c.min_blocks == 1 && c.x_load == PrefillXLoad::tma) bm256 = i;
  }
  ASSERT_GE(bm256, 0);
  EXPECT_EQ(prefill_full_wave_rows(6144, 1024, bm256, 132), 4224);   // llama8b.qkv: 192 tiles, 132 = 33 row blocks x 4
  EXPECT_EQ(prefill_full_wave_rows(4608, 1000, bm256, 132), 4224);   // Qwen2.5-7B qkv: 144 tiles
  EXPECT_EQ(prefill_full_wave_rows(6144, 2048, bm256, 132), 4224);   // 384 tiles: two waves of 8 m blocks
  EXPECT_EQ(prefill_full_wave_rows(4096, 1024, bm256, 132), 0);      // 128 tiles: no full wave
  EXPECT_EQ(prefill_full_wave_rows(16896, 256, bm256, 132), 16896);  // 132 tiles: the grid is whole waves (N_pad)
  EXPECT_EQ(prefill_full_wave_rows(6144, 1024, bm256, 114), 3584);   // 192 tiles on 114 SMs: 112 = 28 row blocks x 4
  EXPECT_EQ(prefill_full_wave_rows(57344, 256, bm256, 132), 50688);  // llama70b.gate_up: 448 tiles, 3 waves of one m block
}

// The persistent loop's split tail (host arithmetic): only a last wave of at most half the CTAs is split, into at
// most 8 parts of at least 4 k tiles, no part empty, at most one part per CTA.
TEST(PrefillPlan, SplitTailOnlyWhereTheLastWaveIsShort) {
  struct Case { std::int64_t items; int resident; std::int64_t k_tiles; int tail, split; std::int64_t kts; };
  const Case cases[] = {
      {144, 132, 64, 12, 8, 8},     // the persistent test's layer at K = 4096: 12 tiles past one wave
      {144, 132, 21, 12, 5, 5},     // K = 1344: 5 parts of 5 (the last 1)
      {144, 132, 7, 0, 1, 0},       // too few k tiles for two parts of 4
      {3584, 132, 64, 20, 6, 11},   // llama8b.gate_up M = 4096: 27 waves + 20
      {448, 132, 128, 52, 2, 64},   // llama70b.gate_up M = 256: 3 waves + 52
      {896, 132, 64, 0, 1, 0},      // llama8b.gate_up M = 1024: 104 > 66 left whole
      {264, 132, 64, 0, 1, 0},      // whole waves
      {100, 132, 64, 0, 1, 0},      // one partial wave: no persistent loop at all
      {133, 132, 9, 1, 2, 5},       // one tile past the wave: 9 k tiles as 5 + 4
  };
  for (const Case& c : cases) {
    const PrefillPersistent t = prefill_tail_split(c.items, c.resident, c.k_tiles);
    EXPECT_EQ(t.tail_items, c.tail) << c.items << " tiles on " << c.resident << ", " << c.k_tiles << " k tiles";
    if (c.tail == 0) continue;
    EXPECT_EQ(t.tail_split, c.split) << c.items;
    EXPECT_EQ(t.tail_kts, c.kts) << c.items;
    EXPECT_LE(static_cast<std::int64_t>(t.tail_items) * t.tail_split, c.resident);
    EXPECT_LT((t.tail_split - 1) * t.tail_kts, c.k_tiles) << "an empty part";
    EXPECT_GE(t.tail_split * t.tail_kts, c.k_tiles) << "k tiles left out";
  }
  EXPECT_THROW(prefill_tail_split(0, 132, 64), w4a16::Error);
  EXPECT_THROW(prefill_tail_split(144, 0, 64), w4a16::Error);
}

// The measured row splits (prefill_row_split) apply on 132 SMs of an sm_90a plan only, where the tail's cluster can be
// scheduled: never on the mma path, another SM count, or without a device (no cluster count: the measured tails reduce
// in the cluster); W4A16_PREFILL_ROW_SPLIT takes 0 / 1 and refuses anything else, naming itself.
TEST(PrefillPlan, RowSplitOnlyWhereMeasuredAndSchedulable) {
  w4a16::test::ScopedEnv knob("W4A16_PREFILL_ROW_SPLIT", std::nullopt), table("W4A16_PREFILL_TABLE", std::nullopt);
  EXPECT_EQ(prefill_row_split(6144, 4096, 1000, 80, 132).rows, 0);   // the mma path
  EXPECT_EQ(prefill_row_split(6144, 4096, 1000, 90, 114).rows, 0);   // another device
  EXPECT_EQ(prefill_row_split(6144, 4096, 512, 90, 132).rows, 0);    // no entry
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    devices = 0;
  }
  if (devices == 0) {  // no device: the tail's clusters unknown
    EXPECT_EQ(prefill_row_split(6144, 4096, 1000, 90, 132).rows, 0);
    EXPECT_EQ(prefill_row_split(6144, 4096, 1000, 90, 132).describe(), "none");
  } else {  // the measured entry (llama8b.qkv), its tail's cluster schedulable on an sm_90 device
    EXPECT_EQ(prefill_row_split(6144, 4096, 1000, 90, 132).rows, 4224);
  }
  w4a16::test::ScopedEnv bad("W4A16_PREFILL_ROW_SPLIT", std::string("yes"));
  try {
    prefill_row_split(6144, 4096, 1000, 90, 132);
    ADD_FAILURE() << "W4A16_PREFILL_ROW_SPLIT=yes accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W4A16_PREFILL_ROW_SPLIT"), std::string::npos) << e.what();
  }
}

// The cost model weighs the 2-CTA bm128_bn128 (and its early-issue twin) up to 128 tokens and never the 192 x 192 tile
// (stop 27: over every M both lost, 1.084x; the 2-CTA tile won at M <= 128). Without a GPU the plan's splits take no
// cluster, so the check is on the candidate set and on a split-1 plan: llama8b.gate_up at M = 100 outside the table
// (W4A16_PREFILL_TABLE=0) takes the 2-CTA tile, which at 129 tokens it may not.
TEST(PrefillPlan, ModelWeighsTheTwoCtaTileUpTo128TokensOnly) {
  const bool wgmma_build = prefill_plan(64, 64, 64, 90, 132).config != prefill_plan(64, 64, 64, 80, 132).config;
  if (!wgmma_build) GTEST_SKIP() << "this build has no sm_90a kernels: the two-CTA tile is a TMA tile";
  int occ2 = -1, bm192 = -1;
  for (int i = 0; i < prefill_config_count(); ++i) {
    const PrefillConfig& c = prefill_config(i);
    if (c.x_load != PrefillXLoad::tma || c.sched != 0) continue;
    if (c.bm == 128 && c.wg == 2 && c.mb == 1 && c.min_blocks == 2) occ2 = i;
    if (c.bm == 192 && c.wg == 3) bm192 = i;
  }
  ASSERT_GE(occ2, 0);
  ASSERT_GE(bm192, 0);
  const int occ2_twin = prefill_sched_twin(occ2, 1);
  ASSERT_GE(occ2_twin, 0);
  for (std::int64_t m : {1, 64, 100, 128}) {
    EXPECT_TRUE(prefill_config_modeled(occ2, m)) << m;
    EXPECT_TRUE(prefill_config_modeled(occ2_twin, m)) << m;
    EXPECT_FALSE(prefill_config_modeled(bm192, m)) << m;
  }
  for (std::int64_t m : {129, 256, 4096}) {
    EXPECT_FALSE(prefill_config_modeled(occ2, m)) << m;
    EXPECT_FALSE(prefill_config_modeled(bm192, m)) << m;
  }
  w4a16::test::ScopedEnv table("W4A16_PREFILL_TABLE", "0");
  w4a16::test::ScopedEnv sched("W4A16_PREFILL_SCHED", "0");
  const PrefillPlan at100 = prefill_plan(28672, 4096, 100, 90, 132);
  EXPECT_EQ(at100.config, occ2) << at100.describe();
  const PrefillPlan at129 = prefill_plan(28672, 4096, 129, 90, 132);
  EXPECT_NE(at129.config, occ2) << at129.describe();
}

// The transient dense path's contract (dense_transient_run) is checked before any CUDA call, naming the argument.
TEST(PrefillHost, DenseTransientRunRefusesBadArgumentsByName) {
  TcWeights w;
  w.n = 256;
  w.k = 512;
  w.n_pad = 256;
  w.k_pad = 512;
  w.groups = 4;
  CublasHandle none;
  alignas(256) static unsigned char buf[512];
  auto expect = [](auto&& call, w4a16::ErrorCode code, const std::string& arg) {
    try {
      call();
      ADD_FAILURE() << "no error for " << arg;
    } catch (const w4a16::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(arg + ":", 0), 0u) << e.what();
    }
  };
  expect([&] { dense_transient_run(w, none, buf, 1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::invalid_argument, "h");
  CublasHandle fake;
  fake.h = buf;  // never used: every check below fails before cuBLAS is called
  w.act_order = true;
  expect([&] { dense_transient_run(w, fake, buf, 1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::unsupported, "w");
  w.act_order = false;
  expect([&] { dense_transient_run(w, fake, buf, -1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::invalid_argument, "m");
  expect([&] { dense_transient_run(w, fake, nullptr, 1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::invalid_argument, "x, y");
  expect([&] { dense_transient_run(w, fake, buf, 1, 100, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::shape_mismatch, "x_stride");
  expect([&] { dense_transient_run(w, fake, buf, 1, 512, buf, 200, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::shape_mismatch, "y_stride");
  {
    TcWeights other;
    other.layout = "cpu.canonical";
    expect([&] { dense_transient_run(other, fake, buf, 1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::layout_mismatch, "w");
  }
  {
    // A workspace large enough but 16 bytes past a 256-byte boundary (pointer arithmetic only: nothing is written).
    std::vector<unsigned char> big(dense_transient_workspace_bytes(w.n, w.k) + 512);
    unsigned char* base = big.data() + (256 - reinterpret_cast<std::uintptr_t>(big.data()) % 256) % 256;
    expect([&] { dense_transient_run(w, fake, buf, 1, 512, buf, 256, base + 16, big.size() - 272, nullptr); }, w4a16::ErrorCode::alignment,
           "workspace");
  }
  expect([&] { dense_transient_run(w, fake, buf, 1, 512, buf, 256, buf, sizeof buf, nullptr); }, w4a16::ErrorCode::invalid_argument, "workspace");
  EXPECT_GE(dense_transient_workspace_bytes(256, 512), std::size_t{256} * 512 * 2);
  EXPECT_EQ(dense_transient_refusal(false), "");
  EXPECT_NE(dense_transient_refusal(true), "");
  fake.h = nullptr;  // the destructor destroys only a handle cublas_handle_create made
}

// The early-issue prefill kernels address each thread's scale words and zero bytes by 32-bit offsets from its own base
// and count k in 32 bits: prefill_run refuses, by name and before any device work, scales past 8 GiB and K_pad past
// 2^31; the largest layers that fit pass the check (and then fail on the null x, the next argument checked).
TEST(PrefillHost, RefusesLayersPastThe32BitOffsetsByName) {
  alignas(256) static unsigned char buf[512];
  auto code_of = [&](const TcWeights& w, const void* x) -> std::optional<std::pair<w4a16::ErrorCode, std::string>> {
    try {
      prefill_run(w, x, 1, w.k, buf, w.n, nullptr, 0, nullptr);
    } catch (const w4a16::Error& e) {
      const std::string what = e.what();
      return std::make_pair(e.code(), what.substr(0, what.find(':')));
    }
    return std::nullopt;
  };
  TcWeights w;
  w.owned = false;  // the caller's arrays (fake here): never freed
  w.qweight = reinterpret_cast<std::int32_t*>(buf);
  w.scales = buf;
  w.group_size = 32;
  w.n = w.n_pad = 65536;
  w.k = w.k_pad = std::int64_t{1} << 21;  // groups x N_pad / 2 = 2^16 x 2^16 / 2 = 2^31 words (8 GiB): fits
  w.groups = w.k / 32;
  auto r = code_of(w, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->second, "x, y");
  w.n = w.n_pad = 65536 + 64;  // one 64-row block more: past 8 GiB
  r = code_of(w, buf);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, w4a16::ErrorCode::unsupported);
  EXPECT_EQ(r->second, "w.scales");
  w.n = w.n_pad = 64;
  w.group_size = -1;
  w.groups = 1;
  w.k = w.k_pad = std::int64_t{1} << 31;
  r = code_of(w, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->second, "x, y");
  w.k = w.k_pad = (std::int64_t{1} << 31) + 64;
  r = code_of(w, buf);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, w4a16::ErrorCode::unsupported);
  EXPECT_EQ(r->second, "w.k");
}
