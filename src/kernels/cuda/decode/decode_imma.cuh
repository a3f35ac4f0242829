// The bulk kernel's integer math (decode_bulk.cu, kImma): the layout's nibbles as the u8 A fragment of
// mma.m16n8k32 and x as int16 split into bytes, exact int32 sums per 128 k, one conversion per (row, token) and
// tile pair. Internal to src/kernels/cuda/decode (docs/benchmarks/decode.md "integer mma").
//
// Weights (cuda.tc16x64.v1 unchanged): lane (g, t)'s word j of a tile holds, by nibble, (row g, k 2t), (row g + 8, 2t),
// (g, 2t + 8), (g + 8, 2t + 8), (g, 2t + 1), (g + 8, 2t + 1), (g, 2t + 9), (g + 8, 2t + 9) of k16 sub-tile j (the fp16
// A fragment of mma.m16n8k16, docs/LAYOUT.md). So w & 0x0F0F0F0F is row g's 4 values and (w >> 4) & 0x0F0F0F0F row
// g + 8's, at k {2t, 2t + 8, 2t + 1, 2t + 9}: with sub-tiles 2h and 2h + 1 as the two k16 halves of one k32 chunk h,
// they are the registers a0 = row g, a1 = row g + 8 (k slots 4t..4t + 3) and a2, a3 (slots 16 + 4t..) of the IMMA A
// fragment (PTX ISA: a0 / a2 = row g, a1 / a3 = row g + 8; b0 / b1 = k slots 4t.. / 16 + 4t.. of column g; the C
// fragment is mma.m16n8k16's). Slot 4t + i of a chunk is therefore k = 2t + {0, 8, 1, 9}[i] of its sub-tile: the x
// bytes follow that order (3 instructions per word of 8 weights instead of the 9 of Dt<false>::dequant).
//
// x: per token and block of 128 k (a tile pair), v = round(x 2^(14 - E)) with E the exponent of the block's largest
// |x| (|v| < 2^15, exact for values within 2^4 (fp16) / 2^7 (bf16) of the largest: the error is below half a unit of
// 2^(E - 14), <= 2^-15 of the block's largest |x|), split v = 256 hi + lo (hi s8, lo u8). Per (token, block):
// xs = 2^(E - 14) and sv = sum of v. A non-finite x makes xs NaN: that token's outputs are NaN.
// Per tile pair (one group: g >= 128 or channelwise), row r and token c: d = 256 hi + lo - z_r sv_c (int32: |d| < 2^27),
// y += s_r (xs_c d). The stage holds (and the producer copies) one scale / zero row per pair, as the kPair variants.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "decode/decode_device.cuh"

