// The MoE layer on the CPU: moe_reference and moe_cpu against an oracle written here from the
// FORMATS.md definition (test::dequant_f64, f64 throughout), over T, top-k, dtypes, scalar
// types and group sizes; empty experts; every token on one expert; determinism; rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/cpu/fast.hpp"  // whether the AMX expert path runs here
#include "moe_case.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {
namespace {

struct Problem {
  MoeWeights w;
  std::vector<std::vector<double>> w13, w2;  // dequantized per expert, [2I, H] and [H, I]
  std::vector<std::uint16_t> x;
  std::vector<std::int32_t> ids;
  std::vector<float> tw;
  std::int64_t T = 0;
  int k = 0;
  DType act = DType::f16;
};

Problem make_problem(const MoeSpec& s, DType act, std::int64_t T, int k) {
  Problem p;
  p.w = random_moe_weights(s, act, [&](const QuantizedLinear& a, const QuantizedLinear& b) {
    p.w13.push_back(test::dequant_f64(a));
    p.w2.push_back(test::dequant_f64(b));
  });
  p.T = T;
  p.k = k;
  p.act = act;
  p.x = test::random_act(T, s.hidden, act);
  // Distinct experts per token (as top-k gives), random positive weights summing to 1.
  auto& g = test::rng();
  p.ids.resize(static_cast<std::size_t>(T * k));
  p.tw.resize(static_cast<std::size_t>(T * k));
  std::vector<int> perm(static_cast<std::size_t>(s.experts));
  for (std::int64_t t = 0; t < T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), g);
    float sum = 0;
    for (int j = 0; j < k; ++j) {
      p.ids[t * k + j] = perm[j];
      sum += (p.tw[t * k + j] = std::uniform_real_distribution<float>(0.1f, 1.f)(g));
    }
    for (int j = 0; j < k; ++j) p.tw[t * k + j] /= sum;
  }
  return p;
}

std::vector<double> oracle(const Problem& p) {
  const MoeSpec& s = p.w.spec();
  const std::int64_t H = s.hidden, I = s.intermediate;
  std::vector<double> x = test::to_f64(p.x.data(), p.act, p.T, H, H), y(static_cast<std::size_t>(p.T * H), 0.0);
  for (std::int64_t t = 0; t < p.T; ++t)
    for (int j = 0; j < p.k; ++j) {
      const int e = p.ids[t * p.k + j];
      std::vector<double> xt(x.begin() + t * H, x.begin() + (t + 1) * H);
      std::vector<double> g = test::gemm_f64(xt, p.w13[e], {}, 1, 2 * I, H);
      std::vector<double> h(static_cast<std::size_t>(I));
      for (std::int64_t n = 0; n < I; ++n) h[n] = g[n] / (1 + std::exp(-g[n])) * g[I + n];
      std::vector<double> o = test::gemm_f64(h, p.w2[e], {}, 1, H, I);
      for (std::int64_t n = 0; n < H; ++n) y[t * H + n] += p.tw[t * p.k + j] * o[n];
    }
  return y;
}

struct Output {
  std::vector<std::uint16_t> out;
  std::vector<double> f64;
};

Output run_layer(const Problem& p, bool fast, int threads = 2) {
  const MoeSpec& s = p.w.spec();
  Output r;
  r.out.assign(static_cast<std::size_t>(p.T * s.hidden), test::poison_bits(p.act));
  MoeArgs a;
  a.x = TensorView(const_cast<std::uint16_t*>(p.x.data()), p.act, {p.T, s.hidden});
  a.topk_ids = TensorView(const_cast<std::int32_t*>(p.ids.data()), DType::i32, {p.T, p.k});
  a.topk_weights = TensorView(const_cast<float*>(p.tw.data()), DType::f32, {p.T, p.k});
  a.out = TensorView(r.out.data(), p.act, {p.T, s.hidden});
  if (fast) {
    std::vector<unsigned char> ws(moe_cpu_workspace_bytes(s, p.T, p.k, threads));
    moe_cpu(p.w, a, ws.data(), ws.size(), threads);
  } else {
    moe_reference(p.w, a);
  }
  r.f64 = test::to_f64(r.out.data(), p.act, p.T, s.hidden, s.hidden);
  return r;
}

