// quantize_rtn: the error bound |w - dequant| <= s/2, the scale rule of formats.hpp, exact
// reproduction of representable weights, and rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "format_test_util.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"

using namespace w4a16;
using test::expect_error;

namespace {
// Weights [N, K] as raw storage of dtype dt, plus their exact values as doubles.
struct Weights {
  std::vector<std::uint32_t> raw;  // wide enough for f32; 16-bit types use the low half of a
  std::vector<std::uint16_t> raw16;
  std::vector<double> value;
  DType dt;
  TensorView view(std::int64_t n, std::int64_t k) {
    return dt == DType::f32 ? TensorView(raw.data(), dt, {n, k}) : TensorView(raw16.data(), dt, {n, k});
  }
};
Weights make_weights(const std::vector<float>& v, DType dt) {
  Weights w;
  w.dt = dt;
  for (float f : v) {
    if (dt == DType::f32) {
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      w.raw.push_back(u);
      w.value.push_back(f);
    } else {
      std::uint16_t b = float_to_f16x(dt, f);
      w.raw16.push_back(b);
      w.value.push_back(f16x_to_float(dt, b));
    }
  }
  return w;
}
}  // namespace

TEST(QuantizeRtn, ErrorIsAtMostHalfAStepAndScalesFollowTheRule) {
  struct Case { std::int64_t n, k; int g; };
  for (Case c : {Case{40, 288, 32}, Case{24, 192, 64}, Case{16, 384, 128}, Case{8, 768, 256}, Case{24, 264, -1}})
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (DType wdt : {DType::f32, DType::f16, DType::bf16})
        for (DType sdt : {DType::f16, DType::bf16}) {
          SCOPED_TRACE("N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + " g=" + std::to_string(c.g) + " " +
                       std::string(scalar_type_name(st)) + " w " + std::string(dtype_name(wdt)) + " s " +
                       std::string(dtype_name(sdt)));
          std::normal_distribution<float> nd(0.f, 0.05f);
          std::uniform_real_distribution<float> shift(-0.1f, 0.1f);
          std::vector<float> v(static_cast<std::size_t>(c.n * c.k));
          for (std::int64_t r = 0; r < c.n; ++r) {
            float off = r % 3 == 0 ? shift(test::rng()) : 0.f;  // some rows all-positive/negative-ish
            for (std::int64_t k = 0; k < c.k; ++k) v[static_cast<std::size_t>(r * c.k + k)] = nd(test::rng()) + off;
          }
          Weights w = make_weights(v, wdt);
          QuantizedLinear q = formats::quantize_rtn(w.view(c.n, c.k), {c.g, st, sdt});
          ASSERT_EQ(q.spec().scalar, st);
          ASSERT_EQ(q.scale_dtype(), sdt);
          std::vector<double> dq = test::dequant_f64(q);
          const std::int64_t gl = c.g == -1 ? c.k : c.g, G = c.k / gl;
          const double ulp = sdt == DType::f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
          for (std::int64_t r = 0; r < c.n; ++r)
            for (std::int64_t g = 0; g < G; ++g) {
              double mn = 0, mx = 0;
              for (std::int64_t i = 0; i < gl; ++i) {
                double x = w.value[static_cast<std::size_t>(r * c.k + g * gl + i)];
                mn = std::min(mn, x);
                mx = std::max(mx, x);
              }
              double sref = st == ScalarType::uint4 ? (mx - mn) / 15 : 2 * std::max(mx, -mn) / 15;
              double s = f16x_to_float(sdt, q.scales().ptr<std::uint16_t>()[r * G + g]);
              // Rounded up to the scale dtype: s >= sref, and less than one ulp above it.
              ASSERT_GE(s, sref * (1 - 1e-7)) << "row " << r << " group " << g;
              ASSERT_LE(s, sref * (1 + ulp) + 1e-30) << "row " << r << " group " << g;
              for (std::int64_t i = 0; i < gl; ++i) {
                std::size_t at = static_cast<std::size_t>(r * c.k + g * gl + i);
                ASSERT_LE(std::abs(w.value[at] - dq[at]), s / 2 * (1 + 1e-5)) << "row " << r << " k " << g * gl + i;
              }
            }
        }
}

