// ---- Contract ------------------------------------------------------------------------------
// Skinny W4A16 GEMM for decode (M <= 16 per launch; larger M loops over 16-token chunks).
//   x      (M, K)       fp16 | bf16, row stride x_stride elements, 2-byte aligned (16-byte rows: vector path)
//   W      (N, K)       int4, layout cuda.tc16x64.v1 (docs/LAYOUT.md): (N_pad/16, K_pad/64, 32 lanes, 4 words)
//   scales (G, N_pad)   act dtype, pair-interleaved per 16 rows; zeros (G, N_pad/16, 8) uint8 for uint4
//   bias   (N,)         act dtype, optional;  perm (K,) int32, optional: y uses x[:, perm]
//   y      (M, N)       act dtype, row stride y_stride elements
// Math: swap AB. W is the A operand of mma.sync.m16n8k16 (16 weight rows), tokens are the n = 8
// side: M <= 8 takes one mma per k16 sub-tile, M <= 16 two. q - z is exact in fp16/bf16 (magic
// number 1024 + q resp. 128 + q, minus 1024 + z resp. 128 + z); the products accumulate in fp32
// per group and the fp32 accumulators are scaled per (row, group) - one rounding less than
// dequantizing to (q - z) * s in 16 bits. Bias is added in fp32, y rounded once.
// Pipeline: each warp owns one 16-row stripe and a K range; a per-warp cp.async ring (3 steps of
// 4 tiles, weights + scale/zero words) runs 2 steps ahead; 4 tiles are computed together so
// their mma chains are independent. x (only the m real tokens) is staged once per block in
// shared memory in B-fragment order. Plan (rows/warps/splits per block) from a cost model
// fitted on the H200 (decode_plan; docs/benchmarks/decode.md). K <= 51200 at M > 8.
// Split-K: warps of a block split K (reduced in shared memory), blocks of a cluster split K
// (reduced by rank 0 through distributed shared memory), always in the same order: results are
// bitwise reproducible run to run. No workspace, no atomics, no allocation: CUDA-graph safe.
// Instantiated: {fp16, bf16} x {M <= 8, M <= 16} x {uint4b8, uint4} x {g == 32, g >= 64 or channelwise}.
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
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8;               // warps per block (256 threads)
constexpr int kThreads = kWarps * 32;
constexpr int kMaxSplits = 8;           // portable cluster size limit
constexpr std::size_t kMaxSmem = 200 * 1024;  // below the 227 KB opt-in limit of sm_90

struct Args {
  const uint4* qweight;         // (N_pad/16, K_pad/64, 32) uint4: one 16-byte load per lane per tile
  const std::uint32_t* scales;  // (G, N_pad/2) pairs (s[r], s[r+8]) of one lane, as 32-bit words
  const std::uint8_t* zeros;    // (G, N_pad/16, 8)
  const std::uint16_t* bias;    // (N,) or null
  const std::int32_t* perm;     // (K,) or null
  const std::uint16_t* x;       // (m, K) row stride x_stride
  std::uint16_t* y;             // (m, N) row stride y_stride
  long long x_stride, y_stride;
  int m;                        // tokens of this chunk, 1..16
  int n, k;                     // true extents
  int nt_count, kt_count;       // N_pad/16, K_pad/64
  int groups;                   // G
  int gshift;                   // log2(group size); 30 for channelwise (G = 1 makes the group always 0)
  int warps_n, warps_k, tiles_per_warp, block_tiles;
  int splits;
  int xvec;                     // x rows 16-byte aligned: stage with 16-byte loads
};

