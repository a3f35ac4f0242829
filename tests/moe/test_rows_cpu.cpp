// The CPU MoE fast path's row kernels (src/moe/rows_cpu.hpp): the AVX2 ones (where this CPU has AVX2 and
// FMA) against the portable ones and against a plain f64 sum, on random words, scales and inputs, for every
// group length and odd word counts (a channelwise row of K = 8, 24, 40: the fused kernel's single-word tail).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "rows_cpu.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::moe::detail {
namespace {

// 64-byte aligned floats: the 16-bit pairs are read by aligned loads.
class AlignedFloats {
 public:
  AlignedFloats(std::size_t n, float fill) : p_(static_cast<float*>(::operator new(n * sizeof(float), std::align_val_t{64}))) {
    std::fill(p_, p_ + n, fill);
  }
  ~AlignedFloats() { ::operator delete(p_, std::align_val_t{64}); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data() { return p_; }

 private:
  float* p_;
};

struct Row {
  std::vector<std::uint32_t> q;
  std::vector<float> sc, zs, x;
};

Row random_row(std::int64_t k, std::int64_t group_len, std::mt19937& rng) {
  Row r;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  r.q.resize(static_cast<std::size_t>(k / 8));
  for (auto& w : r.q) w = static_cast<std::uint32_t>(rng());
  for (std::int64_t g = 0; g < k / group_len; ++g) {
    const float s = 0.01f + 0.1f * std::fabs(u(rng));
    r.sc.push_back(s);
    r.zs.push_back(static_cast<float>(rng() % 16) * s);
  }
  r.x.resize(static_cast<std::size_t>(k));
  for (auto& v : r.x) v = u(rng);
  return r;
}

double exact_dot(const Row& r, std::int64_t k, std::int64_t group_len) {
  double acc = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    const std::int64_t g = i / group_len;
    const double w = static_cast<double>((r.q[static_cast<std::size_t>(i / 8)] >> (4 * (i % 8))) & 0xfu) * r.sc[g] - r.zs[g];
    acc += w * r.x[static_cast<std::size_t>(i)];
  }
  return acc;
}

TEST(MoeRows, PortableAndAvx2AgreeWithTheExactSums) {
  std::mt19937 rng(7);
  const RowKernels best = row_kernels();
  struct Case { std::int64_t k, group_len; };
  // (+ K = 96 g = 32, K = 192 g = 64: a last 16-word step holding fewer groups than a full one; K = 8 * 137 channelwise: a tail.)
  for (Case c : {Case{8, 8}, Case{24, 24}, Case{40, 40}, Case{2048, 32}, Case{2048, 64}, Case{2048, 128}, Case{768, 256}, Case{4864, 4864},
                 Case{96, 32}, Case{192, 64}, Case{1096, 1096}}) {
    const Row r = random_row(c.k, c.group_len, rng);
    SCOPED_TRACE("K=" + std::to_string(c.k) + " group_len=" + std::to_string(c.group_len) + " isa=" + best.isa);
    std::vector<float> portable(static_cast<std::size_t>(c.k)), fast(static_cast<std::size_t>(c.k));
    dequant_row_scalar(r.q.data(), c.k, c.group_len, r.sc.data(), r.zs.data(), portable.data());
    best.dequant_row(r.q.data(), c.k, c.group_len, r.sc.data(), r.zs.data(), fast.data());
    for (std::int64_t i = 0; i < c.k; ++i)  // one fused multiply-subtract against two roundings: within 1 ulp of |q s|
      ASSERT_NEAR(fast[static_cast<std::size_t>(i)], portable[static_cast<std::size_t>(i)], 1e-6f) << "k=" << i;
    const double exact = exact_dot(r, c.k, c.group_len);
    double norm = 0;
    for (std::int64_t i = 0; i < c.k; ++i) norm += std::fabs(static_cast<double>(portable[static_cast<std::size_t>(i)]) * r.x[static_cast<std::size_t>(i)]);
    const double tol = 1e-5 * norm + 1e-6;
    EXPECT_NEAR(best.dot(portable.data(), r.x.data(), c.k), exact, tol);
    EXPECT_NEAR(dot_scalar(portable.data(), r.x.data(), c.k), exact, tol);
    if (best.dequant_dot) {
      EXPECT_NEAR(best.dequant_dot(r.q.data(), c.k, c.group_len, r.sc.data(), r.zs.data(), r.x.data()), exact, tol);
    }
    // The planar kernels this CPU runs, each on its own input: the nibble planes (AVX-512, exact up to fp32 sums) and the
    // 16-bit pairs (AVX2 and AVX-512 VNNI: x rounded to 15 bits below each 128 values' largest, so within half a step of
    // that rounding per weight: sum_k |w_k| xs / 2 with xs = max |x| / 32767 of k's block of 128).
    double q16_bound = 0;
    for (std::int64_t i = 0; i < c.k; ++i) {
      float mx = 0.f;
      for (std::int64_t j = i / 128 * 128; j < std::min<std::int64_t>(c.k, i / 128 * 128 + 128); ++j) mx = std::max(mx, std::fabs(r.x[j]));
      q16_bound += std::fabs(static_cast<double>(portable[static_cast<std::size_t>(i)])) * mx / 32767.0 / 2;
    }
    for (const PlanarKernel& pk : planar_kernels_here()) {
      SCOPED_TRACE(pk.isa);
      AlignedFloats planes(static_cast<std::size_t>(planar_floats(c.k)), -1.f);
      std::vector<float> wsum(static_cast<std::size_t>(c.k / 8));
      pk.input(r.x.data(), c.k, planes.data(), wsum.data());
      const double got = pk.dot(r.q.data(), c.k, c.group_len, r.sc.data(), r.zs.data(), planes.data(), wsum.data());
      EXPECT_NEAR(got, exact, pk.input == &x_q16 ? tol + q16_bound : tol);
    }
  }
}

// The 16-bit pairs' kernels over several inputs of one row (the slots of one expert) give each input's single-input
// sum bit for bit: 1..9 inputs (one pass takes 8 on AVX-512 VNNI, 4 on AVX2: more go that many at a time), every group
// length of the row test, each such kernel this CPU runs.
TEST(MoeRows, SeveralInputsAtOnceEqualOneAtATime) {
  int ran = 0;
  for (const PlanarKernel& best : planar_kernels_here()) {
  if (!best.multi) continue;
  SCOPED_TRACE(best.isa);
  ++ran;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const auto& [k, gl] : {std::pair<std::int64_t, std::int64_t>{2048, 32}, {2048, 64}, {768, 128}, {1096, 1096}, {96, 32}}) {
    const Row r = random_row(k, gl, rng);
    std::vector<std::unique_ptr<AlignedFloats>> planes;
    std::vector<std::vector<float>> wsums;
    std::vector<const float*> pp, wp;
    std::vector<float> single;
    for (int c = 0; c < 9; ++c) {
      std::vector<float> x(static_cast<std::size_t>(k));
      for (auto& v : x) v = u(rng);
      planes.push_back(std::make_unique<AlignedFloats>(static_cast<std::size_t>(planar_floats(k)), 0.f));
      wsums.emplace_back(static_cast<std::size_t>(k / 8));
      best.input(x.data(), k, planes.back()->data(), wsums.back().data());
      single.push_back(best.dot(r.q.data(), k, gl, r.sc.data(), r.zs.data(), planes.back()->data(), wsums.back().data()));
    }
    for (auto& p : planes) pp.push_back(p->data());
    for (auto& w : wsums) wp.push_back(w.data());
    for (int count = 1; count <= 9; ++count) {
      std::vector<float> out(static_cast<std::size_t>(count), -1.f);
      best.multi(r.q.data(), k, gl, r.sc.data(), r.zs.data(), pp.data(), wp.data(), count, out.data());
      for (int c = 0; c < count; ++c) EXPECT_EQ(out[c], single[c]) << "K=" << k << " group_len=" << gl << " count=" << count << " input " << c;
    }
  }
  }
  if (ran == 0) GTEST_SKIP() << "no AVX2 here: no multi-input kernel is exercised";
}

