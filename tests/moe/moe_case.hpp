// One MoE layer case of the parameterised layer tests, shared by tests/moe (CPU) and
// tests/gpu/moe (CUDA), its gtest name, and the random experts both draw. Host-only: no CUDA here.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "testutil.hpp"
#include "w4a16/core/canonical.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

struct MoeCase {
  std::int64_t T;     // tokens
  int k, E;           // experts per token, experts
  std::int64_t H, I;  // hidden, intermediate
  int g;              // group size, or kChannelwise
  ScalarType st;
  DType act;
};

inline std::string moe_case_name(const ::testing::TestParamInfo<MoeCase>& i) {
  const MoeCase& c = i.param;
  return "T" + std::to_string(c.T) + "_k" + std::to_string(c.k) + "_E" + std::to_string(c.E) + "_H" +
         std::to_string(c.H) + "_I" + std::to_string(c.I) + "_g" + (c.g < 0 ? std::string("cw") : std::to_string(c.g)) +
         "_" + std::string(scalar_type_name(c.st)) + "_" + (c.act == DType::bf16 ? "bf16" : "f16");
}

// Random experts of spec s: scales ~ 0.45 / sqrt(K) keep every product O(1) (|q - z| ~ 4.6 on average).
// on_expert(w13, w2) sees each expert's quantized weights once they are set (the CPU test keeps them dequantized).
template <class OnExpert>
MoeWeights random_moe_weights(const MoeSpec& s, DType act, OnExpert&& on_expert) {
  MoeWeights w(s, act);
  for (int e = 0; e < s.experts; ++e) {
    QuantizedLinear a = test::random_linear(s.w13_spec(), act, false, false, 0.45f / std::sqrt(float(s.hidden)));
    QuantizedLinear b = test::random_linear(s.w2_spec(), act, false, false, 0.45f / std::sqrt(float(s.intermediate)));
    w.set_expert(e, a.view(), b.view());
    on_expert(a, b);
  }
  return w;
}

inline MoeWeights random_moe_weights(const MoeSpec& s, DType act) {
  return random_moe_weights(s, act, [](const QuantizedLinear&, const QuantizedLinear&) {});
}

}  // namespace w4a16::moe
