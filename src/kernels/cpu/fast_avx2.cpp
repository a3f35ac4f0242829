// AVX2 + FMA + F16C kernels of fast_gemm (layout cpu.fast.v1, fast.hpp). This translation unit
// alone is compiled with -mavx2 -mfma -mf16c; fast.cpp calls it only after
// __builtin_cpu_supports("avx2"/"fma"/"f16c"), so the library still runs on older CPUs.
//
// Shapes: x p.xf [M][K] fp32 (gathered; with group sums for decode), W [Nb][K/8][8] u32 nibble words,
// scales [Nb][G][8] f16|bf16 bits, zeros [Nb][G] packed u32, out [M][N] act dtype, strided rows.
// Every K % 8 == 0, every group size (32..256, channelwise), both scalar types, bias, act-order.
//
// decode (M < kPrefillMinM): the weights streamed once; x as int16 per 128 k (a power-of-two scale per block, as the
//   VNNI kernel's; fast.cpp's x_pairs16), nibble pairs (v >> 4i) & 0x000F000F multiplied by x's pairs with vpmaddwd:
//   per word (8 rows x 8 k) 7 extraction ops per block and 8 per row of x, int32 exact per chunk, scaled per chunk in
//   fp32. Register tiles of up to 4 rows of x x 2 blocks (16 rows), 2-block panels reread from L2 per further 4 rows.
//   Before (to stop 41): x in fp32 prescaled by 2^-4i and one fma per nibble and row: 1.07-1.46x slower at M = 1..16.
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
#include <vector>

namespace w4a16::kernels::cpu::impl {

XPrep avx2_xprep(std::int64_t m) { return XPrep{.sums = m < kPrefillMinM, .pairs16 = m < kPrefillMinM}; }

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
// Each block's words are asked for this far ahead of their use: the hardware prefetcher alone left M = 1 at 0.99-1.21x
// (median 1.06x) the time on the 10 PERF.md shapes (2026-12-05, 2 threads of an Intel Xeon; docs/benchmarks/cpu.md).
constexpr i64 kDecodePrefetchBytes = 4096;

// The VNNI kernel's math (fast_vnni.cpp) with AVX2's vpmaddwd: x as int16 per 128 k (x_pairs16), a block's word j (8
// rows x 8 k) one register, (v >> 4i) & 0x000F000F nibbles i and i + 4 of each row's word in its two 16-bit halves,
// vpmaddwd + vpaddd against x's pair (x16[8j + i], x16[8j + i + 4]) broadcast: per word and block 3 shifts + 4 ands,
// and 4 madd + 4 add per row of x. int32 exact per chunk of one group and one x block (< 2^26 a lane), scaled per
// chunk in fp32. NV: blocks of 8 rows of W (1..2), R: rows of x (1..4).
template <int NV, int R>
void decode_tile(const Problem& p, i64 m0, i64 b0) {
  const std::int32_t* const xq = p.xq;  // x's pairs and scales (fast.cpp's x_pairs16), in registers for the loops
  const float* const xs = p.xs16;
  const FastWeights& w = *p.w;
  const i64 K = p.k, G = p.groups, words = K / 8, wpg = p.group_len / 8;
  const i64 cw = std::min<i64>(wpg, kX16Block / 8);  // words per chunk
  const bool bf16 = w.scale_dtype == DType::bf16, zp = !w.zeros.empty();
  const __m256i nib = _mm256_set1_epi32(0x000F000F);
  const std::uint32_t* qb[NV];
  _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) qb[v] = w.qweight.data() + (b0 + v) * words * kBlockRows;
  alignas(32) float y[R][NV][8] = {};
  for (i64 c0 = 0; c0 < words; c0 += cw) {
    const i64 c1 = std::min(words, c0 + cw), g = c0 / wpg, xb = c0 * 8 / kX16Block;
    __m256i acc[R][NV];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_si256();
    for (i64 j = c0; j < c1; ++j) {
      if ((j & 1) == 0)
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v)
          _mm_prefetch(reinterpret_cast<const char*>(qb[v] + j * kBlockRows) + kDecodePrefetchBytes, _MM_HINT_T0);
      _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) {
        const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(qb[v] + j * kBlockRows));
        const __m256i n0 = _mm256_and_si256(wv, nib), n1 = _mm256_and_si256(_mm256_srli_epi32(wv, 4), nib),
                      n2 = _mm256_and_si256(_mm256_srli_epi32(wv, 8), nib), n3 = _mm256_and_si256(_mm256_srli_epi32(wv, 12), nib);
        _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
          const std::int32_t* xp = xq + (m0 + r) * (K / 2) + 4 * j;
          __m256i a = _mm256_madd_epi16(n0, _mm256_set1_epi32(xp[0]));
          a = _mm256_add_epi32(a, _mm256_madd_epi16(n1, _mm256_set1_epi32(xp[1])));
          a = _mm256_add_epi32(a, _mm256_madd_epi16(n2, _mm256_set1_epi32(xp[2])));
          a = _mm256_add_epi32(a, _mm256_madd_epi16(n3, _mm256_set1_epi32(xp[3])));
          acc[r][v] = _mm256_add_epi32(acc[r][v], a);
        }
      }
    }
    const bool group_end = c1 == words || c1 % wpg == 0;
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) {
      const __m256 sc = load_scales(w.scales.data() + ((b0 + v) * G + g) * kBlockRows, bf16);
      const __m256 zs = !group_end ? _mm256_setzero_ps()
                                   : _mm256_mul_ps(zp ? unpack_zeros(w.zeros[static_cast<std::size_t>((b0 + v) * G + g)]) : _mm256_set1_ps(8.f), sc);
      _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
        __m256 t = _mm256_fmadd_ps(_mm256_mul_ps(sc, _mm256_set1_ps(xs[(m0 + r) * p.xblocks + xb])), _mm256_cvtepi32_ps(acc[r][v]),
                                   _mm256_load_ps(y[r][v]));
        if (group_end) t = _mm256_fnmadd_ps(zs, _mm256_broadcast_ss(p.xsum + (m0 + r) * G + g), t);
        _mm256_store_ps(y[r][v], t);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r)
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; ++v) store8(p, m0 + r, (b0 + v) * kBlockRows, _mm256_load_ps(y[r][v]));
}

