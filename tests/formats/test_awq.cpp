// AWQ GEMM <-> canonical: the worked example of shared/FORMATS.md, tensors hand-packed from
// the spec, bit-exact round trips, and every rejection.
#include <gtest/gtest.h>

#include <cstring>

#include "format_test_util.hpp"
#include "spec_pack.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"

using namespace w4a16;
namespace ts = w4a16::test::spec;
using test::expect_error;
using test::same_bytes;
using test::view_of;

TEST(Awq, WorkedExample) {
  // N = 8, K = 32, one group: every row k holds q = [0, 1, ..., 7] across the 8 columns.
  std::vector<std::int32_t> qw(32, 0x75316420);  // nibbles low to high: 0,2,4,6,1,3,5,7
  std::vector<std::int32_t> qz(1, 0x75316420);   // z[n] = n, same interleave
  std::vector<std::uint16_t> sc(8);
  for (int n = 0; n < 8; ++n) sc[static_cast<std::size_t>(n)] = float_to_half(0.5f * (n + 1));
  QuantizedLinear c = formats::awq_to_canonical(
      {view_of(qw, {32, 1}), view_of(qz, {1, 1}), view_of(sc, DType::f16, {1, 8}), {}}, 32);
  CanonicalView v = c.view();
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(v.z(n, 0), n);
    for (int k = 0; k < 32; ++k) ASSERT_EQ(v.q(n, k), n) << "n=" << n << " k=" << k;
  }
  // Canonical qweight packs along K: row n holds q = n everywhere -> word 0xnnnnnnnn.
  for (int n = 0; n < 8; ++n)
    EXPECT_EQ(static_cast<std::uint32_t>(c.qweight().ptr<std::int32_t>()[n * 4]), 0x11111111u * static_cast<std::uint32_t>(n));
  // Canonical zeros pack along N without interleave: 0x76543210.
  EXPECT_EQ(static_cast<std::uint32_t>(c.zeros().ptr<std::int32_t>()[0]), 0x76543210u);
  HostTensor d = formats::dequantize(v);
  for (int n = 0; n < 8; ++n) EXPECT_EQ(d.ptr<float>()[n * 32 + 5], 0.f);  // q == z
  formats::AwqHost back = formats::canonical_to_awq(v);
  for (int k = 0; k < 32; ++k) ASSERT_EQ(static_cast<std::uint32_t>(back.qweight.ptr<std::int32_t>()[k]), 0x75316420u);
  EXPECT_EQ(static_cast<std::uint32_t>(back.qzeros.ptr<std::int32_t>()[0]), 0x75316420u);
}

TEST(Awq, HandPackedTensorsDequantizeToTheFormatDefinition) {
  for (const auto& sh : ts::odd_shapes())
    for (DType sdt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE("N=" + std::to_string(sh.n) + " K=" + std::to_string(sh.k) + " g=" + std::to_string(sh.g) + " " +
                   std::string(dtype_name(sdt)));
      ts::Layer L = ts::random_layer(sh.n, sh.k, sh.g, /*sym=*/false, /*act_order=*/false, sdt, /*bias=*/true);
      auto qw = ts::awq_qweight(L);
      auto qz = ts::awq_qzeros(L);
      QuantizedLinear c = formats::awq_to_canonical({view_of(qw, {L.k, L.n / 8}), view_of(qz, {L.groups, L.n / 8}),
                                                     view_of(L.s, sdt, {L.groups, L.n}), view_of(L.bias, sdt, {L.n})},
                                                    sh.g);
      EXPECT_EQ(c.scale_dtype(), sdt);  // scales keep the dtype given
      EXPECT_EQ(c.spec().scalar, ScalarType::uint4);
      EXPECT_FALSE(c.act_order());
      std::vector<double> want = L.weights();
      HostTensor d = formats::dequantize(c.view());
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(static_cast<double>(d.ptr<float>()[i]), want[i]) << "at " << i;
      EXPECT_EQ(test::dequant_f64(c), want);
      ASSERT_TRUE(c.has_bias());
      EXPECT_EQ(std::memcmp(c.bias().data(), L.bias.data(), L.bias.size() * 2), 0);
    }
}

