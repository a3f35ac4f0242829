// Launchers of the CUDA MoE kernels (routing, alignment, fused W4A16 expert GEMMs, reduction).
// Plain device pointers and a stream: no framework types, no allocation, no host
// synchronisation, so every launcher can be captured in a CUDA graph.
// Weights: one "cuda.tc16x64.v1" layer per expert (docs/LAYOUT.md), stacked along E.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace w4a16::kernels::cuda::moe {

// ---- Router logits: x [T, H] (row stride x_row_stride elements) . router [E, H]^T -> logits fp32 [T, E] (contiguous);
// each 16-bit operand fp16 or bf16 (the flags); H % 8 == 0, x rows and the router 16-byte aligned, E <= kMaxExperts.
void launch_router_logits(const void* x, std::int64_t x_row_stride, bool x_bf16, const void* router, bool router_bf16,
                          std::int64_t tokens, int hidden, int experts, float* logits, cudaStream_t stream);

// ---- Routing: logits fp32 [T, E] -> topk_ids int32 [T, k], topk_weights fp32 [T, k].
// One warp per token; k rounds of warp argmax (ties to the lower id), as route_cpu.
constexpr int kMaxExperts = 1024;
void launch_route(const float* logits, std::int64_t tokens, int experts, int top_k, bool renormalize,
                  std::int32_t* topk_ids, float* topk_weights, cudaStream_t stream);

// ---- Alignment: three launches over slot ranges (routing.cu). sorted_ids [capacity] (padding = T*k), block_expert
// [capacity/block] (-1 past the total), total [1]. capacity = T*k + E*(block-1), the host-side upper bound.
// scratch: align_scratch_bytes (the ranges' per-expert counts and the offsets between the launches).
std::size_t align_scratch_bytes(std::int64_t tokens, int top_k, int experts);
// The block lists of the grouped path's block 128 (the alignment at 64, lists != null): each expert's run (padded
// to 64) as whole 128-row blocks (row128 / expert128, cap128 = list128_capacity entries, expert -1 past the count)
// and, where the run is an odd multiple of 64, one 64-row tail (row64 / expert64, E entries, -1 past the count).
// Less padding than runs padded to 128 (a quarter of the rows at T = 4096, k = 8, E = 128).
struct AlignLists {
  std::int32_t* row128 = nullptr;
  std::int32_t* expert128 = nullptr;
  std::int32_t* row64 = nullptr;
  std::int32_t* expert64 = nullptr;
  int cap128 = 0;
};
inline int list128_capacity(std::int64_t tokens, int top_k, int experts) {  // sum_e floor(run_e / 128) <= S / 128 + E / 2
  return static_cast<int>(tokens * top_k / 128 + experts / 2 + 1);
}
void launch_align(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block,
                  std::int32_t* sorted_ids, std::int32_t* block_expert, std::int32_t* total, std::int32_t* scratch,
                  const AlignLists* lists, cudaStream_t stream);

// ---- Fused MoE expert GEMMs.
struct MoeLayerDev {  // one layer of every expert, stacked
  const void* qweight = nullptr;       // [E][N/16][K/64][32][4] int32
  const std::uint16_t* scales = nullptr;  // [E][G][N] act dtype, pair-interleaved
  const std::uint8_t* zeros = nullptr;    // [E][G][N/16][8] (uint4 only)
  int n = 0, k = 0;                    // rows, columns (both multiples of 64 here)
  int group_len = 0, groups = 0;       // K-extent of a group, G
};

struct MoeRunDev {
  MoeLayerDev w13;  // [E, 2I, H]
  MoeLayerDev w2;   // [E, H, I]
  int hidden = 0, inter = 0, top_k = 0;
  std::int64_t tokens = 0;
  bool bf16 = false, zeros = false;
  const void* x = nullptr;                 // [T, H] act
  const std::int32_t* topk_ids = nullptr;  // [T, k]
  const float* topk_weights = nullptr;     // [T, k]
  void* out = nullptr;                     // [T, H] act
  // Alignment (block > 1): workspace that launch_fused_moe fills by launch_align (sorted_ids
  // [aligned_capacity], block_expert [aligned_capacity / block], total [1]) before the GEMMs, unless
  // the ring kernels compute it themselves (block 8, W4A16_MOE_FUSED_ALIGN=1: left unwritten);
  // max_blocks bounds the grid. Direct (block == 1): one slot per CTA column 0, expert read from
  // topk_ids; no alignment.
  int block = 8;
  int experts = 0;  // E
  std::int32_t* sorted_ids = nullptr;
  std::int32_t* block_expert = nullptr;
  std::int32_t* total = nullptr;
  std::int32_t* align_scratch = nullptr;  // align_scratch_bytes (the alignment launch's)
  AlignLists lists;                        // block 128 (the grouped path): the alignment at 64 and these lists
  int max_blocks = 0;
  void* h = nullptr;  // workspace [T*k, I] act: silu(gate) * up per slot
  float* y = nullptr; // workspace [T*k, H] fp32 (the grouped path: act dtype): expert output per slot, before the routing weight
                      // (unused where the direct path folds the weighted sum into GEMM 2: ring_fold)
  // The grouped wgmma path (grouped_path(block)): x rows gathered in sorted order [max_blocks * block, H]
  // act, then GEMM 1's silu(gate) * up in the same order [max_blocks * block, I] act.
  void* xg = nullptr;
  void* hg = nullptr;
  std::int64_t grouped_rows = 0;  // rows of xg / hg: the alignment's blocks x its block (64 for block 128)
};

// Block sizes (slots per CTA): 1 (direct decode), 8 (decode), 32, 64 (mma.sync prefill kernel; both run the
// grouped wgmma path where grouped_path says so), 16 and 128 (the grouped wgmma path only).
bool is_supported_block(int block);
// Whether blocks of `block` slots run the grouped wgmma path (the linear prefill kernel over the experts,
// prefill_run_grouped) on the current device: 128 always (needs capability 90 and the sm_90a build:
// grouped_supported), 16 / 32 / 64 there unless W4A16_MOE_WGMMA=0 (the mma.sync kernel: the A/B knob; read per
// call; block 16 has no mma.sync kernel: CudaMoe::run takes 32 where this is false).
bool grouped_supported();
bool grouped_path(int block);
// The prefill configs of the grouped path's two GEMMs for a block size: W4A16_MOE_GROUPED_CONFIGS="c1,c2"
// (a device tune; GEMM 1 takes a tile of BN rows only where I % (BN / 2) == 0), else one tile of the block's
// tokens for both: bm16_bn128 at 3 CTAs per SM (35) at 16, bm32 at 3 (38) at 32, bm64 2-CTA (23) at 64,
// bm128_bn128 2-CTA (32) at 128.
void grouped_configs(int block, int* config1, int* config2);
void launch_fused_moe(const MoeRunDev& r, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda::moe
