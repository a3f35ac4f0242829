// AVX2 + FMA + F16C kernels of fast_gemm (layout cpu.fast.v1, fast.hpp). This translation unit
// alone is compiled with -mavx2 -mfma -mf16c; fast.cpp calls it only after
// __builtin_cpu_supports("avx2"/"fma"/"f16c"), so the library still runs on older CPUs.
//
// Shapes: x p.xf [M][K] fp32 (gathered, prescaled for decode), W [Nb][K/8][8] u32 nibble words,
// scales [Nb][G][8] f16|bf16 bits, zeros [Nb][G] packed u32, out [M][N] act dtype, strided rows.
// Every K % 8 == 0, every group size (32..256, channelwise), both scalar types, bias, act-order.
//
// decode (M < kPrefillMinM): register tile of MT rows of x (1..4) x NV blocks of 8 rows of W.
//   One 32-byte load of a block holds 8 rows x 8 k. Lane extraction for nibble i < 7 is
//   v & (15 << 4i), converted to fp32 exactly (= q * 2^4i, at most 28 bits but only 4
//   significant), and multiplied by x[k] * 2^-4i, which fast.cpp prescaled (exact: a power of
//   two). That is 3 vector ops per 8 weights (and, cvt, fma) instead of 4 (shift, and, cvt,
//   fma); nibble 7 uses v >> 28 because masking it would set the sign bit. (The prescaled x
//   only loses bits for |x| < 2^-102, below anything fp16 holds and negligible in bf16.) Zero points are
//   folded out per group: sum_k (q - z) s x = s * (sum_k q x - z * sum_k x).
//   Panels: 4 blocks (32 rows) for M = 1, else 2 blocks (16 rows x K/2 bytes = 64 KiB at
//   K = 8192), which stay in L2 while the up-to-4 row tiles of M <= 16 pass over them, so
//   the weights come from memory once per call.
// prefill (M >= kPrefillMinM): a 16-row panel of W is dequantized to fp32 ((q - z) * s, exact)
//   256 k at a time into a 16 KB L1 buffer and reused by all rows of a 96-row block of x with a
//   6 x 16 register tile (12 accumulators, 2 loads + 6 broadcasts per 12 FMAs).
// Every register-tile loop carries _Pragma("GCC unroll 8"): without it GCC 12 unrolled them too
// late to keep the accumulator arrays in registers and stored every accumulator after every FMA
// (prefill ran at 60% of its speed).
// Check: w4a16_test_kernels_cpu (CpuFast*), bench: w4a16_bench_cpu.
#include "fast_impl.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>
#include <utility>

namespace w4a16::kernels::cpu::impl {

XPrep avx2_xprep(std::int64_t m) { return m >= kPrefillMinM ? XPrep{false, false} : XPrep{true, true}; }

namespace {

using i64 = std::int64_t;

// 8 scales of (block, group), raw 16-bit bits, to fp32; p is 16-byte aligned ([Nb][G][8] u16).
inline __m256 load_scales(const std::uint16_t* p, bool bf16) {
  const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(p));
  if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

// Nibble l of the packed zero word -> lane l, as fp32.
inline __m256 unpack_zeros(std::uint32_t word) {
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts),
                                             _mm256_set1_epi32(15)));
}

// Nibble I of each lane: q * 2^4I for I < 7 (x is prescaled by 2^-4I), q for I = 7.
template <int I>
inline __m256 nibble_prescaled(__m256i v) {
  if constexpr (I == 7)
    return _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 28));
  else
    return _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(15 << (4 * I))));
}

// Nibble I of each lane as q (prefill dequantization: no prescaling there).
template <int I>
inline __m256 nibble(__m256i v) {
  return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v, 4 * I), _mm256_set1_epi32(15)));
}

// fp32 -> bf16 bits, round to nearest even, NaN kept quiet (as float_to_bf16 in core/half.hpp).
inline __m128i to_bf16(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  r = _mm256_blendv_epi8(r, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));  // values < 2^16: exact
}

