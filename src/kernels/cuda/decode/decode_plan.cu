// ---- Plans of the decode kernels (host code; compiled as CUDA for decode_device.cuh's sizes) ----
// How decode_run spreads one chunk of <= 16 tokens over the GPU: the streaming kernel's plan (cost
// model, measured table, persistence), the small-layer kernel's (one wave), the bulk kernel's (cost
// fitted to forced-plan sweeps) and the rule that picks among them (decode_plan_for_sms). Pure host
// arithmetic over the layer's shape and the SM count, plus the W4A16_DECODE_* knobs; every function
// is host-tested (build/tests/gpu/decode/w4a16_test_cuda_host, CI). The kernels: decode.cu (streaming),
// decode_small.cu, decode_bulk.cu; the launch: decode_run.cu. Measurements: docs/benchmarks/decode.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "decode/decode.hpp"
#include "decode/decode_device.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

namespace decode_detail {

// W4A16_DECODE_XSTREAM: "0" never streams x, "1" streams it in every plan that can (exploration).
int xstream_override() {
  const char* env = std::getenv("W4A16_DECODE_XSTREAM");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_XSTREAM", "0 or 1", env);
  return *env - '0';
}

}  // namespace decode_detail

namespace {

using namespace decode_detail;

int cached_sm_count() {
  static const int n = device_sm_count();
  return n;
}
// Shared memory the streaming and small kernels may take per block on `dev`.
std::size_t smem_limit(const DecodeDevice& dev) { return std::min(kMaxSmem, dev.smem_per_block); }
// Blocks of a cluster that may split K on `dev`: none beyond one without sm_90 code.
int max_splits(const DecodeDevice& dev) { return dev.sm90 ? kMaxSplits : 1; }

DecodePlan make_plan(std::int64_t nt, std::int64_t kt, int wn, int splits_wanted, int m, bool zeros, bool g32, bool xstream = false) {
  DecodePlan p;
  // Streamed x: every warp of the block on one K range (warps_n = 8), or a window of x per K group of the block
  // (decode.cu kXWin: instantiated at 9..16 tokens with g >= 64 only).
  p.xstream = xstream && (wn == kWarps || (m > 8 && !g32));
  p.warps_n = wn;
  p.warps_k = kWarps / wn;
  const std::int64_t per_split = (kt + splits_wanted - 1) / splits_wanted;
  p.tiles_per_warp = static_cast<int>((per_split + p.warps_k - 1) / p.warps_k);
  const std::int64_t block_tiles = static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k;
  p.splits = static_cast<int>((kt + block_tiles - 1) / block_tiles);  // no empty ranks
  p.row_blocks = static_cast<int>((nt + wn - 1) / wn);
  p.grid_rows = p.row_blocks;
  p.depth = streaming_ring_depth(m);
  p.smem_bytes = streaming_smem(static_cast<int>(block_tiles), p.warps_k, m, zeros, g32, p.xstream);
  return p;
}

// Blocks of this plan resident per SM: 2 by registers (kMinBlocks), fewer when shared memory runs out.
int blocks_per_sm(const DecodePlan& p, const DecodeDevice& dev) {
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(2, (dev.smem_per_sm - 1024) / (p.smem_bytes + 1024))));
}

// W4A16_DECODE_PERSIST: "0" launches one block per row block (A/B measurement), "1" or unset lets
// decode_plan make plans of more than one wave persistent.
bool persist_enabled() {
  const char* env = std::getenv("W4A16_DECODE_PERSIST");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_PERSIST", "0 or 1", env);
  return *env == '1';
}

// Persistent grid where the plan takes more than one wave of blocks (1..8 tokens: the kernels that
// loop, decode_kernel's kPersist): as many rows of blocks (clusters of `splits`) as are resident at
// once, each looping over row blocks. H200, 2026-12-02 (docs/benchmarks/decode.md): llama70b.gate_up
// M = 1, 1792 blocks in 6.8 waves, 81.3 -> 65.5 us. Where one wave suffices the grid is unchanged:
// letting the cost model trade waves for smaller items picked 1..8-tile items, whose reduction per
// item cost more than the waves it saved (qwen0.5b.gate_up M = 1 4.7 -> 7.9 us, same run). One block
// per SM for every plan (leaving each SM a slot for the next kernel of the stream to prefetch in)
// was slower everywhere it changed the grid (8192x8192 M = 1 12.7 -> 15.2 us, llama70b.gate_up
// 68.1 -> 91.0 us): 8 warps per SM do not keep the bytes in flight that 16 do.
void make_persistent(DecodePlan& p, int sms, int m_chunk, const DecodeDevice& dev) {
  if (m_chunk > 8) return;
  const int resident_rows = std::max(1, sms * blocks_per_sm(p, dev) / p.splits);
  if (p.row_blocks > resident_rows) p.grid_rows = resident_rows;
}

// Cost model in microseconds of a plan. Its form was fitted first to the forced-plan sweep of
// version 3 (2026-12-02 afternoon; docs/benchmarks/decode.md): an SM streams one 64x16 tile per
// (c0 + c1 / resident warps) cycles (x cs at 9..16 tokens: the second mma per sub-tile), each wave
// of blocks adds wl us of latency (first loads, x, reduction), a cluster of s blocks slows the wave
// by cf per extra rank and costs cc once, streaming x costs xf over staging it, and staging costs
// `st` cycles per L2 round trip up front (a thread loads 8 groups of 16 bytes per trip).
// Constants refitted on 2026-12-02 night to the sweep of every forced plan (warps_n 1/2/4/8 x
// splits 1/2/4/8, streamed x at warps_n = 8) on the nine PERF.md shapes below llama70b, M = 1..16,
// fp16 uint4b8 g128, v5 kernel (docs/benchmarks/decode_plans_2026-12-02_night.csv): over those 54
// points the old constants (c0 30, c1 240, cs 1.3, wl 1.2, cf 0.15, cc 0.6, xf 1.03, st 700) picked
// plans up to 1.65x slower than the best measured one (sum of log ratios 7.4), these pick within
// 1.18x of it (sum 1.4, bench/gpu/fit_decode_plan.py; misses: llama8b.qkv M = 4..16, qwen0.5b.down M = 1..4, ~1.15x,
// where a grid of more, smaller blocks wins). What moved: staging x costs 3x what the old model
// said and streaming it far less, so streamed x is chosen from M = 4..8 up on most shapes.
struct CostConstants {
  double c0 = 17, c1 = 30, cs = 1.07, wl = 0.2, cf = 0.13, cc = 0.2, xf = 1.11, st = 2100;
};