// (a & b) | c in one instruction; 0xEA is the lop3 table of that expression ((0xF0 & 0xCC) | 0xAA).
__device__ __forceinline__ std::uint32_t lop3_and_or(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

template <bool kBf16>
struct Dt;
template <>
struct Dt<false> {
  // fp16 1024.0 = 0x6400: its mantissa unit is 1, so 0x6400 | q is exactly 1024 + q.
  static constexpr std::uint32_t kMagic = 0x64006400u;
  __device__ static __forceinline__ std::uint32_t sub(std::uint32_t a, std::uint32_t b) {
    __half2 r = __hsub2(*reinterpret_cast<__half2*>(&a), *reinterpret_cast<__half2*>(&b));
    return *reinterpret_cast<std::uint32_t*>(&r);
  }
  __device__ static __forceinline__ float2 to_float2(std::uint32_t v) { return __half22float2(*reinterpret_cast<__half2*>(&v)); }
  __device__ static __forceinline__ float to_float(std::uint16_t v) { return __half2float(__ushort_as_half(v)); }
  __device__ static __forceinline__ std::uint16_t from_float(float f) { return __half_as_ushort(__float2half_rn(f)); }
  __device__ static __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct Dt<true> {
  // bf16 128.0 = 0x4300: mantissa unit 1, so 0x4300 | q is exactly 128 + q.
  static constexpr std::uint32_t kMagic = 0x43004300u;
  __device__ static __forceinline__ std::uint32_t sub(std::uint32_t a, std::uint32_t b) {
    __nv_bfloat162 r = __hsub2(*reinterpret_cast<__nv_bfloat162*>(&a), *reinterpret_cast<__nv_bfloat162*>(&b));
    return *reinterpret_cast<std::uint32_t*>(&r);
  }
  __device__ static __forceinline__ float2 to_float2(std::uint32_t v) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&v));
  }
  __device__ static __forceinline__ float to_float(std::uint16_t v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  __device__ static __forceinline__ std::uint16_t from_float(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
  __device__ static __forceinline__ void mma(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Shared x chunk in fragment order, only the m real tokens: word ((tile * 2 + h) * m + token) * 16
// + t * 4 + w holds the two k of B register (w % 2) of sub-tile 2h + w / 2 for lane t of that token,
// so the lanes of the real tokens read their 4 B registers of a sub-tile pair with one
// conflict-free 16-byte load each; lanes of absent tokens use zeros and read nothing.
__device__ __forceinline__ void stage_x(const Args& a, std::uint32_t* xs, int tile0, int tiles) {
  const int groups8 = tiles * 8;  // 8-element k groups in the chunk
  for (int idx = threadIdx.x; idx < a.m * groups8; idx += kThreads) {
    const int token = idx / groups8, kl = (idx % groups8) * 8;
    const long long kg = static_cast<long long>(tile0) * 64 + kl;
    std::uint32_t v[4] = {0u, 0u, 0u, 0u};
    if (kg < a.k) {  // K % 8 == 0: a group of 8 is wholly inside or outside
      const std::uint16_t* row = a.x + token * a.x_stride;
      if (a.perm) {
        std::uint16_t e[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) e[i] = __ldg(row + __ldg(a.perm + kg + i));
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = e[2 * i] | (static_cast<std::uint32_t>(e[2 * i + 1]) << 16);
      } else if (a.xvec) {
        const uint4 q = __ldg(reinterpret_cast<const uint4*>(row + kg));
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = __ldg(row + kg + 2 * i) | (static_cast<std::uint32_t>(__ldg(row + kg + 2 * i + 1)) << 16);
      }
    }
    const int tl = kl / 64, kk = kl % 64, j = kk / 16, hi = (kk % 16) / 8;
    std::uint32_t* base = xs + ((tl * 2 + j / 2) * a.m + token) * 16 + (j % 2) * 2 + hi;
#pragma unroll
    for (int t = 0; t < 4; ++t) base[t * 4] = v[t];  // lane t, word (j%2)*2 + hi
  }
}

// cp.async: 16 bytes bypassing L1 (weights, streamed once) and 4 bytes through L1 (scales, zeros:
// reused by the 4 lanes of a row pair and by consecutive tiles of a group).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

// Per-warp cp.async ring: kSteps steps of kTilesPerStep tiles each (weights + the scale/zero
// words of each tile's groups), refilled kSteps - 1 steps ahead of use. Each lane consumes only
// what it copied itself, so no barrier is needed around the ring.
template <bool kZeros, bool kG32>
struct Ring {
  static constexpr int kTilesPerStep = 4;  // tiles computed together: 4 independent mma chains
  // 3 steps x 4 tiles x 512 B = 6 KB of weights per warp, 2 steps refilled ahead. The kernel is
  // issue/latency bound rather than short of bytes in flight (ncu at 4 steps: 6.5 cycles per issued
  // instruction at 25% occupancy, DRAM 37%), so 3 steps trade depth for occupancy: 3 blocks of the
  // 1..8-token symmetric variants fit an SM (24 warps). docs/benchmarks/decode.md has both runs.
  static constexpr int kSteps = 3;
  static constexpr int kGs = kG32 ? 2 : 1;           // groups per tile
  static constexpr int kTiles = kTilesPerStep * kSteps;
  static constexpr int kWordsPerTile = kGs * (kZeros ? 2 : 1);  // scale (+ zero) words per lane
  static constexpr int kBytesPerWarp = kTiles * (512 + 128 * kWordsPerTile);
};

// Blocks per SM the register cap is sized for: 3 (85 registers) where the variant fits without
// spills (ptxas -v: 72-79 registers), else 2 (128 registers).
template <int MB, bool kZeros>
constexpr int kMinBlocks = (MB == 1 && !kZeros) ? 3 : 2;

template <bool kBf16, int MB, bool kZeros, bool kG32>
__global__ void __launch_bounds__(kThreads, kMinBlocks<MB, kZeros>) decode_kernel(const Args a) {
  using D = Dt<kBf16>;
  using R = Ring<kZeros, kG32>;
  constexpr int kP = R::kTilesPerStep, kS = R::kSteps, kGs = R::kGs;
  extern __shared__ uint4 smem_v4[];
  std::uint32_t* xs = reinterpret_cast<std::uint32_t*>(smem_v4);         // (block_tiles, 2, m, 4 lanes, 4) x words
  unsigned char* rings = reinterpret_cast<unsigned char*>(xs + a.block_tiles * a.m * 32);
  float* red = reinterpret_cast<float*>(rings + kWarps * R::kBytesPerWarp);  // (8 warps, MB, 32, 4) partials

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tq = lane % 4;
  const int ws = warp % a.warps_n, wk = warp / a.warps_n;
  const int nt = blockIdx.y * a.warps_n + ws;                     // this warp's 16-row stripe
  const int btile0 = blockIdx.x * a.block_tiles;                   // block's first k tile
  const int btile1 = min(btile0 + a.block_tiles, a.kt_count);
  const int t0 = btile0 + wk * a.tiles_per_warp;
  const int t1 = nt < a.nt_count ? min(t0 + a.tiles_per_warp, btile1) : t0;  // empty range: idle warp
  const int nsteps = (max(t1 - t0, 0) + kP - 1) / kP;

  uint4* wring = reinterpret_cast<uint4*>(rings + warp * R::kBytesPerWarp);     // (kTiles, 32) weights
  std::uint32_t* sring = reinterpret_cast<std::uint32_t*>(wring + R::kTiles * 32);  // (kTiles, kGs, 32) scales
  std::uint32_t* zring = sring + R::kTiles * kGs * 32;                            // (kTiles, kGs, 32) zero words

  const uint4* wp = a.qweight + static_cast<long long>(nt) * a.kt_count * 32 + lane;  // + kt * 32: tile kt of stripe nt
  const std::uint32_t* sp = a.scales + nt * 8 + gid;                                  // + g * N_pad/2
  const std::uint32_t* zp = reinterpret_cast<const std::uint32_t*>(a.zeros) + nt * 2 + gid / 4;  // + g * N_pad/16 * 2 words
  const long long s_gstride = static_cast<long long>(a.nt_count) * 8, z_gstride = static_cast<long long>(a.nt_count) * 2;

  auto issue = [&](int step) {
    if (step < nsteps) {
      const int slot0 = (step % kS) * kP;
#pragma unroll
      for (int p = 0; p < kP; ++p) {
        const int kt = t0 + step * kP + p;
        if (kt < t1) {
          cp_async16(wring + (slot0 + p) * 32 + lane, wp + static_cast<long long>(kt) * 32);
#pragma unroll
          for (int h = 0; h < kGs; ++h) {
            const int g = min((kt * 64 + h * 32) >> a.gshift, a.groups - 1);
            cp_async4(sring + ((slot0 + p) * kGs + h) * 32 + lane, sp + g * s_gstride);
            if constexpr (kZeros) cp_async4(zring + ((slot0 + p) * kGs + h) * 32 + lane, zp + g * z_gstride);
          }
        }
      }
    }
    cp_async_commit();  // empty groups too: the wait count stays uniform
  };

#pragma unroll
  for (int st = 0; st < kS - 1; ++st) issue(st);  // weights in flight while x is staged
  stage_x(a, xs, btile0, btile1 - btile0);
  __syncthreads();

  float acc[MB][4];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[mb][c] = 0.f;

  constexpr std::uint32_t kSymZero = D::kMagic | 0x00080008u;  // magic + 8: uint4b8
  for (int step = 0; step < nsteps; ++step) {
    issue(step + kS - 1);  // refills the slot consumed in the previous iteration
    cp_async_wait<kS - 1>();  // this step's group has landed (this lane's copies)
    const int slot0 = (step % kS) * kP;
    uint4 wv[kP];
    float2 sc[kP][kGs];
    std::uint32_t zz[kP][kGs][2];
#pragma unroll
    for (int p = 0; p < kP; ++p) {
      wv[p] = wring[(slot0 + p) * 32 + lane];
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        sc[p][h] = D::to_float2(sring[((slot0 + p) * kGs + h) * 32 + lane]);  // (row gid, row gid + 8)
        zz[p][h][0] = zz[p][h][1] = kSymZero;
        if constexpr (kZeros) {
          const std::uint32_t z = (zring[((slot0 + p) * kGs + h) * 32 + lane] >> (8 * (gid % 4))) & 0xffu;
          zz[p][h][0] = D::kMagic | ((z & 15u) * 0x00010001u);
          zz[p][h][1] = D::kMagic | ((z >> 4) * 0x00010001u);
        }
      }
    }
    float tmp[kP][MB][4];
#pragma unroll
    for (int p = 0; p < kP; ++p)
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int c = 0; c < 4; ++c) tmp[p][mb][c] = 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // sub-tile pair (2h, 2h + 1)
      std::uint32_t b[kP][MB][4];
#pragma unroll
      for (int p = 0; p < kP; ++p) {
        const int tl = min(t0 + step * kP + p, t1 - 1) - btile0;  // clamped: tiles past t1 compute on valid x, never scaled in
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          const int tok = mb * 8 + gid;
          uint4 v = make_uint4(0u, 0u, 0u, 0u);
          if (tok < a.m) v = *reinterpret_cast<const uint4*>(xs + ((tl * 2 + h) * a.m + tok) * 16 + tq * 4);
          b[p][mb][0] = v.x; b[p][mb][1] = v.y; b[p][mb][2] = v.z; b[p][mb][3] = v.w;
        }
      }
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * h + jj;
#pragma unroll
        for (int p = 0; p < kP; ++p) {  // p innermost: consecutive mma go to independent accumulators
          const int hg = kG32 ? h : 0;
          const std::uint32_t w = j == 0 ? wv[p].x : j == 1 ? wv[p].y : j == 2 ? wv[p].z : wv[p].w;
          std::uint32_t af[4];  // A registers: rows gid, gid + 8, gid, gid + 8 (docs/LAYOUT.md)
          af[0] = D::sub(lop3_and_or(w, 0x000f000fu, D::kMagic), zz[p][hg][0]);
          af[1] = D::sub(lop3_and_or(w >> 4, 0x000f000fu, D::kMagic), zz[p][hg][1]);
          af[2] = D::sub(lop3_and_or(w >> 8, 0x000f000fu, D::kMagic), zz[p][hg][0]);
          af[3] = D::sub(lop3_and_or(w >> 12, 0x000f000fu, D::kMagic), zz[p][hg][1]);
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) D::mma(tmp[p][mb], af, b[p][mb][2 * jj], b[p][mb][2 * jj + 1]);
        }
      }
      if (kG32 || h == 1) {  // end of a group: scale the fp32 partials into acc, per row
#pragma unroll
        for (int p = 0; p < kP; ++p) {
          if (t0 + step * kP + p >= t1) continue;  // past this warp's range (last step only)
          const float2 s2 = sc[p][kG32 ? h : 0];
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
            acc[mb][0] = fmaf(tmp[p][mb][0], s2.x, acc[mb][0]);
            acc[mb][1] = fmaf(tmp[p][mb][1], s2.x, acc[mb][1]);
            acc[mb][2] = fmaf(tmp[p][mb][2], s2.y, acc[mb][2]);
            acc[mb][3] = fmaf(tmp[p][mb][3], s2.y, acc[mb][3]);
#pragma unroll
            for (int c = 0; c < 4; ++c) tmp[p][mb][c] = 0.f;
          }
        }
      }
    }
  }
  cp_async_wait<0>();

  // Reduction, fixed order: warps along K (shared memory), then cluster ranks (distributed smem).
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
    *reinterpret_cast<float4*>(red + ((warp * MB + mb) * 32 + lane) * 4) = make_float4(acc[mb][0], acc[mb][1], acc[mb][2], acc[mb][3]);
  __syncthreads();
  const int per_stripe = MB * 128;  // floats of one warp's partial
  const int vals = a.warps_n * per_stripe;
  if (a.warps_k > 1) {
    for (int i = threadIdx.x; i < vals; i += kThreads) {
      float s = red[i];  // warp index = wk * warps_n + ws, so wk = 0 holds the first warps_n slots
      for (int q = 1; q < a.warps_k; ++q) s += red[q * vals + i];
      red[i] = s;
    }
  }
  const bool cluster = a.splits > 1;
  if (cluster) {
    cg::this_cluster().sync();  // every rank's block sums are complete and visible
  } else {
    __syncthreads();
  }
  if (!cluster || cg::this_cluster().block_rank() == 0) {
    for (int i = threadIdx.x; i < vals; i += kThreads) {
      float s = red[i];
      if (cluster) {
        for (int r = 1; r < a.splits; ++r) s += cg::this_cluster().map_shared_rank(red, r)[i];
      }
      const int sw = i / per_stripe, rest = i % per_stripe;
      const int mb = rest / 128, ln = (rest % 128) / 4, c = rest % 4;
      const int row = (blockIdx.y * a.warps_n + sw) * 16 + ln / 4 + 8 * (c / 2);
      const int token = mb * 8 + 2 * (ln % 4) + (c % 2);
      if (row < a.n && token < a.m) {
        if (a.bias) s += D::to_float(a.bias[row]);
        a.y[token * a.y_stride + row] = D::from_float(s);
      }
    }
  }
  if (cluster) cg::this_cluster().sync();  // keep every rank's shared memory alive until rank 0 has read it
}

