// Fused MoE W4A16 expert GEMMs on mma.sync.m16n8k16, swap AB (weights = A, slots = n side).
//
// Contract
//   weights  one "cuda.tc16x64.v1" layer per expert, stacked: w13 [E, 2I, H] (gate rows, then
//            up rows), w2 [E, H, I]; H % 64 == 0 and I % 64 == 0 (no padded tiles).
//   x        act [T, H] (fp16 | bf16), row-major, 4-byte aligned rows (16-byte aligned: 16-byte
//            cp.async; otherwise 4-byte copies)
//   slots    s = t*k + j. Aligned mode: CTA column c of slot block b is sorted_ids[b*BM + c],
//            expert block_expert[b] (launch_align with block == BM). Direct mode (BM_ALIGN = 1):
//            block b is slot b alone (CTA column 0), expert topk_ids[b]; no alignment launch.
//   GEMM 1   h[s, i] = silu(x_t . w1_e[i]) * (x_t . w3_e[i])  -> workspace act [T*k, I]
//   GEMM 2   y[s, n] = h_s . w2_e[n]                           -> workspace fp32 [T*k, H] (grouped path: act)
//   reduce   out[t, n] = sum_j topk_weights[t, j] * y[t*k + j, n], j ascending (deterministic); the direct path's
//            ring kernel folds it into GEMM 2 where 4 <= k <= 8 (ring_fold: no y rows, no reduce launch, the same bits)
// Two kernels (every launch PDL-chained, see pdl_wait):
//   moe_decode_kernel   8 slots per CTA (direct mode or aligned blocks of 8), up to 8 warps split
//                       K (contiguous k64 tile ranges, summed through shared memory in warp order:
//                       deterministic) over 2 n-tiles (32 rows: gate + up tile for GEMM 1, two
//                       adjacent tiles for GEMM 2); all loads of a 4-tile batch in flight at once.
//   moe_prefill_kernel  32 or 64 slots of one expert per CTA, 4 warps x one tile pair each, no
//                       split-K; B (the gathered x / h block), weights, scales, zeros through a
//                       4-stage cp.async ring in shared memory, B read with ldmatrix. On sm_90a blocks 64
//                       and 128 take the grouped wgmma path instead (fused_moe_launch.cuh launch_grouped:
//                       the linear prefill kernel in grouped mode, prefill.hpp PrefillGrouped).
//   moe_ring_kernel     (moe_ring.cuh; the default of the decode paths, W4A16_MOE_RING=0 takes
//                       moe_decode_kernel) the decode paths (direct, aligned 8) as a persistent grid
//                       with a per-warp cp.async weight ring.
// Instantiated (fused_moe_{f16,bf16}.cu): act {fp16, bf16} x {uint4b8, uint4} x {decode direct,
// decode aligned 8, prefill 32, prefill 64} x {GEMM 1, GEMM 2}; ring: act x scalar x GEMM x
// {one entry per tile, per half tile}.
// Checked by: build-moe-cuda/tests/gpu/moe/w4a16_test_gpu_moe (vs moe_reference on the CPU).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "fast_div.hpp"
#include "moe/moe_kernels.cuh"
#include "pdl.cuh"

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
  int group_shift;               // log2(group_len) when a power of two, else -1 (channelwise K)
  const void* in;                // GEMM 1: x [T, H]; GEMM 2: h [S, I]
  FastDiv in_div;                // token of slot s = in_div.div(s) (s / top_k for GEMM 1, s / 1 for GEMM 2)
  bool in_vec16;                 // `in` 16-byte aligned: 16-byte cp.async, else 4-byte copies
  bool index_ready;              // expert ids / alignment complete before the previous kernel of the
                                 // chain triggered: may be read before griddepcontrol.wait
  const std::int32_t* sorted;    // aligned mode
  const std::int32_t* block_expert;
  const std::int32_t* total;
  const std::int32_t* topk_ids;  // direct mode
  int sentinel;                  // T * k
  int inter;                     // I (GEMM 1: up tile offset and h row length)
  void* h_out;                   // GEMM 1 output [S, I] act
  float* y_out;                  // GEMM 2 output [S, H] fp32
  bool ring_balanced;            // ring kernel (moe_ring.cuh): balanced grid (else all launched blocks)
  bool ring_direct;              // ring kernel: direct mode (slot block b = slot b alone, expert topk_ids[b])
  bool ring_align;               // ring kernel, aligned mode: every block computes the alignment from
                                 // topk_ids in shared memory (ring_align.hpp); sorted / block_expert /
                                 // total unused
  int experts;                   // E (ring_align)
  // Ring kernel, GEMM 2 of the direct path, folded (ring_fold): item = (token t, 16-row stripe), warp j < fold_k computes
  // slot t * fold_k + j's expert on that stripe, and the block writes out[t] = sum_j topk_weights[t, j] * y_j (act dtype,
  // the reduce kernel's float operations in its order) instead of y: no reduce launch.
  bool ring_fold;
  int fold_k;                    // top_k (4..8)
  const float* topk_weights;     // [T, k]
  void* fold_out;                // [T, H] act
};

