// Loading one MoE layer from a Hugging Face AWQ or GPTQ checkpoint folder, or building one from experts already in
// memory (per-expert canonical views, or the stacked canonical tensors). The two namings of the field:
//   Qwen3-MoE (Qwen2-MoE, OLMoE): model.layers.L.mlp.experts.E.{gate_proj,up_proj,down_proj}.{qweight,qzeros,scales[,g_idx]}
//                                 model.layers.L.mlp.gate.weight [E, H] 16-bit router
//   Mixtral:                      model.layers.L.block_sparse_moe.experts.E.{w1,w3,w2}.* (w1 gate, w3 up, w2 down)
//                                 model.layers.L.block_sparse_moe.gate.weight
// (Qwen2-MoE's shared expert, mlp.shared_expert.*, is a plain MLP beside the routed ones: not part of this layer; the
// loader names it in MoeLayer::shared_expert.)
// Each expert's three linears are converted by io::HfCheckpoint::load_linear (w4a16::formats,
// exact) and stacked into the fused MoeWeights (w13 = gate rows then up rows).
// Checked by tests/moe/test_moe_loader.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {
namespace {

// The zero-filled weights of E experts shaped like expert 0's gate [I, H] and down [H, I]; `hidden` the router's H
// (or -1: no router). The names of the arguments and the error code of a mismatch come from the caller (a checkpoint's
// tensors: format_error; API arguments: shape_mismatch).
MoeWeights weights_like(int experts, const CanonicalView& gate, const CanonicalView& down, std::int64_t hidden,
                        const std::string& gate_arg, const std::string& down_arg, ErrorCode bad) {
  MoeSpec s;
  s.experts = experts;
  s.hidden = gate.spec.k;
  s.intermediate = gate.spec.n;
  s.group_size = gate.spec.group_size;
  s.scalar = gate.spec.scalar;
  if (hidden >= 0 && s.hidden != hidden)
    fail(bad, gate_arg, "in_features = the router's hidden size " + std::to_string(hidden),
         std::to_string(s.hidden));
  if (down.spec.n != s.hidden || down.spec.k != s.intermediate)
    fail(bad, down_arg,
         "[H, I] = " + shape_str({s.hidden, s.intermediate}) + " (the gate's [I, H] transposed)",
         shape_str({down.spec.n, down.spec.k}));
  return MoeWeights(s, gate.scale_dtype);
}

// The router [E, H] of a 16-bit dtype on the host, copied.
HostTensor copy_router(const TensorView& router, const std::string& arg, std::int64_t experts) {
  const std::string want = "float16 or bfloat16 [E, H] on the host" +
                           (experts > 0 ? " with E = " + std::to_string(experts) : std::string());
  if (router.device != Device::cpu || router.rank != 2 || !is_activation_dtype(router.dtype))
    fail(ErrorCode::invalid_argument, arg, want, describe(router));
  if (experts > 0 && router.size(0) != experts) fail(ErrorCode::shape_mismatch, arg, want, describe(router));
  check_contiguous(router, arg);
  HostTensor out(router.dtype, router.shape_vec());
  std::memcpy(out.data(), router.data, router.nbytes());
  return out;
}

// The default routing of E experts: top min(8, E) (Qwen3-MoE's 8), renormalized.
RoutingOptions default_routing(int experts) { return RoutingOptions{experts < 8 ? experts : 8, true}; }

// The routing config.json states: num_experts_per_tok (1..E) and norm_topk_prob; Mixtral's router renormalizes
// (softmax over the top-k logits). Fields absent: the defaults; present with a bad value: a format_error naming them.
// A model that routes otherwise (DeepSeek-V2/V3: scoring_func "sigmoid", topk_method "group_limited_greedy" /
// "noaux_tc", with group limits and score-correction biases) keeps its experts but loses its router here, so that
// nothing routes it the wrong way: its callers give topk_ids / topk_weights, and routing_from says why.
void routing_of_config(const std::string& config_text, const std::string& source, int experts, bool mixtral,
                       MoeLayer& out) {
  out.routing = default_routing(experts);
  out.routing_from = "default";
  if (config_text.empty()) return;
  const nlohmann::json c = nlohmann::json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  if (!c.is_object()) return;  // HfCheckpoint::open has already refused a config.json it cannot read
  for (const auto& [field, ok] : {std::pair{"scoring_func", "softmax"}, std::pair{"topk_method", "greedy"}}) {
    if (c.contains(field) && !(c[field].is_string() && c[field].get<std::string>() == ok)) {
      out.router = HostTensor{};
      out.routing_from = source + ": " + field + " = " + c[field].dump() + ", not the softmax top-k routing (" + field +
                         " \"" + ok + "\") of this library: the router is left out, give topk_ids and topk_weights";
      return;
    }
  }
  std::string from;
  if (c.contains("num_experts_per_tok")) {
    const auto& v = c["num_experts_per_tok"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > experts)
      fail(ErrorCode::format_error, source + ": num_experts_per_tok", "an integer in 1.." + std::to_string(experts),
           v.dump());
    out.routing.top_k = v.get<int>();
    from = "num_experts_per_tok = " + std::to_string(out.routing.top_k);
  }
  if (c.contains("norm_topk_prob")) {
    const auto& v = c["norm_topk_prob"];
    if (!v.is_boolean()) fail(ErrorCode::format_error, source + ": norm_topk_prob", "true or false", v.dump());
    out.routing.renormalize = v.get<bool>();
    from += std::string(from.empty() ? "" : ", ") + "norm_topk_prob = " + (out.routing.renormalize ? "true" : "false");
  } else if (mixtral) {
    out.routing.renormalize = true;
    from += std::string(from.empty() ? "" : ", ") + "renormalized (Mixtral)";
  }
  if (!from.empty()) out.routing_from = source + ": " + from;
}

}  // namespace

