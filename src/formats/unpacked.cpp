// Unpacked form (one byte per 4-bit value) <-> canonical, and dequantization to fp32.
#include <cstring>

#include "detail.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"

namespace w4a16::formats {

void detail::copy_bias(const TensorView& bias, std::int64_t n, HostTensor& dst, const std::string& arg) {
  if (bias.dtype != DType::f16 && bias.dtype != DType::bf16 && bias.dtype != DType::f32)
    fail(ErrorCode::dtype_mismatch, arg, "float16, bfloat16 or float32 [N] = [" + std::to_string(n) + "]",
         describe(bias));
  check_input(bias, arg, bias.dtype, 1, "[N]");
  check_shape(bias, arg, {n}, "[N]");
  auto* out = dst.ptr<std::uint16_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (bias.dtype == dst.dtype()) {
      out[i] = load_u16(bias.data, i);
    } else {
      float v;
      if (bias.dtype == DType::f32) {
        std::uint32_t u = load_u32(bias.data, i);
        std::memcpy(&v, &u, 4);
      } else {
        v = f16x_to_float(bias.dtype, load_u16(bias.data, i));
      }
      out[i] = float_to_f16x(dst.dtype(), v);
    }
  }
}

Unpacked unpack(const CanonicalView& w) {
  detail::check_host_view(w.device, "unpack");
  const std::int64_t N = w.spec.n, K = w.spec.k, G = w.spec.groups();
  Unpacked u;
  u.spec = w.spec;
  u.q.resize(static_cast<std::size_t>(N * K));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) u.q[static_cast<std::size_t>(n * K + k)] = static_cast<std::uint8_t>(w.q(n, k));
  if (w.spec.has_zeros()) {
    u.z.resize(static_cast<std::size_t>(N * G));
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t g = 0; g < G; ++g) u.z[static_cast<std::size_t>(n * G + g)] = static_cast<std::uint8_t>(w.z(n, g));
  }
  u.scales = HostTensor(w.scale_dtype, {N, G});
  std::memcpy(u.scales.data(), w.scales, u.scales.nbytes());
  if (w.has_bias()) {
    u.bias = HostTensor(w.scale_dtype, {N});
    std::memcpy(u.bias.data(), w.bias, u.bias.nbytes());
  }
  if (w.act_order()) u.perm.assign(w.perm, w.perm + K);
  return u;
}

QuantizedLinear pack(const Unpacked& u) {
  const QuantSpec& spec = u.spec;
  spec.validate("unpacked.spec");
  const std::int64_t N = spec.n, K = spec.k, G = spec.groups();
  if (u.q.size() != static_cast<std::size_t>(N * K))
    fail(ErrorCode::shape_mismatch, "unpacked.q", "N * K = " + std::to_string(N * K) + " values ([N, K] row-major)",
         std::to_string(u.q.size()) + " values");
  for (std::size_t i = 0; i < u.q.size(); ++i)
    if (u.q[i] > 15)
      fail(ErrorCode::invalid_argument, "unpacked.q", "values 0..15",
           "q[" + std::to_string(i / static_cast<std::size_t>(K)) + ", " + std::to_string(i % static_cast<std::size_t>(K)) +
               "] = " + std::to_string(u.q[i]));
  if (spec.has_zeros()) {
    if (u.z.size() != static_cast<std::size_t>(N * G))
      fail(ErrorCode::shape_mismatch, "unpacked.z", "N * G = " + std::to_string(N * G) + " zero points for uint4",
           std::to_string(u.z.size()) + " values");
    for (std::size_t i = 0; i < u.z.size(); ++i)
      if (u.z[i] > 15)
        fail(ErrorCode::invalid_argument, "unpacked.z", "values 0..15", "z[" + std::to_string(i) + "] = " + std::to_string(u.z[i]));
  } else if (!u.z.empty()) {
    fail(ErrorCode::invalid_argument, "unpacked.z", "no zero points for uint4b8 (z = 8)", std::to_string(u.z.size()) + " values");
  }
  TensorView sv = u.scales.view();
  detail::check_scales(sv, "unpacked.scales", "[N, G]");
  check_shape(sv, "unpacked.scales", {N, G}, "[N, G]");
  const bool has_bias = !u.bias.empty();
  if (has_bias) {
    if (u.bias.dtype() != u.scales.dtype())
      fail(ErrorCode::dtype_mismatch, "unpacked.bias", std::string(dtype_name(u.scales.dtype())) + " [N] (the scales' dtype)",
           describe(u.bias.view()));
    check_shape(u.bias.view(), "unpacked.bias", {N}, "[N]");
  }
  if (!u.perm.empty() && u.perm.size() != static_cast<std::size_t>(K))
    fail(ErrorCode::shape_mismatch, "unpacked.perm", "K = " + std::to_string(K) + " entries or none",
         std::to_string(u.perm.size()) + " entries");

  QuantizedLinear out(spec, u.scales.dtype(), has_bias, !u.perm.empty());
  auto* qw = out.qweight().ptr<std::int32_t>();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < K / 8; ++j) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(u.q[static_cast<std::size_t>(n * K + 8 * j + i)]) << (4 * i);
      qw[n * (K / 8) + j] = static_cast<std::int32_t>(word);
    }
  if (spec.has_zeros()) {
    auto* zp = out.zeros().ptr<std::int32_t>();
    for (std::int64_t r = 0; r < N / 8; ++r)
      for (std::int64_t g = 0; g < G; ++g) {
        std::uint32_t word = 0;
        for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(u.z[static_cast<std::size_t>((8 * r + i) * G + g)]) << (4 * i);
        zp[r * G + g] = static_cast<std::int32_t>(word);
      }
  }
  std::memcpy(out.scales().data(), u.scales.data(), u.scales.nbytes());
  if (has_bias) std::memcpy(out.bias().data(), u.bias.data(), u.bias.nbytes());
  if (!u.perm.empty()) std::memcpy(out.perm().data(), u.perm.data(), u.perm.size() * 4);
  (void)out.view();  // checks that perm is a permutation of 0..K-1
  return out;
}

HostTensor dequantize(const CanonicalView& w) {
  detail::check_host_view(w.device, "dequantize");
  const std::int64_t N = w.spec.n, K = w.spec.k;
  HostTensor out(DType::f32, {N, K});
  float* o = out.ptr<float>();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      std::int64_t orig = w.act_order() ? w.perm[k] : k;
      o[n * K + orig] = w.w(n, k);
    }
  return out;
}

}  // namespace w4a16::formats