class MoeCpu : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeCpu, ReferenceAndFastMatchTheOracle) {
  const MoeCase c = GetParam();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  MoeSpec s{c.H, c.I, c.E, c.g, c.st};
  Problem p = make_problem(s, c.act, c.T, c.k);
  const std::vector<double> want = oracle(p);
  // The reference rounds only its output: it must sit within one output rounding of the oracle.
  if (c.T * c.k * (3 * c.H * c.I) <= 50'000'000) {
    Output ref = run_layer(p, false);
    EXPECT_LT(test::rel_error(ref.f64, want), c.act == DType::bf16 ? 4e-3 : 5e-4);
  }
  Output fast = run_layer(p, true);
  EXPECT_LT(test::rel_error(fast.f64, want), test::tolerance(c.act));
  // Where the CPU has AMX, experts with >= 2 slots run on the tiles (kernels/cpu amx_gemm_canonical): every expert on
  // them, and none, must match the oracle as well.
  if (kernels::cpu::fast_isa_available(kernels::cpu::FastIsa::amx))
    for (const char* min : {"1", "0"}) {
      test::ScopedEnv env("W4A16_MOE_CPU_AMX_MIN", min);
      SCOPED_TRACE(std::string("W4A16_MOE_CPU_AMX_MIN=") + min);
      EXPECT_LT(test::rel_error(run_layer(p, true).f64, want), test::tolerance(c.act));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MoeCpu,
    ::testing::Values(MoeCase{1, 1, 4, 64, 32, 32, ScalarType::uint4b8, DType::f16},
                      MoeCase{1, 8, 16, 128, 64, 64, ScalarType::uint4, DType::bf16},
                      MoeCase{2, 2, 8, 256, 128, 128, ScalarType::uint4, DType::f16},
                      MoeCase{7, 2, 8, 256, 128, 128, ScalarType::uint4b8, DType::bf16},
                      MoeCase{7, 8, 32, 64, 64, kChannelwise, ScalarType::uint4, DType::f16},
                      MoeCase{64, 8, 16, 256, 256, 256, ScalarType::uint4b8, DType::f16},
                      MoeCase{64, 1, 4, 96, 32, 32, ScalarType::uint4, DType::bf16},
                      MoeCase{1000, 2, 8, 64, 32, 32, ScalarType::uint4b8, DType::bf16},
                      MoeCase{1000, 8, 16, 32, 16, kChannelwise, ScalarType::uint4, DType::f16},
                      // >= 8 groups per row (the row kernels' vector step of group factors, and its tail: G = 16 / 8, 9 / 4)
                      MoeCase{5, 4, 8, 512, 256, 32, ScalarType::uint4, DType::f16},
                      MoeCase{3, 2, 8, 576, 256, 64, ScalarType::uint4, DType::bf16},
                      // work items of rows that do not divide the layer (rows_per_item: 132 of I = 352, 408 of H = 1088)
                      MoeCase{1, 3, 8, 1088, 352, 32, ScalarType::uint4b8, DType::f16}),
    moe_case_name);

TEST(MoeCpuEdge, EmptyExpertsAndAllOnOneExpert) {
  MoeSpec s{64, 32, 8, 32, ScalarType::uint4};
  for (DType act : {DType::f16, DType::bf16}) {
    Problem p = make_problem(s, act, 33, 2);
    for (std::int64_t t = 0; t < p.T; ++t) {  // expert 5 in every token, expert 2 in a few, the rest empty
      p.ids[t * 2] = 5;
      p.ids[t * 2 + 1] = t % 4 == 0 ? 2 : 7;
    }
    const std::vector<double> want = oracle(p);
    EXPECT_LT(test::rel_error(run_layer(p, true).f64, want), test::tolerance(act));
    EXPECT_LT(test::rel_error(run_layer(p, false).f64, want), test::tolerance(act));
    Problem q = make_problem(s, act, 20, 1);
    for (auto& v : q.ids) v = 3;  // k = 1: every token on expert 3, weight 1
    EXPECT_LT(test::rel_error(run_layer(q, true).f64, oracle(q)), test::tolerance(act));
  }
}

TEST(MoeCpuEdge, DeterministicAcrossThreadCounts) {
  MoeSpec s{128, 64, 16, 64, ScalarType::uint4b8};
  Problem p = make_problem(s, DType::bf16, 50, 8);
  Output a = run_layer(p, true, 1), b = run_layer(p, true, 2), c = run_layer(p, true, 2);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(b.out, c.out);
  // The AMX experts: in parallel one thread each (many of them) or one at a time threaded inside (few: T = 3).
  if (!kernels::cpu::fast_isa_available(kernels::cpu::FastIsa::amx)) return;
  test::ScopedEnv env("W4A16_MOE_CPU_AMX_MIN", "1");
  EXPECT_EQ(run_layer(p, true, 1).out, run_layer(p, true, 2).out);
  Problem q = make_problem(s, DType::f16, 3, 1);
  EXPECT_EQ(run_layer(q, true, 1).out, run_layer(q, true, 4).out);
}

TEST(MoeCpuEdge, AmxThresholdKnobIsChecked) {
  MoeSpec s{64, 32, 4, 32, ScalarType::uint4};
  Problem p = make_problem(s, DType::f16, 4, 2);
  if (!kernels::cpu::fast_isa_available(kernels::cpu::FastIsa::amx)) GTEST_SKIP() << "no AMX here: the knob is not read";
  test::ScopedEnv env("W4A16_MOE_CPU_AMX_MIN", "two");
  try {
    run_layer(p, true);
    ADD_FAILURE() << "expected an error naming W4A16_MOE_CPU_AMX_MIN";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("W4A16_MOE_CPU_AMX_MIN", 0), 0u) << e.what();
  }
}

