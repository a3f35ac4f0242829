// Pieces shared by the three decode kernels (decode.cu: the streaming kernel; decode_small.cu: the
// small-layer kernel; decode_bulk.cu: the bulk-copy kernel), their plans (decode_plan.cu) and their launch
// (decode_run.cu): the launch arguments, the magic-number dequantization and mma per activation dtype (Dt),
// x staging in B-fragment order, the 4-tile math, the output store of one reduced float4 of partials, the
// host's instantiation picker and each kernel's sizes and launcher. Internal to src/kernels/cuda/decode;
// the contract of each kernel is at the top of its file.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common.cuh"  // W4A16_CUDA_TRY
#include "decode/decode.hpp"  // bulk_x_box_tiles, bulk_x_slot_bytes

namespace w4a16::kernels::cuda::decode_detail {

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
  int row_blocks;               // row blocks in all (gridDim.y may be fewer: each block loops over its items)
  int xvec;                     // x rows 16-byte aligned: stage with 16-byte loads
  int xstream;                  // x streamed per step through a block ring (warps_k == 1, no perm, xvec), else staged once
  int stages;                   // the bulk kernel's ring stages (decode_bulk.cu); unused by the others
  int bulk_xstream;             // the bulk kernel: x of each stage's k range copied by the producer into an x ring beside the
                                // weight ring (16-byte rows, no perm, K % 64 == 0), else staged whole; unused by the others
  int pdl_late;                 // the bulk kernel: griddepcontrol.launch_dependents once the producer has issued its last
                                // stage (and the consumers reach their last stage), not right after the wait
                                // (W4A16_DECODE_PDL_TRIGGER=late, decode_run.cu); unused by the others
};

