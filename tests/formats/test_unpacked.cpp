// Unpacked form <-> canonical, and dequantize(), against the canonical definition of
// shared/FORMATS.md (nibble i of word (n, j) is q[n, 8j + i]; zeros packed along N).
#include <gtest/gtest.h>

#include "format_test_util.hpp"
#include "spec_pack.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"

using namespace w4a16;
namespace ts = w4a16::test::spec;
using test::expect_error;
using test::same_bytes;

TEST(Unpacked, HandPackedWordUnpacksToItsNibbles) {
  QuantSpec spec{8, 16, kChannelwise, ScalarType::uint4};
  QuantizedLinear w(spec, DType::f16, false, false);
  w.qweight().ptr<std::int32_t>()[0] = 0x76543210;       // row 0: q[0, 0..7] = 0..7
  w.qweight().ptr<std::int32_t>()[1] = static_cast<std::int32_t>(0xfedcba98u);  // q[0, 8..15] = 8..15
  w.zeros().ptr<std::int32_t>()[0] = 0x0000000f;          // z[0] = 15, z[1..7] = 0
  formats::Unpacked u = formats::unpack(w.view());
  for (int k = 0; k < 16; ++k) EXPECT_EQ(u.q[static_cast<std::size_t>(k)], k);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(u.q[static_cast<std::size_t>(16 + k)], 0);  // row 1 untouched
  EXPECT_EQ(u.z[0], 15);
  EXPECT_EQ(u.z[1], 0);
}

TEST(Unpacked, PackUnpackRoundTripIsBitExact) {
  for (const auto& sh : ts::odd_shapes())
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (bool act : {false, true}) {
        QuantSpec spec{sh.n, sh.k, sh.g, st};
        SCOPED_TRACE(spec.describe() + (act ? " act-order" : ""));
        DType sdt = act ? DType::bf16 : DType::f16;
        QuantizedLinear w = test::random_linear(spec, sdt, /*bias=*/act, act);
        formats::Unpacked u = formats::unpack(w.view());
        ASSERT_EQ(u.q.size(), static_cast<std::size_t>(sh.n * sh.k));
        // Spot-check the unpacked values against the packed bits directly.
        const auto* qw = w.qweight().ptr<std::int32_t>();
        for (std::int64_t i = 0; i < sh.n * sh.k; i += 7) {
          std::int64_t n = i / sh.k, k = i % sh.k;
          int want = static_cast<int>((static_cast<std::uint32_t>(qw[n * (sh.k / 8) + k / 8]) >> (4 * (k % 8))) & 15u);
          ASSERT_EQ(u.q[static_cast<std::size_t>(i)], want);
        }
        QuantizedLinear back = formats::pack(u);
        EXPECT_TRUE(same_bytes(back.qweight(), w.qweight()));
        EXPECT_TRUE(same_bytes(back.scales(), w.scales()));
        EXPECT_EQ(back.spec().has_zeros(), st == ScalarType::uint4);
        if (st == ScalarType::uint4) { EXPECT_TRUE(same_bytes(back.zeros(), w.zeros())); }
        EXPECT_EQ(back.has_bias(), act);
        if (act) { EXPECT_TRUE(same_bytes(back.bias(), w.bias())); }
        EXPECT_EQ(back.act_order(), act);
        if (act) { EXPECT_TRUE(same_bytes(back.perm(), w.perm())); }
      }
}

TEST(Unpacked, DequantizeMatchesTheDefinitionInOriginalOrder) {
  for (const auto& sh : ts::odd_shapes())
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (bool act : {false, true}) {
        QuantSpec spec{sh.n, sh.k, sh.g, st};
        SCOPED_TRACE(spec.describe() + (act ? " act-order" : ""));
        QuantizedLinear w = test::random_linear(spec, DType::f16, false, act);
        HostTensor d = formats::dequantize(w.view());
        ASSERT_EQ(d.dtype(), DType::f32);
        ASSERT_EQ(d.shape(), (std::vector<std::int64_t>{sh.n, sh.k}));
        std::vector<double> ref = test::dequant_f64(w);
        const float* p = d.ptr<float>();
        // (q - z) * s with a 16-bit s is exact in fp32, so equality is exact.
        for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(static_cast<double>(p[i]), ref[i]) << "at " << i;
      }
}

TEST(Unpacked, PackRejectsBadInput) {
  QuantSpec spec{16, 64, 32, ScalarType::uint4};
  formats::Unpacked good = formats::unpack(test::random_linear(spec, DType::f16, true, false).view());
  {
    auto u = good;
    u.q[5] = 16;
    expect_error([&] { formats::pack(u); }, ErrorCode::invalid_argument, "unpacked.q");
  }
  {
    auto u = good;
    u.q.pop_back();
    expect_error([&] { formats::pack(u); }, ErrorCode::shape_mismatch, "unpacked.q");
  }
  {
    auto u = good;
    u.z[3] = 200;
    expect_error([&] { formats::pack(u); }, ErrorCode::invalid_argument, "unpacked.z");
  }
  {
    auto u = good;
    u.z.clear();
    expect_error([&] { formats::pack(u); }, ErrorCode::shape_mismatch, "unpacked.z");
  }
  {
    auto u = good;
    u.spec.scalar = ScalarType::uint4b8;  // zero points given for a symmetric layer
    expect_error([&] { formats::pack(u); }, ErrorCode::invalid_argument, "unpacked.z");
  }
  {
    auto u = good;
    u.bias = HostTensor(DType::bf16, {16});
    expect_error([&] { formats::pack(u); }, ErrorCode::dtype_mismatch, "unpacked.bias");
  }
  {
    auto u = good;
    u.scales = HostTensor(DType::f32, {16, 2});
    expect_error([&] { formats::pack(u); }, ErrorCode::dtype_mismatch, "unpacked.scales");
  }
  {
    auto u = good;
    u.perm.assign(64, 0);  // not a permutation
    expect_error([&] { formats::pack(u); }, ErrorCode::invalid_argument, "perm");
  }
  {
    auto u = good;
    u.spec.k = 72;  // not a multiple of the group size 32
    expect_error([&] { formats::pack(u); }, ErrorCode::shape_mismatch, "group size");
  }
  {
    auto u = good;
    u.spec.n = 12;  // zero points need N % 8 == 0
    expect_error([&] { formats::pack(u); }, ErrorCode::shape_mismatch, "multiple of 8");
  }
  {
    auto u = good;
    u.spec.group_size = 48;
    expect_error([&] { formats::pack(u); }, ErrorCode::invalid_argument, "group_size");
  }
}
