// Round-to-nearest quantizer: float weights [N, K] -> canonical (rule in formats.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "detail.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"

namespace w4a16::formats {

namespace {
float load_weight(const TensorView& t, std::int64_t i) {
  if (t.dtype == DType::f32) {
    std::uint32_t u = detail::load_u32(t.data, i);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  return f16x_to_float(t.dtype, detail::load_u16(t.data, i));
}

// The smallest value of `dtype` that is >= s (s > 0, finite): rounding the scale up keeps
// the whole [min, max] range of a group on the grid, so |w - dequant| <= s_stored / 2.
std::uint16_t round_scale_up(DType dtype, float s) {
  std::uint16_t b = float_to_f16x(dtype, s);
  if (f16x_to_float(dtype, b) < s) ++b;  // positive values: the next bit pattern is the next larger value
  return b;
}
}  // namespace

QuantizedLinear quantize_rtn(const TensorView& weight, const QuantizeOptions& opt, const TensorView& bias) {
  detail::check_group_size(opt.group_size, "quantize_rtn group_size");
  if (opt.scale_dtype != DType::f16 && opt.scale_dtype != DType::bf16)
    fail(ErrorCode::dtype_mismatch, "quantize_rtn scale_dtype", "float16 or bfloat16",
         std::string(dtype_name(opt.scale_dtype)));
  if (weight.dtype != DType::f16 && weight.dtype != DType::bf16 && weight.dtype != DType::f32)
    fail(ErrorCode::dtype_mismatch, "weight", "float16, bfloat16 or float32 [N, K]", describe(weight));
  detail::check_input(weight, "weight", weight.dtype, 2, "[N, K]");
  QuantSpec spec;
  spec.n = weight.size(0);
  spec.k = weight.size(1);
  spec.group_size = opt.group_size;
  spec.scalar = opt.scalar;
  spec.validate("weight");
  const std::int64_t N = spec.n, K = spec.k, G = spec.groups(), gl = spec.group_len();
  const bool asym = spec.has_zeros();
  const bool has_bias = !detail::absent(bias);

  QuantizedLinear out(spec, opt.scale_dtype, has_bias, false);
  auto* qw = out.qweight().ptr<std::int32_t>();
  auto* sc = out.scales().ptr<std::uint16_t>();
  std::vector<float> x(static_cast<std::size_t>(gl));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t g = 0; g < G; ++g) {
      float mn = 0.f, mx = 0.f;  // the range always includes 0 (so z is in 0..15 and 0 is exact)
      for (std::int64_t i = 0; i < gl; ++i) {
        float v = load_weight(weight, n * K + g * gl + i);
        if (!std::isfinite(v))
          fail(ErrorCode::invalid_argument, "weight", "finite values",
               std::to_string(v) + " at [" + std::to_string(n) + ", " + std::to_string(g * gl + i) + "]");
        x[static_cast<std::size_t>(i)] = v;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      float s = asym ? (mx - mn) / 15.f : 2.f * std::max(mx, -mn) / 15.f;
      if (s == 0.f) s = 1.f;  // an all-zero group: any finite scale; q = z reproduces 0 exactly
      std::uint16_t sbits = round_scale_up(opt.scale_dtype, s);
      float ss = f16x_to_float(opt.scale_dtype, sbits);
      if (!std::isfinite(ss))
        fail(ErrorCode::invalid_argument, "weight",
             std::string("a group range representable by ") + std::string(dtype_name(opt.scale_dtype)) + " scales",
             "scale " + std::to_string(s) + " for row " + std::to_string(n) + ", group " + std::to_string(g));
      sc[n * G + g] = sbits;
      int z = 8;
      if (asym) {
        z = static_cast<int>(std::clamp(std::nearbyint(-mn / ss), 0.f, 15.f));
        auto& zw = reinterpret_cast<std::uint32_t&>(out.zeros().ptr<std::int32_t>()[(n / 8) * G + g]);
        zw |= static_cast<std::uint32_t>(z) << (4 * (n % 8));
      }
      for (std::int64_t i = 0; i < gl; ++i) {
        float q = std::clamp(std::nearbyint(x[static_cast<std::size_t>(i)] / ss) + static_cast<float>(z), 0.f, 15.f);
        std::int64_t k = g * gl + i;
        reinterpret_cast<std::uint32_t&>(qw[n * (K / 8) + k / 8]) |= static_cast<std::uint32_t>(q) << (4 * (k % 8));
      }
    }
  if (has_bias) detail::copy_bias(bias, N, out.bias(), "bias");
  return out;
}

}  // namespace w4a16::formats
