// ---- Contract ------------------------------------------------------------------------------
// Lean decode kernel for small layers (the Qwen2.5-0.5B class: weights of a few MB, K <= 16 x 64
// x 8), one wave of blocks, no pipeline. Same inputs, layout (cuda.tc16x64.v1), Args and math as
// the streaming kernel of decode.cu (see its contract block): swap-AB mma.sync m16n8k16, Dt's
// magic-number dequantization, fp32 accumulation per group scaled per (row, group), bias in fp32,
// fp16/bf16 x uint4b8/uint4 x every group size, M <= 16 per launch (MB = 1: <= 8 tokens, 2: <= 16),
// x rows 16-byte aligned without act-order perm (other x takes the streaming kernel: decode_plan).
// Shape of the work: every warp owns one 16-row stripe and a K range of at most T tiles (T a
// template bucket, kSmallTiles); a block is warps_n stripes x warps_k K ranges that together
// cover all of K (no cluster: warps_k x tiles_per_warp >= K_pad/64), grid = N_pad/16/warps_n
// blocks, chosen by decode_plan only where that grid is resident in one wave.
// Order of a call:
//   1. before griddepcontrol.wait: every weight word of the warp (one 16-byte ld.global.nc per lane
//      per tile) and its scale (and zero) words, straight into registers;
//   2. after it: x (the m real tokens, the block's K range) copied once into shared memory as it is
//      in memory (cp.async, 16 bytes each), one __syncthreads; B fragments by ldmatrix;
//   3. dequantize + mma + scale from registers (kChunk tiles at a time: independent mma chains);
//   4. the warps along K summed in shared memory in warp order (deterministic), bias, store.
// No cp.async ring, no cluster, two barriers. Workspace: none.
// Instantiated: {fp16, bf16} x {MB 1, 2} x {uint4b8, uint4} x {g == 32, g >= 64 or channelwise}
// x T in {2, 4, 8, 16}.
// Checked by: build/tests/gpu/decode/w4a16_test_gpu_decode (tests Small*, W4A16_DECODE_SMALL=1),
// timed by w4a16_bench_gpu with W4A16_DECODE_SMALL=0 / 1 (.carry-decode-small/run.sh).
// ---------------------------------------------------------------------------------------------
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common.cuh"
#include "decode/decode_device.cuh"
#include "pdl.cuh"

