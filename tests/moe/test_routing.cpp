// Routing (softmax / top-k / renormalize) against an independent sort-based implementation,
// and alignment: the FORMATS.md worked example verbatim plus its invariants on random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/moe/moe.hpp"
#include "w4a16/moe/moe_cuda.hpp"

namespace w4a16::moe {
namespace {

TEST(MoeAlign, FormatsWorkedExampleVerbatim) {
  // shared/FORMATS.md: E = 4, k = 3, block 4.
  const std::int32_t ids[] = {1, 2, 3, 0, 1, 3, 0, 2, 3, 0, 1, 2};
  Alignment a = align_cpu(ids, 4, 3, 4, 4);
  const std::vector<std::int32_t> sorted = {3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12};
  const std::vector<std::int32_t> experts = {0, 1, 2, 3};
  EXPECT_EQ(a.sorted_ids, sorted);
  EXPECT_EQ(a.block_expert, experts);
  EXPECT_EQ(a.total, 16);
  EXPECT_LE(a.total, aligned_capacity(4, 3, 4, 4));
}

TEST(MoeAlign, RandomInvariants) {
  auto& g = test::rng();
  for (int trial = 0; trial < 50; ++trial) {
    const int E = std::uniform_int_distribution<int>(1, 40)(g);
    const int k = std::uniform_int_distribution<int>(1, std::min(E, 8))(g);
    const std::int64_t T = std::uniform_int_distribution<int>(0, 300)(g);
    const int block = std::vector<int>{1, 3, 8, 16, 64}[trial % 5];
    std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k));
    // Skewed draws (square of a uniform) so that some experts get nothing and some very many.
    for (auto& v : ids) {
      double u = std::uniform_real_distribution<double>(0, 1)(g);
      v = std::min(E - 1, static_cast<int>(u * u * E));
    }
    Alignment a = align_cpu(ids.data(), T, k, E, block);
    SCOPED_TRACE("E=" + std::to_string(E) + " k=" + std::to_string(k) + " T=" + std::to_string(T));
    ASSERT_EQ(a.total % block, 0);
    ASSERT_EQ(static_cast<std::int64_t>(a.sorted_ids.size()), a.total);
    ASSERT_EQ(static_cast<std::int64_t>(a.block_expert.size()) * block, a.total);
    ASSERT_LE(a.total, aligned_capacity(T, k, E, block));
    std::vector<int> seen(static_cast<std::size_t>(T * k), 0);
    for (std::int64_t p = 0; p < a.total; ++p) {
      const std::int32_t s = a.sorted_ids[p], e = a.block_expert[p / block];
      if (s == T * k) continue;  // padding
      ASSERT_GE(s, 0);
      ASSERT_LT(s, T * k);
      ++seen[s];
      EXPECT_EQ(ids[s], e) << "slot " << s << " in a block of expert " << e;
      if (p > 0 && a.block_expert[(p - 1) / block] == e && a.sorted_ids[p - 1] != T * k) {
        EXPECT_LT(a.sorted_ids[p - 1], s) << "slots of an expert ascend";
      }
    }
    for (auto c : seen) ASSERT_EQ(c, 1);
    // Expert ids of blocks ascend, and an expert with no slot has no block.
    EXPECT_TRUE(std::is_sorted(a.block_expert.begin(), a.block_expert.end()));
    for (int e = 0; e < E; ++e) {
      const auto cnt = std::count(ids.begin(), ids.end(), e);
      const auto blocks = std::count(a.block_expert.begin(), a.block_expert.end(), e);
      EXPECT_EQ(blocks, (cnt + block - 1) / block);
    }
  }
}

TEST(MoeAlign, Rejections) {
  const std::int32_t bad[] = {0, 5};
  EXPECT_THROW(align_cpu(bad, 1, 2, 4, 4), Error);  // id 5 >= E
  const std::int32_t neg[] = {-1};
  EXPECT_THROW(align_cpu(neg, 1, 1, 4, 4), Error);
  const std::int32_t ok[] = {0};
  EXPECT_THROW(align_cpu(ok, 1, 1, 4, 0), Error);   // block 0
  EXPECT_THROW(align_cpu(ok, 1, 5, 4, 4), Error);   // k > E
  try {
    align_cpu(bad, 1, 2, 4, 4);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("topk_ids[1]"), std::string::npos) << e.what();
  }
}

