// Host-only checks of the decode launcher's arithmetic (no GPU needed: runs in CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "common.cuh"  // code_arch
#include "decode/decode.hpp"
#include "fast_div.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

using namespace w4a16::kernels::cuda;
using w4a16::test::ScopedEnv;  // decode_plan reads the knobs on every call

// decode.hpp documents the shared-memory bounds on K per token chunk; decode_fits is what the
// launcher and the registry consult.
TEST(DecodeHost, FitsTheDocumentedBoundsAndShrinksWithTokens) {
  // The documented bounds are exact: K fits, K + 64 does not.
  EXPECT_TRUE(decode_fits(33280, 16, true, 32));    // 16 tokens, uint4 g = 32
  EXPECT_FALSE(decode_fits(33280 + 64, 16, true, 32));
  EXPECT_TRUE(decode_fits(35840, 16, false, 128));  // uint4b8, g >= 64
  EXPECT_FALSE(decode_fits(35840 + 64, 16, false, 128));
  EXPECT_TRUE(decode_fits(58880, 8, true, 32));     // 8 tokens: less than twice the K (the 1..8-token ring is larger)
  EXPECT_FALSE(decode_fits(58880 + 64, 8, true, 32));
  EXPECT_TRUE(decode_fits(65024, 8, false, 128));
  EXPECT_FALSE(decode_fits(65024 + 64, 8, false, 128));
  EXPECT_TRUE(decode_fits(65536, 1, true, 32));     // 1 token: far beyond any layer
  EXPECT_FALSE(decode_fits(std::int64_t{1} << 24, 1, false, 128));
  // Fewer tokens never fit less K.
  for (std::int64_t k = 4096; k <= (std::int64_t{1} << 20); k += 4096)
    for (int m = 2; m <= 16; ++m)
      if (decode_fits(k, m, true, 32)) {
        ASSERT_TRUE(decode_fits(k, m - 1, true, 32)) << "K=" << k << " m=" << m;
      }
}

// The plan for the H200 (132 SMs) on every PERF.md shape and token count: it fits shared memory,
// its ring has the variant's fixed depth (2 slots of 8 tiles at 1..8 tokens, 3 of 4 at 9..16), and only plans of more than one wave of blocks at
// 1..8 tokens get a persistent grid (fewer rows of blocks than row blocks), sized to what is resident.
TEST(DecodeHost, PlansFitAndPersistOnlyBeyondOneWave) {
  ScopedEnv no_bulk("W4A16_DECODE_BULK", "0");  // the streaming and small kernels' rules (the bulk kernel's: below)
  ScopedEnv streaming("W4A16_DECODE_SMALL", "0");  // the streaming kernel's plans (the small kernel's: below)
  struct S { std::int64_t n, k; };
  const S shapes[] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096}, {4096, 4096},
                      {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}};
  int persistent = 0;
  for (const S& s : shapes)
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true})
        for (int g : {32, 128}) {
          const DecodePlan p = decode_plan_for_sms(s.n, s.k, m, zeros, g, true, 132);
          SCOPED_TRACE(std::to_string(s.n) + "x" + std::to_string(s.k) + " m=" + std::to_string(m) + " " + p.describe());
          EXPECT_LE(p.smem_bytes, 200u * 1024);
          EXPECT_EQ(p.depth, m <= 8 ? 2 : 3);
          EXPECT_EQ(p.warps_n * p.warps_k, 8);
          EXPECT_GE(static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k * p.splits, (s.k + 63) / 64);  // K covered
          EXPECT_GE(static_cast<std::int64_t>(p.row_blocks) * p.warps_n * 16, s.n);                       // N covered
          const int bps = p.smem_bytes + 1024 <= 227 * 1024 / 2 ? 2 : 1;
          if (p.grid_rows < p.row_blocks) {
            ++persistent;
            EXPECT_LE(m, 8);
            EXPECT_EQ(p.grid_rows, 132 * bps / p.splits);
          } else {
            EXPECT_EQ(p.grid_rows, p.row_blocks);
          }
        }
  EXPECT_GT(persistent, 0);  // llama70b.gate_up at 1..8 tokens takes several waves
  const DecodePlan p = decode_plan_for_sms(57344, 8192, 1, false, 128, true, 132);
  EXPECT_LT(p.grid_rows, p.row_blocks) << p.describe();
  // Persistent at 1..2 tokens: 2-stripe row blocks (measured, decode_plan.cu), not at 4.
  EXPECT_EQ(p.warps_n, 2) << p.describe();
  EXPECT_EQ(decode_plan_for_sms(57344, 8192, 2, false, 128, true, 132).warps_n, 2);
  EXPECT_EQ(decode_plan_for_sms(28672, 4096, 1, false, 128, true, 132).warps_n, 8);  // one wave: the cost model's plan
}