// Programmatic dependent launch (pdl.cuh): each kernel of the chain is launched with
// cudaLaunchAttributeProgrammaticStreamSerialization, reads before pdl_wait() only what was
// complete before its predecessor triggered (the weights always; routing indices when
// index_ready), and triggers its successor right after its own wait.

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared; src_bytes 0 zero-fills (padding slots) without reading src.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int src_bytes = 4) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(std::uint32_t dst, const void* src, int src_bytes = 4) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async8(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// ---------------------------------------------------------------------------------------------
// Decode kernel: 8 slots per CTA (one mma n-group), nwarps = blockDim.x / 32 <= 8 warps
// splitting K into contiguous k64 tile ranges, 2 n-tiles (32 rows) per CTA: gate + up tile
// (GEMM 1) or two adjacent tiles (GEMM 2). Per batch of kPrefetch k64 tiles a warp issues every
// load it needs at once (weights and scales / zeros to registers, its K-slice of the 8 B rows
// to shared memory with cp.async) and only then computes: one memory round trip per batch.
// The first batch's weights are requested before the grid dependency resolves (PDL).
// kDirect: block b is slot b alone (CTA column 0; columns 1..7 idle), no alignment launch.
constexpr int kDecodeBM = 8;        // slots per CTA = one mma n-group
constexpr int kDecodePrefetch = 4;  // k64 tiles per batch, per warp
// One warp's shared memory in the decode kernel (dynamic: nwarps of these, then the split-K sums).
template <class T>
struct DecodeWarpSmem {
  static constexpr int kRowHalves = kDecodePrefetch * 64 + 8;  // staged B row: one batch + 16 B pad, so
                                                               // the 8 rows of a fragment load hit distinct banks
  T xs[kDecodeBM][kRowHalves];                     // (slot, k of the batch)
  std::uint32_t ss[kDecodePrefetch][2][2][8];      // (k64, tile, half, gid) scale pairs
  std::uint8_t zs[kDecodePrefetch][2][2][8];       // (k64, tile, half, gid) zero bytes
};
constexpr int kDecodeRedBytes = 2 * 4 * 32 * 4;  // per warp: (tile, r, lane) fp32 partial sums
template <class T>
constexpr std::size_t decode_smem_bytes(int nwarps) {
  return static_cast<std::size_t>(nwarps) * (sizeof(DecodeWarpSmem<T>) + kDecodeRedBytes);
}

// The epilogue of one output pair of slot s, row `row` of the CTA's two n-tiles: GEMM 1 writes
// SiLU(gate) * up to h (act dtype), GEMM 2 the two fp32 sums to y (reduced over top-k later).
template <class T, bool kGemm1>
__device__ __forceinline__ void store_pair(const GemmParams& p, int s, int tile0, int tile1, int row, float v0, float v1) {
  if constexpr (kGemm1) {
    const float hval = v0 / (1.f + __expf(-v0)) * v1;
    T* hp = static_cast<T*>(p.h_out) + static_cast<std::int64_t>(s) * p.inter + 16 * tile0 + row;
    if constexpr (Act<T>::kMagic == 0x64006400u) *hp = __float2half_rn(hval);
    else *hp = __float2bfloat16_rn(hval);
  } else {
    float* y = p.y_out + static_cast<std::int64_t>(s) * p.n;
    y[16 * tile0 + row] = v0;
    y[16 * tile1 + row] = v1;
  }
}

template <class T, bool kZeros, bool kGemm1, bool kDirect>
__global__ void __launch_bounds__(256, 3) moe_decode_kernel(GemmParams p) {
  constexpr int kBM = kDecodeBM;
  constexpr int kPrefetch = kDecodePrefetch;
  static_assert(sizeof(DecodeWarpSmem<T>) % 16 == 0, "16-byte cp.async targets in every warp's share");
  extern __shared__ __align__(16) unsigned char decode_smem[];
  using T2 = typename Act<T>::T2;
  const int b = blockIdx.x;
  const int nwarps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tq = lane % 4;
  DecodeWarpSmem<T>& my = reinterpret_cast<DecodeWarpSmem<T>*>(decode_smem)[warp];
  float(*red)[2][4][32] = reinterpret_cast<float(*)[2][4][32]>(decode_smem + nwarps * sizeof(DecodeWarpSmem<T>));
  const int KT = p.k / 64, NT = p.n / 16;
  const int tile0 = kGemm1 ? blockIdx.y : 2 * blockIdx.y;
  const int tile1 = kGemm1 ? blockIdx.y + p.inter / 16 : 2 * blockIdx.y + 1;

  if (!p.index_ready) pdl_wait();
  int expert;
  if constexpr (kDirect) {
    expert = p.topk_ids[b];
  } else {
    if (b * kBM >= *p.total) return;  // past the padded total: this launch was sized by the bound
    expert = p.block_expert[b];
  }

  const uint4* qe = p.qweight + static_cast<std::int64_t>(expert) * NT * KT * 32;
  const uint4* A0 = qe + static_cast<std::int64_t>(tile0) * KT * 32 + lane;
  const uint4* A1 = qe + static_cast<std::int64_t>(tile1) * KT * 32 + lane;
  const unsigned* se = reinterpret_cast<const unsigned*>(p.scales + static_cast<std::int64_t>(expert) * p.groups * p.n);
  const std::uint8_t* ze = kZeros ? p.zeros + static_cast<std::int64_t>(expert) * p.groups * (p.n / 2) : nullptr;
  const int kt_begin = warp * KT / nwarps, kt_end = (warp + 1) * KT / nwarps;

  // One batch: weights (k64, tile) to registers; scale pairs and zero bytes per (k64, tile, half
  // of the k64 tile: a group of 32 ends mid-tile; larger groups read one word twice) to this
  // warp's shared memory with cp.async, 8 words (one per gid) each, so they cost no registers.
  uint4 w0[kPrefetch], w1[kPrefetch];
  auto load_batch = [&](int kt0) {
#pragma unroll
    for (int i = 0; i < kPrefetch; ++i)
      if (kt0 + i < kt_end) {
        w0[i] = __ldg(A0 + (kt0 + i) * 32);
        w1[i] = __ldg(A1 + (kt0 + i) * 32);
      }
#pragma unroll
    for (int q = 0; q < kPrefetch * 4 * 8 / 32; ++q) {  // scale words: (i, t, h, gid) = lane + 32 q
      const int wi = lane + 32 * q, i = wi / 32, t = (wi / 16) % 2, h = (wi / 8) % 2, rg = wi % 8;
      if (kt0 + i < kt_end) {
        const int g = ((kt0 + i) * 64 + 32 * h) / p.group_len;
        cp_async4(&my.ss[i][t][h][rg], se + (g * p.n + 16 * (t ? tile1 : tile0)) / 2 + rg);
      }
    }
    if constexpr (kZeros) {
      if (lane < kPrefetch * 4) {  // zero bytes of (i, t, h): the 8 bytes of (group, tile)
        const int i = lane / 4, t = (lane / 2) % 2, h = lane % 2;
        if (kt0 + i < kt_end) {
          const int g = ((kt0 + i) * 64 + 32 * h) / p.group_len;
          cp_async8(&my.zs[i][t][h][0], ze + (g * NT + (t ? tile1 : tile0)) * 8);
        }
      }
    }
  };
  if (kt_begin < kt_end) load_batch(kt_begin);
  if (p.index_ready) pdl_wait();
  pdl_launch_dependents();

  // Token row of CTA column r (lanes 0..7 hold column `lane`), -1 for padding / idle columns.
  int my_row = -1;
  if (lane < kBM) {
    int s;
    if constexpr (kDirect) s = lane == 0 ? b : p.sentinel;
    else s = p.sorted[b * kBM + lane];
    my_row = s < p.sentinel ? p.in_div.div(s) : -1;
  }
  const bool b_valid = __shfl_sync(0xffffffffu, my_row, gid) >= 0;  // this lane's B row (column gid)
  const T* in = static_cast<const T*>(p.in);

  float acc[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[i][r] = 0.f;

  for (int kt0 = kt_begin; kt0 < kt_end; kt0 += kPrefetch) {
    if (kt0 != kt_begin) load_batch(kt0);
    // Stage this batch's K-slice of the 8 B rows: row r, 16-byte chunk `lane` (32 chunks = 4 k64).
    const int nk = min(kPrefetch, kt_end - kt0) * 64;
#pragma unroll
    for (int r = 0; r < kBM; ++r) {
      const int row = __shfl_sync(0xffffffffu, my_row, r);
      if (row >= 0 && lane * 8 < nk) {
        const T* src = in + static_cast<std::int64_t>(row) * p.k + kt0 * 64 + lane * 8;
        T* dst = &my.xs[r][lane * 8];
        if (p.in_vec16) {
          cp_async16(dst, src);
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) cp_async4(dst + 2 * q, src + 2 * q);
        }
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kPrefetch; ++i) {
      if (kt0 + i >= kt_end) break;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int h = j / 2;
        std::uint32_t zb[4];
        if constexpr (kZeros) {
          const std::uint32_t z0 = my.zs[i][0][h][gid], z1 = my.zs[i][1][h][gid];
          zb[0] = (Act<T>::kZeroBits | (z0 & 15u)) * 0x10001u;
          zb[1] = (Act<T>::kZeroBits | (z0 >> 4)) * 0x10001u;
          zb[2] = (Act<T>::kZeroBits | (z1 & 15u)) * 0x10001u;
          zb[3] = (Act<T>::kZeroBits | (z1 >> 4)) * 0x10001u;
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) zb[q] = (Act<T>::kZeroBits | 8u) * 0x10001u;  // uint4b8: z = 8
        }
        const std::uint32_t sp0 = my.ss[i][0][h][gid], sp1 = my.ss[i][1][h][gid];
        const std::uint32_t s00 = (sp0 & 0xffffu) * 0x10001u, s01 = (sp0 >> 16) * 0x10001u;
        const std::uint32_t s10 = (sp1 & 0xffffu) * 0x10001u, s11 = (sp1 >> 16) * 0x10001u;
        const std::uint32_t ww0 = j == 0 ? w0[i].x : j == 1 ? w0[i].y : j == 2 ? w0[i].z : w0[i].w;
        const std::uint32_t ww1 = j == 0 ? w1[i].x : j == 1 ? w1[i].y : j == 2 ? w1[i].z : w1[i].w;
        std::uint32_t a0[4], a1[4];
        dequant<T>(ww0, zb[0], zb[1], s00, s01, a0);
        dequant<T>(ww1, zb[2], zb[3], s10, s11, a1);
        std::uint32_t b0 = 0, b1 = 0;
        if (b_valid) {
          const T* xr = &my.xs[gid][i * 64 + 16 * j + 2 * tq];
          b0 = *reinterpret_cast<const std::uint32_t*>(xr);
          b1 = *reinterpret_cast<const std::uint32_t*>(xr + 8);
        }
        mma16816<T>(acc[0], a0, b0, b1);
        mma16816<T>(acc[1], a1, b0, b1);
      }
    }
    __syncwarp();  // every lane has read my.xs before the next batch overwrites it
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) red[warp][i][r][lane] = acc[i][r];
  __syncthreads();

  // Epilogue: element (r, lane) of a tile is row gid + 8 (r / 2), CTA column 2 tq + r % 2.
  for (int idx = threadIdx.x; idx < 4 * 32; idx += blockDim.x) {
    const int r = idx / 32, l = idx % 32;
    const int col = 2 * (l % 4) + (r % 2), row = l / 4 + 8 * (r / 2);
    int s;
    if constexpr (kDirect) s = col == 0 ? b : p.sentinel;
    else s = p.sorted[b * kBM + col];
    if (s >= p.sentinel) continue;
    float v0 = 0.f, v1 = 0.f;
    for (int w = 0; w < nwarps; ++w) {  // fixed order: deterministic
      v0 += red[w][0][r][l];
      v1 += red[w][1][r][l];
    }
    store_pair<T, kGemm1>(p, s, tile0, tile1, row, v0, v1);
  }

}

