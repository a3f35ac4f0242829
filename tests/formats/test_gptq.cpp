// GPTQ <-> canonical: the worked examples of shared/FORMATS.md, tensors hand-packed from the
// spec (v1 zero-minus-one, v2, sym/asym, act-order g_idx), bit-exact round trips, rejections.
#include <gtest/gtest.h>

#include <numeric>

#include "format_test_util.hpp"
#include "spec_pack.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"

using namespace w4a16;
namespace ts = w4a16::test::spec;
using formats::GptqVersion;
using test::expect_error;
using test::same_bytes;
using test::view_of;

namespace {
// The GPTQ tensors of a spec layer, hand-packed.
struct Packed {
  std::vector<std::int32_t> qw, qz, gi;
  std::vector<std::uint16_t> s, b;
  formats::GptqTensors t;
};
Packed pack_gptq(ts::Layer& L, bool v1, bool with_zeros = true) {
  Packed p;
  p.qw = ts::gptq_qweight(L);
  p.qz = ts::gptq_qzeros(L, v1);
  p.gi = L.g_idx;
  p.s = L.s;
  p.b = L.bias;
  p.t.qweight = view_of(p.qw, {L.k / 8, L.n});
  if (with_zeros) p.t.qzeros = view_of(p.qz, {L.groups, (L.n + 7) / 8});
  p.t.scales = view_of(p.s, L.sdt, {L.groups, L.n});
  p.t.g_idx = view_of(p.gi, {L.k});
  if (!p.b.empty()) p.t.bias = view_of(p.b, L.sdt, {L.n});
  return p;
}

// GPTQ keeps only the group of each channel, so a reader's perm (the stable argsort of g_idx)
// lists each group's channels in increasing order. This reorders a canonical layer's columns
// within each group to that normal form (the same weights), so round trips can be bit-exact.
QuantizedLinear normalize_perm(const QuantizedLinear& w) {
  formats::Unpacked u = formats::unpack(w.view());
  const std::int64_t K = u.spec.k, N = u.spec.n, gl = u.spec.group_len();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(K));
  std::iota(idx.begin(), idx.end(), 0);
  for (std::int64_t g0 = 0; g0 < K; g0 += gl)
    std::sort(idx.begin() + g0, idx.begin() + g0 + gl,
              [&](std::int64_t a, std::int64_t b) { return u.perm[static_cast<std::size_t>(a)] < u.perm[static_cast<std::size_t>(b)]; });
  formats::Unpacked v = u;
  for (std::int64_t k = 0; k < K; ++k) {
    v.perm[static_cast<std::size_t>(k)] = u.perm[static_cast<std::size_t>(idx[static_cast<std::size_t>(k)])];
    for (std::int64_t n = 0; n < N; ++n)
      v.q[static_cast<std::size_t>(n * K + k)] = u.q[static_cast<std::size_t>(n * K + idx[static_cast<std::size_t>(k)])];
  }
  return formats::pack(v);
}
}  // namespace

TEST(Gptq, WorkedExamples) {
  // One column (N = 8 for whole zero words), K = 32, one group of 32: rows 0..7 of column 0 hold 0..7.
  ts::Layer L = ts::random_layer(8, 32, 32, /*sym=*/true, false, DType::f16);
  for (int k = 0; k < 8; ++k) L.q[static_cast<std::size_t>(k * 8 + 0)] = static_cast<std::uint8_t>(k);
  Packed p = pack_gptq(L, /*v1=*/true);
  EXPECT_EQ(static_cast<std::uint32_t>(p.qw[0]), 0x76543210u);   // the spec's word, packed by the test
  EXPECT_EQ(static_cast<std::uint32_t>(p.qz[0]), 0x77777777u);   // symmetric v1 qzeros
  QuantizedLinear c = formats::gptq_to_canonical(p.t, {32, /*sym=*/true, false, GptqVersion::v1});
  EXPECT_EQ(c.spec().scalar, ScalarType::uint4b8);
  EXPECT_FALSE(c.act_order());  // g_idx = k / g
  CanonicalView v = c.view();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(v.q(0, k), k);
  EXPECT_EQ(static_cast<std::uint32_t>(c.qweight().ptr<std::int32_t>()[0]), 0x76543210u);  // canonical: same word
  formats::GptqHost h = formats::canonical_to_gptq(v);
  EXPECT_EQ(h.version, GptqVersion::v1);
  EXPECT_EQ(static_cast<std::uint32_t>(h.qweight.ptr<std::int32_t>()[0]), 0x76543210u);
  EXPECT_EQ(static_cast<std::uint32_t>(h.qzeros.ptr<std::int32_t>()[0]), 0x77777777u);
  for (int k = 0; k < 32; ++k) EXPECT_EQ(h.g_idx.ptr<std::int32_t>()[k], 0);
  // The same layer as v2 stores z itself: 0x88888888.
  EXPECT_EQ(static_cast<std::uint32_t>(formats::canonical_to_gptq(v, GptqVersion::v2).qzeros.ptr<std::int32_t>()[0]),
            0x88888888u);
}

