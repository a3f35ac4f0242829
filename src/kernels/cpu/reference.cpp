// CPU reference GEMM (contract in reference.hpp). Readability over speed: this is the oracle.
#include "reference.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::kernels::cpu {

namespace detail {

namespace {
std::string dtype_list(std::initializer_list<DType> allowed) {
  std::string s;
  std::size_t i = 0;
  for (DType d : allowed) {
    if (i > 0) s += (i + 1 == allowed.size()) ? " or " : ", ";
    s += dtype_name(d);
    ++i;
  }
  return s;
}
}  // namespace

void check_matrix(const TensorView& t, std::string_view arg, std::string_view dims, std::int64_t rows,
                  std::int64_t cols, std::initializer_list<DType> allowed) {
  std::string want_shape = std::string(dims) + " = [" + (rows < 0 ? std::string("M") : std::to_string(rows)) + ", " +
                           std::to_string(cols) + "]";
  if (!t.defined()) fail(ErrorCode::invalid_argument, arg, dtype_list(allowed) + " " + want_shape, "no tensor");
  if (t.device != Device::cpu)
    fail(ErrorCode::invalid_argument, arg, "a host (cpu) tensor " + want_shape, describe(t));
  bool dtype_ok = false;
  for (DType d : allowed) dtype_ok = dtype_ok || t.dtype == d;
  if (!dtype_ok) fail(ErrorCode::dtype_mismatch, arg, dtype_list(allowed) + " " + want_shape, describe(t));
  if (t.rank != 2 || (rows >= 0 && t.shape[0] != rows) || t.shape[1] != cols || t.shape[0] < 0)
    fail(ErrorCode::shape_mismatch, arg, std::string(dtype_name(t.dtype)) + " " + want_shape, describe(t));
  const std::int64_t m = t.shape[0];
  // A stride is only observable along an extent > 1; an [M, 1] or [1, K] view may carry any.
  if (cols > 1 && t.stride[1] != 1)
    fail(ErrorCode::layout_mismatch, arg, "inner stride 1 (each row contiguous)", describe(t));
  if (m > 1 && t.stride[0] < cols)
    fail(ErrorCode::layout_mismatch, arg, "row stride >= " + std::to_string(cols) + " (rows may not overlap)",
         describe(t));
  if (t.data == nullptr && m * cols > 0) fail(ErrorCode::invalid_argument, arg, "a tensor with data", "a null pointer");
}

void check_host_weights(const CanonicalView& w, std::string_view arg) {
  const std::string a(arg);
  w.spec.validate(a + ".spec");
  if (w.device != Device::cpu)
    fail(ErrorCode::invalid_argument, a, "host (cpu) weights", std::string("weights on ") + std::string(device_name(w.device)));
  if (w.qweight == nullptr) fail(ErrorCode::invalid_argument, a + ".qweight", "int32 [N, K/8]", "a null pointer");
  if (w.scales == nullptr) fail(ErrorCode::invalid_argument, a + ".scales", "float16 or bfloat16 [N, G]", "a null pointer");
  if (!is_activation_dtype(w.scale_dtype))
    fail(ErrorCode::dtype_mismatch, a + ".scales", "float16 or bfloat16", std::string(dtype_name(w.scale_dtype)));
  if (w.spec.has_zeros() != w.zeros.defined())
    fail(ErrorCode::invalid_argument, a + ".zeros",
         w.spec.has_zeros() ? "int32 [N/8, G] packed zero points for uint4" : "no zero points for uint4b8",
         w.zeros.defined() ? "a zero-point tensor" : "no tensor");
}

}  // namespace detail

namespace {
// Reads element (r, c) of a host float16/bfloat16/float32 matrix as a double.
double load(const TensorView& t, std::int64_t r, std::int64_t c) {
  const std::int64_t off = r * t.stride[0] + c * t.stride[1];
  if (t.dtype == DType::f32) return t.ptr<const float>()[off];
  return f16x_to_float(t.dtype, t.ptr<const std::uint16_t>()[off]);
}
void store(const TensorView& t, std::int64_t r, std::int64_t c, double v) {
  const std::int64_t off = r * t.stride[0] + c * t.stride[1];
  if (t.dtype == DType::f32)
    t.ptr<float>()[off] = static_cast<float>(v);
  else
    t.ptr<std::uint16_t>()[off] = float_to_f16x(t.dtype, static_cast<float>(v));
}
}  // namespace

void reference_gemm(const CanonicalView& w, const TensorView& x, const TensorView& out) {
  detail::check_host_weights(w, "w");
  const std::int64_t N = w.spec.n, K = w.spec.k;
  detail::check_matrix(x, "x", "[M, K]", -1, K, {DType::f16, DType::bf16, DType::f32});
  const std::int64_t M = x.shape[0];
  detail::check_matrix(out, "out", "[M, N]", M, N, {DType::f16, DType::bf16, DType::f32});
  if (M == 0) return;

  // Rows of x are taken kRows at a time so that the f64 copy stays small for any M.
  constexpr std::int64_t kRows = 64;
  std::vector<double> xp(static_cast<std::size_t>(std::min(M, kRows) * K));
  std::vector<double> wrow(static_cast<std::size_t>(K));
  for (std::int64_t m0 = 0; m0 < M; m0 += kRows) {
    const std::int64_t rows = std::min(kRows, M - m0);
    // xp[r][k'] = x[m0 + r, perm[k']]: x in the canonical column order of W (FORMATS.md, act-order).
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t kk = 0; kk < K; ++kk)
        xp[static_cast<std::size_t>(r * K + kk)] = load(x, m0 + r, w.act_order() ? w.perm[kk] : kk);
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t kk = 0; kk < K; ++kk) wrow[static_cast<std::size_t>(kk)] = w.w(n, kk);  // (q - z) * s, exact in fp32
      const double b = w.has_bias() ? f16x_to_float(w.scale_dtype, w.bias[n]) : 0.0;
      for (std::int64_t r = 0; r < rows; ++r) {
        double acc = b;
        const double* xr = &xp[static_cast<std::size_t>(r * K)];
        for (std::int64_t kk = 0; kk < K; ++kk) acc += xr[kk] * wrow[static_cast<std::size_t>(kk)];
        store(out, m0 + r, n, acc);
      }
    }
  }
}

}  // namespace w4a16::kernels::cpu