double plan_cost(const DecodePlan& p, int sms, int m_chunk, const DecodeDevice& dev) {
  constexpr CostConstants c;
  const double cyc_scale = m_chunk > 8 ? c.cs : 1.0;
  const std::int64_t bps = blocks_per_sm(p, dev);
  const std::int64_t slots = static_cast<std::int64_t>(sms) * bps;
  const std::int64_t blocks = static_cast<std::int64_t>(p.row_blocks) * p.splits;
  const std::int64_t waves = (blocks + slots - 1) / slots;
  const std::int64_t per_sm = std::min<std::int64_t>(bps, (std::min(blocks, slots) + sms - 1) / sms);  // blocks on the busiest SM
  const double warps = static_cast<double>(per_sm * kWarps);
  const double cycles = static_cast<double>(per_sm * kWarps * p.tiles_per_warp) * (c.c0 + c.c1 / warps) * cyc_scale;
  const std::int64_t block_tiles = static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k;
  const double stage = p.xstream ? 0.0 : static_cast<double>((m_chunk * block_tiles * 8 + 8 * kThreads - 1) / (8 * kThreads)) * c.st;
  return static_cast<double>(waves) * ((cycles + stage) / 1980.0 + c.wl) * (1.0 + c.cf * (p.splits - 1)) * (p.xstream ? c.xf : 1.0) +
         (p.splits > 1 ? c.cc : 0.0);
}

// W4A16_DECODE_SMALL: "0" never takes the small-layer kernel, "1" wherever its plan fits one wave,
// unset: where it fits and its blocks copy at most kDecodeSmallMaxXBytes of x (decode.hpp).
int small_override() {
  const char* env = std::getenv("W4A16_DECODE_SMALL");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_SMALL", "0 or 1", env);
  return *env - '0';
}
// W4A16_DECODE_SMALL_T: the smallest tile bucket the small plan may take (2, 4, 8 or 16). Unset: 2 up to
// 8 tokens, 4 from 9: there each block copies its x rows of all of K (16 tokens of qwen0.5b.qkv: 28 KB a block
// against 7 KB of its weights), and half the blocks at 4 tiles a warp (warps_k 4 instead of 8) ran 0.90-0.99x
// the time of the 2-tile plan on qwen0.5b.qkv / o at M = 9 / 12 / 16, fp16 and bf16 (2026-12-04 stop 31 call 8;
// 8 tiles 1.1-1.3x slower). This also puts qwen0.5b.o at M = 12 ahead of tinygemm (3.00 against 3.07 us).
int small_min_tiles(int m_chunk) {
  const char* env = std::getenv("W4A16_DECODE_SMALL_T");
  if (!env || !*env) return m_chunk >= 9 ? kSmallTiles[1] : kSmallTiles[0];
  for (int t : kSmallTiles)
    if (std::to_string(t) == env) return t;
  fail(ErrorCode::invalid_argument, "W4A16_DECODE_SMALL_T", "2, 4, 8 or 16", env);
}

// Shared memory of the small kernel: x rows for the whole K range of the block (m tokens x
// x_row_bytes) + the partials of 8 warps (MB x 512 bytes each).
std::size_t small_smem(int block_tiles, int m) {
  return static_cast<std::size_t>(x_row_bytes(block_tiles)) * m + static_cast<std::size_t>(kWarps) * (m <= 8 ? 1 : 2) * 512;
}

// Measured plans: where the cost model's plan lost by >= 6% to a forced plan on the H200 (132 SMs):
// forced-plan sweeps of 2026-12-03 (fp16 uint4b8 g128; 1..8 tokens at 05:25 UTC, the 8-tile-step
// kernel, docs/benchmarks/session_2026-12-03_morning/plans.csv; 9..16 tokens at 06:52 UTC below).
// The model (plan_cost) cannot be refitted to them: a refit on the 1..8-token points lost on held-out
// layers (docs/benchmarks/decode.md, version 9). Each entry covers the token chunks m_lo..m_hi: the
// measured M and those between it and the layer's previous entry (3 takes the plan measured at 4,
// 5..7 the one at 8), except where the A/B said otherwise. Checked as the default against
// W4A16_DECODE_TABLE=0 in one build (scripts/decode-table-ab, fp16 + bf16, every row against f64):
// M = 1..8 at 06:47 UTC, median 1.059x over 80 rows (llama8b.down M = 3..8 1.12-1.36x, llama8b.qkv
// M = 2..8 1.07-1.27x, llama8b.o M = 2..4 1.08-1.20x, llama8b.gate_up M = 1 / 3 / 4 1.02-1.15x,
// 8192x8192 M = 6 / 8 1.06-1.11x; its one loss, 8192x8192 M = 5 at 0.91x, is left to the model);
// M = 5, 9..16 at 07:00 UTC, median 1.057x over 56 rows, min 0.995x. uint4b8 with g = 128 on 132-SM
// devices only (what was measured; both activation dtypes run the same plan); W4A16_DECODE_TABLE=0
// turns it off (the A/B knob). us: the model's plan -> the measured one.
struct MeasuredPlan {
  std::int64_t n, k;
  int m_lo, m_hi;      // token chunks m_lo..m_hi
  int warps_n, splits;
  bool xstream;
};
constexpr MeasuredPlan kMeasuredPlans[] = {
    {6144, 4096, 2, 2, 8, 4, true},    // llama8b.qkv M = 2: 7.79 -> 7.26
    {6144, 4096, 3, 4, 8, 4, true},    //             M = 4: 8.92 -> 7.09
    {6144, 4096, 5, 8, 8, 4, true},    //             M = 8: 8.50 -> 7.34
    {4096, 4096, 2, 2, 2, 1, false},   // llama8b.o   M = 2: 6.53 -> 6.08
    {4096, 4096, 3, 4, 8, 4, true},    //             M = 4: 7.24 -> 6.38
    {4096, 4096, 9, 16, 4, 2, true},   //             M = 12 / 16: 8.28 / 8.44 -> 7.41 / 7.72 (x windows, below; stop 39)
    {28672, 4096, 1, 1, 8, 1, true},   // llama8b.gate_up M = 1: 20.61 -> 18.82
    {28672, 4096, 3, 4, 8, 1, true},   //             M = 4: 21.20 -> 19.92
    {4096, 14336, 3, 4, 4, 2, false},  // llama8b.down M = 4: 15.60 -> 12.85
    {4096, 14336, 5, 8, 4, 2, false},  //             M = 8: 16.71 -> 13.53
    {8192, 8192, 6, 8, 8, 2, false},   // 8192x8192   M = 8: 14.57 -> 13.64 (M = 5 measured slower: 14.7 -> 16.2)
    // 9..16 tokens (the 4-tile-step kernel), forced-plan sweep of 06:52 UTC at M = 10 / 12 / 14 / 16
    // (scripts/decode-plan-sweep, session_2026-12-03_morning/call3_decode_plans_9to16.csv):
    {6144, 4096, 9, 16, 8, 4, true},     // llama8b.qkv M = 10..16: 9.93-10.30 -> 8.94-9.00
    {4096, 14336, 9, 10, 4, 2, false},   // llama8b.down M = 10: 22.06 -> 16.43 (staged x fits up to 10 tokens)
    // x streamed in a window per K group (warps_k = 2; decode.cu kXWin), 2026-12-05 stop 39 call 3 (forced plans against
    // the 8,8 / 8,4 streamed ones above, one process each, best of 2 rounds; M = 9..11 follow unmeasured):
    {4096, 14336, 11, 16, 4, 2, true},   // llama8b.down M = 12 / 16: 20.07 / 20.66 -> 17.30 / 18.26 (8,8 streamed before)
    {57344, 8192, 9, 16, 8, 2, true},    // llama70b.gate_up M = 10..16: 95.0-103.7 -> 89.1-95.2
    // x staged (no block barrier per step) where the cost model streams it: one block per SM either way (128 blocks),
    // 2026-12-05 stop 39 (session_2026-12-05_stop39: forced plans, and W4A16_DECODE_XSTREAM=0 in 3 interleaved rounds)
    {8192, 8192, 9, 16, 8, 2, false},    // 8192x8192 M = 12 / 16: 16.86 / 17.73 -> 16.55 / 17.02 (8,2 streamed 17.68, staged 17.04)
};
constexpr int kMeasuredPlanSms = 132;

