// The AVX2 + FMA (+ F16C) row kernels of the CPU MoE fast path (rows_cpu.hpp); this file alone is compiled with
// -mavx2 -mfma -mf16c, and rows_cpu.cpp hands them out only where __builtin_cpu_supports says so.
#include "rows_cpu.hpp"

#if defined(W4A16_MOE_HAVE_AVX2_TU)
#include <immintrin.h>

#include <algorithm>

namespace w4a16::moe::detail {

// 8 groups per step: float16 by vcvtph2ps, bfloat16 by a shift (both exact), z s in fp32 as the portable loop.
void group_scales_f16c(const std::uint16_t* s, bool bf16, const std::int32_t* zero_words, int zero_shift, std::int64_t groups, float* sc,
                       float* zs) {
  const __m128i shift = _mm_cvtsi32_si128(zero_shift);
  std::int64_t g = 0;
  for (; g + 8 <= groups; g += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + g));
    const __m256 v = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    const __m256 z = zero_words ? _mm256_cvtepi32_ps(_mm256_and_si256(
                                      _mm256_srl_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_words + g)), shift),
                                      _mm256_set1_epi32(0xf)))
                                : _mm256_set1_ps(8.f);
    _mm256_storeu_ps(sc + g, v);
    _mm256_storeu_ps(zs + g, _mm256_mul_ps(z, v));
  }
  if (g < groups) group_scales_scalar(s + g, bf16, zero_words ? zero_words + g : nullptr, zero_shift, groups - g, sc + g, zs + g);
}

// One word = 8 consecutive k: broadcast, shift nibble i down in lane i, mask, convert, q s - z s.
// 5 instructions per 8 values (the portable loop: ~4 per value).
void dequant_row_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst) {
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i mask = _mm256_set1_epi32(0xf);
  const std::int64_t words_per_group = group_len / 8;
  for (std::int64_t g = 0; g < k / group_len; ++g) {
    const __m256 s = _mm256_set1_ps(sc[g]), z = _mm256_set1_ps(zs[g]);
    const std::uint32_t* qg = q + g * words_per_group;
    float* dg = dst + g * group_len;
    for (std::int64_t j = 0; j < words_per_group; ++j) {
      const __m256i v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qg[j])), shifts), mask);
      _mm256_storeu_ps(dg + 8 * j, _mm256_fmsub_ps(_mm256_cvtepi32_ps(v), s, z));
    }
  }
}

// dequant_row_avx2's values straight into two 8-wide accumulators (alternate words), no row in memory.
float dequant_dot_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, const float* x) {
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i mask = _mm256_set1_epi32(0xf);
  const std::int64_t words_per_group = group_len / 8;  // odd only for a channelwise K = 8 (2 m + 1)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (std::int64_t g = 0; g < k / group_len; ++g) {
    const __m256 s = _mm256_set1_ps(sc[g]), z = _mm256_set1_ps(zs[g]);
    const std::uint32_t* qg = q + g * words_per_group;
    const float* xg = x + g * group_len;
    std::int64_t j = 0;
    for (; j + 2 <= words_per_group; j += 2) {
      if (((g * words_per_group + j) & 15) == 0) _mm_prefetch(reinterpret_cast<const char*>(qg + j) + kPrefetchBytes, _MM_HINT_T0);
      const __m256i v0 = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qg[j])), shifts), mask);
      const __m256i v1 = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qg[j + 1])), shifts), mask);
      acc0 = _mm256_fmadd_ps(_mm256_fmsub_ps(_mm256_cvtepi32_ps(v0), s, z), _mm256_loadu_ps(xg + 8 * j), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_fmsub_ps(_mm256_cvtepi32_ps(v1), s, z), _mm256_loadu_ps(xg + 8 * j + 8), acc1);
    }
    if (j < words_per_group) {
      const __m256i v = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(qg[j])), shifts), mask);
      acc0 = _mm256_fmadd_ps(_mm256_fmsub_ps(_mm256_cvtepi32_ps(v), s, z), _mm256_loadu_ps(xg + 8 * j), acc0);
    }
  }
  const __m256 sum = _mm256_add_ps(acc0, acc1);
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  const __m128 h2 = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