namespace {
struct Shape { const char* name; std::int64_t n, k; };
constexpr Shape kQwen[] = {{"qwen0.5b.qkv", 1152, 896}, {"qwen0.5b.o", 896, 896}, {"qwen0.5b.gate_up", 9728, 896}, {"qwen0.5b.down", 896, 4864}};
constexpr Shape kLarge[] = {{"llama8b.qkv", 6144, 4096}, {"llama8b.o", 4096, 4096}, {"llama8b.gate_up", 28672, 4096},
                            {"llama8b.down", 4096, 14336}, {"8192x8192", 8192, 8192}, {"llama70b.gate_up", 57344, 8192}};

// The small plan's geometry: all of K in one block of 8 warps, at most T tiles per warp, one wave.
// A bad value of a plan knob: decode_plan_for_sms throws invalid_argument naming the knob; unset after.
void expect_knob_refused(const char* var, const char* value, std::int64_t n, std::int64_t k, int m) {
  setenv(var, value, 1);
  try {
    decode_plan_for_sms(n, k, m, false, 128, true, 132);
    ADD_FAILURE() << var << "=" << value << " accepted";
  } catch (const w4a16::Error& e) {
    EXPECT_EQ(e.code(), w4a16::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
  }
  unsetenv(var);
}

void expect_small_geometry(const DecodePlan& p, std::int64_t n, std::int64_t k) {
  const std::int64_t kt = (k + 63) / 64;
  EXPECT_TRUE(p.small_tiles == 2 || p.small_tiles == 4 || p.small_tiles == 8 || p.small_tiles == 16);
  EXPECT_EQ(p.warps_n * p.warps_k, 8);
  EXPECT_EQ(p.splits, 1);
  EXPECT_LE(p.tiles_per_warp, p.small_tiles);
  EXPECT_GE(static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k, kt);             // all of K in one block
  EXPECT_LT(static_cast<std::int64_t>(p.tiles_per_warp - 1) * p.warps_k, kt);         // no warp beyond needed
  EXPECT_GE(static_cast<std::int64_t>(p.row_blocks) * p.warps_n * 16, n);              // N covered
  EXPECT_LE(p.row_blocks, 132 * 5);                                                    // one wave (<= 5 blocks per SM)
  EXPECT_EQ(p.grid_rows, p.row_blocks);
  EXPECT_LE(p.smem_bytes, 200u * 1024);
}
}  // namespace

// The default rule (W4A16_DECODE_SMALL unset): the small kernel exactly where its plan fits one wave
// (what W4A16_DECODE_SMALL=1 takes) and its blocks copy at most kDecodeSmallMaxXBytes of x
// (row_blocks x M x K x 2), for 16-byte x rows without perm only; otherwise the cost model's plan.
// On the PERF.md shapes that means what the A/B measured as wins: qwen0.5b.qkv / o at every M,
// gate_up at M = 1, down at M = 1..3, llama8b.o at M = 1, nothing larger.
TEST(DecodeHost, SmallKernelByDefaultWhereItsXCopiesAreSmall) {
  ScopedEnv no_bulk("W4A16_DECODE_BULK", "0");  // the streaming and small kernels' rules (the bulk kernel's: below)
  ScopedEnv no_t("W4A16_DECODE_SMALL_T", std::nullopt), small("W4A16_DECODE_SMALL", std::nullopt);  // set below, restored after
  auto small_at = [](const Shape& s, int m, bool zeros, int g) {
    unsetenv("W4A16_DECODE_SMALL");
    const DecodePlan def = decode_plan_for_sms(s.n, s.k, m, zeros, g, true, 132);
    setenv("W4A16_DECODE_SMALL", "1", 1);
    const DecodePlan forced = decode_plan_for_sms(s.n, s.k, m, zeros, g, true, 132);
    unsetenv("W4A16_DECODE_SMALL");
    SCOPED_TRACE(std::string(s.name) + " m=" + std::to_string(m) + " default " + def.describe() + " forced " + forced.describe());
    const bool fits = forced.small_tiles > 0;
    const bool expect = fits && static_cast<std::int64_t>(forced.row_blocks) * m * s.k * 2 <= kDecodeSmallMaxXBytes;
    EXPECT_EQ(def.small_tiles > 0, expect);
    if (def.small_tiles > 0) {
      expect_small_geometry(def, s.n, s.k);
      EXPECT_EQ(decode_plan_for_sms(s.n, s.k, m, zeros, g, false, 132).small_tiles, 0);  // act-order / unaligned rows
    }
    return def.small_tiles > 0;
  };
  for (const Shape* set : {kQwen, kLarge})
    for (std::size_t i = 0; i < (set == kQwen ? std::size(kQwen) : std::size(kLarge)); ++i)
      for (int m = 1; m <= 16; ++m)
        for (bool zeros : {false, true})
          for (int g : {32, 128}) {
            const Shape& s = set[i];
            const bool small = small_at(s, m, zeros, g);
            // The measured map (docs/benchmarks/decode.md) follows from the rule on these shapes.
            const bool qkv_o = s.k == 896 && s.n <= 1152, gate_up = s.n == 9728, down = s.k == 4864, l8o = s.n == 4096 && s.k == 4096;
            const bool measured_win = qkv_o || (gate_up && m == 1) || (down && m <= 3) || (l8o && m == 1);
            EXPECT_EQ(small, measured_win) << s.name << " m=" << m;
          }
  // qkv / o: 14 tiles over 8 warps (T = 2), one stripe per block: 72 / 56 blocks. down: 76 tiles, T = 16.
  EXPECT_EQ(decode_plan_for_sms(1152, 896, 1, false, 128, true, 132).small_tiles, 2);
  EXPECT_EQ(decode_plan_for_sms(1152, 896, 1, false, 128, true, 132).row_blocks, 72);
  EXPECT_EQ(decode_plan_for_sms(896, 4864, 1, false, 128, true, 132).small_tiles, 16);
  // From 9 tokens the smallest bucket is 4 (small_min_tiles): qkv in 36 blocks of two stripes, o in 28.
  EXPECT_EQ(decode_plan_for_sms(1152, 896, 8, false, 128, true, 132).small_tiles, 2);
  for (int m : {9, 16}) {
    const DecodePlan q = decode_plan_for_sms(1152, 896, m, false, 128, true, 132), o = decode_plan_for_sms(896, 896, m, true, 32, true, 132);
    EXPECT_EQ(q.small_tiles, 4) << q.describe();
    EXPECT_EQ(q.row_blocks, 36) << q.describe();
    EXPECT_EQ(o.small_tiles, 4) << o.describe();
    EXPECT_EQ(o.row_blocks, 28) << o.describe();
  }
}

// W4A16_DECODE_SMALL=1 takes the small kernel wherever its plan fits one wave (llama8b.o at M = 1:
// T = 8, 256 blocks, 2 per SM; at 16 tokens the x rows leave 1 block per SM: T = 16, 128 blocks),
// never beyond (llama70b.gate_up: 3584 blocks; llama8b.down: K of 224 tiles > 8 x 16); =0 never;
// other values and bad buckets throw naming the knob.
TEST(DecodeHost, SmallKernelKnobs) {
  ScopedEnv no_bulk("W4A16_DECODE_BULK", "0");  // the streaming and small kernels' rules (the bulk kernel's: below)
  ScopedEnv small("W4A16_DECODE_SMALL", "1"), no_t("W4A16_DECODE_SMALL_T", std::nullopt);  // changed below, restored after
  ScopedEnv no_plan("W4A16_DECODE_PLAN", std::nullopt);
  const DecodePlan o = decode_plan_for_sms(4096, 4096, 1, false, 128, true, 132);
  EXPECT_EQ(o.small_tiles, 8) << o.describe();
  expect_small_geometry(o, 4096, 4096);
  const DecodePlan o16 = decode_plan_for_sms(4096, 4096, 16, false, 128, true, 132);
  EXPECT_EQ(o16.small_tiles, 16) << o16.describe();
  EXPECT_EQ(o16.row_blocks, 128) << o16.describe();
  expect_small_geometry(o16, 4096, 4096);
  EXPECT_EQ(decode_plan_for_sms(57344, 8192, 1, false, 128, true, 132).small_tiles, 0);
  EXPECT_EQ(decode_plan_for_sms(4096, 14336, 1, false, 128, true, 132).small_tiles, 0);  // 224 tiles > 8 x 16
  setenv("W4A16_DECODE_SMALL_T", "8", 1);  // the smallest bucket allowed: qkv takes T = 8 (2 warps along K)
  const DecodePlan q = decode_plan_for_sms(1152, 896, 1, false, 128, true, 132);
  EXPECT_EQ(q.small_tiles, 8) << q.describe();
  EXPECT_EQ(q.warps_k, 2);
  expect_small_geometry(q, 1152, 896);
  unsetenv("W4A16_DECODE_SMALL_T");
  setenv("W4A16_DECODE_PLAN", "8,1", 1);  // a forced streaming plan wins
  EXPECT_EQ(decode_plan_for_sms(1152, 896, 1, false, 128, true, 132).small_tiles, 0);
  unsetenv("W4A16_DECODE_PLAN");
  setenv("W4A16_DECODE_SMALL", "0", 1);
  for (const Shape& s : kQwen) EXPECT_EQ(decode_plan_for_sms(s.n, s.k, 1, false, 128, true, 132).small_tiles, 0) << s.name;
  for (const char* bad : {"2", "yes"}) expect_knob_refused("W4A16_DECODE_SMALL", bad, 1152, 896, 1);
  expect_knob_refused("W4A16_DECODE_SMALL_T", "3", 1152, 896, 1);
}

namespace {
// The cost model's plan, the measured plans switched off (W4A16_DECODE_TABLE=0).
std::string model_plan(std::int64_t n, std::int64_t k, int m, bool zeros, int group_size, bool xstream_ok, int sms) {
  ScopedEnv no_table("W4A16_DECODE_TABLE", "0");
  return decode_plan_for_sms(n, k, m, zeros, group_size, xstream_ok, sms).describe();
}
}  // namespace

// The measured plans (decode_plan.cu kMeasuredPlans) replace the cost model's on their layers and token
// counts, only for uint4b8 g = 128 on 132 SMs, only with streamable x where they stream, and not
// under W4A16_DECODE_TABLE=0 (which gives back the model's plan).
TEST(DecodeHost, MeasuredPlansOnlyWhereMeasured) {
  ScopedEnv no_bulk("W4A16_DECODE_BULK", "0");  // the streaming and small kernels' rules (the bulk kernel's: below)
  struct Want {
    std::int64_t n, k;
    int m, warps_n, splits;
    bool xstream;
  };
  const Want want[] = {{4096, 14336, 4, 4, 2, false}, {4096, 14336, 3, 4, 2, false}, {4096, 14336, 8, 4, 2, false},
                       {6144, 4096, 4, 8, 4, true},   {28672, 4096, 1, 8, 1, true},   {8192, 8192, 6, 8, 2, false}};
  for (const Want& w : want) {
    const DecodePlan p = decode_plan_for_sms(w.n, w.k, w.m, false, 128, true, 132);
    const std::string what = std::to_string(w.n) + "x" + std::to_string(w.k) + " M=" + std::to_string(w.m) + ": " + p.describe();
    EXPECT_EQ(p.warps_n, w.warps_n) << what;
    EXPECT_EQ(p.splits, w.splits) << what;
    EXPECT_EQ(p.xstream, w.xstream) << what;
    EXPECT_EQ(p.small_tiles, 0) << what;
    EXPECT_NE(model_plan(w.n, w.k, w.m, false, 128, true, 132), p.describe()) << what << " is the model's plan already";
    // Elsewhere the model decides: zero points, another group size, another SM count.
    EXPECT_EQ(decode_plan_for_sms(w.n, w.k, w.m, true, 128, true, 132).describe(), model_plan(w.n, w.k, w.m, true, 128, true, 132)) << what;
    EXPECT_EQ(decode_plan_for_sms(w.n, w.k, w.m, false, 64, true, 132).describe(), model_plan(w.n, w.k, w.m, false, 64, true, 132)) << what;
    EXPECT_EQ(decode_plan_for_sms(w.n, w.k, w.m, false, 128, true, 114).describe(), model_plan(w.n, w.k, w.m, false, 128, true, 114))
        << what;
  }
  // 8192x8192 M = 5 was measured slower with the M = 8 entry's plan: the model decides there.
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 5, false, 128, true, 132).describe(), model_plan(8192, 8192, 5, false, 128, true, 132));
  // A streamed entry needs streamable x (aligned rows, no act-order): otherwise the model's staged plan.
  EXPECT_FALSE(decode_plan_for_sms(6144, 4096, 4, false, 128, false, 132).xstream);
  // 9..16 tokens: llama8b.down 4,2 with x staged where it fits (M = 9..10), streamed in a window per K group above
  // (stop 39); llama8b.o the same windows; 8192x8192 8,2 staged.
  const DecodePlan down10 = decode_plan_for_sms(4096, 14336, 10, false, 128, true, 132);
  EXPECT_TRUE(down10.warps_n == 4 && !down10.xstream) << down10.describe();
  const DecodePlan down16 = decode_plan_for_sms(4096, 14336, 16, false, 128, true, 132);
  const DecodePlan o12 = decode_plan_for_sms(4096, 4096, 12, false, 128, true, 132);
  EXPECT_TRUE(down16.warps_n == 4 && down16.splits == 2 && down16.xstream) << down16.describe();
  EXPECT_TRUE(o12.warps_n == 4 && o12.splits == 2 && o12.xstream) << o12.describe();
  const DecodePlan sq = decode_plan_for_sms(8192, 8192, 16, false, 128, true, 132);
  EXPECT_TRUE(sq.warps_n == 8 && sq.splits == 2 && !sq.xstream) << sq.describe();
  // Unlisted layers: no entry.
  EXPECT_EQ(decode_plan_for_sms(2048, 4096, 16, false, 128, true, 132).describe(), model_plan(2048, 4096, 16, false, 128, true, 132));
  expect_knob_refused("W4A16_DECODE_TABLE", "on", 4096, 14336, 4);
}

