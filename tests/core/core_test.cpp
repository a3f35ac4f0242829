// Core: fp16/bf16 conversion, tensor views, and every rejection path of the canonical contract.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "testutil.hpp"
#include "w4a16/core/canonical.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

using namespace w4a16;

namespace {

// Expects `fn` to throw w4a16::Error with `code` and every fragment in its message.
template <class F>
void expect_error(F&& fn, ErrorCode code, std::initializer_list<const char*> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << "\n  missing: " << f;
  }
}

// Reference fp32 -> fp16 rounding through double arithmetic (independent of half.hpp).
float round_to_half_grid(float f) {
  double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return std::copysign(INFINITY, f);
  int e;
  std::frexp(a, &e);                    // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);       // unbiased exponent of the half, clamped to subnormal range
  double ulp = std::ldexp(1.0, exp - 10);
  double q = std::nearbyint(a / ulp);   // ties to even under the default rounding mode
  return static_cast<float>(std::copysign(q * ulp, static_cast<double>(f)));
}

}  // namespace

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << "half bits " << h;
  }
}

TEST(Half, FloatToHalfRoundsToNearestEven) {
  std::uniform_real_distribution<float> mag(-30.f, 17.f);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(1.0f + static_cast<float>(test::rng()() % 1000000) / 1e6f, static_cast<int>(mag(test::rng())));
    if (i % 2) f = -f;
    float expect = round_to_half_grid(f);
    float got = half_to_float(float_to_half(f));
    ASSERT_EQ(got, expect) << "f = " << f;
  }
  // Exact ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> rounds to even (1).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.f), 0x7c00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
}

TEST(Half, Bf16RoundsToNearestEven) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), h);
  }
  float one_plus_half_ulp = 1.0f + std::ldexp(1.0f, -8);  // halfway between 1 and 1 + 2^-7
  EXPECT_EQ(float_to_bf16(one_plus_half_ulp), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::nextafter(one_plus_half_ulp, 2.f)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(TensorView, ContiguityAndDescribe) {
  std::vector<std::uint16_t> buf(64);
  TensorView t(buf.data(), DType::f16, {4, 16});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(describe(t), "float16 [4, 16]");
  t.shape[1] = 8;  // rows of 8 with a stride of 16
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_row_contiguous());
  t.stride[1] = 2;
  EXPECT_FALSE(t.is_row_contiguous());
}

struct CanonicalFixture : ::testing::Test {
  QuantSpec spec{64, 256, 128, ScalarType::uint4};
  QuantizedLinear q = test::random_linear(spec, DType::f16, true, true);
};

TEST_F(CanonicalFixture, AcceptsAValidLayerAndReadsItsNibbles) {
  CanonicalView v = q.view();
  EXPECT_EQ(v.spec.groups(), 2);
  // The accessor reads nibble i of word (n, j) as q[n, 8j + i] (FORMATS.md).
  std::uint32_t w0 = static_cast<std::uint32_t>(q.qweight().ptr<std::int32_t>()[3 * 32 + 5]);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v.q(3, 40 + i), static_cast<int>((w0 >> (4 * i)) & 15u));
  std::uint32_t z0 = static_cast<std::uint32_t>(q.zeros().ptr<std::int32_t>()[2 * 2 + 1]);  // rows 16..23, group 1
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v.z(16 + i, 1), static_cast<int>((z0 >> (4 * i)) & 15u));
}

TEST_F(CanonicalFixture, RejectsUnpackedFloatZeros) {
  std::vector<std::uint16_t> fz(64 * 2);
  CanonicalTensors t = q.tensors();
  t.zeros = TensorView(fz.data(), DType::f16, {64, 2});
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::layout_mismatch,
               {"zeros: expected int32 [N/8, G] packed 8 x uint4 along N = [8, 2]", "got float16 [64, 2]"});
}

TEST_F(CanonicalFixture, RejectsInt32ZerosOfTheUnpackedShape) {
  std::vector<std::int32_t> z(64 * 2);
  CanonicalTensors t = q.tensors();
  t.zeros = TensorView(z.data(), DType::i32, {64, 2});
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::layout_mismatch, {"zeros", "[8, 2]", "got int32 [64, 2]"});
}