// out[m, n0 .. n0 + 8) = v + bias, clipped to N.
inline void store8(const Problem& p, i64 m, i64 n0, __m256 v) {
  if (n0 + 8 > p.n) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    store_row(p, m, n0, t, p.n - n0);
    return;
  }
  if (p.w->has_bias()) v = _mm256_add_ps(v, _mm256_load_ps(p.w->bias.data() + n0));
  auto* dst = reinterpret_cast<__m128i*>(static_cast<std::uint16_t*>(p.out) + m * p.out_stride + n0);
  const __m128i h = p.out_dtype == DType::bf16 ? to_bf16(v) : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_storeu_si128(dst, h);
}

// ---- decode --------------------------------------------------------------------------------
// MT: rows of x in the register tile (1..4); NV: blocks of 8 rows of W (1..4);
// S: accumulator sets per (row, block), alternating over the 8 nibbles, so that MT * NV * S
//    independent FMA chains hide the 4-5 cycle FMA latency (MT = 1 needs S = 2).
// Each block's words are asked for this far ahead of their use: the hardware prefetcher alone left M = 1 at 0.99-1.21x
// (median 1.06x) the time on the 10 PERF.md shapes (2026-12-05, 2 threads of an Intel Xeon; docs/benchmarks/cpu.md).
constexpr i64 kDecodePrefetchBytes = 4096;

template <int MT, int NV, int S>
void decode_tile(const Problem& p, i64 m0, i64 b0) {
  const FastWeights& w = *p.w;
  const i64 K = p.k, G = p.groups, words = K / 8, wpg = p.group_len / 8;  // words per group
  const bool bf16 = w.scale_dtype == DType::bf16, zp = !w.zeros.empty();
  const std::uint32_t* qb[NV];  // (K/8, 8) words of block b0 + v
  _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) qb[v] = w.qweight.data() + (b0 + v) * words * kBlockRows;
  const float* xr[MT];  // (K) prescaled x rows
  _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) xr[i] = p.xf + (m0 + i) * K;

  __m256 y[MT][NV];
  _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i)
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) y[i][v] = _mm256_setzero_ps();

  for (i64 g = 0; g < G; ++g) {
    __m256 acc[S][MT][NV];
    _Pragma("GCC unroll 8") for (int s = 0; s < S; ++s)
      _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i)
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) acc[s][i][v] = _mm256_setzero_ps();
    for (i64 j = g * wpg; j < (g + 1) * wpg; ++j) {
      __m256i wv[NV];
      if ((j & 1) == 0)  // one 64-byte line of each block per two words
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v)
          _mm_prefetch(reinterpret_cast<const char*>(qb[v] + j * kBlockRows) + kDecodePrefetchBytes, _MM_HINT_T0);
      _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) wv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb[v] + j * kBlockRows));
      auto step = [&]<int I>(std::integral_constant<int, I>) {
        __m256 u[NV];
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) u[v] = nibble_prescaled<I>(wv[v]);
        _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) {
          const __m256 xb = _mm256_broadcast_ss(xr[i] + 8 * j + I);
          _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) acc[I % S][i][v] = _mm256_fmadd_ps(u[v], xb, acc[I % S][i][v]);
        }
      };
      [&]<int... I>(std::integer_sequence<int, I...>) {
        (step(std::integral_constant<int, I>{}), ...);
      }(std::make_integer_sequence<int, 8>{});
    }
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) {
      const __m256 sc = load_scales(w.scales.data() + ((b0 + v) * G + g) * kBlockRows, bf16);
      const __m256 z = zp ? unpack_zeros(w.zeros[static_cast<std::size_t>((b0 + v) * G + g)]) : _mm256_set1_ps(8.f);
      _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) {
        __m256 a = acc[0][i][v];
        _Pragma("GCC unroll 8") for (int s = 1; s < S; ++s) a = _mm256_add_ps(a, acc[s][i][v]);
        const __m256 t = _mm256_fnmadd_ps(z, _mm256_broadcast_ss(p.xsum + (m0 + i) * G + g), a);  // acc - z * sum x
        y[i][v] = _mm256_fmadd_ps(sc, t, y[i][v]);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i)
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) store8(p, m0 + i, (b0 + v) * kBlockRows, y[i][v]);
}