// decode_run refuses weights whose packed tiles it cannot index with 32-bit lane indices (>= 64 GiB)
// before it touches the device; the pointers below are never dereferenced.
TEST(DecodeHost, RefusesQweightOf64GiB) {
  TcWeights w;
  w.n = w.n_pad = std::int64_t{1} << 20;
  w.k = w.k_pad = std::int64_t{1} << 17;  // N * K / 2 = 64 GiB of int4
  w.group_size = w4a16::kChannelwise;
  w.groups = 1;                           // scales: 2 MiB, under their own 2 GiB bound
  char dummy[16] = {};
  w.qweight = reinterpret_cast<std::int32_t*>(dummy);
  w.scales = dummy;
  try {
    decode_run(w, dummy, 1, w.k, dummy, w.n, nullptr, 0, nullptr);
    ADD_FAILURE() << "accepted a 64 GiB qweight";
  } catch (const w4a16::Error& e) {
    EXPECT_EQ(e.code(), w4a16::ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("weights.qweight"), std::string::npos) << e.what();
  }
  w.qweight = nullptr;  // not ours to free
  w.scales = nullptr;
}

// The bulk kernel's plans (decode_bulk_plan_for_sms, H200: 132 SMs) on every PERF.md shape at
// 1..16 tokens: where one is returned it fits the shared memory of its blocks per SM with at
// least two stages, the grid is what is resident (never more blocks than items), 9..16 tokens
// take one block per SM (the register cap of that variant); x of all of K that cannot fit beside
// two stages gives no plan (the streaming kernel's fallback).
TEST(DecodeHost, BulkPlansFitTheirBlocksPerSm) {
  struct S { std::int64_t n, k; };
  for (S s : {S{1152, 896}, S{896, 896}, S{9728, 896}, S{896, 4864}, S{6144, 4096}, S{4096, 4096}, S{28672, 4096}, S{4096, 14336},
              S{8192, 8192}, S{57344, 8192}, S{8192, 28672}})
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true})
        for (int g : {32, 128}) {
          const DecodePlan p = decode_bulk_plan_for_sms(s.n, s.k, m, zeros, g, 132);
          const std::string what = std::to_string(s.n) + "x" + std::to_string(s.k) + " m=" + std::to_string(m) + " " + p.describe();
          const std::int64_t x_row = (s.k + 63) / 64 * 128 + 16;
          if (p.bulk_stages == 0) {  // only where x of all of K leaves no room for two stages in 227 KB
            EXPECT_GT(m * x_row, 227 * 1024 - 2 * 18944 - 2 * 8 * 2 * 512) << what;
            continue;
          }
          EXPECT_GE(p.bulk_stages, 2) << what;
          EXPECT_LE(p.bulk_stages, 16) << what;
          const std::int64_t span = p.warps_k * 4, share = (p.row_blocks + p.grid_rows - 1) / p.grid_rows * (((s.k + 63) / 64 + span - 1) / span);
          EXPECT_LE(p.bulk_stages, std::max<std::int64_t>(2, share)) << what;  // never more stages than the block streams
          EXPECT_EQ(p.warps_n * p.warps_k, 8) << what;
          EXPECT_LE(p.smem_bytes, p.bulk_blocks_per_sm == 2 ? 113u * 1024 : 227u * 1024) << what;
          if (m > 8) {
            EXPECT_EQ(p.bulk_blocks_per_sm, 1) << what;
          }
          EXPECT_LE(p.grid_rows, 132 * p.bulk_blocks_per_sm) << what;
          EXPECT_LE(p.grid_rows, p.row_blocks) << what;
          EXPECT_EQ(p.row_blocks, ((s.n + 63) / 64 * 4 + p.warps_n - 1) / p.warps_n) << what;
        }
  // 1 token of 8192 x 8192: one block of 4 stripes per SM streaming 16 stages, a ring as deep as fits
  // (the measured best, 2026-12-04 call 3); llama8b.o streams 4 stages per block: a ring of 4 leaves
  // room for the next call's block beside it.
  const DecodePlan p = decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132);
  EXPECT_EQ(p.bulk_blocks_per_sm, 1) << p.describe();
  EXPECT_EQ(p.warps_n, 4) << p.describe();
  EXPECT_GE(p.bulk_stages, 10) << p.describe();
  const DecodePlan o = decode_bulk_plan_for_sms(4096, 4096, 1, false, 128, 132);
  EXPECT_EQ(o.bulk_stages, 4) << o.describe();
  EXPECT_LE(o.smem_bytes, 113u * 1024) << o.describe();
}

