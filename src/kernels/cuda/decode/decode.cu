// ---- Contract ------------------------------------------------------------------------------
// Skinny W4A16 GEMM for decode (M <= 16 per launch; larger M loops over 16-token chunks).
//   x      (M, K)       fp16 | bf16, row stride x_stride elements, 2-byte aligned (16-byte rows: vector path)
//   W      (N, K)       int4, layout cuda.tc16x64.v1 (docs/LAYOUT.md): (N_pad/16, K_pad/64, 32 lanes, 4 words)
//   scales (G, N_pad)   act dtype, pair-interleaved per 16 rows; zeros (G, N_pad/16, 8) uint8 for uint4
//   bias   (N,)         act dtype, optional;  perm (K,) int32, optional: y uses x[:, perm]
//   y      (M, N)       act dtype, row stride y_stride elements
// Math: swap AB. W is the A operand of mma.sync.m16n8k16 (16 weight rows), tokens are the n = 8
// side: M <= 8 takes one mma per k16 sub-tile, M <= 16 two. q - z is exact in fp16/bf16 (magic
// numbers: fp16 (1024 + q) - (1024 + z) and (1024 + 16 q) / 16 - (64 + z), 9 instructions per
// 32-bit word; bf16 (128 + q) - (128 + z), 11); the products accumulate in fp32 per group and
// the fp32 accumulators are scaled per (row, group) - one rounding less than dequantizing to
// (q - z) * s in 16 bits. Bias is added in fp32, y rounded once.
// Pipeline: each warp owns one 16-row stripe and a K range; a per-warp cp.async ring of steps (1..8
// tokens: 2 slots of 8 tiles; 9..16: 3 slots of 4; weights plus each step's scale/zero words copied
// once per step by 8-32 lanes) keeps 8 tiles in flight ahead of the compute; 4 tiles are computed
// together so their mma chains are independent. Launched
// with programmatic dependent launch: the first steps' weights are requested before
// griddepcontrol.wait (overlapping the previous kernel's tail), x read and y written after.
// 1..8 tokens: where a plan needs more than one wave of blocks the grid is persistent (as many
// blocks as are resident, each looping over row blocks with the ring running on across them).
// x (only the m real tokens) lives in shared memory as token rows, as in memory (row stride 16
// bytes past a multiple of 128), B fragments read by ldmatrix: either staged once per block for the
// block's K range (16-byte cp.async in the first ring group; act-order or unaligned rows through
// registers), or - when rows are 16-byte aligned and there is no act-order perm - streamed per step
// through a block ring of the weight ring's depth (one barrier per step), which frees the shared memory
// that staging 9..16 tokens takes: one window of x a slot where every warp of the block shares one K
// range (warps_n = 8), one per K group where warps_k > 1 (kXWin: 9..16 tokens, g >= 64; stop 39).
// Plan (rows/warps/splits per block, staged or streamed) from a cost model (decode_plan;
// docs/benchmarks/decode.md). Loop (SASS, fp16, uint4b8, g = 128; scripts/sass-loop): ~61 executed
// instructions per tile at 1..8 tokens with x staged, ~67 streamed (version 8; 78 / 89 with 4-tile
// steps), 392 per 4-tile step at 9..16.
// Split-K: warps of a block split K (reduced in shared memory), blocks of a cluster split K
// (each rank reduces a slice of the outputs over all ranks through distributed shared memory, in
// rank order), always in the same order: results are bitwise reproducible run to run. No
// workspace, no atomics, no allocation: CUDA-graph safe.
// Instantiated: {fp16, bf16} x {M <= 8, M <= 16} x {uint4b8, uint4} x {g == 32, g >= 64 or channelwise}; the tile-pair
// variants (fp16 uint4 at 1..16 tokens, uint4b8 at 1..8 in both dtypes: decode_tile_pairs); the x-window variants
// ({fp16, bf16} x {uint4b8, uint4} at 9..16 tokens, g >= 64).
// Small layers (one wave of blocks, <= kDecodeSmallMaxXBytes of x copied, 16-byte x rows, no perm):
// decode_plan picks the lean kernel of decode_small.cu instead (decode.hpp: the rule and the
// W4A16_DECODE_SMALL knob). At 1 token (and 2..8 where measured faster) decode_plan picks the bulk kernel of
// decode_bulk.cu before both (a producer warp per block keeping a deep cp.async.bulk ring in flight;
// bulk_by_default, W4A16_DECODE_BULK). All three share Args, Dt, mma_pair, scale_group (decode_device.cuh).
// Checked by: build-cuda/tests/gpu/decode/w4a16_test_gpu_decode, timed by w4a16_bench_gpu
// (both through scripts/gpu-check on the H200).
// ---------------------------------------------------------------------------------------------
#include "decode/decode.hpp"

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "decode/decode_device.cuh"
#include "pdl.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {
namespace {

namespace cg = cooperative_groups;

using namespace decode_detail;

// cp.async: 16 bytes bypassing L1 (weights, streamed once) and 4 bytes through L1 (scales, zeros:
// reused by the 4 lanes of a row pair and by consecutive tiles of a group). "memory" clobbers keep
// the compiler from moving shared-memory reads of a slot across the copies and waits.
__device__ __forceinline__ void cp_async16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem), "l"(gmem) : "memory");
}

