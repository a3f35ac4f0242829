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
// registers), or - when every warp of the block shares one K range (warps_n = 8), rows are 16-byte
// aligned and there is no act-order perm - streamed per step through a block ring of the weight
// ring's depth (one barrier per step), which frees the shared memory that staging 9..16 tokens takes.
// Plan (rows/warps/splits per block, staged or streamed) from a cost model (decode_plan;
// docs/benchmarks/decode.md). Loop (SASS, fp16, uint4b8, g = 128; scripts/sass-loop): ~61 executed
// instructions per tile at 1..8 tokens with x staged, ~67 streamed (version 8; 78 / 89 with 4-tile
// steps), 392 per 4-tile step at 9..16.
// Split-K: warps of a block split K (reduced in shared memory), blocks of a cluster split K
// (each rank reduces a slice of the outputs over all ranks through distributed shared memory, in
// rank order), always in the same order: results are bitwise reproducible run to run. No
// workspace, no atomics, no allocation: CUDA-graph safe.
// Instantiated: {fp16, bf16} x {M <= 8, M <= 16} x {uint4b8, uint4} x {g == 32, g >= 64 or channelwise}.
// Small layers (one wave of blocks, <= kDecodeSmallMaxXBytes of x copied, 16-byte x rows, no perm):
// decode_plan picks the lean kernel of decode_small.cu instead (decode.hpp: the rule and the
// W4A16_DECODE_SMALL knob). At 1 token (and 2 where x is small) decode_plan picks the bulk kernel of
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
__device__ __forceinline__ uint2 lds64(unsigned smem) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(smem) : "memory");
  return v;
}
__device__ __forceinline__ std::uint32_t lds32(unsigned smem) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem) : "memory");
  return v;
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
template <bool kZeros, bool kG32, int kTiles>
struct Ring {
  static constexpr int kGs = kG32 ? 2 : 1;                             // groups per tile
  static constexpr int kEntryBytes = kZeros ? 8 : 4;                  // scale word (+ the zero word of its row pair)
  static constexpr int kStepEntries = kTiles * kGs * 8;                // (tile, group, gid) of one step: 32..128
  static constexpr int kStepEntryBytes = kStepEntries * kEntryBytes;
  static constexpr int kEntryOffset = kTiles * 512;                   // entries after the weights of a slot
  static constexpr int kStepBytes = kEntryOffset + kStepEntryBytes;   // one slot
  static constexpr int kEntryCopies = kStepEntries / 32;              // entries each lane copies per step
  static_assert(kStepEntries % 32 == 0, "whole warps copy the entries of a step");
  static_assert(kStepBytes % 16 == 0, "16-byte copies into every slot");
};
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