// The streamed x slot (one TMA box a stage, the 128B swizzle): 1024-aligned slots that hold the whole box, an odd count
// of box tiles, and so the 8 token rows that one ldmatrix reads at a tile and chunk land in 8 different 16-byte bank
// groups (line t x box + tile, chunk c at (c ^ line) & 7) for every span a plan has, every first token and tile.
TEST(DecodeHost, BulkStreamedXSlotsAreConflictFree) {
  for (int span : {4, 8, 16, 32}) {
    const int box = bulk_x_box_tiles(span);
    EXPECT_EQ(box % 2, 1) << span;
    EXPECT_GT(box, span - 1) << span;
    for (int m = 1; m <= 16; ++m) {
      const unsigned slot = bulk_x_slot_bytes(m, span);
      EXPECT_EQ(slot % 1024, 0u) << "span=" << span << " m=" << m;
      EXPECT_GE(slot, static_cast<unsigned>(m * box * 128)) << "span=" << span << " m=" << m;
      EXPECT_LT(slot, static_cast<unsigned>(m * box * 128) + 1024) << "span=" << span << " m=" << m;
    }
    for (int t0 = 0; t0 <= 8; t0 += 8)
      for (int tile = 0; tile < span; ++tile)
        for (unsigned c = 0; c < 4; ++c)
          for (unsigned h = 0; h < 2; ++h) {
            std::set<unsigned> groups;
            for (int t = t0; t < t0 + 8; ++t)  // the 16-byte bank group of token t's read
              groups.insert((bulk_x_swizzled(static_cast<unsigned>(t * box + tile), c) ^ (h << 6)) / 16 % 8);
            EXPECT_EQ(groups.size(), 8u) << "span=" << span << " tokens " << t0 << ".. tile " << tile << " chunk " << c + 4 * h;
          }
  }
}

// The consumers' read address inverts the TMA's 128B swizzle: a box (64 k, box tiles, m tokens) written into a
// 1024-aligned slot as the hardware does (byte a of the plain image at a ^ (((a >> 7) & 7) << 4): 16-byte chunk c of
// 128-byte line R at chunk c ^ (R % 8)) is read back by bulk_x_swizzled(line, c) ^ (h << 6) as chunk c + 4h of
// (token, tile), for every token, tile and chunk.
TEST(DecodeHost, BulkStreamedXReadsInvertTheSwizzle) {
  const int span = 16, box = bulk_x_box_tiles(span), m = 16;
  std::vector<std::uint16_t> slot(bulk_x_slot_bytes(m, span) / 2, 0xffff);
  auto value = [](int t, int tile, int k) { return static_cast<std::uint16_t>((t * 64 + tile) * 64 + k); };  // distinct
  for (int t = 0; t < m; ++t)
    for (int tile = 0; tile < box; ++tile)
      for (int k = 0; k < 64; ++k) {
        const unsigned a = static_cast<unsigned>(((t * box + tile) * 64 + k) * 2);  // the box's plain image
        slot[(a ^ (((a >> 7) & 7u) << 4)) / 2] = value(t, tile, k);
      }
  for (int t = 0; t < m; ++t)
    for (int tile = 0; tile < box; ++tile)
      for (unsigned c = 0; c < 4; ++c)
        for (unsigned h = 0; h < 2; ++h) {
          const unsigned at = bulk_x_swizzled(static_cast<unsigned>(t * box + tile), c) ^ (h << 6);
          for (int e = 0; e < 8; ++e)
            ASSERT_EQ(slot[at / 2 + e], value(t, tile, static_cast<int>(8 * (c + 4 * h)) + e)) << "t=" << t << " tile=" << tile << " chunk=" << c + 4 * h;
        }
}

// W4A16_DECODE_BULK_XSTREAM=1: the bulk plans stream x per stage (an x slot of one TMA box of the m tokens beside each
// weight stage) where x rows may be copied whole (xstream_ok) and K is a multiple of 64; elsewhere, and by default, x
// is staged whole. Streaming makes room: 16 tokens of K = 14336, which cannot be staged, fit.
TEST(DecodeHost, BulkStreamedXPlans) {
  const DecodeDevice dev;
  EXPECT_FALSE(decode_bulk_plan_for_sms(8192, 8192, 16, false, 128, 132, dev, true).bulk_xstream);  // the default: staged
  EXPECT_EQ(decode_bulk_plan_for_sms(4096, 14336, 16, false, 128, 132, dev, true).bulk_stages, 0);  // 458 KB of x
  ScopedEnv on("W4A16_DECODE_BULK_XSTREAM", "1");
  for (int m : {1, 8, 9, 16})
    for (bool zeros : {false, true})
      for (int g : {32, 128}) {
        const DecodePlan p = decode_bulk_plan_for_sms(4096, 14336, m, zeros, g, 132, dev, true);
        const std::string what = "m=" + std::to_string(m) + " zeros=" + std::to_string(zeros) + " g=" + std::to_string(g) + " " + p.describe();
        ASSERT_GT(p.bulk_stages, 1) << what;
        EXPECT_TRUE(p.bulk_xstream) << what;
        EXPECT_NE(p.describe().find(" xstream"), std::string::npos) << what;
        EXPECT_LE(p.smem_bytes, p.bulk_blocks_per_sm == 2 ? 113u * 1024 : 227u * 1024) << what;
      }
  EXPECT_FALSE(decode_bulk_plan_for_sms(8192, 8192, 16, false, 128, 132, dev, false).bulk_xstream);  // act-order / unaligned x
  EXPECT_FALSE(decode_bulk_plan_for_sms(8192, 8192 + 32, 4, false, 32, 132, dev, true).bulk_xstream);  // a tail past K
  EXPECT_TRUE(decode_plan_for_sms(8192, 8192, 16, false, 128, true, 132).bulk_stages == 0);  // not the default from 9 tokens
  {
    ScopedEnv bulk("W4A16_DECODE_BULK", "1");
    EXPECT_TRUE(decode_plan_for_sms(8192, 8192, 16, false, 128, true, 132).bulk_xstream);
    ScopedEnv no_stream("W4A16_DECODE_XSTREAM", "0");  // the streaming kernel's knob leaves the bulk kernel's alone
    EXPECT_TRUE(decode_plan_for_sms(8192, 8192, 16, false, 128, true, 132).bulk_xstream);
  }
  ScopedEnv bad("W4A16_DECODE_BULK_XSTREAM", "yes");
  EXPECT_THROW(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132, dev, true), w4a16::Error);
}