TEST(Awq, CanonicalToAwqToCanonicalIsBitExact) {
  for (const auto& sh : ts::odd_shapes())
    for (bool bias : {false, true}) {
      QuantSpec spec{sh.n, sh.k, sh.g, ScalarType::uint4};
      SCOPED_TRACE(spec.describe());
      QuantizedLinear w = test::random_linear(spec, bias ? DType::bf16 : DType::f16, bias, false);
      formats::AwqHost a = formats::canonical_to_awq(w.view());
      EXPECT_EQ(a.qweight.shape(), (std::vector<std::int64_t>{sh.k, sh.n / 8}));
      EXPECT_EQ(a.qzeros.shape(), (std::vector<std::int64_t>{spec.groups(), sh.n / 8}));
      EXPECT_EQ(a.scales.shape(), (std::vector<std::int64_t>{spec.groups(), sh.n}));
      // Check one written word against the spec: nibble i of (k, j) is column 8j + ORDER[i].
      CanonicalView v = w.view();
      std::uint32_t w0 = static_cast<std::uint32_t>(a.qweight.ptr<std::int32_t>()[0]);
      for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<int>((w0 >> (4 * i)) & 15u), v.q(ts::kAwqOrder[i], 0));
      QuantizedLinear back = formats::awq_to_canonical(
          {a.qweight.view(), a.qzeros.view(), a.scales.view(), bias ? a.bias.view() : TensorView{}}, sh.g);
      EXPECT_TRUE(same_bytes(back.qweight(), w.qweight()));
      EXPECT_TRUE(same_bytes(back.zeros(), w.zeros()));
      EXPECT_TRUE(same_bytes(back.scales(), w.scales()));
      if (bias) { EXPECT_TRUE(same_bytes(back.bias(), w.bias())); }
    }
}

TEST(Awq, AcceptsUnalignedTensors) {
  // Mapped safetensors data has no alignment guarantee: read words at an odd address.
  ts::Layer L = ts::random_layer(16, 64, 32, false, false, DType::f16);
  auto qw = ts::awq_qweight(L);
  auto qz = ts::awq_qzeros(L);
  std::vector<unsigned char> buf(qw.size() * 4 + 1);
  std::memcpy(buf.data() + 1, qw.data(), qw.size() * 4);
  QuantizedLinear c = formats::awq_to_canonical(
      {TensorView(buf.data() + 1, DType::i32, {64, 2}), view_of(qz, {2, 2}), view_of(L.s, DType::f16, {2, 16}), {}}, 32);
  EXPECT_EQ(test::dequant_f64(c), L.weights());
}

TEST(Awq, Rejections) {
  ts::Layer L = ts::random_layer(16, 64, 32, false, false, DType::f16);
  auto qw = ts::awq_qweight(L);
  auto qz = ts::awq_qzeros(L);
  auto sc = L.s;
  auto good = [&] {
    return formats::AwqTensors{view_of(qw, {64, 2}), view_of(qz, {2, 2}), view_of(sc, DType::f16, {2, 16}), {}};
  };
  EXPECT_NO_THROW(formats::awq_to_canonical(good(), 32));
  expect_error([&] { formats::awq_to_canonical(good(), 48); }, ErrorCode::unsupported, "group_size");
  {  // K = 72 is not a multiple of the group size 32
    std::vector<std::int32_t> q72(72 * 2);
    auto t = good();
    t.qweight = view_of(q72, {72, 2});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::shape_mismatch, "qweight.K");
  }
  {  // float16 zero points of shape [G, N] where packed int32 [G, N/8] are expected
    std::vector<std::uint16_t> zf(2 * 16);
    auto t = good();
    t.qzeros = view_of(zf, DType::f16, {2, 16});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::dtype_mismatch, "qzeros: expected int32 [G, N/8]");
  }
  {
    auto t = good();
    t.qzeros = view_of(qz, {1, 4});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::shape_mismatch, "qzeros");
  }
  {
    auto t = good();
    t.qzeros = {};
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::invalid_argument, "qzeros");
  }
  {
    auto t = good();
    t.scales = view_of(sc, DType::f16, {16, 2});  // canonical [N, G] instead of AWQ [G, N]
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::shape_mismatch, "scales");
  }
  {
    std::vector<float> sf(32);
    auto t = good();
    t.scales = TensorView(sf.data(), DType::f32, {2, 16});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::dtype_mismatch, "scales");
  }
  {
    std::vector<std::uint16_t> qh(64 * 2);
    auto t = good();
    t.qweight = view_of(qh, DType::f16, {64, 2});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::dtype_mismatch, "qweight");
  }
  {
    auto t = good();
    t.qweight = view_of(qw, {128});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::shape_mismatch, "qweight");
  }
  {
    std::vector<std::uint16_t> b(8);
    auto t = good();
    t.bias = view_of(b, DType::f16, {8});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::shape_mismatch, "bias");
  }
  {  // non-contiguous qweight (a column slice)
    auto t = good();
    t.qweight = view_of(qw, {64, 1});
    t.qweight.stride[0] = 2;
    t.qzeros = view_of(qz, {2, 1});
    t.scales = view_of(sc, DType::f16, {2, 8});
    expect_error([&] { formats::awq_to_canonical(t, 32); }, ErrorCode::layout_mismatch, "qweight");
  }
  QuantSpec sym{16, 64, 32, ScalarType::uint4b8};
  expect_error([&] { formats::canonical_to_awq(test::random_linear(sym, DType::f16, false, false).view()); },
               ErrorCode::unsupported, "uint4");
  QuantSpec asym{16, 64, 32, ScalarType::uint4};
  expect_error([&] { formats::canonical_to_awq(test::random_linear(asym, DType::f16, false, true).view()); },
               ErrorCode::unsupported, "perm");
}