// Per-warp cp.async ring: depth slots of one step each: kTiles tiles of weights and the scale/zero
// words of each tile's groups, refilled depth - 1 steps ahead.
//   slot s at ring + s * kStepBytes:
//     weights  (kTiles, 32 lanes) x 16 B                                  at + p * 512 + lane * 16
//     entries  (kTiles, kGs, 8 gids) x (scale word [, zero word])         at + kEntryOffset
// A lane reads only its own weight copies; the 8 (or 16) scale entries of a tile are copied by 8 (16)
// lanes, one cp.async each per step instead of one per lane per tile (the 4-byte copies and reads
// were ~a third of the loop's memory instructions), and read by the 4 lanes of each row pair after
// a __syncwarp.
// kPair (g >= 128 or channelwise, even tile ranges: decode_tile_pairs): tiles 2j, 2j + 1 share their group, so a step
// holds one entry per (tile pair, gid), copied once and read once per pair, and the pair keeps one fp32 partial
// (tiles_math kShare 2; uint4b8 in two accumulator chains, kSplit).
template <bool kZeros, bool kG32, int kTiles, bool kPair = false>
struct Ring {
  static constexpr int kGs = kG32 ? 2 : 1;                             // groups per tile
  static constexpr int kPairT = kPair ? 2 : 1;                         // tiles per entry group (g >= 64)
  static constexpr int kEntryBytes = kZeros ? 8 : 4;                  // scale word (+ the zero word of its row pair)
  static constexpr int kStepEntries = kTiles / kPairT * kGs * 8;       // (entry group, gid) of one step: 16..128
  static constexpr int kStepEntryBytes = kStepEntries * kEntryBytes;
  static constexpr int kEntryOffset = kTiles * 512;                   // entries after the weights of a slot
  static constexpr int kStepBytes = kEntryOffset + kStepEntryBytes;   // one slot
  static constexpr int kEntryCopies = (kStepEntries + 31) / 32;       // entries each lane copies per step (16: lanes 0..15)
  static_assert(kStepEntries % 32 == 0 || kStepEntries < 32, "whole warps (or lanes 0..15) copy the entries of a step");
  static_assert(!kPair || !kG32, "pairs: one group per tile");
  static_assert(kStepBytes % 128 == 0, "every slot and every warp's ring on a 128-byte boundary (see x_region_bytes)");
};
// Thread-block clusters (the K split over blocks) are sm_90. Compiled below it (an sm_8x build) these trap: decode_plan
// keeps splits = 1 wherever the device runs code without clusters (decode_clusters_available), so they are not reached.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::this_cluster().sync();
#else
  __trap();
#endif
}
__device__ __forceinline__ int cluster_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return static_cast<int>(cg::this_cluster().block_rank());
#else
  __trap();
  return 0;
#endif
}
// `red` of cluster rank r (distributed shared memory).
__device__ __forceinline__ const float4* cluster_peer(float* red, int r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return reinterpret_cast<const float4*>(cg::this_cluster().map_shared_rank(red, r));
#else
  __trap();
  return nullptr;
#endif
}

// Step shape per token variant. A step is what one cp.async wait, one __syncwarp (or block barrier),
// one round of copies and one advance of the copy side cover; its tiles are computed kComputeTiles at
// a time (4 independent mma chains). 1..8 tokens: 8 tiles per step in a ring of 2 slots (the copies
// of step s + 1 fly while step s is computed: the same 8 tiles ahead as 3 slots of 4), halving the
// per-step overhead that made the loop issue-bound (docs/benchmarks/decode.md, version 7: 356 SASS
// instructions per 4 tiles, ~150 of them not dequantization, mma or scaling). 9..16 tokens keep 4
// tiles in 3 slots (their registers are spent: the g = 32 variants spill already).
// Deeper rings (a plan parameter 3..6 until 2026-12-02) were measured on the H200 (version 5):
// depth 4 and 5 (4-tile slots) were no faster on any PERF.md shape.
constexpr int kComputeTiles = 4;
template <int MB>
constexpr int kStepTiles = MB == 1 ? 8 : 4;
template <int MB>
constexpr int kRingDepth = MB == 1 ? 2 : 3;
constexpr int step_tiles(int m) { return m <= 8 ? kStepTiles<1> : kStepTiles<2>; }
constexpr int ring_depth(int m) { return m <= 8 ? kRingDepth<1> : kRingDepth<2>; }