TEST(DecodeHost, BulkKnobs) {
  ScopedEnv small("W4A16_DECODE_SMALL", "0"), bulk("W4A16_DECODE_BULK", "1");  // changed below, restored after
  ScopedEnv no_bulk_plan("W4A16_DECODE_BULK_PLAN", std::nullopt), no_plan("W4A16_DECODE_PLAN", std::nullopt);
  EXPECT_GT(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 132).bulk_stages, 0);
  setenv("W4A16_DECODE_BULK_PLAN", "1,1", 1);
  const DecodePlan forced = decode_plan_for_sms(8192, 8192, 4, true, 32, false, 132);
  EXPECT_EQ(forced.warps_n, 1);
  EXPECT_EQ(forced.bulk_blocks_per_sm, 1);
  setenv("W4A16_DECODE_PLAN", "8,2", 1);  // a forced streaming plan wins over the bulk kernel
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 132).bulk_stages, 0);
  unsetenv("W4A16_DECODE_PLAN");
  setenv("W4A16_DECODE_BULK", "0", 1);
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 132).bulk_stages, 0);
  setenv("W4A16_DECODE_BULK", "on", 1);
  EXPECT_THROW(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 132), w4a16::Error);
  setenv("W4A16_DECODE_BULK", "1", 1);
  for (const char* bad : {"3,1", "8,0", "8", "2,2,2", "2,2x"}) {
    setenv("W4A16_DECODE_BULK_PLAN", bad, 1);
    EXPECT_THROW(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132), w4a16::Error) << bad;
  }
  setenv("W4A16_DECODE_BULK_PLAN", "8,2", 1);  // two blocks per SM do not fit 9..16 tokens: the automatic plan
  EXPECT_EQ(decode_bulk_plan_for_sms(8192, 8192, 9, false, 128, 132).bulk_blocks_per_sm, 1);
  EXPECT_EQ(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132).warps_n, 8);
  EXPECT_EQ(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132).bulk_blocks_per_sm, 2);
  setenv("W4A16_DECODE_SMALL", "1", 1);  // a forced bulk plan goes before the small-layer kernel
  EXPECT_GT(decode_plan_for_sms(896, 896, 1, false, 128, true, 132).bulk_stages, 0);
}

// The default (W4A16_DECODE_BULK unset), wherever the bulk plan fits, before the small-layer kernel's
// rule: 1 token; up to 8 where each block streams 4 rounds of items; 2 where x of 2 tokens is at most
// 20 KB (K <= 5120); 3 where the bulk plan keeps the SMs evenly busy; up to 6 on layers under 8 MB;
// never from 9 (decode_plan.cu, bulk_by_default). Pinned here per PERF.md shape as measured on the
// H200 (docs/benchmarks/decode.md version 13): the most tokens the bulk kernel takes by default and
// whether it takes 2 tokens. W4A16_DECODE_SMALL=1 still forces the small kernel.
TEST(DecodeHost, BulkByDefaultWhereMeasuredFaster) {
  struct Expect { const char* name; std::int64_t n, k; int most; bool two; };
  constexpr Expect kExpect[] = {{"qwen0.5b.qkv", 1152, 896, 8, true},       {"qwen0.5b.o", 896, 896, 8, true},
                                {"qwen0.5b.gate_up", 9728, 896, 8, true},   {"qwen0.5b.down", 896, 4864, 6, true},
                                {"llama8b.qkv", 6144, 4096, 2, true},       {"llama8b.o", 4096, 4096, 3, true},
                                {"llama8b.gate_up", 28672, 4096, 3, true},  {"llama8b.down", 4096, 14336, 1, false},
                                {"8192x8192", 8192, 8192, 1, false},        {"llama70b.gate_up", 57344, 8192, 8, true}};
  for (const Expect& e : kExpect)
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true})
        for (bool rows16 : {false, true}) {
          const DecodePlan p = decode_plan_for_sms(e.n, e.k, m, zeros, 128, rows16, 132);
          const bool fits = decode_bulk_plan_for_sms(e.n, e.k, m, zeros, 128, 132).bulk_stages > 0;
          const bool expected = m <= e.most && (m != 2 || e.two);
          EXPECT_EQ(p.bulk_stages > 0, expected && fits) << e.name << " m=" << m << " zeros=" << zeros << " " << p.describe();
          if (m <= 3) {
            EXPECT_TRUE(fits) << e.name << " m=" << m;  // x of up to three tokens always fits these layers
          }
        }
  // The 2-token bound is x of 2 tokens <= 20 KB: K = 5120 in, one more 64-wide tile out; at 3 tokens the same K bound.
  EXPECT_GT(decode_plan_for_sms(4096, 5120, 2, false, 128, true, 132).bulk_stages, 0);
  EXPECT_EQ(decode_plan_for_sms(4096, 5184, 2, false, 128, true, 132).bulk_stages, 0);
  EXPECT_GT(decode_plan_for_sms(4096, 5120, 3, false, 128, true, 132).bulk_stages, 0);
  EXPECT_EQ(decode_plan_for_sms(4096, 5184, 3, false, 128, true, 132).bulk_stages, 0);
  EXPECT_GT(decode_plan_for_sms(4096, 5184, 1, false, 128, true, 132).bulk_stages, 0);
  ScopedEnv small("W4A16_DECODE_SMALL", "1");
  EXPECT_GT(decode_plan_for_sms(1152, 896, 1, false, 128, true, 132).small_tiles, 0);
}