TEST(QuantizeRtn, ReproducesRepresentableWeightsExactly) {
  // w = (q - z) * s with every group holding q = 0 and q = 15: min = -z s, max = (15 - z) s,
  // so the rule gives back s, z and q exactly.
  for (int g : {32, 64, 128, 256, -1})
    for (DType sdt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE("g=" + std::to_string(g) + " " + std::string(dtype_name(sdt)));
      QuantSpec spec{16, 512, g, ScalarType::uint4};
      QuantizedLinear ref = test::random_linear(spec, sdt, false, false);
      CanonicalView rv = ref.view();
      formats::Unpacked u = formats::unpack(rv);
      const std::int64_t gl = spec.group_len();
      for (std::int64_t n = 0; n < spec.n; ++n)
        for (std::int64_t g0 = 0; g0 < spec.k; g0 += gl) {
          u.q[static_cast<std::size_t>(n * spec.k + g0)] = 0;
          u.q[static_cast<std::size_t>(n * spec.k + g0 + 1)] = 15;
        }
      ref = formats::pack(u);
      std::vector<double> wd = test::dequant_f64(ref);
      std::vector<float> wf(wd.begin(), wd.end());  // exact: (q - z) * s fits in fp32
      for (std::size_t i = 0; i < wd.size(); ++i) ASSERT_EQ(static_cast<double>(wf[i]), wd[i]);
      Weights w = make_weights(wf, DType::f32);
      QuantizedLinear q = formats::quantize_rtn(w.view(spec.n, spec.k), {g, ScalarType::uint4, sdt});
      EXPECT_EQ(test::dequant_f64(q), wd);
      EXPECT_EQ(std::memcmp(q.scales().data(), ref.scales().data(), ref.scales().nbytes()), 0);
      EXPECT_EQ(std::memcmp(q.zeros().data(), ref.zeros().data(), ref.zeros().nbytes()), 0);
      EXPECT_EQ(std::memcmp(q.qweight().data(), ref.qweight().data(), ref.qweight().nbytes()), 0);
    }
}

TEST(QuantizeRtn, ZeroGroupsAndBias) {
  std::vector<float> v(16 * 64, 0.f);
  for (int k = 0; k < 32; ++k) v[static_cast<std::size_t>(64 + k)] = 0.25f;  // row 1, group 0 all positive
  Weights w = make_weights(v, DType::f32);
  std::vector<float> b(16);
  for (int i = 0; i < 16; ++i) b[static_cast<std::size_t>(i)] = 0.1f * static_cast<float>(i);
  for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8}) {
    QuantizedLinear q =
        formats::quantize_rtn(w.view(16, 64), {32, st, DType::bf16}, TensorView(b.data(), DType::f32, {16}));
    CanonicalView cv = q.view();
    EXPECT_EQ(cv.s(0, 0), 1.f);  // all-zero group: s = 1 keeps scales finite
    std::vector<double> dq = test::dequant_f64(q);
    for (std::size_t i = 0; i < dq.size(); ++i) ASSERT_NEAR(dq[i], v[i], cv.s(static_cast<std::int64_t>(i / 64), (i % 64) / 32) / 2);
    EXPECT_EQ(dq[0], 0.0);
    ASSERT_TRUE(q.has_bias());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(q.bias().ptr<std::uint16_t>()[i], float_to_bf16(b[static_cast<std::size_t>(i)]));
  }
}

TEST(QuantizeRtn, Rejections) {
  std::vector<float> v(16 * 64, 0.5f);
  auto view = [&](std::int64_t n, std::int64_t k) { return TensorView(v.data(), DType::f32, {n, k}); };
  expect_error([&] { formats::quantize_rtn(view(8, 72), {32, ScalarType::uint4, DType::f16}); },
               ErrorCode::shape_mismatch, "weight.K");
  expect_error([&] { formats::quantize_rtn(view(12, 64), {32, ScalarType::uint4, DType::f16}); },
               ErrorCode::shape_mismatch, "weight.N");
  EXPECT_NO_THROW(formats::quantize_rtn(view(12, 64), {32, ScalarType::uint4b8, DType::f16}));  // no zeros: any N
  expect_error([&] { formats::quantize_rtn(view(16, 64), {48, ScalarType::uint4, DType::f16}); },
               ErrorCode::unsupported, "group_size");
  expect_error([&] { formats::quantize_rtn(view(16, 64), {32, ScalarType::uint4, DType::f32}); },
               ErrorCode::dtype_mismatch, "scale_dtype");
  expect_error([&] { formats::quantize_rtn(TensorView(v.data(), DType::i32, {16, 64}), {32, ScalarType::uint4, DType::f16}); },
               ErrorCode::dtype_mismatch, "weight");
  expect_error([&] { formats::quantize_rtn(TensorView(v.data(), DType::f32, {1024}), {32, ScalarType::uint4, DType::f16}); },
               ErrorCode::shape_mismatch, "weight");
  {
    std::vector<float> bad = v;
    bad[100] = std::numeric_limits<float>::quiet_NaN();
    expect_error([&] { formats::quantize_rtn(TensorView(bad.data(), DType::f32, {16, 64}), {32, ScalarType::uint4, DType::f16}); },
                 ErrorCode::invalid_argument, "weight");
  }
  {
    std::vector<float> big(16 * 64, 1e6f);  // s = 1e6 / 7.5 overflows float16
    expect_error([&] { formats::quantize_rtn(TensorView(big.data(), DType::f32, {16, 64}), {32, ScalarType::uint4b8, DType::f16}); },
                 ErrorCode::invalid_argument, "weight");
    EXPECT_NO_THROW(formats::quantize_rtn(TensorView(big.data(), DType::f32, {16, 64}), {32, ScalarType::uint4b8, DType::bf16}));
  }
  {
    std::vector<float> b(8);
    expect_error([&] { formats::quantize_rtn(view(16, 64), {32, ScalarType::uint4, DType::f16}, TensorView(b.data(), DType::f32, {8})); },
                 ErrorCode::shape_mismatch, "bias");
  }
}