bool measured_plans_enabled() {
  const char* env = std::getenv("W4A16_DECODE_TABLE");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_TABLE", "0 or 1", env);
  return *env == '1';
}

const MeasuredPlan* measured_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok, int sms,
                                  const DecodeDevice& dev) {
  if (zeros || group_size != 128 || sms != kMeasuredPlanSms || !dev.sm90 || !measured_plans_enabled()) return nullptr;
  for (const MeasuredPlan& e : kMeasuredPlans)
    if (e.n == n && e.k == k && m_chunk >= e.m_lo && m_chunk <= e.m_hi && (xstream_ok || !e.xstream)) return &e;
  return nullptr;
}

// W4A16_DECODE_BULK: "0" never takes the bulk kernel, "1" wherever its plan fits (first of all
// kernels: before the small-layer rule), unset: where bulk_by_default says (after a forced
// W4A16_DECODE_SMALL=1). Returns -1 (unset), 0 or 1.
int bulk_override() {
  const char* env = std::getenv("W4A16_DECODE_BULK");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_BULK", "0 or 1", env);
  return *env - '0';
}

// Shared memory one bulk block may take at b blocks per SM: 228 KB per SM less 1 KB reserved per
// block, at most the 227 KB opt-in limit.
std::size_t bulk_budget(int blocks_per_sm) {
  return std::min<std::size_t>(kBulkMaxSmem, (228 * 1024) / static_cast<std::size_t>(blocks_per_sm) - 1024);
}

// Rounds of items the busiest block of a bulk plan loops over, and its blocks on the busiest SM.
std::int64_t bulk_rounds(const DecodePlan& p) { return (p.row_blocks + p.grid_rows - 1) / p.grid_rows; }
std::int64_t bulk_blocks_on_busiest_sm(const DecodePlan& p, int sms) {
  return std::min<std::int64_t>(p.bulk_blocks_per_sm, (p.grid_rows + sms - 1) / sms);
}

// Items per SM on average over those of the busiest SM (its blocks x rounds of items): 1 where every
// SM streams the same bytes.
double bulk_balance(const DecodePlan& p, int sms) {
  return static_cast<double>(p.row_blocks) / (static_cast<double>(sms) * static_cast<double>(bulk_blocks_on_busiest_sm(p, sms) * bulk_rounds(p)));
}

// Stages the busiest block of a bulk plan streams in all: its rounds of items x stages per item.
std::int64_t bulk_share(const DecodePlan& p, std::int64_t kt) {
  const std::int64_t span = static_cast<std::int64_t>(p.warps_k) * kBulkTiles;
  return bulk_rounds(p) * ((kt + span - 1) / span);
}

// The bulk plan of warps_n stripes per item at b blocks per SM, or bulk_stages = 0 where two stages
// do not fit beside the staged x. Stages: as many as the busiest block streams in all (its rounds of
// items), at least 2, at most what fits: a ring larger than the block's whole share only keeps the
// next call's blocks (programmatic dependent launch) from becoming resident beside it. Measured
// (2026-12-04, call 3): llama8b.o M = 1 on 128 blocks of one per SM, 5 stages 4.27 us against 12
// stages 4.85; 8192x8192, whose share is 16 stages, 12 stages 10.68 against 5 stages 12.65.
// xs: x streamed per stage (an x slot of the stage's span beside each weight stage), else staged whole.
DecodePlan make_bulk_plan(std::int64_t nt, std::int64_t kt, int m, bool zeros, bool g32, int wn, int b, int sms, bool xs = false) {
  DecodePlan p;
  p.depth = 0;
  if (b > (m <= 8 ? kBulkMinBlocks<1> : kBulkMinBlocks<2>)) return p;  // the register cap allows fewer
  const int span = xs ? (kWarps / wn) * kBulkTiles : 0;
  const std::size_t fixed = bulk_smem(m, static_cast<int>(kt), zeros, g32, 0, span);
  const std::size_t per_stage = bulk_stage_bytes(zeros, g32) + (xs ? bulk_x_slot_bytes(m, span) : 0);
  const std::size_t budget = bulk_budget(b);
  if (fixed + 2 * per_stage > budget) return p;
  p.bulk_blocks_per_sm = b;
  p.warps_n = wn;
  p.warps_k = kWarps / wn;
  p.splits = 1;
  p.tiles_per_warp = static_cast<int>((kt + p.warps_k - 1) / p.warps_k);
  p.row_blocks = static_cast<int>((nt + wn - 1) / wn);
  p.grid_rows = static_cast<int>(std::min<std::int64_t>(p.row_blocks, static_cast<std::int64_t>(sms) * b));
  const std::int64_t fit = std::min<std::int64_t>(kBulkMaxStages, static_cast<std::int64_t>((budget - fixed) / per_stage));
  p.bulk_stages = static_cast<int>(std::min(fit, std::max<std::int64_t>(2, bulk_share(p, kt))));
  p.smem_bytes = bulk_smem(m, static_cast<int>(kt), zeros, g32, p.bulk_stages, span);
  p.bulk_xstream = xs;
  return p;
}