template <bool kBf16, int MB, bool kZeros, bool kG32>
__global__ void __launch_bounds__(kThreads, kMinBlocks<MB, kZeros>) decode_kernel(const Args a) {
  using D = Dt<kBf16>;
  constexpr int kT = kStepTiles<MB>, kP = kComputeTiles, kH = kT / kP;  // tiles per step, computed together, halves
  using R = Ring<kZeros, kG32, kT>;
  constexpr int kGs = R::kGs;
  constexpr int depth = kRingDepth<MB>;
  static_assert(kT % kP == 0, "a step is whole compute groups");
  extern __shared__ uint4 smem_v4[];
  // x rows (decode_device.cuh: row-major, ldmatrix): staged, the block's K range (m rows of
  // block_tiles tiles); streamed, depth slots of m rows of kT tiles. Then the weight rings, then
  // the reduction partials.
  unsigned char* xs = reinterpret_cast<unsigned char*>(smem_v4);
  const int xrow = x_row_bytes(a.xstream ? kT : a.block_tiles);
  const unsigned x_slot_bytes = static_cast<unsigned>(a.m * xrow);
  unsigned char* rings = xs + (a.xstream ? depth : 1) * x_slot_bytes;
  float* red = reinterpret_cast<float*>(rings + kWarps * depth * R::kStepBytes);  // (8 warps, MB, 32, 4) partials

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4;
  const int ws = warp % a.warps_n, wk = warp / a.warps_n;
  const int btile0 = blockIdx.x * a.block_tiles;                   // block's first k tile
  const int btile1 = min(btile0 + a.block_tiles, a.kt_count);
  const int t0 = btile0 + wk * a.tiles_per_warp;
  const int t1 = min(t0 + a.tiles_per_warp, btile1);
  const int ntiles = max(t1 - t0, 0);
  const int nfull = ntiles / kT, nsteps = (ntiles + kT - 1) / kT;  // steps of kT tiles; the last may be partial
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
  static_assert(kThreads % kXGroups == 0, "whole threads per x group");
  auto issue_x = [&]() {
    if (!a.xstream || iss_item >= items) return;
    const int xg = static_cast<int>(threadIdx.x) % kXGroups, xtok0 = static_cast<int>(threadIdx.x) / kXGroups;
    const unsigned xdst = xs_sh + static_cast<unsigned>(iss_slot) * x_slot_bytes + static_cast<unsigned>(xtok0 * xrow + xg * 16);
    const int kg = (btile0 + iss_step * kT) * 64 + xg * 8;
    const std::uint16_t* src = a.x + xtok0 * a.x_stride + min(kg, a.k - 8);  // a valid address even when zero-filled
    const unsigned bytes = kg < a.k ? 16u : 0u;
#pragma unroll 1
    for (int t = xtok0, i = 0; t < a.m; t += kXTokens, ++i)
      cp_async16_zfill(xdst + static_cast<unsigned>(i * kXTokens * xrow), src + i * kXTokens * a.x_stride, bytes);
  };
  // Entry c of this lane for the step starting at tile kt0 (its tile kt0 + (e_sub + 4 c) / kGs).
  static_assert(R::kEntryCopies * 4 == kT * kGs, "entry c of a lane is (tile, group) e_sub + 4 c");
  auto copy_entry = [&](unsigned ed, int c, int kt0) {
    // g = 32: two groups per tile (the last may lie past K in the padding: clamp); g >= 64: one.
    const unsigned g = static_cast<unsigned>(kG32 ? min(2 * kt0 + e_sub + 4 * c, a.groups - 1) : (kt0 + e_sub + 4 * c) >> gsh);
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
        if (kt0 + (e_sub + 4 * c) / kGs < t1) copy_entry(ed, c, kt0);
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
    xl[mb] = pin(xs_sh + static_cast<unsigned>(tok * xrow + (a.xstream ? 0 : (t0 - btile0) * 128) + (lane / 8) * 16));
  }

  // uint4b8: z = 8 for every row; uint4: each lane's byte of the zero word (rows gid, gid + 8).
  const unsigned zshift = 8 * (gid % 4);
  // kP tiles of a step: weights at ring byte offset woff (+ slot), entries at eoff, x at byte offset
  // xoff of the lane's ldmatrix rows; the partials of the first `valid` tiles scaled into acc.
  auto compute = [&](unsigned woff, unsigned eoff, unsigned xoff, int valid, float (&acc)[MB][4]) {
    uint4 wv[kP];
    float2 sc[kP][kGs];
    std::uint32_t zlo[kP][kGs], zhi[kP][kGs];
    const unsigned estep = e_read + eoff;
#pragma unroll
    for (int p = 0; p < kP; ++p) {
      wv[p] = lds128(w_sh + woff + p * 512);
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        const unsigned ea = estep + (p * kGs + h) * 8 * R::kEntryBytes;
        if constexpr (kZeros) {
          const uint2 e = lds64(ea);
          sc[p][h] = D::to_float2(e.x);  // (row gid, row gid + 8)
          const std::uint32_t z = e.y >> zshift;
          zlo[p][h] = D::zlo_of(z & 15u);
          zhi[p][h] = D::zhi_of((z >> 4) & 15u);
        } else {
          sc[p][h] = D::to_float2(lds32(ea));
          zlo[p][h] = D::zlo_of(8u);
          zhi[p][h] = D::zhi_of(8u);
        }
      }
    }
    // Past `valid` (last step only) the reads land on other tokens' x or the rings: finite or not,
    // those tiles' partials are dropped, never scaled into acc.
    tiles_math<D, kG32>(wv, zlo, zhi, sc, xl, xoff, valid, acc);
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
    constexpr unsigned kHalfEntries = kP * kGs * 8 * R::kEntryBytes;  // entry bytes of kP tiles
    for (int step = 0; step < nfull; ++step) {  // full steps: every tile inside the range, no checks
      unsigned sbytes, xstep;
      begin_step(step, sbytes, xstep);
#pragma unroll
      for (int hf = 0; hf < kH; ++hf) compute(sbytes + hf * kP * 512, sbytes + hf * kHalfEntries, xstep + hf * kP * 128, kP, acc);
    }
    if (nfull < nsteps) {  // the last, partial step of the item: kP-tile groups wholly past the range are skipped
      unsigned sbytes, xstep;
      begin_step(nfull, sbytes, xstep);
      const int valid = ntiles - nfull * kT;
#pragma unroll
      for (int hf = 0; hf < kH; ++hf)
        if (valid > hf * kP) compute(sbytes + hf * kP * 512, sbytes + hf * kHalfEntries, xstep + hf * kP * 128, valid - hf * kP, acc);
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
      cg::this_cluster().sync();  // every rank's block sums are complete and visible
    } else {
      __syncthreads();
    }
    // Every rank reduces one slice of the outputs over all ranks, reading them in rank order (the same
    // sum on every run, whichever rank computes it); all remote loads are issued before the adds.
    const int rb = static_cast<int>(blockIdx.y) + item * static_cast<int>(gridDim.y);
    const int vals4 = vals / 4;
    const int rank = cluster ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
    const int slice = (vals4 + a.splits - 1) / a.splits;
    const int i_end = min(vals4, (rank + 1) * slice);
    for (int i4 = rank * slice + threadIdx.x; i4 < i_end; i4 += kThreads) {
      float4 s;
      if (cluster) {
        float4 v[kMaxSplits];
#pragma unroll
        for (int r = 0; r < kMaxSplits; ++r)
          if (r < a.splits) v[r] = reinterpret_cast<const float4*>(cg::this_cluster().map_shared_rank(red, r))[i4];
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
      cg::this_cluster().sync();
    } else {
      __syncthreads();
    }
  }
  cp_async_wait<0>();
}

