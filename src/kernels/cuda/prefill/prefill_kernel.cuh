// Contract: the tensor-core W4A16 prefill kernel (issue 5), templates instantiated by
// prefill_inst_{f16,bf16}_{sym,zeros}.cu for every config of W4A16_PREFILL_CONFIGS (prefill_launch.cuh).
//   W   layout cuda.tc16x64.v1 (docs/LAYOUT.md): qweight [N_pad/16][K_pad/64][32][4] int32,
//       scales act dtype [G][N_pad] pair-interleaved, zeros uint8 [G][N_pad/16][8] (uint4 only)
//   x   (M, K) act dtype, row stride x_stride elements, 16-byte aligned, x_stride % 8 == 0
//       (the launcher gathers act-order / misaligned x into the workspace first)
//   tmap_x  (XLOAD tma / tma_eb only) 2-D tensor map of x made by the launcher: dims {K, M},
//       row stride x_stride * 2 bytes, box {64, BM}, 128B swizzle, out-of-bounds zero fill
//   tmap_tail  (the same, where M % BM != 0) box {64, p.tail_box_rows}: by default M % BM, the last m
//       block loads only its real token rows; the stage's rows past them keep what they held (B columns
//       of tokens >= M, whose outputs no store takes: each wgmma column depends on its own B column only).
//       A box of mostly out-of-bounds rows measured up to 1.3x slower on the 2-CTA tiles
//       (docs/benchmarks/prefill.md, stop 24). W4A16_PREFILL_TAIL_BOX=0: BM rows, zero-filled past M.
//   out split == 1: y (M, N) act dtype, row stride y_stride, bias added, rounded once from fp32
//       split  > 1, cluster_reduce == 0: fp32 partials (split, M, N) contiguous; reduce_kernel
//                   (prefill.cu) sums them in split order (deterministic) and adds bias
//       split  > 1, cluster_reduce == 1 (TMA configs; launched with cluster dims (1, 1, split), so
//                   cluster rank = blockIdx.z = split index): every CTA parks its fp32 tile in its
//                   own shared memory (the ring is free after the main loop), cluster barrier, then
//                   rank r sums its 1/split of the tile over ranks 0..split-1 in rank order through
//                   distributed shared memory (the same fp32 additions as reduce_kernel, so the same
//                   bits), adds bias, rounds once and stores y (N-contiguous, coalesced); a second
//                   cluster barrier keeps every rank's shared memory alive until all have read it.
//   TMA configs stage the CTA's fp32 tile in shared memory and store it from a short
//   loop, 4 rows of one token per thread and step (16-byte partials, 8-byte outputs where aligned;
//   tiles whose rows all lie below N without bounds checks, 4 steps in flight, up to the last token);
//   split 1 of the early-issue configs (tiles inside N, 16-byte-aligned y rows) rounds in registers and
//   stages act-dtype values by stmatrix instead, 16-byte stores (KernelParams::epi16);
//   the other configs store each accumulator from its fragment position. The same bits either way.
// PDL: the prologue requests the W / scale / zero words of the first pipeline stages before
// griddepcontrol.wait (prepared weights: constant, written before the previous kernel started),
// x (TMA or cp.async) and bias only after it; launch_dependents right after the wait (pdl.cuh).
// Both are no-ops for a launch without programmatic stream serialization.
// Swap-AB: y^T = W . x^T. Weight rows are the M side of the tensor-core instruction, tokens
// the N side. Per CTA: BN = 64 * WG * MB weight rows x BM tokens; grid (ceil(N_pad/BN), ceil(M/BM), split).
// Warp w owns 16 rows per 64-row block (w % 4 picks the 16, w / 4 the warpgroup): its A
// fragments are exactly its 16-byte words of the layout, used by no other warp.
// Per k tile (64 k), the x tile (BM tokens x 64 k, shared by the CTA) and each thread's own W
// words, scale pairs and zero bytes (a private slot) go into a STAGES-deep shared-memory ring,
// STAGES-1 or STAGES-2 tiles ahead (by the OVERLAP schedule below). x rows are 128 bytes,
// swizzled as the wgmma 128B mode expects (16-byte chunk c of row r at chunk c ^ (r % 8)), so
// the same bytes serve wgmma's smem descriptor and the mma path's conflict-free ldmatrix.
// How x gets there (XLOAD, XLoad below):
//   cp_async  every thread cp.asyncs 16-byte chunks; one cp.async group per tile with its W slot.
//             wgmma reads x through the async proxy, so each tile needs fence.proxy.async
//             (MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S in SASS) before the CTA barrier: the suspected
//             ~1 us per-tile drain (docs/benchmarks/prefill.md).
//   tma       thread 0 issues one cp.async.bulk.tensor per tile, completing on the stage's "full"
//             mbarrier (async proxy writes, async proxy reads: no proxy fence). The CTA barrier
//             per tile stays only to order the refill after every warpgroup retired the stage.
//   tma_eb    as tma, but no CTA barrier in the k loop: each warp arrives on the stage's "empty"
//             mbarrier once its wgmma group reading the stage retired; thread 0 waits on it
//             before the refill, so warpgroups run decoupled.
//   cp_async_nofence  cp_async without the proxy fence: a race by the PTX memory model (generic
//             writes read by the async proxy), a measurement-only diagnostic that the plan never
//             picks and the tests do not check.
// W, scales and zeros always go through per-thread cp.async slots that only the issuing thread
// reads back with ld.shared (generic proxy both ways): its own cp.async.wait_group orders them.
// The wgmma schedule (OVERLAP): one wgmma group always in flight; tile t+1 is dequantized into the
// second A-register buffer while tile t's group runs (no C7513: see the main loop).
// Speed on the H200: docs/benchmarks/prefill.md. Checked by tests/gpu/prefill
// (prefill_gpu_test: every config, every accepted configuration, against the f64 reference).
#pragma once
#include <cuda.h>  // CUtensorMap (a plain 128-byte struct here: nothing links libcuda)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <numeric>  // std::lcm (constexpr; device code through --expt-relaxed-constexpr)

#include "pdl.cuh"
#include "prefill/dequant_consts.hpp"
#include "prefill/wgmma_rs.cuh"
#include "sm90_async.cuh"

namespace w4a16::kernels::cuda::prefill_detail {

struct KernelParams {
  const uint4* qweight;     // [N_pad/16][K_pad/64][32] uint4 (4 words per lane)
  const std::uint32_t* scales;   // [G][N_pad/2] pairs (s[r], s[r+8]) as 32-bit words
  const std::uint8_t* zeros;     // [G][N_pad/16][8] or null
  const void* bias;              // [N] act dtype or null
  const void* x;                 // (M, K), row stride x_stride
  void* y;                       // (M, N), row stride y_stride (split == 1)
  float* partial;                // (split, M, N) fp32 (split > 1)
  std::int64_t m, n, k, n_pad, k_tiles;  // k_tiles = K_pad / 64
  std::int64_t x_stride, y_stride;
  std::int64_t group_len, groups;
  std::int64_t k_tiles_per_split;
  int split;
  std::int64_t row_block0;       // the grid's first kBN-row block (a row split's second part: prefill_run_row_split), else 0
  int cluster_reduce;            // 1: split > 1 reduced in the cluster (TMA configs only), 0: partials
  int group_shift;               // log2(group_len) when groups > 1 (g = 32..256 are powers of two)
  int tail_box_rows;             // TMA, M % BM != 0: the rows of tmap_tail's box (M % BM, or BM: zero-filled past M)
  // 1 (default; W4A16_PREFILL_EPI16=0: 0): split-1 early-issue TMA tiles inside N with 16-byte-aligned y rows round
  // acc [+ bias] in registers (the same float operations, the same bits), stage the act-dtype tile by stmatrix.trans
  // (16 instructions per 128 outputs instead of 128 fp32 stores) and store it 16 bytes a step.
  int epi16;
  // Persistent tile loop (persist_items > 0; persistent_ctas in prefill.cu decides): the grid holds
  // min(items, CTAs resident at once) CTAs, CTA b runs items b, b + gridDim.x, ... of the persist_nx x
  // ceil(M / BM) tiles (row block fastest, the hardware's order of the plain grid). After an item's k loop
  // the next item's first kAhead stages are issued, then the item's stmatrix epilogue runs beside those
  // loads (the output tile sits in the last x stages, which the next item refills only after it).
  // Split 1, not grouped, every row block inside N, 16-byte-aligned y rows, epi16 on; the early-issue
  // TMA configs of one CTA per SM whose output tile fits kBufs x stages (kPersistable below) only.
  int persist_items;
  int persist_nx;
  // Split tail (tail_items > 0): the work is persist_full whole tiles, then the last tail_items tiles of the grid as
  // tail_split parts of tail_kts k tiles each (persist_items = persist_full + tail_items * tail_split work items, in
  // that order: every CTA's whole tiles first, a part as its last item). A part's fp32 accumulators go to
  // tail_partial (per tail tile and part, thread-major by float4); the CTA that arrives last at tail_count[tile] sums
  // the parts in part order (0 + p0 + p1 + ..., as reduce_kernel: the bits of the split-tail_split plan), stores the
  // tile and resets the count (the launcher zeroes the counts before the launch).
  int persist_full;
  int tail_items, tail_split, tail_kts;
  float* tail_partial;
  int* tail_count;
  // Persistent loop only (W4A16_PREFILL_TMA_STORE, "0" off): thread 0 stores each item's output tile by TMA (tmap_y:
  // box 64 rows x BM tokens, 128B swizzle) and the CTA goes on to the next item at once, instead of every thread's
  // 16-byte copies after a second barrier.
  int tma_out;
  // Persistent loop only (W4A16_PREFILL_NEXT_INFO, "0" off): thread 0 decodes the CTA's next item (tile, part, k
  // range: integer divisions and parameter loads, one dependent chain) early in the current item's k loop into shared
  // memory, so that the item boundary only reads it (stop 59's trace: 0.74 us from an item's end to the next item's
  // first loads issued, ~1 / 3 of the boundary).
  int next_info;
  // Grouped mode (the MoE experts, prefill_run_grouped): block_expert != null. qweight / scales / zeros
  // are expert 0's of a stack of equal layers; m block b (blockIdx.y) multiplies its BM token rows by
  // expert block_expert[b] (its words at e * expert_qw / expert_sc / expert_z further), read after
  // griddepcontrol.wait (the alignment kernel writes it); -1 = no block there: the CTA exits. Early-issue
  // TMA configs, split 1, no bias. Output (instead of y / partial):
  //   silu_inter > 0  the CTA's rows are gate rows n_block * kBN/2 + [0, kBN/2) (its first half of 64-row
  //                   blocks) and the up rows silu_inter further (second half); y (row stride y_stride)
  //                   gets silu(gate) * up at column n_block * kBN/2 + r, rounded once (as the mma.sync
  //                   MoE kernels). silu_inter % (kBN/2) == 0.
  //   row_map         else: token row m0 + t goes to rows_out[row_map[m0 + t]] (N act-dtype values a row, rounded
  //                   once), skipped where row_map[m0 + t] >= row_map_limit (the alignment's sentinel).
  const std::int32_t* block_expert;
  const std::int32_t* block_row;  // null: m block b starts at row b * BM; else at row block_row[b] (a list of blocks)
  std::int64_t expert_qw, expert_sc, expert_z;  // per-expert strides: uint4 words, 32-bit scale words, zero bytes
  std::int64_t silu_inter;
  const std::int32_t* row_map;
  void* rows_out;
  int row_map_limit;
};

// Per activation dtype: the magic number (dequant_consts.hpp) and zhi_of, the zero constant of the
// rows gid + 8 (registers 1 and 3 of a word: dequant_word).
template <class T> struct Num;
template <> struct Num<half> {
  using T2 = half2;
  static constexpr std::uint32_t kMagic = kMagicF16;  // half2(1024, 1024): 1024 + q is exact for q < 1024
  // Registers 1 and 3 take their nibbles high (fma with 1/16): -(64 + z).
  static __device__ __forceinline__ std::uint32_t zhi_of(std::uint32_t z) { return zhi_of_f16(z); }
  // The same from rep = zb in bytes 0 and 2 (zb = z[gid] | z[gid + 8] << 4): one lop3.
  static __device__ __forceinline__ std::uint32_t zhi_of_rep(std::uint32_t rep) { return zhi_of_rep_f16(rep); }
  static __device__ __forceinline__ half from_float(float f) { return __float2half_rn(f); }
  static __device__ __forceinline__ float to_float(half v) { return __half2float(v); }
};
template <> struct Num<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static constexpr std::uint32_t kMagic = kMagicBf16;  // bf162(128, 128): 128 + q exact (8-bit significand, q < 16)
  // Every register takes its nibbles low (subtract): 128 + z, as for rows gid.
  static __device__ __forceinline__ std::uint32_t zhi_of(std::uint32_t z) { return zlo_of(kMagic, z); }
  static __device__ __forceinline__ std::uint32_t zhi_of_rep(std::uint32_t rep) { return zlo_of_rep(kMagic, rep >> 4); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float f) { return __float2bfloat16_rn(f); }
  static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
};