// Warps of the decode kernel for a K of KT k64 tiles: one batch (kPrefetch = 4 tiles) per warp
// where K allows, at most 8 (K = 2048: 8 warps; K = 768: 3 warps of 4 tiles).
inline int decode_warps(int KT) { return KT >= 32 ? 8 : (KT + 3) / 4; }

// ---------------------------------------------------------------------------------------------
// Prefill kernel: kBM (32 | 64) slots of one expert per CTA x 4 warps, each warp owning one tile
// pair (32 weight rows: gate + up tile for GEMM 1, two adjacent tiles for GEMM 2) for all kBM
// slots: every A fragment is dequantized once and used kBM / 8 times. K loop over k64 tiles
// through a kStages-deep cp.async ring in shared memory holding, per stage, the gathered B block
// (kBM slots x 64 k, 128-byte rows with the 16-byte chunks XOR-swizzled by row, read with
// ldmatrix.x4), each warp's two weight tiles (2 x 512 B, read back by the lane that copied them)
// and each warp's scale words and zero-point bytes. No split-K: the epilogue reads registers.
template <int kBM, bool kZeros>
struct PrefillSmem {
  static constexpr int kStages = 4;            // ring depth: loads run kStages - 1 tiles ahead
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kXBytes = kBM * 128;    // (slot, 64 k) act, swizzled
  static constexpr int kWBytes = kWarps * 2 * 512;  // (warp, tile, lane) uint4
  static constexpr int kSBytes = kWarps * 2 * 2 * 8 * 4;  // (warp, tile, half, gid) scale pair words
  static constexpr int kZBytes = kZeros ? kWarps * 2 * 2 * 8 : 0;  // (warp, tile, half, gid) zero bytes
  static constexpr int kStageBytes = kXBytes + kWBytes + kSBytes + kZBytes;
  static constexpr int kBytes = kStages * kStageBytes;
  static_assert(kBM % 16 == 0, "B block staged 16 rows per pass of 128 threads x 16 bytes");
  static_assert(kStageBytes % 16 == 0, "16-byte cp.async and ldmatrix addresses in every stage");
  static_assert(kBytes <= 163 * 1024, "runs on sm_80 code too: an A100's 163 KB a block");
};