int ilog2(int v) { int r = 0; while ((1 << (r + 1)) <= v) ++r; return r; }

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

// x (m token rows of x_row_bytes: the block's K range when staged, depth slots of a step's tiles
// when streamed) + the weight rings + the reduction partials.
std::size_t smem_for(int block_tiles, int m, bool zeros, bool g32, bool xstream) {
  const int mb = m <= 8 ? 1 : 2;
  const std::size_t x_bytes = xstream ? static_cast<std::size_t>(ring_depth(m)) * m * x_row_bytes(step_tiles(m))
                                      : static_cast<std::size_t>(m) * x_row_bytes(block_tiles);
  return x_bytes + ring_bytes(zeros, g32, m) + static_cast<std::size_t>(kWarps) * mb * 512;
}

// W4A16_DECODE_XSTREAM: "0" never streams x, "1" streams it in every plan that can (exploration).
int xstream_override() {
  const char* env = std::getenv("W4A16_DECODE_XSTREAM");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_XSTREAM", "0 or 1", env);
  return *env - '0';
}

// W4A16_DECODE_PDL: "0" launches without programmatic dependent launch (A/B measurement), "1" or
// unset with it.
bool pdl_enabled() {
  const char* env = std::getenv("W4A16_DECODE_PDL");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_PDL", "0 or 1", env);
  return *env == '1';
}

int cached_sm_count() {
  static const int n = device_sm_count();
  return n;
}

DecodePlan make_plan(std::int64_t nt, std::int64_t kt, int wn, int splits_wanted, int m, bool zeros, bool g32, bool xstream = false) {
  DecodePlan p;
  p.xstream = xstream && wn == kWarps;  // streaming needs every warp of a block on the same K range
  p.warps_n = wn;
  p.warps_k = kWarps / wn;
  const std::int64_t per_split = (kt + splits_wanted - 1) / splits_wanted;
  p.tiles_per_warp = static_cast<int>((per_split + p.warps_k - 1) / p.warps_k);
  const std::int64_t block_tiles = static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k;
  p.splits = static_cast<int>((kt + block_tiles - 1) / block_tiles);  // no empty ranks
  p.row_blocks = static_cast<int>((nt + wn - 1) / wn);
  p.grid_rows = p.row_blocks;
  p.depth = ring_depth(m);
  p.smem_bytes = smem_for(static_cast<int>(block_tiles), m, zeros, g32, p.xstream);
  return p;
}

