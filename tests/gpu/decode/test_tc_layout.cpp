// tc_layout_host against docs/LAYOUT.md ("cuda.tc16x64.v1"), transcribed here independently:
// the implementation walks layout slots -> (n, k); this test walks (n, k) -> slot with the
// fragment table of the doc, checks every nibble, and checks that every slot no (n, k) maps to
// is zero (padding). Host only: runs without a GPU.
#include <gtest/gtest.h>

#include <set>

#include "tc/tc_weights.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::kernels::cuda {
namespace {

struct Pos { std::size_t word; int nibble; };

// docs/LAYOUT.md: tile (nt, kt) of 16 x 64; lane l = 4 gid + t; word j = k16 sub-tile;
// a0 = (gid, 2t), a1 = (gid, 2t+1), a2 = (gid+8, 2t), a3 = (gid+8, 2t+1), a4 = (gid, 2t+8),
// a5 = (gid, 2t+9), a6 = (gid+8, 2t+8), a7 = (gid+8, 2t+9); nibbles [a0,a2,a4,a6,a1,a3,a5,a7].
Pos doc_position(std::int64_t n, std::int64_t k, std::int64_t k_pad) {
  const std::int64_t nt = n / 16, kt = k / 64, KT = k_pad / 64;
  const int r = static_cast<int>(n % 16), kk = static_cast<int>(k % 64);
  const int j = kk / 16, c = kk % 16;
  const int gid = r % 8, upper = r / 8, t = (c % 8) / 2;
  const int a = (c % 2) + 2 * upper + 4 * (c / 8);  // which a_i this element is
  static const int kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // a_i -> nibble slot
  const int lane = gid * 4 + t;
  return {static_cast<std::size_t>(((nt * KT + kt) * 32 + lane) * 4 + j), kNibbleOf[a]};
}

void check_layout(const QuantSpec& spec, DType scale_dtype, DType act, bool bias, bool act_order) {
  SCOPED_TRACE(spec.describe() + " act=" + std::string(dtype_name(act)) + " seed=" + std::to_string(test::seed()));
  QuantizedLinear q = test::random_linear(spec, scale_dtype, bias, act_order);
  CanonicalView v = q.view();
  TcHostLayout L = tc_layout_host(v, act);
  const std::int64_t n_pad = (spec.n + 63) / 64 * 64, k_pad = (spec.k + 63) / 64 * 64, G = spec.groups();
  ASSERT_EQ(L.n_pad, n_pad);
  ASSERT_EQ(L.k_pad, k_pad);
  ASSERT_EQ(L.qweight.size(), static_cast<std::size_t>(n_pad * k_pad / 8));
  std::vector<std::uint32_t> seen(L.qweight.size(), 0);  // nibble masks that a real (n, k) occupies
  int bad = 0;
  for (std::int64_t n = 0; n < spec.n; ++n)
    for (std::int64_t k = 0; k < spec.k; ++k) {
      Pos p = doc_position(n, k, k_pad);
      const int got = (static_cast<std::uint32_t>(L.qweight[p.word]) >> (4 * p.nibble)) & 15;
      seen[p.word] |= 15u << (4 * p.nibble);
      if (got != v.q(n, k) && bad++ < 5) ADD_FAILURE() << "q(" << n << "," << k << "): layout " << got << " canonical " << v.q(n, k);
    }
  for (std::size_t i = 0; i < L.qweight.size(); ++i)
    if ((static_cast<std::uint32_t>(L.qweight[i]) & ~seen[i]) != 0 && bad++ < 10) ADD_FAILURE() << "padding word " << i << " not zero";
  // The register view of the doc: (w & 0x000f000f) is (a0, a1), w >> 4 (a2, a3), ... as half2 halves.
  for (std::int64_t n = 0; n < std::min<std::int64_t>(spec.n, 16); ++n)
    for (std::int64_t k = 0; k < std::min<std::int64_t>(spec.k, 64); ++k) {
      const int gid = static_cast<int>(n % 8), upper = static_cast<int>(n % 16) / 8, c = static_cast<int>(k % 16);
      const int lane = gid * 4 + (c % 8) / 2, j = static_cast<int>(k / 16);
      const std::uint32_t w = static_cast<std::uint32_t>(L.qweight[static_cast<std::size_t>(lane * 4 + j)]);
      const int reg = upper + 2 * (c / 8);            // fragment register 0..3
      const int half = c % 2;                           // low or high half of the register
      const std::uint32_t r = (w >> (4 * reg)) & 0x000f000fu;
      EXPECT_EQ(static_cast<int>(half ? (r >> 16) : (r & 0xffff)), v.q(n, k)) << "register view n=" << n << " k=" << k;
    }
  ASSERT_EQ(L.scales.size(), static_cast<std::size_t>(G * n_pad));
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < n_pad; ++n) {
      const std::int64_t nt = n / 16, r = n % 16;
      const std::size_t idx = static_cast<std::size_t>(g * n_pad + nt * 16 + 2 * (r % 8) + r / 8);
      const std::uint16_t want = n < spec.n ? float_to_f16x(act, v.s(n, g)) : 0;
      if (L.scales[idx] != want && bad++ < 15) ADD_FAILURE() << "scale n=" << n << " g=" << g;
    }
  if (spec.has_zeros()) {
    ASSERT_EQ(L.zeros.size(), static_cast<std::size_t>(G * n_pad / 2));
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t n = 0; n < n_pad; ++n) {
        const std::int64_t nt = n / 16, r = n % 16;
        const int byte = L.zeros[static_cast<std::size_t>((g * (n_pad / 16) + nt) * 8 + r % 8)];
        const int got = (byte >> (4 * (r / 8))) & 15;
        const int want = n < spec.n ? v.z(n, g) : 0;
        if (got != want && bad++ < 20) ADD_FAILURE() << "zero n=" << n << " g=" << g;
      }
  } else {
    EXPECT_TRUE(L.zeros.empty());
  }
  if (bias) {
    ASSERT_EQ(L.bias.size(), static_cast<std::size_t>(spec.n));
    for (std::int64_t n = 0; n < spec.n; ++n)
      EXPECT_EQ(L.bias[static_cast<std::size_t>(n)], float_to_f16x(act, f16x_to_float(scale_dtype, v.bias[n])));
  } else {
    EXPECT_TRUE(L.bias.empty());
  }
  if (act_order) {
    ASSERT_EQ(L.perm.size(), static_cast<std::size_t>(spec.k));
    for (std::int64_t k = 0; k < spec.k; ++k) EXPECT_EQ(L.perm[static_cast<std::size_t>(k)], v.perm[k]);
  } else {
    EXPECT_TRUE(L.perm.empty());
  }
  EXPECT_EQ(bad, 0);
}