template <class T, bool kZeros, int kBM, bool kGemm1>
__global__ void __launch_bounds__(128, 3) moe_prefill_kernel(GemmParams p) {
  using L = PrefillSmem<kBM, kZeros>;
  constexpr int kGroupsN = kBM / 8;  // mma n-groups
  constexpr int S = L::kStages;
  static_assert(kGroupsN % 2 == 0, "ldmatrix.x4 feeds two n-groups");
  extern __shared__ __align__(128) unsigned char smem[];

  const int b = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tq = lane % 4;
  const int tid = threadIdx.x;
  const int KT = p.k / 64, NT = p.n / 16;
  const int npairs = kGemm1 ? p.inter / 16 : p.n / 32;
  const int pair = blockIdx.y * L::kWarps + warp;
  const bool active = pair < npairs;  // H % 128 != 0: the last CTA's upper warps only stage B
  const int tile0 = kGemm1 ? pair : 2 * pair;
  const int tile1 = kGemm1 ? pair + p.inter / 16 : 2 * pair + 1;

  if (!p.index_ready) pdl_wait();
  if (b * kBM >= *p.total) return;
  const int expert = p.block_expert[b];

  const uint4* qe = p.qweight + static_cast<std::int64_t>(expert) * NT * KT * 32;
  const uint4* A0 = qe + static_cast<std::int64_t>(tile0) * KT * 32 + lane;
  const uint4* A1 = qe + static_cast<std::int64_t>(tile1) * KT * 32 + lane;
  const unsigned* se = reinterpret_cast<const unsigned*>(p.scales + static_cast<std::int64_t>(expert) * p.groups * p.n);
  const std::uint8_t* ze = kZeros ? p.zeros + static_cast<std::int64_t>(expert) * p.groups * (p.n / 2) : nullptr;

  auto stage_x = [&](int st) { return reinterpret_cast<T*>(smem + st * L::kStageBytes); };
  auto stage_w = [&](int st) { return reinterpret_cast<uint4*>(smem + st * L::kStageBytes + L::kXBytes); };
  auto stage_s = [&](int st) {
    return reinterpret_cast<unsigned*>(smem + st * L::kStageBytes + L::kXBytes + L::kWBytes);
  };
  auto stage_z = [&](int st) {
    return reinterpret_cast<std::uint8_t*>(smem + st * L::kStageBytes + L::kXBytes + L::kWBytes + L::kSBytes);
  };
  // Copy sources and shared-memory targets, fixed per thread (the issue loop is a large share of
  // the instructions per k64 tile): weights, this lane's 16 bytes of both tiles; scales, the word
  // of (tile, half, gid) = lane; zeros (lanes 0..3), the 8 bytes of (tile, half) = lane.
  const std::uint32_t smem0 = smem_u32(smem);
  const std::uint32_t w_dst = smem0 + L::kXBytes + (warp * 64 + lane) * 16;  // tile 1: + 512
  const std::uint32_t s_dst = smem0 + L::kXBytes + L::kWBytes + (warp * 32 + lane) * 4;
  const std::uint32_t z_dst = smem0 + L::kXBytes + L::kWBytes + L::kSBytes + warp * 32 + lane * 8;
  const int s_half = (lane / 8) % 2, z_half = lane % 2;
  const unsigned* s_src = se + 8 * ((lane / 16) ? tile1 : tile0) + lane % 8;  // + group * n / 2
  const std::uint8_t* z_src = kZeros ? ze + 8 * (((lane / 2) % 2) ? tile1 : tile0) : nullptr;  // + group * NT * 8
  auto group_of = [&](int kk) { return p.group_shift >= 0 ? kk >> p.group_shift : kk / p.group_len; };
  auto load_w = [&](int kt, int st) {
    if (!active || kt >= KT) return;
    const std::uint32_t so = st * L::kStageBytes;
    cp_async16(w_dst + so, A0 + kt * 32);
    cp_async16(w_dst + so + 512, A1 + kt * 32);
    cp_async4(s_dst + so, s_src + group_of(kt * 64 + 32 * s_half) * (p.n / 2));
    if constexpr (kZeros) {
      if (lane < 4) cp_async8(z_dst + so, z_src + group_of(kt * 64 + 32 * z_half) * (NT * 8));
    }
  };

  // Prologue part 1: weights of the first S - 1 tiles (constant data: before the wait when the
  // expert id is already known).
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    load_w(st, st);
    cp_async_commit();
  }
  if (p.index_ready) pdl_wait();
  pdl_launch_dependents();

  // B rows this thread stages: rows tid / 8 + 16 i, 16-byte chunk tid % 8 of each 64-k tile; the
  // swizzle (chunk ^ row % 8) is the same for all of them since 16 i % 8 == 0.
  constexpr int kRowsPer = kBM / 16;
  const T* in = static_cast<const T*>(p.in);
  const int chunk = tid % 8, row0 = tid / 8;
  const T* x_src[kRowsPer];  // padding rows read nothing (src size 0) at a valid address: row 0
  unsigned x_ok = 0;         // bit i: row i is a real slot
