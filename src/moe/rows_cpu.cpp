// The portable row kernels of the CPU MoE fast path and the run-time choice (rows_cpu.hpp).
#include "rows_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/fast.hpp"  // kNibblePrescale, fast_isa_cap
#include "w4a16/core/half.hpp"

namespace w4a16::moe::detail {

void group_scales_scalar(const std::uint16_t* s, bool bf16, const std::int32_t* zero_words, int zero_shift, std::int64_t groups, float* sc,
                         float* zs) {
  for (std::int64_t g = 0; g < groups; ++g) {
    sc[g] = f16x_to_float(bf16 ? DType::bf16 : DType::f16, s[g]);
    const int z = zero_words ? static_cast<int>((static_cast<std::uint32_t>(zero_words[g]) >> zero_shift) & 0xfu) : 8;
    zs[g] = static_cast<float>(z) * sc[g];  // (q - z) s = q s - z s
  }
}

void dequant_row_scalar(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst) {
  for (std::int64_t g = 0; g < k / group_len; ++g)
    for (std::int64_t j = g * group_len / 8; j < (g + 1) * group_len / 8; ++j) {
      const std::uint32_t word = q[j];
      for (int i = 0; i < 8; ++i) dst[8 * j + i] = static_cast<float>((word >> (4 * i)) & 0xfu) * sc[g] - zs[g];
    }
}

// Eight independent partial sums so the compiler can vectorize without reassociating.
float dot_scalar(const float* a, const float* b, std::int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  float r = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

namespace {
// wsum[w] = sum over i of x[8 w + i], in i order (what both planar inputs carry for the zero-point term).
void word_sums(const float* x, std::int64_t k, float* wsum) {
  for (std::int64_t w = 0; w < k / 8; ++w) {
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += x[8 * w + i];
    wsum[w] = s;
  }
}
}  // namespace

void x_planes(const float* x, std::int64_t k, float* planes, float* wsum) {
  const std::int64_t words = k / 8;
  for (std::int64_t w = 0; w < words; ++w)
    for (int i = 0; i < 8; ++i) planes[i * words + w] = x[8 * w + i] * kernels::cpu::kNibblePrescale[i];
  word_sums(x, k, wsum);
}

void x_q16(const float* x, std::int64_t k, float* planes, float* wsum) {
  const std::int64_t words = k / 8, steps = (words + 15) / 16;
  auto* pairs = reinterpret_cast<std::int32_t*>(planes);
  float* xs = planes + steps * 64;
  for (std::int64_t st = 0; st < steps; ++st) {
    const std::int64_t k0 = st * 128, k1 = std::min(k, k0 + 128);
    float mx = 0.f;
    for (std::int64_t i = k0; i < k1; ++i) mx = std::max(mx, std::fabs(x[i]));  // max ignores NaN: checked below
    bool finite = std::isfinite(mx);
    for (std::int64_t i = k0; i < k1; ++i) finite = finite && !std::isnan(x[i]);
    // round(x / xs) with xs = mx / 32767, clamped to +-32767 (the product by the reciprocal may round just past it). In
    // double: 32767 / mx overflows a float for mx below ~1e-34 (bfloat16 subnormals), where xs itself turns subnormal and
    // the block keeps fewer bits (float16 activations never get there: their least nonzero is 6e-8).
    const double inv = mx > 0.f && finite ? 32767.0 / static_cast<double>(mx) : 0.0;
    xs[st] = !finite ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(static_cast<double>(mx) / 32767.0);
    auto q16 = [&](std::int64_t i) -> std::int32_t {
      if (i >= k || !finite) return 0;  // a non-finite block: its NaN scale makes the sums NaN
      const double r = std::nearbyint(static_cast<double>(x[i]) * inv);
      return static_cast<std::int32_t>(std::clamp(r, -32767.0, 32767.0));
    };
    for (int l = 0; l < 16; ++l) {
      const std::int64_t w = st * 16 + l;
      for (int i = 0; i < 4; ++i) {
        const std::int32_t lo = w < words ? q16(8 * w + i) : 0, hi = w < words ? q16(8 * w + i + 4) : 0;
        pairs[st * 64 + i * 16 + l] = static_cast<std::int32_t>((static_cast<std::uint32_t>(lo) & 0xFFFFu) |
                                                                (static_cast<std::uint32_t>(hi) << 16));
      }
    }
  }
  word_sums(x, k, wsum);
}

std::vector<PlanarKernel> planar_kernels_here() {
  std::vector<PlanarKernel> k;
#if defined(W4A16_MOE_HAVE_AVX512_TU) && (defined(__GNUC__) || defined(__clang__))
  static const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has512) k.push_back({dequant_dot_planar_avx512, x_planes, nullptr, "avx512"});
#if defined(W4A16_MOE_HAVE_VNNI_TU)
  static const bool vnni = has512 && __builtin_cpu_supports("avx512vnni");
  if (vnni) k.push_back({dequant_dot_q16_vnni, x_q16, dequant_dot_q16_multi_vnni, "avx512-vnni"});
#endif
#endif
  return k;
}

RowKernels row_kernels() {
#if defined(W4A16_MOE_HAVE_AVX2_TU) && (defined(__GNUC__) || defined(__clang__))
  const kernels::cpu::FastIsa cap = kernels::cpu::fast_isa_cap();  // W4A16_CPU_ISA, as the linear kernel reads it
  const bool scalar = cap == kernels::cpu::FastIsa::scalar, no512 = cap != kernels::cpu::FastIsa::amx;
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  static const std::vector<PlanarKernel> planar = planar_kernels_here();
  if (has && !scalar) {
    if (!no512 && !planar.empty())
      return {group_scales_f16c, dequant_row_avx2,   dot_avx2,           dequant_dot_avx2,
              planar.back().dot, planar.back().input, planar.back().multi, planar.back().isa};
    return {group_scales_f16c, dequant_row_avx2, dot_avx2, dequant_dot_avx2, nullptr, nullptr, nullptr, "avx2"};
  }
#endif
  return {group_scales_scalar, dequant_row_scalar, dot_scalar, nullptr, nullptr, nullptr, nullptr, "scalar"};  // (a fused portable loop measured slower)
}

}  // namespace w4a16::moe::detail