// Blocks of this plan resident per SM: 2 by registers (kMinBlocks), fewer when shared memory runs out.
int blocks_per_sm(const DecodePlan& p) {
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(2, (227 * 1024) / (p.smem_bytes + 1024))));
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
void make_persistent(DecodePlan& p, int sms, int m_chunk) {
  if (m_chunk > 8) return;
  const int resident_rows = std::max(1, sms * blocks_per_sm(p) / p.splits);
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

double plan_cost(const DecodePlan& p, int sms, int m_chunk) {
  constexpr CostConstants c;
  const double cyc_scale = m_chunk > 8 ? c.cs : 1.0;
  const std::int64_t bps = blocks_per_sm(p);
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
// W4A16_DECODE_SMALL_T: the smallest tile bucket the small plan may take (2, 4, 8 or 16; default 2).
int small_min_tiles() {
  const char* env = std::getenv("W4A16_DECODE_SMALL_T");
  if (!env || !*env) return kSmallTiles[0];
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
    {28672, 4096, 1, 1, 8, 1, true},   // llama8b.gate_up M = 1: 20.61 -> 18.82
    {28672, 4096, 3, 4, 8, 1, true},   //             M = 4: 21.20 -> 19.92
    {4096, 14336, 3, 4, 4, 2, false},  // llama8b.down M = 4: 15.60 -> 12.85
    {4096, 14336, 5, 8, 4, 2, false},  //             M = 8: 16.71 -> 13.53
    {8192, 8192, 6, 8, 8, 2, false},   // 8192x8192   M = 8: 14.57 -> 13.64 (M = 5 measured slower: 14.7 -> 16.2)
    // 9..16 tokens (the 4-tile-step kernel), forced-plan sweep of 06:52 UTC at M = 10 / 12 / 14 / 16
    // (scripts/decode-plan-sweep, session_2026-12-03_morning/call3_decode_plans_9to16.csv):
    {6144, 4096, 9, 16, 8, 4, true},     // llama8b.qkv M = 10..16: 9.93-10.30 -> 8.94-9.00
    {4096, 14336, 9, 10, 4, 2, false},   // llama8b.down M = 10: 22.06 -> 16.43 (staged x fits up to 10 tokens)
    {4096, 14336, 11, 16, 8, 8, true},   //              M = 12..16: 22.14-22.60 -> 20.61-21.05
    {57344, 8192, 9, 16, 8, 2, true},    // llama70b.gate_up M = 10..16: 95.0-103.7 -> 89.1-95.2
};
constexpr int kMeasuredPlanSms = 132;

bool measured_plans_enabled() {
  const char* env = std::getenv("W4A16_DECODE_TABLE");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_TABLE", "0 or 1", env);
  return *env == '1';
}

const MeasuredPlan* measured_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok, int sms) {
  if (zeros || group_size != 128 || sms != kMeasuredPlanSms || !measured_plans_enabled()) return nullptr;
  for (const MeasuredPlan& e : kMeasuredPlans)
    if (e.n == n && e.k == k && m_chunk >= e.m_lo && m_chunk <= e.m_hi && (xstream_ok || !e.xstream)) return &e;
  return nullptr;
}

// W4A16_DECODE_BULK: "0" never takes the bulk kernel, "1" wherever its plan fits (first of all
// kernels: before the small-layer rule), unset: where bulk_by_default says (after a forced
// W4A16_DECODE_SMALL=1). Returns -1 (unset), 0 or 1.
// The default from two A/Bs on the H200 (2026-12-04, docs/benchmarks/decode.md version 12; every row
// against f64): the forced-plan sweep (8 PERF.md shapes x 1..16 tokens, fp16 uint4b8) put the bulk
// kernel ahead at 1 token everywhere, mostly at 2, mixed at 4 and 8 (0.84-1.16x), behind at 16; the
// default against W4A16_DECODE_BULK=0 on all 10 PERF.md shapes x fp16 / bf16 x uint4b8 / uint4 (call 4):
// 1 token 1.02-1.29x on all 40 rows, 2 tokens 1.00-1.28x except where x of 2 tokens is 32 KB or more
// (8192x8192, llama8b.down in bf16 or uint4: 0.95-0.98x). So: 1 token, or 2 tokens whose x rows
// take at most kBulkAutoXBytes.
constexpr std::int64_t kBulkAutoXBytes = 20 * 1024;
bool bulk_by_default(int m_chunk, std::int64_t k) { return m_chunk == 1 || (m_chunk == 2 && 2 * k * 2 <= kBulkAutoXBytes); }
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

// The bulk plan of warps_n stripes per item at b blocks per SM, or bulk_stages = 0 where two stages
// do not fit beside the staged x. Stages: as many as the busiest block streams in all (its rounds of
// items), at least 2, at most what fits: a ring larger than the block's whole share only keeps the
// next call's blocks (programmatic dependent launch) from becoming resident beside it. Measured
// (2026-12-04, call 3): llama8b.o M = 1 on 128 blocks of one per SM, 5 stages 4.27 us against 12
// stages 4.85; 8192x8192, whose share is 16 stages, 12 stages 10.68 against 5 stages 12.65.
DecodePlan make_bulk_plan(std::int64_t nt, std::int64_t kt, int m, bool zeros, bool g32, int wn, int b, int sms) {
  DecodePlan p;
  p.depth = 0;
  if (b > (m <= 8 ? kBulkMinBlocks<1> : kBulkMinBlocks<2>)) return p;  // the register cap allows fewer
  const std::size_t fixed = bulk_smem(m, static_cast<int>(kt), zeros, g32, 0);
  const std::size_t budget = bulk_budget(b);
  if (fixed + 2 * bulk_stage_bytes(zeros, g32) > budget) return p;
  p.bulk_blocks_per_sm = b;
  p.warps_n = wn;
  p.warps_k = kWarps / wn;
  p.splits = 1;
  p.tiles_per_warp = static_cast<int>((kt + p.warps_k - 1) / p.warps_k);
  p.row_blocks = static_cast<int>((nt + wn - 1) / wn);
  p.grid_rows = static_cast<int>(std::min<std::int64_t>(p.row_blocks, static_cast<std::int64_t>(sms) * b));
  const std::int64_t span = static_cast<std::int64_t>(p.warps_k) * kBulkTiles;
  const std::int64_t rounds = (p.row_blocks + p.grid_rows - 1) / p.grid_rows;
  const std::int64_t share = rounds * ((kt + span - 1) / span);  // stages the busiest block streams
  const std::int64_t fit = std::min<std::int64_t>(kBulkMaxStages, static_cast<std::int64_t>((budget - fixed) / bulk_stage_bytes(zeros, g32)));
  p.bulk_stages = static_cast<int>(std::min(fit, std::max<std::int64_t>(2, share)));
  p.smem_bytes = bulk_smem(m, static_cast<int>(kt), zeros, g32, p.bulk_stages);
  return p;
}

// Cost of a bulk plan in tiles: those the busiest SM streams (its blocks x rounds of items x the
// item's tiles, padded to whole stages) plus kItemTiles per round of items (the reduction, the store,
// the barrier of a stripe's warps), scaled by 64 KB / the bytes the ring keeps in flight per SM where
// the ring is shorter than the block's share and holds less than 64 KB. The constants: a grid search
// over the forced-plan sweeps of 2026-12-04 (every plan on 8 PERF.md shapes x 1..16 tokens; calls 2
// and 3, docs/benchmarks/decode.md version 12). Ties go to one block per SM (decode_bulk_plan_for_sms
// tries it first).
double bulk_cost(const DecodePlan& p, std::int64_t kt, int sms) {
  constexpr double kItemTiles = 48, kInflight = 64 * 1024;
  const std::int64_t span = static_cast<std::int64_t>(p.warps_k) * kBulkTiles;
  const std::int64_t item_tiles = (kt + span - 1) / span * span * p.warps_n;
  const std::int64_t rounds = (p.row_blocks + p.grid_rows - 1) / p.grid_rows;
  const std::int64_t per_sm = std::min<std::int64_t>(p.bulk_blocks_per_sm, (p.grid_rows + sms - 1) / sms);
  const double inflight = static_cast<double>(per_sm * (p.bulk_stages - 1)) * kBulkTiles * kWarps * 512;
  const double tiles = static_cast<double>(per_sm * rounds * item_tiles) + kItemTiles * static_cast<double>(rounds);
  const bool short_ring = p.bulk_stages < rounds * ((kt + span - 1) / span);
  return short_ring && inflight < kInflight ? tiles * kInflight / inflight : tiles;
}

}  // namespace