__device__ __forceinline__ std::uint32_t lop3_and_or(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  // immLut 0xEA = (a & b) | c: isolate two nibbles and drop them into the magic number's mantissa in one op.
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

template <class T2> __device__ __forceinline__ std::uint32_t as_u32(T2 v) { return *reinterpret_cast<std::uint32_t*>(&v); }
template <class T2> __device__ __forceinline__ T2 as_t2(std::uint32_t u) { return *reinterpret_cast<T2*>(&u); }

// One layout word (8 nibbles [a0,a2,a4,a6,a1,a3,a5,a7]) -> the 4 A-fragment registers of one k16
// sub-tile: reg0 (a0,a1) row gid, reg1 (a2,a3) row gid+8, reg2 (a4,a5) row gid, reg3 (a6,a7) row gid+8.
// w = (q - z) * s: q - z is formed exactly, then one rounding in the multiply by the scale.
// zz_lo: magic + z of rows gid (zlo_of); zz_hi: Num<T>::zhi_of(z) of rows gid + 8; s_lo/s_hi: scale pairs.
//   bf16: every register takes its nibbles low (after w >> 4, 8, 12): (128 + q) - (128 + z)
//         (3 shifts, 4 lop3, 4 hsub2, 4 hmul2).
//   fp16 (Marlin's dequantization, as decode_device.cuh Dt<false>): registers 0 / 2 take nibbles 0, 4 /
//         2, 6 low: (1024 + q) - (1024 + z); registers 1 / 3 take nibbles 1, 5 / 3, 7 high (mask
//         0x00f000f0 of w / w >> 8, no shift): fma(1024 + 16 q, 1/16, -(64 + z)) = 64 + q - (64 + z).
//         Both forms are exact, so q - z, the products and every output are bit-identical to the
//         bf16-style form (tests/gpu/prefill/test_prefill_dequant_host.cpp). One shift, 4 lop3,
//         2 hsub2, 2 hfma2, 4 hmul2: 13 instructions instead of 15.
template <class T>
__device__ __forceinline__ void dequant_word(std::uint32_t w, std::uint32_t zz_lo, std::uint32_t zz_hi, std::uint32_t s_lo,
                                             std::uint32_t s_hi, std::uint32_t (&a)[4]) {
  using T2 = typename Num<T>::T2;
  if constexpr (Num<T>::kMagic == kMagicF16) {
    const std::uint32_t w8 = w >> 8;
    const std::uint32_t h0 = lop3_and_or(w, kNibbleLo, kMagicF16);
    const std::uint32_t h1 = lop3_and_or(w, kNibbleHi, kMagicF16);
    const std::uint32_t h2 = lop3_and_or(w8, kNibbleLo, kMagicF16);
    const std::uint32_t h3 = lop3_and_or(w8, kNibbleHi, kMagicF16);
    const T2 sixteenth = as_t2<T2>(kSixteenthF16);
    a[0] = as_u32(__hmul2(__hsub2(as_t2<T2>(h0), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
    a[1] = as_u32(__hmul2(__hfma2(as_t2<T2>(h1), sixteenth, as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
    a[2] = as_u32(__hmul2(__hsub2(as_t2<T2>(h2), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
    a[3] = as_u32(__hmul2(__hfma2(as_t2<T2>(h3), sixteenth, as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
  } else {
    const std::uint32_t h0 = lop3_and_or(w, kNibbleLo, Num<T>::kMagic);  // nibble 0 -> low half, nibble 4 -> high half
    const std::uint32_t h1 = lop3_and_or(w >> 4, kNibbleLo, Num<T>::kMagic);
    const std::uint32_t h2 = lop3_and_or(w >> 8, kNibbleLo, Num<T>::kMagic);
    const std::uint32_t h3 = lop3_and_or(w >> 12, kNibbleLo, Num<T>::kMagic);
    a[0] = as_u32(__hmul2(__hsub2(as_t2<T2>(h0), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
    a[1] = as_u32(__hmul2(__hsub2(as_t2<T2>(h1), as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
    a[2] = as_u32(__hmul2(__hsub2(as_t2<T2>(h2), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
    a[3] = as_u32(__hmul2(__hsub2(as_t2<T2>(h3), as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
  }
}

__device__ __forceinline__ void cp_async16(std::uint32_t smem, const void* gmem, bool valid) {
  // src-size 0 zero-fills the 16 bytes: tokens >= M and k >= K read as 0 (never past x).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async4(std::uint32_t smem, const void* gmem, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// "memory": the thread's own smem reads of the landed data must not move above the wait.
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ---- mbarrier and TMA (sm_90): the x tiles of the XLoad::tma / tma_eb configs ----
// How x reaches shared memory (the file's contract block says why each exists).
enum class XLoad : int { cp_async = 0, tma = 1, tma_eb = 2, cp_async_nofence = 3 };

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define W4A16_SM90_ASM 1  // these wrappers compile to nothing elsewhere; only sm_90a configs call them
#endif
// mbar_init / mbar_fence_init / mbar_arrive_expect_tx / mbar_arrive / mbar_wait: sm90_async.cuh.
// x tile (64 k x BM tokens) at element coordinates (k0, m0) -> 1024-aligned smem, 128B-swizzled
// by the tensor map; out-of-bounds rows / columns arrive as zeros and still count in the
// transaction bytes (the full box), so expect_tx is the box's rows * 128.
__device__ __forceinline__ void tma_load_2d(std::uint32_t smem, const CUtensorMap* map, std::uint32_t bar, int k0, int m0) {
#ifdef W4A16_SM90_ASM
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(k0), "r"(m0)
      : "memory");
#endif
}
// Shared -> global by TMA (the persistent loop's output tile): box (64 rows x BM tokens) at element coordinates
// (row0, m0) from a 1024-aligned smem panel in the 128B swizzle; rows past M are not written. One bulk group per
// commit; wait_read: the group's shared-memory reads are done (the panel may be overwritten); wait_all: its writes too.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t smem, int row0, int m0) {
#ifdef W4A16_SM90_ASM
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
               "r"(smem), "r"(row0), "r"(m0)
               : "memory");
#endif
}
__device__ __forceinline__ void bulk_commit() {
#ifdef W4A16_SM90_ASM
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void bulk_wait_read() {
#ifdef W4A16_SM90_ASM
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void bulk_wait_all() {
#ifdef W4A16_SM90_ASM
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
#ifdef W4A16_SM90_ASM
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
#endif
}

// ---- thread-block cluster (sm_90): the split-K reduction of the TMA configs ----
// All threads of every CTA of the cluster arrive (convergent: .aligned); release / acquire order
// the shared-memory writes before the barrier with the distributed reads after it.
__device__ __forceinline__ void cluster_sync_all() {
#ifdef W4A16_SM90_ASM
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
// The last barrier only keeps every CTA's shared memory alive until all ranks have read it: each
// remote load's value fed a y store issued before the arrive, so the loads are complete; relaxed
// (no release: no MEMBAR.GPU behind this thread's outstanding y stores).
__device__ __forceinline__ void cluster_sync_relaxed() {
#ifdef W4A16_SM90_ASM
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}
// The shared::cluster address of `smem` (a shared::cta address of this CTA's layout) in CTA `rank`.
__device__ __forceinline__ std::uint32_t cluster_map(std::uint32_t smem, std::uint32_t rank) {
  std::uint32_t r = 0;
#ifdef W4A16_SM90_ASM
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem), "r"(rank));
#endif
  return r;
}
// The same load for a batch of steps: neither volatile nor a memory clobber, so the compiler issues
// the loads of several steps before the first sum (with them, each step's loads waited behind the
// previous step's y stores: one DSMEM round trip per step). `addr` must derive from a cluster_map
// issued after the cluster barrier (volatile): that keeps the load below the barrier.
__device__ __forceinline__ float4 ld_cluster_f4_batched(std::uint32_t addr) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#ifdef W4A16_SM90_ASM
  asm("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr));
#endif
  return v;
}
// Four 8x8 b16 matrices from this warp's fragments (thread t: row t / 4, columns 2 (t % 4) and + 1 of each, one
// register each) stored transposed: matrix m's column c becomes the 16-byte shared row whose address lane 8 m + c gives.
__device__ __forceinline__ void stmatrix_x4_trans(std::uint32_t addr, std::uint32_t r0, std::uint32_t r1, std::uint32_t r2, std::uint32_t r3) {
#ifdef W4A16_SM90_ASM
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#endif
}
__device__ __forceinline__ float4 ld_cluster_f4(std::uint32_t addr) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#ifdef W4A16_SM90_ASM
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
#endif
  return v;
}

__device__ __forceinline__ void ldsm_x4(std::uint32_t addr, std::uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <class T>
__device__ __forceinline__ void mma16816(float& d0, float& d1, float& d2, float& d3, const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  if constexpr (Num<T>::kMagic == 0x64006400u) {  // fp16
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Generic-proxy writes (cp.async x) made visible to async-proxy reads (wgmma's shared-memory operand).
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// wgmma shared-memory descriptor of a K-major tile with 128-byte swizzle: rows of 128 bytes,
// 8-row core-matrix groups 1024 bytes apart (SBO); LBO unused for swizzled K-major (encoded 1).
__device__ __forceinline__ std::uint64_t smem_desc_sw128(std::uint32_t addr) {
  std::uint64_t d = 0;
  d |= static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<std::uint64_t>(16 >> 4) << 16;
  d |= static_cast<std::uint64_t>(1024 >> 4) << 32;
  d |= 1ull << 62;  // layout type 1 = 128B swizzle
  return d;
}

// Shared memory of one config: per stage the x tile (BM tokens x 128 bytes) and each thread's
// private W slot (per 64-row block: its 16-byte A-fragment word group, then its aux word: the scale
// pairs of the tile's k32 halves and, for uint4, the zero words, read by one ld.shared: 2 entries
// each per tile, ONE_GROUP kernels 1), then (TMA configs) a "full" and an "empty" 8-byte mbarrier
// per stage, plus 1 KB for the 1024-byte alignment of the swizzled tiles. A ONE_GROUP stage holds
// 8 aux bytes per thread and block either way (uint4b8 uses 4, the rest is padding at the stage's
// end): so the uint4 kernels that g >= 64 runs have the uint4b8 kernels' shared memory and
// residency, which the plan's measured entries were timed with.
template <bool ZEROS, bool ONE_GROUP>
constexpr int w_aux_bytes() { return (ONE_GROUP ? 1 : 2) * (ZEROS ? 8 : 4); }
template <bool ZEROS, bool ONE_GROUP>
constexpr int w_aux_stage_bytes() { return ONE_GROUP ? 8 : w_aux_bytes<ZEROS, ONE_GROUP>(); }
template <int BM, int WG, int MB, bool ZEROS, bool ONE_GROUP>
constexpr int w_stage_bytes() { return WG * 128 * MB * (16 + w_aux_stage_bytes<ZEROS, ONE_GROUP>()); }
constexpr bool uses_tma(XLoad xl) { return xl == XLoad::tma || xl == XLoad::tma_eb; }
template <int STAGES, XLoad XL>
constexpr int barrier_bytes() { return uses_tma(XL) ? 2 * STAGES * 8 : 0; }
template <int BM, int WG, int MB, int STAGES, bool ZEROS, XLoad XL, bool ONE_GROUP>
constexpr int smem_bytes() {
  return STAGES * (BM * 128 + w_stage_bytes<BM, WG, MB, ZEROS, ONE_GROUP>()) + barrier_bytes<STAGES, XL>() + 1024;
}

// Template parameters:
//   T       activation / output element type (half or __nv_bfloat16)
//   BM      tokens per CTA tile (wgmma N extent; mma: multiple of 16)
//   WG      warpgroups per CTA (4 warps = 128 threads each)
//   MB      64-row weight blocks per warpgroup (each warp: MB x 16 rows)
//   STAGES  cp.async ring depth (tiles of x + W; STAGES-1 or STAGES-2 in flight, by OVERLAP)
//   WGMMA   true: wgmma.mma_async (sm_90a); false: mma.sync m16n8k16 (sm_80+)
//   OVERLAP wgmma schedule. true: one group left in flight (wait 1) while the next tile
//           dequantizes into the other A buffer, tiles prefetched STAGES-2 ahead (one stage of
//           slack for the group in flight). false: each group is retired (wait 0) before the next
//           dequantization, STAGES-1 ahead: the serial schedule, kept as the measured baseline.
//   MINB    CTAs per SM the register budget must allow (__launch_bounds__): > 1 trades
//           registers for resident CTAs, which hides the latency of the small, memory-bound tiles
//   ZEROS   true for uint4 (packed zero points), false for uint4b8 (z = 8)
//   XL      how x reaches shared memory (XLoad: cp_async, tma, tma_eb, cp_async_nofence; contract block)
//   SCHED   order of the k loop (TMA configs only for 1 / 2; 0 everywhere else):
//           0 (measured baseline): CTA barrier -> refill (W cp.async addresses + thread 0's TMA)
//             -> wait for x tile t -> issue tile t's wgmma group -> wait_group 1 -> dequantize t+1.
//             Between tile t-1's retirement and tile t+1's issue lie the dequantization, the
//             barrier and the whole refill: ~200 SASS instructions of one latency-bound chain.
//           1 (early issue): wait for x tile t -> issue tile t's group -> CTA barrier -> refill
//             -> wait_group 1 -> dequantize t+1. The barrier and the refill run while tile t's
//             group (and the other warpgroup's) executes; the chain from tile t-1's retirement to
//             tile t+1's issue is only the dequantization. Same ring guarantee: at the barrier of
//             tile t every warpgroup has passed tile t-1's wait_group 1 (tile t-2 retired), and the
//             refill targets the stage of tile t-2.
//           With XL tma_eb (no CTA barrier in the loop) only thread 0 waits, on the empty
//           mbarrier, for the stage it refills: the two warpgroups are not re-aligned every tile
//           (one can dequantize while the other's group runs: the ping-pong idea without a
//           fixed order).
//           2 (early issue, early W read): as 1, and tile t+1's slot words (ld.shared) are read
//             into registers before the wait_group, so only the conversion follows it. (Three
//             A buffers with wait_group 2 made ptxas serialize every wgmma, C7513: not kept.)
//   ONE_GROUP  true: one group spans every 64-wide k tile (g >= 64 or channelwise; the launcher
//           picks this variant from the layer's group size, prefill.cu entry()): each thread copies,
//           reads and converts one scale pair (and, uint4, one zero word) per tile and 64-row block
//           and uses it for both k32 halves. false: one entry per k32 half (g = 32 puts the halves
//           in different groups). The same values either way, so the same bits.
// tmap_x: the tensor map of x for the TMA configs (unused, zero, otherwise). __grid_constant__:
// the TMA unit reads it from the kernel parameter space by address.
template <class T, int BM, int WG, int MB, int STAGES, bool WGMMA, bool OVERLAP, int MINB, bool ZEROS, XLoad XL, int SCHED,
          bool ONE_GROUP>
__global__ void __launch_bounds__(WG * 128, MINB) prefill_kernel(const KernelParams p, const __grid_constant__ CUtensorMap tmap_x,
                                                                  const __grid_constant__ CUtensorMap tmap_tail,
                                                                  const __grid_constant__ CUtensorMap tmap_y) {
  constexpr int kThreads = WG * 128;
  constexpr int kBN = 64 * WG * MB;          // weight rows per CTA
  constexpr int kStageBytes = BM * 128;       // (BM tokens, 64 k) fp16/bf16, 128 B per token row
  constexpr int kChunks = BM * 8;             // 16-byte x chunks per stage
  constexpr int kWStage = w_stage_bytes<BM, WG, MB, ZEROS, ONE_GROUP>();
  constexpr int kWq = kThreads * MB * 16;     // W stage: [mb][thread] 16-byte words, then [mb][thread] aux words:
  constexpr int kAux = w_aux_bytes<ZEROS, ONE_GROUP>();  //   scale pairs [h], then (uint4) zero words [h]
  constexpr int kH = ONE_GROUP ? 1 : 2;       // scale / zero entries per block and tile (h = 0 only with ONE_GROUP)
  constexpr int kBufs = 2;                     // A-register buffers: wgmma groups in flight + 1
  constexpr int kAhead = OVERLAP && WGMMA ? STAGES - kBufs : STAGES - 1;  // tiles in flight
  constexpr bool kEarly = SCHED != 0;          // the wgmma issue before the barrier and the refill
  constexpr int kAcc = BM / 2;                // fp32 accumulators per thread per 64-row block
  constexpr bool kTma = uses_tma(XL);
  constexpr int kOutStages = kBN / 64;        // x stages the act-dtype output tile fills (BM tokens x kBN rows x 2 bytes)
  // The persistent tile loop (KernelParams::persist_items): the next item's first kAhead stages load while the
  // output tile sits in the ring's last STAGES - kAhead stages. One CTA per SM only: where two or more share an SM,
  // one's k loop already runs beside another's prologue and epilogue (and the loop's state spilled registers of the
  // tiles capped at 128 / 168).
  constexpr bool kPersistable = kTma && kEarly && XL == XLoad::tma && kOutStages <= STAGES - kAhead && MINB == 1;
  static_assert(kAhead >= 1, "a ring: tile t computes while later tiles load");
  static_assert(BM % 16 == 0 && BM >= 16 && BM <= 256, "wgmma N extent: multiple of 16 (ldmatrix x4 pairs), <= 256");
  static_assert(kStageBytes % 1024 == 0, "x stage bases stay 1024-aligned (128B swizzle)");
  static_assert(kTma || kChunks % kThreads == 0, "cp.async x: every thread copies the same number of x chunks");
  static_assert(!kTma || (WGMMA && OVERLAP), "TMA x tiles: overlapped wgmma schedule only (the refill order assumes kAhead = STAGES - 2)");
  static_assert(XL != XLoad::cp_async_nofence || WGMMA, "the proxy fence exists only on the wgmma path");
  static_assert(kWStage % 8 == 0, "mbarriers after the W ring stay 8-byte aligned");
  static_assert(SCHED >= 0 && SCHED <= 2, "SCHED: 0 baseline, 1 early issue, 2 early issue with the next W words read before the wgmma wait");
  static_assert(SCHED == 0 || XL == XLoad::tma || XL == XLoad::tma_eb, "the early-issue schedules exist for the TMA x paths only");

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  if constexpr (WGMMA) {
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __trap();  // the launcher never selects the wgmma path without the sm_90a cubin
#endif
  }
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The 128B swizzle is a function of address bits [4,10): stage bases must be 1024-aligned.
  const std::uint32_t smem_raw_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t smem_base = (smem_raw_addr + 1023u) & ~1023u;
  const std::uint32_t wsm_base = smem_base + STAGES * kStageBytes;  // W ring after the x ring
  const unsigned char* wsm = smem_raw + (wsm_base - smem_raw_addr);  // the same bytes, generic pointer
  // TMA configs: full[s] (1 arrival + the box's transaction bytes: x tile of stage s landed), then
  // empty[s] (tma_eb: one arrival per warp: stage s no longer read by any wgmma).
  const std::uint32_t bar_base = wsm_base + STAGES * kWStage;
  auto full_bar = [&](int s) { return bar_base + 8u * static_cast<std::uint32_t>(s); };
  auto empty_bar = [&](int s) { return bar_base + 8u * static_cast<std::uint32_t>(STAGES + s); };

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2, tq = lane & 3;
  std::int64_t n_block = blockIdx.x + p.row_block0;  // (persistent: of the CTA's current item, below)
  // Grouped mode: this m block's expert and (block_row) first row (the alignment's output: after the wait), or exit.
  // Only the early-issue TMA configs have the mode (prefill_run_grouped launches no other: their W bases take the
  // expert); the others keep their code as it was.
  std::int64_t expert = 0, m0 = static_cast<std::int64_t>(blockIdx.y) * BM;
  if constexpr (kEarly) {
    if (p.block_expert != nullptr) {
      pdl_wait();
      const int e = p.block_expert[blockIdx.y];
      if (e < 0) {  // past the alignment's total: no token rows here
        pdl_launch_dependents();
        return;
      }
      expert = e;
      if (p.block_row != nullptr) m0 = p.block_row[blockIdx.y];
    }
  } else {
    if (p.block_expert != nullptr) __trap();
  }
  // This CTA's k tiles: its split's (blockIdx.z); persistent: its current item's.
  const int split_id = blockIdx.z;
  std::int64_t kt_begin = split_id * p.k_tiles_per_split;
  int nkt = static_cast<int>(min(p.k_tiles, kt_begin + p.k_tiles_per_split) - kt_begin);
  // Persistent: work item `item` = tile item (row block tile % persist_nx, m block tile / persist_nx, every k tile),
  // or past persist_full part `part` of a tail tile (KernelParams::tail_items).
  int item = static_cast<int>(blockIdx.x);
  int part = -1;
  std::int64_t tail_tile = 0;  // the tail tile's index among the tail tiles (part >= 0)
  bool persist = false;
  // Item `it`'s placement: row block, first token, first k tile, k tiles, part (-1: a whole tile), tail tile.
  struct ItemInfo {
    int n_block, m0, kt_begin, nkt, part, tail_tile;
  };
  auto item_info = [&](int it) {
    ItemInfo w{0, 0, 0, static_cast<int>(p.k_tiles), -1, 0};
    int tile = it;
    if (it >= p.persist_full) {  // a part of a tail tile
      const int u = it - p.persist_full;
      w.tail_tile = u % p.tail_items;
      tile = p.persist_full + w.tail_tile;
      w.part = u / p.tail_items;
      w.kt_begin = w.part * p.tail_kts;
      w.nkt = static_cast<int>(min(p.k_tiles - w.kt_begin, static_cast<std::int64_t>(p.tail_kts)));
    }
    w.n_block = static_cast<int>(p.row_block0) + tile % p.persist_nx;
    w.m0 = tile / p.persist_nx * BM;
    return w;
  };
  __shared__ ItemInfo next_item_info;  // KernelParams::next_info: the next item's, written by thread 0 in the k loop
  auto place_info = [&](const ItemInfo& w) {
    n_block = w.n_block;
    m0 = w.m0;
    kt_begin = w.kt_begin;
    nkt = w.nkt;
    part = w.part;
    tail_tile = w.tail_tile;
  };
  auto place_item = [&]() { place_info(item_info(item)); };
  if constexpr (kPersistable) {
    if (p.persist_items > 0) {
      persist = true;
      place_item();
    }
  } else {
    if (p.persist_items > 0) __trap();  // the launcher asks it of kPersistable configs only
  }
  // Token rows of this m block's x tiles (TMA: the last block's box, tmap_tail, holds M % BM).
  int x_rows = static_cast<int>(min(static_cast<std::int64_t>(BM), p.m - m0));

  // This warp's 16-row tiles (one per 64-row block): row-16 tile index in the layout.
  // The grid rounds N_pad up to BN: a 64-row block past N_pad loads nothing (zero A) and stores nothing.
  std::int64_t nt[MB];
  bool live[MB];
  auto place_rows = [&]() {
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const int blk = (warp >> 2) * MB + mb;  // 64-row block of the CTA
      std::int64_t row = n_block * kBN + blk * 64;
      if (kEarly && p.silu_inter > 0) {  // grouped GEMM 1: gate rows in the first half of the blocks, their up rows in the second
        constexpr int kHalf = kBN >= 128 ? kBN / 128 : 1;  // (the launcher refuses tiles of one 64-row block)
        row = n_block * (kBN / 2) + (blk % kHalf) * 64 + (blk >= kHalf ? p.silu_inter : 0);
      }
      nt[mb] = (row + (warp & 3) * 16) / 16;
      live[mb] = nt[mb] * 16 < p.n_pad;
    }
  };
  place_rows();

  const T* x = static_cast<const T*>(p.x);

  // ---- tile loader (cp.async, one commit group per tile) ----
  // x: token row r, 16-byte chunk c (k = 8c .. 8c+7) -> swizzled smem, shared by the CTA.
  // W: each thread copies exactly what it dequantizes later (its lane's 16 bytes of the layout,
  // its rows' scale pairs and zero bytes) into its private slot, so its own wait_group makes them
  // readable, with no barrier. W goes through shared memory rather than straight into registers:
  // ptxas tracks all register-destination loads of a ring on one scoreboard and waits for it at
  // every branch of the loop, which made each tile wait for the loads issued just before it
  // (about 1.3 us per k tile at any tile size, measured 2026-12-02 run 1).
  // x with TMA: thread 0 arms stage `stage`'s full barrier with the box bytes and issues the
  // copy. tma_eb first waits until every warp released the tile that the stage held before
  // (t - STAGES; its use u = t / STAGES - 1 completed phase u of empty[stage]).
  auto load_x = [&](int t, int stage) {
    const std::int64_t kt = kt_begin + t;
    const std::int64_t k0 = kt * 64;
    if constexpr (kTma) {
      if (tid == 0) {
        if constexpr (XL == XLoad::tma_eb)
          if (t >= STAGES) mbar_wait(empty_bar(stage), static_cast<std::uint32_t>(t / STAGES - 1) & 1u);
        if constexpr (kPersistable)  // the item's first refill of the output stages: the last item's TMA store read them
          if (t == kAhead && p.tma_out) bulk_wait_read();
#if defined(W4A16_DIAG_NO_X_REFILL)  // timing-only diagnostic build (wrong results): the x tiles never reloaded
        if (t >= STAGES) {
          mbar_arrive(full_bar(stage));  // completes the stage's phase with the bytes it already holds
          return;
        }
#endif
        mbar_arrive_expect_tx(full_bar(stage), static_cast<std::uint32_t>(x_rows < BM ? p.tail_box_rows : BM) * 128u);
        tma_load_2d(smem_base + stage * kStageBytes, x_rows < BM ? &tmap_tail : &tmap_x, full_bar(stage), static_cast<int>(k0),
                    static_cast<int>(m0));
      }
    } else {
#pragma unroll
      for (int i = 0; i < kChunks / kThreads; ++i) {
        const int idx = tid + i * kThreads;
        const int r = idx >> 3, c = idx & 7;
        const std::int64_t tok = m0 + r, kk = k0 + 8 * c;
        const bool valid = tok < p.m && kk < p.k;
        const T* src = valid ? x + tok * p.x_stride + kk : x;
        cp_async16(smem_base + stage * kStageBytes + r * 128 + ((c ^ (r & 7)) << 4), src, valid);
      }
    }
  };
  auto load_w = [&](int t, int stage) {
    const std::int64_t kt = kt_begin + t;
    const std::int64_t k0 = kt * 64;
    // Groups of the two k32 halves, clamped to G-1: padded k (>= K) has q = 0 against x = 0.
    // ONE_GROUP: g >= 64 (k0 % 64 == 0: k0 + 32 lies in k0's group) or one group: g[0] only.
    std::int64_t g[2] = {0, 0};
    if (p.groups > 1) {
      g[0] = min(k0 >> p.group_shift, p.groups - 1);
      if constexpr (!ONE_GROUP) g[1] = min((k0 + 32) >> p.group_shift, p.groups - 1);
    }
    const std::uint32_t ws = wsm_base + stage * kWStage;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      // Dead blocks (past N_pad) zero-fill: scale 0 makes their weights 0.
      const bool v = live[mb];
      cp_async16(ws + (mb * kThreads + tid) * 16, v ? p.qweight + (nt[mb] * p.k_tiles + kt) * 32 + lane : p.qweight, v);
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        const std::uint32_t aux = ws + kWq + (mb * kThreads + tid) * kAux + h * 4;
        cp_async4(aux, v ? p.scales + (g[h] * p.n_pad + 16 * nt[mb]) / 2 + gid : p.scales, v);
        if constexpr (ZEROS)  // the 4-byte word holding byte gid of the tile's 8 zero bytes
          cp_async4(aux + kH * 4,
                    v ? p.zeros + (g[h] * (p.n_pad / 16) + nt[mb]) * 8 + (gid & ~3) : p.zeros, v);
      }
    }
  };
  // The same copies as load_w with per-thread base pointers made once (SCHED 1 / 2 only, so the
  // measured kernels keep their SASS): per tile one 32-bit group index per k32 half and one
  // offset per pointer instead of ~100 instructions of 64-bit index arithmetic (SASS of config 12).
  // Offsets in 32 bits: k0 < 2^31 and g * N_pad / 2 < 2^31 (the scale tensor's element count).
  // Dead blocks keep their base (step 0): src-size 0 reads nothing.
  const uint4* wq_base[MB];
  const std::uint32_t* sc_base[MB];
  const std::uint8_t* z_base[MB];
  int k0_begin = 0;
  auto place_bases = [&]() {
    k0_begin = static_cast<int>(kt_begin * 64);
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      // (grouped mode: expert `expert`'s layer, expert_* further per expert; 0 otherwise)
      wq_base[mb] = live[mb] ? p.qweight + expert * p.expert_qw + (nt[mb] * p.k_tiles + kt_begin) * 32 + lane : p.qweight;
      sc_base[mb] = live[mb] ? p.scales + expert * p.expert_sc + 8 * nt[mb] + gid : p.scales;
      z_base[mb] = ZEROS && live[mb] ? p.zeros + expert * p.expert_z + nt[mb] * 8 + (gid & ~3) : p.zeros;
    }
  };
  if constexpr (kEarly) place_bases();
  const int g_last = static_cast<int>(p.groups - 1), g_stride = static_cast<int>(p.n_pad / 2);
  const int g_shift = p.group_shift;
  const bool grouped = p.groups > 1;
  auto load_w_lean = [&](int t, int stage) {
    const int k0 = k0_begin + 64 * t;
    int goff[2] = {0, 0};  // g * N_pad / 2: scale words and zero bytes of group g start there
    if (grouped) {
      goff[0] = min(k0 >> g_shift, g_last) * g_stride;
      if constexpr (!ONE_GROUP) goff[1] = min((k0 + 32) >> g_shift, g_last) * g_stride;  // as load_w
    }
    const std::uint32_t ws = wsm_base + stage * kWStage;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const bool v = live[mb];
      cp_async16(ws + (mb * kThreads + tid) * 16, wq_base[mb] + (v ? 32 * t : 0), v);
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        const int off = v ? goff[h] : 0;
        const std::uint32_t aux = ws + kWq + (mb * kThreads + tid) * kAux + h * 4;
        cp_async4(aux, sc_base[mb] + off, v);
        if constexpr (ZEROS) cp_async4(aux + kH * 4, z_base[mb] + off, v);
      }
    }
  };
  auto load_tile = [&](int t, int stage) {
    load_x(t, stage);
    if constexpr (kEarly) {
#if defined(W4A16_DIAG_NO_W_REFILL)  // timing-only diagnostic build (wrong results): the ring's W slots never refilled
      if (t >= STAGES) return;
#endif
      load_w_lean(t, stage);
    } else
      load_w(t, stage);
  };

  // ---- dequantize stage `stage`'s W slot into A-fragment buffer `buf` (4 k16 sub-tiles per block) ----
  std::uint32_t afrag[kBufs][MB][4][4];  // [buffer][block][k16 sub-tile][register]
  // Split in two so that SCHED 2 can read a stage's slot (read_w) before the wgmma wait and
  // convert it (dequant_raw) after: raw words of one stage, per 64-row block.
  struct WRaw {
    std::uint32_t w[MB][4];   // the 16-byte layout word group
    std::uint32_t sc[MB][kH];  // scale pairs of the two k32 halves (ONE_GROUP: of the tile)
    std::uint32_t zw[MB][kH];  // zero words of the two halves (uint4 only; ONE_GROUP: of the tile)
  };
  auto read_w = [&](int stage, WRaw& raw) {
    const unsigned char* ws = wsm + stage * kWStage;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const uint4 wq = *reinterpret_cast<const uint4*>(ws + (mb * kThreads + tid) * 16);
      raw.w[mb][0] = wq.x;
      raw.w[mb][1] = wq.y;
      raw.w[mb][2] = wq.z;
      raw.w[mb][3] = wq.w;
      // The aux word in one ld.shared (4, 8 or 16 bytes): scale pairs [h], then zero words [h].
      struct alignas(kAux) Aux {
        std::uint32_t w[kAux / 4];
      };
      const Aux aux = *reinterpret_cast<const Aux*>(ws + kWq + (mb * kThreads + tid) * kAux);
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        raw.sc[mb][h] = aux.w[h];
        raw.zw[mb][h] = 0;
        if constexpr (ZEROS) raw.zw[mb][h] = aux.w[kH + h];
      }
    }
  };
  const std::uint32_t zsel = zero_rep_sel(static_cast<std::uint32_t>(gid & 3));  // uint4: this thread's zero byte, twice
  auto dequant_raw = [&](const WRaw& raw, int buf) {
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      std::uint32_t zz_lo[kH], zz_hi[kH], sc[kH];
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        sc[h] = raw.sc[mb][h];
        if constexpr (ZEROS) {
          // zb = z[row gid] | z[row gid + 8] << 4 (byte gid % 4 of the word) in bytes 0 and 2, then one
          // lop3 per constant (dequant_consts.hpp): a byte permute instead of shift, mask and rebuild.
          const std::uint32_t rep = __byte_perm(raw.zw[mb][h], 0, zsel);
          zz_lo[h] = zlo_of_rep(Num<T>::kMagic, rep);
          zz_hi[h] = Num<T>::zhi_of_rep(rep);
        } else {  // uint4b8: z = 8
          zz_lo[h] = zlo_of(Num<T>::kMagic, 8);
          zz_hi[h] = Num<T>::zhi_of(8);
        }
      }
      const std::uint32_t words[4] = {raw.w[mb][0], raw.w[mb][1], raw.w[mb][2], raw.w[mb][3]};
      // Broadcast s[gid] / s[gid+8] to both 16-bit halves (dtype-agnostic byte permutes), once per
      // entry: ONE_GROUP converts its one scale pair (and zero word) for both k32 halves.
      std::uint32_t s_lo[kH], s_hi[kH];
#pragma unroll
      for (int e = 0; e < kH; ++e) {
        s_lo[e] = __byte_perm(sc[e], 0, 0x1010);
        s_hi[e] = __byte_perm(sc[e], 0, 0x3232);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = ONE_GROUP ? 0 : h;
#pragma unroll
        for (int j = 2 * h; j < 2 * h + 2; ++j) dequant_word<T>(words[j], zz_lo[e], zz_hi[e], s_lo[e], s_hi[e], afrag[buf][mb][j]);
      }
    }
  };
  auto dequant = [&](int stage, int buf) {
    WRaw raw;
    read_w(stage, raw);
    dequant_raw(raw, buf);
  };

  float acc[MB][kAcc];

  // ---- split 1 (p.epi16): outputs rounded in registers, staged by stmatrix (16 per 128 values), 16-byte stores ----
  // The epilogue ran ~9% of a bm256 tile's warp samples at K = 4096 (llama8b.gate_up M = 1024, stop 53's ncu) with
  // the SM's tensor cores idle (one CTA per SM); this form: 0.96-0.99x the kernel's time there (stop 54 call 11).
  // The tile of row block nb and m block starting at token mm0; the caller has passed a CTA barrier after every
  // warpgroup's wgmma_wait<0>. The act-dtype tile (BM tokens x kBN rows) fills the ring's last kOutStages x stages
  // (the persistent loop's next item loads the first ones meanwhile) as kOutStages panels of 64 rows: BM token lines
  // of 128 bytes each, 16-byte chunk c of token t at chunk c ^ (t % 8) (the TMA 128B swizzle: a panel is a y box),
  // so that the 8 rows of an stmatrix and 8 consecutive chunks of the store loop hit 8 distinct 16-byte bank groups.
  // tma_out (the persistent loop): thread 0 stores the panels by TMA and the CTA goes on; else every thread copies
  // 16 bytes a step.
  const std::uint32_t out_base = smem_base + (STAGES - kOutStages) * kStageBytes;
  auto epi16_store = [&](std::int64_t nb, std::int64_t mm0, bool tma_out) {
    static_assert(kAcc % 8 == 0, "whole x4 groups of packed pairs");
    static_assert(kOutStages * kStageBytes == BM * kBN * 2 && kOutStages <= STAGES, "the output tile fills whole x stages");
    static_assert((BM * 128) % 1024 == 0, "panels stay 1024-aligned (128B swizzle)");
    constexpr int kChunks16 = kBN * 2 / 16;  // 16-byte chunks of one token's rows (8 per panel)
    const T* bias = static_cast<const T*>(p.bias);
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const int wrow = ((warp >> 2) * MB + mb) * 64 + (warp & 3) * 16;  // the warp's 16 rows in the tile
      // Pair p = i / 2 (i even): row wrow + gid + 8 (p & 1), tokens 8 (p >> 1) + 2 tq, + 1 (acc[i], acc[i + 1]).
      // The bias goes into acc in place (its last use), one branch for the tile: a select per accumulator (a bias
      // test inside the rounding) cost 256 instructions a thread without a bias (stop 59's SASS).
      if (bias) {
        const float b[2] = {Num<T>::to_float(bias[nb * kBN + wrow + gid]), Num<T>::to_float(bias[nb * kBN + wrow + gid + 8])};
#pragma unroll
        for (int q = 0; q < kAcc / 2; ++q) {
          acc[mb][2 * q] += b[q & 1];
          acc[mb][2 * q + 1] += b[q & 1];
        }
      }
      std::uint32_t pk[kAcc / 2];
#pragma unroll
      for (int q = 0; q < kAcc / 2; ++q) {
        const T lo = Num<T>::from_float(acc[mb][2 * q]);
        const T hi = Num<T>::from_float(acc[mb][2 * q + 1]);
        pk[q] = static_cast<std::uint32_t>(*reinterpret_cast<const std::uint16_t*>(&lo)) |
                (static_cast<std::uint32_t>(*reinterpret_cast<const std::uint16_t*>(&hi)) << 16);
      }
      // x4 group g: pairs 4 g .. 4 g + 3 = (token chunk 2 g, rows 0-7), (2 g, rows 8-15), (2 g + 1, 0-7), (2 g + 1, 8-15).
      const int ml = lane >> 3, rl = lane & 7;
      const std::uint32_t panel = out_base + static_cast<std::uint32_t>((wrow / 64) * BM * 128);
      const int chunk = (wrow % 64) / 8 + (ml & 1);  // this lane's 8 rows as a 16-byte chunk of the panel's line
#pragma unroll
      for (int g = 0; g < kAcc / 8; ++g) {
        const int token = 8 * (2 * g + (ml >> 1)) + rl;  // token % 8 == rl
        stmatrix_x4_trans(panel + static_cast<std::uint32_t>(token * 128 + ((chunk ^ rl) << 4)), pk[4 * g], pk[4 * g + 1], pk[4 * g + 2],
                          pk[4 * g + 3]);
      }
    }
    if (tma_out) {
      fence_proxy_async();  // this thread's stmatrix writes, visible to the TMA engine's reads
      __syncthreads();
      if (tid == 0) {
#pragma unroll
        for (int pn = 0; pn < kOutStages; ++pn)
          tma_store_2d(&tmap_y, out_base + static_cast<std::uint32_t>(pn * BM * 128), static_cast<int>(nb * kBN + pn * 64), static_cast<int>(mm0));
        bulk_commit();
      }
      return;
    }
    __syncthreads();
    T* const yout = static_cast<T*>(p.y);
    const int vtok = static_cast<int>(min(static_cast<std::int64_t>(BM), p.m - mm0));
    const unsigned char* tile = smem_raw + (out_base - smem_raw_addr);
    T* ytile = yout + mm0 * p.y_stride + nb * kBN;
#pragma unroll 4
    for (int c = tid; c < vtok * kChunks16; c += kThreads) {
      const int tok = c / kChunks16, cc = c % kChunks16;
      *reinterpret_cast<uint4*>(ytile + tok * p.y_stride + cc * 8) =
          *reinterpret_cast<const uint4*>(tile + (cc / 8) * BM * 128 + tok * 128 + (((cc % 8) ^ (tok & 7)) << 4));
    }
  };

  // ---- prologue: barriers (TMA), kAhead tiles in flight, tile 0's W landed and dequantized ----
  if constexpr (kTma) {
    if (tid == 0) {
      tma_prefetch_desc(x_rows < BM ? &tmap_tail : &tmap_x);
      if (persist) tma_prefetch_desc(&tmap_tail);  // a later item may be the last m block
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(full_bar(s), 1);
        if constexpr (XL == XLoad::tma_eb) mbar_init(empty_bar(s), kThreads / 32);
      }
      mbar_fence_init();
    }
    __syncthreads();  // every thread sees initialized barriers before it waits on one
  }
  // PDL: the first kAhead tiles' W words (constant) go out before griddepcontrol.wait, their x
  // tiles after it. TMA: x completes on the mbarriers, so the cp.async groups stay one per tile
  // (W only). cp.async x: the W copies stay uncommitted and join group 0 (with x tile 0); group s
  // holds x tile s, so waiting for groups 0..t still covers tile t's W and x.
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < nkt) {
      if constexpr (kEarly)
        load_w_lean(s, s);  // the same copies from the per-thread bases (~100 fewer instructions per tile)
      else
        load_w(s, s);
    }
    if constexpr (kTma) cp_async_commit();
  }
  pdl_wait();
  pdl_launch_dependents();
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < nkt) load_x(s, s);
    if constexpr (!kTma) cp_async_commit();
  }
  // Persistent: bit s of flip = parity of the phases full_bar(s) completed in the CTA's earlier items (each starts
  // at stage 0); odd_of(n) = the stages an item of n k tiles uses an odd number of times.
  std::uint32_t flip = 0;
  auto odd_of = [](int n) {
    std::uint32_t odd = 0;
#pragma unroll
    for (int s = 0; s < STAGES; ++s)
      if (s < n && (((n - 1 - s) / STAGES + 1) & 1)) odd |= 1u << s;
    return odd;
  };
  for (;;) {  // persistent: one trip per item; else one trip
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[mb][i] = 0.f;
    cp_async_wait<kAhead - 1>();
    dequant(0, 0);

    // ---- main loop: tile t = t0 + u uses A buffer u (compile-time index) ----
    // Schedule per tile t (OVERLAP, wgmma): barrier (everyone's x tile t landed) -> issue tile t's
    // wgmma group -> wait until only that group is in flight (tile t-1's retired: its A buffer and
    // x stage are free) -> wait for this thread's part of tile t+1 -> dequantize it into the other
    // A buffer while tile t's group runs. No register an in-flight wgmma reads is written, and
    // every wgmma input is defined before the fence, so ptxas keeps the wgmmas asynchronous (no
    // C7513/C7515 serialization). A do-while (nkt >= 1: the plan never makes an empty split)
    // keeps out a zero-trip path, which ptxas also serializes on.
    // SCHED 1 / 2 (early issue): the barrier and the refill move behind the wgmma issue (template
    // parameter block); the A buffer of tile t is t % kBufs, the loop is unrolled kBufs times.
    WRaw raw_next;  // SCHED 2: tile t+1's slot words, read before the wgmma wait
    // Early issue with x by TMA: the loop is unrolled lcm(kBufs, STAGES) times, so that every stage
    // index (x tile, refill, dequantization) and the A buffer are compile-time constants (t0 is a
    // multiple of STAGES) and only the phase parity needs t0; elsewhere kBufs times, stages mod STAGES.
    constexpr int kUnroll = kEarly && XL == XLoad::tma ? std::lcm(kBufs, STAGES) : kBufs;
    constexpr bool kConstStage = kUnroll % STAGES == 0;
    int t0 = 0;
    do {
      // KernelParams::next_info: once per item that has a next one (past the last, item_info would divide by
      // tail_items = 0), at the second trip (the first where the item has at most 2 trips).
      if constexpr (kPersistable)
        if (persist && p.next_info && tid == 0 && t0 == (nkt > 2 * kUnroll ? kUnroll : 0) &&
            item + static_cast<int>(gridDim.x) < p.persist_items)
          next_item_info = item_info(item + static_cast<int>(gridDim.x));
      // stage of tile t0 + u + off: a constant where t0 % STAGES == 0
      auto stage_of = [&](int u, int off) { return kConstStage ? (u + off) % STAGES : (t0 + u + off) % STAGES; };
      const int use0 = t0 / STAGES;  // uses of every stage before this trip (kConstStage)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int t = t0 + u;
        const int ub = u % kBufs;  // A buffer of tile t (t0 % kBufs == 0)
        // cp.async x: everyone's tile t landed (each thread waited for its own part before the
        // dequant). All: no warp still reads the stage refilled next (tile t-1's with wait 0 / mma,
        // t-2's with wait 1). The proxy fence becomes MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, with the
        // later tiles' cp.asyncs in flight: the suspected per-tile drain that the TMA configs avoid.
        if constexpr (WGMMA && XL == XLoad::cp_async)
          fence_proxy_async();
        if constexpr (!kEarly) {
          if constexpr (XL != XLoad::tma_eb) __syncthreads();  // tma_eb: the empty barriers order the refill
          if (t + kAhead < nkt) load_tile(t + kAhead, stage_of(u, kAhead));
          cp_async_commit();
        }

        const int stage = stage_of(u, 0);
        // TMA: x tile t landed (its use t / STAGES of the stage = phase parity).
        const int use = kConstStage ? use0 + u / STAGES : t / STAGES;
        if constexpr (kTma) mbar_wait(full_bar(stage), (static_cast<std::uint32_t>(use) + (flip >> stage)) & 1u);
        const std::uint32_t xs = smem_base + stage * kStageBytes;
        if constexpr (WGMMA) {
          // k16 sub-tile j starts 32 bytes into each swizzled 128-byte row.
          std::uint64_t desc[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) desc[j] = smem_desc_sw128(xs) + 2 * j;
          // Materialize every wgmma input before the fence (empty asm keeps its order): an address or
          // dequant instruction the compiler sank between fence and wgmma would serialize them.
#pragma unroll
          for (int j = 0; j < 4; ++j) asm volatile("" : "+l"(desc[j])::"memory");
#pragma unroll
          for (int mb = 0; mb < MB; ++mb)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
              for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(afrag[ub][mb][j][r])::"memory");
          wgmma_fence();
#pragma unroll
          for (int mb = 0; mb < MB; ++mb)
#pragma unroll
            for (int j = 0; j < 4; ++j) WgmmaRS<T, BM>::mma(acc[mb], afrag[ub][mb][j], desc[j]);
          wgmma_commit();
          if constexpr (kEarly) {
            // Every warpgroup passed tile t-1's wait_group (kBufs - 1): tiles <= t - kBufs retired,
            // so the stage of tile t + kAhead = t + STAGES - kBufs is free. Runs while this tile's
            // group executes; touches no accumulator and no A buffer. tma_eb: no barrier; thread 0's
            // refill waits on the stage's empty mbarrier (every warp arrived after retiring tile
            // t-2, below in iteration t-1), so the warpgroups drift apart freely.
            if constexpr (XL != XLoad::tma_eb) __syncthreads();
            if (t + kAhead < nkt) load_tile(t + kAhead, stage_of(u, kAhead));
            cp_async_commit();
            if constexpr (SCHED == 2) {
              // Tile t+1's slot landed (as below); its words go to registers while tile t-1's group
              // may still run, so only the conversion is left after the wait.
              if (t + 1 < nkt) {
                cp_async_wait<kAhead - 1>();
                read_w(stage_of(u, 1), raw_next);
              }
            }
            wgmma_wait<kBufs - 1>();  // tile t-kBufs+1's group is done: its A buffer may be reused
          } else if constexpr (OVERLAP)
            wgmma_wait<1>();  // tile t-1's group is done: its A buffer and x stage may be reused
          else
            wgmma_wait<0>();
          // tma_eb: this warp no longer reads tile t-1's stage (wait_group retired its async-proxy
          // reads); the arrive releases them to thread 0's refill (acquire in its empty wait).
          if constexpr (XL == XLoad::tma_eb)
            if (lane == 0 && t >= 1) mbar_arrive(empty_bar((t - 1) % STAGES));
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
#pragma unroll
            for (int c = 0; c < BM / 8; c += 2) {
              // ldmatrix x4: matrices (tokens 8c.., k 16j..), (8c.., 16j+8..), (8c+8.., 16j..), (8c+8.., 16j+8..)
              const int r = 8 * c + (lane & 7) + ((lane >> 4) << 3);
              const int ch = 2 * j + ((lane >> 3) & 1);
              std::uint32_t b[4];
              ldsm_x4(xs + r * 128 + ((ch ^ (r & 7)) << 4), b);
#pragma unroll
              for (int mb = 0; mb < MB; ++mb) {
                float* d = acc[mb];
                mma16816<T>(d[4 * c], d[4 * c + 1], d[4 * c + 2], d[4 * c + 3], afrag[ub][mb][j], b[0], b[1]);
                mma16816<T>(d[4 * c + 4], d[4 * c + 5], d[4 * c + 6], d[4 * c + 7], afrag[ub][mb][j], b[2], b[3]);
              }
            }
          }
        }
        if (t + 1 >= nkt) break;  // uniform across the CTA; leaves the do-while too
        if constexpr (SCHED == 2) {
          // Pinned after the wait (volatile asms keep their order): the conversion writes the A
          // buffer of tile t-1's group, which must have retired.
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
#pragma unroll
            for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(raw_next.w[mb][i]));
#pragma unroll
            for (int h = 0; h < kH; ++h) asm volatile("" : "+r"(raw_next.sc[mb][h]), "+r"(raw_next.zw[mb][h]));
          }
          dequant_raw(raw_next, (ub + 1) % kBufs);
        } else {
          // Tile t+1: groups 0..t+1 of the kAhead + t + 1 committed have landed (this thread's).
          cp_async_wait<kAhead - 1>();
          dequant(stage_of(u, 1), (ub + 1) % kBufs);
        }
      }
      t0 += kUnroll;
    } while (t0 < nkt);
    if constexpr (WGMMA) wgmma_wait<0>();
    cp_async_wait<0>();
    if constexpr (kPersistable) {
      if (persist) {
        // Every warpgroup's wgmmas retired: the ring is free. The next item's first kAhead stages (0 .. kAhead - 1)
        // load while this item's output tile goes through the last stages. tma_out: the previous item's TMA store has
        // read those stages before anyone's stmatrix writes them (thread 0's wait, then the barrier), and load_x waits
        // again before the next item's first refill of them; else the fence orders the store loop's generic reads of
        // them before that refill (issued after the loop's first CTA barrier).
        const std::int64_t done_nb = n_block, done_m0 = m0, done_tail = tail_tile;
        const int done_nkt = nkt, done_part = part;
        if (p.tma_out && tid == 0) bulk_wait_read();
        __syncthreads();
        // A tail tile's part: its accumulators to the workspace; the part that arrives last sums every part (in part
        // order, 0 + p0 + p1 + ...) into acc and stores the tile, the others store nothing.
        bool store_out = true;
        if (done_part >= 0) {
          constexpr int kPart = MB * kAcc * kThreads;  // fp32 values of one part (BM x kBN)
          float* const parts = p.tail_partial + done_tail * p.tail_split * static_cast<std::int64_t>(kPart);
          // float4 per thread (4 consecutive accumulators; thread-major by float4: 512 contiguous bytes a warp instruction).
          float4* const mine = reinterpret_cast<float4*>(parts + done_part * kPart) + tid;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb)
#pragma unroll
            for (int i = 0; i < kAcc; i += 4)
              __stcg(mine + ((mb * kAcc + i) / 4) * kThreads, make_float4(acc[mb][i], acc[mb][i + 1], acc[mb][i + 2], acc[mb][i + 3]));
          __threadfence();  // the part's values before the arrival
          __syncthreads();
          int last = 0;
          if (tid == 0) last = atomicAdd(p.tail_count + done_tail, 1) == p.tail_split - 1;
          store_out = __syncthreads_or(last) != 0;
          if (store_out) {
            __threadfence();  // every part's values after the arrivals
            // Summed in place from the workspace (this part's own values too): no second set of registers.
#pragma unroll
            for (int mb = 0; mb < MB; ++mb)
#pragma unroll
              for (int i = 0; i < kAcc; ++i) acc[mb][i] = 0.f;
            for (int q = 0; q < p.tail_split; ++q) {
              const float4* src = reinterpret_cast<const float4*>(parts + q * kPart) + tid;
#pragma unroll
              for (int mb = 0; mb < MB; ++mb)
#pragma unroll
                for (int i = 0; i < kAcc; i += 4) {
                  const float4 v = __ldcg(src + ((mb * kAcc + i) / 4) * kThreads);
                  acc[mb][i] += v.x;
                  acc[mb][i + 1] += v.y;
                  acc[mb][i + 2] += v.z;
                  acc[mb][i + 3] += v.w;
                }
            }
            if (tid == 0) p.tail_count[done_tail] = 0;  // for the next launch (every part has arrived)
          }
        }
        item += static_cast<int>(gridDim.x);
        const bool more = item < p.persist_items;
        if (more) {
          // thread 0's, written before the k loop's CTA barriers; its next write (the next item's k loop) comes after
          // epi16_store's barrier. A part that stores nothing passes no barrier here, but a part is its CTA's last item.
          if (p.next_info)
            place_info(next_item_info);
          else
            place_item();
          x_rows = static_cast<int>(min(static_cast<std::int64_t>(BM), p.m - m0));
          place_rows();
          place_bases();
#pragma unroll
          for (int s = 0; s < kAhead; ++s) {
            if (s < nkt) load_tile(s, s);
            cp_async_commit();
          }
        }
        if (store_out) epi16_store(done_nb, done_m0, p.tma_out != 0);
        if (!more) {
          if (p.tma_out && tid == 0) bulk_wait_all();  // the CTA's shared memory lives until its last store has read it
          return;
        }
        if (!p.tma_out) fence_proxy_async();
        flip ^= odd_of(done_nkt);
        continue;
      }
    }
    break;
  }  // items

  if constexpr (kTma && kEarly) {
    if (p.epi16 && p.split == 1 && p.block_expert == nullptr && (n_block + 1) * kBN <= p.n && (p.y_stride & 7) == 0 &&
        (reinterpret_cast<std::uintptr_t>(p.y) & 15) == 0) {
      __syncthreads();  // every warpgroup's wgmmas retired: no x stage or W slot is read any more
      epi16_store(n_block, m0, false);
      return;
    }
  }

  // ---- TMA configs: the CTA's fp32 tile through shared memory (split-K in the cluster too) ----
  // Every warpgroup's accumulators go to shared memory, token-major (N contiguous), and leave as
  // 4 rows of one token per thread and step: coalesced 16-byte partials / 8-byte outputs from a
  // short loop, where the fragment-order epilogue below issues one scattered store (and ~20
  // instructions of index math) per accumulator, fully unrolled (2026-12-03 night: ~3000 SASS
  // instructions per warp and a quarter of the kernel's instruction-fetch stalls at M = 128). The
  // same values and the same float operations per output (acc [+ bias] -> T; partials as they
  // are): bit-identical. With split-K in the cluster the ranks' tiles are summed first (below).
  if constexpr (kTma) {
    // The fp32 tile, token-major (N contiguous) with rows padded by 4 floats: the fragment stores
    // (8 rows gid x 4 token pairs tq per warp) hit 32 distinct banks; rows stay 16-byte aligned.
    constexpr int kRedStride = kBN + 4;
    static_assert(BM * kRedStride * 4 <= STAGES * (kStageBytes + kWStage), "the fp32 tile fits in the x + W rings");
    constexpr int kVec = BM * kBN / 4;  // float4 groups of the tile (4 rows of one token)
    __syncthreads();  // every warpgroup's wgmmas retired: no x stage or W slot is read any more
    float* red = reinterpret_cast<float*>(smem_raw + (smem_base - smem_raw_addr));
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const int row0 = ((warp >> 2) * MB + mb) * 64 + (warp & 3) * 16 + gid;
#pragma unroll
      for (int i = 0; i < kAcc; ++i)
        red[(8 * (i >> 2) + 2 * tq + (i & 1)) * kRedStride + row0 + 8 * ((i >> 1) & 1)] = acc[mb][i];
    }
    const T* bias = static_cast<const T*>(p.bias);
    T* y = static_cast<T*>(p.y);
    // 8-byte stores of 4 outputs where every row start of y is 8-byte aligned (else 4 scalar stores).
    const bool y_vec = (p.n & 3) == 0 && (p.y_stride & 3) == 0 && (reinterpret_cast<std::uintptr_t>(y) & 7) == 0;
    auto store_y = [&](std::int64_t tok, std::int64_t row, const float (&sv)[4]) {
      alignas(8) T o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) o[j] = Num<T>::from_float(bias && row + j < p.n ? sv[j] + Num<T>::to_float(bias[row + j]) : sv[j]);
      if (y_vec) {
        *reinterpret_cast<uint2*>(y + tok * p.y_stride + row) = *reinterpret_cast<const uint2*>(o);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (row + j < p.n) y[tok * p.y_stride + row + j] = o[j];
      }
    };
    // Tile whose rows all lie below N (every tile of a layer with N % kBN == 0), with 8-byte-aligned
    // rows: the store loops below take a lean form, no bounds checks, tile-relative offsets from bases
    // computed once, several steps in flight (unrolled), over the tile's first `vend` float4 groups:
    // the groups are token-major, so those are exactly the tokens below M (all of them but in the
    // last m block of an M that is not a multiple of BM). The serial checked form cost ~4 us per CTA
    // on a bm256 tile (2026-12-03 stop 21: ncu put 43% of qwen0.5b.gate_up M = 1024's warp samples
    // after the k loop). Same values and float operations per output: the same bits.
    const bool rows_in = (n_block + 1) * kBN <= p.n;
    const int vend = static_cast<int>(std::min<std::int64_t>(BM, p.m - m0)) * (kBN / 4);
    const std::int64_t row0 = n_block * kBN;
    // One step of the lean form: 4 rows of one token from fp32 sums sv (+ bias) to y.
    auto store_y_lean = [&](T* ytile, const T* btile, int tok_l, int row_l, const float (&sv)[4]) {
      alignas(8) T o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) o[j] = Num<T>::from_float(btile ? sv[j] + Num<T>::to_float(btile[row_l + j]) : sv[j]);
      *reinterpret_cast<uint2*>(ytile + tok_l * p.y_stride + row_l) = *reinterpret_cast<const uint2*>(o);
    };
    if (p.cluster_reduce) {
      cluster_sync_all();  // every rank's tile is in its shared memory
      constexpr int kMaxSplit = 8;        // cluster ranks: kPrefillMaxSplit (prefill.hpp), the portable cluster size
      const int split = p.split;
      // 4 rows of one token summed over the ranks: every rank's load in flight at once (one DSMEM round
      // trip, not split of them), then the sum in rank order: the same additions as reduce_kernel.
      auto rank_sum = [&](int tok_l, int row_l, float (&sv)[4]) {
        const std::uint32_t off = smem_base + static_cast<std::uint32_t>((tok_l * kRedStride + row_l) * 4);
        float4 q[kMaxSplit];
#pragma unroll
        for (int r = 0; r < kMaxSplit; ++r)
          if (r < split) q[r] = ld_cluster_f4(cluster_map(off, static_cast<std::uint32_t>(r)));
        float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int r = 0; r < kMaxSplit; ++r)
          if (r < split) {
            s.x += q[r].x;
            s.y += q[r].y;
            s.z += q[r].z;
            s.w += q[r].w;
          }
        sv[0] = s.x;
        sv[1] = s.y;
        sv[2] = s.z;
        sv[3] = s.w;
      };
      if (rows_in && y_vec) {
        // The valid groups shared out among the ranks (every rank still sums all ranks in rank order).
        const int begin = vend * split_id / split, end = vend * (split_id + 1) / split;  // <= 8192 * 8: int
        T* ytile = y + m0 * p.y_stride + row0;
        const T* btile = bias ? bias + row0 : nullptr;
        if constexpr (MINB == 1) {
          if (split == 2) {
            // One CTA per SM leaves this loop's latency exposed (with 2, the other CTA's k loop hides
            // it): 8 groups per step, their 16 remote loads issued before any sum, the same additions
            // as rank_sum (0 + rank 0 + rank 1). 2026-12-03 stop 22: ncu of llama8b.qkv M = 1024 (bm256,
            // split 2) put 25% of the warp samples here, long-scoreboard on one load pair per step.
            constexpr int kG = 8;
            const std::uint32_t base0 = cluster_map(smem_base, 0u), base1 = cluster_map(smem_base, 1u);
            for (int v0 = begin + tid; v0 < end; v0 += kG * kThreads) {
              float4 q0[kG], q1[kG];
#pragma unroll
              for (int g = 0; g < kG; ++g) {
                const int v = v0 + g * kThreads;
                const std::uint32_t off = static_cast<std::uint32_t>(((v / (kBN / 4)) * kRedStride + (v % (kBN / 4)) * 4) * 4);
                if (v < end) {
                  q0[g] = ld_cluster_f4_batched(base0 + off);
                  q1[g] = ld_cluster_f4_batched(base1 + off);
                }
              }
#pragma unroll
              for (int g = 0; g < kG; ++g) {
                const int v = v0 + g * kThreads;
                if (v >= end) break;
                const float sv[4] = {0.f + q0[g].x + q1[g].x, 0.f + q0[g].y + q1[g].y, 0.f + q0[g].z + q1[g].z,
                                     0.f + q0[g].w + q1[g].w};
                store_y_lean(ytile, btile, v / (kBN / 4), (v % (kBN / 4)) * 4, sv);
              }
            }
            cluster_sync_relaxed();
            return;
          }
        }
#pragma unroll 4
        for (int v = begin + tid; v < end; v += kThreads) {
          const int tok_l = v / (kBN / 4), row_l = (v % (kBN / 4)) * 4;
          float sv[4];
          rank_sum(tok_l, row_l, sv);
          store_y_lean(ytile, btile, tok_l, row_l, sv);
        }
        cluster_sync_relaxed();
        return;
      }
      const int begin = kVec * split_id / split, end = kVec * (split_id + 1) / split;
      for (int v = begin + tid; v < end; v += kThreads) {
        const int tok_l = v / (kBN / 4), row_l = (v % (kBN / 4)) * 4;
        const std::int64_t tok = m0 + tok_l, row = n_block * kBN + row_l;
        if (tok >= p.m || row >= p.n) continue;
        float sv[4];
        rank_sum(tok_l, row_l, sv);
        store_y(tok, row, sv);
      }
      cluster_sync_relaxed();  // no rank exits (freeing its shared memory) while another still reads it
      return;
    }
    __syncthreads();  // the whole tile is in shared memory
    if (kEarly && p.block_expert != nullptr) {  // grouped mode (split 1, no bias; contract above): every token row is real or a sentinel
      if (p.silu_inter > 0) {
        // silu(gate) * up: local rows r (gate) and r + kBN/2 (up) of each token, 4 outputs per step.
        constexpr int kQ = kBN / 8;  // float4 groups of the gate half per token
        T* ytile = y + m0 * p.y_stride + n_block * (kBN / 2);
#pragma unroll 4
        for (int v = tid; v < BM * kQ; v += kThreads) {
          const int tok_l = v / kQ, r = (v % kQ) * 4;
          const float4 g = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + r);
          const float4 u = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + kBN / 2 + r);
          const float gs[4] = {g.x, g.y, g.z, g.w}, us[4] = {u.x, u.y, u.z, u.w};
          alignas(8) T o[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) o[j] = Num<T>::from_float(gs[j] / (1.f + __expf(-gs[j])) * us[j]);
          *reinterpret_cast<uint2*>(ytile + tok_l * p.y_stride + r) = *reinterpret_cast<const uint2*>(o);
        }
      } else {
        // Rows by the row map (the alignment's sorted ids), sentinels skipped, 4 outputs (8 bytes) per step.
        constexpr int kQ = kBN / 4;
        const std::int64_t n_valid = min(static_cast<std::int64_t>(kBN), p.n - row0);  // a multiple of 4 (N % 64 == 0)
        T* rows = static_cast<T*>(p.rows_out);
#pragma unroll 4
        for (int v = tid; v < BM * kQ; v += kThreads) {
          const int tok_l = v / kQ, r = (v % kQ) * 4;
          const int dst = __ldg(p.row_map + m0 + tok_l);
          if (dst >= p.row_map_limit || r >= n_valid) continue;
          const float4 q = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + r);
          alignas(8) T o[4] = {Num<T>::from_float(q.x), Num<T>::from_float(q.y), Num<T>::from_float(q.z), Num<T>::from_float(q.w)};
          *reinterpret_cast<uint2*>(rows + static_cast<std::int64_t>(dst) * p.n + row0 + r) = *reinterpret_cast<const uint2*>(o);
        }
      }
      return;
    }
    // Partials (split > 1, summed by reduce_kernel) as float4 where N % 4 == 0 (the workspace is
    // 256-byte aligned, so every row start is 16-byte aligned), else per element.
    const bool p_vec = (p.n & 3) == 0;
    if (rows_in && (p.split == 1 ? y_vec : p_vec)) {
      if (p.split == 1) {
        T* ytile = y + m0 * p.y_stride + row0;
        const T* btile = bias ? bias + row0 : nullptr;
#pragma unroll 4
        for (int v = tid; v < vend; v += kThreads) {
          const int tok_l = v / (kBN / 4), row_l = (v % (kBN / 4)) * 4;
          const float4 q = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + row_l);
          const float sv[4] = {q.x, q.y, q.z, q.w};
          store_y_lean(ytile, btile, tok_l, row_l, sv);
        }
      } else {
        float* ptile = p.partial + (static_cast<std::int64_t>(split_id) * p.m + m0) * p.n + row0;
#pragma unroll 4
        for (int v = tid; v < vend; v += kThreads) {
          const int tok_l = v / (kBN / 4), row_l = (v % (kBN / 4)) * 4;
          *reinterpret_cast<float4*>(ptile + tok_l * p.n + row_l) = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + row_l);
        }
      }
      return;
    }
