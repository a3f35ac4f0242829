// The AVX-512 VNNI row kernel of the CPU MoE fast path (rows_cpu.hpp): one canonical row against one input given as
// 16-bit pairs (x_q16). This file alone is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; rows_cpu.cpp
// hands it out only where __builtin_cpu_supports says so.
//   16 consecutive words of the row (128 weights) in one register. (v >> 4 i) & 0x000F000F puts nibbles i and i + 4 of
//   every word in the two 16-bit halves of its lane (i < 4), exactly the pair x_q16 stored for them, so one vpdpwssd
//   adds q_i x16_i + q_{i+4} x16_{i+4} to the lane's int32 sum (at most 8 x 15 x 32767 a step: no overflow, exact).
//   Per step: y += (s_g xs) float(sum) - z_g s_g sum_i x, with the lane's group g (one group per register for g >= 128
//   and channelwise, 2 or 4 for g = 64 / 32) and xs the step's x scale.
// Measured 1.5-1.56x the nibble-plane kernel's weights per second on rows in L1 (K = 768 / 2048, 2026-12-05), the MoE
// layer at T = 1..16: docs/benchmarks/cpu.md.
#include "rows_cpu.hpp"

#if defined(W4A16_MOE_HAVE_VNNI_TU)
#if defined(__GNUC__) && !defined(__clang__)  // GCC 12's AVX-512 headers: see rows_cpu_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

namespace w4a16::moe::detail {

namespace {
// The row against C inputs at once (the inputs of C token slots of one expert): the row's nibble pairs are extracted
// once per step and multiplied into each input's pairs (C int32 sums, C accumulators).
template <int C>
void q16_multi(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
               const float* const* planes, const float* const* wsum, float* out) {
  const std::int64_t words = k / 8, wpg = group_len / 8, steps = (words + 15) / 16;
  const bool one_group_per_step = wpg % 16 == 0 || wpg == words;
  const __m512i lane_group = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), wpg == 4 ? 2 : 3);
  const std::int64_t groups = k / group_len;
  const __m512i nib = _mm512_set1_epi32(0x000F000F);
  __m512 y[C];
  for (int c = 0; c < C; ++c) y[c] = _mm512_setzero_ps();
  for (std::int64_t w0 = 0, st = 0; w0 < words; w0 += 16, ++st) {
    const __mmask16 m = static_cast<__mmask16>(words - w0 >= 16 ? 0xFFFF : (1u << (words - w0)) - 1u);
    _mm_prefetch(reinterpret_cast<const char*>(q + w0) + kPrefetchBytes, _MM_HINT_T0);
    const __m512i v = _mm512_maskz_loadu_epi32(m, q + w0);
    const __m512i n0 = _mm512_and_si512(v, nib), n1 = _mm512_and_si512(_mm512_srli_epi32(v, 4), nib),
                  n2 = _mm512_and_si512(_mm512_srli_epi32(v, 8), nib), n3 = _mm512_and_si512(_mm512_srli_epi32(v, 12), nib);
    __m512 s1, z;
    if (one_group_per_step) {
      const std::int64_t g = w0 / wpg;
      s1 = _mm512_set1_ps(sc[g]);
      z = _mm512_set1_ps(zs[g]);
    } else {
      const std::int64_t g0 = w0 / wpg, n = std::min<std::int64_t>(16 / wpg, groups - g0);
      const auto gm = static_cast<__mmask16>((1u << n) - 1u);
      s1 = _mm512_permutexvar_ps(lane_group, _mm512_maskz_loadu_ps(gm, sc + g0));
      z = _mm512_permutexvar_ps(lane_group, _mm512_maskz_loadu_ps(gm, zs + g0));
    }
    for (int c = 0; c < C; ++c) {
      const std::int32_t* p = reinterpret_cast<const std::int32_t*>(planes[c]) + st * 64;
      const float xs = planes[c][steps * 64 + st];
      __m512i acc = _mm512_dpwssd_epi32(_mm512_setzero_si512(), n0, _mm512_load_si512(p));
      acc = _mm512_dpwssd_epi32(acc, n1, _mm512_load_si512(p + 16));
      acc = _mm512_dpwssd_epi32(acc, n2, _mm512_load_si512(p + 32));
      acc = _mm512_dpwssd_epi32(acc, n3, _mm512_load_si512(p + 48));
      y[c] = _mm512_fmadd_ps(_mm512_mul_ps(s1, _mm512_set1_ps(xs)), _mm512_cvtepi32_ps(acc), y[c]);
      y[c] = _mm512_fnmadd_ps(z, _mm512_maskz_loadu_ps(m, wsum[c] + w0), y[c]);
    }
  }
  for (int c = 0; c < C; ++c) out[c] = _mm512_reduce_add_ps(y[c]);
}
}  // namespace

float dequant_dot_q16_vnni(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                           const float* planes, const float* wsum) {
  float out;
  q16_multi<1>(q, k, group_len, sc, zs, &planes, &wsum, &out);
  return out;
}

void dequant_dot_q16_multi_vnni(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc,
                                const float* zs, const float* const* planes, const float* const* wsum, int count, float* out) {
  switch (count) {
    case 1: q16_multi<1>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 2: q16_multi<2>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 3: q16_multi<3>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 4: q16_multi<4>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 5: q16_multi<5>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 6: q16_multi<6>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 7: q16_multi<7>(q, k, group_len, sc, zs, planes, wsum, out); return;
    case 8: q16_multi<8>(q, k, group_len, sc, zs, planes, wsum, out); return;
    default: break;
  }
  for (int c = 0; c < count; c += 8)  // more inputs than one pass holds: eight at a time
    dequant_dot_q16_multi_vnni(q, k, group_len, sc, zs, planes + c, wsum + c, std::min(8, count - c), out + c);
}

}  // namespace w4a16::moe::detail
#endif  // W4A16_MOE_HAVE_VNNI_TU
