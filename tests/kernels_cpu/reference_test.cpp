// reference_gemm against an independent f64 computation (test::dequant_f64 + test::gemm_f64,
// straight from the FORMATS.md definition) and its rejection paths.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu_test_common.hpp"
#include "reference.hpp"

namespace w4a16::test {
namespace {

using kernels::cpu::reference_gemm;

// The reference rounds only once, at the store: each element is within half an ulp of the
// f64 value (plus the f64 -> f32 step before f16/bf16: 2^-24 relative), or the dtype's
// smallest subnormal spacing near 0.
double store_bound(DType out, double ref) {
  const double rel = out == DType::f32 ? 0x1p-24 : out == DType::bf16 ? 0x1p-8 + 0x1p-24 : 0x1p-11 + 0x1p-24;
  const double abs_min = out == DType::f32 ? 1e-40 : out == DType::bf16 ? 1e-38 : 0x1p-25;
  return rel * std::fabs(ref) + abs_min;
}

struct Case {
  QuantSpec spec;
  DType scale_dtype, x_dtype, out_dtype;
  bool bias, act_order;
  std::int64_t m, x_pad, out_pad;
};

std::string describe(const Case& c) {
  return c.spec.describe() + " scales=" + std::string(dtype_name(c.scale_dtype)) + " x=" + std::string(dtype_name(c.x_dtype)) +
         " out=" + std::string(dtype_name(c.out_dtype)) + (c.bias ? " bias" : "") + (c.act_order ? " act_order" : "") +
         " M=" + std::to_string(c.m) + " x_pad=" + std::to_string(c.x_pad) + " out_pad=" + std::to_string(c.out_pad);
}

// x in any of f16/bf16/f32, as raw storage plus its f64 values ([M, K], unstrided).
struct Act {
  std::vector<std::uint16_t> h;
  std::vector<float> f;
  std::vector<double> d;
  TensorView view;
};
Act make_act(DType dt, std::int64_t m, std::int64_t k, std::int64_t pad) {
  Act a;
  const std::int64_t stride = k + pad;
  if (dt == DType::f32) {
    std::normal_distribution<float> nd(0.f, 1.f);
    a.f.assign(static_cast<std::size_t>(m * stride) + 1, std::nanf(""));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < k; ++j) {
        float v = nd(rng());
        a.f[static_cast<std::size_t>(i * stride + j)] = v;
        a.d.push_back(v);
      }
    a.view = TensorView(a.f.data(), dt, {m, k});
  } else {
    a.h = random_act(m, k, dt, stride);
    a.h.push_back(poison_bits(dt));
    a.d = to_f64(a.h.data(), dt, m, k, stride);
    a.view = TensorView(a.h.data(), dt, {m, k});
  }
  a.view.stride[0] = stride;
  return a;
}

void run_case(const Case& c) {
  SCOPED_TRACE(describe(c) + " W4A16_SEED=" + std::to_string(seed()));
  QuantizedLinear w = random_linear(c.spec, c.scale_dtype, c.bias, c.act_order);
  Act x = make_act(c.x_dtype, c.m, c.spec.k, c.x_pad);
  PoisonedMatrix out(c.out_dtype, c.m, c.spec.n, c.out_pad);
  reference_gemm(w.view(), x.view, out.view());

  const std::vector<double> ref = gemm_f64(x.d, dequant_f64(w), bias_f64(w), c.m, c.spec.n, c.spec.k);
  EXPECT_EQ(out.unwritten(), 0) << "elements of out left poisoned";
  EXPECT_EQ(out.pad_touched(), 0) << "writes outside [M, N]";
  std::int64_t worst = -1;
  double worst_excess = 0;
  for (std::int64_t i = 0; i < c.m * c.spec.n; ++i) {
    const double r = ref[static_cast<std::size_t>(i)];
    const double o = out.value(i / c.spec.n, i % c.spec.n);
    const double excess = std::fabs(o - r) / store_bound(c.out_dtype, r);
    if (!(excess <= 1.0) && (worst < 0 || excess > worst_excess)) worst = i, worst_excess = excess;
  }
  EXPECT_LT(worst, 0) << "element " << worst << " off by " << worst_excess << " x its rounding bound";
}

TEST(CpuReference, MatchesF64OracleOnEveryConfiguration) {
  const DType dts[] = {DType::f16, DType::bf16, DType::f32};
  const std::int64_t ms[] = {1, 3, 5, 7, 13};
  std::uniform_int_distribution<int> coin(0, 1), mi(0, 4), pad(0, 3);
  int cases = 0;
  for (int gs : kGroupSizes)
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (DType xd : dts)
        for (DType od : dts) {
          Case c{random_spec(gs, st), coin(rng()) ? DType::bf16 : DType::f16, xd, od, coin(rng()) == 1,
                 coin(rng()) == 1, ms[mi(rng())], 8 * pad(rng()) + pad(rng()), pad(rng())};
          run_case(c);
          ++cases;
        }
  EXPECT_EQ(cases, 5 * 2 * 3 * 3);
}

TEST(CpuReference, BiasAndActOrderEachMatter) {
  // Every combination of bias and act-order at one shape, so neither is only covered by chance.
  for (bool bias : {false, true})
    for (bool ao : {false, true})
      for (int gs : {32, 128, kChannelwise})
        run_case(Case{random_spec(gs, ScalarType::uint4), DType::f16, DType::f16, DType::f32, bias, ao, 4, 0, 0});
}

TEST(CpuReference, MZeroWritesNothing) {
  QuantSpec s{24, 64, 32, ScalarType::uint4};
  QuantizedLinear w = random_linear(s, DType::f16, true, true);
  TensorView x(nullptr, DType::f16, {0, 64});
  PoisonedMatrix out(DType::f16, 1, 24, 0);  // one guard row that must stay poisoned
  TensorView ov = out.view();
  ov.shape[0] = 0;
  EXPECT_NO_THROW(reference_gemm(w.view(), x, ov));
  EXPECT_EQ(out.unwritten(), 24);
}

class CpuReferenceRejects : public ::testing::Test {
 protected:
  QuantSpec s{16, 64, 32, ScalarType::uint4};
  QuantizedLinear w = random_linear(s, DType::f16, false, false);
  std::vector<std::uint16_t> xs = random_act(3, 64, DType::f16);
  std::vector<std::uint16_t> os = std::vector<std::uint16_t>(3 * 16 * 2);
  std::vector<std::int32_t> ints = std::vector<std::int32_t>(3 * 64);
  TensorView x() { return TensorView(xs.data(), DType::f16, {3, 64}); }
  TensorView out() { return TensorView(os.data(), DType::f16, {3, 16}); }
};

TEST_F(CpuReferenceRejects, XWrongDtype) {
  expect_error([&] { reference_gemm(w.view(), TensorView(ints.data(), DType::i32, {3, 64}), out()); },
               ErrorCode::dtype_mismatch, "x");
}
TEST_F(CpuReferenceRejects, XKMismatch) {
  expect_error([&] { reference_gemm(w.view(), TensorView(xs.data(), DType::f16, {3, 56}), out()); },
               ErrorCode::shape_mismatch, "x");
}
TEST_F(CpuReferenceRejects, XWrongRank) {
  expect_error([&] { reference_gemm(w.view(), TensorView(xs.data(), DType::f16, {3, 64, 1}), out()); },
               ErrorCode::shape_mismatch, "x");
}
TEST_F(CpuReferenceRejects, XNonUnitInnerStride) {
  TensorView v(xs.data(), DType::f16, {1, 64});
  v.stride[1] = 2;
  v.stride[0] = 128;
  expect_error([&] { reference_gemm(w.view(), v, TensorView(os.data(), DType::f16, {1, 16})); },
               ErrorCode::layout_mismatch, "x");
}
TEST_F(CpuReferenceRejects, XOverlappingRows) {
  TensorView v = x();
  v.stride[0] = 32;
  expect_error([&] { reference_gemm(w.view(), v, out()); }, ErrorCode::layout_mismatch, "x");
}
TEST_F(CpuReferenceRejects, XOnDevice) {
  TensorView v = x();
  v.device = Device::cuda;
  expect_error([&] { reference_gemm(w.view(), v, out()); }, ErrorCode::invalid_argument, "x");
}
TEST_F(CpuReferenceRejects, XNull) {
  expect_error([&] { reference_gemm(w.view(), TensorView(nullptr, DType::f16, {3, 64}), out()); },
               ErrorCode::invalid_argument, "x");
}
TEST_F(CpuReferenceRejects, OutWrongShape) {
  expect_error([&] { reference_gemm(w.view(), x(), TensorView(os.data(), DType::f16, {3, 8})); },
               ErrorCode::shape_mismatch, "out");
  expect_error([&] { reference_gemm(w.view(), x(), TensorView(os.data(), DType::f16, {2, 16})); },
               ErrorCode::shape_mismatch, "out");
}
TEST_F(CpuReferenceRejects, OutWrongDtype) {
  expect_error([&] { reference_gemm(w.view(), x(), TensorView(ints.data(), DType::i32, {3, 16})); },
               ErrorCode::dtype_mismatch, "out");
}
TEST_F(CpuReferenceRejects, OutNonUnitInnerStride) {
  TensorView o(os.data(), DType::f16, {3, 16});
  o.stride[1] = 2;
  o.stride[0] = 32;
  expect_error([&] { reference_gemm(w.view(), x(), o); }, ErrorCode::layout_mismatch, "out");
}
TEST_F(CpuReferenceRejects, WeightsOnDevice) {
  CanonicalView v = w.view();
  v.device = Device::cuda;
  expect_error([&] { reference_gemm(v, x(), out()); }, ErrorCode::invalid_argument, "w");
}
TEST_F(CpuReferenceRejects, MessageSaysExpectedAndGot) {
  try {
    reference_gemm(w.view(), TensorView(xs.data(), DType::f16, {3, 56}), out());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("64"), std::string::npos) << m;  // expected K
    EXPECT_NE(m.find("[3, 56]"), std::string::npos) << m;  // what was given
  }
}

}  // namespace
}  // namespace w4a16::test