#pragma unroll
  for (int i = 0; i < kRowsPer; ++i) {
    const int s = p.sorted[b * kBM + row0 + 16 * i];
    const bool ok = s < p.sentinel;
    x_src[i] = in + (ok ? static_cast<std::int64_t>(p.in_div.div(s)) * p.k + chunk * 8 : 0);
    x_ok |= ok ? 1u << i : 0u;
  }
  const std::uint32_t x_dst = smem0 + (row0 * 64 + ((chunk ^ (row0 & 7)) * 8)) * sizeof(T);  // row i: + 16 i rows
  auto load_x = [&](int kt, int st) {
    if (kt >= KT) return;
    const std::uint32_t so = st * L::kStageBytes;
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
      const std::uint32_t dst = x_dst + so + i * 16 * 64 * sizeof(T);
      const bool ok = (x_ok >> i) & 1u;
      const T* src = x_src[i] + kt * 64;
      if (p.in_vec16) {
        cp_async16(dst, src, ok ? 16 : 0);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) cp_async4(dst + 4 * q, src + 2 * q, ok ? 4 : 0);
      }
    }
  };
  // Prologue part 2: B of the first S - 1 tiles (one group each, after the weight groups, so that
  // group counting stays "stage kt is complete when at most S - 2 newer groups are pending").
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    load_x(st, st);
    cp_async_commit();
  }

  float acc[2][kGroupsN][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int c = 0; c < kGroupsN; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][c][r] = 0.f;

  // ldmatrix.x4 row addresses: lane l serves matrix m = l / 8 (n-group 2 cp + m / 2, k half m % 2),
  // row l % 8 of it.
  const int lm_m = lane / 8, lm_r = lane % 8;

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<S - 2>();
    __syncthreads();  // stage kt visible to all; stage (kt - 1) % S free for reuse
    {
      const int nxt = kt + S - 1, st = nxt % S;
      load_w(nxt, st);
      load_x(nxt, st);
      cp_async_commit();
    }
    const int st = kt % S;
    if (!active) continue;
    const uint4* w = stage_w(st) + warp * 64;
    const uint4 wa0 = w[lane], wa1 = w[32 + lane];
    const unsigned* sp = stage_s(st) + warp * 32 + gid;  // [tile][half][gid]
    std::uint32_t sv[4], zv[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) sv[q] = sp[8 * q];
    if constexpr (kZeros) {
      const std::uint8_t* zp = stage_z(st) + warp * 32 + gid;  // [tile][half][gid]
#pragma unroll
      for (int q = 0; q < 4; ++q) zv[q] = zp[8 * q];
    }
    const std::uint32_t xs_base = smem_u32(stage_x(st));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int h = j / 2;
      std::uint32_t zb[4];
      if constexpr (kZeros) {
        zb[0] = (Act<T>::kZeroBits | (zv[h] & 15u)) * 0x10001u;
        zb[1] = (Act<T>::kZeroBits | (zv[h] >> 4)) * 0x10001u;
        zb[2] = (Act<T>::kZeroBits | (zv[2 + h] & 15u)) * 0x10001u;
        zb[3] = (Act<T>::kZeroBits | (zv[2 + h] >> 4)) * 0x10001u;
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) zb[q] = (Act<T>::kZeroBits | 8u) * 0x10001u;
      }
      const std::uint32_t s00 = (sv[h] & 0xffffu) * 0x10001u, s01 = (sv[h] >> 16) * 0x10001u;
      const std::uint32_t s10 = (sv[2 + h] & 0xffffu) * 0x10001u, s11 = (sv[2 + h] >> 16) * 0x10001u;
      const std::uint32_t ww0 = j == 0 ? wa0.x : j == 1 ? wa0.y : j == 2 ? wa0.z : wa0.w;
      const std::uint32_t ww1 = j == 0 ? wa1.x : j == 1 ? wa1.y : j == 2 ? wa1.z : wa1.w;
      std::uint32_t a0[4], a1[4];
      dequant<T>(ww0, zb[0], zb[1], s00, s01, a0);
      dequant<T>(ww1, zb[2], zb[3], s10, s11, a1);
