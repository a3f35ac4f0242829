// The host packer of "cuda.tc16x64.v1" (docs/LAYOUT.md), unpacked here the way the kernels
// read it: fragment register r of a word is (w >> 4r) & 0x000f000f, low half (row gid + 8*(r&1),
// column 2t + 8*(r>>1)), high half the next column. Bit-exact, padding included.
#include <gtest/gtest.h>

#include <cstring>

#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"
#if W4A16_HAVE_CUDA
#include "w4a16/moe/moe_cuda.hpp"
#endif

namespace w4a16::moe {
namespace {

struct Case {
  std::int64_t n, k;
  int g;
  ScalarType st;
  DType scale, act;
};

class TcLayout : public ::testing::TestWithParam<Case> {};

TEST_P(TcLayout, UnpacksToTheCanonicalValues) {
  const Case c = GetParam();
  QuantSpec spec{c.n, c.k, c.g, c.st};
  QuantizedLinear q = test::random_linear(spec, c.scale, false, false);
  const CanonicalView v = q.view();
  const Tc16x64Sizes sz = tc16x64_sizes(spec);
  ASSERT_EQ(sz.n_pad % 64, 0);
  ASSERT_EQ(sz.k_pad % 64, 0);
  std::vector<std::uint32_t> qw(sz.qweight_bytes / 4, 0xdeadbeef);
  std::vector<std::uint16_t> sc(sz.scales_bytes / 2, 0xffff);
  std::vector<std::uint8_t> zz(sz.zeros_bytes + 1, 0xee);
  tc16x64_pack(v, c.act, qw.data(), sc.data(), zz.data());
  const std::int64_t KT = sz.k_pad / 64;
  for (std::int64_t nt = 0; nt < sz.n_pad / 16; ++nt)
    for (std::int64_t kt = 0; kt < KT; ++kt)
      for (int lane = 0; lane < 32; ++lane)
        for (int j = 0; j < 4; ++j) {
          const std::uint32_t w = qw[static_cast<std::size_t>(((nt * KT + kt) * 32 + lane) * 4 + j)];
          for (int r = 0; r < 4; ++r)
            for (int half = 0; half < 2; ++half) {
              const std::uint32_t val = ((w >> (4 * r)) >> (16 * half)) & 0xf;
              const std::int64_t n = 16 * nt + lane / 4 + 8 * (r & 1);
              const std::int64_t k = 64 * kt + 16 * j + 2 * (lane % 4) + 8 * (r >> 1) + half;
              const std::uint32_t want = (n < c.n && k < c.k) ? static_cast<std::uint32_t>(v.q(n, k)) : 0u;
              ASSERT_EQ(val, want) << "n=" << n << " k=" << k;
            }
        }
  for (std::int64_t g = 0; g < sz.groups; ++g)
    for (std::int64_t n = 0; n < sz.n_pad; ++n) {
      // Lane gid of n-tile nt reads its rows (gid, gid + 8) as one 32-bit word at 16 nt + 2 gid.
      const std::int64_t nt = n / 16, r = n % 16, pos = 16 * nt + 2 * (r % 8) + r / 8;
      const std::uint16_t want = n < c.n ? float_to_f16x(c.act, v.s(n, g)) : 0;
      ASSERT_EQ(sc[static_cast<std::size_t>(g * sz.n_pad + pos)], want) << "scale n=" << n << " g=" << g;
      if (spec.has_zeros()) {
        const std::uint8_t byte = zz[static_cast<std::size_t>((g * (sz.n_pad / 16) + nt) * 8 + r % 8)];
        const int got = (byte >> (4 * (r / 8))) & 0xf;
        ASSERT_EQ(got, n < c.n ? v.z(n, g) : 0) << "zero n=" << n << " g=" << g;
      }
    }
  if (spec.has_zeros()) {
    EXPECT_EQ(zz.back(), 0xee) << "wrote past the zeros";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TcLayout,
                         ::testing::Values(Case{64, 128, 32, ScalarType::uint4, DType::f16, DType::f16},
                                           Case{128, 256, 128, ScalarType::uint4b8, DType::f16, DType::bf16},
                                           Case{40, 96, 32, ScalarType::uint4, DType::bf16, DType::bf16},
                                           Case{16, 200, kChannelwise, ScalarType::uint4b8, DType::bf16, DType::f16},
                                           Case{192, 512, 256, ScalarType::uint4, DType::f16, DType::f16}));

TEST(TcLayoutReject, ActOrder) {
  QuantizedLinear q = test::random_linear({64, 64, 32, ScalarType::uint4b8}, DType::f16, false, true);
  std::vector<std::uint8_t> buf(1 << 16);
  EXPECT_THROW(tc16x64_pack(q.view(), DType::f16, buf.data(), buf.data(), buf.data()), Error);
  QuantizedLinear q2 = test::random_linear({64, 64, 32, ScalarType::uint4b8}, DType::f16, false, false);
  EXPECT_THROW(tc16x64_pack(q2.view(), DType::f32, buf.data(), buf.data(), buf.data()), Error);
}

#if W4A16_HAVE_CUDA
// CudaMoe's layout held by the caller, on the host: the arrays' names, dtypes and shapes, their bytes each expert's
// tc16x64_pack one after another; adopt's refusals by name before any device is asked (missing, extra, dtype, shape,
// host memory), and a spec CudaMoe refuses. The runs over adopted arrays: tests/gpu/moe (MoeGpuAdopt).
TEST(CudaMoeLayout, HostArraysAndAdoptChecks) {
  const MoeSpec s{128, 64, 3, 32, ScalarType::uint4};
  MoeWeights w(s, DType::f16);
  std::vector<QuantizedLinear> keep;
  for (int e = 0; e < 3; ++e) {
    keep.push_back(test::random_linear(s.w13_spec(), DType::f16, false, false));
    keep.push_back(test::random_linear(s.w2_spec(), DType::f16, false, false));
    w.set_expert(e, keep[keep.size() - 2].view(), keep.back().view());
  }
  const std::vector<LayoutArray> a = CudaMoe::layout_host(w, DType::bf16);
  const char* names[] = {"w13_qweight", "w13_scales", "w13_zeros", "w2_qweight", "w2_scales", "w2_zeros"};
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 8, 2, 128}, {3, 4, 128}, {3, 4, 64}, {3, 8, 1, 128}, {3, 2, 128}, {3, 2, 64}};
  ASSERT_EQ(a.size(), 6u);
  const Tc16x64Sizes s13 = tc16x64_sizes(s.w13_spec()), s2 = tc16x64_sizes(s.w2_spec());
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(a[i].name, names[i]);
    EXPECT_EQ(a[i].shape, shapes[i]) << names[i];
  }
  for (int e = 0; e < 3; ++e) {
    std::vector<std::uint8_t> q(s13.qweight_bytes), sc(s13.scales_bytes), z(s13.zeros_bytes);
    tc16x64_pack(w.w13(e), DType::bf16, q.data(), sc.data(), z.data());
    EXPECT_EQ(std::memcmp(a[0].bytes.data() + e * q.size(), q.data(), q.size()), 0) << "expert " << e;
    EXPECT_EQ(std::memcmp(a[1].bytes.data() + e * sc.size(), sc.data(), sc.size()), 0) << "expert " << e;
    EXPECT_EQ(std::memcmp(a[2].bytes.data() + e * z.size(), z.data(), z.size()), 0) << "expert " << e;
    std::vector<std::uint8_t> q2(s2.qweight_bytes), sc2(s2.scales_bytes), z2(s2.zeros_bytes);
    tc16x64_pack(w.w2(e), DType::bf16, q2.data(), sc2.data(), z2.data());
    EXPECT_EQ(std::memcmp(a[3].bytes.data() + e * q2.size(), q2.data(), q2.size()), 0) << "expert " << e;
    EXPECT_EQ(std::memcmp(a[5].bytes.data() + e * z2.size(), z2.data(), z2.size()), 0) << "expert " << e;
  }
  auto views = [&](Device d) {
    std::vector<LayoutView> v;
    for (const LayoutArray& x : a) v.push_back({x.name, TensorView(const_cast<std::uint8_t*>(x.bytes.data()), x.dtype, x.shape, d)});
    return v;
  };
  auto refusal = [&](const std::vector<LayoutView>& v, const MoeSpec& spec = {128, 64, 3, 32, ScalarType::uint4}) {
    try {
      CudaMoe::adopt(spec, DType::bf16, v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<LayoutView> v = views(Device::cuda);
  v.erase(v.begin() + 5);
  EXPECT_NE(refusal(v).find("w2_zeros: expected uint8 [3, 2, 64] on the CUDA device (layout cuda.moe.tc16x64.v1), got no array"), std::string::npos) << refusal(v);
  v = views(Device::cuda);
  v.push_back({"router", v[1].view});
  EXPECT_NE(refusal(v).find("router: expected no array of that name"), std::string::npos) << refusal(v);
  v = views(Device::cuda);
  v[4].view.dtype = DType::f16;
  EXPECT_NE(refusal(v).find("w2_scales: expected bfloat16 [3, 2, 128]"), std::string::npos) << refusal(v);
  v = views(Device::cuda);
  v[0].view = TensorView(v[0].view.data, DType::i32, {3, 8, 2, 64}, Device::cuda);
  EXPECT_NE(refusal(v).find("w13_qweight: expected int32 [3, 8, 2, 128]"), std::string::npos) << refusal(v);
  EXPECT_NE(refusal(views(Device::cpu)).find("got int32 [3, 8, 2, 128] on cpu"), std::string::npos) << refusal(views(Device::cpu));
  EXPECT_NE(refusal(views(Device::cuda), {96, 64, 3, 32, ScalarType::uint4}).find("H % 64 == 0"), std::string::npos);
  EXPECT_EQ(CudaMoe::layout_specs({128, 64, 3, 32, ScalarType::uint4b8}, DType::f16).size(), 4u);  // no zeros
}
#endif

}  // namespace
}  // namespace w4a16::moe