TEST(Gptq, HandPackedTensorsDequantizeToTheFormatDefinition) {
  for (const auto& sh : ts::odd_shapes())
    for (bool sym : {true, false})
      for (bool v1 : {true, false})
        for (bool act : {false, true}) {
          if (act && sh.k / (sh.g == -1 ? sh.k : sh.g) == 1) continue;  // one group: g_idx is all 0 = k / g
          SCOPED_TRACE("N=" + std::to_string(sh.n) + " K=" + std::to_string(sh.k) + " g=" + std::to_string(sh.g) +
                       (sym ? " sym" : " asym") + (v1 ? " v1" : " v2") + (act ? " desc_act" : ""));
          ts::Layer L = ts::random_layer(sh.n, sh.k, sh.g, sym, act, act ? DType::bf16 : DType::f16, /*bias=*/act);
          Packed p = pack_gptq(L, v1);
          formats::GptqOptions o{sh.g, sym, act, v1 ? GptqVersion::v1 : GptqVersion::v2};
          QuantizedLinear c = formats::gptq_to_canonical(p.t, o);
          EXPECT_EQ(c.spec().scalar, sym ? ScalarType::uint4b8 : ScalarType::uint4);
          EXPECT_EQ(c.scale_dtype(), L.sdt);
          ASSERT_EQ(c.act_order(), act);
          if (act) {  // perm = stable argsort of g_idx
            const auto* pm = c.perm().ptr<std::int32_t>();
            for (std::int64_t k = 0; k < L.k; ++k) {
              ASSERT_EQ(L.g_idx[static_cast<std::size_t>(pm[k])], k / L.glen) << "k'=" << k;
              if (k % L.glen) { ASSERT_LT(pm[k - 1], pm[k]) << "not stable at k'=" << k; }
            }
          }
          std::vector<double> want = L.weights();
          EXPECT_EQ(test::dequant_f64(c), want);
          HostTensor d = formats::dequantize(c.view());
          for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(static_cast<double>(d.ptr<float>()[i]), want[i]) << i;
        }
}

TEST(Gptq, TrivialGidxWithDescActMakesNoPerm) {
  ts::Layer L = ts::random_layer(16, 256, 64, false, /*act_order=*/false, DType::f16);
  Packed p = pack_gptq(L, false);
  QuantizedLinear c = formats::gptq_to_canonical(p.t, {64, false, /*desc_act=*/true, GptqVersion::v2});
  EXPECT_FALSE(c.act_order());
  EXPECT_EQ(test::dequant_f64(c), L.weights());
  // No g_idx at all without desc_act: k / g is implied.
  p.t.g_idx = {};
  QuantizedLinear c2 = formats::gptq_to_canonical(p.t, {64, false, false, GptqVersion::v2});
  EXPECT_EQ(test::dequant_f64(c2), L.weights());
}