// Blocks per SM the register cap is sized for: 128 registers (ptxas -v: 108-125, no spills, with the
// pinned addresses and the batched x staging; version 3 capped the 1..8-token variants at 85 for 3).
template <int MB, bool kZeros>
constexpr int kMinBlocks = 2;

// kXWin: x streamed with warps_k > 1 (a window of x per K group of the block; its own instantiation, 9..16 tokens,
// g >= 64, so that the other variants keep their registers: the window state made three of them spill).
template <bool kBf16, int MB, bool kZeros, bool kG32, bool kPair = false, bool kXWin = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks<MB, kZeros>) decode_kernel(const Args a) {
  using D = Dt<kBf16>;
  constexpr int kT = kStepTiles<MB>, kP = kComputeTiles, kH = kT / kP;  // tiles per step, computed together, halves
  using R = Ring<kZeros, kG32, kT, kPair>;
  constexpr int kGs = R::kGs, kShare = R::kPairT, kParts = kP / kShare;
  constexpr bool kSplit = kPair && !kZeros;  // uint4b8 pairs: two accumulator chains per partial (as in the bulk kernel)
  constexpr int depth = kRingDepth<MB>;
  static_assert(kT % kP == 0, "a step is whole compute groups");
  extern __shared__ uint4 smem_v4[];
  // x rows (decode_device.cuh: row-major, ldmatrix): staged, the block's K range (m rows of
  // block_tiles tiles); streamed, depth slots of m rows of kT tiles. Then the weight rings, then
  // the reduction partials.
  unsigned char* xs = reinterpret_cast<unsigned char*>(smem_v4);
  // Streamed, a slot holds one window of m rows of kT tiles per K group of the block (warps_k windows, group wk's at
  // + wk * x_win_bytes); staged, the one window is the block's K range.
  const int xrow = x_row_bytes(a.xstream ? kT : a.block_tiles);
  const unsigned x_win_bytes = static_cast<unsigned>(a.m * xrow);
  const unsigned x_slot_bytes = kXWin ? x_win_bytes * static_cast<unsigned>(a.warps_k) : x_win_bytes;
  unsigned char* rings = xs + align128((a.xstream ? depth : 1) * x_slot_bytes);  // = x_region_bytes: 128-byte aligned
  float* red = reinterpret_cast<float*>(rings + kWarps * depth * R::kStepBytes);  // (8 warps, MB, 32, 4) partials

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4;
  const int ws = warp % a.warps_n, wk = warp / a.warps_n;
  const int btile0 = blockIdx.x * a.block_tiles;                   // block's first k tile
  const int btile1 = min(btile0 + a.block_tiles, a.kt_count);
  const int t0 = btile0 + wk * a.tiles_per_warp;
  const int t1 = min(t0 + a.tiles_per_warp, btile1);
  const int ntiles = max(t1 - t0, 0);
  // Steps of kT tiles; the last may be partial. Streamed x: one block barrier per step, so every warp takes the steps of
  // the block's first K group (the longest range), its own past its range empty.
  const int nfull = ntiles / kT, nsteps_w = (ntiles + kT - 1) / kT;
  const int nsteps = kXWin ? (max(min(btile0 + a.tiles_per_warp, btile1) - btile0, 0) + kT - 1) / kT : nsteps_w;
  // Persistent over row blocks: this block computes row blocks blockIdx.y, + gridDim.y, ... (its
  // items); every item has the same K range, so the same steps, and the ring runs on across items
  // (the next item's first tiles are in flight while an item is reduced and stored). A warp past
  // the last stripe recomputes the last stripe into rows that are never stored, so every warp takes
  // part in every step's copies and barriers.
  // Only the 1..8-token variants loop (the 9..16-token ones have no registers to spare for the
  // copy side's state: ptxas spilled it inside the loop); decode_plan makes only their grids smaller.
  constexpr bool kPersist = MB == 1;
  const int items = kPersist ? (a.row_blocks - static_cast<int>(blockIdx.y) + static_cast<int>(gridDim.y) - 1) / static_cast<int>(gridDim.y) : 1;

  // This lane's ring addresses (shared state space); slot offsets are immediates.
  const unsigned ring = smem_addr(rings + warp * depth * R::kStepBytes);
  const unsigned w_sh = pin(ring + lane * 16);                                    // + slot + p * 512
  const unsigned e_read = pin(ring + R::kEntryOffset + gid * R::kEntryBytes);     // + slot + (p * kGs + h) * 8 entries
  const unsigned e_copy = pin(ring + R::kEntryOffset + lane * R::kEntryBytes);    // + slot + c * 32 entries
  // Entries this lane copies: entry lane + 32 c of the step = gid lane % 8 of (tile, group) number
  // e_sub + 4 c of the step (tile (e_sub + 4 c) / kGs, group (e_sub + 4 c) % kGs of it). Scale and
  // zero words are addressed by 32-bit byte offsets from the first words of the stripe (decode_run
  // checks that the scale and zero arrays are below 2 GB).
  const int cgid = lane % 8;
  const int e_sub = lane / 8;
  const unsigned s_gbytes = static_cast<unsigned>(a.nt_count) * 32, z_gbytes = static_cast<unsigned>(a.nt_count) * 8;
  const int gsh = a.gshift - 6;  // g >= 64: tile kt lies in group kt >> gsh (channelwise: 24, so always group 0)
  const unsigned xs_sh = smem_addr(xs);

  // The copy side walks the flat step sequence (item, step) in order, depth - 1 steps ahead of the
  // compute side: `iss_*` is the next step to copy, its ring slot, and this lane's offsets in the
  // item's stripe (32-bit: fewer registers than pointers; decode_run checks the array sizes). Items
  // of a block are gridDim.y row blocks apart, so the offsets move by fixed strides. A warp whose
  // stripe lies past the last one (last row block only: items_w < items) copies nothing there and
  // computes on stale ring words into rows that are never stored.
  const int stripe0 = static_cast<int>(blockIdx.y) * a.warps_n + ws;
  const int stripe_step = static_cast<int>(gridDim.y) * a.warps_n;  // stripes from one item to the next
  const int items_w = stripe0 >= a.nt_count ? 0 : kPersist ? (a.nt_count - stripe0 + stripe_step - 1) / stripe_step : 1;
  int iss_item = 0, iss_step = 0, iss_slot = 0;
  // uint4 index of tile t0 + iss_step * kT of the stripe (this lane's 16 bytes), byte offsets of this
  // lane's scale word and zero word of the stripe (group 0; + g * s_gbytes / z_gbytes).
  unsigned iss_w = (static_cast<unsigned>(stripe0) * static_cast<unsigned>(a.kt_count) + static_cast<unsigned>(t0)) * 32u + static_cast<unsigned>(lane);
  unsigned iss_s = static_cast<unsigned>(stripe0 * 8 + cgid) * 4u;
  unsigned iss_z = static_cast<unsigned>(stripe0 * 2 + cgid / 4) * 4u;
  const uint4* const qw = pin(a.qweight);  // (the copies' "memory" clobbers otherwise reload it from the parameters per tile)
  const char* const sbase = reinterpret_cast<const char*>(a.scales);
  const char* const zbase = reinterpret_cast<const char*>(a.zeros);

  // issue_x copies step iss_step's x when x is streamed (the block's threads copy the m tokens' kT
  // tiles, 16 bytes each, zeros past K) into x slot iss_slot; issue_w copies this warp's weights
  // and the step's scale/zero words. Only the last, partial step of an item checks tiles against
  // t1. The caller commits (one cp.async group per step; an empty group past the end keeps the
  // wait count uniform) and advances the copy side.
  // A step's x is m rows of kT tiles = kT * 8 16-byte groups each: thread t copies group t % (kT * 8)
  // of tokens t / (kT * 8) + i * (256 / (kT * 8)) (recomputed per step from the thread index:
  // registers held across the loop made ptxas spill in the 9..16-token g = 32 variants).
  constexpr int kXGroups = kT * 8, kXTokens = kThreads / kXGroups;
  constexpr int kXPasses = (MB * 8 + kXTokens - 1) / kXTokens;  // token passes of a step: 2 in both variants
  static_assert(kThreads % kXGroups == 0, "whole threads per x group");
  auto issue_x = [&]() {
    if (!a.xstream || iss_item >= items) return;
    const int xg = static_cast<int>(threadIdx.x) % kXGroups, xtok0 = static_cast<int>(threadIdx.x) / kXGroups;
    const int windows = kXWin ? a.warps_k : 1;
#pragma unroll 1
    for (int w = 0; w < windows; ++w) {  // K group w's window of the step
      const unsigned xdst = xs_sh + static_cast<unsigned>(iss_slot) * x_slot_bytes + static_cast<unsigned>(w) * x_win_bytes +
                            static_cast<unsigned>(xtok0 * xrow + xg * 16);
      const int kg = (btile0 + w * a.tiles_per_warp + iss_step * kT) * 64 + xg * 8;
      const std::uint16_t* src = a.x + xtok0 * a.x_stride + min(kg, a.k - 8);  // a valid address even when zero-filled
      const unsigned bytes = kg < a.k ? 16u : 0u;
      if constexpr (MB == 2) {  // both passes unrolled (at 1..8 tokens the fp16 uint4 pair variant spilled 28 bytes so)
#pragma unroll
        for (int i = 0; i < kXPasses; ++i)
          if (xtok0 + i * kXTokens < a.m) cp_async16_zfill(xdst + static_cast<unsigned>(i * kXTokens * xrow), src + i * kXTokens * a.x_stride, bytes);
      } else {
#pragma unroll 1
        for (int t = xtok0, i = 0; t < a.m; t += kXTokens, ++i)
          cp_async16_zfill(xdst + static_cast<unsigned>(i * kXTokens * xrow), src + i * kXTokens * a.x_stride, bytes);
      }
    }
  };
  // Entry c of this lane for the step starting at tile kt0: entry group e_sub + 4 c, its first tile kt0 + first_tile(c).
  static_assert(R::kEntryCopies * 32 >= R::kStepEntries, "entry c of a lane is (entry group) e_sub + 4 c");
  auto first_tile = [&](int c) { return kG32 ? (e_sub + 4 * c) / 2 : (e_sub + 4 * c) * kShare; };
  constexpr bool kAllLanes = R::kStepEntries >= 32;  // else lanes 0..15 copy (pairs of 4 tiles)
  auto copy_entry = [&](unsigned ed, int c, int kt0) {
    if (!kAllLanes && lane >= R::kStepEntries) return;
    // g = 32: two groups per tile (the last may lie past K in the padding: clamp); g >= 64: one.
    const unsigned g = static_cast<unsigned>(kG32 ? min(2 * kt0 + e_sub + 4 * c, a.groups - 1) : (kt0 + first_tile(c)) >> gsh);
    cp_async4(ed + c * 32 * R::kEntryBytes, sbase + (iss_s + g * s_gbytes));
    if constexpr (kZeros) cp_async4(ed + c * 32 * R::kEntryBytes + 4, zbase + (iss_z + g * z_gbytes));
  };
  auto issue_w = [&]() {
    if (nsteps == 0 || iss_item >= items_w) return;
    const unsigned sbytes = static_cast<unsigned>(iss_slot) * R::kStepBytes;
    const unsigned wd = w_sh + sbytes, ed = e_copy + sbytes;
    const int kt0 = t0 + iss_step * kT;
    const uint4* const wp = qw + iss_w;  // this lane's 16 bytes of the step's first tile; tiles 512 bytes apart
    if (iss_step < nfull) {  // a full step: every tile inside the range, no checks
#pragma unroll
      for (int p = 0; p < kT; ++p) cp_async16(wd + p * 512, wp + p * 32);
#pragma unroll
      for (int c = 0; c < R::kEntryCopies; ++c) copy_entry(ed, c, kt0);
    } else {
#pragma unroll
      for (int p = 0; p < kT; ++p)
        if (kt0 + p < t1) cp_async16(wd + p * 512, wp + p * 32);
#pragma unroll
      for (int c = 0; c < R::kEntryCopies; ++c)
        if (kt0 + first_tile(c) < t1) copy_entry(ed, c, kt0);
    }
  };
  auto advance = [&]() {  // the copy side moves to the next flat step
    if (nsteps == 0) return;
    iss_slot = iss_slot == depth - 1 ? 0 : iss_slot + 1;
    iss_w += kT * 32;
    if (++iss_step == nsteps) {
      iss_step = 0;
      ++iss_item;
      if constexpr (!kPersist) return;
      iss_w += static_cast<unsigned>(stripe_step) * static_cast<unsigned>(a.kt_count) * 32u - static_cast<unsigned>(nsteps * kT * 32);
      iss_s += static_cast<unsigned>(stripe_step) * 32u;
      iss_z += static_cast<unsigned>(stripe_step) * 8u;
    }
  };

  // Programmatic dependent launch: the weights, scales and zeros are constant (prepared before the
  // previous kernel of the stream started), so the first steps' copies go out before
  // griddepcontrol.wait, overlapping the previous kernel's tail; x is read and y written only after
  // it. Streamed x: the prologue's weight copies join the group of the first step (group s holds the
  // x of step s), so waiting for all but depth - 2 groups at step s still covers its weights and x.
  if (a.xstream) {
    const int s_item = iss_item, s_step = iss_step, s_slot = iss_slot;
    const unsigned s_w = iss_w, s_s = iss_s, s_z = iss_z;
    for (int st = 0; st < depth - 1; ++st) { issue_w(); advance(); }
    pdl_wait();
    pdl_launch_dependents();
    // Rewind the copy side for the x of the same steps (x depends only on the step, not the stripe).
    iss_item = s_item; iss_step = s_step; iss_slot = s_slot; iss_w = s_w; iss_s = s_s; iss_z = s_z;
    for (int st = 0; st < depth - 1; ++st) { issue_x(); cp_async_commit(); advance(); }
  } else if (a.xvec && !a.perm) {
    // Staged by cp.async: the prologue's weights and the block's x rows form the first group (the
    // remaining prologue groups are empty), so the first step's wait covers both.
    for (int st = 0; st < depth - 1; ++st) { issue_w(); advance(); }
    pdl_wait();
    pdl_launch_dependents();
    copy_x_rows(a, xs_sh, xrow, btile0, btile1 - btile0);
    for (int st = 0; st < depth - 1; ++st) cp_async_commit();
    cp_async_wait<depth - 2>();  // group 0 (this thread's x and first weights) has landed
    __syncthreads();             // every thread's x rows are visible
  } else {
    for (int st = 0; st < depth - 1; ++st) { issue_w(); cp_async_commit(); advance(); }
    pdl_wait();
    pdl_launch_dependents();
    stage_x_rows(a, xs, xrow, btile0, btile1 - btile0);  // gathered (act-order) or 2-byte loads; weights in flight meanwhile
    __syncthreads();
  }

  // This lane's ldmatrix row: token mb * 8 + lane % 8 (clamped to the last real token: absent tokens
  // compute on real data into output columns never stored), k 8 (lane / 8) of tile t0's first half
  // (staged) or of the slot's first tile (streamed).
  unsigned xl[MB];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb) {
    const int tok = min(mb * 8 + lane % 8, a.m - 1);
    xl[mb] = pin(xs_sh + static_cast<unsigned>(tok * xrow + (a.xstream ? (kXWin ? wk * static_cast<int>(x_win_bytes) : 0) : (t0 - btile0) * 128) + (lane / 8) * 16));
  }

  // uint4b8: z = 8 for every row; uint4: each lane's byte of the zero word (rows gid, gid + 8), by zeros_of.
  const std::uint32_t zsel = zero_sel(gid);
  // kP tiles of a step: weights at ring byte offset woff (+ slot), entries at eoff, x at byte offset
  // xoff of the lane's ldmatrix rows; the partials of the first `valid` tiles scaled into acc.
  auto compute = [&](unsigned woff, unsigned eoff, unsigned xoff, int valid, float (&acc)[MB][4]) {
    uint4 wv[kP];
    float2 sc[kParts][kGs];
    std::uint32_t zlo[kParts][kGs], zhi[kParts][kGs];
    const unsigned estep = e_read + eoff;
#pragma unroll
    for (int p = 0; p < kP; ++p) wv[p] = lds128(w_sh + woff + p * 512);
#pragma unroll
    for (int j = 0; j < kParts; ++j) {  // entry group j: tile j, or tiles 2j, 2j + 1 (kPair)
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        const unsigned ea = estep + (j * kGs + h) * 8 * R::kEntryBytes;
        if constexpr (kZeros) {
          const uint2 e = lds64(ea);
          sc[j][h] = D::to_float2(e.x);  // (row gid, row gid + 8)
          D::zeros_of(e.y, zsel, zlo[j][h], zhi[j][h]);
        } else {
          sc[j][h] = D::to_float2(lds32(ea));
          zlo[j][h] = D::zlo_of(8u);
          zhi[j][h] = D::zhi_of(8u);
        }
      }
    }
    // Past `valid` (last step only) the reads land on other tokens' x or the rings: finite or not,
    // those tiles' partials are dropped, never scaled into acc (kPair: valid is even, whole pairs).
    tiles_math<D, kG32, kShare, kSplit>(wv, zlo, zhi, sc, xl, xoff, valid, acc);
  };

  const bool cluster = a.splits > 1;
  const int per_stripe = MB * 128;  // floats of one warp's partial
  const int vals = a.warps_n * per_stripe;
  for (int item = 0; item < items; ++item) {
    float acc[MB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mb][c] = 0.f;

    // One step: wait for its copies, refill the ring depth - 1 steps ahead, return the step's ring
    // slot (its byte offset) and x offset. The copy side is depth - 1 steps ahead: this step's ring
    // slot is the one after the next copy's.
    auto begin_step = [&](int step, unsigned& sbytes, unsigned& xstep) {
      const int slot_i = iss_slot == depth - 1 ? 0 : iss_slot + 1;
      cp_async_wait<depth - 2>();  // this step's group has landed (this lane's copies)
      if (a.xstream) {
        __syncthreads();  // every thread's x copies of this step are visible; all warps are done with step - 1
      } else {
        __syncwarp();     // the warp's entry copies of this step are visible to the lanes that read them
      }
      issue_x();                // refills the slots consumed in the previous step
      issue_w();
      cp_async_commit();
      advance();
      sbytes = static_cast<unsigned>(slot_i) * R::kStepBytes;
      // Byte offset of this step's x: staged, kT tiles further along the rows; streamed, its slot.
      xstep = a.xstream ? static_cast<unsigned>(slot_i) * x_slot_bytes : static_cast<unsigned>(step * kT * 128);
    };
    constexpr unsigned kHalfEntries = kParts * kGs * 8 * R::kEntryBytes;  // entry bytes of kP tiles
    for (int step = 0; step < nfull; ++step) {  // full steps: every tile inside the range, no checks
      unsigned sbytes, xstep;
      begin_step(step, sbytes, xstep);
#pragma unroll
      for (int hf = 0; hf < kH; ++hf) compute(sbytes + hf * kP * 512, sbytes + hf * kHalfEntries, xstep + hf * kP * 128, kP, acc);
    }
    if (nfull < nsteps_w) {  // the last, partial step of the item: kP-tile groups wholly past the range are skipped
      unsigned sbytes, xstep;
      begin_step(nfull, sbytes, xstep);
      const int valid = ntiles - nfull * kT;
#pragma unroll
      for (int hf = 0; hf < kH; ++hf)
        if (valid > hf * kP) compute(sbytes + hf * kP * 512, sbytes + hf * kHalfEntries, xstep + hf * kP * 128, valid - hf * kP, acc);
    }
    if constexpr (kXWin) {
      for (int step = nsteps_w; step < nsteps; ++step) {  // a shorter K group takes the block's last steps empty
        unsigned sbytes, xstep;
        begin_step(step, sbytes, xstep);
      }
    }

    // Reduction of this item, fixed order: warps along K (shared memory), then cluster ranks
    // (distributed shared memory). The ring's copies for the next item stay in flight meanwhile.
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
      *reinterpret_cast<float4*>(red + ((warp * MB + mb) * 32 + lane) * 4) = make_float4(acc[mb][0], acc[mb][1], acc[mb][2], acc[mb][3]);
    __syncthreads();
    if (a.warps_k > 1) {
      for (int i = threadIdx.x; i < vals; i += kThreads) {
        float s = red[i];  // warp index = wk * warps_n + ws, so wk = 0 holds the first warps_n slots
        for (int q = 1; q < a.warps_k; ++q) s += red[q * vals + i];
        red[i] = s;
      }
    }
    if (cluster) {
      cluster_sync();  // every rank's block sums are complete and visible
    } else {
      __syncthreads();
    }
    // Every rank reduces one slice of the outputs over all ranks, reading them in rank order (the same
    // sum on every run, whichever rank computes it); all remote loads are issued before the adds.
    const int rb = static_cast<int>(blockIdx.y) + item * static_cast<int>(gridDim.y);
    const int vals4 = vals / 4;
    const int rank = cluster ? cluster_rank() : 0;
    const int slice = (vals4 + a.splits - 1) / a.splits;
    const int i_end = min(vals4, (rank + 1) * slice);
    for (int i4 = rank * slice + threadIdx.x; i4 < i_end; i4 += kThreads) {
      float4 s;
      if (cluster) {
        float4 v[kMaxSplits];
#pragma unroll
        for (int r = 0; r < kMaxSplits; ++r)
          if (r < a.splits) v[r] = cluster_peer(red, r)[i4];
        s = v[0];
#pragma unroll
        for (int r = 1; r < kMaxSplits; ++r)
          if (r < a.splits) { s.x += v[r].x; s.y += v[r].y; s.z += v[r].z; s.w += v[r].w; }
      } else {
        s = reinterpret_cast<const float4*>(red)[i4];
      }
      store_outputs<D, MB>(a, s, i4, rb);
    }
    // Every rank's partials stay alive (and unchanged) until all ranks have read them: the next
    // item writes `red` only after this barrier.
    if (cluster) {
      cluster_sync();
    } else {
      __syncthreads();
    }
  }
  cp_async_wait<0>();
}

