// AVX-512 VNNI decode of fast_gemm at one row (layout cpu.fast.v1, fast.hpp): the AMX implementation's path for M = 1,
// where a tile product would use one of its 16 rows. This translation unit alone is compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512vnni -mavx2 -mf16c; fast.cpp calls it only where the AMX implementation runs (Sapphire Rapids and
// later, which all have VNNI; cpu_has_amx checks it).
//
// Math, int32 exact per chunk, fp32 across chunks:
//   y[n] = sum over chunks c of s[n, g(c)] * xs[b(c)] * sum_{k in c} q[n, k] x16[k]  -  sum_g z[n, g] s[n, g] sum_{k in g} x[k]
// x16 = x / xs rounded to int16, xs = a power of two per 128 k (the least with max |x| / xs <= 32767): x of float16 or
// bfloat16 in a block of similar magnitudes is exact; otherwise the error is x's rounding to 15 bits below its block's
// largest, far under the activations' own 16-bit rounding. A chunk is 16 words, or a group of 4 / 8 words (g = 32 / 64):
// one group and one x block each.
// One 64-byte load of a block holds words j and j + 1 of its 8 rows (lanes 0-7, 8-15); (v >> 4i) & 0x000F000F puts
// nibbles i and i + 4 of every word in the two 16-bit halves of its lane, and vpdpwssd multiplies them by x's pair
// (x16[8j + i], x16[8j + i + 4]) of that word: 3 shifts, 4 ands and 4 vpdpwssd per 128 weights (the AVX2 decode tile: 8
// and / convert / fma per 64). Rows 0-7 sit in both halves; the halves are added once at the end.
// Check: w4a16_test_kernels_cpu (CpuFast*, isa=amx at M = 1); bench: w4a16_bench_cpu --m 1; docs/benchmarks/cpu.md.
#include "fast_impl.hpp"

#if defined(W4A16_CPU_HAVE_VNNI_TU) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#if defined(__GNUC__) && !defined(__clang__)  // GCC 12's AVX-512 headers (a false positive, as in fast_amx.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace w4a16::kernels::cpu::impl {

namespace {

using i64 = std::int64_t;

constexpr i64 kXBlock = 128;  // k per x scale
constexpr i64 kPrefetchBytes = 4096;  // each block's words asked for this far ahead (as the AVX2 decode kernel does)
constexpr i64 kTileBlocks = 8;        // blocks (of 8 rows) a thread streams at once: each x vector serves 8 of them

// x [K] fp32 -> xq [ceil(words / 2)][4][16] int32 (pair i of word 2jp in lanes 0-7, of word 2jp + 1 in lanes 8-15; zero
// past K) and xs [ceil(K / 128)]: the power of two per block.
void x_pairs(const float* x, i64 K, std::int32_t* xq, float* xs) {
  const i64 words = K / 8, pairs = (words + 1) / 2;
  for (i64 b = 0; b * kXBlock < K; ++b) {
    float mx = 0.f;
    for (i64 k = b * kXBlock; k < std::min(K, (b + 1) * kXBlock); ++k) mx = std::max(mx, std::fabs(x[k]));
    int e = 0;
    if (mx > 0.f && std::isfinite(mx)) std::frexp(mx / 32767.f, &e);  // mx / 2^e <= 32767 (2^(e-1) <= mx / 32767 < 2^e)
    xs[b] = !std::isfinite(mx) ? std::numeric_limits<float>::quiet_NaN() : mx > 0.f ? std::ldexp(1.f, e) : 0.f;
  }
  // x / xs per block as a product by an exact power of two (zero for a zero or NaN-scaled block: its sums are 0 or NaN)
  std::vector<float> inv(static_cast<std::size_t>((K + kXBlock - 1) / kXBlock));
  for (std::size_t b = 0; b < inv.size(); ++b) inv[b] = xs[b] > 0.f ? 1.f / xs[b] : 0.f;
  auto q16 = [&](i64 k) -> std::int32_t {
    return static_cast<std::int32_t>(std::clamp(std::nearbyint(x[k] * inv[static_cast<std::size_t>(k / kXBlock)]), -32767.f, 32767.f));
  };
  for (i64 jp = 0; jp < pairs; ++jp)
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 16; ++l) {
        const i64 j = 2 * jp + l / 8;
        const std::int32_t lo = j < words ? q16(8 * j + i) : 0, hi = j < words ? q16(8 * j + i + 4) : 0;
        xq[(jp * 4 + i) * 16 + l] =
            static_cast<std::int32_t>((static_cast<std::uint32_t>(lo) & 0xFFFFu) | (static_cast<std::uint32_t>(hi) << 16));
      }
}

// The 8 rows' scales of block b, group g, in both halves.
inline __m512 scales16(const FastWeights& w, i64 b, i64 g, i64 G) {
  const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(w.scales.data() + (b * G + g) * kBlockRows));
  const __m256 s = w.scale_dtype == DType::bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                                                : _mm256_cvtph_ps(h);
  const __m512 s5 = _mm512_castps256_ps512(s);
  return _mm512_shuffle_f32x4(s5, s5, 0x44);  // (s, s)
}