int ilog2(int v) { int r = 0; while ((1 << (r + 1)) <= v) ++r; return r; }

using KernelFn = void (*)(const Args);

template <bool kBf16, int MB, bool kZeros, bool kG32>
KernelFn kernel_ptr() {
  KernelFn f = decode_kernel<kBf16, MB, kZeros, kG32>;
  static const bool attr = [f] {  // once per instantiation: allow up to kMaxSmem of dynamic shared memory
    W4A16_CUDA_TRY(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kMaxSmem)));
    return true;
  }();
  (void)attr;
  return f;
}

template <bool kBf16, int MB>
KernelFn pick3(bool zeros, bool g32) {
  if (zeros) return g32 ? kernel_ptr<kBf16, MB, true, true>() : kernel_ptr<kBf16, MB, true, false>();
  return g32 ? kernel_ptr<kBf16, MB, false, true>() : kernel_ptr<kBf16, MB, false, false>();
}

KernelFn pick(bool bf16, int mb, bool zeros, bool g32) {
  if (bf16) return mb == 1 ? pick3<true, 1>(zeros, g32) : pick3<true, 2>(zeros, g32);
  return mb == 1 ? pick3<false, 1>(zeros, g32) : pick3<false, 2>(zeros, g32);
}

std::size_t ring_bytes(bool zeros, bool g32) {
  const int per_warp = zeros ? (g32 ? Ring<true, true>::kBytesPerWarp : Ring<true, false>::kBytesPerWarp)
                             : (g32 ? Ring<false, true>::kBytesPerWarp : Ring<false, false>::kBytesPerWarp);
  return static_cast<std::size_t>(kWarps) * per_warp;
}