// (a & b) | c in one instruction; 0xEA is the lop3 table of that expression ((0xF0 & 0xCC) | 0xAA).
__device__ __forceinline__ std::uint32_t lop3_and_or(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Per activation dtype: the magic-number dequantization of one layout word into the 4 A registers
// of its k16 sub-tile (rows gid, gid + 8, gid, gid + 8; docs/LAYOUT.md), and the mma.
// zlo / zhi: per-row zero-point constants of rows gid / gid + 8 (made by zlo_of / zhi_of from z in 0..15, or by
// zeros_of from a row-pair entry's zero word).
// The zero word of a row-pair entry (uint4): byte gid % 4 holds z[gid] | z[gid + 8] << 4. One byte permute with
// zero_sel(gid) (made once per thread) puts that byte in bytes 0 and 2 of `rep`, zeros elsewhere; each constant is then
// one lop3 (bf16's zhi one shift more) instead of a shift, a mask and a multiply-add each. The same bit patterns as the
// prefill kernel's zero_rep_sel / zlo_of_rep / zhi_of_rep_f16 (prefill/dequant_consts.hpp, host-tested); calling those
// plain-C++ forms here grew the uint4 decode and ring kernels by 8-88 instructions each (SASS, stop 47), so they stay apart.
__device__ __forceinline__ std::uint32_t zero_sel(int gid) { return 0x4040u | static_cast<std::uint32_t>(gid % 4) * 0x0101u; }
template <bool kBf16>
struct Dt;
template <>
struct Dt<false> {
  // fp16 1024.0 = 0x6400: its mantissa unit is 1, so 0x6400 | q is exactly 1024 + q and
  // 0x6400 | (q << 4) exactly 1024 + 16 q. Nibbles 0 and 4 (register 0) and 2 and 6 (register 2,
  // after w >> 8) are taken low, 1 and 5 / 3 and 7 (registers 1 and 3) high, then
  //   low:  (1024 + q) - (1024 + z)          = q - z   (one hsub2)
  //   high: (1024 + 16 q) / 16 - (64 + z)    = q - z   (one hfma2; every step exact)
  // 9 instructions per word instead of 11 with three shifts (Marlin's dequantization).
  static constexpr std::uint32_t kMagic = 0x64006400u;
  static constexpr std::uint32_t kSixteenth = 0x2C002C00u;  // fp16 1/16 in both halves
  __device__ static __forceinline__ std::uint32_t zlo_of(std::uint32_t z) { return kMagic + z * 0x00010001u; }  // 1024 + z
  __device__ static __forceinline__ std::uint32_t zhi_of(std::uint32_t z) { return 0xD400D400u + z * 0x00100010u; }  // -(64 + z)
  // zlo_of(z[gid]), zhi_of(z[gid + 8]) from the zero word: -(64 + z) = 0xD400 + 16 z, and 0xD400's low byte is zero.
  __device__ static __forceinline__ void zeros_of(std::uint32_t word, std::uint32_t zsel, std::uint32_t& zlo, std::uint32_t& zhi) {
    const std::uint32_t rep = __byte_perm(word, 0u, zsel);
    zlo = lop3_and_or(rep, 0x000f000fu, kMagic);
    zhi = lop3_and_or(rep, 0x00f000f0u, 0xD400D400u);
  }
  __device__ static __forceinline__ void dequant(std::uint32_t w, std::uint32_t zlo, std::uint32_t zhi, std::uint32_t (&af)[4]) {
    const std::uint32_t w8 = w >> 8;
    af[0] = sub(lop3_and_or(w, 0x000f000fu, kMagic), zlo);
    af[1] = fma(lop3_and_or(w, 0x00f000f0u, kMagic), kSixteenth, zhi);
    af[2] = sub(lop3_and_or(w8, 0x000f000fu, kMagic), zlo);
    af[3] = fma(lop3_and_or(w8, 0x00f000f0u, kMagic), kSixteenth, zhi);
  }
  __device__ static __forceinline__ std::uint32_t sub(std::uint32_t a, std::uint32_t b) {
    __half2 r = __hsub2(*reinterpret_cast<__half2*>(&a), *reinterpret_cast<__half2*>(&b));
    return *reinterpret_cast<std::uint32_t*>(&r);
  }
  __device__ static __forceinline__ std::uint32_t fma(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    __half2 r = __hfma2(*reinterpret_cast<__half2*>(&a), *reinterpret_cast<__half2*>(&b), *reinterpret_cast<__half2*>(&c));
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
  // bf16 128.0 = 0x4300: mantissa unit 1, so 0x4300 | q is exactly 128 + q. bf16 has 7 mantissa
  // bits, so a nibble cannot sit at bits 4..7 (bit 7 is the exponent's): every register takes its
  // nibbles low, after a shift, and subtracts 128 + z (11 instructions per word).
  static constexpr std::uint32_t kMagic = 0x43004300u;
  __device__ static __forceinline__ std::uint32_t zlo_of(std::uint32_t z) { return kMagic + z * 0x00010001u; }  // 128 + z
  __device__ static __forceinline__ std::uint32_t zhi_of(std::uint32_t z) { return kMagic + z * 0x00010001u; }
  __device__ static __forceinline__ void zeros_of(std::uint32_t word, std::uint32_t zsel, std::uint32_t& zlo, std::uint32_t& zhi) {
    const std::uint32_t rep = __byte_perm(word, 0u, zsel);
    zlo = lop3_and_or(rep, 0x000f000fu, kMagic);
    zhi = lop3_and_or(rep >> 4, 0x000f000fu, kMagic);
  }
  __device__ static __forceinline__ void dequant(std::uint32_t w, std::uint32_t zlo, std::uint32_t zhi, std::uint32_t (&af)[4]) {
    af[0] = sub(lop3_and_or(w, 0x000f000fu, kMagic), zlo);
    af[1] = sub(lop3_and_or(w >> 4, 0x000f000fu, kMagic), zhi);
    af[2] = sub(lop3_and_or(w >> 8, 0x000f000fu, kMagic), zlo);
    af[3] = sub(lop3_and_or(w >> 12, 0x000f000fu, kMagic), zhi);
  }
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

// x in shared memory, both kernels: the m real tokens' rows as they are in memory (row-major,
// k contiguous), row stride x_row_bytes(tiles) = tiles x 128 + 16: 16 bytes past a multiple of 128,
// so the 8 rows of an ldmatrix lie in 8 different 16-byte bank groups. B fragments by ldmatrix_x4.
constexpr int x_row_bytes(int tiles) { return tiles * 128 + 16; }
// Bytes of an x region of `slots` slots of m rows of x_row_bytes(tiles), rounded up to 128 so that what
// follows it starts on a 128-byte boundary (m rows end off one unless m x 16 is a multiple of 128: 16-byte
// loads and cp.async into a ring that starts off one straddle 128-byte lines, measured 1.00-1.21x slower,
// docs/benchmarks/decode.md version 13).
__host__ __device__ constexpr unsigned align128(unsigned bytes) { return (bytes + 127u) / 128u * 128u; }
__host__ __device__ constexpr unsigned x_region_bytes(int slots, int m, int tiles) {
  return align128(static_cast<unsigned>(slots) * static_cast<unsigned>(m) * static_cast<unsigned>(x_row_bytes(tiles)));
}

// 16 bytes global -> shared without registers, zero-filled where src_bytes is 0 (x past K).
__device__ __forceinline__ void cp_async16_zfill(unsigned smem, const void* gmem, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem), "r"(src_bytes) : "memory");
}
// Four 8x8 b16 matrices; lane l gives the address of row l % 8 of matrix l / 8 and receives, of
// each matrix, row l / 4, columns 2 (l % 4), 2 (l % 4) + 1: with rows = tokens and columns = k,
// the B fragment (b0, b1) of mma.m16n8k16 for k 0..15 (matrices 0, 1) and 16..31 (2, 3).
__device__ __forceinline__ uint4 ldmatrix_x4(unsigned smem) {
  uint4 v;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(smem) : "memory");
  return v;
}