#pragma unroll
      for (int cp = 0; cp < kGroupsN / 2; ++cp) {
        const int row = (2 * cp + lm_m / 2) * 8 + lm_r;
        const int ch = (2 * j + (lm_m % 2)) ^ lm_r;  // row & 7 == lm_r
        std::uint32_t bq[4];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(bq[0]), "=r"(bq[1]), "=r"(bq[2]), "=r"(bq[3])
                     : "r"(xs_base + row * 128 + ch * 16));
        mma16816<T>(acc[0][2 * cp], a0, bq[0], bq[1]);
        mma16816<T>(acc[1][2 * cp], a1, bq[0], bq[1]);
        mma16816<T>(acc[0][2 * cp + 1], a0, bq[2], bq[3]);
        mma16816<T>(acc[1][2 * cp + 1], a1, bq[2], bq[3]);
      }
    }
  }
  cp_async_wait<0>();  // no copy may still target shared memory when the CTA exits

  if (!active) return;
  // Epilogue: acc[t][c][r] is row gid + 8 (r / 2) of tile t, CTA column c*8 + 2 tq + r % 2.
#pragma unroll
  for (int c = 0; c < kGroupsN; ++c)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int s = p.sorted[b * kBM + c * 8 + 2 * tq + e];
      if (s >= p.sentinel) continue;
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int r = 2 * hr + e, row = gid + 8 * hr;
        const float v0 = acc[0][c][r], v1 = acc[1][c][r];
        store_pair<T, kGemm1>(p, s, tile0, tile1, row, v0, v1);
      }
    }
}

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