// x_q16 (the VNNI kernel's input) against its definition: per 128 values a scale max |x| / 32767, the values rounded to
// int16 by it and paired as nibbles i and i + 4 of each word are; zero past K; a NaN or infinity makes the block's
// scale NaN (so the rows' sums are NaN, never a number), a zero block a zero scale.
TEST(MoeRows, SixteenBitPairsFollowTheirDefinition) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (const std::int64_t k : {8, 136, 256, 1096}) {
    SCOPED_TRACE("K=" + std::to_string(k));
    std::vector<float> x(static_cast<std::size_t>(k));
    for (auto& v : x) v = u(rng);
    const std::int64_t words = k / 8, steps = (words + 15) / 16;
    if (k >= 136) std::fill(x.begin() + 128, x.begin() + 136, 0.f);  // k = 128..135 ...
    if (k == 136) x[128] = 0.f;                                        // ... an all-zero block at K = 136
    if (k == 1096) x[300] = std::numeric_limits<float>::infinity();  // block 2
    if (k == 256)  // block 1 in bfloat16's subnormal range: 32767 / max |x| is past a float's range
      for (std::int64_t i = 128; i < 256; ++i) x[i] *= 1e-39f;
    AlignedFloats planes(static_cast<std::size_t>(planar_floats(k)), -7.f);
    std::vector<float> wsum(static_cast<std::size_t>(words));
    x_q16(x.data(), k, planes.data(), wsum.data());
    const auto* pairs = reinterpret_cast<const std::int32_t*>(planes.data());
    const float* xs = planes.data() + steps * 64;
    for (std::int64_t st = 0; st < steps; ++st) {
      float mx = 0.f;
      bool finite = true;
      for (std::int64_t i = st * 128; i < std::min(k, st * 128 + 128); ++i) mx = std::max(mx, std::fabs(x[i])), finite = finite && std::isfinite(x[i]);
      if (!finite) {
        EXPECT_TRUE(std::isnan(xs[st])) << "step " << st;
        continue;
      }
      EXPECT_EQ(xs[st], static_cast<float>(static_cast<double>(mx) / 32767.0)) << "step " << st;
      if (mx > 0.f) {  // (a subnormal scale in bfloat16's subnormal range, but not zero)
        EXPECT_GT(xs[st], 0.f) << "step " << st;
      }
      for (int l = 0; l < 16; ++l)
        for (int i = 0; i < 4; ++i) {
          const std::int64_t w = st * 16 + l;
          const std::int32_t word = pairs[st * 64 + i * 16 + l];
          const auto lo = static_cast<std::int16_t>(word & 0xFFFF), hi = static_cast<std::int16_t>(static_cast<std::uint32_t>(word) >> 16);
          if (w >= words) {
            EXPECT_EQ(word, 0) << "past K: step " << st << " lane " << l;
            continue;
          }
          for (const auto& [got, kk] : {std::pair{lo, 8 * w + i}, std::pair{hi, 8 * w + i + 4}}) {
            const double want = mx > 0 ? x[kk] / (static_cast<double>(mx) / 32767.0) : 0.0;
            EXPECT_LE(std::fabs(got - want), 0.5 + 1e-3) << "k=" << kk;  // rounded to the nearest
            EXPECT_LE(std::abs(static_cast<int>(got)), 32767) << "k=" << kk;
          }
        }
    }
    for (std::int64_t w = 0; w < words; ++w) {
      float s = 0.f;
      for (int i = 0; i < 8; ++i) s += x[8 * w + i];
      if (std::isfinite(s)) {
        EXPECT_EQ(wsum[w], s) << "word " << w;
      }
    }
  }
}