// x rows of k tiles [tile0, tile0 + tiles) of the m real tokens into shared memory at xs_sh (row
// stride xrow bytes) by 16-byte cp.async, zeros past K; no registers held while they fly. Needs
// 16-byte aligned rows without act-order perm (both kernels' plans check); the caller commits.
__device__ __forceinline__ void copy_x_rows(const Args& a, unsigned xs_sh, int xrow, int tile0, int tiles) {
  const int row_groups = tiles * 8;  // 16-byte groups of one token's rows
  for (int c = threadIdx.x; c < a.m * row_groups; c += kThreads) {
    const int token = c / row_groups, g = c % row_groups, kg = tile0 * 64 + g * 8;
    const std::uint16_t* src = a.x + token * a.x_stride + min(kg, a.k - 8);  // a valid address even when zero-filled
    cp_async16_zfill(xs_sh + static_cast<unsigned>(token * xrow + g * 16), src, kg < a.k ? 16u : 0u);
  }
}

// x rows of k tiles [tile0, tile0 + tiles) into shared memory (xs, row stride xrow bytes) through
// registers: the path for act-order (x[:, perm], gathered) and for rows that are not 16-byte aligned
// (2-byte loads); zeros past K. Aligned rows without perm are copied by cp.async instead (decode.cu).
__device__ __forceinline__ void stage_x_rows(const Args& a, unsigned char* xs, int xrow, int tile0, int tiles) {
  const int groups8 = tiles * 8;  // 8-element k groups of one token's row
  for (int c = threadIdx.x; c < a.m * groups8; c += kThreads) {
    const int token = c / groups8, kl = (c % groups8) * 8;
    const long long kg = static_cast<long long>(tile0) * 64 + kl;
    std::uint32_t v[4] = {0u, 0u, 0u, 0u};
    if (kg < a.k) {  // K % 8 == 0: a group of 8 is wholly inside or outside
      const std::uint16_t* row = a.x + token * a.x_stride;
      std::uint16_t e[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = a.perm ? __ldg(row + __ldg(a.perm + kg + i)) : __ldg(row + kg + i);
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = e[2 * i] | (static_cast<std::uint32_t>(e[2 * i + 1]) << 16);
    }
    *reinterpret_cast<uint4*>(xs + token * xrow + kl * 2) = make_uint4(v[0], v[1], v[2], v[3]);
  }
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// An opaque copy: ptxas otherwise re-derives per-lane addresses from the thread index inside the
// main loop (seen in the SASS: S2R + 6 integer ops per use), though registers are to spare.
__device__ __forceinline__ unsigned pin(unsigned v) {
  asm volatile("mov.b32 %0, %0;" : "+r"(v));
  return v;
}
template <class T>
__device__ __forceinline__ const T* pin(const T* p) {
  asm volatile("mov.b64 %0, %0;" : "+l"(p));
  return p;
}

__device__ __forceinline__ std::uint32_t lds32(unsigned smem) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(smem) : "memory");
  return v;
}
__device__ __forceinline__ uint2 lds64(unsigned smem) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(smem) : "memory");
  return v;
}
__device__ __forceinline__ uint4 lds128(unsigned smem) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(smem) : "memory");
  return v;
}

