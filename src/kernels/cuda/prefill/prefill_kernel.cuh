// Contract: the tensor-core W4A16 prefill kernel (issue 5), templates instantiated by
// prefill_inst_{f16,bf16}_{sym,zeros}.cu for every config of W4A16_PREFILL_CONFIGS (prefill_launch.cuh).
//   W   layout cuda.tc16x64.v1 (docs/LAYOUT.md): qweight [N_pad/16][K_pad/64][32][4] int32,
//       scales act dtype [G][N_pad] pair-interleaved, zeros uint8 [G][N_pad/16][8] (uint4 only)
//   x   (M, K) act dtype, row stride x_stride elements, 16-byte aligned, x_stride % 8 == 0
//       (the launcher gathers act-order / misaligned x into the workspace first)
//   out split == 1: y (M, N) act dtype, row stride y_stride, bias added, rounded once from fp32
//       split  > 1: fp32 partials (split, M, N) contiguous; reduce_kernel (prefill.cu) sums them
//                   in split order (deterministic) and adds bias
// Swap-AB: y^T = W . x^T. Weight rows are the M side of the tensor-core instruction, tokens
// the N side. Per CTA: BN = 64 * WG * MB weight rows x BM tokens; grid (ceil(N_pad/BN), ceil(M/BM), split).
// Warp w owns 16 rows per 64-row block (w % 4 picks the 16, w / 4 the warpgroup): its A
// fragments are exactly its 16-byte loads of the layout, used by no other warp, so they go
// global -> registers (PF tiles ahead) and never touch shared memory.
// The x tile (BM tokens x 64 k) is staged by cp.async in a STAGES-deep ring (STAGES-1 or
// STAGES-2 tiles ahead, by the OVERLAP schedule below), 128-byte rows
// swizzled as the wgmma 128B mode expects (16-byte chunk c of row r at chunk c ^ (r % 8)), so the
// same bytes serve wgmma's smem descriptor and the mma path's conflict-free ldmatrix.
// Mid-M/large-M speed on the H200: docs/benchmarks/prefill.md (0.3-0.9x cuBLAS; the per-tile
// barrier + dequant + HGMMA chain is serial, see there). Checked by tests/gpu/prefill
// (prefill_gpu_test: every config, every accepted configuration, against the f64 reference).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "prefill/wgmma_rs.cuh"

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
};