// A row's group factors from its scale bits and packed zero points: every group count around the 8-wide steps (and its
// tail), float16 (normal, subnormal, negative) and bfloat16 bits, uint4b8 (z = 8) and every nibble position of the zero
// words; bit-exact against the scale decoded by core/half.hpp (exhaustively tested in tests/core) times z.
TEST(MoeRows, GroupScalesDecodeTheBitsExactly) {
  std::mt19937 rng(11);
  const RowKernels best = row_kernels();
  for (const std::int64_t groups : {1, 7, 8, 9, 16, 17, 56}) {
    std::vector<std::uint16_t> s(static_cast<std::size_t>(groups));
    std::vector<std::int32_t> words(static_cast<std::size_t>(groups));
    for (auto& w : words) w = static_cast<std::int32_t>(rng());
    for (const bool bf16 : {false, true}) {
      for (std::int64_t g = 0; g < groups; ++g)  // finite values of either format; g % 5 == 4: a float16 subnormal
        s[static_cast<std::size_t>(g)] = static_cast<std::uint16_t>(
            bf16 ? (rng() & 0x807f) | (0x3c00 + (rng() % 0x600)) : (g % 5 == 4 ? rng() & 0x83ff : (rng() & 0x83ff) | (0x0400 + (rng() % 0x7400))));
      for (const bool zeros : {false, true})
        for (int shift = 0; shift < (zeros ? 32 : 4); shift += 4) {
          SCOPED_TRACE("groups=" + std::to_string(groups) + (bf16 ? " bf16" : " f16") + (zeros ? " zero shift " + std::to_string(shift) : " uint4b8") +
                       " isa=" + best.isa);
          std::vector<float> sc(static_cast<std::size_t>(groups), -1.f), zs(sc), sc0(sc), zs0(sc);
          best.group_scales(s.data(), bf16, zeros ? words.data() : nullptr, shift, groups, sc.data(), zs.data());
          group_scales_scalar(s.data(), bf16, zeros ? words.data() : nullptr, shift, groups, sc0.data(), zs0.data());
          for (std::int64_t g = 0; g < groups; ++g) {
            const std::size_t i = static_cast<std::size_t>(g);
            const float want = f16x_to_float(bf16 ? DType::bf16 : DType::f16, s[i]);
            const int z = zeros ? static_cast<int>((static_cast<std::uint32_t>(words[i]) >> shift) & 0xfu) : 8;
            EXPECT_EQ(sc[i], want) << "g=" << g;
            EXPECT_EQ(zs[i], static_cast<float>(z) * want) << "g=" << g;
            EXPECT_EQ(sc0[i], want) << "portable, g=" << g;
            EXPECT_EQ(zs0[i], static_cast<float>(z) * want) << "portable, g=" << g;
          }
        }
    }
  }
}

