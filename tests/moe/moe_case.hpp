// One MoE layer case of the parameterised layer tests, shared by tests/moe (CPU) and
// tests/gpu/moe (CUDA), and its gtest name. Host-only: no CUDA here.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "w4a16/core/canonical.hpp"

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

}  // namespace w4a16::moe