// x chunk (m tokens, 128 B per token per tile) + the weight rings + the reduction partials.
std::size_t smem_for(int block_tiles, int m, bool zeros, bool g32) {
  const int mb = m <= 8 ? 1 : 2;
  return static_cast<std::size_t>(block_tiles) * m * 128 + ring_bytes(zeros, g32) + static_cast<std::size_t>(kWarps) * mb * 512;
}

int cached_sm_count() {
  static const int n = device_sm_count();
  return n;
}

DecodePlan make_plan(std::int64_t nt, std::int64_t kt, int wn, int splits_wanted, int m, bool zeros, bool g32) {
  DecodePlan p;
  p.warps_n = wn;
  p.warps_k = kWarps / wn;
  const std::int64_t per_split = (kt + splits_wanted - 1) / splits_wanted;
  p.tiles_per_warp = static_cast<int>((per_split + p.warps_k - 1) / p.warps_k);
  const std::int64_t block_tiles = static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k;
  p.splits = static_cast<int>((kt + block_tiles - 1) / block_tiles);  // no empty ranks
  p.row_blocks = static_cast<int>((nt + wn - 1) / wn);
  p.smem_bytes = smem_for(static_cast<int>(block_tiles), m, zeros, g32);
  return p;
}

}  // namespace

std::string DecodePlan::describe() const {
  return "warps_n=" + std::to_string(warps_n) + " warps_k=" + std::to_string(warps_k) + " splits=" + std::to_string(splits) +
         " tiles_per_warp=" + std::to_string(tiles_per_warp) + " row_blocks=" + std::to_string(row_blocks) +
         " smem=" + std::to_string(smem_bytes);
}

