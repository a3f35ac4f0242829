// The MoE layer on CUDA (built with W4A16_HAVE_CUDA): weights prepared once into per-expert
// "cuda.tc16x64.v1" layouts stacked along E; plan (workspace size, path) separate from run
// (launches only: no allocation, no host synchronisation, CUDA-graph capturable).
//   auto m = CudaMoe::create(host_weights, DType::bf16, stream);
//   ws = cudaMalloc(m.workspace_bytes(max_tokens, top_k));
//   router_logits_cuda(x, router, logits, stream);           // optional: logits of a device router
//   route_cuda(logits, T, {top_k}, ids, weights, stream);   // optional: or bring your own ids
//   m.run({x, ids, weights, out}, ws, bytes, stream);        // device views
// Paths (choose_block): "direct" (block 1: one slot per CTA, no alignment launch) for few
// slots, aligned blocks of 8 / 16 / 32 / 64 / 128 slots per expert as tokens grow. Blocks 16..128 run the
// grouped wgmma path on sm_90a (the linear prefill kernel over the experts: x rows gathered per expert,
// silu(gate) * up in GEMM 1's epilogue; 128 = runs padded to 64, run as whole 128-row blocks and a 64-row
// tail); elsewhere 32 and 64 run the mma.sync kernel (16 runs as 32 there, 128 as 64).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

// Router logits on the device: x act [T, H] (rows 16-byte aligned; a row stride allowed), router float16 | bfloat16
// [E, H] (contiguous, 16-byte aligned), both on one GPU, H % 8 == 0, E <= 1024 -> logits fp32 [T, E] (caller-owned
// device memory, contiguous). fp32 accumulation in a fixed order (run to run identical); router_logits_cpu accumulates
// in f64, so the two agree to ~1e-6 relative and may route a near-tie differently. No host synchronisation.
void router_logits_cuda(const TensorView& x, const TensorView& router, float* logits, void* stream);
// Device logits fp32 [T, E] -> device topk_ids int32 [T, k], topk_weights fp32 [T, k]. E <= 1024, k <= 32.
void route_cuda(const float* logits, std::int64_t tokens, int experts, const RoutingOptions& opt,
                std::int32_t* topk_ids, float* topk_weights, void* stream);
// Device alignment: sorted_ids [aligned_capacity], block_expert [aligned_capacity / block]
// (-1 past the total), total [1]; same values as align_cpu (E <= 4096). scratch: device memory of
// align_scratch_bytes(tokens, top_k, experts), 4-byte aligned (what the launches pass between them).
std::size_t align_scratch_bytes(std::int64_t tokens, int top_k, int experts);
void align_cuda(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block,
                std::int32_t* sorted_ids, std::int32_t* block_expert, std::int32_t* total, void* scratch, void* stream);

class CudaMoe {
 public:
  static constexpr std::string_view kLayout = "cuda.moe.tc16x64.v1";  // per-expert cuda.tc16x64.v1, stacked
  // Uploads on `stream` and waits for the upload (prepare time, not run time). Rejects H or I
  // not multiples of 64 (unsupported, naming the shape).
  static CudaMoe create(const MoeWeights& w, DType act, void* stream = nullptr);
  // The layout's arrays for (spec, act), by name, for a caller that holds them itself: w13_qweight int32
  // [E, 2I/16, H/64, 128], w13_scales act [E, G13, 2I], w13_zeros uint8 [E, G13, I] (uint4 only), w2_qweight int32
  // [E, H/16, I/64, 128], w2_scales act [E, G2, H], w2_zeros uint8 [E, G2, H/2] (uint4 only); each expert's
  // cuda.tc16x64.v1 arrays (docs/LAYOUT.md) one after another. Throws as create() for H, I not multiples of 64.
  static std::vector<LayoutSpec> layout_specs(const MoeSpec& spec, DType act);
  // Their bytes for host weights `w` (what create() uploads).
  static std::vector<LayoutArray> layout_host(const MoeWeights& w, DType act);
  // A CudaMoe over the caller's device arrays of layout_specs (views, no copy: they must outlive it and stay unchanged),
  // every one checked by name (check_layout_views) and on the current device.
  static CudaMoe adopt(const MoeSpec& spec, DType act, const std::vector<LayoutView>& arrays);
  const MoeSpec& spec() const { return spec_; }
  DType act_dtype() const { return act_; }
  std::size_t device_bytes() const { return bytes_; }
  // Slots per CTA for T tokens: 1 (direct) or 8 / 16 / 32 / 64 / 128 (aligned). A pure function, printable.
  static int choose_block(std::int64_t tokens, int top_k, int experts);
  static std::string explain_block(std::int64_t tokens, int top_k, int experts);
  std::size_t workspace_bytes(std::int64_t max_tokens, int top_k) const;
  // Device views: x act [T, H], topk_ids int32 [T, k], topk_weights fp32 [T, k], out act [T, H].
  // block = 0 chooses; otherwise 1, 8, 16, 32, 64 or 128 (tests force every path).
  void run(const MoeArgs& a, void* workspace, std::size_t workspace_bytes, void* stream, int block = 0) const;

 private:
  void set_array(const std::string& name, const void* p);  // the pointer of one array of layout_specs, by its name

  MoeSpec spec_;
  DType act_ = DType::f16;
  std::shared_ptr<void> mem_;  // one device allocation: w13 qweight, scales, zeros; w2 likewise
  const void* w13_q_ = nullptr;
  const void* w13_s_ = nullptr;
  const void* w13_z_ = nullptr;
  const void* w2_q_ = nullptr;
  const void* w2_s_ = nullptr;
  const void* w2_z_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace w4a16::moe
