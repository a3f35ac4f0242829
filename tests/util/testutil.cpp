#include "testutil.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <set>

#include "w4a16/core/half.hpp"

namespace w4a16::test {

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const char* e = std::getenv("W4A16_SEED");
    std::uint64_t v = e ? std::strtoull(e, nullptr, 10)
                        : static_cast<std::uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    std::fprintf(stderr, "[w4a16 test] W4A16_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(seed());
  return g;
}

QuantizedLinear random_linear(const QuantSpec& spec, DType scale_dtype, bool bias, bool act_order, float scale_mag) {
  QuantizedLinear q(spec, scale_dtype, bias, act_order);
  auto& g = rng();
  std::uniform_int_distribution<std::uint32_t> word;
  for (std::int64_t i = 0; i < q.qweight().numel(); ++i) q.qweight().ptr<std::int32_t>()[i] = static_cast<std::int32_t>(word(g));
  if (spec.has_zeros())
    for (std::int64_t i = 0; i < q.zeros().numel(); ++i) q.zeros().ptr<std::int32_t>()[i] = static_cast<std::int32_t>(word(g));
  std::uniform_real_distribution<float> su(0.5f, 1.5f);
  for (std::int64_t i = 0; i < q.scales().numel(); ++i)
    q.scales().ptr<std::uint16_t>()[i] = float_to_f16x(scale_dtype, su(g) * scale_mag);
  std::normal_distribution<float> nd(0.f, 1.f);
  if (bias)
    for (std::int64_t i = 0; i < spec.n; ++i) q.bias().ptr<std::uint16_t>()[i] = float_to_f16x(scale_dtype, nd(g));
  if (act_order) {
    auto* p = q.perm().ptr<std::int32_t>();
    std::iota(p, p + spec.k, 0);
    std::shuffle(p, p + spec.k, g);
  }
  return q;
}

std::vector<std::uint16_t> random_act(std::int64_t m, std::int64_t k, DType dtype, std::int64_t row_stride) {
  if (row_stride == 0) row_stride = k;
  std::vector<std::uint16_t> x(static_cast<std::size_t>(m * row_stride), poison_bits(dtype));
  std::normal_distribution<float> nd(0.f, 1.f);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) x[static_cast<std::size_t>(i * row_stride + j)] = float_to_f16x(dtype, nd(rng()));
  return x;
}

std::vector<double> gemm_f64(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                             std::int64_t m, std::int64_t n, std::int64_t k) {
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = b.empty() ? 0.0 : b[static_cast<std::size_t>(j)];
      const double* xr = &x[static_cast<std::size_t>(i * k)];
      const double* wr = &w[static_cast<std::size_t>(j * k)];
      for (std::int64_t t = 0; t < k; ++t) acc += xr[t] * wr[t];
      y[static_cast<std::size_t>(i * n + j)] = acc;
    }
  return y;
}

std::vector<double> dequant_f64(const QuantizedLinear& w) {
  const QuantSpec& s = w.spec();
  const std::int64_t N = s.n, K = s.k, G = s.groups(), gl = s.group_len();
  const auto* qw = w.qweight().ptr<std::int32_t>();
  const auto* sc = w.scales().ptr<std::uint16_t>();
  const auto* zp = s.has_zeros() ? w.zeros().ptr<std::int32_t>() : nullptr;
  const auto* perm = w.act_order() ? w.perm().ptr<std::int32_t>() : nullptr;
  std::vector<double> out(static_cast<std::size_t>(N * K));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t kk = 0; kk < K; ++kk) {
      std::uint32_t word = static_cast<std::uint32_t>(qw[n * (K / 8) + kk / 8]);
      int q = static_cast<int>((word >> (4 * (kk % 8))) & 15u);
      std::int64_t g = kk / gl;
      int z = 8;
      if (zp) z = static_cast<int>((static_cast<std::uint32_t>(zp[(n / 8) * G + g]) >> (4 * (n % 8))) & 15u);
      double sv = f16x_to_float(w.scale_dtype(), sc[n * G + g]);
      std::int64_t orig = perm ? perm[kk] : kk;
      out[static_cast<std::size_t>(n * K + orig)] = (q - z) * sv;
    }
  return out;
}

