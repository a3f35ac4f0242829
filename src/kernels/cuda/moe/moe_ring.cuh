// Persistent ring kernel for the aligned block-8 MoE decode path and the direct path (block 1)
// (the default; W4A16_MOE_RING=0 runs moe_decode_kernel instead: fused_moe_launch.cuh).
//
// Contract: as moe_decode_kernel in aligned mode (fused_moe.cuh: GemmParams, slots, GEMM 1 / 2),
// plus x / h rows 16-byte aligned (in_vec16) and T*k*max(H, I) < 2^31 (32-bit offsets); the host
// (launch_ring in fused_moe_launch.cuh) falls back to moe_decode_kernel otherwise.
// Direct mode (ring_direct, block 1: no alignment launch): slot block b is slot b alone (column 0,
// columns 1..7 padding), expert topk_ids[b], T*k slot blocks.
// Work: item i = (slot block b = i / R, row block r = i % R), R row blocks per slot block:
//   GEMM 1  R = I / 64: warps 0..3 the gate tiles 4r + w, warps 4..7 the matching up tiles
//           I/16 + 4r + w - 4; the up accumulators go through shared memory to the gate warps,
//           which store h = silu(gate) * up (act dtype).
//   GEMM 2  R = ceil(H / 128): warp w the output tile 8r + w (past H: computes, never stores), fp32 y.
// A warp owns one 16-row stripe and the whole K of its item: no split-K, every output is one
// warp's fixed-order sum (deterministic, no atomics).
// Folded GEMM 2 (ring_fold: the direct path, 4 <= top_k <= 8): item = (token t, stripe r), R = H / 16; warp j < top_k
// streams slot t k + j's expert's stripe r against the x rows of the token's k slots (h rows t k .. t k + k - 1) and
// keeps its own column; the block sums the k columns with the routing weights in slot order and stores out[t]
// (act dtype): no y rows, no reduce launch. The same per-warp sums as the unfolded kernel (an mma column depends
// on its own B column only) and the reduce kernel's float operations, so the same bits.
// Grid = resident blocks (2 per SM x SMs, 8 warps each): by default every one takes items j, j + grid, ...
// (round robin, p.ring_balanced false); balanced (W4A16_MOE_RING=1): of them the first
// ceil(items / rounds) take items j, j + that, ... below the item count read on the device
// ((*total / 8) * R: no host synchronisation), rounds = ceil(items / launched): balanced shares. The weights
// stream through a per-warp cp.async ring of steps (kT tiles + their scale / zero words, depth
// slots: depth - 1 steps in flight while one computes), the x rows of the item's 8 slots (gathered
// through sorted_ids, zero-filled for padding slots) through a per-block ring of the same depth
// (one barrier per step). The copy side walks (item, step) of the block depth - 1 steps ahead of
// the compute side and runs on across items, so the memory pipe does not idle between items; the
// next item's expert and slot rows are loaded one item ahead.
// Dequantization and mma: decode_device.cuh (Dt, mma_pair, scale_group; swap AB, 8 slots = n 8).
// Scale / zero entries are copied once per step per (tile, gid) (kGs = 1: power-of-two groups
// >= 128 or channelwise, per tile pair, see RingShape::kPair) or per (tile, half tile, gid) (kGs = 2:
// g = 32, g = 64 or any other group length). The pair variant keeps each partial in two accumulator chains
// (kSplit below): the loop waits on dependent mma, not on issue (docs/benchmarks/moe.md, stop 34).
// PDL: GEMM 2 (index_ready) requests its first steps' weights before griddepcontrol.wait; GEMM 1
// waits first (its expert ids are the alignment's output).
// Fused alignment (ring_align; aligned mode; the default where it fits, W4A16_MOE_FUSED_ALIGN=0
// turns it off): no alignment launch; every block of both GEMMs computes sorted_ids /
// block_expert / total itself in shared memory beside the ring (ring_align below, layout
// ring_align.hpp), the same values as align_kernel (routing.cu): the slots of an expert in
// ascending slot order, runs padded to 8 with the sentinel, experts in ascending order. GEMM 1
// computes it after its wait (topk_ids come from the caller's kernels); GEMM 2 before its wait
// (topk_ids were complete before GEMM 1 triggered, as index_ready says), so its first weight
// requests stay ahead of the wait. Nothing is written to global memory.
// Checked by: tests/gpu/moe/test_moe_gpu.cpp (ring cases, vs moe_reference).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "decode/decode_device.cuh"
#include "moe/fused_moe.cuh"
#include "moe/ring_align.hpp"
#include "pdl.cuh"