MoeLayer load_moe_layer(const std::string& checkpoint_dir, int layer) {
  const io::HfCheckpoint ck = io::HfCheckpoint::open(checkpoint_dir);
  struct Naming {
    const char* block;                    // the MoE block under model.layers.L
    const char *gate, *up, *down;         // the expert's three linears
  };
  constexpr Naming kQwen{"mlp", "gate_proj", "up_proj", "down_proj"}, kMixtral{"block_sparse_moe", "w1", "w3", "w2"};
  const std::string layer_base = "model.layers." + std::to_string(layer) + ".";
  const bool mixtral = !ck.store().contains(layer_base + kQwen.block + ".gate.weight") &&
                       ck.store().contains(layer_base + kMixtral.block + ".gate.weight");
  const Naming naming = mixtral ? kMixtral : kQwen;
  const std::string base = layer_base + naming.block + ".";
  const std::string router_name = base + "gate.weight";
  if (!ck.store().contains(router_name))
    fail(ErrorCode::not_found, router_name,
         "the router [E, hidden] of layer " + std::to_string(layer) + " (or " + layer_base + kMixtral.block +
             ".gate.weight, Mixtral's naming)",
         "no such tensor in " + checkpoint_dir);
  const TensorView router = ck.store().view(router_name);
  if (router.rank != 2 || !is_activation_dtype(router.dtype))
    fail(ErrorCode::format_error, router_name, "float16 or bfloat16 [E, hidden]", describe(router));
  const int E = static_cast<int>(router.size(0));
  // The router's E against the experts the checkpoint holds (the highest expert index + 1): a router of fewer rows
  // would silently drop experts, one of more would fail below on a missing expert without naming the router.
  const std::string experts_base = base + "experts.";
  long long held = 0;
  for (const io::LayerInfo& L : ck.quantized_layers()) {
    if (L.prefix.rfind(experts_base, 0) != 0) continue;
    const std::string rest = L.prefix.substr(experts_base.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot) continue;
    held = std::max(held, std::stoll(rest.substr(0, dot)) + 1);
  }
  if (held != E)
    fail(ErrorCode::format_error, router_name,
         "[E, hidden] with E = " + std::to_string(held) + " (the experts " + experts_base + "0.." + std::to_string(held - 1) +
             " in the checkpoint)",
         describe(router));
  // Every expert 0..E-1 must be present: a missing one is a broken checkpoint, never skipped.
  // One expert's linears at a time: the host holds the stacked layer and one expert, not every expert twice.
  MoeLayer out;
  for (int e = 0; e < E; ++e) {
    const std::string p = experts_base + std::to_string(e) + ".";
    QuantizedLinear gate = ck.load_linear(p + naming.gate);
    QuantizedLinear up = ck.load_linear(p + naming.up);
    QuantizedLinear down = ck.load_linear(p + naming.down);
    if (e == 0) {
      if (router.size(1) != gate.spec().k)
        fail(ErrorCode::format_error, router_name,
             "[E, hidden] with hidden = " + std::to_string(gate.spec().k) + " (" + p + naming.gate + "'s in_features)",
             describe(router));
      out.weights = weights_like(E, gate.view(), down.view(), -1, p + naming.gate, p + naming.down, ErrorCode::format_error);
    }
    if (gate.act_order() || up.act_order() || down.act_order())
      fail(ErrorCode::unsupported, p + "*.g_idx", "g_idx in group order (desc_act MoE experts are not supported)",
           "an act-order permutation");
    try {
      out.weights.set_expert(e, gate.view(), up.view(), down.view());
    } catch (const Error& err) {
      // set_expert names the role ("up_proj.scales: ..."): the checkpoint's tensor name instead, and the tensor that set
      // what was expected (expert 0's gate: weights_like).
      std::string what = err.what();
      const std::pair<const char*, const char*> roles[] = {{"gate_proj", naming.gate}, {"up_proj", naming.up}, {"down_proj", naming.down}};
      for (const auto& [role, name] : roles)
        if (what.rfind(role, 0) == 0) what = std::string(name) + what.substr(std::strlen(role));
      fail(err.code(), p + what + " (the layer's shapes and scale dtype as " + experts_base + "0." + naming.gate + " set them)");
    }
  }
  out.router = copy_router(router, router_name, E);
  routing_of_config(ck.config_json(), "config.json", E, mixtral, out);
  // A shared expert beside the routed ones is the caller's to add: name it, so that nobody mistakes this layer's output
  // for the whole MLP's.
  for (const char* shared : {"shared_expert", "shared_experts"}) {
    const std::string p = base + shared + ".";
    for (const char* t : {"gate_proj.qweight", "gate_proj.weight"})
      if (out.shared_expert.empty() && ck.store().contains(p + t)) out.shared_expert = base + shared;
  }
  return out;
}