// The mma work of sub-tile pair h (k16 sub-tiles 2h, 2h + 1) of kP tiles: layout words 2h, 2h + 1
// of each tile dequantized with the zero constants of their group (zlo / zhi[partial][group of the pair]:
// Dt::zlo_of / zhi_of) and multiplied with the tokens' B fragments (b[p][mb]: .x .y sub-tile 2h,
// .z .w sub-tile 2h + 1) into the fp32 partials tmp[partial][mb]. kShare tiles share one partial (and
// one group: tile p is partial p / kShare): 1, or 2 where every group spans the two tiles of a pair (the uint4
// pair variants of the MoE ring and of the bulk and streaming decode kernels: g >= 128 or channelwise, steps of
// even tiles). The tiles run in the order that puts
// consecutive mma on different partials (kShare 2, kP 4: 0, 2, 1, 3).
// kSplit: words 2h and 2h + 1 of a tile accumulate into two chains (tmp[part] and tmp[kParts + part], summed by
// scale_group), so dependent mma are 2 kParts mma apart instead of kParts.
template <class D, bool kG32, int kShare = 1, bool kSplit = false, int kP, int MB, int kParts, int kChains>
__device__ __forceinline__ void mma_pair(int h, const uint4 (&wv)[kP], const std::uint32_t (&zlo)[kParts][kG32 ? 2 : 1],
                                         const std::uint32_t (&zhi)[kParts][kG32 ? 2 : 1], const uint4 (&b)[kP][MB], float (&tmp)[kChains][MB][4]) {
  static_assert(kParts * kShare == kP && (kShare == 1 || !kG32), "one partial per kShare tiles of one group");
  static_assert(kChains == kParts * (kSplit ? 2 : 1), "two accumulator chains per partial where split");
#pragma unroll
  for (int jj = 0; jj < 2; ++jj) {
#pragma unroll
    for (int i = 0; i < kP; ++i) {
      const int p = (i % kParts) * kShare + i / kParts, part = p / kShare;
      const int hg = kG32 ? h : 0;
      const int j = 2 * h + jj;
      const std::uint32_t w = j == 0 ? wv[p].x : j == 1 ? wv[p].y : j == 2 ? wv[p].z : wv[p].w;
      std::uint32_t af[4];
      D::dequant(w, zlo[part][hg], zhi[part][hg], af);
      const int chain = part + (kSplit && jj == 1 ? kParts : 0);
#pragma unroll
      for (int mb = 0; mb < MB; ++mb) {
        if (jj == 0) D::mma(tmp[chain][mb], af, b[p][mb].x, b[p][mb].y);
        else D::mma(tmp[chain][mb], af, b[p][mb].z, b[p][mb].w);
      }
    }
  }
}

// End of a group (after pair h; g = 32: every pair, else pair 1): the fp32 partials of tiles
// p < valid scaled per row into acc (sc[partial][group]: (row gid, row gid + 8)) and reset; tiles past
// `valid` are dropped whatever they hold (kShare 2: a partial is kept where its first tile is valid; the
// caller makes what its second tile adds zero).
// kSplit: partial p is tmp[p] + tmp[kParts + p] (mma_pair's two chains), both reset.
template <bool kG32, int kShare = 1, bool kSplit = false, int kParts, int MB, int kChains>
__device__ __forceinline__ void scale_group(int h, int valid, const float2 (&sc)[kParts][kG32 ? 2 : 1], float (&tmp)[kChains][MB][4], float (&acc)[MB][4]) {
  static_assert(kChains == kParts * (kSplit ? 2 : 1), "two accumulator chains per partial where split");
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
    if (p * kShare >= valid) continue;
    const float2 s2 = sc[p][kG32 ? h : 0];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      if constexpr (kSplit) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          tmp[p][mb][c] += tmp[p + kParts][mb][c];
          tmp[p + kParts][mb][c] = 0.f;
        }
      }
      acc[mb][0] = fmaf(tmp[p][mb][0], s2.x, acc[mb][0]);
      acc[mb][1] = fmaf(tmp[p][mb][1], s2.x, acc[mb][1]);
      acc[mb][2] = fmaf(tmp[p][mb][2], s2.y, acc[mb][2]);
      acc[mb][3] = fmaf(tmp[p][mb][3], s2.y, acc[mb][3]);