std::vector<double> bias_f64(const QuantizedLinear& w) {
  std::vector<double> b;
  if (!w.has_bias()) return b;
  for (std::int64_t n = 0; n < w.spec().n; ++n) b.push_back(f16x_to_float(w.scale_dtype(), w.bias().ptr<std::uint16_t>()[n]));
  return b;
}

QuantizedLinear with_scale_dtype(const QuantizedLinear& w, DType dtype) {
  QuantizedLinear r(w.spec(), dtype, w.has_bias(), w.act_order());
  std::memcpy(r.qweight().data(), w.qweight().data(), w.qweight().nbytes());
  if (w.spec().has_zeros()) std::memcpy(r.zeros().data(), w.zeros().data(), w.zeros().nbytes());
  if (w.act_order()) std::memcpy(r.perm().data(), w.perm().data(), w.perm().nbytes());
  auto convert = [&](const HostTensor& from, HostTensor& to) {
    for (std::int64_t i = 0; i < from.numel(); ++i)
      to.ptr<std::uint16_t>()[i] = float_to_f16x(dtype, f16x_to_float(w.scale_dtype(), from.ptr<std::uint16_t>()[i]));
  };
  convert(w.scales(), r.scales());
  if (w.has_bias()) convert(w.bias(), r.bias());
  return r;
}

std::vector<double> to_f64(const std::uint16_t* p, DType dtype, std::int64_t m, std::int64_t k, std::int64_t row_stride) {
  std::vector<double> v(static_cast<std::size_t>(m * k));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < k; ++j) v[static_cast<std::size_t>(i * k + j)] = f16x_to_float(dtype, p[i * row_stride + j]);
  return v;
}

std::vector<std::int64_t> sample_rows(std::int64_t m) {
  std::vector<std::int64_t> r;
  if (m <= 128) {
    r.resize(static_cast<std::size_t>(std::max<std::int64_t>(m, 0)));
    std::iota(r.begin(), r.end(), 0);
    return r;
  }
  std::set<std::int64_t> s = {m / 2, m - 2, m - 1};
  for (std::int64_t edge : {0, 1, 63, 64, 127, 128, 255, 256})
    if (edge < m) s.insert(edge);
  std::uniform_int_distribution<std::int64_t> d(0, m - 1);
  while (s.size() < 48) s.insert(d(rng()));
  return {s.begin(), s.end()};
}

double rel_error(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

ScopedEnv::ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
  if (const char* v = std::getenv(name)) saved_ = v;
  if (value)
    ::setenv(name, value->c_str(), 1);
  else
    ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (saved_)
    ::setenv(name_.c_str(), saved_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

std::vector<std::pair<std::string, HostTensor>> perturbed_variants(const HostTensor& t, const std::vector<DType>& dtypes) {
  std::vector<std::pair<std::string, HostTensor>> v;
  const std::vector<std::int64_t>& shape = t.shape();
  for (std::size_t d = 0; d < shape.size(); ++d)
    for (const std::int64_t to : {shape[d] + 1, 2 * shape[d], std::max<std::int64_t>(1, shape[d] / 2)}) {
      if (to == shape[d]) continue;  // halving a dimension of 1
      std::vector<std::int64_t> s = shape;
      s[d] = to;
      v.emplace_back("dim " + std::to_string(d) + " -> " + std::to_string(to), HostTensor(t.dtype(), s));
    }
  for (DType dt : dtypes)
    if (dt != t.dtype()) v.emplace_back("dtype " + std::string(dtype_name(dt)), HostTensor(dt, shape));
  std::vector<std::int64_t> more = shape;
  more.push_back(1);
  v.emplace_back("a dimension added", HostTensor(t.dtype(), more));
  if (shape.size() > 1) v.emplace_back("a dimension dropped", HostTensor(t.dtype(), {t.numel()}));
  for (auto& [what, h] : v)
    if (h.nbytes()) std::memset(h.data(), 0, h.nbytes());
  return v;
}

}  // namespace w4a16::test
