// Fused MoE W4A16 expert GEMMs on mma.sync.m16n8k16, swap AB (weights = A, slots = n side).
//
// Contract
//   weights  one "cuda.tc16x64.v1" layer per expert, stacked: w13 [E, 2I, H] (gate rows, then
//            up rows), w2 [E, H, I]; H % 64 == 0 and I % 64 == 0 (no padded tiles).
//   x        act [T, H] (fp16 | bf16), row-major, 4-byte aligned rows
//   slots    s = t*k + j. Aligned mode: CTA column c of slot block b is sorted_ids[b*BM + c],
//            expert block_expert[b] (launch_align with block == BM). Direct mode (BM_ALIGN = 1):
//            block b is slot b alone (CTA column 0), expert topk_ids[b]; no alignment launch.
//   GEMM 1   h[s, i] = silu(x_t . w1_e[i]) * (x_t . w3_e[i])  -> workspace act [T*k, I]
//   GEMM 2   y[s, n] = h_s . w2_e[n]                           -> workspace fp32 [T*k, H]
//   reduce   out[t, n] = sum_j topk_weights[t, j] * y[t*k + j, n], j ascending (deterministic)
// Each CTA: kWarps warps split K (contiguous k64 tile ranges, summed through shared memory in
// warp order, so results do not depend on scheduling) over 2 n-tiles (32 rows: gate + up tile
// for GEMM 1, two adjacent tiles for GEMM 2) x kBM slots (kBM / 8 mma n-groups).
// Instantiated (fused_moe_{f16,bf16}.cu): act {fp16, bf16} x {uint4b8, uint4} x
// (kBM, kWarps) in {(8, 8) decode, (32, 4), (64, 4) prefill}, direct mode with (8, 8).
// Checked by: build-moe/tests/gpu/moe/w4a16_test_gpu_moe (vs moe_reference on the CPU).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "moe/moe_kernels.cuh"