// Independent routing: probabilities in f64, indices sorted by (-p, id).
void route_f64(const std::vector<float>& l, std::int64_t T, int E, int k, bool renorm, std::vector<int>& ids,
               std::vector<double>& w) {
  ids.assign(static_cast<std::size_t>(T * k), -1);
  w.assign(static_cast<std::size_t>(T * k), 0);
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<double> p(static_cast<std::size_t>(E));
    double mx = -INFINITY, sum = 0;
    for (int e = 0; e < E; ++e) mx = std::max(mx, static_cast<double>(l[t * E + e]));
    for (int e = 0; e < E; ++e) sum += (p[e] = std::exp(l[t * E + e] - mx));
    std::vector<int> order(static_cast<std::size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double top = 0;
    for (int j = 0; j < k; ++j) top += p[order[j]] / sum;
    for (int j = 0; j < k; ++j) {
      ids[t * k + j] = order[j];
      w[t * k + j] = p[order[j]] / sum / (renorm ? top : 1.0);
    }
  }
}

TEST(MoeRouting, MatchesIndependentSoftmaxTopK) {
  auto& g = test::rng();
  for (int E : {4, 60, 128}) {
    for (int k : {1, 2, 8}) {
      if (k > E) continue;
      for (bool renorm : {true, false}) {
        const std::int64_t T = 37;
        std::vector<float> logits(static_cast<std::size_t>(T * E));
        std::normal_distribution<float> nd(0.f, 2.f);
        for (auto& v : logits) v = nd(g);
        std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k), -7);
        std::vector<float> w(static_cast<std::size_t>(T * k), NAN);
        route_cpu(logits.data(), T, E, {k, renorm}, ids.data(), w.data());
        std::vector<int> rid;
        std::vector<double> rw;
        route_f64(logits, T, E, k, renorm, rid, rw);
        for (std::int64_t i = 0; i < T * k; ++i) {
          ASSERT_EQ(ids[i], rid[i]) << "E=" << E << " k=" << k << " i=" << i;
          ASSERT_NEAR(w[i], rw[i], 1e-6 * std::max(1.0, rw[i])) << "E=" << E << " k=" << k << " i=" << i;
        }
        for (std::int64_t t = 0; t < T && renorm; ++t) {
          double s = 0;
          for (int j = 0; j < k; ++j) s += w[t * k + j];
          EXPECT_NEAR(s, 1.0, 1e-6);
        }
      }
    }
  }
}

TEST(MoeRouting, TiesGoToTheLowerId) {
  const float logits[] = {1.f, 3.f, 3.f, 0.f, 3.f};
  std::int32_t ids[3];
  float w[3];
  route_cpu(logits, 1, 5, {3, true}, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_EQ(ids[2], 4);
  EXPECT_NEAR(w[0], 1.0 / 3, 1e-7);
}

TEST(MoeRouting, Rejections) {
  const float l[4] = {0, 0, 0, 0};
  std::int32_t ids[8];
  float w[8];
  EXPECT_THROW(route_cpu(l, 1, 4, {5, true}, ids, w), Error);
  EXPECT_THROW(route_cpu(l, 1, 4, {0, true}, ids, w), Error);
  EXPECT_THROW(route_cpu(l, -1, 4, {1, true}, ids, w), Error);
}

// The CUDA path choice is a pure host function: direct for <= 32 slots, then the smallest
// block for the average slots per expert (8 up to 8, 16 up to 14, 32 below 32, 64 below 64, then 128), monotone in T.
TEST(MoePlan, BlockChoice) {
  EXPECT_EQ(CudaMoe::choose_block(1, 8, 128), 1);
  EXPECT_EQ(CudaMoe::choose_block(4, 8, 128), 1);
  EXPECT_EQ(CudaMoe::choose_block(16, 8, 128), 8);
  EXPECT_EQ(CudaMoe::choose_block(64, 8, 128), 8);
  EXPECT_EQ(CudaMoe::choose_block(128, 8, 128), 8);
  EXPECT_EQ(CudaMoe::choose_block(192, 8, 128), 16);
  EXPECT_EQ(CudaMoe::choose_block(224, 8, 128), 16);
  EXPECT_EQ(CudaMoe::choose_block(240, 8, 128), 32);
  EXPECT_EQ(CudaMoe::choose_block(256, 8, 128), 32);
  EXPECT_EQ(CudaMoe::choose_block(512, 8, 128), 64);
  EXPECT_EQ(CudaMoe::choose_block(1024, 8, 128), 128);
  EXPECT_EQ(CudaMoe::choose_block(4096, 8, 128), 128);
  int last = 0;
  for (std::int64_t T = 1; T <= 8192; T *= 2) {
    const int b = CudaMoe::choose_block(T, 8, 128);
    EXPECT_GE(b, last) << "T=" << T;
    last = b;
  }
  EXPECT_NE(CudaMoe::explain_block(1, 8, 128).find("direct"), std::string::npos);
  EXPECT_NE(CudaMoe::explain_block(192, 8, 128).find("blocks of 16"), std::string::npos);
  EXPECT_NE(CudaMoe::explain_block(512, 8, 128).find("blocks of 64"), std::string::npos);
  EXPECT_NE(CudaMoe::explain_block(1024, 8, 128).find("blocks of 128"), std::string::npos);
}

}  // namespace
}  // namespace w4a16::moe