// On H100-class memory (peak below 4 TB/s) the bulk kernel also takes up to 6 tokens where x is at most 128 KB on
// layers of at most 32 MB, and 4..8 tokens with x streamed per stage on layers of at most 32 MB where x rows allow, and
// 9..16 tokens so on llama8b.down with zero points (decode_plan.cu bulk_by_default, bulk_xstream_by_default; measured
// on H100s); an unknown bandwidth (0) and the H200
// plan as BulkByDefaultWhereMeasuredFaster pins, but the H200 streams x at 4..8 tokens on layers of at most 8 MB.
TEST(DecodeHost, BulkByDefaultOnH100ClassMemory) {
  // wide_h100: the bulk kernel with x streamed at 9..16 tokens on H100-class memory (its items on 132 blocks: one round,
  // or rounds balanced to >= 0.9; llama8b.gate_up's 224 items take 2 rounds at 0.85)
  struct Expect { const char* name; std::int64_t n, k; int most_h100, most_h100_staged, most_h200; bool two_h200, wide_h100; };
  constexpr Expect kExpect[] = {{"llama8b.qkv", 6144, 4096, 8, 6, 2, true, true},       {"llama8b.o", 4096, 4096, 8, 6, 3, true, true},
                                {"llama8b.gate_up", 28672, 4096, 3, 3, 3, true, false}, {"llama8b.down", 4096, 14336, 8, 4, 1, false, true},
                                {"8192x8192", 8192, 8192, 8, 6, 1, false, true},        {"qwen0.5b.down", 896, 4864, 8, 6, 6, true, true},
                                {"llama70b.gate_up", 57344, 8192, 8, 8, 8, true, true}};
  DecodeDevice h100, h200, unknown;  // the defaults: a device running sm_90a code (as the test above; not this build's archs)
  h100.dram_tb_per_s = 3.35;
  h200.dram_tb_per_s = 4.8;
  for (const Expect& e : kExpect)
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true}) {
        const std::string what = std::string(e.name) + " m=" + std::to_string(m) + " zeros=" + std::to_string(zeros);
        const bool fits = decode_bulk_plan_for_sms(e.n, e.k, m, zeros, 128, 132).bulk_stages > 0;  // x staged
        // x streamed (16-byte rows, no perm): 4..8 tokens on every layer, whether or not x of all of K fits (stop 74; until
        // then on layers <= 32 MB); 9..16 tokens where the plan keeps the SMs busy
        const bool wide = m >= 9 && e.wide_h100;
        const bool streams = (m >= 4 && m <= 8) || wide;
        const DecodePlan p = decode_plan_for_sms(e.n, e.k, m, zeros, 128, true, 132, h100);
        EXPECT_EQ(p.bulk_stages > 0, (m <= e.most_h100 && fits) || streams) << what;
        EXPECT_EQ(p.bulk_xstream, streams) << what;
        EXPECT_EQ(decode_plan_for_sms(e.n, e.k, m, zeros, 128, false, 132, h100).bulk_stages > 0, m <= e.most_h100_staged && fits)
            << what << " (x rows that cannot stream)";
        const bool h200_bulk = m <= e.most_h200 && (m != 2 || e.two_h200) && fits;
        // The H200: x streamed at 4..8 tokens on layers <= 8 MB only; unknown devices never
        const bool streams_h200 = m >= 4 && m <= 8 && e.n * e.k / 2 <= (std::int64_t{8} << 20);
        const DecodePlan p200 = decode_plan_for_sms(e.n, e.k, m, zeros, 128, true, 132, h200);
        EXPECT_EQ(p200.bulk_stages > 0, h200_bulk || streams_h200) << what;
        EXPECT_EQ(p200.bulk_xstream, streams_h200) << what;
        EXPECT_EQ(decode_plan_for_sms(e.n, e.k, m, zeros, 128, false, 132, h200).bulk_stages > 0, h200_bulk) << what << " (x rows that cannot stream)";
        EXPECT_EQ(decode_plan_for_sms(e.n, e.k, m, zeros, 128, true, 132, unknown).bulk_stages > 0, h200_bulk) << what;
        EXPECT_FALSE(decode_plan_for_sms(e.n, e.k, m, zeros, 128, true, 132, unknown).bulk_xstream) << what;
      }
  // 9..16 tokens on H100-class memory: every group size and both scalar types (llama8b.down; 16 tokens at g = 32 keep
  // the 2-stripe plan of one round: stop 74's G row, where a 1 KB alignment pad had cost it the ring)
  for (int g : {32, 64, 128, 256, w4a16::kChannelwise})
    for (bool zeros : {false, true}) {
      const DecodePlan p = decode_plan_for_sms(4096, 14336, 16, zeros, g, true, 132, h100);
      EXPECT_TRUE(p.bulk_xstream) << "g=" << g << " zeros=" << zeros;
      EXPECT_EQ(p.row_blocks, p.grid_rows) << p.describe();
    }
  EXPECT_EQ(decode_plan_for_sms(4096, 14336, 16, true, 32, true, 132, h100).warps_n, 2);
  // qwen0.5b.down at 13..16 tokens: the x slot counts in the ring's bytes in flight, so the one-stripe plan on 56 blocks
  // (2 stages of 16 KB of weights + 52..64 KB of x each) is not charged as a short ring against 2 stripes on 28 blocks
  for (int m = 13; m <= 16; ++m) {
    const DecodePlan p = decode_plan_for_sms(896, 4864, m, false, 128, true, 132, h100);
    EXPECT_TRUE(p.bulk_xstream && p.warps_n == 1 && p.grid_rows == 56) << "m=" << m << ": " << p.describe();
  }
  // The staged rule's bounds (x rows that cannot stream): x of 6 tokens at K = 10880 (127.5 KB) in, K = 10944 out; 32 MB
  // of weights in, 33 MB out; 7 tokens out. Streamed: 33 MB in, 7 tokens in, a K with a tail past a multiple of 64 out.
  EXPECT_GT(decode_plan_for_sms(4096, 10880, 6, false, 128, false, 132, h100).bulk_stages, 0);
  EXPECT_EQ(decode_plan_for_sms(4096, 10944, 6, false, 128, false, 132, h100).bulk_stages, 0);
  EXPECT_GT(decode_plan_for_sms(4096, 10944, 6, false, 128, true, 132, h100).bulk_stages, 0);
  EXPECT_GT(decode_plan_for_sms(8192, 8192, 4, false, 128, false, 132, h100).bulk_stages, 0);
  EXPECT_EQ(decode_plan_for_sms(8448, 8192, 4, false, 128, false, 132, h100).bulk_stages, 0);
  EXPECT_TRUE(decode_plan_for_sms(8448, 8192, 4, false, 128, true, 132, h100).bulk_xstream);
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 7, false, 128, false, 132, h100).bulk_stages, 0);
  EXPECT_TRUE(decode_plan_for_sms(8192, 8192, 7, false, 128, true, 132, h100).bulk_xstream);
  EXPECT_EQ(decode_plan_for_sms(8192, 8192 + 32, 7, false, 32, true, 132, h100).bulk_stages, 0);
  ScopedEnv never("W4A16_DECODE_BULK_XSTREAM", "0");  // the knob turns the streamed default off
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 7, false, 128, true, 132, h100).bulk_stages, 0);
}

// The tile-pair variants (decode.hpp decode_tile_pairs): only where every step holds whole pairs of one group, and only
// the instantiated ones.
TEST(DecodeHost, TilePairsOnlyWhereGroupsSpanPairsAndRangesAreEven) {
  constexpr int cw = w4a16::kChannelwise;
  const DecodePlan bulk = decode_bulk_plan_for_sms(8192, 8192, 1, true, 128, 132);
  ASSERT_GT(bulk.bulk_stages, 0) << bulk.describe();
  for (bool bf16 : {false, true})
    for (int m : {1, 16}) {
      EXPECT_TRUE(decode_tile_pairs(bulk, 128, m, true, 128, bf16));
      EXPECT_TRUE(decode_tile_pairs(bulk, 128, m, true, 256, bf16));
      EXPECT_TRUE(decode_tile_pairs(bulk, 128, m, true, cw, bf16));
      EXPECT_FALSE(decode_tile_pairs(bulk, 5, m, true, cw, bf16)) << "K_pad = 320: the last pair would lie past K";
      EXPECT_FALSE(decode_tile_pairs(bulk, 128, m, true, 64, bf16)) << "g = 64: tiles 2j, 2j + 1 in different groups";
      EXPECT_FALSE(decode_tile_pairs(bulk, 128, m, true, 32, bf16));
      EXPECT_TRUE(decode_tile_pairs(bulk, 128, m, false, 128, bf16)) << "the bulk kernel: uint4b8 too (two chains per partial)";
      EXPECT_FALSE(decode_tile_pairs(bulk, 128, m, false, 64, bf16));
    }
  // The streaming kernel: uint4 in fp16 at every token count, uint4b8 in both dtypes at <= 8 tokens, and only where each
  // warp's tile range has even length.
  DecodePlan s;
  s.warps_n = 2, s.warps_k = 4, s.tiles_per_warp = 32, s.row_blocks = 256, s.grid_rows = 256;
  for (int m : {1, 8, 9, 16}) {
    EXPECT_TRUE(decode_tile_pairs(s, 128, m, true, 128, false)) << m;
    EXPECT_FALSE(decode_tile_pairs(s, 128, m, true, 128, true)) << "bf16 uint4: measured slower, not instantiated";
    EXPECT_FALSE(decode_tile_pairs(s, 128, m, true, 64, false));
    for (bool bf16 : {false, true}) {
      EXPECT_EQ(decode_tile_pairs(s, 128, m, false, 128, bf16), m <= 8) << "uint4b8: 1..8 tokens only, m = " << m;
      EXPECT_EQ(decode_tile_pairs(s, 128, m, false, cw, bf16), m <= 8) << m;
      EXPECT_FALSE(decode_tile_pairs(s, 128, m, false, 32, bf16));
    }
  }
  s.tiles_per_warp = 33;
  EXPECT_FALSE(decode_tile_pairs(s, 128, 1, true, 128, false)) << "an odd range splits a pair between warps";
  EXPECT_FALSE(decode_tile_pairs(s, 128, 1, false, 128, false)) << "an odd range splits a pair between warps";
  // The small-layer kernel never.
  const DecodePlan small = decode_small_plan_for_sms(1152, 896, 1, 132);
  ASSERT_GT(small.small_tiles, 0) << small.describe();
  EXPECT_FALSE(decode_tile_pairs(small, 14, 1, true, 128, false));
  EXPECT_FALSE(decode_tile_pairs(small, 14, 1, false, 128, false));
  // At 1 token every large PERF.md layer (the bulk kernel) runs the pairs in both dtypes: what call 5 of stop 33 measured.
  struct L { std::int64_t n, k; };
  for (L l : {L{6144, 4096}, L{28672, 4096}, L{4096, 14336}, L{8192, 8192}, L{57344, 8192}}) {
    const DecodePlan p = decode_plan_for_sms(l.n, l.k, 1, true, 128, true, 132);
    EXPECT_GT(p.bulk_stages, 0) << p.describe();
    EXPECT_TRUE(decode_tile_pairs(p, static_cast<int>(l.k / 64), 1, true, 128, true)) << p.describe();
  }
}