DecodePlan decode_bulk_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, int sms) {
  if (sms < 1) fail(ErrorCode::invalid_argument, "sms", ">= 1", std::to_string(sms));
  if (m_chunk < 1 || m_chunk > 16) fail(ErrorCode::invalid_argument, "m_chunk", "1..16", std::to_string(m_chunk));
  const bool g32 = group_size == 32;
  const std::int64_t nt = (n + kTcPadN - 1) / kTcPadN * (kTcPadN / kTcTileN);
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  if (const char* env = std::getenv("W4A16_DECODE_BULK_PLAN"); env && *env) {
    int wn = 0, b = 0, used = 0;
    if (std::sscanf(env, "%d,%d%n", &wn, &b, &used) != 2 || env[used] != '\0' || (wn != 1 && wn != 2 && wn != 4 && wn != 8) || (b != 1 && b != 2))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_BULK_PLAN", "\"warps_n,blocks_per_sm\" with warps_n in {1,2,4,8}, blocks_per_sm 1 or 2", env);
    // Where the forced plan does not fit (two blocks per SM at 9..16 tokens, x too large), the
    // automatic choice below (sweeps force one plan over many shapes; describe() tells what ran).
    const DecodePlan p = make_bulk_plan(nt, kt, m_chunk, zeros, g32, wn, b, sms);
    if (p.bulk_stages > 0) return p;
  }
  DecodePlan best;
  double best_cost = 1e30;
  for (int b : {1, 2})
    for (int wn : {8, 4, 2, 1}) {
      const DecodePlan p = make_bulk_plan(nt, kt, m_chunk, zeros, g32, wn, b, sms);
      if (p.bulk_stages == 0) continue;
      const double cost = bulk_cost(p, kt, sms);
      if (cost < best_cost - 1e-9) { best_cost = cost; best = p; }
    }
  return best;
}

std::string DecodePlan::describe() const {
  if (bulk_stages > 0)
    return "bulk warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) + " row_blocks=" + std::to_string(row_blocks) +
           " grid=" + std::to_string(grid_rows) + " blocks_per_sm=" + std::to_string(bulk_blocks_per_sm) + " stages=" +
           std::to_string(bulk_stages) + " smem=" + std::to_string(smem_bytes);
  if (small_tiles > 0)
    return "small T=" + std::to_string(small_tiles) + " warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) +
           " tiles_per_warp=" + std::to_string(tiles_per_warp) + " row_blocks=" + std::to_string(row_blocks) +
           " smem=" + std::to_string(smem_bytes);
  return "warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) + " splits=" + std::to_string(splits) +
         " tiles_per_warp=" + std::to_string(tiles_per_warp) + " row_blocks=" + std::to_string(row_blocks) +
         (grid_rows != row_blocks ? " grid_rows=" + std::to_string(grid_rows) : std::string()) + " depth=" + std::to_string(depth) +
         " smem=" + std::to_string(smem_bytes) + (xstream ? " xstream" : "");
}

