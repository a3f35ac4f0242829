// Loading one MoE layer from a Hugging Face AWQ or GPTQ checkpoint folder:
//   model.layers.L.mlp.experts.E.{gate_proj,up_proj,down_proj}.{qweight,qzeros,scales[,g_idx]}
//   model.layers.L.mlp.gate.weight [E, H] 16-bit router
// Each expert's three linears are converted by io::HfCheckpoint::load_linear (w4a16::formats,
// exact) and stacked into the fused MoeWeights (w13 = gate rows then up rows).
// Checked by tests/moe/test_moe_loader.cpp.
#include <string>

#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

MoeLayer load_moe_layer(const std::string& checkpoint_dir, int layer) {
  const io::HfCheckpoint ck = io::HfCheckpoint::open(checkpoint_dir);
  const std::string base = "model.layers." + std::to_string(layer) + ".mlp.";
  const std::string router_name = base + "gate.weight";
  if (!ck.store().contains(router_name))
    fail(ErrorCode::not_found, router_name, "the router [E, hidden] of layer " + std::to_string(layer),
         "no such tensor in " + checkpoint_dir);
  const TensorView router = ck.store().view(router_name);
  if (router.rank != 2 || !is_activation_dtype(router.dtype))
    fail(ErrorCode::format_error, router_name, "float16 or bfloat16 [E, hidden]", describe(router));
  const int E = static_cast<int>(router.size(0));
  // Every expert 0..E-1 must be present: a missing one is a broken checkpoint, never skipped.
  MoeLayer out;
  for (int e = 0; e < E; ++e) {
    const std::string p = base + "experts." + std::to_string(e) + ".";
    QuantizedLinear gate = ck.load_linear(p + "gate_proj");
    QuantizedLinear up = ck.load_linear(p + "up_proj");
    QuantizedLinear down = ck.load_linear(p + "down_proj");
    if (e == 0) {
      MoeSpec s;
      s.experts = E;
      s.hidden = gate.spec().k;
      s.intermediate = gate.spec().n;
      s.group_size = gate.spec().group_size;
      s.scalar = gate.spec().scalar;
      if (s.hidden != router.size(1))
        fail(ErrorCode::format_error, p + "gate_proj", "in_features = router hidden " + std::to_string(router.size(1)),
             std::to_string(s.hidden));
      out.weights = MoeWeights(s, gate.scale_dtype());
    }
    if (gate.act_order() || up.act_order() || down.act_order())
      fail(ErrorCode::unsupported, p + "*.g_idx", "g_idx in group order (desc_act MoE experts are not supported)",
           "an act-order permutation");
    out.weights.set_expert(e, gate.view(), up.view(), down.view());
  }
  out.router = HostTensor(router.dtype, router.shape_vec());
  const auto* src = static_cast<const unsigned char*>(router.data);
  std::copy(src, src + router.nbytes(), static_cast<unsigned char*>(out.router.data()));
  return out;
}

}  // namespace w4a16::moe
