// The prefill plan: which kernel configuration (tile), split-K and reduce mode run N x K at M tokens,
// the workspace that needs, and the configuration table's names. Host code only: the launch, the
// validation and the two small kernels around the prefill kernel are in prefill.cu, the kernel in
// prefill_kernel.cuh. Checked on the host by tests/gpu/prefill/test_prefill_host.cpp (CI) and on the
// device by tests/gpu/prefill.
//
// Tile heuristic (prefill_plan): a rule read off the forced-config sweep of 2026-12-02 on the
// H200 (docs/benchmarks/prefill.md, run 2: `prefill_bench out.csv tune`, every config x split
// 1/2/4 on llama8b.qkv, llama8b.gate_up and 8192x8192 at M = 32..256, split 1 at M = 1024/4096),
// where it picks the fastest measured or within 5% of it:
//   tile   M <= 64: wgmma_bm64_bn128_s6_ov_occ2 (2 CTAs per SM); M <= 128: wgmma_bm128_bn256_s6_ov
//          (256 weight rows per CTA: 25-45% faster than bm128_bn128 there); else
//          wgmma_bm256_bn128_s5_ov (fastest at every M >= 256 measured).
//          (mma path, sm_80: mma_bm64 for M <= 64, else mma_bm128.)
//   split  the smallest s in 1..8 with ctas = ceil(N_pad/bn) * ceil(M/bm) * s >= fill, where
//          fill = 1.5 * SMs for the bm64 tile, 0.8 * SMs for bm128 (llama8b.gate_up: 112 CTAs
//          unsplit beat split 2 by 27%) and 0.9 * SMs otherwise, within
//          s * round_up(M, bm) <= kPrefillMaxSplitRows and s <= K_pad / 64.
// The serial-schedule configs (no _ov) are the measured baseline of the overlapped ones and stay
// override-only, like the other tiles.
// That rule stays the plan of x_load = cp_async (the A/B baseline). The default plan (x by TMA)
// is a measured cost model instead (prefill_plan_estimate_us): the tile and split of least
// estimated time over the four TMA tiles and splits 1..8. Measured on the H200 (2026-12-02 night,
// docs/benchmarks/prefill.md, `prefill_bench out.csv tune_tma`: the TMA tiles x splits 1/2/3/4/6/8
// on the nine PERF.md shapes below llama70b at M = 32, 64, 128, 256, 1024, fp16 uint4b8 g128):
// the time of a plan is close to a constant per k tile per wave of CTAs, whatever M, so
//   est = 1.6 + waves x k_tiles_per_split x t_tile + (split > 1 ? 3.9 + 0.28 x split*M*N*4 / 1e6 : 0) us
//   waves = ceil(CTAs / (SMs x CTAs per SM)), t_tile = 0.73 (bm256_bn128 s5), 0.82 (bm128_bn256 s6),
//   0.65 (bm64_bn128 s6 occ2: 2 CTAs per SM), 1.2 (bm128_bn128 s8) us.
// Over those 45 points the old rule's plans were up to 2.08x slower than the fastest measured
// plan within the workspace bound (sum of log ratios 8.1; bench/gpu/fit_prefill_plan.py), the
// model's within 1.26x (sum 1.0):
// small N (the Qwen shapes, llama8b.o/down) takes the bm64 tile with splits at M = 128..1024 where
// the old rule's bm128/bm256 tiles left most SMs idle (qwen0.5b.qkv M = 128: 16.0 -> 7.9 us).
// 2026-12-03: the reduce mode is a plan dimension: every split > 1 is estimated with reduce_kernel
// (partials in the workspace, split rows bounded) and, where the device can run it, reduced in a
// cluster (no partials, no bound; its waves count whole clusters over cudaOccupancyMaxActiveClusters:
// a cluster's CTAs share a GPC, and the H200's GPCs of unequal size leave SMs idle for clusters of
// 3..8 - the 1.2-1.5x slower one-wave grids of 128-256 CTAs in clusters of 4 / 8 measured late on
// 2026-12-02). The split term's constants per mode: kSplit*Us below.
// 2026-12-03 stop 23: where a timed plan beat the model's pick by more than 3% on a PERF.md shape, the
// plan takes the timed one (kMeasuredPrefillPlans below; the model stays for every other shape and M).
// Split-K reduce (prefill.hpp, PrefillSplitReduce): the TMA configs on sm_90 sum the splits of a
// tile inside the kernel, launched as a cluster (1, 1, split); the rest through reduce_kernel.

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "prefill/prefill.hpp"
#include "prefill/prefill_launch.cuh"
#include "prefill/prefill_host.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

using namespace prefill_detail;