TEST(TcLayout, MatchesDocSymmetric) { check_layout({72, 96, 32, ScalarType::uint4b8}, DType::f16, DType::f16, false, false); }
TEST(TcLayout, MatchesDocAsymBiasPerm) { check_layout({200, 768, 128, ScalarType::uint4}, DType::f16, DType::f16, true, true); }
TEST(TcLayout, MatchesDocBf16Channelwise) { check_layout({40, 328, kChannelwise, ScalarType::uint4}, DType::bf16, DType::bf16, true, false); }
TEST(TcLayout, Fp16ScalesRoundToBf16) { check_layout({64, 256, 64, ScalarType::uint4b8}, DType::f16, DType::bf16, true, false); }
TEST(TcLayout, OddNWithoutZeros) { check_layout({100, 512, 256, ScalarType::uint4b8}, DType::bf16, DType::f16, false, true); }

// Hand-packed worked example: row 0, k 0..7 hold q = 1..8 (canonical word 0x87654321); the lane 0
// word of sub-tile 0 holds a0 = q(0,0) = 1, a1 = q(0,1) = 2, a2 = a3 = a6 = a7 = 0 (rows 8), a4 = a5 = 0 (k 8, 9).
TEST(TcLayout, WorkedExample) {
  QuantSpec spec{16, 64, 64, ScalarType::uint4b8};
  QuantizedLinear q(spec, DType::f16, false, false);
  q.qweight().ptr<std::int32_t>()[0] = static_cast<std::int32_t>(0x87654321u);
  for (std::int64_t i = 0; i < q.scales().numel(); ++i) q.scales().ptr<std::uint16_t>()[i] = 0x3c00;  // 1.0
  TcHostLayout L = tc_layout_host(q.view(), DType::f16);
  EXPECT_EQ(static_cast<std::uint32_t>(L.qweight[0]), 0x00020001u);  // nibble 0 = a0 = 1, nibble 4 = a1 = 2
  EXPECT_EQ(static_cast<std::uint32_t>(L.qweight[4]), 0x00040003u);  // lane 1 (t = 1): k 2, 3
  EXPECT_EQ(static_cast<std::uint32_t>(L.qweight[12]), 0x00080007u);  // lane 3: k 6, 7
  for (std::size_t i = 0; i < L.qweight.size(); ++i) {
    if (i != 0 && i != 4 && i != 8 && i != 12) { EXPECT_EQ(L.qweight[i], 0) << i; }
  }
  EXPECT_EQ(static_cast<std::uint32_t>(L.qweight[8]), 0x00060005u);
}

TEST(TcLayout, RejectsBadActDtypeAndDeviceView) {
  QuantizedLinear q = test::random_linear({16, 64, 64, ScalarType::uint4b8}, DType::f16, false, false);
  try {
    tc_layout_host(q.view(), DType::f32);
    FAIL() << "f32 act dtype accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::dtype_mismatch);
    EXPECT_NE(std::string(e.what()).find("act_dtype"), std::string::npos) << e.what();
  }
  CanonicalView v = q.view();
  v.device = Device::cuda;
  EXPECT_THROW(tc_layout_host(v, DType::f16), Error);
}

}  // namespace
}  // namespace w4a16::kernels::cuda
