// Mixture-of-experts W4A16 (Qwen3-MoE / Mixtral style), shared/FORMATS.md "Mixture of experts".
//
//   routing:   logits fp32 [T, E] -> softmax -> top-k -> (renormalize) -> topk_ids int32 [T, k],
//              topk_weights fp32 [T, k]
//   alignment: slot s = t*k + j; per expert (in order) its slots ascending, padded to a multiple
//              of `block` with the sentinel T*k; one expert id per block; the padded total
//   layer:     h = silu(x . w1^T) * (x . w3^T) per (token, expert); y_t = sum_j w[t,j] * (h . w2^T)
//
// Weights: w13 = gate rows then up rows, [E, 2I, H] and w2 [E, H, I], each expert in the
// canonical layout (include/w4a16/core/canonical.hpp), stacked along a leading E dimension.
// Experts carry no bias and no act-order permutation (rejected by MoeWeights).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::moe {

// ---- Routing -----------------------------------------------------------------------------
struct RoutingOptions {
  int top_k = 8;
  bool renormalize = true;  // Qwen3 norm_topk_prob / Mixtral; false keeps the softmax probabilities
};

// logits fp32 [T, E] host; topk_ids int32 [T, k], topk_weights fp32 [T, k] (caller-owned).
// Ties break towards the lower expert id; the k ids of a token are in descending weight order.
void route_cpu(const float* logits, std::int64_t tokens, int experts, const RoutingOptions& opt,
               std::int32_t* topk_ids, float* topk_weights);

// ---- Alignment ---------------------------------------------------------------------------
// Upper bound of the padded total: T*k + E*(block-1) (each expert wastes < block slots).
std::int64_t aligned_capacity(std::int64_t tokens, int top_k, int experts, int block);

struct Alignment {
  std::vector<std::int32_t> sorted_ids;    // [total] slot ids, padding = T*k
  std::vector<std::int32_t> block_expert;  // [total / block]
  std::int64_t total = 0;                  // padded total, a multiple of block
};
// topk_ids int32 [T, k] host, values in [0, E) (checked).
Alignment align_cpu(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block);

// ---- Weights -----------------------------------------------------------------------------
struct MoeSpec {
  std::int64_t hidden = 0;        // H
  std::int64_t intermediate = 0;  // I (per expert, moe_intermediate_size)
  int experts = 0;                // E
  int group_size = 128;           // 32, 64, 128, 256 or kChannelwise (same for w13 and w2)
  ScalarType scalar = ScalarType::uint4b8;

  QuantSpec w13_spec() const { return QuantSpec{2 * intermediate, hidden, group_size, scalar}; }
  QuantSpec w2_spec() const { return QuantSpec{hidden, intermediate, group_size, scalar}; }
  void validate(std::string_view arg = "moe spec") const;
  std::string describe() const;  // "E=128 H=2048 I=768 g=128 uint4b8"
};

// Owning host copy: per expert canonical tensors stacked along E.
//   w13 qweight int32 [E, 2I, H/8], scales [E, 2I, G13], zeros int32 [E, 2I/8, G13] (uint4)
//   w2  qweight int32 [E, H, I/8],  scales [E, H, G2],   zeros int32 [E, H/8, G2]   (uint4)
class MoeWeights {
 public:
  MoeWeights() = default;
  MoeWeights(const MoeSpec& spec, DType scale_dtype);  // zero-filled
  const MoeSpec& spec() const { return spec_; }
  DType scale_dtype() const { return scale_dtype_; }
  // Copies one expert's canonical layers in (shapes, scalar, dtype checked; no bias, no perm).
  void set_expert(int e, const CanonicalView& w13, const CanonicalView& w2);
  // Convenience: gate [I, H] and up [I, H] given separately (fused here: gate rows first).
  void set_expert(int e, const CanonicalView& gate, const CanonicalView& up, const CanonicalView& down);
  CanonicalView w13(int e) const;  // [2I, H]
  CanonicalView w2(int e) const;   // [H, I]
  std::size_t expert_bytes() const;  // packed bytes of one expert (w13 + w2)
  std::size_t nbytes() const { return expert_bytes() * static_cast<std::size_t>(spec_.experts); }

  HostTensor w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros;

 private:
  MoeSpec spec_;
  DType scale_dtype_ = DType::f16;
};

// ---- Layer on the CPU --------------------------------------------------------------------
// x act [T, H] (f16|bf16, contiguous), topk_ids int32 [T, k], topk_weights fp32 [T, k],
// out act [T, H]. Checks every tensor (dtype, shape, device, ids in range).
struct MoeArgs {
  TensorView x, topk_ids, topk_weights, out;
};

// The oracle: f64 accumulation, dequantizing from the canonical bits, h kept in f64.
void moe_reference(const MoeWeights& w, const MoeArgs& a);