DecodePlan decode_small_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, int sms, int min_tiles) {
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
    if (p.smem_bytes > kMaxSmem) continue;
    const int by_smem = static_cast<int>((227 * 1024) / (p.smem_bytes + 1024));  // 1 KB per block reserved by the runtime
    const int resident = std::min({small_min_blocks(t), by_smem, 2048 / kThreads});
    if (p.row_blocks <= static_cast<std::int64_t>(sms) * resident) return p;
  }
  DecodePlan none;
  none.row_blocks = none.grid_rows = 0;
  return none;
}

DecodePlan decode_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok) {
  return decode_plan_for_sms(n, k, m_chunk, zeros, group_size, xstream_ok, cached_sm_count());
}

DecodePlan decode_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok, int sms) {
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
        (depth != 0 && depth != ring_depth(m_chunk)))
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN",
           "\"warps_n,splits[,xstream[,depth]]\" with warps_n in {1,2,4,8}, splits 1..8, xstream 0/1 (honoured at warps_n = 8 where x "
           "allows), depth 0 or the fixed ring depth (2 at 1..8 tokens, 3 at 9..16)",
           env);
    DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32, xsm == 1 && xstream_ok);
    if (p.smem_bytes > kMaxSmem) fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN", "a plan within 200 KB of shared memory", env);
    if (persist) make_persistent(p, sms, m_chunk);
    return p;
  }
  // The bulk kernel (decode_bulk.cu) where its plan fits: first when forced on; by default where
  // bulk_by_default says, unless the small-layer kernel is forced on.
  const int so = small_override();
  if (bo == 1 || (bo == -1 && so != 1 && bulk_by_default(m_chunk, k))) {
    const DecodePlan bp = decode_bulk_plan_for_sms(n, k, m_chunk, zeros, group_size, sms);
    if (bp.bulk_stages > 0) return bp;
  }
  // The small-layer kernel where its plan fits one wave (decode.hpp: the rule and its knobs).
  if (so != 0 && rows16) {
    const DecodePlan sp = decode_small_plan_for_sms(n, k, m_chunk, sms, small_min_tiles());
    const std::int64_t x_bytes = static_cast<std::int64_t>(sp.row_blocks) * m_chunk * k * 2;  // x rows the blocks copy
    if (sp.row_blocks > 0 && (so == 1 || x_bytes <= kDecodeSmallMaxXBytes)) return sp;
  }
  // A plan measured faster than the model's on this layer (kMeasuredPlans), built like a forced one.
  // (Not while W4A16_DECODE_XSTREAM=1 forces streaming for exploration.)
  if (const MeasuredPlan* e = xo == 1 ? nullptr : measured_plan(n, k, m_chunk, zeros, group_size, xstream_ok, sms)) {
    DecodePlan p = make_plan(nt, kt, e->warps_n, e->splits, m_chunk, zeros, g32, e->xstream);
    if (p.smem_bytes <= kMaxSmem && p.splits == e->splits && p.xstream == e->xstream) {
      if (persist) make_persistent(p, sms, m_chunk);
      return p;
    }
  }
  DecodePlan best;
  double best_cost = 1e30;
  for (int wn : {8, 4, 2, 1}) {
    // Splits 1, 2, 4, 8: the set the cost model was fitted on (3, 5..7 never measured).
    for (int s = 1; s <= kMaxSplits; s *= 2) for (int xsm = 0; xsm <= (xstream_ok && wn == kWarps ? 1 : 0); ++xsm) {
      if (xo == 1 && xstream_ok && xsm == 0) continue;  // forced streaming: only streamed plans
      DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32, xsm == 1);
      if (p.smem_bytes > kMaxSmem || p.splits != s) continue;
      const double cost = plan_cost(p, sms, m_chunk);
      if (cost < best_cost - 1e-9) { best_cost = cost; best = p; }
    }
  }
  // Each block stages its K range of x in shared memory next to the weight rings: 8 cluster ranks
  // x 200 KB bound K (decode.hpp lists the bounds per variant).
  if (best.row_blocks == 0)
    fail(ErrorCode::unsupported, "weights",
         "K whose x chunk (K/8 per block, 128 B per 64 k per token) fits 200 KB of shared memory beside the weight ring",
         "K=" + std::to_string(k) + " M-chunk=" + std::to_string(m_chunk) + (zeros ? " uint4" : " uint4b8") + " g=" +
             std::to_string(group_size));
  if (persist) make_persistent(best, sms, m_chunk);
  // Persistent at 1..2 tokens (more row blocks than resident ones: only llama70b.gate_up-sized layers
  // among the PERF.md shapes): 2-stripe row blocks instead of the cost model's 8. Measured on the H200
  // (2026-12-02 late, docs/benchmarks/decode.md version 7, one device call, fp16 uint4b8):
  // llama70b.gate_up M = 1 76.7 -> 69.8 us, M = 2 70.4 -> 67.5 (8,1 against 2,1; 4,1 75.7 / 72.0):
  // 1792 items over 264 resident blocks balance to 6.8 of 7 per block, 448 items to 1.7 of 2. The
  // cost model (no term for that balance) cannot be refitted to it without losing elsewhere.
  if (persist && m_chunk <= 2 && best.grid_rows < best.row_blocks && best.warps_n == kWarps && !best.xstream) {
    DecodePlan p = make_plan(nt, kt, 2, best.splits, m_chunk, zeros, g32);
    if (p.smem_bytes <= kMaxSmem && p.splits == best.splits) {
      make_persistent(p, sms, m_chunk);
      best = p;
    }
  }
  return best;
}