namespace w4a16::kernels::cuda::moe {

constexpr int kRingWarps = 8;
constexpr int kRingThreads = kRingWarps * 32;
constexpr int kRingSlots = 8;  // slots per item (one mma n-group)

// Step shape per GEMM: GEMM 1 (K = H, long) 8-tile steps in 2 slots; GEMM 2 (K = I, short)
// 4-tile steps in 3 slots (K = 768: 3 whole steps). Both keep 8 tiles in flight per warp.
// kGs: scale / zero entries per tile: 1 (group a power of two >= 128, or channelwise: the group of
// tile kt is kt >> gsh) or 2 (one per half tile: g = 32, g = 64, or any other group length, by shift or division).
// kPair (kGs 1, groups >= 128 there: launch_ring_gemm): tiles 2j, 2j + 1 share one scale / zero entry (copied once
// per pair: half the 4-byte copies of the scale and zero words) and one fp32 partial; uint4 0.941-0.958x the time of
// per-tile entries at T = 4..64, fp16 and bf16 (2026-12-04 stop 33); uint4b8 with the pairs' two accumulator chains
// per partial (kSplit) 0.976-0.998x (2026-12-05 stop 38; the pairs alone had measured 1.00-1.02x in stop 33).
// kDeep: one block per SM (grids of at most one block per SM: T = 1, few items) with 3 x 8 (GEMM 1)
// or 5 x 4 (GEMM 2) tiles in flight per warp instead of 8: 2 blocks per SM would idle anyway, and
// one block of 8 warps with 8 tiles each keeps too few bytes in flight (docs/benchmarks/moe.md,
// the streaming attempt: 25% of DRAM bandwidth at 8 warps per SM).
template <bool kGemm1, bool kZeros, int kGs, bool kDeep = false>
struct RingShape {
  static constexpr int kT = kGemm1 ? 8 : 4;      // tiles per step
  static constexpr int kDepth = kGemm1 ? (kDeep ? 4 : 2) : (kDeep ? 6 : 3);  // ring slots
  static constexpr int kP = 4;                   // tiles computed together
  static constexpr int kPair = kGs == 1 ? 2 : 1;  // tiles per entry and per fp32 partial (kGs 1)
  // (entry group, gid) entries of a step: an entry group is kPair tiles (kGs 1) or a half tile (kGs 2).
  static constexpr int kGroupsPerStep = kGs == 1 ? kT / kPair : kT * 2;
  static constexpr int kEntries = kGroupsPerStep * 8;
  static constexpr int kEntryCopies = (kEntries + 31) / 32;  // GEMM 2 with pairs: 16 entries, lanes 0..15 copy
  static constexpr int kEntryBytes = kZeros ? 8 : 4;  // scale word (+ the zero word of its row pair)
  // Entries padded to a 128-byte line (GEMM 2 uint4b8 pairs: 16 entries of 4 bytes).
  static constexpr int kEntryRegion = (kEntries * kEntryBytes + 127) / 128 * 128;
  static constexpr int kStepBytes = kT * 512 + kEntryRegion;
  static_assert(kStepBytes % 128 == 0, "slots on 128-byte lines (the decode rings measured 1.00-1.21x unaligned)");
  static constexpr int kXRow = decode_detail::x_row_bytes(kT);  // one slot's x row of a step
  static constexpr int kXSlot = kRingSlots * kXRow;
  static constexpr int kXGroups = kT * 8;                    // 16-byte chunks of one x row of a step
  static constexpr int kXRows = kRingThreads / kXGroups;     // rows per pass of the block
  static constexpr int kXPasses = kRingSlots / kXRows;
  // + the epilogue's exchange: GEMM 1's up sums (4 warps x 32 lanes x float4), GEMM 2's folded rows (8 warps x 16 floats).
  static constexpr int kSmemBytes = kDepth * kXSlot + kRingWarps * kDepth * kStepBytes + (kGemm1 ? 4 * 32 * 16 : 8 * 16 * 4);
  // Per-block shared memory that keeps the blocks per SM of __launch_bounds__ (sm_90: 228 KB per
  // SM, 1 KB reserved per block): the ring plus, with ring_align, the alignment (ring_align_fits).
  static constexpr int kSmemCap = (kDeep ? 227 : 113) * 1024;
  static_assert(kT % kP == 0 && (kEntries % 32 == 0 || kEntries < 32) && kRingSlots % kXRows == 0, "step shape");
  static_assert(kStepBytes % 16 == 0 && kXSlot % 16 == 0, "16-byte copies into every slot");
  static_assert(kSmemBytes % 16 == 0, "the alignment's layout starts 16-byte aligned after the ring");
  static_assert(kSmemBytes <= kSmemCap, "fits the blocks per SM of __launch_bounds__ (sm_90: 227 KB)");
  static_assert(kDeep || kSmemBytes <= 163 * 1024, "the shallow ring (the default) also runs on sm_80 code: an A100's 163 KB a block");
};
static_assert(kRingAlignWarps == kRingWarps, "ring_align.hpp: one count row per warp of a ring block");

// The alignment of the aligned block-8 path, by the whole block, into shared memory at `base`
// (layout ring_align.hpp): the same sorted_ids / block_expert / total as align_kernel (routing.cu,
// block 8). Warp w owns the slot range [w L, (w + 1) L), L = ceil(S / 8):
//   1. per-warp counts cw[w][e] (shared atomics on integers: order-free);
//   2. per expert (a thread each of a contiguous range): cw[w][e] <- the slots of e in the ranges of
//      warps < w (exclusive prefix), off[e] <- the padded start of e's run (block-wide exclusive
//      scan of ceil(c_e / 8) * 8 in expert order), padding positions <- S, bexp of e's blocks <- e;
//   3. each warp places its range in ascending slot order, 32 slots at a time: the lanes of one
//      expert ranked by __match_any_sync, its leader advancing the warp's cursor cw[w][e].
// Position of slot s of expert e: off[e] + (slots of e before s): align_kernel's, bit for bit.
// Returns the padded total (every thread). Every thread of the block must call it (barriers).
__device__ __forceinline__ int ring_align(const std::int32_t* __restrict__ ids, int slots, int E, unsigned char* base) {
  const RingAlignLayout l = ring_align_layout(slots, E);
  int* const cw = reinterpret_cast<int*>(base);
  int* const off = reinterpret_cast<int*>(base + l.off);
  int* const misc = reinterpret_cast<int*>(base + l.misc);
  int* const bexp = reinterpret_cast<int*>(base + l.bexp);
  unsigned short* const sorted = reinterpret_cast<unsigned short*>(base + l.sorted);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  for (int i = tid; i < kRingWarps * E; i += kRingThreads) cw[i] = 0;
  __syncthreads();
  const int len = (slots + kRingWarps - 1) / kRingWarps;
  const int s_beg = min(slots, warp * len), s_end = min(slots, s_beg + len);
  int* const mine = cw + warp * E;
  for (int s = s_beg + lane; s < s_end; s += 32) atomicAdd(&mine[ids[s]], 1);
  __syncthreads();
  const int per = (E + kRingThreads - 1) / kRingThreads;
  const int e_beg = min(E, tid * per), e_end = min(E, e_beg + per);
  int runs = 0;  // padded run lengths of this thread's experts
  for (int e = e_beg; e < e_end; ++e) {
    int c = 0;
#pragma unroll
    for (int w = 0; w < kRingWarps; ++w) {
      const int x = cw[w * E + e];
      cw[w * E + e] = c;
      c += x;
    }
    off[e] = c;
    runs += (c + 7) / 8 * 8;
  }
  int incl = runs;  // inclusive scan over the warp's lanes, then over the warps
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) misc[8 + warp] = incl;
  __syncthreads();
  int start = incl - runs, total = 0;
#pragma unroll
  for (int w = 0; w < kRingWarps; ++w) {
    const int t = misc[8 + w];
    if (w < warp) start += t;
    total += t;
  }
  for (int e = e_beg; e < e_end; ++e) {
    const int c = off[e], run = (c + 7) / 8 * 8;
    off[e] = start;
    for (int j = c; j < run; ++j) sorted[start + j] = static_cast<unsigned short>(slots);
    for (int b = start / 8; b < (start + run) / 8; ++b) bexp[b] = e;
    start += run;
  }
  __syncthreads();
  for (int s0 = s_beg; s0 < s_end; s0 += 32) {  // warp-uniform trip count
    const int s = s0 + lane;
    const bool on = s < s_end;
    const int e = on ? ids[s] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, e);
    const int leader = __ffs(peers) - 1;
    const int rank = __popc(peers & ((1u << lane) - 1u));
    int first = 0;
    if (on && lane == leader) {
      first = mine[e];
      mine[e] = first + __popc(peers);
    }
    first = __shfl_sync(0xffffffffu, first, leader);
    if (on) sorted[off[e] + first + rank] = static_cast<unsigned short>(s);
    __syncwarp();  // the leaders' cursor updates before the next 32 slots
  }
  __syncthreads();  // sorted / bexp complete for every warp's items
  return total;
}