namespace {

// Output tiles of `cfg` over N rows (padded to 64) and M tokens: the CTAs of one K split (grid x * y).
std::int64_t output_tiles(std::int64_t n, std::int64_t m, const PrefillConfig& cfg) {
  return ceil_div(round_up(n, 64), cfg.bn()) * ceil_div(std::max<std::int64_t>(m, 1), cfg.bm);
}

PrefillPath path_for(int capability) { return sm90a_code(capability) ? PrefillPath::wgmma : PrefillPath::mma; }

#define W4A16_MODEL(WGMMA, BM, WG, MB, ST, OV, MINB, XL, SC) \
  PrefillConfig{(WGMMA) ? PrefillPath::wgmma : PrefillPath::mma, BM, WG, MB, ST, OV, MINB, PrefillXLoad::XL, SC},
const PrefillConfig kConfigs[] = {W4A16_PREFILL_CONFIGS(W4A16_MODEL)};
#undef W4A16_MODEL
static_assert(sizeof(kConfigs) / sizeof(kConfigs[0]) == prefill_detail::kNumConfigs, "config table out of sync");

// The kernel's XLoad and the plan's PrefillXLoad name the same four paths.
static_assert(static_cast<int>(PrefillXLoad::cp_async) == static_cast<int>(prefill_detail::XLoad::cp_async) &&
                  static_cast<int>(PrefillXLoad::tma) == static_cast<int>(prefill_detail::XLoad::tma) &&
                  static_cast<int>(PrefillXLoad::tma_eb) == static_cast<int>(prefill_detail::XLoad::tma_eb) &&
                  static_cast<int>(PrefillXLoad::cp_async_nofence) == static_cast<int>(prefill_detail::XLoad::cp_async_nofence),
              "XLoad and PrefillXLoad out of sync");

// Config indices the plan uses (order of W4A16_PREFILL_CONFIGS in prefill_launch.cuh): the
// cp.async tiles measured on 2026-12-02 and their TMA twins.
constexpr int kCfgBm256 = 0, kCfgBm128 = 6, kCfgMma128 = 4, kCfgMma64 = 5, kCfgBm64 = 8;
constexpr int kCfgBm256Tma = 12, kCfgBm128Tma = 13, kCfgBm64Tma = 14, kCfgBm128n128Tma = 15, kCfgBm128Occ2Tma = 31,
              kCfgBm192Tma = 30, kCfgBm128w3Tma = 33;
// The decode-sized tiles (2026-12-06 stop 50): 16 / 32 tokens (wgmma m64n16k16 / m64n32k16), 3-4 CTAs per SM, in the
// early-issue order only (no measured-order twin: W4A16_PREFILL_SCHED=0 keeps them), table-only.
constexpr int kCfgBm16Tma = 35, kCfgBm16n64Tma = 36, kCfgBm32Tma = 37, kCfgBm32Occ3Tma = 38;
// One-warpgroup 64-token tiles (stop 61; checked on an H100 in stop 62): 3 / 4 CTAs per SM (12 / 16 warps) where the
// 2-warpgroup bm64 tile runs 8, for the dequantize -> wgmma chain that bounds M = 33..64; table-only (39 on
// llama70b.gate_up M = 33..64 at split 2, 3% over bm64; at M = 33..64 elsewhere both ran behind the bm64 plan, stop 62
// call J; 40 on qwen0.5b.qkv M = 225..256 at split 3, stop 64).
constexpr int kCfgBm64w1Tma = 39, kCfgBm64w1n64Tma = 40;
// The planned TMA tiles: each has an estimate (tile_us_per_k_tile) and an early-issue twin with a
// ONE_GROUP kernel (the 8-stage bm128_bn128 has no twin). The cost model chooses among kModelTiles;
// the 2-CTA bm128_bn128, the 192 x 192 tile (3 warpgroups: 129..192 tokens in one m block) and the
// 192-row x 128-token tile (3 warpgroups; stop 31) enter plans only through the measured table.
constexpr int kPlannedTiles[] = {kCfgBm256Tma,     kCfgBm128Tma, kCfgBm64Tma,    kCfgBm128n128Tma, kCfgBm128Occ2Tma, kCfgBm192Tma,
                                 kCfgBm128w3Tma,   kCfgBm16Tma,  kCfgBm16n64Tma, kCfgBm32Tma,      kCfgBm32Occ3Tma,
                                 kCfgBm64w1Tma,    kCfgBm64w1n64Tma};
constexpr int kModelTiles[] = {kCfgBm256Tma, kCfgBm128Tma, kCfgBm64Tma, kCfgBm128n128Tma};
// The 2-CTA bm128_bn128 joins them where the tokens fit one 128-token m block: there it took 0.89-0.96x the time of the
// model's pick on four PERF.md layers (table entries at 65..128, stops 24-25) and 0.85-0.97x on nine other layers
// (Qwen2.5-7B / 14B, Llama-3-70B at M = 100, stop 27 call 7); over every M (with the 192 tile too) the model lost,
// 1.084x geomean over 128 points (both tiles picked at M >= 200 where they measure slower than estimated).
constexpr std::int64_t kModelOcc2MaxM = 128;
constexpr int kModelSmallMTiles[] = {kCfgBm128Occ2Tma};

// The split term of prefill_plan_estimate_us per reduce mode: fixed us + us per MB of fp32
// partials (split * M * N * 4 bytes) + us per split beyond 2. Fitted (bench/gpu/fit_prefill_plan.py
// --cluster ... --search, tile constants kept) to `prefill_bench out.csv tune_tma` run once per mode
// on the H200, cluster waves over the resident clusters the device reported. Refitted 2026-12-03 stop 23
// (call 1: every tile x split 1..8 at M = 8..1024 on nine PERF.md shapes, 63 points): the picked plan's
// time over the fastest measured is sum-log 1.54 in sample (the constants before, fitted on the
// kernels of 2026-12-03 01:53 UTC: 2.55), 1.84 with each shape left out of the fit in turn (2.55),
// and 0.98 on token counts the fit never saw (call 5: M = 100, 200, 512, 2048, 36 points; before:
// 1.47), where every plan it changed measured 0.84-0.99x the time. Both modes' fixed costs grew with
// the kernels' speed-ups since (the cluster's from 0.26 to 2.3 us): fewer splits are picked.
constexpr double kSplitKernelFixedUs = 3.815, kSplitKernelUsPerMb = 0.372, kSplitKernelUsPerRank = 0.245;
constexpr double kSplitClusterFixedUs = 2.347, kSplitClusterUsPerMb = 0.214, kSplitClusterUsPerRank = 0.485;

// Measured plans: where `prefill_bench out.csv tune_tma` (every TMA tile x split 1..8, run once per
// reduce mode) timed a plan more than 3% faster than the cost model's pick on a PERF.md shape, the
// default plan takes that plan (H200, 2026-12-03 stop 23 calls 1 and 5: M = 8, 16, 32, 64, 100, 128,
// 200, 256, 512, 1024, 2048; fp16 uint4b8 g = 128, cuBLAS in the same process; docs/benchmarks/prefill.md).
// The entries are printed by bench/gpu/fit_prefill_plan.py --table 0.03 --drop llama8b.gate_up:16,
// llama8b.down:8 --force llama8b.o:8 on both calls' data: the two dropped points' tune gain did not
// reproduce in an A/B (1.17x / 1.04x the model's time), the forced one's A/B gain was larger than its
// tune margin (7.6 against 8.3 us). Checked in one device call against the code before (call 6,
// prefill_dq_ab, 3 interleaved rounds, nine shapes x 14 token counts, this table with the split terms
// below against call 1's table with the constants before): every changed plan 0.79-0.99x the time
// (qwen0.5b.gate_up M = 512 0.79, qwen0.5b.qkv M = 4096 / 200 0.84 / 0.89, qwen0.5b.o M = 512 / 2048
// 0.91 / 0.90), 0.993 geomean over the 126 points; call 2 measured call 1's table against the model:
// llama8b.o M = 8..32 0.70-0.85x, M = 100 / 128 0.83 / 0.79x, qwen0.5b.o M = 128..1024 0.78-0.92x.
// Stop 24 (2026-12-03, docs/benchmarks/prefill.md first section) added the 2-CTA bm128_bn128 tile
// (kCfgBm128Occ2Tma, table-only): tune_tma of it against the other tiles (call 2, `--table 0.03` on that run
// prints the entries marked "stop 24"), an A/B of the two binaries (call 3, prefill_dq_ab, 3 interleaved
// rounds: 0.88-0.95x the time at the entries' measured M), and a token sweep (call 4) that found the tile
// slower just past a multiple of 64 tokens at a split (8192x8192 M = 65..80 1.02-1.22x, llama8b.qkv M = 66
// 1.03x, llama8b.o M = 129..160 1.05-1.10x): those three entries start where it wins (88, 67, 176).
// Calls 6-7 added llama8b.gate_up / llama70b.gate_up at M = 96..128 (split 1, which loses at 65..80 too: a
// partly filled m block of this tile is slow whatever the split); llama8b.down's tune win (0.91x) lost the
// A/B against its entries below (1.02-1.08x) and was left out. Calls 8-9 traced that slowdown to the TMA
// box's out-of-bounds rows (two CTAs per SM) and removed it (prefill_kernel.cuh tmap_tail). With it, an A/B
// (2026-12-04 call 1, 3 interleaved rounds) moved llama8b.gate_up / llama70b.gate_up / 8192x8192 / llama8b.qkv
// down to M = 65 (0.89-0.95x the time at M = 65..88); llama8b.o at M = 129 / 160 measured 1.00 / 0.975x, within
// the runs' spread: it still starts at 176.
// An entry measured at M covers the tokens after the previous measured M whose m blocks are those of
// M: the same CTAs over the same k tiles, only the epilogue's valid rows differ. Any dtype, scalar
// type and group (the plan never sees them), 132 SMs of compute capability 9.0 only;
// W4A16_PREFILL_TABLE=0 (or a forced W4A16_PREFILL_SPLIT_REDUCE) leaves the model alone, a cluster
// entry the device cannot schedule falls back to it.
struct MeasuredPrefillPlan {
  std::int64_t n, k, m_lo, m_hi;
  int config, split;
  PrefillSplitReduce reduce;  // automatic where split = 1
  // A cluster entry whose tiles outnumber the resident clusters cudaOccupancyMaxActiveClusters gave on the device that
  // timed it fast: that count. The entry holds where a device gives at least as many, else where its waves hold
  // (measured_cluster_fit); 0 = the waves rule alone.
  int timed_clusters = 0;
};
constexpr MeasuredPrefillPlan kMeasuredPrefillPlans[] = {
    {896, 896, 101, 128, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},  // qwen0.5b.o M = 128: bm64 s5 cluster 3.9 -> 3.6 us
    // qwen0.5b.o M = 200: bm64 s5 cluster 5.3 -> 4.2; M = 256: bm64 s3 cluster 4.7 -> 4.2 us
    {896, 896, 193, 256, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    {896, 896, 449, 512, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},  // qwen0.5b.o M = 512: bm64 s3 cluster 5.9 -> 5.3 us
    {896, 896, 961, 1024, kCfgBm64Tma, 1, PrefillSplitReduce::automatic},  // qwen0.5b.o M = 1024: bm64 s2 cluster 6.8 -> 5.9 us
    // qwen0.5b.down M = 200: bm64 s8 cluster 9.3 -> 8.3; M = 256: bm64 s7 cluster 10.1 -> 8.5 us
    {896, 4864, 193, 256, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    // qwen0.5b.down M = 512: bm64 s4 cluster 13.0 -> bm128 occ2 s4 cluster 11.9 us (stop 24)
    {896, 4864, 385, 512, kCfgBm128Occ2Tma, 4, PrefillSplitReduce::cluster},
    // qwen0.5b.qkv M = 100: bm64 s5 cluster 4.2 -> 3.9; M = 128: bm64 s5 cluster 4.4 -> 4.1 us
    {1152, 896, 65, 128, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    {1152, 896, 449, 512, kCfgBm64Tma, 1, PrefillSplitReduce::automatic},  // qwen0.5b.qkv M = 512: bm64 s3 cluster 6.0 -> 5.8 us
    {1152, 896, 897, 1024, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},  // qwen0.5b.qkv M = 1024: bm64 s1 8.9 -> 7.8 us (stop 24)
    // llama8b.qkv M = 68..128: bm128 s4 cluster 0.89-0.95x (stop 24); M = 65: 17.2 -> 15.5 us (2026-12-04, the tail box)
    {6144, 4096, 65, 128, kCfgBm128Occ2Tma, 4, PrefillSplitReduce::cluster},
    {6144, 4096, 129, 163, kCfgBm192Tma, 3, PrefillSplitReduce::cluster},  // llama8b.qkv M = 136 / 160: bm256 s2 23.2 / 23.5 -> 22.5 / 23.1 us
    // 2026-12-04 stop 31 call 1 (tune_tma with the 192-row x 128-token tile): llama8b.qkv M = 256: bm256 s2 24.7 -> 23.2 us
    // (2 m blocks x 32 row tiles x split 2 = 128 CTAs); M = 512: bm256 s1 41.5 -> 40.3. Call 2 (prefill_dq_ab against the
    // build before, 3 interleaved rounds, another device): 0.926-0.929x the time at M = 193..256, 0.927-0.938x at 400..512.
    // Stop 71: from M = 164. Tunes (shuffled interleaved, two processes): llama8b.qkv M = 192 bm192 s3 cluster 23.0 ->
    // bm128_bn192 s2 22.5 us (stop 69 call N, an H200; cuBLAS fp16 20.6), 23.4 -> 22.8 (stop 71, an H100 with the H200's
    // 132 SMs and clock: this kernel's time is the same on both, compute-bound), M = 160 a tie. A/B against the build
    // before (prefill_dq_ab, an H100, 5 / 7 rounds): M = 164 / 168 / 172 / 176 / 184 / 192 0.997 / 0.987 / 0.982 / 0.980 /
    // 0.977 / 0.970 (22.95 -> 22.25 us at 192), M = 161 1.004, 160 / 163 the same plan.
    {6144, 4096, 164, 256, kCfgBm128w3Tma, 2, PrefillSplitReduce::cluster},
    {6144, 4096, 385, 512, kCfgBm128w3Tma, 1, PrefillSplitReduce::automatic},
    // llama8b.o M = 8: bm64 s8 kernel 8.3 -> 8.2; M = 16: bm64 s8 kernel 8.2 -> 7.7; M = 32: bm64 s8 kernel 8.4 -> 8.1 us
    // (M = 1..16: the decode-sized tile below since stop 50)
    {4096, 4096, 17, 32, kCfgBm64Tma, 4, PrefillSplitReduce::kernel},
    // 2026-12-06 stop 50 (docs/benchmarks/prefill.md first section; an H100 with the H200's 132 SMs, the H200 not lent):
    // tune_tma of the decode-sized tiles at M = 8 / 16 / 32 against this table's plan (bm64 2-CTA tile). Their time is
    // flat in M up to their 16 / 32 tokens (8192x8192 17.23 / 17.31 us at M = 8 / 16), so an entry measured at 16 covers
    // 1..16. M = 16: 8192x8192 19.1 -> 17.3 (bm16_bn64 s4), llama70b.gate_up 121.7 -> 87.8, llama8b.down 17.2 -> 15.7,
    // llama8b.gate_up 31.4 -> 24.8, llama8b.o 7.8 -> 6.5, llama8b.qkv 10.9 -> 8.1 us. M = 32: llama70b.gate_up 134.8 ->
    // 103.7 (bm32 3 CTAs per SM s2), llama8b.gate_up 32.0 -> 28.4, llama8b.qkv 10.6 -> 9.3 us (8192x8192 / llama8b.o 1.5%,
    // llama8b.down slower: no entries). One round each; the splits reduce in the cluster (as timed).
    // Stop 51 (call 2, an H200): the same tiles at M = 16 against the bm64 plan 8192x8192 17.84 / 19.51 us, llama8b.down
    // 16.23 / 17.20, llama8b.o 6.51 / 7.68, llama8b.qkv 7.96 / 10.81 (llama8b.gate_up / llama70b.gate_up took theirs), with
    // 128 / 64 / 64 / 48 clusters of tiles where cudaOccupancyMaxActiveClusters gave 124 / 62 / 62 / 45 (the waves rule
    // would refuse them: timed_clusters).
    {8192, 8192, 1, 16, kCfgBm16n64Tma, 4, PrefillSplitReduce::cluster, 124},
    {57344, 8192, 1, 16, kCfgBm16Tma, 2, PrefillSplitReduce::cluster},
    {4096, 14336, 1, 16, kCfgBm16n64Tma, 8, PrefillSplitReduce::cluster, 62},
    {28672, 4096, 1, 16, kCfgBm16Tma, 2, PrefillSplitReduce::cluster},
    {4096, 4096, 1, 16, kCfgBm16n64Tma, 8, PrefillSplitReduce::cluster, 62},
    {6144, 4096, 1, 16, kCfgBm16Tma, 8, PrefillSplitReduce::cluster, 45},
    {57344, 8192, 17, 32, kCfgBm32Occ3Tma, 2, PrefillSplitReduce::cluster},
    {28672, 4096, 17, 32, kCfgBm32Tma, 1, PrefillSplitReduce::automatic},
    {6144, 4096, 17, 32, kCfgBm32Tma, 4, PrefillSplitReduce::cluster},
    // llama8b.o M = 100: bm128 s6 cluster 14.9 -> 12.3; M = 128: bm128 s6 cluster 15.6 -> 12.3 us
    {4096, 4096, 65, 128, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},
    {4096, 4096, 129, 175, kCfgBm192Tma, 5, PrefillSplitReduce::cluster},  // llama8b.o M = 136 / 160: bm256 s3 17.9 / 18.3 -> 17.2 / 17.3 us
    {4096, 4096, 176, 256, kCfgBm128Occ2Tma, 2, PrefillSplitReduce::cluster},  // llama8b.o M = 176..256: bm256 s3 0.90-0.97x (stop 24)
    {4096, 14336, 65, 100, kCfgBm64Tma, 4, PrefillSplitReduce::kernel},  // llama8b.down M = 100: bm128 s6 cluster 35.0 -> 32.6 us
    // llama8b.down M = 101..128: bm128 s6 cluster 36.0 -> bm64 s2 cluster 34.3 us at 128 (2026-12-04), then bm128 occ2 s8
    // through the reduce kernel. Stop 31: bm128 occ2 s8 29.2 us in call 1's tune (the reduce automatic, which by stop 71's
    // finding ran the reduce kernel), 1.09-1.13x the bm64 entry's time as a cluster entry in call 2. Stop 71 call D (an
    // H100, 5 rounds, against the bm64 s2 cluster entry): M = 101 / 112 / 128 0.804 / 0.837 / 0.883x the time (35.5 ->
    // 28.5 us at 101; cuBLAS fp16 1.39-1.46 -> 1.66-1.73x), M = 100 the same plan (0.995). 8 x 128 partial rows: the
    // workspace of this layer grows to hold them (measured_split_rows).
    {4096, 14336, 101, 128, kCfgBm128Occ2Tma, 8, PrefillSplitReduce::kernel},
    // 2026-12-04 call 2 (the 192 x 192 tile, 129..192 tokens in one m block; cluster reduce): llama8b.down M = 136 / 160 / 192:
    // bm256 s3 48.8 / 49.3 / 51.3 -> 42.3 / 42.1 / 43.1 us
    {4096, 14336, 129, 192, kCfgBm192Tma, 5, PrefillSplitReduce::cluster},
    // llama8b.down M = 193..256: the model's bm256 s3 cluster -> bm256 s4 with the reduce kernel. Tunes: 50.9 -> 47.5 us
    // (stop 31 call 1, an H200); stop 71 (an H100, 9 shuffled interleaved rounds) M = 224 / 256 59.0 / 61.0 -> 51.6 /
    // 54.7, and 58.2 / 61.6 -> 51.1 / 54.8 with the rows naming the mode (reduce=auto:kernel). As a cluster entry it ran
    // 1.56-1.60x the model's plan (stop 31 call 2; stop 71's A/B on the H100, 1.57-1.59x): 32 clusters of 4
    // one-CTA-per-SM blocks are two waves on that device's 30 resident clusters. Its 4 x 256 partial rows pass
    // kPrefillMaxSplitRows (512): the workspace of this layer grows to hold them (measured_split_rows, 16 MiB). A/B against
    // the build before (stop 71 call C, an H100, 7 rounds): M = 193 / 208 / 224 / 240 / 256 0.903 / 0.917 / 0.942 / 0.966
    // / 0.981x the time (50.7 -> 45.8 us at 193), M = 257 0.923 (its token split's 256-token head), 192 unchanged. (M =
    // 257..384 on bm192 s3 through the reduce kernel, stop 71 call D: 1.010-1.023x at 257..320, 0.955-0.959x at 352 /
    // 384 where an unchanged plan moved 0.958x in the same A/B: not entered.)
    {4096, 14336, 193, 256, kCfgBm256Tma, 4, PrefillSplitReduce::kernel},
    {8192, 8192, 33, 64, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},  // 8192x8192 M = 64: bm64 s4 kernel 22.7 -> 21.2 us
    // 8192x8192 M = 88..128: bm128 s4 kernel 0.89-0.98x (stop 24); M = 65..80: 0.94-0.95x (2026-12-04)
    {8192, 8192, 65, 128, kCfgBm128Occ2Tma, 2, PrefillSplitReduce::cluster},
    // qwen0.5b.gate_up M = 32: bm64 s3 cluster 5.8 -> 5.6; M = 64: bm64 s3 cluster 6.4 -> 5.9 us
    {9728, 896, 17, 64, kCfgBm64Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.gate_up (stop 24, bm128 occ2 s1): M = 128: bm64 s1 9.1 -> 8.4; M = 512: bm64 s1 23.1 -> 20.5; M = 1024: bm256 s1 37.2 -> 33.0 us
    {9728, 896, 65, 128, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    // M = 256: bm256 s1 12.7 -> bm128_bn192 s1 12.0 (stop 31 call 1); call 2's A/B 0.943-0.987x at M = 193..256.
    // Stop 61 (the H200, shuffled interleaved tune, one process): M = 224 / 256 bm128_bn192 s1 12.2 / 12.3 -> the 2-CTA
    // bm128_bn128 s1 11.7 / 11.8 us (cuBLAS fp16 10.3 / 10.9); M = 192 stays on bm64 s1 (8.8 against 11.7).
    {9728, 896, 193, 256, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    {9728, 896, 385, 512, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    {9728, 896, 897, 1024, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    // stop 24 calls 6-7 (bm128 occ2 s1; A/B against the model's bm128_bn256 s1, 3 rounds): M = 96..128 0.92-0.93x
    // (llama8b.gate_up 53.0 -> 49.5 us at M = 100), then 1.02-1.28x at M = 65..80; with the tail box
    // (2026-12-04, 3 rounds) M = 65..88 0.89-0.90x (llama8b.gate_up 52.7 -> 46.8 us at M = 65), 0.91-0.94x (llama70b).
    {28672, 4096, 65, 128, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},  // llama8b.gate_up
    // llama70b.gate_up: split 1 0.92-0.96x the model's pick (stop 24). Stop 61 (the H200, shuffled interleaved tunes, two
    // processes, the default plan and splits 1 / 2 of each tile as members): split 2 reduced in the cluster, M = 33 / 40 /
    // 48 / 56 / 64 bm64 144.8 / 145.3 / 153.8 / 146.4 / 145.7-147.9 (the model's bm64 s4 kernel or s1) -> 128.4 / 129.5 /
    // 132.3 / 137.7 / 138.7-140.9 us; M = 80 / 96 / 112 / 128 bm128_bn128 s1 202.3 / 210.9 / 215.1 / 218.1 -> 188.8 / 197.7
    // / 205.4 / 208.2 us (cuBLAS fp16 237-257). Stop 62 (an H100, 5 processes, 7 rounds each, calls J / K): the
    // one-warpgroup 128 x 64 tile (39) at split 2 reduced in the cluster, M = 40 / 48 / 56 / 64, 125.8-130.8 /
    // 129.2-138.4 / 132.2-138.6 / 134.0-140.9 against bm64 s2 cluster 129.3-135.3 / 132.6-142.8 / 136.1-143.9 /
    // 138.2-145.3 us: 0.966-0.976x in every process (its kernel reduce 143.8 / 155.9 at M = 48 / 64). 448 clusters of
    // tiles where cudaOccupancyMaxActiveClusters gave 132 (timed_clusters: the waves rule refused it, so the device ran
    // the model's bm64 s1, 142-155 us, in call K). Stop 63 (an H100, call L, 2 processes): as the default plan 125.1 /
    // 128.7 / 131.5 / 134.3 us at M = 40 / 48 / 56 / 64, 0.969-0.977x bm64 s2 cluster. Not timed on an H200. The
    // bm128_bn128 entry at 65..128 held on the H100 (219.9-221.8 against 230.0 / 285.9 us of its split 1 and of the
    // bm64 tiles).
    {57344, 8192, 33, 64, kCfgBm64w1Tma, 2, PrefillSplitReduce::cluster, 132},
    {57344, 8192, 65, 128, kCfgBm128Occ2Tma, 2, PrefillSplitReduce::cluster},
    // llama70b.gate_up M = 136 / 160 / 192: bm256 s2 318 / 327 / 329 -> bm192 s2 282 / 291 / 294 us (2026-12-04 call 2)
    {57344, 8192, 129, 192, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},
    // Stop 56 call 3 (an H100, shuffled interleaved, 2 processes): llama70b.gate_up M = 224 / 256: bm256 s2 cluster
    // 397-399 / 417-420 -> bm256 s1 371 / 387 us (cuBLAS fp16 377 / 364): its 448 tiles are 3 waves + 52 on 132 SMs,
    // and the persistent loop splits those 52 in two k parts (prefill.cu persistent_launch; with W4A16_PREFILL_PERSIST
    // or _TAIL_SPLIT off this entry runs the plain grid's 4 waves). M = 160 / 192 keep bm192 s2 (313 / 333 -> 339 / 358).
    // Since stop 58 the row split of kMeasuredRowSplits runs these M (1-3% faster); this entry with it off.
    {57344, 8192, 193, 256, kCfgBm256Tma, 1, PrefillSplitReduce::automatic},
    // 2026-12-04 call 4 (tune_tma at M = 320, 384, 576, 768): the 192-token tile where its 2 / 3 / 4 m blocks hold
    // the tokens with less padding than 256-token blocks, from the token count after the last one measured before
    // (256, 512, 576). Call 5 (prefill_dq_ab, 3 interleaved rounds, another device) confirmed every entry below at
    // 0.65-0.95x the time (M = 288..384, 520 / 576, 768); llama8b.down M = 257..384 at bm192 split 3 (tune 69.6 us, one
    // wave of 44 clusters of 3 on that device) measured 1.63x the old plan there and is left out. Tune us (default
    // plan -> entry):
    // llama70b.gate_up M = 320 / 384: bm128 s2 686 / 699 -> 589 / 601; M = 576: 1092 -> 865
    {57344, 8192, 257, 384, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    {57344, 8192, 513, 576, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    {8192, 8192, 513, 576, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},  // 8192x8192 M = 576: bm256 s2 141.0 -> 105.2
    {4096, 14336, 513, 576, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},  // llama8b.down M = 576: bm128 s4 149.6 -> 95.0
    // llama8b.gate_up M = 320 / 384: bm128 s1 160.2 / 165.0 -> 149.3 / 153.0; M = 576: 270.7 -> 217.4
    {28672, 4096, 257, 384, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},
    {28672, 4096, 513, 576, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    {4096, 4096, 513, 576, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},  // llama8b.o M = 576: bm256 s1 41.4 -> 31.9
    // llama8b.qkv M = 320 / 384: bm64 s1 32.8 / bm128 s3 46.6 -> 29.4 / 30.3; M = 768: bm256 s4 81.7 -> 53.2 (one wave)
    {6144, 4096, 257, 384, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},
    {6144, 4096, 577, 768, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    // 2026-12-04 call 6 (tune_tma: the Qwen shapes at M = 160..768, four large shapes at M = 1152 / 1344); call 7 (prefill_dq_ab,
    // 3 interleaved rounds) confirmed every entry below: 0.72-0.92x at M = 1100 / 1152 / 1344, 0.81-0.92x on the Qwen
    // shapes (llama8b.gate_up M = 1100 0.98x). Default -> entry us in the tune:
    // 8192x8192 M = 1152: bm256 s2 258.8 -> bm192 s1 212.8; llama8b.down: bm128 s4 255.4 -> 184.2;
    // llama8b.gate_up M = 1152 / 1344: 509.2 / 569.5 -> 434.3 / 511.0
    {8192, 8192, 1025, 1152, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    {4096, 14336, 1025, 1152, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    {28672, 4096, 1025, 1344, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.gate_up M = 320 / 384 / 576: 14.5 / 14.6 / 24.7 -> bm128 occ2 s1 13.2 / 13.3 / 20.2 (385..512 already)
    {9728, 896, 257, 384, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    {9728, 896, 513, 576, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.o M = 160 / 384 / 576 / 768: bm64 s5 / s3 / s3 / s2 4.5 / 5.8 / 6.0 / 6.7 -> s4 / s2 / s2 / s1 4.1 / 5.2 / 5.4 / 5.9
    {896, 896, 129, 192, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    {896, 896, 321, 384, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},
    {896, 896, 513, 576, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},
    {896, 896, 705, 768, kCfgBm64Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.qkv M = 160 / 320 / 384 / 576 / 768: bm64 s5 / s3 / s3 / s2 / s2 5.2 / 5.9 / 5.9 / 6.7 / 6.8 -> s4 / s2 / s2 / s1 / s1
    // 4.2 / 5.3 / 5.3 / 5.9 / 6.0
    {1152, 896, 129, 192, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    // Stop 56 call 4 (an H100, every tile x split interleaved, 16 rounds): qwen0.5b.qkv M = 224: the model's plan 4.88 ->
    // bm32 occ3 s2 cluster 4.53 us (cuBLAS fp16 4.87); at M = 256 the model's plan is the best (4.89 against 4.85)
    {1152, 896, 193, 224, kCfgBm32Occ3Tma, 2, PrefillSplitReduce::cluster},
    // Stop 64 (an H100, call O's tune of every tile x split 1..4 at M = 256, then call P: 2 processes, 11 rounds, shuffled
    // interleaved): M = 256 the model's bm64 s3 cluster 4.87-4.88 -> the one-warpgroup 64 x 64 tile at split 3 reduced in
    // the cluster 4.56 us (72 clusters of 3; cuBLAS fp16 4.78-4.79: 0.982 -> 1.048-1.050x); at M = 224 it ties the entry
    // above (4.48 against 4.51), at 192 it trails the bm64 s4 entry (4.44-4.48 against 4.29-4.34). Not timed on an H200.
    {1152, 896, 225, 256, kCfgBm64w1n64Tma, 3, PrefillSplitReduce::cluster},
    {1152, 896, 257, 384, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},
    {1152, 896, 513, 768, kCfgBm64Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.down M = 160 / 576: bm64 s8 9.1 / bm256 s5 16.5 -> bm64 s4 / s2 8.4 / 14.1
    {896, 4864, 129, 192, kCfgBm64Tma, 4, PrefillSplitReduce::cluster},
    {896, 4864, 513, 576, kCfgBm64Tma, 2, PrefillSplitReduce::cluster},
    // 2026-12-04 stop 27 call 3 (tune_tma at M = 1024..4096 on the Qwen shapes and llama8b.qkv / o: no entry above 1344
    // before, and the model's bm256 pads its waves on narrow layers: qwen0.5b.qkv M = 4096 is 9 x 16 = 144 tiles on 132 SMs,
    // 24.3 us against 12.5 at M = 3072). Call 4 (prefill_dq_ab against the build before, 3 interleaved rounds, 24 points)
    // kept the entries below at 0.62-0.92x the time (qwen0.5b.qkv M = 3600..4200 0.62-0.78x, 0.91-0.95x cuBLAS fp16 now) and
    // dropped three: qwen0.5b.gate_up M = 3969..4096 on bm128 occ2 (1.03-1.07x) and llama8b.o M = 1409..1536 / 2433..2560
    // (0.96-0.97x at the tuned M, 1.06-1.08x at 1450 / 2450). Default -> entry us in the tune:
    // qwen0.5b.qkv M = 1536: bm64 s1 9.0 -> bm128 occ2 s1 7.9; M = 2048: bm256 s1 12.4 -> bm192 s2 11.3; M = 4096: bm256 s1
    // 24.3 -> bm192 s1 15.0 (22 m blocks x 6 = 132 tiles: one wave; from 3585 tokens on, where bm256 takes 15+ m blocks x 9
    // = 135+ tiles, bm192 19-22 x 6 = 114-132)
    {1152, 896, 1409, 1536, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    {1152, 896, 1921, 2048, kCfgBm192Tma, 2, PrefillSplitReduce::cluster},
    {1152, 896, 3585, 4224, kCfgBm192Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.o M = 1536 / 2048: bm64 s1 8.9 / 9.0 -> bm128 occ2 s1 7.8 / 7.9
    {896, 896, 1409, 1536, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    {896, 896, 1921, 2048, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.gate_up M = 1536: bm256 s1 50.5 -> bm128 occ2 s1 46.3
    {9728, 896, 1409, 1536, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
    // qwen0.5b.down M = 3072: bm256 s4 cluster 57.6 -> bm256 s1 49.0
    {896, 4864, 2817, 3072, kCfgBm256Tma, 1, PrefillSplitReduce::automatic},
    // Stop 27 call 5 (tune_tma at M = 300 / 520 / 700 / 1030 on the five large layers below llama70b, and four Qwen2.5-7B
    // layers at M = 512 / 1024 / 4096): two candidates beyond the tune's bias (the default plan is timed first and read
    // 0-9% slow against the same tile forced later), A/B'd in call 6 (3 interleaved rounds): llama8b.qkv M = 520 / 540 / 576
    // bm128_bn256 s1 51.8 / 51.7 / 52.0 -> bm128 occ2 s1 47.5 / 47.9 / 48.3 us (kept); Qwen2.5-7B o (3584 x 3584) M = 4096 on
    // bm128 occ2 s1 (tune 163.1 -> 153.4) measured 1.01-1.08x at M = 4000 / 4096 and was left out.
    {6144, 4096, 513, 576, kCfgBm128Occ2Tma, 1, PrefillSplitReduce::automatic},
};
constexpr int kMeasuredPrefillSms = 132;

static_assert(kPrefillMaxSplit <= 8, "the cluster reduce reads at most 8 ranks (prefill_kernel.cuh kMaxSplit; 8 = portable cluster size)");

// The k-loop order the default plan takes when W4A16_PREFILL_SCHED is unset: 1, the early-issue
// order (tile t's wgmma group issued before the CTA barrier and the refill; W copies from per-thread
// base pointers). Measured on the H200 (2026-12-03 02:42 UTC, `prefill_bench sched_ab`, one process,
// docs/benchmarks/prefill.md): 1.09x geomean over the 38 points at M >= 1024 (1.04-1.19x, every
// point faster by > 2%), 1.07-1.27x at M = 256; order 2 1.07x, the tma_eb twins 1.07-1.08x.
constexpr int kDefaultSched = 1;

// OneGroupConfigs (prefill_launch.cuh) holds exactly the kDefaultSched twins of the planned TMA
// tiles: the kernels the default plan runs get the ONE_GROUP variant, no other config is compiled twice.
constexpr bool planned_default_twin(int c) {
  const prefill_detail::ConfigParams& o = prefill_detail::kConfigParams[c];
  for (int base : kPlannedTiles) {
    const prefill_detail::ConfigParams& b = prefill_detail::kConfigParams[base];
    if (o.sched == kDefaultSched && o.xl == b.xl && o.wgmma == b.wgmma && o.bm == b.bm && o.wg == b.wg && o.mb == b.mb &&
        o.stages == b.stages && o.overlap == b.overlap && o.min_blocks == b.min_blocks)
      return true;
  }
  return false;
}
template <int... C>
constexpr bool one_group_list_is_the_planned_twins(std::integer_sequence<int, C...>) {
  int listed = 0;
  for (int c = 0; c < prefill_detail::kNumConfigs; ++c) listed += planned_default_twin(c) ? 1 : 0;
  return (planned_default_twin(C) && ...) && listed == static_cast<int>(sizeof...(C));
}
static_assert(one_group_list_is_the_planned_twins(prefill_detail::OneGroupConfigs{}),
              "OneGroupConfigs (prefill_launch.cuh) out of sync with the planned tiles' kDefaultSched twins");

// W4A16_PREFILL_SCHED: "1" or "2" makes the default plan take the early-issue twin (prefill.hpp
// PrefillConfig::sched) of its tile where one is compiled; "0": the measured order; unset or empty:
// kDefaultSched.
int resolve_sched() {
  const char* env = std::getenv("W4A16_PREFILL_SCHED");
  if (env == nullptr || *env == 0) return kDefaultSched;
  if (std::strcmp(env, "0") == 0) return 0;
  if (std::strcmp(env, "1") == 0) return 1;
  if (std::strcmp(env, "2") == 0) return 2;
  fail(ErrorCode::invalid_argument, "W4A16_PREFILL_SCHED", "0, 1 or 2", env);
}

// The workspace bound may leave out the partials: every planned TMA tile (both W slot sizes) runs
// a cluster of kPrefillMaxSplit on this device. False without a device.
bool cluster_bound_holds() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return false;
  }
  if (!sm90a_code(device_capability())) return false;
  for (int c : kPlannedTiles)
    for (const KernelEntry* t : {prefill_detail::kernels_f16_sym(), prefill_detail::kernels_f16_zeros()})
      if (!cluster_schedulable(t[c], kConfigs[c].threads(), static_cast<int>(kPrefillMaxSplit))) return false;
  return true;
}

}  // namespace

// Shared with prefill.cu (prefill_host.hpp).
namespace prefill_detail {

// A plan's on/off switch: 0 / 1 as given, -1 = the environment variable `env` ("0" off, "1" or unset
// on); anything else is refused naming `field` or `env`.
bool resolve_switch(int value, const char* field, const char* env) {
  if (value == 0 || value == 1) return value == 1;
  if (value != -1) fail(ErrorCode::invalid_argument, field, std::string("-1 (") + env + "), 0 or 1", std::to_string(value));
  const char* v = std::getenv(env);
  if (v == nullptr || *v == 0) return true;
  if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0) fail(ErrorCode::invalid_argument, env, "0 or 1", v);
  return *v == '1';
}

// W4A16_PREFILL_SPLIT_REDUCE: "kernel" or "cluster"; unset or empty: automatic (the plan's estimate
// names the mode; cluster_reduce_for).
PrefillSplitReduce resolve_reduce(PrefillSplitReduce r) {
  if (r != PrefillSplitReduce::automatic) return r;
  const char* env = std::getenv("W4A16_PREFILL_SPLIT_REDUCE");
  if (env == nullptr || *env == 0) return PrefillSplitReduce::automatic;
  if (std::strcmp(env, "cluster") == 0) return PrefillSplitReduce::cluster;
  if (std::strcmp(env, "kernel") == 0) return PrefillSplitReduce::kernel;
  fail(ErrorCode::invalid_argument, "W4A16_PREFILL_SPLIT_REDUCE", "kernel or cluster", env);
}

// us per k tile per wave of the estimate (file comment), measured for the cost model's four TMA tiles
// (the table-only tiles' values only decide the automatic reduce mode of a forced plan: the model never picks
// them; bm192's 0.88 is llama70b.gate_up M = 136 split 2, 2026-12-04 call 2; the 192 x 128 tile's 0.62 is bm192's
// scaled by its tokens, unmeasured); a twin of one (the early-issue
// orders, the tma_eb x load: the same tile and stages) is estimated as that tile until it has constants of
// its own. 0: no estimate (the cp.async and mma tiles).
double tile_us_per_k_tile(int config) {
  const PrefillConfig& c = prefill_config(config);
  if (c.path != PrefillPath::wgmma || !is_tma_config(c)) return 0;
  for (const auto& [base, us] :
       {std::pair{kCfgBm256Tma, 0.73}, {kCfgBm128Tma, 0.82}, {kCfgBm64Tma, 0.65}, {kCfgBm128n128Tma, 1.2}, {kCfgBm128Occ2Tma, 0.7},
        {kCfgBm192Tma, 0.88}, {kCfgBm128w3Tma, 0.62},
        // the decode-sized tiles: rough constants from single points of stop 50 (H100: 8192x8192 / llama70b.gate_up /
        // llama8b.gate_up at M = 16 / 32), for their table entries' estimates only (no model plan takes them)
        {kCfgBm16Tma, 0.43}, {kCfgBm16n64Tma, 0.36}, {kCfgBm32Tma, 0.42}, {kCfgBm32Occ3Tma, 0.5},
        // the one-warpgroup 64-token tiles (stop 61): unmeasured, bm64's 0.65 scaled by the rows a wave holds (x 1.5 /
        // x 1), for a forced plan's automatic reduce mode only
        {kCfgBm64w1Tma, 0.98}, {kCfgBm64w1n64Tma, 0.65}}) {
    const PrefillConfig& b = kConfigs[base];
    if (b.bm == c.bm && b.wg == c.wg && b.mb == c.mb && b.stages == c.stages && b.overlap == c.overlap && b.min_blocks == c.min_blocks)
      return us;
  }
  return 0;
}

}  // namespace prefill_detail

std::string PrefillConfig::name() const {
  std::ostringstream s;
  static const char* const kXLoadSuffix[] = {"", "_tma", "_tmaeb", "_nofence"};
  s << (path == PrefillPath::wgmma ? "wgmma" : "mma") << "_bm" << bm << "_bn" << bn() << "_s" << stages << (overlap ? "_ov" : "")
    << (min_blocks > 1 ? "_occ" + std::to_string(min_blocks) : "") << kXLoadSuffix[static_cast<int>(x_load)]
    << (sched == 1 ? "_ei" : (sched == 2 ? "_ei2" : ""));
  return s.str();
}

std::string PrefillPlan::describe() const {
  std::ostringstream s;
  s << (config >= 0 ? prefill_config(config).name() : std::string("none")) << " split=" << split
    << " k_tiles/split=" << k_tiles_per_split;
  if (reduce != PrefillSplitReduce::automatic) s << " reduce=" << prefill_split_reduce_name(reduce);
  if (pdl >= 0) s << " pdl=" << pdl;
  if (one_group >= 0) s << " one_group=" << one_group;
  return s.str();
}

const char* prefill_split_reduce_name(PrefillSplitReduce r) {
  static const char* const kNames[] = {"auto", "kernel", "cluster"};
  return kNames[static_cast<int>(r)];
}

int prefill_config_count() { return prefill_detail::kNumConfigs; }

const char* prefill_x_load_name(PrefillXLoad x) {
  static const char* const kNames[] = {"cp_async", "tma", "tma_eb", "cp_async_nofence"};
  return kNames[static_cast<int>(x)];
}

const PrefillConfig& prefill_config(int i) {
  if (i < 0 || i >= prefill_detail::kNumConfigs)
    fail(ErrorCode::invalid_argument, "config", "0.." + std::to_string(prefill_detail::kNumConfigs - 1), std::to_string(i));
  return kConfigs[i];
}

namespace {
// Whether the config, or the measured-order (SCHED 0) twin of an early-issue config, is one of `tiles`.
template <std::size_t N>
bool tile_or_twin_in(int config, const int (&tiles)[N]) {
  const int twin = prefill_config(config).sched != 0 ? prefill_sched_twin(config, 0) : config;
  const int base = twin >= 0 ? twin : config;  // the decode-sized tiles exist in the early-issue order only
  return std::find(std::begin(tiles), std::end(tiles), base) != std::end(tiles);
}
}  // namespace

bool prefill_config_planned(int config) { return tile_or_twin_in(config, kPlannedTiles); }

bool prefill_config_modeled(int config, std::int64_t m) {
  return tile_or_twin_in(config, kModelTiles) || (m <= kModelOcc2MaxM && tile_or_twin_in(config, kModelSmallMTiles));
}

int prefill_sched_twin(int config, int sched) {
  const PrefillConfig& c = prefill_config(config);
  for (int i = 0; i < prefill_detail::kNumConfigs; ++i) {
    const PrefillConfig& o = kConfigs[i];
    if (o.sched == sched && o.path == c.path && o.bm == c.bm && o.wg == c.wg && o.mb == c.mb && o.stages == c.stages &&
        o.overlap == c.overlap && o.min_blocks == c.min_blocks && o.x_load == c.x_load)
      return i;
  }
  return -1;
}

double prefill_fill_factor(const PrefillConfig& c) { return c.bm == 64 ? 1.5 : (c.bm == 128 ? 0.8 : 0.9); }

// mma.sync kernels exist in the code of every architecture of the build: wherever some of it runs (code_arch).
bool prefill_supported(int capability) { return code_arch(capability) != 0; }

namespace {
// The cost model's plan over the TMA tiles (kModelTiles; kModelSmallMTiles up to kModelOcc2MaxM tokens), splits and reduce modes: the least
// prefill_plan_estimate_us (file comment). prefill_plan takes it where no measured plan applies.
PrefillPlan model_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  PrefillPlan best;
  const std::int64_t k_tiles = round_up(k, 64) / 64, mm = std::max<std::int64_t>(m, 1);
  const PrefillSplitReduce env = resolve_reduce(PrefillSplitReduce::automatic);  // the environment once per plan
  best.est_us = std::numeric_limits<double>::infinity();
  auto consider = [&](int c, std::int64_t split, std::int64_t kts, PrefillSplitReduce reduce, int clusters) {
    const double us = prefill_plan_estimate_us(n, k, m, c, static_cast<int>(split), sm_count, reduce, clusters);
    if (us < best.est_us) {
      best.config = c;
      best.split = static_cast<int>(split);
      best.k_tiles_per_split = kts;
      best.est_us = us;
      best.reduce = split > 1 ? reduce : PrefillSplitReduce::automatic;
    }
  };
  for (int c : kPlannedTiles) {
    if (!prefill_config_modeled(c, m)) continue;
    for (std::int64_t split = 1; split <= kPrefillMaxSplit && split <= k_tiles; ++split) {
      std::int64_t kts = 0;
      if (normalize_split(k_tiles, split, &kts) != split) continue;  // an empty split: the same plan as a smaller one
      if (split == 1) {
        consider(c, 1, kts, PrefillSplitReduce::automatic, 0);
        continue;
      }
      // Partials in the workspace (bounded rows) or in the cluster's shared memory (no bound).
      if (env != PrefillSplitReduce::cluster && split * round_up(mm, prefill_config(c).bm) <= kPrefillMaxSplitRows)
        consider(c, split, kts, PrefillSplitReduce::kernel, 0);
      if (env != PrefillSplitReduce::kernel && capability == 90) {
        const int clusters = prefill_max_active_clusters(c, static_cast<int>(split));
        if (clusters > 0) consider(c, split, kts, PrefillSplitReduce::cluster, clusters);
      }
    }
  }
  return best;
}
}  // namespace

PrefillPlan prefill_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count, PrefillXLoad x_load) {
  const bool wgmma = path_for(capability) == PrefillPath::wgmma;
  if (wgmma && x_load != PrefillXLoad::cp_async && x_load != PrefillXLoad::tma)
    fail(ErrorCode::invalid_argument, "x_load", "tma or cp_async (the planned paths)", std::to_string(static_cast<int>(x_load)));
  const bool tma = wgmma && x_load == PrefillXLoad::tma;
  if (tma) {  // a measured plan, else the cost model over the TMA tiles, splits and reduce modes (file comment)
    PrefillPlan best;
    if (!prefill_measured_plan(n, k, m, capability, sm_count, &best)) best = model_plan(n, k, m, capability, sm_count);
    const int sched = resolve_sched();
    if (sched != 0) {  // the same tile and split, another k-loop order (not in the model or the table yet)
      const int twin = prefill_sched_twin(best.config, sched);
      if (twin >= 0) best.config = twin;
    }
    return best;
  }
  // The TMA plans above resolve W4A16_PREFILL_SPLIT_REDUCE in their cost model; these fixed tiles never weigh a mode,
  // so they read it here only to refuse an invalid value, as every path does.
  (void)resolve_reduce(PrefillSplitReduce::automatic);
  int c;
  if (wgmma)
    c = m <= 64 ? kCfgBm64 : (m <= 128 ? kCfgBm128 : kCfgBm256);
  else
    c = m <= 64 ? kCfgMma64 : kCfgMma128;
  return prefill_plan_for_config(n, k, m, c, sm_count);
}

std::string PrefillRowSplit::describe() const {
  if (rows == 0) return "none";
  return "rows " + std::to_string(rows) + ": " + head_plan.describe() + " + rest: " + tail_plan.describe();
}

// Row splits measured on an H100 with the H200's 132 SMs (2026-12-06 stop 49, docs/benchmarks/prefill.md; prefill_bench
// tune_tma with W4A16_PREFILL_ROWSPLIT_*; the H200 was not lent): where every tile's grid ends in a part wave, the head runs the full waves of its tile
// (split 1: the rows of floor(tiles / (SMs x CTAs per SM)) waves) and the rest of the rows a tile or split that fills
// one more wave. Same applicability as kMeasuredPrefillPlans (132 SMs of capability 9.0, W4A16_PREFILL_TABLE,
// no forced reduce mode, the tail's cluster schedulable here); W4A16_PREFILL_ROW_SPLIT=0 turns them off. The tail
// reduces in the cluster or not at all (no partials: prefill_workspace_bytes holds without them).
struct MeasuredRowSplit {
  std::int64_t n, k, m_lo, m_hi;
  int head_config, tail_config, tail_split;
};
constexpr MeasuredRowSplit kMeasuredRowSplits[] = {
    // llama8b.qkv M = 960 / 1000 / 1024: bm256 s2 cluster 80.7 / 83.9 / 81.6 -> 73.6 / 73.6 / 74.0 us (4224 + 1920 rows,
    // the rest bm256 s2 cluster; cuBLAS fp16 70.8 / 73.3 / 73.7); M = 896: the token split 72.3, the row split 72.0
    {6144, 4096, 897, 1024, kCfgBm256Tma, kCfgBm256Tma, 2},
    // Qwen2.5-7B qkv (4608 x 3584) M = 960 / 1000 / 1024: the token split 59.4 / 65.3 / 64.4 -> 56.5 / 56.9 / 56.8 us
    // (4224 + 384 rows, the rest bm256 s4 cluster); M = 896: bm128_bn256 s1 47.7 against 56.4
    {4608, 3584, 960, 1024, kCfgBm256Tma, kCfgBm256Tma, 4},
    // Stop 51 (the H200, call 1, 2 rounds; stop 50 on an H100 alike): Llama-70B qkv (10240 x 8192) M = 960 / 1024: the
    // plan's bm256 s1 / s2 234-250 / 236-244 -> 219.5 / 220.9 us (cuBLAS fp16 226 / 246; the H100 at 1024 0.91x); M = 896
    // and 1088..1280 no gain; call 3, the entry at M = 1000: 236.95 -> 221.09 us (cuBLAS 224.65). Qwen2.5-7B o (3584 x
    // 3584) M = 1536: 69.4 -> 62.7 (the H100 0.87-0.89x), 1408 1-4%, 1280 and 1664 / 1792 slower, and at M = 1500 (call
    // 3) the plan's 61.43 against the row split's 63.21: the entry holds at 1536 alone. Both the bm256 head over its
    // full waves + the bm256 s2 cluster tail.
    {10240, 8192, 960, 1024, kCfgBm256Tma, kCfgBm256Tma, 2},
    {3584, 3584, 1536, 1536, kCfgBm256Tma, kCfgBm256Tma, 2},
    // Stop 58 call 1 (an H100, shuffled interleaved with cuBLAS fp16 and the plan, 16 rounds, 2 processes): llama70b.gate_up
    // M = 200 / 256, one 256-token block, 448 tiles = 3 waves + 52: the bm256 s1 entry of kMeasuredPrefillPlans (the
    // persistent loop's split tail: 52 tiles in 2 k parts reduced through L2) 360.4 / 384.0 us (0.993-0.994 / 0.971-0.974x
    // cuBLAS) -> the 3 waves' 50688 rows + the rest bm256 s2 cluster 352.2 / 373.6 us (1.014-1.019 / 0.995-1.004x);
    // s4 no better. Every M = 193..256 has the same tiles.
    {57344, 8192, 193, 256, kCfgBm256Tma, kCfgBm256Tma, 2},
};

std::string PrefillTokenSplit::describe() const {
  if (head == 0) return "none";
  return "head " + std::to_string(head) + ": " + head_plan.describe() + " + tail: " + tail_plan.describe();
}

// The token split (prefill.hpp). Measured on the H200 (2026-12-04 stop 26, docs/benchmarks/prefill.md first
// section; prefill_dq_ab, no split = W4A16_PREFILL_TOKEN_SPLIT=0 against the split, 3 interleaved rounds, fp16
// uint4b8 g = 128): at a margin of 0.9, the 26 points of 14 layer shapes x 18 token counts (130..4100) that it
// split ran 0.69-0.94x the time (geomean 0.825; llama8b.o M = 1030 73.9 -> 56.0 us, llama8b.down M = 2050
// 424 -> 344); the 35 more that 0.97 splits ran 0.81-1.01x (0.927; 8192x8192 M = 4100 954 -> 828 us), so 0.97.
// Those splits took only heads of M rounded down, and only where M pads its last block. Call 3 timed forced
// splits at heads of whole 256-token blocks on layers whose one-call plan ends in a part wave (a split M = 1024
// of 4608 x 3584 into 256 + 768 tokens: 0.78x; llama8b.qkv M = 1536 into 768 + 768: 0.84x); call 4 the
// candidates below at every M against the first ones: the 22 points of 14 shapes x 16 token counts where they
// differ 0.78-1.00x (geomean 0.910; 8192x8192 M = 800 / 1280 0.89 / 0.90x, llama8b.down M = 1280 0.87x).
// Call 6: counting a part the measured table plans at the smaller of its plan's and the model pick's estimate
// changed 9 points by 0.92-1.12x (geomean 1.009): not kept, the parts take their plans' estimates.
namespace {
PrefillTokenSplit token_split_planned(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  PrefillTokenSplit best;
  if (prefill_measured_plan(n, k, m, capability, sm_count, nullptr)) return best;  // measured whole: taken as it is
  const PrefillPlan whole = prefill_plan(n, k, m, capability, sm_count);
  double bound = kPrefillTokenSplitMargin * whole.est_us;
  std::vector<std::int64_t> heads;
  for (const std::int64_t b : {64, 128, 192, 256})
    for (const std::int64_t h : {m / b * b, m / b * b - b, m / 2 / b * b})
      if (h > 0 && h < m && std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  for (const std::int64_t head : heads) {
    const PrefillPlan hp = prefill_plan(n, k, head, capability, sm_count), tp = prefill_plan(n, k, m - head, capability, sm_count);
    if (hp.est_us + tp.est_us < bound) {
      bound = hp.est_us + tp.est_us;
      best.head = head;
      best.head_plan = hp;
      best.tail_plan = tp;
      best.est_us = bound;
    }
  }
  return best;
}
}  // namespace

PrefillTokenSplit prefill_token_split(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  if (!resolve_switch(-1, "the token split", "W4A16_PREFILL_TOKEN_SPLIT")) return {};
  if (path_for(capability) != PrefillPath::wgmma || m <= 64) return {};  // the TMA plan's estimates; a head of >= 64 tokens
  // prefill_run asks on every call and the answer takes up to 25 plans (~2 us of host time each):
  // a per-thread memo of the last shapes asked, keyed by the arguments and every switch a plan reads.
  struct Entry {
    std::int64_t n, k, m;
    int capability, sm_count;
    std::string env;
    PrefillTokenSplit split;
  };
  thread_local std::vector<Entry> memo;
  std::string env;
  for (const char* v : {"W4A16_PREFILL_TABLE", "W4A16_PREFILL_SPLIT_REDUCE", "W4A16_PREFILL_SCHED"}) {
    const char* e = std::getenv(v);
    env += e ? e : "-";
    env += '|';
  }
  for (const Entry& e : memo)
    if (e.n == n && e.k == k && e.m == m && e.capability == capability && e.sm_count == sm_count && e.env == env) return e.split;
  const PrefillTokenSplit s = token_split_planned(n, k, m, capability, sm_count);
  if (memo.size() >= 64) memo.erase(memo.begin());
  memo.push_back({n, k, m, capability, sm_count, env, s});
  return s;
}

std::int64_t prefill_full_wave_rows(std::int64_t n, std::int64_t m, int config, int sm_count) {
  const PrefillConfig& c = prefill_config(config);
  const std::int64_t m_blocks = ceil_div(std::max<std::int64_t>(m, 1), static_cast<std::int64_t>(c.bm));
  const std::int64_t slots = static_cast<std::int64_t>(sm_count) * std::max(1, c.min_blocks);
  return output_tiles(n, m, c) / slots * slots / m_blocks * c.bn();
}

namespace {
// Whether the measured tables (kMeasuredPrefillPlans, kMeasuredRowSplits) apply: 132 SMs of capability 9.0,
// W4A16_PREFILL_TABLE on, no forced reduce mode (a forced mode gives the cost model back).
bool measured_tables_apply(int capability, int sm_count) {
  if (!sm90a_code(capability) || sm_count != kMeasuredPrefillSms) return false;
  if (!resolve_switch(-1, "the measured prefill plans", "W4A16_PREFILL_TABLE")) return false;
  return resolve_reduce(PrefillSplitReduce::automatic) == PrefillSplitReduce::automatic;
}

// The resident clusters of a measured entry's `split` K splits of config over n x m tokens where this device schedules
// the cluster and holds the tile's clusters in the waves its SMs would give (prefill_cluster_waves_hold), or gives at
// least the entry's timed_clusters (> 0: the count of the device that timed it); else 0 (no device, or one that cannot:
// the entry is not taken).
int measured_cluster_fit(int config, int split, std::int64_t n, std::int64_t m, int sm_count, int timed_clusters) {
  const int clusters = prefill_max_active_clusters(config, split);
  if (clusters < 1) return 0;
  if (timed_clusters > 0 && clusters >= timed_clusters) return clusters;
  const PrefillConfig& c = prefill_config(config);
  return prefill_cluster_waves_hold(output_tiles(n, m, c), clusters, sm_count, std::max(1, c.min_blocks), split) ? clusters : 0;
}

// The partial rows (split x round_up(M, bm)) of the kernel-reduce entries of kMeasuredPrefillPlans for n x k at some
// M <= max_m: an entry may pass kPrefillMaxSplitRows (llama8b.down M = 101..128 / 193..256, split 8 x 128 / 4 x 256
// rows), and the workspace of that layer alone grows to hold it (prefill_workspace_bytes, on any device: the size does
// not depend on the table applying).
std::int64_t measured_split_rows(std::int64_t n, std::int64_t k, std::int64_t max_m) {
  std::int64_t rows = 0;
  for (const MeasuredPrefillPlan& e : kMeasuredPrefillPlans)
    if (e.n == n && e.k == k && e.reduce == PrefillSplitReduce::kernel && e.m_lo <= max_m)
      rows = std::max(rows, e.split * round_up(std::min(max_m, e.m_hi), static_cast<std::int64_t>(prefill_config(e.config).bm)));
  return rows;
}
}  // namespace

PrefillRowSplit prefill_row_split(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  if (!resolve_switch(-1, "the row split", "W4A16_PREFILL_ROW_SPLIT")) return {};  // read first: a bad value is refused anywhere
  if (!measured_tables_apply(capability, sm_count)) return {};
  for (const MeasuredRowSplit& e : kMeasuredRowSplits) {
    if (e.n != n || e.k != k || m < e.m_lo || m > e.m_hi) continue;
    PrefillRowSplit s;  // the tiles in the default plan's k-loop order (W4A16_PREFILL_SCHED), as prefill_plan takes them
    const int sched = resolve_sched();
    s.head_plan.config = sched != 0 ? prefill_sched_twin(e.head_config, sched) : e.head_config;
    s.tail_plan.config = sched != 0 ? prefill_sched_twin(e.tail_config, sched) : e.tail_config;
    if (s.head_plan.config < 0 || s.tail_plan.config < 0) return {};
    const PrefillConfig& tc = prefill_config(s.tail_plan.config);
    s.rows = prefill_full_wave_rows(n, m, s.head_plan.config, sm_count);
    if (s.rows <= 0 || s.rows >= round_up(n, 64) || s.rows % tc.bn() != 0) return {};
    const std::int64_t k_tiles = round_up(k, 64) / 64;
    s.head_plan.k_tiles_per_split = k_tiles;
    s.head_plan.est_us = prefill_plan_estimate_us(s.rows, k, m, e.head_config, 1, sm_count);
    s.tail_plan.split = static_cast<int>(normalize_split(k_tiles, e.tail_split, &s.tail_plan.k_tiles_per_split));
    int clusters = 0;
    if (s.tail_plan.split > 1) {
      s.tail_plan.reduce = PrefillSplitReduce::cluster;
      clusters = measured_cluster_fit(e.tail_config, s.tail_plan.split, n - s.rows, m, sm_count, 0);
      if (clusters < 1) return {};  // one plan
    }
    s.tail_plan.est_us = prefill_plan_estimate_us(n - s.rows, k, m, e.tail_config, s.tail_plan.split, sm_count, s.tail_plan.reduce, clusters);
    return s;
  }
  return {};
}

std::string prefill_default_describe(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  if (const PrefillRowSplit rs = prefill_row_split(n, k, m, capability, sm_count); rs.rows > 0) return "row split " + rs.describe();
  const PrefillTokenSplit ts = prefill_token_split(n, k, m, capability, sm_count);
  return ts.head > 0 ? "token split " + ts.describe() : prefill_plan(n, k, m, capability, sm_count).describe();
}

bool prefill_cluster_waves_hold(std::int64_t clusters, int active_clusters, int sm_count, int ctas_per_sm, int split) {
  if (clusters < 1 || active_clusters < 1 || sm_count < 1 || ctas_per_sm < 1 || split < 2)
    fail(ErrorCode::invalid_argument, "clusters, active_clusters, sm_count, ctas_per_sm, split", ">= 1, >= 1, >= 1, >= 1, >= 2",
         std::to_string(clusters) + ", " + std::to_string(active_clusters) + ", " + std::to_string(sm_count) + ", " +
             std::to_string(ctas_per_sm) + ", " + std::to_string(split));
  const std::int64_t packed = std::max<std::int64_t>(1, static_cast<std::int64_t>(sm_count) * ctas_per_sm / split);
  return ceil_div(clusters, static_cast<std::int64_t>(active_clusters)) <= ceil_div(clusters, packed);
}

bool prefill_measured_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count, PrefillPlan* plan) {
  if (!measured_tables_apply(capability, sm_count)) return false;
  for (const MeasuredPrefillPlan& e : kMeasuredPrefillPlans) {
    if (e.n != n || e.k != k || m < e.m_lo || m > e.m_hi) continue;
    const std::int64_t k_tiles = round_up(k, 64) / 64;
    std::int64_t kts = 0;
    if (normalize_split(k_tiles, e.split, &kts) != e.split) return false;
    int clusters = 0;
    if (e.reduce == PrefillSplitReduce::cluster) {
      clusters = measured_cluster_fit(e.config, e.split, n, m, sm_count, e.timed_clusters);
      if (clusters < 1) return false;  // the model decides
    }  // a kernel-reduce entry's partials: prefill_workspace_bytes counts them (measured_split_rows)
    PrefillPlan p;
    p.config = e.config;
    p.split = e.split;
    p.k_tiles_per_split = kts;
    p.reduce = e.reduce;
    p.est_us = prefill_plan_estimate_us(n, k, m, e.config, e.split, sm_count, e.reduce, clusters);
    if (plan != nullptr) *plan = p;
    return true;
  }
  return false;
}

double prefill_plan_estimate_us(std::int64_t n, std::int64_t k, std::int64_t m, int config, int split, int sm_count,
                                PrefillSplitReduce reduce, int active_clusters) {
  const PrefillConfig& cfg = prefill_config(config);
  const double t_tile = tile_us_per_k_tile(config);
  if (t_tile <= 0)
    fail(ErrorCode::invalid_argument, "config",
         "a planned TMA tile (12..15, 30, 31, 33, 35..40) or a twin of one (early-issue order, tma_eb x load)", cfg.name());
  if (split < 1 || sm_count < 1) fail(ErrorCode::invalid_argument, "split, sm_count", ">= 1", std::to_string(split) + ", " + std::to_string(sm_count));
  const std::int64_t k_tiles = round_up(k, 64) / 64, mm = std::max<std::int64_t>(m, 1);
  std::int64_t kts = 0;
  const std::int64_t s = normalize_split(k_tiles, split, &kts);
  const std::int64_t ctas = output_tiles(n, m, cfg) * s;
  const bool cluster = s > 1 && resolve_reduce(reduce) == PrefillSplitReduce::cluster;
  // Waves: CTAs over the resident slots; a cluster run counts whole clusters over those that fit at once.
  const std::int64_t waves = cluster && active_clusters > 0
                                 ? ceil_div(ctas / s, active_clusters)
                                 : ceil_div(ctas, static_cast<std::int64_t>(sm_count) * std::max(1, cfg.min_blocks));
  const double fixed = cluster ? kSplitClusterFixedUs : kSplitKernelFixedUs, per_mb = cluster ? kSplitClusterUsPerMb : kSplitKernelUsPerMb;
  const double per_rank = cluster ? kSplitClusterUsPerRank : kSplitKernelUsPerRank;
  const double split_us =
      s > 1 ? fixed + per_mb * static_cast<double>(s * mm * n) * 4.0 / 1e6 + per_rank * static_cast<double>(s - 2) : 0.0;
  return 1.6 + static_cast<double>(waves * kts) * t_tile + split_us;
}

int prefill_max_active_clusters(int config, int split) {
  const PrefillConfig& c = prefill_config(config);
  if (split < 2 || split > kPrefillMaxSplit || !is_tma_config(c)) return 0;
  // prefill_plan asks for every tile and split on each prefill_run: answered from a table per device
  // (-1: not asked yet) after the first time, without the driver queries below.
  constexpr int kDevices = 16;
  static std::atomic<int> known[kDevices][prefill_detail::kNumConfigs][kPrefillMaxSplit + 1];
  static std::once_flag init;
  std::call_once(init, [] {
    for (auto& d : known)
      for (auto& cfg : d)
        for (auto& v : cfg) v.store(-1, std::memory_order_relaxed);
  });
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;  // no device
  }
  std::atomic<int>* slot = dev < kDevices ? &known[dev][config][split] : nullptr;
  if (slot != nullptr) {
    const int v = slot->load(std::memory_order_relaxed);
    if (v >= 0) return v;
  }
  int least = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) cudaGetLastError();
  if (count > 0 && sm90a_code(device_capability())) {
    least = std::numeric_limits<int>::max();
    for (const KernelEntry* t : {prefill_detail::kernels_f16_sym(), prefill_detail::kernels_f16_zeros()})  // their W slots differ
      least = std::min(least, active_clusters(t[config], c.threads(), split));
  }
  if (slot != nullptr) slot->store(least, std::memory_order_relaxed);
  return least;
}

PrefillPlan prefill_plan_for_config(std::int64_t n, std::int64_t k, std::int64_t m, int c, int sm_count) {
  const std::int64_t k_tiles = round_up(k, 64) / 64;
  const PrefillConfig& cfg = prefill_config(c);
  const double fill = prefill_fill_factor(cfg) * std::max(1, sm_count);
  const std::int64_t tiles = output_tiles(n, m, cfg);
  std::int64_t split = 1;
  while (split < kPrefillMaxSplit && static_cast<double>(tiles * split) < fill &&
         (split + 1) * round_up(std::max<std::int64_t>(m, 1), cfg.bm) <= kPrefillMaxSplitRows && split + 1 <= k_tiles)
    ++split;
  PrefillPlan p;
  p.config = c;
  p.split = static_cast<int>(normalize_split(k_tiles, split, &p.k_tiles_per_split));
  p.est_us = 0;
  return p;
}

std::size_t prefill_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m,
                                    PrefillSplitReduce reduce) {
  if (max_m < 0) fail(ErrorCode::invalid_argument, "max_m", ">= 0", std::to_string(max_m));
  const std::size_t gather = gather_bytes(act_order, max_m, k);
  // The persistent loop's split tail (split 1: never beside split partials).
  const std::size_t tail = prefill_detail::persistent_tail_bound(n, max_m);
  // The default plan (TMA tiles on sm_90) reduces every split in the cluster where it can.
  if (resolve_reduce(reduce) == PrefillSplitReduce::cluster && cluster_bound_holds()) return gather + tail;
  const std::int64_t split_rows = std::max(std::min<std::int64_t>(kPrefillMaxSplitRows, kPrefillMaxSplit * round_up(max_m, 64)),
                                           measured_split_rows(n, k, max_m));
  return gather + std::max(static_cast<std::size_t>(split_rows * n * 4), tail);
}

}  // namespace w4a16::kernels::cuda