// Y: float (the mma.sync paths' fp32 rows) or T (the grouped path's rows, rounded once to the act dtype).
template <class T, class Y>
__global__ void moe_reduce_kernel(const Y* __restrict__ y, const float* __restrict__ tw, int tokens, int k, int H,
                                  T* __restrict__ out) {
  pdl_wait();  // y is GEMM 2's output
  pdl_launch_dependents();
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(tokens) * H) return;
  const std::int64_t t = i / H, n = i % H;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc += tw[t * k + j] * to_f32(y[(t * k + j) * H + n]);
  if constexpr (Act<T>::kMagic == 0x64006400u) out[i] = __float2half_rn(acc);
  else out[i] = __float2bfloat16_rn(acc);
}

// The same sums over act-dtype rows, 8 columns per thread with 16-byte loads and stores (H % 8 == 0, out 16-byte
// aligned; y rows are the workspace's): the same float operations in the same order per output, so the same bits.
// The scalar form read them at ~2.3 TB/s (T = 4096: 65.6 us); the grouped path launches this one (fused_moe_launch.cuh).
template <class T>
__global__ void moe_reduce8_kernel(const T* __restrict__ y, const float* __restrict__ tw, int tokens, int k, int H,
                                   T* __restrict__ out) {
  pdl_wait();  // y is GEMM 2's output
  pdl_launch_dependents();
  const int groups = H / 8;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(tokens) * groups) return;
  const std::int64_t t = i / groups;
  const int c = static_cast<int>(i % groups) * 8;
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j < k; ++j) {
    const float w = tw[t * k + j];
    alignas(16) T v[8];
    *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(y + (t * k + j) * H + c);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] += w * to_f32(v[e]);
  }
  alignas(16) T o[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if constexpr (Act<T>::kMagic == 0x64006400u) o[e] = __float2half_rn(acc[e]);
    else o[e] = __float2bfloat16_rn(acc[e]);
  }
  *reinterpret_cast<uint4*>(out + t * H + c) = *reinterpret_cast<const uint4*>(o);
}

