// Path choice of the CUDA MoE: a pure host function (no CUDA needed), so that it is unit-tested
// on the CPU (tests/moe/test_routing.cpp) and printable.
#include <string>

#include "w4a16/moe/moe_cuda.hpp"

namespace w4a16::moe {
namespace {
// Blocks of 16 slots up to this many slots per expert on average (then 32). Measured on the H200 (stop 51 call 2,
// Qwen3-30B-A3B fp16 uint4b8): block 16 against 32 at T = 144..240 (9..15 per expert) 126.2 / 155.2 us at 9,
// 143.4 / 156.0 at 13, 154.1 / 156.5 at 14, 159.4 / 156.3 at 15; block 8 ahead at 8 (121.4 against 126.8).
constexpr double kBlock16MaxPerExpert = 14;
}  // namespace

int CudaMoe::choose_block(std::int64_t tokens, int top_k, int experts) {
  const std::int64_t slots = tokens * top_k;
  if (slots <= 32) return 1;  // a few slots: skip the alignment launch, one slot per CTA
  const double per_expert = static_cast<double>(slots) / experts;
  if (per_expert <= 8) return 8;    // blocks of 8 = one mma n-group: least padding
  // Measured on the H200 (Qwen3-30B-A3B, docs/benchmarks/moe.md, stop 28 call 7): T = 256 (16 per expert) block 32
  // 178 us against 210 at 64 and 220 at 128; T = 512 (32) 64 215 against 128 224 and 32 257; T = 1024 (64) 128 293
  // against 64 311; T = 2048 (128) 128 453 against 64 504. Stop 51 (the grouped path's 16 / 32-token tiles, fp16):
  // T = 192 (12 per expert) block 16 136.4 us against 32 155.7 (the mma.sync kernel's 32 176.9); T = 256 (16) 32
  // 157.1 against 16 171.0 (bf16 uint4: 192.6 against the mma.sync kernel's 195.4); T = 128 (8) block 8 125.5 against
  // 16 126.4. Block 16 runs the grouped path only: run() takes 32 where it cannot.
  if (per_expert <= kBlock16MaxPerExpert) return 16;
  if (per_expert < 32) return 32;
  if (per_expert < 64) return 64;  // sm_90a: the grouped wgmma path on the bm64 tile
  return 128;                      // the grouped wgmma path's 128-row blocks + 64-row tails (as 64 without sm_90a)
}

std::string CudaMoe::explain_block(std::int64_t tokens, int top_k, int experts) {
  const int b = choose_block(tokens, top_k, experts);
  const std::int64_t slots = tokens * top_k;
  return "T=" + std::to_string(tokens) + " k=" + std::to_string(top_k) + " E=" + std::to_string(experts) + ": " +
         std::to_string(slots) + " slots, " + std::to_string(static_cast<double>(slots) / experts) +
         " per expert -> " +
         (b == 1    ? std::string("direct (one slot per CTA, no alignment)")
          : b == 128 ? std::string("aligned blocks of 128 slots (runs padded to 64: whole 128-slot blocks and a 64-slot tail; "
                                   "the grouped wgmma path on sm_90a, blocks of 64 elsewhere)")
          : b == 64 || b == 32
              ? "aligned blocks of " + std::to_string(b) + " slots (the grouped wgmma path on sm_90a, the mma.sync kernel elsewhere)"
          : b == 16 ? std::string("aligned blocks of 16 slots (the grouped wgmma path on sm_90a; blocks of 32 elsewhere)")
                     : "aligned blocks of " + std::to_string(b) + " slots");
}

}  // namespace w4a16::moe