template <class T> struct Num;
template <> struct Num<half> {
  using T2 = half2;
  static constexpr std::uint32_t kMagic = 0x64006400u;  // half2(1024, 1024): 1024 + q is exact for q < 1024
  static __device__ __forceinline__ half from_float(float f) { return __float2half_rn(f); }
  static __device__ __forceinline__ float to_float(half v) { return __half2float(v); }
};
template <> struct Num<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static constexpr std::uint32_t kMagic = 0x43004300u;  // bf162(128, 128): 128 + q exact (8-bit significand, q < 16)
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
// w = (q - z) * s: (magic + q) - (magic + z) is exact, then one rounding in the multiply.
// zz_lo/zz_hi: magic + z for rows gid / gid+8 (both halves); s_lo/s_hi: scale pairs.
template <class T>
__device__ __forceinline__ void dequant_word(std::uint32_t w, std::uint32_t zz_lo, std::uint32_t zz_hi, std::uint32_t s_lo,
                                             std::uint32_t s_hi, std::uint32_t (&a)[4]) {
  using T2 = typename Num<T>::T2;
  constexpr std::uint32_t kMask = 0x000f000fu;  // nibble 0 -> low half, nibble 4 -> high half
  const std::uint32_t h0 = lop3_and_or(w, kMask, Num<T>::kMagic);
  const std::uint32_t h1 = lop3_and_or(w >> 4, kMask, Num<T>::kMagic);
  const std::uint32_t h2 = lop3_and_or(w >> 8, kMask, Num<T>::kMagic);
  const std::uint32_t h3 = lop3_and_or(w >> 12, kMask, Num<T>::kMagic);
  a[0] = as_u32(__hmul2(__hsub2(as_t2<T2>(h0), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
  a[1] = as_u32(__hmul2(__hsub2(as_t2<T2>(h1), as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
  a[2] = as_u32(__hmul2(__hsub2(as_t2<T2>(h2), as_t2<T2>(zz_lo)), as_t2<T2>(s_lo)));
  a[3] = as_u32(__hmul2(__hsub2(as_t2<T2>(h3), as_t2<T2>(zz_hi)), as_t2<T2>(s_hi)));
}

__device__ __forceinline__ void cp_async16(std::uint32_t smem, const void* gmem, bool valid) {
  // src-size 0 zero-fills the 16 bytes: tokens >= M and k >= K read as 0 (never past x).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

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

// Template parameters:
//   T       activation / output element type (half or __nv_bfloat16)
//   BM      tokens per CTA tile (wgmma N extent; mma: multiple of 16)
//   WG      warpgroups per CTA (4 warps = 128 threads each)
//   MB      64-row weight blocks per warpgroup (each warp: MB x 16 rows)
//   STAGES  x-tile ring depth (tiles of BM x 64 k; STAGES-1 in flight)
//   WGMMA   true: wgmma.mma_async (sm_90a); false: mma.sync m16n8k16 (sm_80+)
//   OVERLAP wgmma schedule. false: each tile's group is retired (wait 0) before the next tile's
//           dequantization, x prefetched STAGES-1 tiles ahead. true: one group left in flight
//           (wait 1) while the next tile dequantizes, STAGES-2 ahead (one stage of slack); ptxas
//           then serializes the wgmmas (C7513) but the dequantization overlaps the tensor cores.
//           Both are kept because neither wins everywhere (docs/benchmarks/prefill.md).
//   MINB    CTAs per SM the register budget must allow (__launch_bounds__): > 1 trades
//           registers for resident CTAs, which hides the latency of the small, memory-bound tiles
//   ZEROS   true for uint4 (packed zero points), false for uint4b8 (z = 8)
template <class T, int BM, int WG, int MB, int STAGES, bool WGMMA, bool OVERLAP, int MINB, bool ZEROS>
__global__ void __launch_bounds__(WG * 128, MINB) prefill_kernel(const KernelParams p) {
  constexpr int kThreads = WG * 128;
  constexpr int kBN = 64 * WG * MB;          // weight rows per CTA
  constexpr int kStageBytes = BM * 128;       // (BM tokens, 64 k) fp16/bf16, 128 B per token row
  constexpr int kChunks = BM * 8;             // 16-byte chunks per stage
  // W register ring depth (k tiles in flight per warp): deeper for the small tiles of the
  // retire-each-group schedule (mid M); the big tiles are register-limited.
  constexpr int kPF = BM * MB <= 64 && !OVERLAP ? 8 : 4;
  constexpr int kAhead = OVERLAP && WGMMA ? STAGES - 2 : STAGES - 1;  // x tiles in flight
  constexpr int kAcc = BM / 2;                // fp32 accumulators per thread per 64-row block
  static_assert(STAGES >= 3, "a ring: tile t computes while up to STAGES-1 later tiles load");
  static_assert(kChunks % kThreads == 0, "every thread copies the same number of x chunks");
  static_assert(BM % 16 == 0 && BM >= 16 && BM <= 256, "wgmma N extent: multiple of 16 (ldmatrix x4 pairs), <= 256");
  static_assert(kPF % 2 == 0, "A-fragment double buffer alternates with the ring slot parity");

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  if constexpr (WGMMA) {
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __trap();  // the launcher never selects the wgmma path without the sm_90a cubin
#endif
  }
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The 128B swizzle is a function of address bits [4,10): stage bases must be 1024-aligned.
  const std::uint32_t smem_base = (static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int gid = lane >> 2, tq = lane & 3;
  const std::int64_t n_block = blockIdx.x, m0 = static_cast<std::int64_t>(blockIdx.y) * BM;
  const int split_id = blockIdx.z;
  const std::int64_t kt_begin = split_id * p.k_tiles_per_split;
  const std::int64_t kt_end = min(p.k_tiles, kt_begin + p.k_tiles_per_split);
  const int nkt = static_cast<int>(kt_end - kt_begin);

  // This warp's 16-row tiles (one per 64-row block): row-16 tile index in the layout.
  // The grid rounds N_pad up to BN: a 64-row block past N_pad loads nothing (zero A) and stores nothing.
  std::int64_t nt[MB];
  bool live[MB];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb) {
    nt[mb] = (n_block * kBN + ((warp >> 2) * MB + mb) * 64 + (warp & 3) * 16) / 16;
    live[mb] = nt[mb] * 16 < p.n_pad;
  }

  const T* x = static_cast<const T*>(p.x);

  // ---- x tile loader: token row r, 16-byte chunk c (k = 8c .. 8c+7) -> swizzled smem ----
  auto load_x = [&](int t, int stage) {
    const std::int64_t k0 = (kt_begin + t) * 64;
#pragma unroll
    for (int i = 0; i < kChunks / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      const int r = idx >> 3, c = idx & 7;
      const std::int64_t tok = m0 + r, kk = k0 + 8 * c;
      const bool valid = tok < p.m && kk < p.k;
      const T* src = valid ? x + tok * p.x_stride + kk : x;
      cp_async16(smem_base + stage * kStageBytes + r * 128 + ((c ^ (r & 7)) << 4), src, valid);
    }
  };

  // ---- W / scale / zero register ring ----
  uint4 wq[kPF][MB];
  std::uint32_t sc[kPF][MB][2];  // scale pairs for sub-tiles 0-1 and 2-3 (different groups when g = 32)
  std::uint32_t zp[kPF][MB];     // zero bytes of the two groups (low byte: sub-tiles 0-1, next: 2-3)
  auto load_w = [&](int t, int slot) {
    const std::int64_t kt = kt_begin + t;
    // Groups clamp to G-1: padded k (>= K) has q = 0 against x = 0, whatever its scale.
    const std::int64_t g0 = min((kt * 64) / p.group_len, p.groups - 1);
    const std::int64_t g1 = min((kt * 64 + 32) / p.group_len, p.groups - 1);
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      if (!live[mb]) {
        wq[slot][mb] = make_uint4(0, 0, 0, 0);
        sc[slot][mb][0] = sc[slot][mb][1] = 0;
        zp[slot][mb] = 0;
        continue;
      }
      wq[slot][mb] = __ldg(p.qweight + (nt[mb] * p.k_tiles + kt) * 32 + lane);
      sc[slot][mb][0] = __ldg(p.scales + (g0 * p.n_pad + 16 * nt[mb]) / 2 + gid);
      sc[slot][mb][1] = __ldg(p.scales + (g1 * p.n_pad + 16 * nt[mb]) / 2 + gid);
      if constexpr (ZEROS) {
        const std::uint32_t z0 = __ldg(p.zeros + (g0 * (p.n_pad / 16) + nt[mb]) * 8 + gid);
        const std::uint32_t z1 = __ldg(p.zeros + (g1 * (p.n_pad / 16) + nt[mb]) * 8 + gid);
        zp[slot][mb] = z0 | (z1 << 8);
      }
    }
  };

  float acc[MB][kAcc];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[mb][i] = 0.f;

  std::uint32_t afrag[2][MB][4][4];  // [buffer][block][k16 sub-tile][register]

  // ---- prologue ----
#pragma unroll
  for (int s = 0; s < kPF; ++s)
    if (s < nkt) load_w(s, s);
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < nkt) load_x(s, s);
    cp_async_commit();
  }

  for (int t0 = 0; t0 < nkt; t0 += kPF) {
#pragma unroll
    for (int u = 0; u < kPF; ++u) {
      const int t = t0 + u;
      if (t >= nkt) break;  // uniform across the CTA
      const int buf = u & 1;
      // Dequantize tile t into A registers (overlaps the other warpgroup's wgmma group).
#pragma unroll
      for (int mb = 0; mb < MB; ++mb) {
        std::uint32_t zz_lo[2], zz_hi[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          std::uint32_t z_lo = 8, z_hi = 8;
          if constexpr (ZEROS) {
            const std::uint32_t zb = (zp[u][mb] >> (8 * h)) & 0xffu;
            z_lo = zb & 0xfu;
            z_hi = zb >> 4;
          }
          zz_lo[h] = Num<T>::kMagic | z_lo | (z_lo << 16);
          zz_hi[h] = Num<T>::kMagic | z_hi | (z_hi << 16);
        }
        const std::uint32_t words[4] = {wq[u][mb].x, wq[u][mb].y, wq[u][mb].z, wq[u][mb].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // Broadcast s[gid] / s[gid+8] to both halves (dtype-agnostic byte permutes).
          const std::uint32_t s_lo = __byte_perm(sc[u][mb][j >> 1], 0, 0x1010);
          const std::uint32_t s_hi = __byte_perm(sc[u][mb][j >> 1], 0, 0x3232);
          dequant_word<T>(words[j], zz_lo[j >> 1], zz_hi[j >> 1], s_lo, s_hi, afrag[buf][mb][j]);
        }
      }
      // Refill this ring slot with tile t + kPF (its registers were just consumed).
      if (t + kPF < nkt) load_w(t + kPF, u);

      cp_async_wait<kAhead - 1>();  // tile t's x chunks (this thread's) have landed
      if constexpr (WGMMA) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes -> async-proxy reads
      __syncthreads();              // ... everyone's; and no warp still reads the stage refilled next
                                    // (tile t-1's with wait 0, tile t-2's with wait 1)
      if (t + kAhead < nkt) load_x(t + kAhead, (t + kAhead) % STAGES);
      cp_async_commit();

      const int stage = t % STAGES;
      const std::uint32_t xs = smem_base + stage * kStageBytes;
      if constexpr (WGMMA) {
        // k16 sub-tile j starts 32 bytes into each swizzled 128-byte row.
        std::uint64_t desc[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) desc[j] = smem_desc_sw128(xs) + 2 * j;
        // Pin every wgmma input (A fragments, descriptors, accumulators) before the arrive: a
        // non-wgmma instruction defining them inside arrive..commit makes ptxas serialize (C7513).
#pragma unroll
        for (int j = 0; j < 4; ++j) asm volatile("" : "+l"(desc[j])::"memory");
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(afrag[buf][mb][j][r])::"memory");
#pragma unroll
          for (int i = 0; i < kAcc; ++i) asm volatile("" : "+f"(acc[mb][i])::"memory");
        }
        wgmma_fence();
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int j = 0; j < 4; ++j) WgmmaRS<T, BM>::mma(acc[mb], afrag[buf][mb][j], desc[j]);
        wgmma_commit();
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) asm volatile("" : "+f"(acc[mb][i])::"memory");
        // Retire this group before the next tile's dequantization defines A registers: with a
        // group left in flight (wait 1) ptxas serializes every wgmma (C7513), which measured
        // slower; the other warpgroup's group overlaps this one's dequantization instead.
        if constexpr (OVERLAP)
          wgmma_wait<1>();  // tile t-1's group is done: its A buffer and x stage may be reused
        else
          wgmma_wait<0>();
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
              mma16816<T>(d[4 * c], d[4 * c + 1], d[4 * c + 2], d[4 * c + 3], afrag[buf][mb][j], b[0], b[1]);
              mma16816<T>(d[4 * c + 4], d[4 * c + 5], d[4 * c + 6], d[4 * c + 7], afrag[buf][mb][j], b[2], b[3]);
            }
          }
        }
      }
    }
  }
  if constexpr (WGMMA) wgmma_wait<0>();
  cp_async_wait<0>();

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
#endif
}

}  // namespace w4a16::kernels::cuda::prefill_detail