TEST(MoeRows, ThePlanarKernelRunsHereOrSaysWhyNot) {
  if (const char* e = std::getenv("W4A16_CPU_ISA"); e && *e) GTEST_SKIP() << "W4A16_CPU_ISA is set: this test checks the uncapped choice";
  const RowKernels k = row_kernels();
  if (!k.dequant_dot_planar) GTEST_SKIP() << "no AVX-512 F/BW/VL here (or W4A16_CPU_ISA caps it): the planar row kernel is not exercised";
  const std::vector<PlanarKernel> all = planar_kernels_here();  // the best of them is the one chosen
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(k.dequant_dot_planar, all.back().dot);
  EXPECT_EQ(k.planar_input, all.back().input);
  EXPECT_STREQ(k.isa, all.back().isa);
  EXPECT_STREQ(all.front().isa, "avx2-q16");
  const RowKernels a = [] {
    w4a16::test::ScopedEnv cap("W4A16_CPU_ISA", "avx2");  // the AVX2 16-bit pairs, nothing wider
    return row_kernels();
  }();
  EXPECT_STREQ(a.isa, "avx2-q16");
  EXPECT_EQ(a.dequant_dot_planar, all.front().dot);
}

TEST(MoeRows, ScalarKnobSelectsThePortableKernels) {
  const RowKernels k = [] {
    w4a16::test::ScopedEnv cap("W4A16_CPU_ISA", "scalar");
    return row_kernels();
  }();
  EXPECT_STREQ(k.isa, "scalar");
  EXPECT_EQ(k.dequant_row, &dequant_row_scalar);
  EXPECT_EQ(k.group_scales, &group_scales_scalar);
  EXPECT_EQ(k.dequant_dot, nullptr);
  EXPECT_EQ(k.dequant_dot_planar, nullptr);
}

TEST(MoeRows, AnUnknownIsaCapIsRefusedByName) {
  // The row kernels read W4A16_CPU_ISA through kernels/cpu's fast_isa_cap, as the linear kernel does (on x86-64 builds).
#if defined(__x86_64__)
  w4a16::test::ScopedEnv cap("W4A16_CPU_ISA", "sse");
  try {
    row_kernels();
    ADD_FAILURE() << "expected an error naming W4A16_CPU_ISA";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("W4A16_CPU_ISA", 0), 0u) << e.what();
  }
#else
  GTEST_SKIP() << "not an x86-64 build: the portable row kernels read no ISA cap";
#endif
}

}  // namespace
}  // namespace w4a16::moe::detail