// x streamed with warps_k > 1 (decode.cu kXWin): only at 9..16 tokens with g >= 64, where x may stream; its windows (one
// per K group a ring slot) count in the plan's shared memory; a forced plan whose windows do not fit stages x.
TEST(DecodeHost, StreamedXWindowsOnlyWhereInstantiated) {
  ScopedEnv forced("W4A16_DECODE_PLAN", "4,2,1");
  const DecodePlan p16 = decode_plan_for_sms(4096, 14336, 16, false, 128, true, 132);
  EXPECT_TRUE(p16.xstream && p16.warps_k == 2) << p16.describe();
  EXPECT_TRUE(decode_plan_for_sms(4096, 4096, 9, true, w4a16::kChannelwise, true, 132).xstream);
  // (K = 4096 below: x staged fits there)
  EXPECT_FALSE(decode_plan_for_sms(4096, 4096, 8, false, 128, true, 132).xstream) << "1..8 tokens: not instantiated";
  EXPECT_FALSE(decode_plan_for_sms(4096, 4096, 16, false, 32, true, 132).xstream) << "g = 32: not instantiated";
  EXPECT_FALSE(decode_plan_for_sms(4096, 4096, 16, false, 128, false, 132).xstream) << "act-order / unaligned rows";
  EXPECT_FALSE(decode_tile_pairs(p16, 224, 16, false, 128, false));
  {
    ScopedEnv eight("W4A16_DECODE_PLAN", "1,1,1");  // 8 windows of 16 tokens: 8 x 3 x 16 x 528 bytes of x alone
    const DecodePlan p = decode_plan_for_sms(4096, 4096, 16, false, 128, true, 132);
    EXPECT_TRUE(!p.xstream && p.warps_n == 1 && p.warps_k == 8) << "the forced shape, x staged: " << p.describe();
  }
  ScopedEnv two("W4A16_DECODE_PLAN", "2,1,1");
  const DecodePlan p2 = decode_plan_for_sms(4096, 14336, 12, true, 128, true, 132);
  ASSERT_TRUE(p2.xstream) << p2.describe();
  ScopedEnv eightk("W4A16_DECODE_PLAN", "8,1,1");
  const DecodePlan p8 = decode_plan_for_sms(4096, 14336, 12, true, 128, true, 132);
  // Three more windows of x per ring slot (each x region rounded up to 128 bytes).
  EXPECT_NEAR(static_cast<double>(p2.smem_bytes - p8.smem_bytes), 3.0 * 3 * 12 * (4 * 128 + 16), 128.0);
}

// Which code of a build runs on a capability (common.cuh code_arch_for): sm_90a only on 9.0, sm_80 only on 8.0, the
// compute_80 PTX (W4A16_CUDA_PTX) on every newer GPU, sm_90a first where both could.
TEST(DecodeHost, CodeArchOfABuild) {
  struct C { const char* archs; bool ptx; int cap, want; };
  for (C c : {C{"90a", false, 90, 90}, C{"90a", false, 80, 0}, C{"90a", false, 100, 0}, C{"80", false, 80, 80},
              C{"80", false, 86, 0}, C{"80", false, 90, 0}, C{"80", true, 90, 80}, C{"80", true, 86, 80},
              C{"80", true, 75, 0}, C{"90a,80", false, 90, 90}, C{"90a,80", true, 90, 90}, C{"90a,80", false, 80, 80},
              C{"90a,80", false, 89, 0}, C{"", true, 90, 0}})
    EXPECT_EQ(code_arch_for(c.archs, c.ptx, c.cap), c.want) << c.archs << (c.ptx ? "+ptx" : "") << " on " << c.cap;
  // This build: the rule over its own list.
  EXPECT_EQ(code_arch(90), code_arch_for(build_archs().substr(0, build_archs().find('+')), build_archs().find("+ptx") != std::string::npos, 90));
  const DecodeDevice h200 = decode_device_for(90), a100 = decode_device_for(80);
  EXPECT_EQ(h200.sm90, code_arch(90) == 90);
  EXPECT_FALSE(a100.sm90);
  EXPECT_EQ(a100.smem_per_block, 163u * 1024);
  EXPECT_EQ(a100.smem_per_sm, 164u * 1024);
  EXPECT_EQ(h200.smem_per_block, 227u * 1024);
  const DecodeDevice l40s = decode_device_for(89);
  EXPECT_EQ(l40s.smem_per_block, 99u * 1024);
  EXPECT_EQ(l40s.threads_per_sm, 1536);
}