// The streaming kernel's instantiations (pick_variant, decode_device.cuh), up to kMaxSmem of shared memory.
template <bool kBf16, int MB, bool kZeros, bool kG32>
struct StreamingKernel {
  static KernelFn fn() {
    static const KernelFn f = smem_opt_in(decode_kernel<kBf16, MB, kZeros, kG32>, kMaxSmem);
    return f;
  }
};

template <int MB>
std::size_t ring_bytes_of(bool zeros, bool g32) {
  constexpr int kT = kStepTiles<MB>;
  const int step = zeros ? (g32 ? Ring<true, true, kT>::kStepBytes : Ring<true, false, kT>::kStepBytes)
                         : (g32 ? Ring<false, true, kT>::kStepBytes : Ring<false, false, kT>::kStepBytes);
  return static_cast<std::size_t>(kWarps) * kRingDepth<MB> * step;
}
std::size_t ring_bytes(bool zeros, bool g32, int m) { return m <= 8 ? ring_bytes_of<1>(zeros, g32) : ring_bytes_of<2>(zeros, g32); }
// (The pair variant's steps are smaller, Ring<.., true>: it runs in the per-tile variant's shared memory and plan.)

template <bool kBf16, int MB, bool kZeros>
KernelFn streaming_pair_kernel() {
  static const KernelFn f = smem_opt_in(decode_kernel<kBf16, MB, kZeros, false, true>, kMaxSmem);
  return f;
}
// The pair variants decode_tile_pairs (decode.hpp) sends here: uint4 in fp16 at 1..16 tokens (stop 33: 0.997-1.098x; bf16
// uint4 measured 0.959-1.053x, its 1..8-token instantiation spilling 8 bytes: not instantiated), uint4b8 in fp16 and bf16
// at 1..8 tokens (stop 39: 1.004-1.043x; at 9..16 tokens 0.979-1.015x, median 0.997: not instantiated).
template <bool kBf16, bool kZeros>
KernelFn streaming_xwin_kernel() {
  static const KernelFn f = smem_opt_in(decode_kernel<kBf16, 2, kZeros, false, false, true>, kMaxSmem);
  return f;
}
KernelFn streaming_pair_kernel(bool bf16, int mb, bool zeros) {
  if (zeros && !bf16) return mb == 1 ? streaming_pair_kernel<false, 1, true>() : streaming_pair_kernel<false, 2, true>();
  if (!zeros && mb == 1) return bf16 ? streaming_pair_kernel<true, 1, false>() : streaming_pair_kernel<false, 1, false>();
  fail(ErrorCode::internal, "decode pairs", "fp16 uint4, or uint4b8 at <= 8 tokens (decode_tile_pairs)",
       std::string(bf16 ? "bf16 " : "fp16 ") + (zeros ? "uint4" : "uint4b8") + " at " + std::to_string(mb * 8) + " tokens");
}