#pragma unroll 1
    for (int v = tid; v < kVec; v += kThreads) {
      const int tok_l = v / (kBN / 4), row_l = (v % (kBN / 4)) * 4;
      const std::int64_t tok = m0 + tok_l, row = n_block * kBN + row_l;
      if (tok >= p.m || row >= p.n) continue;
      const float4 q = *reinterpret_cast<const float4*>(red + tok_l * kRedStride + row_l);
      if (p.split == 1) {
        const float sv[4] = {q.x, q.y, q.z, q.w};
        store_y(tok, row, sv);
      } else {
        float* dst = p.partial + (static_cast<std::int64_t>(split_id) * p.m + tok) * p.n + row;
        if (p_vec) {
          *reinterpret_cast<float4*>(dst) = q;
        } else {
          const float sv[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (row + j < p.n) dst[j] = sv[j];
        }
      }
    }
    return;
  }

  // ---- the other configs: each accumulator stored from its fragment position ----
  if constexpr (!kTma) {
    // ---- epilogue: accumulator i of a 64-row block = (row gid + 8 * ((i >> 1) & 1), token 8 * (i >> 2) + 2 tq + (i & 1)) ----
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const std::int64_t row0 = nt[mb] * 16 + gid;
      float bias_v[2] = {0.f, 0.f};
      if (p.split == 1 && p.bias != nullptr) {
        const T* b = static_cast<const T*>(p.bias);
        if (row0 < p.n) bias_v[0] = Num<T>::to_float(b[row0]);
        if (row0 + 8 < p.n) bias_v[1] = Num<T>::to_float(b[row0 + 8]);
      }
#pragma unroll
      for (int i = 0; i < kAcc; ++i) {
        const std::int64_t row = row0 + 8 * ((i >> 1) & 1);
        const std::int64_t tok = m0 + 8 * (i >> 2) + 2 * tq + (i & 1);
        if (row < p.n && tok < p.m) {
          if (p.split == 1) {
            static_cast<T*>(p.y)[tok * p.y_stride + row] = Num<T>::from_float(acc[mb][i] + bias_v[(i >> 1) & 1]);
          } else {
            p.partial[(static_cast<std::int64_t>(split_id) * p.m + tok) * p.n + row] = acc[mb][i];
          }
        }
      }
    }
  }
#endif
}

#undef W4A16_SM90_ASM

}  // namespace w4a16::kernels::cuda::prefill_detail