// Plans for a device that runs sm_80 code (an A100, or the PTX on a Hopper GPU): no cluster split, no bulk kernel (not
// even when its knobs force it), every plan within the A100's shared memory, and a forced cluster plan refused by name.
TEST(DecodeHost, Sm80CodePlansNeitherClustersNorBulkCopies) {
  DecodeDevice a100;
  a100.sm90 = false;
  a100.smem_per_block = 163 * 1024;
  a100.smem_per_sm = 164 * 1024;
  struct S { std::int64_t n, k; };
  // A device of 99 KB a block and 1536 threads an SM (8.6 / 8.9; 142 SMs as an L40S): the same rules in less memory.
  DecodeDevice l40s = a100;
  l40s.smem_per_block = 99 * 1024;
  l40s.smem_per_sm = 100 * 1024;
  l40s.threads_per_sm = 1536;
  // (Such a device runs this build's code only through the PTX: code_arch. decode_chunk halves the tokens per launch until
  // a plan fits, streamed or staged.)
  for (S s : {S{8192, 8192}, S{28672, 4096}, S{4096, 14336}, S{1152, 896}, S{9728, 896}})
    for (int m = 1; m <= 16; ++m)
      for (bool xs : {true, false}) {
        const int chunk = std::min(m, decode_chunk(s.k, m, true, 32, xs, l40s));
        const std::string what = std::to_string(s.n) + "x" + std::to_string(s.k) + " m=" + std::to_string(m) + (xs ? " streamable" : " staged");
        try {
          const DecodePlan p = decode_plan_for_sms(s.n, s.k, chunk, true, 32, xs, 142, l40s);
          EXPECT_EQ(p.splits, 1) << what << " " << p.describe();
          EXPECT_EQ(p.bulk_stages, 0) << what << " " << p.describe();
          EXPECT_LE(p.smem_bytes, l40s.smem_per_block) << what << " " << p.describe();
        } catch (const w4a16::Error& e) {  // no plan even at one token: the registry's claim refuses such a layer first
          EXPECT_EQ(chunk, 1) << what << ": " << e.what();
          EXPECT_FALSE(decode_fits(s.k, 1, true, 32, l40s)) << what;
        }
      }
  // Streamable rows of uint4b8 g = 128 (the common checkpoint) keep a plan at some chunk on every PERF.md layer.
  for (S s : {S{8192, 8192}, S{28672, 4096}, S{4096, 14336}})
    EXPECT_NO_THROW(decode_plan_for_sms(s.n, s.k, decode_chunk(s.k, 16, false, 128, true, l40s), false, 128, true, 142, l40s)) << s.k;
  int plans = 0;
  for (S s : {S{8192, 8192}, S{28672, 4096}, S{4096, 14336}, S{6144, 4096}, S{57344, 8192}, S{1152, 896}, S{9728, 896}, S{896, 4864}})
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true})
        for (int g : {32, 128, -1})
          for (bool xs : {true, false}) {
            if (!xs && !decode_fits(s.k, m, zeros, g, a100)) {  // act-order rows: decode_run halves the chunk
              EXPECT_THROW(decode_plan_for_sms(s.n, s.k, m, zeros, g, xs, 108, a100), w4a16::Error);
              continue;
            }
            const DecodePlan p = decode_plan_for_sms(s.n, s.k, m, zeros, g, xs, 108, a100);
            const std::string what = std::to_string(s.n) + "x" + std::to_string(s.k) + " m=" + std::to_string(m) + " " + p.describe();
            EXPECT_EQ(p.splits, 1) << what;
            EXPECT_EQ(p.bulk_stages, 0) << what;
            EXPECT_LE(p.smem_bytes, a100.smem_per_block) << what;
            EXPECT_GT(p.row_blocks, 0) << what;
            ++plans;
          }
  EXPECT_GT(plans, 1000);
  EXPECT_TRUE(decode_fits(4096, 1, false, 128, a100));
  {
    ScopedEnv bulk("W4A16_DECODE_BULK", "1"), forced("W4A16_DECODE_BULK_PLAN", "8,1");
    EXPECT_EQ(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 108, a100).bulk_stages, 0);
    EXPECT_EQ(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 108, a100).bulk_stages, 0);
    EXPECT_GT(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 132).bulk_stages, 0);  // the same knobs on sm_90a code
  }
  {
    ScopedEnv bad("W4A16_DECODE_BULK_PLAN", "3,1");  // malformed: refused on sm_80 code too
    EXPECT_THROW(decode_bulk_plan_for_sms(8192, 8192, 1, false, 128, 108, a100), w4a16::Error);
  }
  ScopedEnv cluster("W4A16_DECODE_PLAN", "8,2");
  try {
    decode_plan_for_sms(8192, 8192, 1, false, 128, true, 108, a100);
    ADD_FAILURE() << "a forced cluster split planned on sm_80 code";
  } catch (const w4a16::Error& e) {
    EXPECT_NE(std::string(e.what()).find("W4A16_DECODE_PLAN"), std::string::npos) << e.what();
  }
  EXPECT_EQ(decode_plan_for_sms(8192, 8192, 1, false, 128, true, 132).splits, 2);  // sm_90a code takes it
}

// FastDiv (fast_div.hpp: the MoE kernels' slot -> token division) equals n / d for every divisor an MoE layer's top-k
// can be, at every n near 0, near multiples of d, near powers of two and near 2^31.
TEST(CudaHost, FastDivEqualsTheDivision) {
  std::vector<std::int64_t> ns;
  for (std::int64_t n = 0; n < 4096; ++n) ns.push_back(n);
  for (int b = 12; b <= 31; ++b)
    for (std::int64_t dn = -3; dn <= 3; ++dn) ns.push_back((std::int64_t{1} << b) + dn);
  for (std::uint32_t d = 1; d <= 257; ++d) {
    const FastDiv f(d);
    for (std::int64_t n : ns) {
      if (n < 0 || n > 0x7fffffff) continue;
      ASSERT_EQ(f.div(static_cast<int>(n)), static_cast<int>(n / d)) << "n = " << n << ", d = " << d;
    }
    for (std::int64_t q : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{0x7fffffff} / d})
      for (std::int64_t dn = -1; dn <= 1; ++dn) {
        const std::int64_t n = q * d + dn;
        if (n < 0 || n > 0x7fffffff) continue;
        ASSERT_EQ(f.div(static_cast<int>(n)), static_cast<int>(n / d)) << "n = " << n << ", d = " << d;
      }
  }
}

// A one-round bulk plan over most SMs that cannot fit twice per SM takes a ring cut to fit twice where it loses at most
// one stage of its share (stop 74 call 3: llama8b.o at 4..8 tokens, 3 of 4 stages, 1.05-1.16x); longer shares and plans
// over fewer blocks keep their rings.
TEST(DecodeHost, OneRoundBulkPlansFitTwicePerSmWhereTheRingLosesOneStage) {
  DecodeDevice h100;
  h100.dram_tb_per_s = 3.35;
  for (int m : {4, 6, 8}) {
    const DecodePlan o = decode_bulk_plan_for_sms(4096, 4096, m, true, 128, 132, h100, true);  // llama8b.o uint4
    ASSERT_GT(o.bulk_stages, 0);
    EXPECT_EQ(o.bulk_blocks_per_sm, 2) << o.describe();
    EXPECT_EQ(o.bulk_stages, 3) << o.describe();
    EXPECT_EQ(o.grid_rows, o.row_blocks) << o.describe();
    EXPECT_LE(o.smem_bytes + 1024, 228u * 1024 / 2) << o.describe();  // two blocks and their reserved 1 KB fit an SM
    for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{8192, 8192}, {4096, 14336}, {6144, 4096}, {896, 4864}}) {
      const DecodePlan p = decode_bulk_plan_for_sms(n, k, m, true, 128, 132, h100, true);
      EXPECT_EQ(p.bulk_blocks_per_sm, 1) << n << "x" << k << " m=" << m << " " << p.describe();
    }
  }
  // Already within half an SM (uint4b8 at 4 tokens: 4 stages): unchanged, one block per SM.
  const DecodePlan b8 = decode_bulk_plan_for_sms(4096, 4096, 4, false, 128, 132, h100, true);
  EXPECT_EQ(b8.bulk_stages, 4) << b8.describe();
  EXPECT_EQ(b8.bulk_blocks_per_sm, 1) << b8.describe();
  // 9..16 tokens: two blocks never fit by registers; the plan keeps one per SM.
  EXPECT_EQ(decode_bulk_plan_for_sms(4096, 4096, 12, true, 128, 132, h100, true).bulk_blocks_per_sm, 1);
}