TEST(Gptq, CanonicalToGptqToCanonicalIsBitExact) {
  std::vector<ts::Shape> shapes = ts::odd_shapes();
  shapes.push_back({36, 96, 32});  // N % 8 != 0 is legal for symmetric layers
  for (const auto& sh : shapes)
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (bool act : {false, true}) {
        if (st == ScalarType::uint4 && sh.n % 8) continue;
        QuantSpec spec{sh.n, sh.k, sh.g, st};
        SCOPED_TRACE(spec.describe() + (act ? " act-order" : ""));
        QuantizedLinear w0 = test::random_linear(spec, DType::f16, act, act);
        QuantizedLinear w = act ? normalize_perm(w0) : w0;
        ASSERT_EQ(test::dequant_f64(w), test::dequant_f64(w0));
        formats::GptqHost h = formats::canonical_to_gptq(w.view());
        EXPECT_EQ(h.version, st == ScalarType::uint4b8 ? GptqVersion::v1 : GptqVersion::v2);
        EXPECT_EQ(h.qweight.shape(), (std::vector<std::int64_t>{sh.k / 8, sh.n}));
        EXPECT_EQ(h.qzeros.shape(), (std::vector<std::int64_t>{spec.groups(), (sh.n + 7) / 8}));
        EXPECT_EQ(h.g_idx.shape(), (std::vector<std::int64_t>{sh.k}));
        // The writer's act-order convention: g_idx[perm[k']] = k' / g, rows in original order.
        CanonicalView v = w.view();
        const auto* gi = h.g_idx.ptr<std::int32_t>();
        for (std::int64_t k = 0; k < sh.k; ++k) {
          std::int64_t orig = act ? v.perm[k] : k;
          ASSERT_EQ(gi[orig], k / spec.group_len());
          std::uint32_t word = static_cast<std::uint32_t>(h.qweight.ptr<std::int32_t>()[(orig / 8) * sh.n + 0]);
          ASSERT_EQ(static_cast<int>((word >> (4 * (orig % 8))) & 15u), v.q(0, k));
        }
        formats::GptqOptions o{sh.g, st == ScalarType::uint4b8, act, h.version};
        if (act && spec.groups() == 1) {
          // One group: every g_idx is 0 = k / g, so the reader rightly makes no perm; the
          // weights (in original channel order) are still identical.
          QuantizedLinear back = formats::gptq_to_canonical(
              {h.qweight.view(), h.qzeros.view(), h.scales.view(), h.g_idx.view(), h.bias.view()}, o);
          EXPECT_FALSE(back.act_order());
          EXPECT_EQ(test::dequant_f64(back), test::dequant_f64(w));
          continue;
        }
        QuantizedLinear back = formats::gptq_to_canonical(
            {h.qweight.view(), h.qzeros.view(), h.scales.view(), h.g_idx.view(), act ? h.bias.view() : TensorView{}}, o);
        EXPECT_TRUE(same_bytes(back.qweight(), w.qweight()));
        EXPECT_TRUE(same_bytes(back.scales(), w.scales()));
        if (st == ScalarType::uint4) { EXPECT_TRUE(same_bytes(back.zeros(), w.zeros())); }
        ASSERT_EQ(back.act_order(), act);
        if (act) { EXPECT_TRUE(same_bytes(back.perm(), w.perm())); }  // stable argsort recovers the same perm
        if (act) {  // an arbitrary perm comes back normalized: the same weights
          formats::GptqHost h0 = formats::canonical_to_gptq(w0.view());
          QuantizedLinear b0 = formats::gptq_to_canonical(
              {h0.qweight.view(), h0.qzeros.view(), h0.scales.view(), h0.g_idx.view(), h0.bias.view()}, o);
          EXPECT_EQ(test::dequant_f64(b0), test::dequant_f64(w0));
          EXPECT_TRUE(same_bytes(b0.qweight(), w.qweight()));
        }
        if (act) { EXPECT_TRUE(same_bytes(back.bias(), w.bias())); }
      }
}

TEST(Gptq, V1AsymmetricZeroOfZeroIsNeverWritten) {
  QuantSpec spec{16, 64, 32, ScalarType::uint4};
  QuantizedLinear w = test::random_linear(spec, DType::f16, false, false);
  auto* z = w.zeros().ptr<std::int32_t>();
  z[0] = static_cast<std::int32_t>((static_cast<std::uint32_t>(z[0]) & ~0xfu));  // z[0, 0] = 0
  formats::GptqHost h = formats::canonical_to_gptq(w.view());
  EXPECT_EQ(h.version, GptqVersion::v2);
  EXPECT_EQ(static_cast<std::uint32_t>(h.qzeros.ptr<std::int32_t>()[0]) & 0xfu, 0u);  // v2 stores z = 0 itself
  expect_error([&] { formats::canonical_to_gptq(w.view(), GptqVersion::v1); }, ErrorCode::unsupported, "zero point of 0");
  // Without a zero of 0, an explicit v1 is exact: stored = z - 1, read back as (stored + 1) & 15.
  for (std::int64_t i = 0; i < w.zeros().numel(); ++i) {
    std::uint32_t word = static_cast<std::uint32_t>(z[i]);
    for (int j = 0; j < 8; ++j)
      if (((word >> (4 * j)) & 15u) == 0) word |= 1u << (4 * j);
    z[i] = static_cast<std::int32_t>(word);
  }
  formats::GptqHost h1 = formats::canonical_to_gptq(w.view(), GptqVersion::v1);
  EXPECT_EQ(h1.version, GptqVersion::v1);
  std::uint32_t s0 = static_cast<std::uint32_t>(h1.qzeros.ptr<std::int32_t>()[0]) & 0xfu;
  EXPECT_EQ((s0 + 1) & 15u, static_cast<std::uint32_t>(w.view().z(0, 0)));
  QuantizedLinear back =
      formats::gptq_to_canonical({h1.qweight.view(), h1.qzeros.view(), h1.scales.view(), h1.g_idx.view(), {}},
                                 {32, false, false, GptqVersion::v1});
  EXPECT_TRUE(same_bytes(back.zeros(), w.zeros()));
}