DecodePlan decode_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size) {
  if (m_chunk < 1 || m_chunk > 16) fail(ErrorCode::invalid_argument, "m_chunk", "1..16", std::to_string(m_chunk));
  const bool g32 = group_size == 32;
  const std::int64_t nt = (n + kTcPadN - 1) / kTcPadN * (kTcPadN / kTcTileN);
  const std::int64_t kt = (k + kTcPadK - 1) / kTcPadK;
  if (const char* env = std::getenv("W4A16_DECODE_PLAN"); env && *env) {
    int wn = 0, s = 0;
    if (std::sscanf(env, "%d,%d", &wn, &s) != 2 || (wn != 1 && wn != 2 && wn != 4 && wn != 8) || s < 1 || s > kMaxSplits)
      fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN", "\"warps_n,splits\" with warps_n in {1,2,4,8}, splits 1..8", env);
    DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32);
    if (p.smem_bytes > kMaxSmem) fail(ErrorCode::invalid_argument, "W4A16_DECODE_PLAN", "a plan within 200 KB of shared memory", env);
    return p;
  }
  // Cost model in microseconds, fitted to the forced-plan sweep on the H200 (scripts/gpu-check with
  // W4A16_PLAN_SWEEP, 2026-12-02; docs/benchmarks/decode.md): an SM streams one 64x16 tile per
  // (40 + 240 / resident warps) cycles (x1.3 at 16 tokens), each wave of blocks adds ~1.2 us of
  // latency (first loads, x staging, reduction), and a cluster of s blocks slows the wave by
  // 15% per extra rank. 2 blocks of 8 warps fit an SM (registers capped at 128 by the launch
  // bounds; 3 for the 1..8-token symmetric variants), fewer when shared memory runs out. Fits the 8
  // measured plans of 8192x8192 and 28672x4096 within ~10% and ranks the qwen0.5b plans correctly.
  const int sms = cached_sm_count();
  const double cyc_scale = m_chunk > 8 ? 1.3 : 1.0;
  DecodePlan best;
  double best_cost = 1e30;
  for (int wn : {8, 4, 2, 1}) {
    for (int s = 1; s <= kMaxSplits; ++s) {
      DecodePlan p = make_plan(nt, kt, wn, s, m_chunk, zeros, g32);
      if (p.smem_bytes > kMaxSmem || p.splits != s) continue;
      const std::int64_t reg_bps = (m_chunk <= 8 && !zeros) ? 3 : 2;  // kMinBlocks of the variant
      const std::int64_t bps = std::max<std::int64_t>(1, std::min<std::int64_t>(reg_bps, (227 * 1024) / (p.smem_bytes + 1024)));
      const std::int64_t slots = static_cast<std::int64_t>(sms) * bps;
      const std::int64_t blocks = static_cast<std::int64_t>(p.row_blocks) * p.splits;
      const std::int64_t waves = (blocks + slots - 1) / slots;
      const std::int64_t per_sm = std::min<std::int64_t>(bps, (std::min(blocks, slots) + sms - 1) / sms);  // blocks on the busiest SM
      const double warps = static_cast<double>(per_sm * kWarps);
      const double cycles = static_cast<double>(per_sm * kWarps * p.tiles_per_warp) * (40.0 + 240.0 / warps) * cyc_scale;
      const double cost = static_cast<double>(waves) * (cycles / 1980.0 + 1.2) * (1.0 + 0.15 * (p.splits - 1));
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
  const bool bf16 = w.act_dtype == DType::bf16, zeros = w.zeros != nullptr, g32 = w.group_size == 32;

  // Tokens per launch: 16, halved while the x chunk of this K does not fit in shared memory
  // (a smaller chunk stages fewer tokens; decode_plan throws if even one does not fit).
  std::int64_t chunk = 16;
  while (chunk > 1 && !decode_fits(w.k, static_cast<int>(std::min(chunk, std::max<std::int64_t>(m, 1))), zeros, w.group_size))
    chunk /= 2;
  for (std::int64_t m0 = 0; m0 < m; m0 += chunk) {
    const int mc = static_cast<int>(std::min<std::int64_t>(chunk, m - m0));
    const int mb = mc <= 8 ? 1 : 2;
    const DecodePlan p = decode_plan(w.n, w.k, mc, zeros, w.group_size);
    a.x = static_cast<const std::uint16_t*>(x) + m0 * x_stride;
    a.y = static_cast<std::uint16_t*>(y) + m0 * y_stride;
    a.m = mc;
    a.warps_n = p.warps_n;
    a.warps_k = p.warps_k;
    a.tiles_per_warp = p.tiles_per_warp;
    a.block_tiles = p.tiles_per_warp * p.warps_k;
    a.splits = p.splits;

    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(p.splits), static_cast<unsigned>(p.row_blocks), 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = p.smem_bytes;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(p.splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = p.splits > 1 ? 1 : 0;
    W4A16_CUDA_TRY(cudaLaunchKernelEx(&cfg, pick(bf16, mb, zeros, g32), a));
    W4A16_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace w4a16::kernels::cuda