// The 8 rows' zero points of block b, group g, in lanes 0-7 (8 for uint4b8), lanes 8-15 zero.
inline __m512 zeros8(const FastWeights& w, i64 b, i64 g, i64 G) {
  if (w.zeros.empty()) return _mm512_zextps256_ps512(_mm256_set1_ps(8.f));
  const __m256i z = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(w.zeros[static_cast<std::size_t>(b * G + g)])),
                                                       _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                     _mm256_set1_epi32(15));
  return _mm512_zextps256_ps512(_mm256_cvtepi32_ps(z));
}

// Blocks b0 .. b0 + NV - 1 (NV <= kTileBlocks): their 8 NV outputs.
template <int NV>
void tile(const Problem& p, const std::int32_t* xq, const float* xs, i64 b0) {
  const FastWeights& w = *p.w;
  const i64 K = p.k, G = p.groups, words = K / 8, wpg = p.group_len / 8;
  const i64 cw = std::min<i64>(std::min<i64>(wpg, 16), words);  // words per chunk: one group, one x block
  const __m512i nib = _mm512_set1_epi32(0x000F000F);
  const std::uint32_t* qb[NV];
  for (int v = 0; v < NV; ++v) qb[v] = w.qweight.data() + (b0 + v) * words * kBlockRows;
  __m512 y[NV];
  for (int v = 0; v < NV; ++v) y[v] = _mm512_setzero_ps();
  for (i64 c0 = 0; c0 < words; c0 += cw) {
    const i64 c1 = std::min(words, c0 + cw), g = c0 / wpg;
    __m512i acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_si512();
    for (i64 j = c0; j < c1; j += 2) {  // c0 is even: cw is even but for K = 8 (one word)
      const std::int32_t* xp = xq + (j / 2) * 64;
      const __m512i x0 = _mm512_load_si512(xp), x1 = _mm512_load_si512(xp + 16), x2 = _mm512_load_si512(xp + 32),
                    x3 = _mm512_load_si512(xp + 48);
      const __mmask16 m = j + 1 < words ? 0xFFFF : 0x00FF;  // the last word of an odd count: lanes 8-15 past K
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        _mm_prefetch(reinterpret_cast<const char*>(qb[v] + j * kBlockRows) + kPrefetchBytes, _MM_HINT_T0);
        const __m512i wv = _mm512_maskz_loadu_epi32(m, qb[v] + j * kBlockRows);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(wv, nib), x0);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 4), nib), x1);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 8), nib), x2);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 12), nib), x3);
      }
    }
    const __m512 xsb = _mm512_set1_ps(xs[(c0 * 8) / kXBlock]);
    const bool group_end = c1 == words || c1 % wpg == 0;
    for (int v = 0; v < NV; ++v) {
      const __m512 s = scales16(w, b0 + v, g, G);
      y[v] = _mm512_fmadd_ps(_mm512_mul_ps(s, xsb), _mm512_cvtepi32_ps(acc[v]), y[v]);
      if (group_end)  // - z s sum_{k in g} x, once per row (lanes 0-7)
        y[v] = _mm512_fnmadd_ps(_mm512_mul_ps(zeros8(w, b0 + v, g, G), s), _mm512_set1_ps(p.xsum[g]), y[v]);
    }
  }
  const i64 N = p.n;
  for (int v = 0; v < NV; ++v) {
    alignas(32) float o[8];
    _mm256_store_ps(o, _mm256_add_ps(_mm512_castps512_ps256(y[v]), _mm512_extractf32x8_ps(y[v], 1)));
    const i64 n0 = (b0 + v) * kBlockRows;
    store_row(p, 0, n0, o, std::min<i64>(kBlockRows, N - n0));
  }
}

}  // namespace

bool vnni_decode_built() { return true; }

void run_vnni_decode(const Problem& p) {
  const i64 K = p.k, Nb = p.w->blocks, pairs = (K / 8 + 1) / 2;
  static thread_local AlignedVector<std::int32_t> xq;
  static thread_local std::vector<float> xs;
  xq.resize(static_cast<std::size_t>(pairs * 64));
  xs.resize(static_cast<std::size_t>((K + kXBlock - 1) / kXBlock));
  x_pairs(p.xf, K, xq.data(), xs.data());
  const std::int32_t* xqp = xq.data();
  const float* xsp = xs.data();
  const i64 tiles = (Nb + kTileBlocks - 1) / kTileBlocks;
#pragma omp parallel for schedule(static) num_threads(p.threads) if (tiles > 1)
  for (i64 t = 0; t < tiles; ++t) {
    const i64 b0 = t * kTileBlocks, nv = std::min<i64>(kTileBlocks, Nb - b0);
    switch (nv) {
      case 8: tile<8>(p, xqp, xsp, b0); break;
      case 7: tile<7>(p, xqp, xsp, b0); break;
      case 6: tile<6>(p, xqp, xsp, b0); break;
      case 5: tile<5>(p, xqp, xsp, b0); break;
      case 4: tile<4>(p, xqp, xsp, b0); break;
      case 3: tile<3>(p, xqp, xsp, b0); break;
      case 2: tile<2>(p, xqp, xsp, b0); break;
      default: tile<1>(p, xqp, xsp, b0); break;
    }
  }
}

}  // namespace w4a16::kernels::cpu::impl

#endif