// The rows of GEMM `kGemm1`'s item row block r that warp `warp` owns (its 16-row stripe).
template <bool kGemm1>
__device__ __forceinline__ int ring_stripe(int r, int warp, int inter_tiles) {
  if constexpr (kGemm1) return warp < 4 ? 4 * r + warp : inter_tiles + 4 * r + warp - 4;
  else return 8 * r + warp;
}

template <class T, bool kZeros, bool kGemm1, int kGs, bool kDeep>
__global__ void __launch_bounds__(kRingThreads, kDeep ? 1 : 2) moe_ring_kernel(const GemmParams p) {
  namespace dd = decode_detail;
  constexpr bool kBf16 = Act<T>::kMagic != 0x64006400u;
  using D = dd::Dt<kBf16>;
  using S = RingShape<kGemm1, kZeros, kGs, kDeep>;
  constexpr bool kHalves = kGs == 2;
  constexpr int kT = S::kT, kP = S::kP, depth = S::kDepth;
  constexpr int kStep = S::kStepBytes;
  constexpr int kEB = S::kEntryBytes;
  constexpr int kEntryOff = kT * 512;
  extern __shared__ __align__(16) unsigned char ring_smem[];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tq = lane % 4;
  const int KT = p.k / 64, NT = p.n / 16;
  const int inter_tiles = p.inter / 16;
  const bool fold = !kGemm1 && p.ring_fold;  // GEMM 2 direct, folded: item = (token, stripe), warp j = slot j of the token
  const int R = kGemm1 ? p.inter / 64 : fold ? NT : (NT + 7) / 8;
  const int nsteps = (KT + kT - 1) / kT, nfull = KT / kT;
  const T* in = static_cast<const T*>(p.in);

  const unsigned xs_sh = dd::smem_addr(ring_smem);
  const unsigned ring = xs_sh + depth * S::kXSlot + warp * depth * kStep;
  float4* red = reinterpret_cast<float4*>(ring_smem + depth * S::kXSlot + kRingWarps * depth * kStep);
  const unsigned w_sh = dd::pin(ring + lane * 16);                           // + slot + p * 512
  const unsigned e_read = dd::pin(ring + kEntryOff + gid * kEB);             // + slot + (tile, half) * 8 entries
  const unsigned e_copy = dd::pin(ring + kEntryOff + lane * kEB);            // + slot + c * 32 entries
  const int cgid = lane % 8, e_sub = lane / 8;  // entry lane + 32 c: gid cgid of entry group e_sub + 4 c
  // The alignment: sorted_ids / block_expert from global memory (align_kernel), or from this block's
  // shared memory (ring_align).
  unsigned char* const al_base = ring_smem + S::kSmemBytes;
  const RingAlignLayout al = ring_align_layout(p.sentinel, p.experts);
  const unsigned short* const al_sorted = reinterpret_cast<const unsigned short*>(al_base + al.sorted);
  const int* const al_bexp = reinterpret_cast<const int*>(al_base + al.bexp);
  auto sorted_at = [&](int i) -> int { return p.ring_align ? static_cast<int>(al_sorted[i]) : p.sorted[i]; };

  // ---- Copy side: item info one item ahead, (item, step, slot) depth - 1 steps ahead of compute.
  // Info of an item: its expert and, per x pass of this thread, the element offset of its slot's
  // row in `in` (-1: padding slot, zero-filled).
  const int xg = static_cast<int>(threadIdx.x) % S::kXGroups, xr0 = static_cast<int>(threadIdx.x) / S::kXGroups;
  struct Info {
    bool live;   // an item below the count
    int expert;  // this warp's expert (-1: none; folded: warps past top_k)
    int xrow[S::kXPasses];
  };
  // An item and its (slot block b, row block r) = (item / R, item % R), advanced by `grid` items without a division.
  struct Pos {
    int item, b, r;
  };
  auto load_info = [&](const Pos& q, int nitems) {
    Info f;
    f.live = q.item < nitems;
    f.expert = -1;
#pragma unroll
    for (int c = 0; c < S::kXPasses; ++c) f.xrow[c] = -1;
    if (f.live) {
      const int b = q.b;  // slot block (folded: the token)
      if (fold) f.expert = warp < p.fold_k ? p.topk_ids[b * p.fold_k + warp] : -1;
      else f.expert = p.ring_direct ? p.topk_ids[b] : p.ring_align ? al_bexp[b] : p.block_expert[b];
#pragma unroll
      for (int q = 0; q < S::kXPasses; ++q) {
        const int c = xr0 + q * S::kXRows;  // slot column
        const int s = fold ? (c < p.fold_k ? b * p.fold_k + c : p.sentinel)
                           : p.ring_direct ? (c == 0 ? b : p.sentinel) : sorted_at(b * kRingSlots + c);
        f.xrow[q] = s < p.sentinel ? p.in_div.div(s) * p.k : -1;
      }
    }
    return f;
  };

  if (!p.index_ready) {  // GEMM 1: trigger right after the wait (GEMM 2 reads before its wait only
    pdl_wait();          // topk_ids / the alignment launch's output, complete by now)
    pdl_launch_dependents();
  }
  // ring_align: GEMM 1 after its wait, GEMM 2 (index_ready) before it; every block, before any exits.
  const int total = p.ring_direct ? 0 : p.ring_align ? ring_align(p.topk_ids, p.sentinel, p.experts, al_base) : *p.total;
  const int nitems = (fold ? p.sentinel / p.fold_k : p.ring_direct ? p.sentinel : total / kRingSlots) * R;
  // Round robin (the default, ring_balanced false): every launched block, items blockIdx.x + j grid. Balanced
  // (ring_balanced, W4A16_MOE_RING=1): the fewest blocks that still finish in the same number of rounds
  // (rounds = ceil(items / launched blocks)), so every block takes `rounds` or `rounds - 1` items
  // instead of a last round on a few blocks (e.g. 1080 items on 264 blocks: 216 blocks x 5 rather
  // than 4 full rounds and a 24-block tail); the rest exit. That would pay if the kernel were bound by
  // DRAM; it is bound by its warps' instruction streams (stop 32), so what counts is the busiest SM: fewer,
  // fuller blocks put two of them on some SMs and one on others (T = 4: 192 blocks x 2 items; round robin:
  // 264 blocks x 1-2), and round robin measured 0.96-0.99x the time at T = 4..64 (docs/benchmarks/moe.md).
  const int rounds = (nitems + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
  const int grid = !p.ring_balanced ? static_cast<int>(gridDim.x) : rounds > 0 ? (nitems + rounds - 1) / rounds : 0;
  if (static_cast<int>(blockIdx.x) >= grid) return;
  const int grid_b = grid / R, grid_r = grid % R;
  auto next_pos = [&](Pos q) {
    q.item += grid;
    q.b += grid_b;
    q.r += grid_r;
    if (q.r >= R) q.r -= R, ++q.b;
    return q;
  };
  const Pos first{static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.x) / R, static_cast<int>(blockIdx.x) % R};
  Pos iss = first;
  int iss_step = 0, iss_slot = 0;
  Info cur = load_info(iss, nitems), nxt = load_info(next_pos(iss), nitems);
  // This warp's stripe in the copy side's item and its weight / scale / zero offsets (uint4 index of
  // tile 0, lane; byte offsets of the stripe's entries in group 0).
  int iss_stripe = 0;
  unsigned iss_w = 0, iss_s = 0, iss_z = 0;
  auto enter_item = [&]() {
    iss_stripe = fold ? iss.r : ring_stripe<kGemm1>(iss.r, warp, inter_tiles);
    const unsigned e = static_cast<unsigned>(max(cur.expert, 0));
    iss_w = ((e * NT + iss_stripe) * static_cast<unsigned>(KT)) * 32u + lane;
    iss_s = (e * p.groups * (p.n / 2) + iss_stripe * 8 + cgid) * 4u;
    iss_z = e * p.groups * (p.n / 2) + iss_stripe * 8 + (cgid / 4) * 4;
  };
  enter_item();

  const uint4* const qw = dd::pin(p.qweight);
  const char* const sbase = reinterpret_cast<const char*>(p.scales);
  const char* const zbase = reinterpret_cast<const char*>(p.zeros);
  const unsigned s_gbytes = static_cast<unsigned>(p.n) * 2u, z_gbytes = static_cast<unsigned>(NT) * 8u;
  // kGs 1: tile kt lies in group kt >> gsh (channelwise: 30, always group 0); kGs 2: the group of
  // half tile kk (its first k) by shift or division.
  const int gsh = p.groups == 1 ? 30 : p.group_shift - 6;
  auto group_of = [&](int kk) { return p.group_shift >= 0 ? kk >> p.group_shift : kk / p.group_len; };

  // One step's copies. kFull (a step of kT whole tiles: iss_step < nfull) drops the per-tile bounds, so the step is
  // unpredicated copies at immediate offsets of one address (the bounded form re-derived each address under its own
  // predicate: ~50 more instructions a step in a kernel bound by its warps' instructions, stop 32).
  auto issue_w_step = [&](auto full) {
    constexpr bool kFull = decltype(full)::value;
    const unsigned sb = static_cast<unsigned>(iss_slot) * kStep;
    const int kt0 = iss_step * kT;
    const uint4* wp = qw + iss_w + kt0 * 32;
#pragma unroll
    for (int t = 0; t < kT; ++t)
      if (kFull || kt0 + t < KT) cp_async16(w_sh + sb + t * 512, wp + t * 32);
#pragma unroll
    for (int c = 0; c < S::kEntryCopies; ++c) {
      const int th = e_sub + 4 * c, kt = kt0 + (kHalves ? th / 2 : S::kPair * th);  // entry group th: its first tile
      if ((S::kEntries >= 32 || lane < S::kEntries) && (kFull || kt < KT)) {
        const unsigned g = static_cast<unsigned>(kHalves ? group_of(kt * 64 + 32 * (th % 2)) : kt >> gsh);
        const unsigned ed = e_copy + sb + c * 32 * kEB;
        cp_async4(ed, sbase + (iss_s + g * s_gbytes));
        if constexpr (kZeros) cp_async4(ed + 4, zbase + (iss_z + g * z_gbytes));
      }
    }
  };
  auto issue_w = [&]() {
    if (cur.expert < 0 || iss_stripe >= NT) return;  // past the items, or a stripe past N
    if (iss_step < nfull) issue_w_step(std::true_type{});
    else issue_w_step(std::false_type{});
  };
  auto issue_x_step = [&](auto full) {
    constexpr bool kFull = decltype(full)::value;
    const int kg = iss_step * kT * 64 + xg * 8;
    const unsigned dst = xs_sh + iss_slot * S::kXSlot + xr0 * S::kXRow + xg * 16;
#pragma unroll
    for (int q = 0; q < S::kXPasses; ++q) {
      const bool ok = cur.xrow[q] >= 0 && (kFull || kg < p.k);
      const T* src = in + (ok ? cur.xrow[q] + kg : 0);
      dd::cp_async16_zfill(dst + q * S::kXRows * S::kXRow, src, ok ? 16u : 0u);
    }
  };
  auto issue_x = [&]() {
    if (!cur.live) return;
    if (iss_step < nfull) issue_x_step(std::true_type{});
    else issue_x_step(std::false_type{});
  };
  auto advance = [&]() {
    iss_slot = iss_slot == depth - 1 ? 0 : iss_slot + 1;
    if (++iss_step == nsteps) {
      iss_step = 0;
      iss = next_pos(iss);
      cur = nxt;
      nxt = load_info(next_pos(iss), nitems);
      enter_item();
    }
  };

  if (p.index_ready) {  // weights of the first steps before the wait; x (GEMM 1's h) after it
    const Pos s_iss = iss;
    const Info s_cur = cur, s_nxt = nxt;
    for (int st = 0; st < depth - 1; ++st) { issue_w(); advance(); }
    pdl_wait();
    pdl_launch_dependents();
    iss = s_iss; iss_step = 0; iss_slot = 0; cur = s_cur; nxt = s_nxt;
    enter_item();
    for (int st = 0; st < depth - 1; ++st) { issue_x(); cp_async_commit(); advance(); }
  } else {
    for (int st = 0; st < depth - 1; ++st) { issue_w(); issue_x(); cp_async_commit(); advance(); }
  }

  // ---- Compute side.
  const unsigned xl = dd::pin(xs_sh + (lane % 8) * S::kXRow + (lane / 8) * 16);  // ldmatrix row: slot lane % 8
  const std::uint32_t zsel = dd::zero_sel(gid);
  // kPair 2: tiles 2j, 2j + 1 of a step share their group (g >= 128 or channelwise; steps start on even tiles), so
  // they share one scale / zero entry and one fp32 partial, scaled once. A pair whose second tile lies past K adds
  // nothing to it: x is zero-filled there (issue_x_step) and the stale weight words dequantize to finite values.
  constexpr int kShare = S::kPair, kParts = kP / kShare;
  // kSplit (the pair variant: only kParts = 2 mma chains): each partial in two accumulator chains (mma_pair kSplit), so
  // a warp's dependent mma are 4 apart: 0.972-0.987x the time at T = 4..64, fp16 and bf16 (2026-12-04 stop 34; Nsight
  // Compute put the ring at ~1.2 eligible warps per scheduler, waiting on dependent mma). The 4-chain variants measured
  // 1.025-1.032x with 8 chains and keep 4.
  constexpr bool kSplit = kShare == 2;
  constexpr int kChains = kParts * (kSplit ? 2 : 1);
  auto compute = [&](unsigned woff, unsigned eoff, unsigned xoff, int valid, float (&acc)[1][4]) {
    uint4 wv[kP];
    float2 sc[kParts][kGs];
    std::uint32_t zlo[kParts][kGs], zhi[kParts][kGs];
#pragma unroll
    for (int q = 0; q < kP; ++q) wv[q] = dd::lds128(w_sh + woff + q * 512);
#pragma unroll
    for (int j = 0; j < kParts; ++j) {
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        const unsigned ea = e_read + eoff + (j * kGs + h) * 8 * kEB;  // entry group (kPair tiles j | tile j, half h)
        if constexpr (kZeros) {
          uint2 e;
          asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(e.x), "=r"(e.y) : "r"(ea) : "memory");
          sc[j][h] = D::to_float2(e.x);
          D::zeros_of(e.y, zsel, zlo[j][h], zhi[j][h]);
        } else {
          std::uint32_t e;
          asm volatile("ld.shared.u32 %0, [%1];" : "=r"(e) : "r"(ea) : "memory");
          sc[j][h] = D::to_float2(e);
          zlo[j][h] = D::zlo_of(8u);
          zhi[j][h] = D::zhi_of(8u);
        }
      }
    }
    float tmp[kChains][1][4];