// Cost of a bulk plan in tiles: those the busiest SM streams (its blocks x rounds of items x the
// item's tiles, padded to whole stages) plus kItemTiles per round of items (the reduction, the store,
// the barrier of a stripe's warps), scaled by 64 KB / the bytes the ring keeps in flight per SM where
// the ring is shorter than the block's share and holds less than 64 KB. The constants: a grid search
// over the forced-plan sweeps of 2026-12-04 (every plan on 8 PERF.md shapes x 1..16 tokens; calls 2
// and 3, docs/benchmarks/decode.md version 12). Ties go to one block per SM (decode_bulk_plan_for_sms
// tries it first). A stage of a streamed-x plan carries its x slot too (m tokens x the box's tiles): those bytes count in
// flight beside the weights (stop 76 call 2, an H100: the one plan it moved, qwen0.5b.down at 13..16 tokens from 2
// stripes on 28 blocks to 1 stripe on 56, ran 1.06-1.15x faster, fp16 / bf16 x both scalar types, 2 rounds; decode.md
// version 29).
double bulk_cost(const DecodePlan& p, std::int64_t kt, int m, int sms) {
  constexpr double kItemTiles = 48, kInflight = 64 * 1024;
  const std::int64_t span = static_cast<std::int64_t>(p.warps_k) * kBulkTiles;
  const std::int64_t item_tiles = (kt + span - 1) / span * span * p.warps_n;
  const std::int64_t rounds = bulk_rounds(p), per_sm = bulk_blocks_on_busiest_sm(p, sms);
  const double stage_bytes = kBulkTiles * kWarps * 512.0 + (p.bulk_xstream ? bulk_x_slot_bytes(m, static_cast<int>(span)) : 0.0);
  const double inflight = static_cast<double>(per_sm * (p.bulk_stages - 1)) * stage_bytes;
  const double tiles = static_cast<double>(per_sm * rounds * item_tiles) + kItemTiles * static_cast<double>(rounds);
  const bool short_ring = p.bulk_stages < bulk_share(p, kt);
  return short_ring && inflight < kInflight ? tiles * kInflight / inflight : tiles;
}

constexpr std::int64_t kBulkAutoXBytes = 20 * 1024;
constexpr std::int64_t kBulkSmallLayerBytes = 8 << 20;
constexpr double kBulkSlowDramTbPerS = 4.0;
// At 9..16 tokens (x streamed) the bulk plan is the default where it runs one round of items or its rounds keep the SMs
// at least this busy (bulk_balance): llama8b.gate_up's 0.85 lost 0.89x to the streaming kernel (stop 74 call 1).
constexpr double kBulkWideBalance = 0.9;
constexpr std::int64_t kBulkSlowDramXBytes = 128 * 1024;
constexpr std::int64_t kBulkSlowDramLayerBytes = std::int64_t{32} << 20;

