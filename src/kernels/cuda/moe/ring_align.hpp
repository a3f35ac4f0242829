// The alignment of the aligned block-8 MoE path computed inside the ring kernels (fused alignment,
// W4A16_MOE_FUSED_ALIGN=1): its shared-memory layout and the bound that decides where it applies.
// Plain C++ (constexpr, usable in device code through --expt-relaxed-constexpr) so that a host
// test checks the arithmetic.
//
// Layout, in bytes from the end of the ring's own shared memory (RingShape::kSmemBytes, a multiple
// of 16), for S = T*k slots and E experts (8 = kRingWarps, the warps of a ring block):
//   cw      int32 [8][E]     per warp: slots of expert e in its slot range, then its placement cursor
//   off     int32 [E]        count of expert e, then the padded start of its run
//   misc    int32 [16]       [8 + w]: the padded run total of warp w's experts (block scan)
//   bexp    int32 [nb]       expert of block b (b < used blocks)
//   sorted  uint16 [cap]     slot of position i (padding: S); S < 2^16
// cap = S + 7 * min(E, S) >= the padded total sum_e ceil(c_e / 8) * 8, nb = ceil(cap / 8).
// Checked by: tests/gpu/moe/test_moe_gpu.cpp (RingAlignBound, host; fused vs unfused on the GPU).
#pragma once
#include <cstdint>

namespace w4a16::kernels::cuda::moe {

constexpr int kRingAlignWarps = 8;          // = kRingWarps (moe_ring.cuh asserts it)
constexpr int kRingAlignMaxTokens = 1024;   // beyond: the alignment launch (prefill sizes do not change)

struct RingAlignLayout {
  int cap = 0, nb = 0;
  int off = 0, misc = 0, bexp = 0, sorted = 0, bytes = 0;  // byte offsets, total bytes (multiple of 16)
};

constexpr RingAlignLayout ring_align_layout(int slots, int experts) {
  RingAlignLayout l;
  l.cap = slots + 7 * (experts < slots ? experts : slots);
  l.nb = (l.cap + 7) / 8;
  l.off = 4 * kRingAlignWarps * experts;
  l.misc = l.off + 4 * experts;
  l.bexp = l.misc + 4 * 16;
  l.sorted = l.bexp + 4 * l.nb;
  l.bytes = (l.sorted + 2 * l.cap + 15) / 16 * 16;
  return l;
}

// Whether the fused alignment applies: T <= kRingAlignMaxTokens, S < 2^16 (uint16 slots), and the
// layout fits beside the ring's `ring_bytes` within `smem_cap` (the per-block shared memory that
// keeps the ring's blocks per SM: 113 KB for 2 per SM on sm_90, 227 KB for 1); else the caller
// launches the alignment kernel (the unfused path).
constexpr bool ring_align_fits(std::int64_t tokens, int top_k, int experts, int ring_bytes, int smem_cap) {
  if (tokens < 1 || tokens > kRingAlignMaxTokens || top_k < 1 || experts < 1) return false;
  const std::int64_t slots = tokens * top_k;
  if (slots >= 65536) return false;
  return ring_bytes + ring_align_layout(static_cast<int>(slots), experts).bytes <= smem_cap;
}

}  // namespace w4a16::kernels::cuda::moe