namespace w4a16::kernels::cuda::decode_detail {

// x in shared memory (kImma): per token a row of imma_x_row_bytes(kt): per k32 chunk (2 per tile) 64 bytes, per t of
// the chunk 16 bytes {hi of sub-tile 2h, hi of 2h + 1, lo of 2h, lo of 2h + 1} (a lane's b registers: one 16-byte load
// per chunk, the pairs (b0, b1) of each mma in consecutive registers); the row stride is 64 bytes past a multiple of 128,
// so the 8 tokens of a load are in distinct bank groups.
// After the m rows (rounded to 128 bytes): per block of 128 k (tile pair) 64 bytes, per t {xs[2t], xs[2t + 1], sv[2t],
// sv[2t + 1]} (sv as int32 bits). Sizes: imma_x_row_bytes, imma_x_rows_bytes, bulk_imma_x_bytes (decode_device.cuh).

__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Where imma_x_block writes: a token's row and its constants entry of the block, in shared memory (the bulk kernel's
// own staging) or in global memory (decode_imma_prep_kernel: the same bytes, copied flat by the bulk kernel).
struct SharedSink {
  unsigned row, cst;  // shared addresses
  __device__ void word(unsigned off, std::uint32_t v) const { asm volatile("st.shared.u32 [%0], %1;" ::"r"(row + off), "r"(v) : "memory"); }
  __device__ void cword(unsigned off, std::uint32_t v) const { asm volatile("st.shared.u32 [%0], %1;" ::"r"(cst + off), "r"(v) : "memory"); }
};
struct GlobalSink {
  unsigned char *row, *cst;
  __device__ void word(unsigned off, std::uint32_t v) const { *reinterpret_cast<std::uint32_t*>(row + off) = v; }
  __device__ void cword(unsigned off, std::uint32_t v) const { *reinterpret_cast<std::uint32_t*>(cst + off) = v; }
};

// One token's block of 128 x values (8 lanes x 16, lane q = lane % 8 of its group of 8: k 16q..16q + 15 of the block,
// one whole k16 sub-tile) as int16 in the B-fragment order above: `e` holds the 16 values' 16-bit bits (dtype kBf16),
// `sink` the token's row and the block's constants entry of this token, `block` the block's index. All 8 lanes of the
// group take part (shuffles within it); store false: the shuffles only (a group past the last unit, beside one that has
// one).
template <bool kBf16, class Sink>
__device__ __forceinline__ void imma_x_block(const std::uint32_t (&e)[8], const Sink& sink, int block, bool store) {
  const int q = threadIdx.x % 8;
  // The largest |x| by its bits (16-bit magnitudes compare as integers; NaN / infinity above every finite value).
  std::uint32_t mb = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) mb = __vmaxu2(mb, e[i] & 0x7FFF7FFFu);
  mb = max(mb & 0xFFFFu, mb >> 16);
#pragma unroll
  for (int o = 4; o >= 1; o /= 2) mb = max(mb, __shfl_xor_sync(0xFFFFFFFFu, mb, o));
  const bool finite = mb < (kBf16 ? 0x7F80u : 0x7C00u);
  float f[16];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    if constexpr (kBf16) {
      f[2 * i] = __uint_as_float(e[i] << 16);
      f[2 * i + 1] = __uint_as_float(e[i] & 0xFFFF0000u);
    } else {
      const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&e[i]));
      f[2 * i] = v.x;
      f[2 * i + 1] = v.y;
    }
  }
  float mx = kBf16 ? __uint_as_float(mb << 16) : __half2float(__ushort_as_half(static_cast<unsigned short>(mb)));
  // bf16 below 2^-100 (zero included): scaled up first, so that 2^(14 - E) stays a float.
  float pre = 1.f;
  if (kBf16 && finite && mx < 0x1p-100f) {
    pre = 0x1p100f;
    mx *= pre;
#pragma unroll
    for (int i = 0; i < 16; ++i) f[i] *= pre;
  }
  const int E = max((static_cast<int>(__float_as_uint(mx) >> 23) & 0xFF) - 127, -100);
  const float c = __uint_as_float(static_cast<std::uint32_t>(127 + 14 - E) << 23);  // 2^(14 - E)
  // v = round(f c) in the low 16 bits of fma(f, c, 1.5 * 2^23) (|v| < 2^15 << 2^22); the sum of v from the bits.
  std::uint32_t b[16], sum = 0u - 16u * 0x4B400000u;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    b[i] = __float_as_uint(fmaf(f[i], c, 12582912.f));
    sum += b[i];
  }
#pragma unroll
  for (int o = 4; o >= 1; o /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
  // Word t of the sub-tile's b register: slots 4t..4t + 3 = k {2t, 2t + 8, 2t + 1, 2t + 9}, hi bytes and lo bytes apart.
  const int chunk = 2 * (2 * block + q / 4) + (q % 4) / 2, half = q % 2;
  const unsigned at = static_cast<unsigned>(chunk * 64 + half * 4);
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const std::uint32_t pl = prmt(b[2 * t], b[2 * t + 1], 0x5410u), ph = prmt(b[2 * t + 8], b[2 * t + 9], 0x5410u);
    const std::uint32_t hi = prmt(pl, ph, 0x7351u), lo = prmt(pl, ph, 0x6240u);
    if (store) {
      sink.word(at + t * 16u, hi);
      sink.word(at + t * 16u + 8u, lo);
    }
  }
  if (store && q == 0) {
    const float xs = finite ? __uint_as_float(static_cast<std::uint32_t>(127 - 14 + E) << 23) / pre : __uint_as_float(0x7FC00000u);
    sink.cword(0u, __float_as_uint(xs));
    sink.cword(8u, sum);
  }
}

// Lane q (of 8) of unit (token, block): x[token, block x 128 + 16q .. + 15] as 16-bit pairs into e, zeros past K
// (K % 8 == 0: a group of 8 is wholly inside or outside) and where !real; 16-byte loads where x rows are 16-byte
// aligned without perm, else 2-byte loads (gathered through perm for act-order).
__device__ __forceinline__ void imma_load_x(const Args& a, int token, int block, bool real, std::uint32_t (&e)[8]) {
  const long long k0 = static_cast<long long>(block) * 128 + (threadIdx.x % 8) * 16;
  const std::uint16_t* src = a.x + token * a.x_stride;
  const bool vec = a.xvec && !a.perm;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long kh = k0 + 8 * h;
    if (!real || kh >= a.k) {
#pragma unroll
      for (int i = 0; i < 4; ++i) e[4 * h + i] = 0u;
    } else if (vec) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(src + kh));
      e[4 * h] = v.x, e[4 * h + 1] = v.y, e[4 * h + 2] = v.z, e[4 * h + 3] = v.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::uint32_t lo = a.perm ? __ldg(src + __ldg(a.perm + kh + 2 * i)) : __ldg(src + kh + 2 * i);
        const std::uint32_t hi = a.perm ? __ldg(src + __ldg(a.perm + kh + 2 * i + 1)) : __ldg(src + kh + 2 * i + 1);
        e[4 * h + i] = lo | (hi << 16);
      }
    }
  }
}
// The byte offsets of unit (token, block)'s row and constants entry in the kImma x region of m tokens and kt tiles.
__device__ __forceinline__ unsigned imma_row_offset(int token, int kt) { return static_cast<unsigned>(token * imma_x_row_bytes(kt)); }
__device__ __forceinline__ unsigned imma_const_offset(int token, int block, int m, int kt) {
  return imma_x_rows_bytes(m, kt) + static_cast<unsigned>(block * 64 + (token / 2) * 16 + (token % 2) * 4);
}