bool decode_fits(std::int64_t k, int m_chunk, bool zeros, int group_size) {
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  for (int wn : {8, 4, 2, 1})
    for (int s = 1; s <= kMaxSplits; ++s) {
      const DecodePlan p = make_plan(1, kt, wn, s, m_chunk, zeros, group_size == 32);
      if (p.smem_bytes <= kMaxSmem && p.splits == s) return true;  // decode_plan's own acceptance test
    }
  return false;
}

std::size_t decode_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m) {
  return 0;
}

void decode_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (w.layout == nullptr || std::strcmp(w.layout, kTcLayoutTag) != 0)
    fail(ErrorCode::layout_mismatch, "weights", std::string("layout ") + kTcLayoutTag, w.layout ? w.layout : "null");
  if (!is_activation_dtype(w.act_dtype))
    fail(ErrorCode::dtype_mismatch, "weights.act_dtype", "float16 or bfloat16", std::string(dtype_name(w.act_dtype)));
  if (m < 0) fail(ErrorCode::invalid_argument, "m", ">= 0", std::to_string(m));
  if (w.n <= 0 || w.k <= 0 || w.k % 8 != 0 || w.n_pad % kTcPadN != 0 || w.k_pad % kTcPadK != 0 || w.n_pad < w.n || w.k_pad < w.k)
    fail(ErrorCode::invalid_argument, "weights", "a prepared cuda.tc16x64.v1 layer (K % 8 == 0, padded to 64)",
         "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k));
  if (w.n > (1 << 30) || w.k > (1 << 30)) fail(ErrorCode::unsupported, "weights", "N, K <= 2^30", "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k));
  if (!w.qweight || !w.scales) fail(ErrorCode::invalid_argument, "weights", "device qweight and scales", "null");
  if ((w.scalar == ScalarType::uint4) != (w.zeros != nullptr))
    fail(ErrorCode::invalid_argument, "weights.zeros", w.scalar == ScalarType::uint4 ? "zeros for uint4" : "none for uint4b8",
         w.zeros ? "present" : "absent");
  if (w.act_order != (w.perm != nullptr)) fail(ErrorCode::invalid_argument, "weights.perm", "perm iff act_order", w.perm ? "present" : "absent");
  if (w.has_bias != (w.bias != nullptr)) fail(ErrorCode::invalid_argument, "weights.bias", "bias iff has_bias", w.bias ? "present" : "absent");
  const std::int64_t glen = w.group_len();
  if (!is_supported_group_size(w.group_size) || w.k % glen != 0 || w.groups != w.k / glen)
    fail(ErrorCode::invalid_argument, "weights.group_size", "32, 64, 128, 256 or channelwise dividing K", std::to_string(w.group_size));
  // The kernel addresses scale and zero words by 32-bit byte offsets.
  if (static_cast<std::uint64_t>(w.groups) * static_cast<std::uint64_t>(w.n_pad) * 2 >= (std::uint64_t{1} << 31))
    fail(ErrorCode::unsupported, "weights.scales", "below 2 GiB (groups x N_pad x 2 bytes)",
         std::to_string(w.groups) + " x " + std::to_string(w.n_pad) + " x 2 bytes");
  // ... and weight tiles by 32-bit indices of 16-byte lanes.
  if (static_cast<std::uint64_t>(w.n_pad / kTcTileN) * static_cast<std::uint64_t>(w.k_pad / kTcTileK) * 32 >= (std::uint64_t{1} << 32))
    fail(ErrorCode::unsupported, "weights.qweight", "below 64 GiB (N_pad/16 x K_pad/64 x 512 bytes)",
         "N_pad=" + std::to_string(w.n_pad) + " K_pad=" + std::to_string(w.k_pad));
  if (x_stride < w.k) fail(ErrorCode::invalid_argument, "x_stride", ">= K = " + std::to_string(w.k), std::to_string(x_stride));
  if (y_stride < w.n) fail(ErrorCode::invalid_argument, "y_stride", ">= N = " + std::to_string(w.n), std::to_string(y_stride));
  if (m == 0) return;
  if (!x) fail(ErrorCode::invalid_argument, "x", "a device pointer", "null");
  if (!y) fail(ErrorCode::invalid_argument, "y", "a device pointer", "null");
  check_aligned(x, 2, "x");
  check_aligned(y, 2, "y");

  Args a{};
  a.qweight = reinterpret_cast<const uint4*>(w.qweight);
  a.scales = static_cast<const std::uint32_t*>(w.scales);
  a.zeros = w.zeros;
  a.bias = static_cast<const std::uint16_t*>(w.bias);
  a.perm = w.perm;
  a.x_stride = x_stride;
  a.y_stride = y_stride;
  a.n = static_cast<int>(w.n);
  a.k = static_cast<int>(w.k);
  a.nt_count = static_cast<int>(w.n_pad / kTcTileN);
  a.kt_count = static_cast<int>(w.k_pad / kTcTileK);
  a.groups = static_cast<int>(w.groups);
  a.gshift = w.group_size == kChannelwise ? 30 : ilog2(w.group_size);
  a.xvec = (reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && x_stride % 8 == 0) ? 1 : 0;
  // Streaming x copies 4-byte words in layout order: contiguous 16-byte rows, no gather.
  const bool rows16 = a.xvec && !w.perm;  // what decode_plan calls xstream_ok (it applies W4A16_DECODE_XSTREAM itself)
  const bool xstream_ok = rows16 && xstream_override() != 0;
  const bool bf16 = w.act_dtype == DType::bf16, zeros = w.zeros != nullptr, g32 = w.group_size == 32;
  const bool pdl = pdl_enabled();

  // Tokens per launch: 16, halved while the x chunk of this K does not fit in shared memory
  // (a smaller chunk stages fewer tokens; decode_plan throws if even one does not fit).
  std::int64_t chunk = 16;  // streamed x fits any K at 16 tokens
  while (!xstream_ok && chunk > 1 && !decode_fits(w.k, static_cast<int>(std::min(chunk, std::max<std::int64_t>(m, 1))), zeros, w.group_size))
    chunk /= 2;
  for (std::int64_t m0 = 0; m0 < m; m0 += chunk) {
    const int mc = static_cast<int>(std::min<std::int64_t>(chunk, m - m0));
    const int mb = mc <= 8 ? 1 : 2;
    const DecodePlan p = decode_plan(w.n, w.k, mc, zeros, w.group_size, rows16);
    a.x = static_cast<const std::uint16_t*>(x) + m0 * x_stride;
    a.y = static_cast<std::uint16_t*>(y) + m0 * y_stride;
    a.m = mc;
    a.warps_n = p.warps_n;
    a.warps_k = p.warps_k;
    a.tiles_per_warp = p.tiles_per_warp;
    a.block_tiles = p.tiles_per_warp * p.warps_k;
    a.splits = p.splits;
    a.row_blocks = p.row_blocks;
    a.xstream = p.xstream ? 1 : 0;
    if (p.bulk_stages > 0) {  // persistent blocks with a bulk-copy ring (decode_bulk.cu)
      a.stages = p.bulk_stages;
      a.block_tiles = a.kt_count;
      launch_decode_bulk(a, p.grid_rows, p.smem_bytes, bf16, zeros, g32, pdl, stream);
      continue;
    }
    if (p.small_tiles > 0) {  // one wave, all of K per block (decode_small.cu)
      launch_decode_small(a, p.small_tiles, p.smem_bytes, bf16, zeros, g32, pdl, stream);
      continue;
    }

    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(p.splits), static_cast<unsigned>(p.grid_rows), 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = p.smem_bytes;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    unsigned nattr = 0;
    if (pdl) {  // may start while the stream's previous kernel drains (the kernel's prologue fetches weights only)
      attr[nattr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[nattr++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (p.splits > 1) {
      attr[nattr].id = cudaLaunchAttributeClusterDimension;
      attr[nattr].val.clusterDim.x = static_cast<unsigned>(p.splits);
      attr[nattr].val.clusterDim.y = 1;
      attr[nattr++].val.clusterDim.z = 1;
    }
    cfg.attrs = attr;
    cfg.numAttrs = nattr;
    W4A16_CUDA_TRY(cudaLaunchKernelEx(&cfg, pick_variant<StreamingKernel>(bf16, mb, zeros, g32), a));
    W4A16_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace w4a16::kernels::cuda