// Where the bulk kernel streams x per stage by default (W4A16_DECODE_BULK_XSTREAM unset; where x rows allow it): on
// H100-class memory at 4..16 tokens on every layer (until stop 74: 4..8 tokens on layers of at most
// kBulkSlowDramLayerBytes, with one copy per token row). Measured on an H100 (stop 44 call 4,
// the bulk kernel with streamed x forced against the default plans, 2 rounds, docs/benchmarks/decode.md version 22):
// M = 4 / 8: 8192x8192 1.03-1.05 / 1.06-1.08x, llama8b.down 1.10-1.12 / 1.16-1.17x, llama8b.o 1.11-1.14 / 1.26-1.27x,
// llama8b.qkv 1.00 / 1.03x, qwen0.5b.down 1.30 / 1.21x, qwen0.5b.gate_up 1.04-1.07 / 1.03-1.05x (no staging of x before
// the first stage, and room for stages where x of all of K took it); llama70b.gate_up 0.89-0.96x (many items a block:
// x read again per item), 1 token 0.92-0.99x but qwen0.5b.down, 9..16 tokens 0.64-1.00x but llama8b.o (1.08-1.15x).
// As the default (call 5, against the previous default, the 10 PERF.md layers x M = 4..8): 0.99-1.33x, llama8b.o /
// down and qwen0.5b.down 1.11-1.33x, the Qwen qkv / o 1.03-1.10x.
// On faster memory (the H200, 4.8 TB/s peak) only on layers of at most kBulkSmallLayerBytes: the same forced A/B there
// (stop 45 call 1, 2 rounds, docs/benchmarks/decode.md version 23) at M = 4 / 8: llama8b.o 1.35-1.37 / 1.17-1.20x,
// qwen0.5b.down 1.20 / 1.16-1.17x, qwen0.5b.gate_up 0.99-1.01 / 1.02-1.05x; on larger layers 0.85-0.96x (8192x8192,
// llama8b.qkv / gate_up, llama70b.gate_up) but llama8b.down (1.00-1.03x). Unknown devices (no peak read): never.
// And on H100-class memory at 9..16 tokens, every layer, both scalar types, every group size (bulk_by_default then
// takes the plan where it keeps the SMs busy: one round of items, or rounds balanced to >= kBulkWideBalance). Stop 74
// call 1 (an H100 80GB HBM3, fp16, g = 128, 2 interleaved rounds, every row against f64,
// docs/benchmarks/session_2026-12-07_stop74/): with x as one TMA box per stage, the bulk kernel forced at 12 / 16
// tokens against main's default plans (the streaming kernel but on llama8b.down uint4): 8192x8192 1.15-1.26x,
// llama8b.o 1.25-1.29x, llama8b.qkv 1.05-1.19x, llama8b.down 1.25-1.30x (uint4b8; uint4 against its bulk default of
// main 1.20-1.30x), qwen0.5b.qkv 1.10-1.14x, qwen0.5b.gate_up 1.05-1.09x, qwen0.5b.down 0.98-1.22x; llama70b.gate_up
// 84.7-88.9 us against stop 72's streaming 96-98 (1.08-1.15x); llama8b.gate_up 28.6-29.9 against 26.3-26.7 (0.89x: its
// plan's 224 items on 132 blocks, balance 0.85, the one layer the balance rule leaves out). g = 32 on llama8b.down uint4
// (the G rows): 17.6-18.0 us at 9 / 12 tokens against the streaming kernel's 28.0-28.8 (stop 73).
// Before the TMA box (one copy per token row, stop 72 call B) it won only on llama8b.down uint4 and lost elsewhere.
// With the box, at 4..8 tokens on H100-class memory the layers over kBulkSlowDramLayerBytes take it too (stop 74 call 2,
// forced against the default: llama8b.gate_up 1.02-1.19x, llama70b.gate_up 0.99-1.06x, fp16 / bf16 x both scalar types).
bool bulk_xstream_by_default(int m_chunk, std::int64_t n, std::int64_t k, const DecodeDevice& dev) {
  if (dev.dram_tb_per_s <= 0 || m_chunk < 4 || m_chunk > 16) return false;
  const bool slow = dev.dram_tb_per_s < kBulkSlowDramTbPerS;
  return slow || (m_chunk <= 8 && n * k / 2 <= kBulkSmallLayerBytes);
}
// Where the bulk kernel's plan `bp` (one that fits: bulk_stages > 0) is the default, from A/Bs on the
// H200 (every row against f64; docs/benchmarks/decode.md versions 12 and 13): the bulk kernel forced
// against the streaming / small kernels on the 10 PERF.md shapes x 1..16 tokens x fp16 / bf16.
//  - 1 token: everywhere (1.02-1.29x).
//  - up to 8 tokens where each block streams at least 4 rounds of items (llama70b.gate_up 1.03-1.25x
//    at 2..8: the ring runs on across items).
//  - 2 tokens: where x of 2 tokens is at most kBulkAutoXBytes (K <= 5120; on 8192x8192 and
//    llama8b.down, x >= 32 KB, the streaming kernel ran 0.97-1.05x the bulk kernel's time).
//  - 3 tokens: where the plan keeps the SMs evenly busy (bulk_balance >= 0.8: 1.06-1.39x on
//    8192x8192, llama8b.down / gate_up / o, llama70b.gate_up; llama8b.qkv's 96 items on 132 SMs, 0.73,
//    ran 0.93-0.95x the streaming kernel's split plan) and K is within the 2-token bound: once the
//    streaming kernel's rings were aligned, it ran 1.01-1.07x the bulk kernel's time at 3 tokens on
//    8192x8192 and llama8b.down (K = 8192 / 14336: 48 / 86 KB of x staged per bulk block), while
//    llama8b.o kept the bulk kernel (0.96-0.99x) and llama8b.gate_up split by dtype (fp16 0.994x,
//    bf16 1.044x) (2026-12-04 stop 31 call 6: one binary, W4A16_DECODE_BULK=0 against the default,
//    3 interleaved rounds).
//  - up to 6 tokens on layers under kBulkSmallLayerBytes of weights (the Qwen2.5-0.5B layers 1.01-1.27x,
//    where the other kernels are latency-bound; 0.88x at 8 tokens on qwen0.5b.down), and up to 8 there
//    where x is within kBulkAutoXBytes (2026-12-04 stop 31 call 10, one binary, 2 rounds: at 7 / 8 tokens
//    qwen0.5b.gate_up 0.82-0.90x the streaming kernel's time, qkv / o 0.89-0.94x at 8 and 0.96-1.01x at 7
//    the small kernel's; qwen0.5b.down, 68-78 KB of x, 1.07-1.14x: left streaming).
// Elsewhere at 4..8 tokens the streaming kernel's split plans measured 0.93-1.37x faster (llama8b.down
// at 6 tokens keeps 2 stages beside its 172 KB of x), and from 9 tokens on everywhere. These ratios
// predate the streaming kernel's 128-byte ring alignment (decode.md version 13, 1.00-1.21x for it at
// 1..8 tokens) but the 3-token K bound; the whole, rule and alignment, measured 0.97-1.26x the previous
// main on 160 rows.
//  - On H100-class memory (a peak below kBulkSlowDramTbPerS; the rules above were measured on the H200): up to 6 tokens
//    where x is at most kBulkSlowDramXBytes on layers of at most kBulkSlowDramLayerBytes of weights. Two H100 80GB HBM3
//    runs (stop 43 call 4, stop 44 call 1: the bulk kernel forced against the default plans, 8 layers x 1..8 tokens x
//    fp16 / bf16, each within 1-2% of the other; docs/benchmarks/decode.md version 22): 8192x8192 M = 2..6 1.03-1.08x,
//    llama8b.down 2..4 1.05-1.12x (6: 172 KB of x, 0.83x), llama8b.o 4..6 1.12-1.16x, llama8b.qkv 3..6 1.03-1.13x;
//    llama8b.gate_up (56 MB) 0.94x at 6, every layer 0.92-0.99x at 8.
//  - And the bulk kernel with x streamed per stage (bulk_xstream_by_default) wherever its plan streams x; past 8 tokens
//    (the one rule there) where the plan runs one round of items or balances its rounds to kBulkWideBalance.
bool bulk_by_default(int m_chunk, std::int64_t n, std::int64_t k, const DecodePlan& bp, int sms, const DecodeDevice& dev) {
  if (m_chunk == 1) return true;
  if (bp.bulk_xstream && bulk_xstream_by_default(m_chunk, n, k, dev))
    return m_chunk <= 8 || bulk_rounds(bp) == 1 || bulk_balance(bp, sms) >= kBulkWideBalance;
  if (m_chunk > 8) return false;
  if (dev.dram_tb_per_s > 0 && dev.dram_tb_per_s < kBulkSlowDramTbPerS && m_chunk <= 6 &&
      m_chunk * k * 2 <= kBulkSlowDramXBytes && n * k / 2 <= kBulkSlowDramLayerBytes)
    return true;
  if (bulk_rounds(bp) >= 4) return true;
  if (m_chunk == 2) return 2 * k * 2 <= kBulkAutoXBytes;
  if (m_chunk == 3 && bulk_balance(bp, sms) >= 0.8 && 2 * k * 2 <= kBulkAutoXBytes) return true;
  return n * k / 2 < kBulkSmallLayerBytes && (m_chunk <= 6 || m_chunk * k * 2 <= kBulkAutoXBytes);
}