#pragma unroll
    for (int j = 0; j < kChains; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) tmp[j][0][c] = 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint4 bf[kP][1];
#pragma unroll
      for (int q = 0; q < kP; ++q) bf[q][0] = dd::ldmatrix_x4(xl + xoff + q * 128 + h * 64);
      dd::mma_pair<D, kHalves, kShare, kSplit>(h, wv, zlo, zhi, bf, tmp);
      if (kHalves || h == 1) dd::scale_group<kHalves, kShare, kSplit>(h, valid, sc, tmp, acc);  // end of a group
    }
  };

  constexpr unsigned kHalfEntries = kParts * kGs * 8 * kEB;  // entry bytes of kP tiles
  for (Pos at = first; at.item < nitems; at = next_pos(at)) {
    const int b = at.b, r = at.r;
    const int stripe = fold ? r : ring_stripe<kGemm1>(r, warp, inter_tiles);
    const int s0 = p.ring_direct ? (tq == 0 ? b : p.sentinel) : sorted_at(b * kRingSlots + 2 * tq);
    const int s1 = p.ring_direct ? p.sentinel : sorted_at(b * kRingSlots + 2 * tq + 1);
    float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
    for (int step = 0; step < nsteps; ++step) {
      const int slot = iss_slot == depth - 1 ? 0 : iss_slot + 1;  // the copy side is depth - 1 ahead
      cp_async_wait<depth - 2>();
      __syncthreads();  // this step's x and entries visible; every warp is done with the previous step
      issue_x();
      issue_w();
      cp_async_commit();
      advance();
      const unsigned sb = static_cast<unsigned>(slot) * kStep, xo = static_cast<unsigned>(slot) * S::kXSlot;
      const int valid = step < nfull ? kT : KT - step * kT;
#pragma unroll
      for (int hf = 0; hf < kT / kP; ++hf)
        if (valid > hf * kP) compute(sb + hf * kP * 512, sb + hf * kHalfEntries, xo + hf * kP * 128, valid - hf * kP, acc);
    }
    // Epilogue: acc[0][c] is row gid + 8 (c / 2) of the stripe, slot column 2 tq + c % 2.
    const int row0 = 16 * stripe + gid;
    if constexpr (kGemm1) {
      if (warp >= 4) red[(warp - 4) * 32 + lane] = make_float4(acc[0][0], acc[0][1], acc[0][2], acc[0][3]);
      __syncthreads();  // the next item's first barrier orders the reads below before the next writes
      if (warp < 4) {
        const float4 u = red[warp * 32 + lane];
        const float uv[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int s = c % 2 ? s1 : s0;
          if (s >= p.sentinel) continue;
          const float g = acc[0][c];
          const float hval = g / (1.f + __expf(-g)) * uv[c];
          T* hp = static_cast<T*>(p.h_out) + static_cast<std::int64_t>(s) * p.inter + row0 + 8 * (c / 2);
          if constexpr (kBf16) *hp = __float2bfloat16_rn(hval);
          else *hp = __float2half_rn(hval);
        }
      }
    } else if (fold) {
      // Warp j's own column (slot j of token b) -> shared memory; warp 0 sums the top_k rows in slot order with the
      // reduce kernel's operations (acc += w * y) and stores out. The next item's first barrier orders these reads
      // before the next writes.
      float* const rows = reinterpret_cast<float*>(red);  // [8 warps][16 rows]
      if (warp < p.fold_k && tq == warp / 2) {
        const bool odd = warp % 2;  // column 2 tq + c % 2 = warp: c = odd, odd + 2 (selects, not an indexed array)
        rows[warp * 16 + gid] = odd ? acc[0][1] : acc[0][0];
        rows[warp * 16 + gid + 8] = odd ? acc[0][3] : acc[0][2];
      }
      __syncthreads();
      if (warp == 0 && lane < 16) {
        float o = 0.f;
        for (int j = 0; j < p.fold_k; ++j) o += p.topk_weights[b * p.fold_k + j] * rows[j * 16 + lane];
        T* op = static_cast<T*>(p.fold_out) + static_cast<std::int64_t>(b) * p.n + 16 * stripe + lane;
        if constexpr (kBf16) *op = __float2bfloat16_rn(o);
        else *op = __float2half_rn(o);
      }
    } else {
      if (stripe < NT) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int s = c % 2 ? s1 : s0;
          if (s < p.sentinel) p.y_out[static_cast<std::int64_t>(s) * p.n + row0 + 8 * (c / 2)] = acc[0][c];
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy may still target shared memory when the block exits
}

}  // namespace w4a16::kernels::cuda::moe