TEST(MoeCpuEdge, FusedGateUpIsGateRowsThenUpRows) {
  MoeSpec s{64, 32, 2, 32, ScalarType::uint4};
  MoeWeights w(s, DType::f16);
  QuantSpec half{32, 64, 32, ScalarType::uint4};
  QuantizedLinear g = test::random_linear(half, DType::f16, false, false);
  QuantizedLinear u = test::random_linear(half, DType::f16, false, false);
  QuantizedLinear d = test::random_linear(s.w2_spec(), DType::f16, false, false);
  w.set_expert(1, g.view(), u.view(), d.view());
  const CanonicalView f = w.w13(1), gv = g.view(), uv = u.view(), dv = d.view(), w2 = w.w2(1);
  for (std::int64_t n = 0; n < 32; ++n)
    for (std::int64_t k = 0; k < 64; ++k) {
      ASSERT_EQ(f.q(n, k), gv.q(n, k));
      ASSERT_EQ(f.q(32 + n, k), uv.q(n, k));
      ASSERT_EQ(f.w(n, k), gv.w(n, k));
      ASSERT_EQ(f.w(32 + n, k), uv.w(n, k));
      ASSERT_EQ(w2.w(k, n), dv.w(k, n));
    }
}

TEST(MoeCpuEdge, Rejections) {
  MoeSpec s{64, 32, 4, 32, ScalarType::uint4b8};
  Problem p = make_problem(s, DType::f16, 3, 2);
  std::vector<std::uint16_t> out(3 * 64);
  MoeArgs a;
  a.x = TensorView(p.x.data(), DType::f16, {3, 64});
  a.topk_ids = TensorView(p.ids.data(), DType::i32, {3, 2});
  a.topk_weights = TensorView(p.tw.data(), DType::f32, {3, 2});
  a.out = TensorView(out.data(), DType::f16, {3, 64});
  std::vector<unsigned char> ws(moe_cpu_workspace_bytes(s, 3, 2, 1));
  EXPECT_NO_THROW(moe_cpu(p.w, a, ws.data(), ws.size(), 1));
  EXPECT_THROW(moe_cpu(p.w, a, ws.data(), ws.size() - 1, 1), Error);
  MoeArgs b = a;
  b.x.dtype = DType::bf16;  // x and out disagree
  EXPECT_THROW(moe_reference(p.w, b), Error);
  b = a;
  b.x = TensorView(p.x.data(), DType::f16, {3, 32});
  EXPECT_THROW(moe_reference(p.w, b), Error);
  b = a;
  b.topk_weights.dtype = DType::f16;
  EXPECT_THROW(moe_cpu(p.w, b, ws.data(), ws.size(), 1), Error);
  p.ids[3] = 4;  // out of range
  try {
    moe_reference(p.w, a);
    ADD_FAILURE() << "expert id 4 of 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("topk_ids[1, 1]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MoeWeights(MoeSpec{60, 32, 4, 32, ScalarType::uint4b8}, DType::f16), Error);  // H % g
  EXPECT_THROW(MoeWeights(s, DType::f32), Error);
  QuantizedLinear wrong = test::random_linear({64, 64, 32, ScalarType::uint4b8}, DType::f16, false, false);
  QuantizedLinear biased = test::random_linear(s.w13_spec(), DType::f16, true, false);
  QuantizedLinear good13 = test::random_linear(s.w13_spec(), DType::f16, false, false);
  EXPECT_THROW(p.w.set_expert(0, good13.view(), wrong.view()), Error);  // w2 shape [64, 64] for [64, 32]
  EXPECT_THROW(p.w.set_expert(0, biased.view(), p.w.w2(0)), Error);     // experts carry no bias
  QuantizedLinear w13b = test::random_linear(s.w13_spec(), DType::bf16, false, false);
  QuantizedLinear w2 = test::random_linear(s.w2_spec(), DType::f16, false, false);
  EXPECT_THROW(p.w.set_expert(0, w13b.view(), w2.view()), Error);  // scale dtype
  EXPECT_THROW(p.w.set_expert(4, w13b.view(), w2.view()), Error);  // expert index
}

}  // namespace
}  // namespace w4a16::moe
