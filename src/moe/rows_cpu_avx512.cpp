// The AVX-512 row kernel of the CPU MoE fast path (rows_cpu.hpp): one canonical row against one input given as
// nibble planes. This file alone is compiled with -mavx512f -mavx512bw -mavx512vl -mavx2 -mfma; rows_cpu.cpp hands it
// out only where __builtin_cpu_supports says so.
//   16 consecutive words of the row (128 weights) in one register; nibble plane i of all 16 is v & (15 << 4 i), an exact
//   fp32 of q * 2^4i once converted, times the plane x[8 w + i] * 2^-4i (plane 7: v >> 28, unscaled): 3 instructions per
//   16 weights. Per word lane, sum_i q x lands in acc; y += s_g acc - z_g s_g sum_i x, with the lane's group g (one
//   group per register for g >= 128 and channelwise, 2 or 4 for g = 64 / 32).
#include "rows_cpu.hpp"

#if defined(W4A16_MOE_HAVE_AVX512_TU)
// GCC 12 reports its own AVX-512 headers' _mm512_undefined_* values (_mm512_reduce_add_ps) as uninitialized (a false
// positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

namespace w4a16::moe::detail {

float dequant_dot_planar_avx512(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                                const float* planes, const float* wsum) {
  const std::int64_t words = k / 8, wpg = group_len / 8;  // words per group: 4, 8, 16, 32, or all (channelwise)
  const bool one_group_per_step = wpg % 16 == 0 || wpg == words;
  // Lane l of a step starting at word w0 (a multiple of 16) lies in group w0 / wpg + l / wpg when wpg is 4 or 8.
  const __m512i lane_group = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), wpg == 4 ? 2 : 3);
  const std::int64_t groups = k / group_len;
  __m512 y = _mm512_setzero_ps();
  for (std::int64_t w0 = 0; w0 < words; w0 += 16) {
    const __mmask16 m = static_cast<__mmask16>(words - w0 >= 16 ? 0xFFFF : (1u << (words - w0)) - 1u);
    _mm_prefetch(reinterpret_cast<const char*>(q + w0) + kPrefetchBytes, _MM_HINT_T0);
    const __m512i v = _mm512_maskz_loadu_epi32(m, q + w0);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    auto plane = [&](int i) { return _mm512_maskz_loadu_ps(m, planes + i * words + w0); };
    acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF))), plane(0), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF0))), plane(1), acc1);
    acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF00))), plane(2), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF000))), plane(3), acc1);
    acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF0000))), plane(4), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF00000))), plane(5), acc1);
    acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xF000000))), plane(6), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(v, 28)), plane(7), acc1);
    const __m512 acc = _mm512_add_ps(acc0, acc1);
    __m512 s, z;
    if (one_group_per_step) {
      const std::int64_t g = w0 / wpg;
      s = _mm512_set1_ps(sc[g]);
      z = _mm512_set1_ps(zs[g]);
    } else {  // g = 32 / 64: 4 / 2 groups in the step (the last step's may pass the end: masked)
      const std::int64_t g0 = w0 / wpg, n = std::min<std::int64_t>(16 / wpg, groups - g0);
      const auto gm = static_cast<__mmask16>((1u << n) - 1u);
      s = _mm512_permutexvar_ps(lane_group, _mm512_maskz_loadu_ps(gm, sc + g0));
      z = _mm512_permutexvar_ps(lane_group, _mm512_maskz_loadu_ps(gm, zs + g0));
    }
    y = _mm512_fmadd_ps(s, acc, y);
    y = _mm512_fnmadd_ps(z, _mm512_maskz_loadu_ps(m, wsum + w0), y);
  }
  return _mm512_reduce_add_ps(y);
}

}  // namespace w4a16::moe::detail
#endif  // W4A16_MOE_HAVE_AVX512_TU