namespace w4a16::kernels::cuda::decode_detail {
namespace {

// Loads that the compiler must issue where they stand (before griddepcontrol.wait): asm volatile
// is not reordered across the wait's asm volatile, where a plain __ldg of read-only memory may sink.
// Weights bypass L1 (read once); scale and zero words go through it (shared by the 4 lanes of a
// row pair and, for g >= 128, by consecutive tiles).
__device__ __forceinline__ uint4 ldg_stream16(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t ldg_nc32(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ std::uint32_t ldg_nc8(const std::uint8_t* p) {
  std::uint16_t v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

template <bool kBf16, int MB, bool kZeros, bool kG32, int T>
__global__ void __launch_bounds__(kThreads, small_min_blocks(T)) decode_small_kernel(const Args a) {
  using D = Dt<kBf16>;
  constexpr int kGs = kG32 ? 2 : 1;           // groups per tile
  // Tiles computed together (independent mma chains): 4 at 1..8 tokens; at 9..16 the second token
  // half doubles the chains and the B fragments, so fewer tiles keep T = 2 / 4 within their
  // register caps (ptxas -v, nvcc 13: no spills but 4 bytes in bf16 uint4 g = 32 T = 2).
  constexpr int kChunk = MB == 1 ? (T < 4 ? T : 4) : (T <= 2 ? 1 : 2);
  static_assert(T % kChunk == 0, "T is a multiple of the compute chunk");
  extern __shared__ uint4 smem_v4[];
  // x rows as they are in memory, (m tokens, block_tiles x 64 k), row stride xrow bytes: 16 bytes
  // past a multiple of 128, so the 8 rows of an ldmatrix lie in 8 different 16-byte bank groups.
  unsigned char* xs = reinterpret_cast<unsigned char*>(smem_v4);
  const int xrow = x_row_bytes(a.block_tiles);
  float* red = reinterpret_cast<float*>(xs + a.m * xrow);  // (8 warps, MB, 32 lanes, 4) partials

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4;
  const int ws = warp % a.warps_n, wk = warp / a.warps_n;
  const int stripe = static_cast<int>(blockIdx.x) * a.warps_n + ws;
  const int t0 = wk * a.tiles_per_warp;  // the block covers all of K: its first tile is 0
  // Tiles of this warp (warp-uniform; 0 past the last stripe or past K: such warps add zeros).
  const int ntiles = stripe < a.nt_count ? max(0, min(a.tiles_per_warp, a.kt_count - t0)) : 0;

  // 1. Weights, scales, zeros -> registers, before the wait (constant, prepared before the
  // previous kernel of the stream started). 32-bit indices: decode_run bounds the arrays.
  uint4 wv[T];                       // (T tiles) this lane's 4 layout words per tile
  std::uint32_t sw[T][kGs];          // (T, groups of a tile) scale pair (row gid, gid + 8)
  std::uint32_t zb[T][kGs];          // (T, groups of a tile) zero byte (row gid low, gid + 8 high); uint4 only
  const unsigned wbase = (static_cast<unsigned>(stripe) * static_cast<unsigned>(a.kt_count) + static_cast<unsigned>(t0)) * 32u + lane;
  const unsigned gstride = static_cast<unsigned>(a.nt_count) * 8u;  // scale words (and zero bytes) of one group
  const unsigned sz_lane = static_cast<unsigned>(stripe) * 8u + static_cast<unsigned>(gid);
  const int gsh = a.gshift - 6;  // g >= 64: tile t lies in group t >> gsh (channelwise: always 0)
#pragma unroll
  for (int p = 0; p < T; ++p) {
    wv[p] = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int h = 0; h < kGs; ++h) sw[p][h] = zb[p][h] = 0u;
    if (p < ntiles) {
      wv[p] = ldg_stream16(a.qweight + (wbase + p * 32u));
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        // g = 32: two groups per tile (the second may lie in the K padding: clamp); g >= 64: one.
        const unsigned g = static_cast<unsigned>(kG32 ? min(2 * (t0 + p) + h, a.groups - 1) : (t0 + p) >> gsh);
        sw[p][h] = ldg_nc32(a.scales + (g * gstride + sz_lane));
        if constexpr (kZeros) zb[p][h] = ldg_nc8(a.zeros + (g * gstride + sz_lane));
      }
    }
  }

  // 2. x after the previous kernel has completed.
  pdl_wait();
  pdl_launch_dependents();
  // The m real tokens' rows (decode_plan takes this kernel only for 16-byte aligned rows without
  // act-order perm).
  const unsigned xs_sh = smem_addr(xs);
  copy_x_rows(a, xs_sh, xrow, 0, a.block_tiles);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // This lane's ldmatrix row: token mb * 8 + lane % 8 (clamped to the last real token: absent
  // tokens compute on real data into outputs never stored), k 8 (lane / 8) of tile t0's first half.
  unsigned xl[MB];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb) {
    const int tok = min(mb * 8 + lane % 8, a.m - 1);
    xl[mb] = xs_sh + static_cast<unsigned>(tok * xrow + t0 * 128 + (lane / 8) * 16);
  }

  // 3. Dequantize, mma, scale per group into fp32 accumulators.
  float acc[MB][4];  // (MB, rows gid/gid + 8 x tokens 2t/2t + 1), the mma accumulator order
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[mb][c] = 0.f;
#pragma unroll
  for (int p0 = 0; p0 < T; p0 += kChunk) {
    if (p0 >= ntiles) break;  // warp-uniform
    // This chunk's words, zero constants and scales (register renames once unrolled).
    uint4 wc[kChunk];
    std::uint32_t zlo[kChunk][kGs], zhi[kChunk][kGs];
    float2 sc[kChunk][kGs];
    float tmp[kChunk][MB][4];
#pragma unroll
    for (int p = 0; p < kChunk; ++p) {
      wc[p] = wv[p0 + p];
#pragma unroll
      for (int g = 0; g < kGs; ++g) {
        const std::uint32_t z = kZeros ? zb[p0 + p][g] : 0x88u;  // uint4b8: z = 8 in both rows
        zlo[p][g] = D::zlo_of(z & 15u);
        zhi[p][g] = D::zhi_of(z >> 4);
        sc[p][g] = D::to_float2(sw[p0 + p][g]);
      }
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) tmp[p][mb][c] = 0.f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // sub-tile pair (2h, 2h + 1)
      uint4 b[kChunk][MB];
#pragma unroll
      for (int p = 0; p < kChunk; ++p)
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)  // past ntiles: zero x (never read past the copied rows), partials dropped
          b[p][mb] = p0 + p < ntiles ? ldmatrix_x4(xl[mb] + (p0 + p) * 128 + h * 64) : make_uint4(0u, 0u, 0u, 0u);
      mma_pair<D, kG32>(h, wc, zlo, zhi, b, tmp);
      if (kG32 || h == 1) scale_group<kG32>(h, ntiles - p0, sc, tmp, acc);  // end of a group
    }
  }

  // 4. Sum the warps along K in warp order (warp = wk * warps_n + ws: slice wk holds warps_n
  // stripes' partials), bias, store.
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
    *reinterpret_cast<float4*>(red + ((warp * MB + mb) * 32 + lane) * 4) = make_float4(acc[mb][0], acc[mb][1], acc[mb][2], acc[mb][3]);
  __syncthreads();
  const int vals4 = a.warps_n * MB * 32;  // float4 partials of one K slice
  const float4* red4 = reinterpret_cast<const float4*>(red);
  for (int i4 = threadIdx.x; i4 < vals4; i4 += kThreads) {
    float4 s = red4[i4];
    for (int q = 1; q < a.warps_k; ++q) {
      const float4 v = red4[q * vals4 + i4];
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    store_outputs<D, MB>(a, s, i4, static_cast<int>(blockIdx.x));
  }
}

// The small kernel's instantiations of tile bucket T (pick_variant), up to kMaxSmem of shared memory.
template <int T>
struct SmallKernel {
  template <bool kBf16, int MB, bool kZeros, bool kG32>
  struct K {
    static KernelFn fn() {
      static const KernelFn f = smem_opt_in(decode_small_kernel<kBf16, MB, kZeros, kG32, T>, kMaxSmem);
      return f;
    }
  };
};

}  // namespace

void launch_decode_small(const Args& a, int tiles, std::size_t smem, bool bf16, bool zeros, bool g32, bool pdl, cudaStream_t stream) {
  const int mb = a.m <= 8 ? 1 : 2;
  KernelFn f = tiles == 2   ? pick_variant<SmallKernel<2>::K>(bf16, mb, zeros, g32)
               : tiles == 4 ? pick_variant<SmallKernel<4>::K>(bf16, mb, zeros, g32)
               : tiles == 8 ? pick_variant<SmallKernel<8>::K>(bf16, mb, zeros, g32)
                            : pick_variant<SmallKernel<16>::K>(bf16, mb, zeros, g32);
  launch_pdl(f, dim3(static_cast<unsigned>(a.row_blocks)), dim3(kThreads), smem, stream, pdl, a);
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace w4a16::kernels::cuda::decode_detail
