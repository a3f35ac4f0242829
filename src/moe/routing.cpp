// Routing (softmax, top-k, renormalize) and alignment on the CPU: the readable definitions
// that the CUDA kernels (src/kernels/cuda/moe/routing.cu) must reproduce exactly.
// Checked by tests/moe/test_routing.cpp (FORMATS.md worked example verbatim).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "w4a16/core/error.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

namespace {
void check_routing_shape(std::int64_t tokens, int experts, int top_k) {
  if (tokens < 0) fail(ErrorCode::invalid_argument, "tokens", ">= 0", std::to_string(tokens));
  if (experts <= 0) fail(ErrorCode::invalid_argument, "experts", ">= 1", std::to_string(experts));
  if (top_k < 1 || top_k > experts)
    fail(ErrorCode::invalid_argument, "top_k", "1 <= top_k <= experts = " + std::to_string(experts),
         std::to_string(top_k));
}
}  // namespace

void route_cpu(const float* logits, std::int64_t tokens, int experts, const RoutingOptions& opt,
               std::int32_t* topk_ids, float* topk_weights) {
  check_routing_shape(tokens, experts, opt.top_k);
  const int k = opt.top_k;
  std::vector<float> p(static_cast<std::size_t>(experts));
  std::vector<bool> taken(static_cast<std::size_t>(experts));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * experts;
    float mx = -INFINITY;
    for (int e = 0; e < experts; ++e) mx = std::max(mx, l[e]);
    float sum = 0.f;
    for (int e = 0; e < experts; ++e) sum += (p[e] = std::exp(l[e] - mx));
    std::fill(taken.begin(), taken.end(), false);
    float picked = 0.f;
    // k rounds of argmax, ties to the lower id: the same selection order as the CUDA warp argmax.
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < experts; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
      taken[best] = true;
      topk_ids[t * k + j] = best;
      topk_weights[t * k + j] = p[best] / sum;
      picked += p[best] / sum;
    }
    if (opt.renormalize)
      for (int j = 0; j < k; ++j) topk_weights[t * k + j] /= picked;
  }
}

std::int64_t aligned_capacity(std::int64_t tokens, int top_k, int experts, int block) {
  if (block < 1) fail(ErrorCode::invalid_argument, "block", ">= 1", std::to_string(block));
  return tokens * top_k + static_cast<std::int64_t>(experts) * (block - 1);
}

Alignment align_cpu(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block) {
  check_routing_shape(tokens, experts, top_k);
  if (block < 1) fail(ErrorCode::invalid_argument, "block", ">= 1", std::to_string(block));
  const std::int64_t slots = tokens * top_k;
  const auto sentinel = static_cast<std::int32_t>(slots);
  std::vector<std::vector<std::int32_t>> per(static_cast<std::size_t>(experts));
  for (std::int64_t s = 0; s < slots; ++s) {
    std::int32_t e = topk_ids[s];
    if (e < 0 || e >= experts)
      fail(ErrorCode::invalid_argument, "topk_ids[" + std::to_string(s) + "]",
           "an expert id in [0, " + std::to_string(experts) + ")", std::to_string(e));
    per[static_cast<std::size_t>(e)].push_back(static_cast<std::int32_t>(s));
  }
  Alignment a;
  for (int e = 0; e < experts; ++e) {
    const auto& v = per[static_cast<std::size_t>(e)];
    const std::int64_t padded = (static_cast<std::int64_t>(v.size()) + block - 1) / block * block;
    a.sorted_ids.insert(a.sorted_ids.end(), v.begin(), v.end());
    a.sorted_ids.insert(a.sorted_ids.end(), static_cast<std::size_t>(padded) - v.size(), sentinel);
    a.block_expert.insert(a.block_expert.end(), static_cast<std::size_t>(padded / block), e);
  }
  a.total = static_cast<std::int64_t>(a.sorted_ids.size());
  return a;
}

}  // namespace w4a16::moe