using DecodeFn = void (*)(const Problem&, i64, i64);
template <int R>
void decode_pair_by_one(const Problem& p, i64 m0, i64 b0) {
  decode_tile<1, R>(p, m0, b0);
  decode_tile<1, R>(p, m0, b0 + 1);
}
// [R - 1][NV - 1]: 2-block panels (16 registers: R x NV sums, 4 NV nibble vectors, the broadcasts); 3 and 4 rows
// take the panel's blocks one at a time (measured 1.14-1.29x faster than both at once at M = 4..16: spills).
constexpr DecodeFn kDecode[4][2] = {
    {decode_tile<1, 1>, decode_tile<2, 1>},
    {decode_tile<1, 2>, decode_tile<2, 2>},
    {decode_tile<1, 3>, decode_pair_by_one<3>},
    {decode_tile<1, 4>, decode_pair_by_one<4>},
};

void run_decode(const Problem& p) {
  const i64 M = p.m, blocks = p.w->blocks;
  const i64 panel = 2, panels = (blocks + panel - 1) / panel;  // 4-block panels at M = 1: 0.98x (not kept)
  // Dynamic chunks: the 2 cores are shared, and a static split waits for the slower one.
  const i64 chunk = std::max<i64>(1, panels / (static_cast<i64>(p.threads) * 16));
#pragma omp parallel for schedule(dynamic, chunk) num_threads(p.threads)
  for (i64 t = 0; t < panels; ++t) {
    const i64 b0 = t * panel, nv = std::min(panel, blocks - b0);
    for (i64 m0 = 0; m0 < M; m0 += 4) kDecode[std::min<i64>(4, M - m0) - 1][nv - 1](p, m0, b0);
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