// Every group spans whole tile pairs (g >= 128 or channelwise) and K_pad / 64 = kt is even: the rule of the tile-pair
// variants.
bool groups_of_pairs(std::int64_t kt, int group_size) { return (group_size == kChannelwise || group_size >= 128) && kt % 2 == 0; }

// W4A16_DECODE_BULK_XSTREAM: "1" streams x per stage in the bulk kernel wherever it can, "0" never (A/B measurement);
// unset: where bulk_xstream_by_default says. Returns -1 (unset), 0 or 1.
int bulk_xstream_override() {
  const char* env = std::getenv("W4A16_DECODE_BULK_XSTREAM");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_BULK_XSTREAM", "0 or 1", env);
  return *env - '0';
}

}  // namespace

DecodePlan decode_bulk_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, int sms,
                                    const DecodeDevice& dev, bool xstream_ok) {
  if (sms < 1) fail(ErrorCode::invalid_argument, "sms", ">= 1", std::to_string(sms));
  if (m_chunk < 1 || m_chunk > 16) fail(ErrorCode::invalid_argument, "m_chunk", "1..16", std::to_string(m_chunk));
  const bool g32 = group_size == 32;
  const std::int64_t nt = (n + kTcPadN - 1) / kTcPadN * (kTcPadN / kTcTileN);
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  // x streamed: the producer copies whole 64-wide tiles of x rows (no tail past K to zero-fill).
  const int xo = bulk_xstream_override();
  const bool xs =
      (xo == 1 || (xo == -1 && bulk_xstream_by_default(m_chunk, n, k, dev))) && xstream_ok && kt * kTcPadK == k;
  DecodePlan best;  // bulk_stages = 0: none fits
  if (const char* env = std::getenv("W4A16_DECODE_BULK_PLAN"); env && *env) {
    int wn = 0, b = 0, used = 0;
    if (std::sscanf(env, "%d,%d%n", &wn, &b, &used) != 2 || env[used] != '\0' || (wn != 1 && wn != 2 && wn != 4 && wn != 8) || (b != 1 && b != 2))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_BULK_PLAN", "\"warps_n,blocks_per_sm\" with warps_n in {1,2,4,8}, blocks_per_sm 1 or 2", env);
    if (!dev.sm90) return best;
    // Where the forced plan does not fit (two blocks per SM at 9..16 tokens, x too large), the
    // automatic choice below (sweeps force one plan over many shapes; describe() tells what ran).
    const DecodePlan p = make_bulk_plan(nt, kt, m_chunk, zeros, g32, wn, b, sms, xs);
    if (p.bulk_stages > 0) return p;
  }
  if (!dev.sm90) return best;  // cp.async.bulk and mbarrier transactions: sm_90 code only
  double best_cost = 1e30;
  for (int b : {1, 2})
    for (int wn : {8, 4, 2, 1}) {
      const DecodePlan p = make_bulk_plan(nt, kt, m_chunk, zeros, g32, wn, b, sms, xs);
      if (p.bulk_stages == 0) continue;
      const double cost = bulk_cost(p, kt, m_chunk, sms);
      if (cost < best_cost - 1e-9) { best_cost = cost; best = p; }
    }
  // One round of items over more than half the SMs, one block a SM, too large to fit twice: where a ring cut to fit twice
  // per SM keeps all of the block's stages but one (and at least 3), the cut ring. The next call's blocks then become
  // resident beside this one's (programmatic dependent launch) and start their weight copies during its tail. Stop 74
  // call 3 (an H100 80GB HBM3, the same stripes forced at two blocks per SM against the default, M = 1..8, fp16,
  // uint4b8 / uint4, 2 rounds, docs/benchmarks/session_2026-12-07_stop74/): llama8b.o (4 stages a block) 3 stages at
  // M = 4..8 1.045-1.161x (uint4b8 at 4 tokens already fits twice: 4.91 us against uint4's 5.94); where the share is
  // longer the cut ring lost (8192x8192 16 stages: 0.87-0.95x, llama8b.down 14: 0.83-0.91x, llama8b.qkv 8: 0.89-1.01x),
  // and on 56 blocks (qwen0.5b.down, free SMs for the next call anyway) 2 stages lost 0.75-0.79x.
  if (best.bulk_stages > 0 && best.bulk_blocks_per_sm == 1 && bulk_rounds(best) == 1 && 2 * best.grid_rows > sms &&
      best.smem_bytes > bulk_budget(2)) {
    const DecodePlan twice = make_bulk_plan(nt, kt, m_chunk, zeros, g32, best.warps_n, 2, sms, xs);
    if (twice.bulk_stages >= std::max<std::int64_t>(3, bulk_share(best, kt) - 1)) return twice;
  }
  return best;
}

bool decode_tile_pairs(const DecodePlan& p, int kt_count, int m_chunk, bool zeros, int group_size, bool bf16) {
  if (!groups_of_pairs(kt_count, group_size) || p.small_tiles > 0 || (p.xstream && p.warps_k > 1)) return false;  // (x windows: no pair variant)
  if (p.bulk_stages > 0) return true;  // the bulk kernel: both scalar types (uint4b8 with two chains per partial)
  const bool variant = zeros ? !bf16 : m_chunk <= 8;  // the streaming kernel's pair instantiations (decode.cu)
  return variant && p.tiles_per_warp % 2 == 0;
}