using DecodeFn = void (*)(const Problem&, i64, i64);
template <int MT, int NV>
constexpr DecodeFn decode_fn() {
  return &decode_tile<MT, NV, (MT == 1 ? 2 : 1)>;
}
// [MT - 1][NV - 1]; M == 1 uses 4-block panels, M > 1 2-block panels (NV <= 2 beyond MT = 1).
constexpr DecodeFn kDecode[4][4] = {
    {decode_fn<1, 1>(), decode_fn<1, 2>(), decode_fn<1, 3>(), decode_fn<1, 4>()},
    {decode_fn<2, 1>(), decode_fn<2, 2>(), nullptr, nullptr},
    {decode_fn<3, 1>(), decode_fn<3, 2>(), nullptr, nullptr},
    {decode_fn<4, 1>(), decode_fn<4, 2>(), nullptr, nullptr},
};

void run_decode(const Problem& p) {
  const i64 blocks = p.w->blocks;
  const i64 panel = p.m == 1 ? 4 : 2;  // blocks per task; 4 gives M = 1 its 8 FMA chains
  const i64 panels = (blocks + panel - 1) / panel;
  // Dynamic chunks: the 2 cores are shared, and a static split waits for the slower one.
  const i64 chunk = std::max<i64>(1, panels / (static_cast<i64>(p.threads) * 16));
#pragma omp parallel for schedule(dynamic, chunk) num_threads(p.threads)
  for (i64 t = 0; t < panels; ++t) {
    const i64 b0 = t * panel, nv = std::min(panel, blocks - b0);
    for (i64 m0 = 0; m0 < p.m; m0 += 4) {
      const i64 mt = std::min<i64>(4, p.m - m0);
      kDecode[mt - 1][nv - 1](p, m0, b0);
    }
  }
}

// ---- prefill -------------------------------------------------------------------------------
constexpr i64 kPanelBlocks = 2;  // blocks of W per panel: 16 rows = 2 vectors of the register tile
constexpr i64 kPanelRows = kPanelBlocks * kBlockRows;
constexpr i64 kKc = 256;  // k per dequantized chunk: 256 x 16 x 4 B = 16 KB, half of a 32 KB L1d
constexpr i64 kMc = 96;   // rows of x per task (16 register tiles); its 256-k slice is 96 KB (L2)
constexpr int kTileM = 6;  // rows of x per register tile: 12 accumulators + 2 weights + 1 broadcast

// wp (kc, 16) fp32 <- (q - z) * s for rows of blocks b0, b0 + 1, k in [k0, k0 + kc).
void dequant_panel(const Problem& p, i64 b0, i64 k0, i64 kc, float* wp) {
  const FastWeights& w = *p.w;
  const i64 G = p.groups, words = p.k / 8;
  const bool bf16 = w.scale_dtype == DType::bf16, zp = !w.zeros.empty();
  for (i64 v = 0; v < kPanelBlocks; ++v) {
    const i64 b = b0 + v;
    if (b >= w.blocks) {  // odd block count: the missing half of the last panel is zero
      for (i64 kk = 0; kk < kc; ++kk) _mm256_store_ps(wp + kk * kPanelRows + v * 8, _mm256_setzero_ps());
      continue;
    }
    const std::uint32_t* qb = w.qweight.data() + b * words * kBlockRows;
    i64 g_loaded = -1;
    __m256 sc = _mm256_setzero_ps(), zs = _mm256_setzero_ps();
    for (i64 j = k0 / 8; j < (k0 + kc) / 8; ++j) {
      const i64 g = (8 * j) / p.group_len;
      if (g != g_loaded) {
        sc = load_scales(w.scales.data() + (b * G + g) * kBlockRows, bf16);
        const __m256 z = zp ? unpack_zeros(w.zeros[static_cast<std::size_t>(b * G + g)]) : _mm256_set1_ps(8.f);
        zs = _mm256_mul_ps(z, sc);  // exact: 4-bit z times an 11-bit (or 8-bit) significand
        g_loaded = g;
      }
      const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb + j * kBlockRows));
      float* dst = wp + (8 * j - k0) * kPanelRows + v * 8;
      [&]<int... I>(std::integer_sequence<int, I...>) {
        (_mm256_store_ps(dst + I * kPanelRows, _mm256_fmsub_ps(nibble<I>(wv), sc, zs)), ...);  // q*s - z*s, exact
      }(std::make_integer_sequence<int, 8>{});
    }
  }
}