TEST(Gptq, Rejections) {
  ts::Layer L = ts::random_layer(16, 128, 32, false, true, DType::f16);
  const formats::GptqOptions act{32, false, true, GptqVersion::v2};
  {
    Packed p = pack_gptq(L, false);
    EXPECT_NO_THROW(formats::gptq_to_canonical(p.t, act));
  }
  {  // g_idx out of range: G = 4
    Packed p = pack_gptq(L, false);
    p.gi[7] = 4;
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::invalid_argument, "g_idx[7] = 4");
    p.gi[7] = -1;
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::invalid_argument, "g_idx");
  }
  {  // in range but group 0 gets 33 channels, group 1 31
    Packed p = pack_gptq(L, false);
    auto it1 = std::find(p.gi.begin(), p.gi.end(), 1);
    *it1 = 0;
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::format_error, "g_idx");
  }
  {  // act-order g_idx but desc_act = false
    Packed p = pack_gptq(L, false);
    expect_error([&] { formats::gptq_to_canonical(p.t, {32, false, false, GptqVersion::v2}); }, ErrorCode::format_error,
                 "g_idx");
  }
  {  // desc_act without g_idx
    Packed p = pack_gptq(L, false);
    p.t.g_idx = {};
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::invalid_argument, "g_idx");
  }
  {  // g_idx of the wrong length
    Packed p = pack_gptq(L, false);
    p.t.g_idx = view_of(p.gi, {64});
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::shape_mismatch, "g_idx");
  }
  {  // K = 8 * 9 = 72 is not a multiple of the group size 32
    std::vector<std::int32_t> qw(9 * 16);
    Packed p = pack_gptq(L, false);
    p.t.qweight = view_of(qw, {9, 16});
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::shape_mismatch, "qweight.K");
  }
  {  // N = 12 with zero points (asymmetric)
    ts::Layer L12 = ts::random_layer(12, 64, 32, /*sym=*/true, false, DType::f16);
    Packed p = pack_gptq(L12, false);
    expect_error([&] { formats::gptq_to_canonical(p.t, {32, /*sym=*/false, false, GptqVersion::v2}); },
                 ErrorCode::shape_mismatch, "multiple of 8");
    EXPECT_NO_THROW(formats::gptq_to_canonical(p.t, {32, /*sym=*/true, false, GptqVersion::v2}));
  }
  {  // asymmetric without qzeros
    Packed p = pack_gptq(L, false, /*with_zeros=*/false);
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::invalid_argument, "qzeros");
  }
  {  // float16 zero points [G, N] where packed int32 [G, N/8] are expected
    Packed p = pack_gptq(L, false);
    std::vector<std::uint16_t> zf(4 * 16);
    p.t.qzeros = view_of(zf, DType::f16, {4, 16});
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::dtype_mismatch, "qzeros: expected int32");
  }
  {  // declared symmetric, but the zeros are not 8 (an asymmetric layer, or v1 read as v2)
    ts::Layer Ls = ts::random_layer(16, 128, 32, /*sym=*/true, false, DType::f16);
    Packed p = pack_gptq(Ls, /*v1=*/true);
    EXPECT_NO_THROW(formats::gptq_to_canonical(p.t, {32, true, false, GptqVersion::v1}));
    expect_error([&] { formats::gptq_to_canonical(p.t, {32, true, false, GptqVersion::v2}); }, ErrorCode::format_error,
                 "qzeros");
  }
  {
    Packed p = pack_gptq(L, false);
    p.t.scales = view_of(p.s, DType::f16, {16, 4});
    expect_error([&] { formats::gptq_to_canonical(p.t, act); }, ErrorCode::shape_mismatch, "scales");
  }
  {
    Packed p = pack_gptq(L, false);
    expect_error([&] { formats::gptq_to_canonical(p.t, {100, false, true, GptqVersion::v2}); }, ErrorCode::unsupported,
                 "group_size");
  }
}