TEST_F(CanonicalFixture, RejectsMissingZerosForUint4AndZerosForUint4b8) {
  CanonicalTensors t = q.tensors();
  t.zeros = TensorView();
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::invalid_argument, {"zeros", "no tensor"});
  QuantSpec sym = spec;
  sym.scalar = ScalarType::uint4b8;
  expect_error([&] { make_canonical_view(q.tensors(), sym); }, ErrorCode::invalid_argument, {"zeros", "uint4b8"});
}

TEST_F(CanonicalFixture, RejectsWrongQweight) {
  CanonicalTensors t = q.tensors();
  std::vector<std::uint16_t> h(64 * 32);
  t.qweight = TensorView(h.data(), DType::f16, {64, 32});
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::dtype_mismatch, {"qweight", "int32", "float16 [64, 32]"});
  t = q.tensors();
  t.qweight.shape[1] = 16;
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::shape_mismatch, {"qweight", "[N, K/8] = [64, 32]"});
}

TEST_F(CanonicalFixture, RejectsMisalignedQweight) {
  std::vector<std::int32_t> buf(64 * 32 + 1);
  CanonicalTensors t = q.tensors();
  t.qweight = TensorView(buf.data() + 1, DType::i32, {64, 32});
  if (reinterpret_cast<std::uintptr_t>(buf.data() + 1) % 16 == 0) t.qweight.data = buf.data() + 2;
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::alignment, {"qweight", "16-byte aligned"});
}

TEST_F(CanonicalFixture, RejectsShapesThatDoNotDivide) {
  QuantSpec s = spec;
  s.k = 200;  // multiple of 8, not of 128
  expect_error([&] { s.validate("weights"); }, ErrorCode::shape_mismatch, {"weights.K", "multiple of the group size 128", "200"});
  s = spec;
  s.n = 60;
  expect_error([&] { s.validate("weights"); }, ErrorCode::shape_mismatch, {"weights.N", "multiple of 8", "60"});
  s.scalar = ScalarType::uint4b8;  // no zero points: N % 8 is free
  EXPECT_NO_THROW(s.validate("weights"));
  s = spec;
  s.k = 132;
  s.group_size = kChannelwise;
  expect_error([&] { s.validate("weights"); }, ErrorCode::shape_mismatch, {"weights.K", "multiple of 8"});
  s = spec;
  s.group_size = 48;
  expect_error([&] { s.validate("weights"); }, ErrorCode::invalid_argument, {"group_size", "48"});
}

TEST_F(CanonicalFixture, RejectsBadPermAndBias) {
  CanonicalTensors t = q.tensors();
  q.perm().ptr<std::int32_t>()[7] = q.perm().ptr<std::int32_t>()[3];
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::invalid_argument, {"perm", "permutation", "repeated"});
  q.perm().ptr<std::int32_t>()[7] = 256;
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::invalid_argument, {"perm[7] = 256"});
  std::vector<std::uint16_t> b(64);
  t = q.tensors();
  t.perm = TensorView();
  t.bias = TensorView(b.data(), DType::bf16, {64});
  expect_error([&] { make_canonical_view(t, spec); }, ErrorCode::dtype_mismatch, {"bias", "float16 [N]", "bfloat16 [64]"});
}

TEST(QuantizedLinear, ChannelwiseHasOneGroupAndCountsBytes) {
  QuantSpec s{24, 96, kChannelwise, ScalarType::uint4b8};
  QuantizedLinear q(s, DType::bf16, false, false);
  EXPECT_EQ(q.scales().shape(), (std::vector<std::int64_t>{24, 1}));
  EXPECT_TRUE(q.zeros().empty());
  EXPECT_EQ(q.nbytes(), 24u * 12 * 4 + 24u * 2);
  EXPECT_EQ(q.view().z(5, 0), 8);  // uint4b8: z = 8
}
