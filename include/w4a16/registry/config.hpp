// LinearConfig: everything a kernel needs to know to say whether it can implement a layer.
#pragma once
#include <cstdint>
#include <string>

#include "w4a16/core/canonical.hpp"

namespace w4a16 {

struct LinearConfig {
  std::int64_t k_full = 0, n_full = 0;  // the whole layer
  std::int64_t k = 0, n = 0;            // this partition (== full without tensor parallelism)
  ScalarType scalar = ScalarType::uint4b8;
  DType act_dtype = DType::f16;   // x
  DType out_dtype = DType::f16;   // y
  int group_size = 128;           // 32, 64, 128, 256, kChannelwise
  bool has_zeros = false;         // == (scalar == uint4)
  bool act_order = false;
  bool has_bias = false;
  Device device = Device::cpu;
  int capability = 0;             // 0 on the CPU, 80, 90 (sm_90a) ... on CUDA

  // The config of canonical weights `w` run with activations (and outputs) of `act_dtype`.
  static LinearConfig from(const CanonicalView& w, DType act_dtype, Device device, int capability);
  QuantSpec spec() const { return QuantSpec{n, k, group_size, scalar}; }
  std::string describe() const;  // one line, for explain and errors
  // "" when the fields are consistent with shared/FORMATS.md (a canonical layer of this shape
  // can exist); otherwise the first broken rule. Every kernel's can_implement starts with it.
  std::string invalid_reason() const;
};

// Throws (naming `arg`) unless the canonical weights `w` are the layer `c` describes: the
// guard of every prepare(), so weights and config can never disagree.
void check_weights_match(const CanonicalView& w, const LinearConfig& c, std::string_view arg = "weights");

}  // namespace w4a16
