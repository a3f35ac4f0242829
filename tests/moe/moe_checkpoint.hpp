// A tiny synthetic Hugging Face MoE checkpoint folder written with the project's own writers
// (formats::canonical_to_awq / canonical_to_gptq, io::write_safetensors): used by the loader tests
// (tests/moe/test_moe_loader.cpp) and the CLI's `moe` test (tests/tools/cli_test.cpp).
#pragma once
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "testutil.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/safetensors.hpp"

namespace w4a16::moe::testckpt {

namespace fs = std::filesystem;

struct Expert {
  QuantizedLinear gate, up, down;
};

// Writes layer `layer` of a checkpoint with E experts; returns the originals. mixtral: Mixtral's names
// (block_sparse_moe.experts.E.{w1,w3,w2}, block_sparse_moe.gate.weight) instead of Qwen3-MoE's.
inline std::vector<Expert> write_checkpoint(const fs::path& dir, const std::string& method, ScalarType st, int E,
                                            std::int64_t H, std::int64_t I, int g, int layer, HostTensor& router,
                                            bool drop_one = false, bool mixtral = false) {
  std::vector<Expert> ex;
  std::vector<std::pair<std::string, TensorView>> tensors;
  std::vector<formats::AwqHost> awq;
  std::vector<formats::GptqHost> gptq;
  awq.reserve(3 * E);
  gptq.reserve(3 * E);
  formats::GptqVersion version = formats::GptqVersion::v1;
  const std::string base = "model.layers." + std::to_string(layer) + (mixtral ? ".block_sparse_moe." : ".mlp.");
  for (int e = 0; e < E; ++e) {
    Expert x{test::random_linear({I, H, g, st}, DType::f16, false, false),
             test::random_linear({I, H, g, st}, DType::f16, false, false),
             test::random_linear({H, I, g, st}, DType::f16, false, false)};
    const QuantizedLinear* parts[3] = {&x.gate, &x.up, &x.down};
    const char* qwen_names[3] = {"gate_proj", "up_proj", "down_proj"};
    const char* mixtral_names[3] = {"w1", "w3", "w2"};
    const char* const* names = mixtral ? mixtral_names : qwen_names;
    for (int i = 0; i < 3; ++i) {
      const std::string p = base + "experts." + std::to_string(e) + "." + names[i];
      if (drop_one && e == E - 1 && i == 2) continue;
      if (method == "awq") {
        awq.push_back(formats::canonical_to_awq(parts[i]->view()));
        tensors.push_back({p + ".qweight", awq.back().qweight.view()});
        tensors.push_back({p + ".qzeros", awq.back().qzeros.view()});
        tensors.push_back({p + ".scales", awq.back().scales.view()});
      } else {
        gptq.push_back(formats::canonical_to_gptq(parts[i]->view()));
        version = gptq.back().version;
        tensors.push_back({p + ".qweight", gptq.back().qweight.view()});
        tensors.push_back({p + ".qzeros", gptq.back().qzeros.view()});
        tensors.push_back({p + ".scales", gptq.back().scales.view()});
        if (!gptq.back().g_idx.empty()) tensors.push_back({p + ".g_idx", gptq.back().g_idx.view()});
      }
    }
    ex.push_back(std::move(x));
  }
  router = HostTensor(DType::bf16, {E, H});
  std::normal_distribution<float> nd(0.f, 0.05f);  // finite logits: the CLI test routes tokens with it
  for (std::int64_t i = 0; i < router.numel(); ++i) router.ptr<std::uint16_t>()[i] = float_to_bf16(nd(test::rng()));
  tensors.push_back({base + "gate.weight", router.view()});
  io::write_safetensors((dir / "model.safetensors").string(), tensors);
  std::ofstream cfg(dir / "config.json");
  if (method == "awq")
    cfg << R"({"model_type": "qwen3_moe", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": )" << g
        << R"(, "zero_point": true, "version": "gemm"}})";
  else
    cfg << R"({"model_type": "qwen3_moe", "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": )" << g
        << R"(, "sym": )" << (st == ScalarType::uint4b8 ? "true" : "false") << R"(, "desc_act": false, "checkpoint_format": ")"
        << (version == formats::GptqVersion::v2 ? "gptq_v2" : "gptq") << R"("}})";
  return ex;
}

}  // namespace w4a16::moe::testckpt