// x of the m real tokens, all K (kt tiles, kt even), into the kImma layout at xs_sh, by the block's 8 consumer warps:
// one (token, block) per group of 8 lanes and pass.
template <bool kBf16>
__device__ __forceinline__ void stage_x_imma(const Args& a, unsigned xs_sh) {
  const int blocks = a.kt_count / 2, units = a.m * blocks;
  // Every lane of a warp runs the same number of passes (the shuffles want all four groups): a group past the last unit
  // converts zeros into nowhere (its stores skipped).
  const int grp = threadIdx.x / 8, grps = kThreads / 8;
  int token = grp / blocks, block = grp % blocks;  // of unit u0 + grp, stepped by grps without a division per pass
  const int dt = grps / blocks, db = grps % blocks;
  for (int u0 = 0; u0 < units; u0 += grps) {
    const bool real = u0 + grp < units;
    const int tk = real ? token : 0, bk = real ? block : 0;  // a group past the last unit: in-bounds addresses, no stores
    std::uint32_t e[8];
    imma_load_x(a, tk, bk, real, e);
    const SharedSink sink{xs_sh + imma_row_offset(tk, a.kt_count), xs_sh + imma_const_offset(tk, bk, a.m, a.kt_count)};
    imma_x_block<kBf16>(e, sink, bk, real);
    token += dt, block += db;
    if (block >= blocks) block -= blocks, ++token;
  }
}

__device__ __forceinline__ void imma_u8s8(int (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void imma_u8u8(int (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The kImma math of kP tiles (kP / 2 pairs, each one group) whose words wv are in registers: per pair j its scales
// sc[j] (rows g, g + 8) and integer zero points z0[j] / z1[j] (rows g / g + 8); x chunks by one 16-byte load per chunk
// from this lane's row at xrd (tile kt + p at + (kt + p) x 128, chunk h at + h x 64), the constants of pair j from
// xcd + (kt / 2 + j) x 64. Pairs past `valid` (even) are dropped whatever their sums hold. Two int32 chains per pair
// (hi, lo): 2 kP independent mma chains per stage.
template <int kP>
__device__ __forceinline__ void imma_tiles_math(const uint4 (&wv)[kP], const float2 (&sc)[kP / 2], const int (&z0)[kP / 2], const int (&z1)[kP / 2],
                                                unsigned xrd, unsigned xcd, int kt, int valid, float (&acc)[4]) {
  constexpr int kPairs = kP / 2;
  int hi[kPairs][4], lo[kPairs][4];
#pragma unroll
  for (int j = 0; j < kPairs; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) hi[j][c] = lo[j][c] = 0;
#pragma unroll
  for (int tp = 0; tp < 2; ++tp)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < kPairs; ++j) {
        const int p = 2 * j + tp;
        const uint4 xb = lds128(xrd + static_cast<unsigned>(((kt + p) * 2 + h) * 64));  // {hi b0, hi b1, lo b0, lo b1}
        const std::uint32_t w0 = h == 0 ? wv[p].x : wv[p].z, w1 = h == 0 ? wv[p].y : wv[p].w;
        const std::uint32_t af[4] = {w0 & 0x0F0F0F0Fu, (w0 >> 4) & 0x0F0F0F0Fu, w1 & 0x0F0F0F0Fu, (w1 >> 4) & 0x0F0F0F0Fu};
        imma_u8s8(hi[j], af, xb.x, xb.y);
        imma_u8u8(lo[j], af, xb.z, xb.w);
      }
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    if (2 * j >= valid) continue;
    const uint4 xc = lds128(xcd + static_cast<unsigned>((kt / 2 + j) * 64));  // {xs[2t], xs[2t + 1], sv[2t], sv[2t + 1]}
    const float xs[2] = {__uint_as_float(xc.x), __uint_as_float(xc.y)};
    const int sv[2] = {static_cast<int>(xc.z), static_cast<int>(xc.w)};
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int z = c < 2 ? z0[j] : z1[j];
      const int d = hi[j][c] * 256 + lo[j][c] - z * sv[c % 2];
      acc[c] = fmaf(c < 2 ? sc[j].x : sc[j].y, xs[c % 2] * static_cast<float>(d), acc[c]);
    }
  }
}

}  // namespace w4a16::kernels::cuda::decode_detail