std::string DecodePlan::describe() const {
  if (bulk_stages > 0)
    return "bulk warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) + " row_blocks=" + std::to_string(row_blocks) +
           " grid=" + std::to_string(grid_rows) + " blocks_per_sm=" + std::to_string(bulk_blocks_per_sm) + " stages=" +
           std::to_string(bulk_stages) + " smem=" + std::to_string(smem_bytes) + (bulk_xstream ? " xstream" : "");
  if (small_tiles > 0)
    return "small T=" + std::to_string(small_tiles) + " warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) +
           " tiles_per_warp=" + std::to_string(tiles_per_warp) + " row_blocks=" + std::to_string(row_blocks) +
           " smem=" + std::to_string(smem_bytes);
  return "warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) + " splits=" + std::to_string(splits) +
         " tiles_per_warp=" + std::to_string(tiles_per_warp) + " row_blocks=" + std::to_string(row_blocks) +
         (grid_rows != row_blocks ? " grid_rows=" + std::to_string(grid_rows) : std::string()) + " depth=" + std::to_string(depth) +
         " smem=" + std::to_string(smem_bytes) + (xstream ? " xstream" : "");
}

DecodePlan decode_small_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, int sms, int min_tiles, const DecodeDevice& dev) {
  if (sms < 1) fail(ErrorCode::invalid_argument, "sms", ">= 1", std::to_string(sms));
  if (m_chunk < 1 || m_chunk > 16) fail(ErrorCode::invalid_argument, "m_chunk", "1..16", std::to_string(m_chunk));
  const std::int64_t nt = (n + kTcPadN - 1) / kTcPadN * (kTcPadN / kTcTileN);
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  for (int t : kSmallTiles) {
    if (t < min_tiles) continue;
    int wk = 1;
    while (static_cast<std::int64_t>(wk) * t < kt) wk *= 2;  // warps along K: 1, 2, 4, 8
    if (wk > kWarps) continue;
    DecodePlan p;
    p.small_tiles = t;
    p.warps_k = wk;
    p.warps_n = kWarps / wk;
    p.tiles_per_warp = static_cast<int>((kt + wk - 1) / wk);
    p.splits = 1;
    p.depth = 0;
    p.row_blocks = p.grid_rows = static_cast<int>((nt + p.warps_n - 1) / p.warps_n);
    p.smem_bytes = small_smem(p.tiles_per_warp * wk, m_chunk);
    if (p.smem_bytes > smem_limit(dev)) continue;
    const int by_smem = static_cast<int>((dev.smem_per_sm - 1024) / (p.smem_bytes + 1024));  // 1 KB per block reserved by the runtime
    const int resident = std::min({small_min_blocks(t), by_smem, dev.threads_per_sm / kThreads});
    if (p.row_blocks <= static_cast<std::int64_t>(sms) * resident) return p;
  }
  DecodePlan none;
  none.row_blocks = none.grid_rows = 0;
  return none;
}

DecodeDevice decode_device_for(int capability) {
  DecodeDevice d;
  d.sm90 = code_arch(capability) == 90;
  if (capability == 86 || capability == 89 || capability == 120) {  // A10, L4, L40S, RTX 30xx / 40xx / 50xx
    d.smem_per_block = 99 * 1024;
    d.smem_per_sm = 100 * 1024;
    d.threads_per_sm = 1536;
  } else if (capability < 90) {  // 8.0 (A100), 8.7
    d.smem_per_block = 163 * 1024;
    d.smem_per_sm = 164 * 1024;
  }
  return d;
}

double device_dram_tb_per_s() {
  static const double tb = [] {
    int device = 0, clock_khz = 0, bus_bits = 0;
    if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
      return 2.0 * clock_khz * 1e3 * (bus_bits / 8) / 1e12;  // DDR: two transfers a clock
    (void)cudaGetLastError();  // unknown: planned as the H200; the failed query leaves no error behind
    return 0.0;
  }();
  return tb;
}

const DecodeDevice& decode_device() {
  static const DecodeDevice d = [] {
    DecodeDevice dev = decode_device_for(device_capability());
    dev.dram_tb_per_s = device_dram_tb_per_s();
    return dev;
  }();
  return d;
}

DecodePlan decode_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok) {
  return decode_plan_for_sms(n, k, m_chunk, zeros, group_size, xstream_ok, cached_sm_count(), decode_device());
}