namespace w4a16::kernels::cuda::moe {

template <class T> struct Act;
template <> struct Act<__half> {
  static constexpr std::uint32_t kMagic = 0x64006400u;  // fp16 1024.0 in both halves: 1024 + q is exact
  static constexpr std::uint32_t kZeroBits = 0x6400u;   // 1024 + z as fp16 bits = 0x6400 | z
  using T2 = __half2;
};
template <> struct Act<__nv_bfloat16> {
  static constexpr std::uint32_t kMagic = 0x43004300u;  // bf16 128.0: 128 + q exact (ulp 1 in [128, 256))
  static constexpr std::uint32_t kZeroBits = 0x4300u;
  using T2 = __nv_bfloat162;
};

__device__ __forceinline__ std::uint32_t lop3_and_or(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;  // (a & b) | c; 0xEA = (0xF0 & 0xCC) | 0xAA
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

template <class T2> __device__ __forceinline__ T2 as_t2(std::uint32_t u) { return *reinterpret_cast<T2*>(&u); }
template <class T2> __device__ __forceinline__ std::uint32_t as_u32(T2 v) { return *reinterpret_cast<std::uint32_t*>(&v); }

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (sizeof(T) == 2 && Act<T>::kMagic == 0x64006400u) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// A fragment of one k16 sub-tile: word w holds nibbles a0 a2 a4 a6 a1 a3 a5 a7 (docs/LAYOUT.md);
// (w >> 4r) & 0x000f000f is register r, rows gid (r even) / gid + 8 (r odd).
// zb = 1024 + z (fp16) or 128 + z (bf16) per row, s the row's scale: (q + base) - (z + base) is exact.
template <class T>
__device__ __forceinline__ void dequant(std::uint32_t w, std::uint32_t zb0, std::uint32_t zb1, std::uint32_t s0,
                                        std::uint32_t s1, std::uint32_t (&a)[4]) {
  using T2 = typename Act<T>::T2;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const T2 v = as_t2<T2>(lop3_and_or(w >> (4 * r), 0x000f000fu, Act<T>::kMagic));
    const T2 z = as_t2<T2>(r & 1 ? zb1 : zb0), s = as_t2<T2>(r & 1 ? s1 : s0);
    a[r] = as_u32<T2>(__hmul2(__hsub2(v, z), s));
  }
}

struct GemmParams {
  const uint4* qweight;          // stacked [E][N/16][K/64][32 lanes] uint4
  const std::uint16_t* scales;   // [E][G][N]
  const std::uint8_t* zeros;     // [E][G][N/16][8]
  int n, k, group_len, groups;
  const void* in;                // GEMM 1: x [T, H]; GEMM 2: h [S, I]
  int in_div;                    // token of slot s = s / in_div (top_k for GEMM 1, 1 for GEMM 2)
  const std::int32_t* sorted;    // aligned mode
  const std::int32_t* block_expert;
  const std::int32_t* total;
  const std::int32_t* topk_ids;  // direct mode
  int sentinel;                  // T * k
  int inter;                     // I (GEMM 1: up tile offset and h row length)
  void* h_out;                   // GEMM 1 output [S, I] act
  float* y_out;                  // GEMM 2 output [S, H] fp32
};

// kBM: slots per CTA (multiple of 8); kWarps: warps splitting K; kGemm1: fused SiLU epilogue;
// kDirect: block b = slot b (kBM must be 8; columns 1..7 idle).
template <class T, bool kZeros, int kBM, int kWarps, bool kGemm1, bool kDirect>
__global__ void __launch_bounds__(kWarps * 32) moe_gemm_kernel(GemmParams p) {
  constexpr int kGroupsN = kBM / 8;  // mma n-groups of 8 slots
  constexpr int kPrefetch = 4;       // k64 tiles whose weights are loaded before any is used
  static_assert(kBM % 8 == 0, "slots per CTA come in mma n-groups of 8");
  static_assert(!kDirect || kBM == 8, "direct mode holds one slot per CTA");
  using T2 = typename Act<T>::T2;
  __shared__ float red[kWarps][2][kGroupsN][4][32];  // split-K partial sums, lane-minor (no bank conflicts)

  const int b = blockIdx.x;
  int expert;
  if constexpr (kDirect) {
    expert = p.topk_ids[b];
  } else {
    if (b * kBM >= *p.total) return;  // past the padded total: this launch was sized by the bound
    expert = p.block_expert[b];
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tq = lane % 4;
  const int KT = p.k / 64, NT = p.n / 16;
  const int tile0 = kGemm1 ? blockIdx.y : 2 * blockIdx.y;
  const int tile1 = kGemm1 ? blockIdx.y + p.inter / 16 : 2 * blockIdx.y + 1;

  // B operand rows: slot of CTA column c*8 + gid, null for padding / idle columns.
  const T* rowp[kGroupsN];
#pragma unroll
  for (int c = 0; c < kGroupsN; ++c) {
    int s;
    if constexpr (kDirect) s = gid == 0 ? b : p.sentinel;
    else s = p.sorted[b * kBM + c * 8 + gid];
    rowp[c] = s < p.sentinel ? static_cast<const T*>(p.in) + static_cast<std::int64_t>(s / p.in_div) * p.k : nullptr;
  }

  float acc[2][kGroupsN][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int c = 0; c < kGroupsN; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][c][r] = 0.f;

  const uint4* qe = p.qweight + static_cast<std::int64_t>(expert) * NT * KT * 32;
  const uint4* A0 = qe + static_cast<std::int64_t>(tile0) * KT * 32 + lane;
  const uint4* A1 = qe + static_cast<std::int64_t>(tile1) * KT * 32 + lane;
  const std::uint16_t* se = p.scales + static_cast<std::int64_t>(expert) * p.groups * p.n;
  const std::uint8_t* ze = kZeros ? p.zeros + static_cast<std::int64_t>(expert) * p.groups * (p.n / 2) : nullptr;
  const int kt_begin = warp * KT / kWarps, kt_end = (warp + 1) * KT / kWarps;

  for (int kt0 = kt_begin; kt0 < kt_end; kt0 += kPrefetch) {
    uint4 w0[kPrefetch], w1[kPrefetch];
#pragma unroll
    for (int i = 0; i < kPrefetch; ++i)
      if (kt0 + i < kt_end) {
        w0[i] = __ldg(A0 + (kt0 + i) * 32);
        w1[i] = __ldg(A1 + (kt0 + i) * 32);
      }
#pragma unroll
    for (int i = 0; i < kPrefetch; ++i) {
      if (kt0 + i >= kt_end) break;
      const int kt = kt0 + i;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int kk = kt * 64 + 16 * j;
        const int g = kk / p.group_len;
        // Scales of rows (gid, gid + 8) of each tile as one 32-bit word; zeros one byte per tile.
        const std::uint32_t sp0 = __ldg(reinterpret_cast<const unsigned*>(se + g * p.n + 16 * tile0) + gid);
        const std::uint32_t sp1 = __ldg(reinterpret_cast<const unsigned*>(se + g * p.n + 16 * tile1) + gid);
        std::uint32_t zb[4];
        if constexpr (kZeros) {
          const std::uint32_t z0 = __ldg(ze + (g * NT + tile0) * 8 + gid), z1 = __ldg(ze + (g * NT + tile1) * 8 + gid);
          zb[0] = (Act<T>::kZeroBits | (z0 & 15u)) * 0x10001u;
          zb[1] = (Act<T>::kZeroBits | (z0 >> 4)) * 0x10001u;
          zb[2] = (Act<T>::kZeroBits | (z1 & 15u)) * 0x10001u;
          zb[3] = (Act<T>::kZeroBits | (z1 >> 4)) * 0x10001u;
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) zb[q] = (Act<T>::kZeroBits | 8u) * 0x10001u;  // uint4b8: z = 8
        }
        const std::uint32_t s00 = (sp0 & 0xffffu) * 0x10001u, s01 = (sp0 >> 16) * 0x10001u;
        const std::uint32_t s10 = (sp1 & 0xffffu) * 0x10001u, s11 = (sp1 >> 16) * 0x10001u;
        const std::uint32_t ww0 = j == 0 ? w0[i].x : j == 1 ? w0[i].y : j == 2 ? w0[i].z : w0[i].w;
        const std::uint32_t ww1 = j == 0 ? w1[i].x : j == 1 ? w1[i].y : j == 2 ? w1[i].z : w1[i].w;
        std::uint32_t a0[4], a1[4];
        dequant<T>(ww0, zb[0], zb[1], s00, s01, a0);
        dequant<T>(ww1, zb[2], zb[3], s10, s11, a1);
#pragma unroll
        for (int c = 0; c < kGroupsN; ++c) {
          std::uint32_t b0 = 0, b1 = 0;
          if (rowp[c] != nullptr) {
            b0 = __ldg(reinterpret_cast<const unsigned*>(rowp[c] + kk + 2 * tq));
            b1 = __ldg(reinterpret_cast<const unsigned*>(rowp[c] + kk + 2 * tq + 8));
          }
          mma16816<T>(acc[0][c], a0, b0, b1);
          mma16816<T>(acc[1][c], a1, b0, b1);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int c = 0; c < kGroupsN; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) red[warp][i][c][r][lane] = acc[i][c][r];
  __syncthreads();

  // Epilogue: element (c, r, lane) of a tile is row gid + 8 (r / 2), CTA column c*8 + 2 tq + r % 2.
  constexpr int kElems = kGroupsN * 4 * 32;
  for (int idx = threadIdx.x; idx < kElems; idx += kWarps * 32) {
    const int c = idx / 128, r = (idx / 32) % 4, l = idx % 32;
    const int col = c * 8 + 2 * (l % 4) + (r % 2), row = l / 4 + 8 * (r / 2);
    int s;
    if constexpr (kDirect) s = col == 0 ? b : p.sentinel;
    else s = p.sorted[b * kBM + col];
    if (s >= p.sentinel) continue;
    float v0 = 0.f, v1 = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {  // fixed order: deterministic
      v0 += red[w][0][c][r][l];
      v1 += red[w][1][c][r][l];
    }
    if constexpr (kGemm1) {
      const float hval = v0 / (1.f + __expf(-v0)) * v1;
      T* h = static_cast<T*>(p.h_out) + static_cast<std::int64_t>(s) * p.inter + 16 * tile0 + row;
      if constexpr (Act<T>::kMagic == 0x64006400u) *h = __float2half_rn(hval);
      else *h = __float2bfloat16_rn(hval);
    } else {
      float* y = p.y_out + static_cast<std::int64_t>(s) * p.n;
      y[16 * tile0 + row] = v0;
      y[16 * tile1 + row] = v1;
    }
  }
}

template <class T>
__global__ void moe_reduce_kernel(const float* __restrict__ y, const float* __restrict__ tw, int tokens, int k, int H,
                                  T* __restrict__ out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(tokens) * H) return;
  const std::int64_t t = i / H, n = i % H;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc += tw[t * k + j] * y[(t * k + j) * H + n];
  if constexpr (Act<T>::kMagic == 0x64006400u) out[i] = __float2half_rn(acc);
  else out[i] = __float2bfloat16_rn(acc);
}

template <class T, bool kZeros>
void launch_fused_moe_t(const MoeRunDev& r, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda::moe