// x (m token rows of x_row_bytes: the block's K range when staged, depth slots of a step's tiles
// when streamed), rounded up to 128 bytes, + the weight rings + the reduction partials.
std::size_t smem_of(int block_tiles, int warps_k, int m, bool zeros, bool g32, bool xstream) {
  const int mb = m <= 8 ? 1 : 2;
  const std::size_t x_bytes = xstream ? x_region_bytes(ring_depth(m) * warps_k, m, step_tiles(m)) : x_region_bytes(1, m, block_tiles);
  return x_bytes + ring_bytes(zeros, g32, m) + static_cast<std::size_t>(kWarps) * mb * 512;
}

}  // namespace

namespace decode_detail {

int streaming_ring_depth(int m) { return ring_depth(m); }

std::size_t streaming_smem(int block_tiles, int warps_k, int m, bool zeros, bool g32, bool xstream) {
  return smem_of(block_tiles, warps_k, m, zeros, g32, xstream);
}

void launch_decode_streaming(const Args& a, int splits, int grid_rows, std::size_t smem, bool bf16, bool zeros, bool g32, bool pairs, bool pdl,
                             cudaStream_t stream) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(splits), static_cast<unsigned>(grid_rows), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned nattr = 0;
  if (pdl) {  // may start while the stream's previous kernel drains (the kernel's prologue fetches weights only)
    attr[nattr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[nattr++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (splits > 1) {
    attr[nattr].id = cudaLaunchAttributeClusterDimension;
    attr[nattr].val.clusterDim.x = static_cast<unsigned>(splits);
    attr[nattr].val.clusterDim.y = 1;
    attr[nattr++].val.clusterDim.z = 1;
  }
  cfg.attrs = attr;
  cfg.numAttrs = nattr;
  const int mb = a.m <= 8 ? 1 : 2;
  const bool xwin = a.xstream && a.warps_k > 1;  // decode_plan streams x with warps_k > 1 only at 9..16 tokens, g >= 64
  if (xwin && (mb != 2 || g32 || pairs)) fail(ErrorCode::internal, "decode x windows", "9..16 tokens, g >= 64, no pairs", "another variant");
  const KernelFn f = xwin ? (bf16 ? (zeros ? streaming_xwin_kernel<true, true>() : streaming_xwin_kernel<true, false>())
                                  : (zeros ? streaming_xwin_kernel<false, true>() : streaming_xwin_kernel<false, false>()))
                   : !pairs ? pick_variant<StreamingKernel>(bf16, mb, zeros, g32) : streaming_pair_kernel(bf16, mb, zeros);
  W4A16_CUDA_TRY(cudaLaunchKernelEx(&cfg, f, a));
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace decode_detail
}  // namespace w4a16::kernels::cuda