// Four 8-wide accumulators (32 values per step), summed in a fixed order.
float dot_avx2(const float* a, const float* b, std::int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  const __m128 h2 = _mm_add_ps(h, _mm_movehl_ps(h, h));
  float r = _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

namespace {
// The 16-bit pairs' kernel (rows_cpu_vnni.cpp) on AVX2: a step's 16 words in two 8-word halves, vpmaddwd + vpaddd for
// vpdpwssd; up to 4 inputs a pass (16 registers: 4 sums, 8 nibble vectors, the rest).
template <int C>
void q16_multi(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
               const float* const* planes, const float* const* wsum, float* out) {
  const std::int64_t words = k / 8, wpg = group_len / 8, steps = (words + 15) / 16, groups = k / group_len;
  const bool one_group_per_step = wpg % 16 == 0 || wpg == words;
  const __m256i nib = _mm256_set1_epi32(0x000F000F);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 y[C];
  for (int c = 0; c < C; ++c) y[c] = _mm256_setzero_ps();
  for (std::int64_t w0 = 0, st = 0; w0 < words; w0 += 16, ++st) {
    _mm_prefetch(reinterpret_cast<const char*>(q + w0) + kPrefetchBytes, _MM_HINT_T0);
    for (int h = 0; h < 2; ++h) {
      const std::int64_t wh = w0 + 8 * h, left = words - wh;
      if (left <= 0) break;
      const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<std::int64_t>(left, 8))), lanes);
      const __m256i v = _mm256_maskload_epi32(reinterpret_cast<const int*>(q + wh), m);
      const __m256i n0 = _mm256_and_si256(v, nib), n1 = _mm256_and_si256(_mm256_srli_epi32(v, 4), nib),
                    n2 = _mm256_and_si256(_mm256_srli_epi32(v, 8), nib), n3 = _mm256_and_si256(_mm256_srli_epi32(v, 12), nib);
      __m256 s1, z;  // the group factors of the half's 8 words
      if (one_group_per_step) {
        s1 = _mm256_set1_ps(sc[w0 / wpg]);
        z = _mm256_set1_ps(zs[w0 / wpg]);
      } else {  // g = 32 / 64: 4 or 8 words a group, 2 or 1 groups a half
        const std::int64_t g0 = wh / wpg, g1 = std::min(groups - 1, g0 + (wpg == 4 ? 1 : 0));
        const __m256 lo4 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(4), lanes));  // lanes 0-3
        s1 = _mm256_blendv_ps(_mm256_set1_ps(sc[g1]), _mm256_set1_ps(sc[g0]), lo4);
        z = _mm256_blendv_ps(_mm256_set1_ps(zs[g1]), _mm256_set1_ps(zs[g0]), lo4);
      }
      for (int c = 0; c < C; ++c) {
        const auto* p = reinterpret_cast<const std::int32_t*>(planes[c]) + st * 64 + 8 * h;
        const float xs = planes[c][steps * 64 + st];
        __m256i acc = _mm256_madd_epi16(n0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(n1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16))));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(n2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32))));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(n3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 48))));
        y[c] = _mm256_fmadd_ps(_mm256_mul_ps(s1, _mm256_set1_ps(xs)), _mm256_cvtepi32_ps(acc), y[c]);
        y[c] = _mm256_fnmadd_ps(z, _mm256_maskload_ps(wsum[c] + wh, m), y[c]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(y[c]), _mm256_extractf128_ps(y[c], 1));
    const __m128 h2 = _mm_add_ps(h, _mm_movehl_ps(h, h));
    out[c] = _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
  }
}
}  // namespace

float dequant_dot_q16_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                           const float* planes, const float* wsum) {
  float out;
  q16_multi<1>(q, k, group_len, sc, zs, &planes, &wsum, &out);
  return out;
}

void dequant_dot_q16_multi_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc,
                                const float* zs, const float* const* planes, const float* const* wsum, int count, float* out) {
  for (int c = 0; c < count; c += 4) {  // four inputs a pass
    switch (std::min(4, count - c)) {
      case 1: q16_multi<1>(q, k, group_len, sc, zs, planes + c, wsum + c, out + c); break;
      case 2: q16_multi<2>(q, k, group_len, sc, zs, planes + c, wsum + c, out + c); break;
      case 3: q16_multi<3>(q, k, group_len, sc, zs, planes + c, wsum + c, out + c); break;
      default: q16_multi<4>(q, k, group_len, sc, zs, planes + c, wsum + c, out + c); break;
    }
  }
}

}  // namespace w4a16::moe::detail
#endif  // W4A16_MOE_HAVE_AVX2_TU