#pragma unroll
      for (int c = 0; c < 4; ++c) tmp[p][mb][c] = 0.f;
    }
  }
}

// The math of kP tiles whose weight words wv and group constants (zlo / zhi, sc) are in registers:
// per sub-tile pair h the tokens' B fragments by ldmatrix (lane row xl[mb] + xoff, tile p at
// + p * 128, pair h at + h * 64), dequantize + mma into per-tile fp32 partials (independent chains),
// scaled into acc at each group's end; tiles past `valid` are computed on whatever the reads find
// and dropped, never scaled into acc. Both streaming kernels (decode.cu, decode_bulk.cu) run it.
// kShare 2 (the bulk and streaming kernels' pair variants): tiles 2j, 2j + 1 share one group, one partial and the
// constants zlo / zhi / sc[j] (mma_pair); `valid` must then be even (a pair is wholly inside K).
// kSplit (the bulk kernel's uint4b8 pair variant): each partial in two accumulator chains (mma_pair / scale_group).
// tiles_math_at: the same with the B fragments' addresses from x_at(p, mb, h) (the bulk kernel's TMA-boxed x).
template <class D, bool kG32, int kShare = 1, bool kSplit = false, int kP, int MB, int kParts, class XAt>
__device__ __forceinline__ void tiles_math_at(const uint4 (&wv)[kP], const std::uint32_t (&zlo)[kParts][kG32 ? 2 : 1],
                                              const std::uint32_t (&zhi)[kParts][kG32 ? 2 : 1], const float2 (&sc)[kParts][kG32 ? 2 : 1],
                                              const XAt& x_at, int valid, float (&acc)[MB][4]) {
  constexpr int kChains = kParts * (kSplit ? 2 : 1);
  float tmp[kChains][MB][4];
#pragma unroll
  for (int p = 0; p < kChains; ++p)
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int c = 0; c < 4; ++c) tmp[p][mb][c] = 0.f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // sub-tile pair (2h, 2h + 1)
    uint4 b[kP][MB];
#pragma unroll
    for (int p = 0; p < kP; ++p)
#pragma unroll
      for (int mb = 0; mb < MB; ++mb) b[p][mb] = ldmatrix_x4(x_at(p, mb, h));
    mma_pair<D, kG32, kShare, kSplit>(h, wv, zlo, zhi, b, tmp);
    if (kG32 || h == 1) scale_group<kG32, kShare, kSplit>(h, valid, sc, tmp, acc);  // end of a group
  }
}
template <class D, bool kG32, int kShare = 1, bool kSplit = false, int kP, int MB, int kParts>
__device__ __forceinline__ void tiles_math(const uint4 (&wv)[kP], const std::uint32_t (&zlo)[kParts][kG32 ? 2 : 1],
                                           const std::uint32_t (&zhi)[kParts][kG32 ? 2 : 1], const float2 (&sc)[kParts][kG32 ? 2 : 1],
                                           const unsigned (&xl)[MB], unsigned xoff, int valid, float (&acc)[MB][4]) {
  tiles_math_at<D, kG32, kShare, kSplit>(wv, zlo, zhi, sc, [&](int p, int mb, int h) { return xl[mb] + xoff + p * 128 + h * 64; }, valid,
                                         acc);
}