// The fast CPU path: threads over (expert, row chunk), rows dequantized once per expert and
// reused for every token routed there; fp32 accumulation (an expert of one slot on a CPU with
// AVX-512 VNNI: its input rounded to 16 bits per 128 values, int32 sums; src/moe/rows_cpu.hpp);
// per-slot outputs reduced per token in slot order (deterministic, independent of the thread count).
std::size_t moe_cpu_workspace_bytes(const MoeSpec& s, std::int64_t tokens, int top_k, int threads);
void moe_cpu(const MoeWeights& w, const MoeArgs& a, void* workspace, std::size_t workspace_bytes, int threads);

// ---- Loading and building ----------------------------------------------------------------
struct MoeLayer {
  MoeWeights weights;
  HostTensor router;  // [E, H] as given (f16 or bf16); empty for a layer built without one
  // The model's routing: from a checkpoint's config.json (num_experts_per_tok; norm_topk_prob, or renormalized for
  // Mixtral, whose softmax over the top-k logits is the same thing), else top min(8, E), renormalized. What callers
  // use when they are not told otherwise; `routing_from` says where it came from. A checkpoint whose config.json
  // routes otherwise (DeepSeek's scoring_func / topk_method) loads without its router, routing_from saying why.
  RoutingOptions routing;
  std::string routing_from = "default";
  // A checkpoint whose MoE block also holds a shared expert (Qwen2-MoE's mlp.shared_expert.* with
  // mlp.shared_expert_gate.weight, DeepSeek's mlp.shared_experts.*): its prefix. That expert is a plain MLP applied to
  // every token beside the routed ones and is NOT part of this layer: the caller adds its output (load its linears by
  // prefix). Empty: none.
  std::string shared_expert;
  bool has_router() const { return !router.empty(); }
};

// A Hugging Face MoE checkpoint folder (AWQ or GPTQ, config.json quantization_config):
//   model.layers.L.mlp.experts.E.{gate_proj,up_proj,down_proj}.{qweight,qzeros,scales[,g_idx]}
//   model.layers.L.mlp.gate.weight  [E, H] f16|bf16 (the router, left unquantized)
// or Mixtral's names for the same: model.layers.L.block_sparse_moe.experts.E.{w1,w3,w2}.* (gate, up, down) and
// model.layers.L.block_sparse_moe.gate.weight (taken where the layer has no mlp.gate.weight).
MoeLayer load_moe_layer(const std::string& checkpoint_dir, int layer);

// A layer from experts already in memory, each in the canonical layout (e.g. converted one by one from AWQ / GPTQ
// tensors by w4a16::formats): gate[e] and up[e] [I, H], down[e] [H, I] host views of one group size, scalar type
// and scale dtype, no bias, no act-order; E = gate.size() = up.size() = down.size() >= 1. router: [E, H] float16 or
// bfloat16 on the host (copied), or an undefined view: a layer without a router, whose callers give the routing
// (topk_ids / topk_weights), as an inference engine that routes on its own does. Every argument is checked by name.
MoeLayer moe_layer_from_experts(const std::vector<CanonicalView>& gate, const std::vector<CanonicalView>& up,
                                const std::vector<CanonicalView>& down, const TensorView& router);

// The stacked canonical tensors of all E experts, as MoeWeights holds them (host, contiguous; zeros for uint4 only):
//   w13_qweight int32 [E, 2I, H/8], w13_scales f16|bf16 [E, 2I, G13], w13_zeros int32 [E, 2I/8, G13]
//   w2_qweight  int32 [E, H, I/8],  w2_scales  f16|bf16 [E, H, G2],   w2_zeros  int32 [E, H/8, G2]
// (w13 = gate rows then up rows). E, H and I come from w13_qweight; a tensor of any other shape or dtype is refused
// by its name. The weights are copied; router as for moe_layer_from_experts.
struct MoeStackedView {
  TensorView w13_qweight, w13_scales, w13_zeros, w2_qweight, w2_scales, w2_zeros;
};
MoeLayer moe_layer_from_stacked(const MoeStackedView& t, int group_size, ScalarType scalar, const TensorView& router);

// Router logits in fp32 from x act [T, H] and the router [E, H] (f64 accumulation).
void router_logits_cpu(const TensorView& x, const TensorView& router, float* logits);

// ---- The tensor-core layout "cuda.tc16x64.v1" of docs/LAYOUT.md, per expert, host side ----
// Bytes of one layer [N, K] in the layout, and the packer (scales converted to `act`).
struct Tc16x64Sizes {
  std::int64_t n_pad = 0, k_pad = 0, groups = 0;
  std::size_t qweight_bytes = 0, scales_bytes = 0, zeros_bytes = 0;
};
Tc16x64Sizes tc16x64_sizes(const QuantSpec& spec);
// Writes the three arrays of one layer (zeros only for uint4) into caller buffers.
void tc16x64_pack(const CanonicalView& w, DType act, void* qweight, void* scales, void* zeros);

}  // namespace w4a16::moe