MoeLayer moe_layer_from_experts(const std::vector<CanonicalView>& gate, const std::vector<CanonicalView>& up,
                                const std::vector<CanonicalView>& down, const TensorView& router) {
  if (gate.empty()) fail(ErrorCode::invalid_argument, "gate", "one canonical layer per expert (E >= 1)", "none");
  if (up.size() != gate.size() || down.size() != gate.size())
    fail(ErrorCode::invalid_argument, up.size() != gate.size() ? "up" : "down",
         std::to_string(gate.size()) + " layers (one per expert, as gate)",
         std::to_string(up.size() != gate.size() ? up.size() : down.size()));
  const int E = static_cast<int>(gate.size());
  MoeLayer out;
  out.routing = default_routing(E);
  if (router.defined()) out.router = copy_router(router, "router", E);
  out.weights = weights_like(E, gate[0], down[0], out.has_router() ? out.router.shape()[1] : -1, "gate[0]", "down[0]",
                             ErrorCode::shape_mismatch);
  // set_expert checks each layer against the spec (shape, group size, scalar type, scale dtype, no bias, no perm)
  // and names the layer (gate_proj, up_proj, down_proj); the expert's index is put in front.
  for (int e = 0; e < E; ++e) {
    try {
      out.weights.set_expert(e, gate[e], up[e], down[e]);
    } catch (const Error& err) {
      fail(err.code(), "expert " + std::to_string(e) + " " + err.what());
    }
  }
  return out;
}