// Writes 4 reduced partials (float4 i4 of a block's outputs, `row_block` its row block) into y:
// outputs are ordered (stripe of the block, mb, lane, c) as in a warp's accumulators acc[mb][c],
// c = (row gid | gid + 8) x (token 2 t | 2 t + 1). Rows past N and tokens past m are dropped;
// bias is added in fp32 and y rounded once.
template <class D, int MB>
__device__ __forceinline__ void store_outputs(const Args& a, float4 s, int i4, int row_block) {
  constexpr int per_stripe = MB * 128;  // floats of one warp's partial
  const float sv[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int i = i4 * 4 + c;
    const int sw = i / per_stripe, rest = i % per_stripe;
    const int mb = rest / 128, ln = (rest % 128) / 4;
    const int row = (row_block * a.warps_n + sw) * 16 + ln / 4 + 8 * (c / 2);
    const int token = mb * 8 + 2 * (ln % 4) + (c % 2);
    if (row < a.n && token < a.m) {
      float o = sv[c];
      if (a.bias) o += D::to_float(a.bias[row]);
      a.y[token * a.y_stride + row] = D::from_float(o);
    }
  }
}

// ---- Host: picking an instantiation ----
using KernelFn = void (*)(const Args);
// f with its dynamic shared memory limit raised to `limit` bytes, or to the device's opt-in maximum where that is less
// (an A100's 163 KB: its plans stay within it, decode_device_for); each kernel's K<...>::fn() calls it once per
// instantiation (a function-local static).
template <class Fn>
Fn smem_opt_in(Fn f, std::size_t limit) {
  int device = 0, optin = 0;
  W4A16_CUDA_TRY(cudaGetDevice(&device));
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const std::size_t bytes = std::min(limit, static_cast<std::size_t>(optin));
  W4A16_CUDA_TRY(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return f;
}
// The instantiation K<bf16, MB, zeros, g32>::fn() of a kernel family by the runtime flags
// (MB = 1 for <= 8 tokens, 2 for 9..16): the 16 variants every decode kernel is built in.
template <template <bool, int, bool, bool> class K, bool kBf16, int MB>
auto pick_zeros_g32(bool zeros, bool g32) {
  if (zeros) return g32 ? K<kBf16, MB, true, true>::fn() : K<kBf16, MB, true, false>::fn();
  return g32 ? K<kBf16, MB, false, true>::fn() : K<kBf16, MB, false, false>::fn();
}
template <template <bool, int, bool, bool> class K>
auto pick_variant(bool bf16, int mb, bool zeros, bool g32) {
  if (bf16) return mb == 1 ? pick_zeros_g32<K, true, 1>(zeros, g32) : pick_zeros_g32<K, true, 2>(zeros, g32);
  return mb == 1 ? pick_zeros_g32<K, false, 1>(zeros, g32) : pick_zeros_g32<K, false, 2>(zeros, g32);
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
// ---- The small-layer kernel (decode_small.cu) ----
// Tile buckets T of the small kernel: a warp holds at most T tiles of weights in registers
// (4 words per lane per tile). T = 16 is there for K up to 8 x 16 tiles (qwen0.5b.down, K = 4864:
// 76 tiles over 8 warps = 10 per warp); smaller T leave registers for more resident blocks.
constexpr int kSmallTiles[] = {2, 4, 8, 16};
// Blocks per SM the small kernel's register cap is sized for (__launch_bounds__ minBlocks):
// 65536 / (256 x b) registers per thread: T = 2 -> 51, 4 -> 85, 8 -> 128, 16 -> 255. The plan
// counts on this many resident blocks (fewer where shared memory is the bound) to fit one wave.
constexpr int small_min_blocks(int tiles) { return tiles <= 2 ? 5 : tiles <= 4 ? 3 : tiles <= 8 ? 2 : 1; }


// ---- The streaming kernel (decode.cu) ----
// Its ring depth per token count (2 slots of 8 tiles at 1..8 tokens, 3 of 4 at 9..16) and shared memory
// per block of a plan (x staged or streamed + the weight rings + the partials), for decode_plan.cu.
int streaming_ring_depth(int m);
std::size_t streaming_smem(int block_tiles, int warps_k, int m, bool zeros, bool g32, bool xstream);
// Launches it on a (splits, grid_rows) grid, clusters of `splits` blocks along K, with `smem` bytes.
// pairs: the tile-pair variant (decode_tile_pairs, decode.hpp: fp16 uint4, uint4b8 at <= 8 tokens; even tile ranges).
void launch_decode_streaming(const Args& a, int splits, int grid_rows, std::size_t smem, bool bf16, bool zeros, bool g32, bool pairs, bool pdl,
                             cudaStream_t stream);
// W4A16_DECODE_XSTREAM (decode_plan.cu): -1 unset, 0 never stream x, 1 stream wherever a plan can.
int xstream_override();

// Launches the small kernel of bucket `tiles` (one of kSmallTiles) on a grid of a.row_blocks
// blocks with `smem` bytes of dynamic shared memory (decode_run sets a from the plan).
void launch_decode_small(const Args& a, int tiles, std::size_t smem, bool bf16, bool zeros, bool g32, bool pdl, cudaStream_t stream);

// ---- The bulk kernel (decode_bulk.cu) ----
constexpr int kBulkThreads = kThreads + 32;  // 8 consumer warps + 1 producer warp
constexpr int kBulkTiles = 4;                // tiles per consumer warp per stage (one group of 4 mma chains)
constexpr int kBulkMaxStages = 16;           // mbarrier pairs reserved in shared memory
constexpr std::size_t kBulkMaxSmem = 227 * 1024;  // the sm_90 opt-in limit per block
// Blocks per SM the register cap is sized for: 2 at 1..8 tokens (9 warps twice leave <= 96 registers;
// ptxas: 80-91, no spills); 1 at 9..16 (130-163 registers; the uint4 g = 32 variants spill 24-32 bytes).
template <int MB>
constexpr int kBulkMinBlocks = MB == 1 ? 2 : 1;
// One ring stage: the weights of 8 warps x kBulkTiles tiles (stripe-major: stripe ws's run of
// 4 warps_k tiles is contiguous, as in the layout), then per (tile, group) row the 8 scale words of
// the stripe (32 bytes), then per row its 8 zero bytes (uint4).
template <bool kZeros, bool kG32>
struct BulkStage {
  static constexpr int kGs = kG32 ? 2 : 1;
  static constexpr int kRows = kWarps * kBulkTiles * kGs;
  static constexpr int kScaleOffset = kWarps * kBulkTiles * 512;
  static constexpr int kZeroOffset = kScaleOffset + kRows * 32;
  static constexpr int kBytes = kZeroOffset + (kZeros ? kRows * 8 : 0);
  static_assert(kBytes % 128 == 0, "stages stay 128-byte aligned");
};
// Staged x of the bulk kernel (m tokens x all K_pad/64 tiles), rounded to 128 bytes; then the ring,
// the double-buffered partials (2 x 8 warps x MB x 512 bytes) and 2 x kBulkMaxStages mbarriers.
__host__ __device__ constexpr unsigned bulk_x_bytes(int m, int kt) { return x_region_bytes(1, m, kt); }
inline std::size_t bulk_stage_bytes(bool zeros, bool g32) {
  return zeros ? (g32 ? BulkStage<true, true>::kBytes : BulkStage<true, false>::kBytes)
               : (g32 ? BulkStage<false, true>::kBytes : BulkStage<false, false>::kBytes);
}
// x streamed (span > 0): one x slot per weight stage (bulk_x_slot_bytes, decode.hpp) instead of x of all of K.
inline std::size_t bulk_smem(int m, int kt, bool zeros, bool g32, int stages, int xstream_span = 0) {
  const int mb = m <= 8 ? 1 : 2;
  const std::size_t x = xstream_span > 0 ? static_cast<std::size_t>(stages) * bulk_x_slot_bytes(m, xstream_span)  // 1024-aligned base
                                         : bulk_x_bytes(m, kt);
  return x + static_cast<std::size_t>(stages) * bulk_stage_bytes(zeros, g32) + static_cast<std::size_t>(2 * kWarps * mb * 512) +
         16 * kBulkMaxStages;
}
// Launches the bulk kernel on `grid` blocks (persistent over a.row_blocks items) with `smem` bytes.
// pairs: the tile-pair variant (decode_tile_pairs, decode.hpp: uint4 and uint4b8).
void launch_decode_bulk(const Args& a, int grid, std::size_t smem, bool bf16, bool zeros, bool g32, bool pairs, bool pdl, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda::decode_detail
