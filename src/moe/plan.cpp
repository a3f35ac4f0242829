// Path choice of the CUDA MoE: a pure host function (no CUDA needed), so that it is unit-tested
// on the CPU (tests/moe/test_routing.cpp) and printable.
#include <string>

#include "w4a16/moe/moe_cuda.hpp"

namespace w4a16::moe {

int CudaMoe::choose_block(std::int64_t tokens, int top_k, int experts) {
  const std::int64_t slots = tokens * top_k;
  if (slots <= 32) return 1;  // a few slots: skip the alignment launch, one slot per CTA
  const double per_expert = static_cast<double>(slots) / experts;
  if (per_expert <= 8) return 8;    // blocks of 8 = one mma n-group: least padding
  // Measured on the H200 (Qwen3-30B-A3B, docs/benchmarks/moe.md, stop 28): T = 256 (16 per expert) block 32
  // 194 us against 226 at 64; T = 512 (32) 64 254 against 291; T = 1024 (64) 64 388 against 128 402; T = 2048 (128)
  // 128 632 against 661.
  if (per_expert < 32) return 32;
  if (per_expert < 128) return 64;  // many slots per expert (sm_90a: the grouped wgmma path, bm64 tile)
  return 128;                       // the grouped wgmma path's bm128 tiles (as 64 without sm_90a)
}

std::string CudaMoe::explain_block(std::int64_t tokens, int top_k, int experts) {
  const int b = choose_block(tokens, top_k, experts);
  const std::int64_t slots = tokens * top_k;
  return "T=" + std::to_string(tokens) + " k=" + std::to_string(top_k) + " E=" + std::to_string(experts) + ": " +
         std::to_string(slots) + " slots, " + std::to_string(static_cast<double>(slots) / experts) +
         " per expert -> " + (b == 1 ? std::string("direct (one slot per CTA, no alignment)")
                                     : "aligned blocks of " + std::to_string(b) + " slots");
}

}  // namespace w4a16::moe