// The grouped wgmma path (blocks 16..128 on sm_90a): x rows gathered in the alignment's order, row s
// of xg = x[sorted[s] / k] for s < total (zeros for a sentinel), so that the prefill kernel's TMA reads
// each m block's rows as one box. Rows at or past total are left alone (their blocks exit unread).
// V: 16-byte copies where x and its rows are 16-byte aligned, else 4-byte ones. One warp per row (its slot read
// once, no per-element division): the element-wise form with a 64-bit division per 16 bytes ran at ~2.4 TB/s.
template <class V>
__global__ void moe_gather_rows_kernel(const V* __restrict__ x, int row_vecs, int top_k, const std::int32_t* __restrict__ sorted,
                                       const std::int32_t* __restrict__ total, int slots, V* __restrict__ xg, int rows) {
  pdl_wait();  // sorted / total: the alignment's output; x: the caller's
  pdl_launch_dependents();
  const int used = min(*total, rows);
  const int lane = threadIdx.x % 32, warps = gridDim.x * (blockDim.x / 32);
  for (int s = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; s < used; s += warps) {
    const int pair = sorted[s];
    V* dst = xg + static_cast<std::int64_t>(s) * row_vecs;
    if (pair < slots) {
      const V* src = x + static_cast<std::int64_t>(pair / top_k) * row_vecs;
#pragma unroll 4
      for (int c = lane; c < row_vecs; c += 32) dst[c] = src[c];
    } else {
#pragma unroll 4
      for (int c = lane; c < row_vecs; c += 32) dst[c] = V{};
    }
  }
}

template <class T, bool kZeros>
void launch_fused_moe_t(const MoeRunDev& r, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda::moe