MoeLayer moe_layer_from_stacked(const MoeStackedView& t, int group_size, ScalarType scalar, const TensorView& router) {
  for (const auto& [v, arg] : {std::pair{&t.w13_qweight, "w13_qweight"}, std::pair{&t.w2_qweight, "w2_qweight"}}) {
    if (!v->defined()) fail(ErrorCode::invalid_argument, arg, "int32 [E, N, K/8]", "no tensor");
    check_dtype(*v, arg, DType::i32);
    if (v->rank != 3) fail(ErrorCode::shape_mismatch, arg, "int32 [E, N, K/8] (rank 3)", describe(*v));
  }
  MoeSpec s;
  s.experts = static_cast<int>(t.w13_qweight.size(0));
  s.intermediate = t.w13_qweight.size(1) / 2;
  s.hidden = t.w13_qweight.size(2) * 8;
  s.group_size = group_size;
  s.scalar = scalar;
  if (t.w13_qweight.size(1) % 2 != 0)
    fail(ErrorCode::shape_mismatch, "w13_qweight", "[E, 2I, H/8]: gate rows then up rows, an even row count",
         describe(t.w13_qweight));
  s.validate("experts (from w13_qweight [E, 2I, H/8] = " + shape_str(t.w13_qweight.shape_vec()) + ")");
  if (!t.w13_scales.defined() || !is_activation_dtype(t.w13_scales.dtype))
    fail(ErrorCode::dtype_mismatch, "w13_scales", "float16 or bfloat16 [E, 2I, G]",
         t.w13_scales.defined() ? describe(t.w13_scales) : "no tensor");
  MoeLayer out;
  if (router.defined()) {
    out.router = copy_router(router, "router", s.experts);
    if (out.router.shape()[1] != s.hidden)
      fail(ErrorCode::shape_mismatch, "router", "[E, H] with H = " + std::to_string(s.hidden) + " (from w13_qweight)",
           describe(router));
  }
  out.weights = MoeWeights(s, t.w13_scales.dtype);
  out.routing = default_routing(s.experts);
  MoeWeights& w = out.weights;
  // Each given tensor must match its MoeWeights member exactly (dtype, shape), be a contiguous host array, and then
  // is copied bit for bit; zeros are given exactly for uint4.
  const auto copy = [](const TensorView& v, HostTensor& dst, const char* arg, const char* what) {
    const std::string want = std::string(dtype_name(dst.dtype())) + " " + what + " = " + shape_str(dst.shape());
    if (dst.empty()) {
      if (v.defined())
        fail(ErrorCode::invalid_argument, arg, "no zero-point tensor for uint4b8 (z = 8)", describe(v));
      return;
    }
    if (!v.defined()) fail(ErrorCode::invalid_argument, arg, want + " (scalar type uint4)", "no tensor");
    if (v.device != Device::cpu) fail(ErrorCode::invalid_argument, arg, want + " on the host", describe(v));
    if (v.dtype != dst.dtype()) fail(ErrorCode::dtype_mismatch, arg, want, describe(v));
    if (v.shape_vec() != dst.shape()) fail(ErrorCode::shape_mismatch, arg, want, describe(v));
    check_contiguous(v, arg);
    std::memcpy(dst.data(), v.data, dst.nbytes());
  };
  copy(t.w13_qweight, w.w13_qweight, "w13_qweight", "[E, 2I, H/8]");
  copy(t.w13_scales, w.w13_scales, "w13_scales", "[E, 2I, G13]");
  copy(t.w13_zeros, w.w13_zeros, "w13_zeros", "[E, 2I/8, G13]");
  copy(t.w2_qweight, w.w2_qweight, "w2_qweight", "[E, H, I/8]");
  copy(t.w2_scales, w.w2_scales, "w2_scales", "[E, H, G2]");
  copy(t.w2_zeros, w.w2_zeros, "w2_zeros", "[E, H/8, G2]");
  return out;
}

}  // namespace w4a16::moe