DecodePlan decode_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok, int sms,
                               const DecodeDevice& dev) {
  if (sms < 1) fail(ErrorCode::invalid_argument, "sms", ">= 1", std::to_string(sms));
  if (m_chunk < 1 || m_chunk > 16) fail(ErrorCode::invalid_argument, "m_chunk", "1..16", std::to_string(m_chunk));
  const bool g32 = group_size == 32;
  const std::int64_t nt = (n + kTcPadN - 1) / kTcPadN * (kTcPadN / kTcTileN);
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  const int xo = xstream_override();
  // Parsed first: an invalid value throws whatever the plan. A forced bulk plan turns the kernel on.
  const char* bulk_forced = std::getenv("W4A16_DECODE_BULK_PLAN");
  int bo = bulk_override();
  if (bo == -1 && bulk_forced && *bulk_forced) bo = 1;
  const bool rows16 = xstream_ok;  // before W4A16_DECODE_XSTREAM: the small kernel copies such rows whole
  if (xo == 0) xstream_ok = false;
  const bool persist = persist_enabled();
  if (const char* env = std::getenv("W4A16_DECODE_PLAN"); env && *env) {
    int wn = 0, s = 0, xsm = 0, depth = 0;
    const int got = std::sscanf(env, "%d,%d,%d,%d", &wn, &s, &xsm, &depth);
    if (got < 2 || (wn != 1 && wn != 2 && wn != 4 && wn != 8) || s < 1 || s > kMaxSplits || xsm < 0 || xsm > 1 ||
        (depth != 0 && depth != streaming_ring_depth(m_chunk)))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN",
           "\"warps_n,splits[,xstream[,depth]]\" with warps_n in {1,2,4,8}, splits 1..8, xstream 0/1 (honoured where x allows "
           "and its windows fit), depth 0 or the fixed ring depth (2 at 1..8 tokens, 3 at 9..16)",
           env);
    DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32, xsm == 1 && xstream_ok);
    // Streamed x takes a window per K group (warps_k of them a ring slot): where they do not fit, x is staged.
    if (p.xstream && p.smem_bytes > smem_limit(dev)) p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32, false);
    if (p.smem_bytes > smem_limit(dev))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN", "a plan within " + std::to_string(smem_limit(dev) / 1024) + " KB of shared memory", env);
    if (p.splits > max_splits(dev))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN", "splits 1 on a device without sm_90 code (no thread-block clusters)", env);
    if (persist) make_persistent(p, sms, m_chunk, dev);
    return p;
  }
  // The bulk kernel (decode_bulk.cu) where its plan fits: first when forced on; by default where
  // bulk_by_default says, unless the small-layer kernel is forced on.
  const int so = small_override();
  // (bulk_by_default: from 9 tokens only where x streams by default)
  if (bo == 1 || (bo == -1 && so != 1 && (m_chunk <= 8 || bulk_xstream_by_default(m_chunk, n, k, dev)))) {
    const DecodePlan bp = decode_bulk_plan_for_sms(n, k, m_chunk, zeros, group_size, sms, dev, rows16);
    if (bp.bulk_stages > 0 && (bo == 1 || bulk_by_default(m_chunk, n, k, bp, sms, dev))) return bp;
  }
  // The small-layer kernel where its plan fits one wave (decode.hpp: the rule and its knobs).
  if (so != 0 && rows16) {
    const DecodePlan sp = decode_small_plan_for_sms(n, k, m_chunk, sms, small_min_tiles(m_chunk), dev);
    const std::int64_t x_bytes = static_cast<std::int64_t>(sp.row_blocks) * m_chunk * k * 2;  // x rows the blocks copy
    if (sp.row_blocks > 0 && (so == 1 || x_bytes <= kDecodeSmallMaxXBytes)) return sp;
  }
  // A plan measured faster than the model's on this layer (kMeasuredPlans), built like a forced one.
  // (Not while W4A16_DECODE_XSTREAM=1 forces streaming for exploration.)
  if (const MeasuredPlan* e = xo == 1 ? nullptr : measured_plan(n, k, m_chunk, zeros, group_size, xstream_ok, sms, dev)) {
    DecodePlan p = make_plan(nt, kt, e->warps_n, e->splits, m_chunk, zeros, g32, e->xstream);
    if (p.smem_bytes <= smem_limit(dev) && p.splits == e->splits && p.xstream == e->xstream) {
      if (persist) make_persistent(p, sms, m_chunk, dev);
      return p;
    }
  }
  DecodePlan best;
  double best_cost = 1e30;
  for (int wn : {8, 4, 2, 1}) {
    // Splits 1, 2, 4, 8: the set the cost model was fitted on (3, 5..7 never measured); 1 without clusters.
    for (int s = 1; s <= max_splits(dev); s *= 2) for (int xsm = 0; xsm <= (xstream_ok && wn == kWarps ? 1 : 0); ++xsm) {
      if (xo == 1 && xstream_ok && xsm == 0) continue;  // forced streaming: only streamed plans
      DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32, xsm == 1);
      if (p.smem_bytes > smem_limit(dev) || p.splits != s) continue;
      const double cost = plan_cost(p, sms, m_chunk, dev);
      if (cost < best_cost - 1e-9) { best_cost = cost; best = p; }
    }
  }
  // Each block stages its K range of x in shared memory next to the weight rings: 8 cluster ranks (1 without
  // clusters) x 200 KB (an A100: 163 KB) bound K (decode.hpp lists the bounds per variant).
  if (best.row_blocks == 0)
    fail(ErrorCode::unsupported, "weights",
         std::string("K whose x chunk (K/") + (dev.sm90 ? "8" : "1") + " per block, 128 B per 64 k per token) fits " +
             std::to_string(smem_limit(dev) / 1024) + " KB of shared memory beside the weight ring",
         "K=" + std::to_string(k) + " M-chunk=" + std::to_string(m_chunk) + (zeros ? " uint4" : " uint4b8") + " g=" +
             std::to_string(group_size));
  if (persist) make_persistent(best, sms, m_chunk, dev);
  // Persistent at 1..2 tokens (more row blocks than resident ones: only llama70b.gate_up-sized layers
  // among the PERF.md shapes): 2-stripe row blocks instead of the cost model's 8. Measured on the H200
  // (2026-12-02 late, docs/benchmarks/decode.md version 7, one device call, fp16 uint4b8):
  // llama70b.gate_up M = 1 76.7 -> 69.8 us, M = 2 70.4 -> 67.5 (8,1 against 2,1; 4,1 75.7 / 72.0):
  // 1792 items over 264 resident blocks balance to 6.8 of 7 per block, 448 items to 1.7 of 2. The
  // cost model (no term for that balance) cannot be refitted to it without losing elsewhere.
  if (persist && m_chunk <= 2 && best.grid_rows < best.row_blocks && best.warps_n == kWarps && !best.xstream) {
    DecodePlan p = make_plan(nt, kt, 2, best.splits, m_chunk, zeros, g32);
    if (p.smem_bytes <= smem_limit(dev) && p.splits == best.splits) {
      make_persistent(p, sms, m_chunk, dev);
      best = p;
    }
  }
  return best;
}

int decode_chunk(std::int64_t k, std::int64_t m, bool zeros, int group_size, bool xstream_ok, const DecodeDevice& dev) {
  // Some plan of `c` tokens fits: staged x (decode_fits), or where x may stream, the streamed ring (its shared memory
  // does not grow with K: on 200 KB every variant fits at 16 tokens; on a device of less, not every one).
  auto fits = [&](int c) {
    if (decode_fits(k, c, zeros, group_size, dev)) return true;
    if (!xstream_ok) return false;
    return make_plan(1, (k + kTcPadK - 1) / kTcPadK, kWarps, 1, c, zeros, group_size == 32, true).smem_bytes <= smem_limit(dev);
  };
  int chunk = 16;
  while (chunk > 1 && !fits(static_cast<int>(std::min<std::int64_t>(chunk, std::max<std::int64_t>(m, 1))))) chunk /= 2;
  return chunk;
}

bool decode_fits(std::int64_t k, int m_chunk, bool zeros, int group_size, const DecodeDevice& dev) {
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  for (int wn : {8, 4, 2, 1})
    for (int s = 1; s <= max_splits(dev); ++s) {
      const DecodePlan p = make_plan(1, kt, wn, s, m_chunk, zeros, group_size == 32);
      if (p.smem_bytes <= smem_limit(dev) && p.splits == s) return true;  // decode_plan's own acceptance test
    }
  return false;
}

std::size_t decode_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m) {
  return 0;
}

}  // namespace w4a16::kernels::cuda