// c (MT, 16) += x (MT rows, stride xs, kc) . wp (kc, 16)
template <int MT>
void prefill_tile(const float* x, i64 xs, const float* wp, i64 kc, float* c) {
  __m256 acc[MT][2];
  _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) {
    acc[i][0] = _mm256_load_ps(c + i * kPanelRows);
    acc[i][1] = _mm256_load_ps(c + i * kPanelRows + 8);
  }
  for (i64 kk = 0; kk < kc; ++kk) {
    const __m256 w0 = _mm256_load_ps(wp + kk * kPanelRows), w1 = _mm256_load_ps(wp + kk * kPanelRows + 8);
    _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) {
      const __m256 xb = _mm256_broadcast_ss(x + i * xs + kk);
      acc[i][0] = _mm256_fmadd_ps(xb, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(xb, w1, acc[i][1]);
    }
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < MT; ++i) {
    _mm256_store_ps(c + i * kPanelRows, acc[i][0]);
    _mm256_store_ps(c + i * kPanelRows + 8, acc[i][1]);
  }
}

using PrefillFn = void (*)(const float*, i64, const float*, i64, float*);
constexpr PrefillFn kPrefill[kTileM] = {&prefill_tile<1>, &prefill_tile<2>, &prefill_tile<3>,
                                        &prefill_tile<4>, &prefill_tile<5>, &prefill_tile<6>};

struct PrefillScratch {
  AlignedVector<float> wp = AlignedVector<float>(static_cast<std::size_t>(kKc * kPanelRows));
  AlignedVector<float> c = AlignedVector<float>(static_cast<std::size_t>(kMc * kPanelRows));
};

void run_prefill(const Problem& p) {
  const i64 panels = (p.w->blocks + kPanelBlocks - 1) / kPanelBlocks;
  const i64 mblocks = (p.m + kMc - 1) / kMc;
  const i64 tasks = panels * mblocks;
  // Tasks are m-block major and handed out one at a time, so the threads work on the same
  // 96-row block of x (shared in L3) while walking the panels of W.
#pragma omp parallel for schedule(dynamic, 1) num_threads(p.threads)
  for (i64 t = 0; t < tasks; ++t) {
    static thread_local PrefillScratch sc;  // OpenMP pool threads persist: allocated once per thread
    const i64 m0 = (t / panels) * kMc, rows = std::min(kMc, p.m - m0), b0 = (t % panels) * kPanelBlocks;
    std::fill(sc.c.begin(), sc.c.begin() + rows * kPanelRows, 0.f);
    for (i64 k0 = 0; k0 < p.k; k0 += kKc) {
      const i64 kc = std::min(kKc, p.k - k0);
      dequant_panel(p, b0, k0, kc, sc.wp.data());
      for (i64 r0 = 0; r0 < rows; r0 += kTileM) {
        const i64 mt = std::min<i64>(kTileM, rows - r0);
        kPrefill[mt - 1](p.xf + (m0 + r0) * p.k + k0, p.k, sc.wp.data(), kc, sc.c.data() + r0 * kPanelRows);
      }
    }
    for (i64 r = 0; r < rows; ++r)
      for (i64 v = 0; v < kPanelBlocks && b0 + v < p.w->blocks; ++v)
        store8(p, m0 + r, (b0 + v) * kBlockRows, _mm256_load_ps(sc.c.data() + r * kPanelRows + v * 8));
  }
}

}  // namespace

void run_avx2(const Problem& p) {
  if (p.m >= kPrefillMinM)
    run_prefill(p);
  else
    run_decode(p);
}

}  // namespace w4a16::kernels::cpu::impl

#endif  // __AVX2__ && __FMA__ && __F16C__
