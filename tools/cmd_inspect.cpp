// w4a16 inspect DIR: what a checkpoint holds, as io::HfCheckpoint reads it.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "w4a16/io/checkpoint.hpp"

namespace w4a16::cli {
namespace {

using ojson = nlohmann::ordered_json;

std::string group_text(int g) { return g == kChannelwise ? "channelwise" : std::to_string(g); }

ojson config_json(const io::QuantizationConfig& q) {
  ojson j;
  j["quant_method"] = std::string(io::quant_method_name(q.method));
  if (q.method == io::QuantMethod::none) return j;
  j["bits"] = q.bits;
  j["group_size"] = q.group_size;
  if (q.method == io::QuantMethod::awq) {
    j["zero_point"] = q.zero_point;
    j["version"] = q.version;
  } else {
    j["sym"] = q.sym;
    j["desc_act"] = q.desc_act;
    j["checkpoint_format"] = q.checkpoint_format == formats::GptqVersion::v2 ? "gptq_v2" : "gptq";
  }
  j["modules_to_not_convert"] = q.modules_to_not_convert;
  return j;
}

std::string config_line(const io::QuantizationConfig& q) {
  std::string s = "quant_method " + std::string(io::quant_method_name(q.method));
  if (q.method == io::QuantMethod::none) return s + " (no quantization_config: a 16-bit checkpoint)";
  s += ", bits " + std::to_string(q.bits) + ", group_size " + group_text(q.group_size);
  if (q.method == io::QuantMethod::awq) {
    s += std::string(", zero_point ") + (q.zero_point ? "true" : "false") + ", version " + q.version;
  } else {
    s += std::string(", sym ") + (q.sym ? "true" : "false") + ", desc_act " + (q.desc_act ? "true" : "false") +
         ", checkpoint_format " + (q.checkpoint_format == formats::GptqVersion::v2 ? "gptq_v2" : "gptq");
  }
  s += ", modules_to_not_convert ";
  if (q.modules_to_not_convert.empty()) return s + "none";
  for (std::size_t i = 0; i < q.modules_to_not_convert.size(); ++i) s += (i ? "," : "") + q.modules_to_not_convert[i];
  return s;
}

int run_inspect(const ParsedArgs& a) {
  io::HfCheckpoint ck = io::HfCheckpoint::open(a.positionals[0]);
  const auto& layers = ck.quantized_layers();
  std::uint64_t total = 0;
  for (const auto& l : layers) total += l.bytes;

  if (a.has("json")) {
    ojson j;
    j["dir"] = ck.dir();
    j["quantization_config"] = config_json(ck.quant_config());
    j["quantized_layers"] = ojson::array();
    for (const auto& l : layers)
      j["quantized_layers"].push_back({{"prefix", l.prefix},
                                       {"format", std::string(io::quant_method_name(l.format))},
                                       {"n", l.n},
                                       {"k", l.k},
                                       {"group_size", l.group_size},
                                       {"scalar", std::string(scalar_type_name(l.scalar))},
                                       {"bias", l.has_bias},
                                       {"act_order", l.act_order},
                                       {"bytes", l.bytes}});
    j["quantized_bytes"] = total;
    j["unquantized_linears"] = ck.unquantized_linears();
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::printf("checkpoint %s\n", ck.dir().c_str());
  std::printf("quantization_config: %s\n", config_line(ck.quant_config()).c_str());
  std::printf("quantized linears: %zu, %s\n", layers.size(), human_bytes(total).c_str());
  if (!layers.empty()) {
    std::size_t w = 6;  // "prefix"
    for (const auto& l : layers) w = std::max(w, l.prefix.size());
    std::printf("  %-*s  %-6s  %-13s  %-11s  %-7s  %-4s  %-9s  %s\n", static_cast<int>(w), "prefix", "format", "N x K",
                "group_size", "scalar", "bias", "act_order", "bytes");
    for (const auto& l : layers) {
      std::string nk = std::to_string(l.n) + " x " + std::to_string(l.k);
      std::printf("  %-*s  %-6s  %-13s  %-11s  %-7s  %-4s  %-9s  %s\n", static_cast<int>(w), l.prefix.c_str(),
                  std::string(io::quant_method_name(l.format)).c_str(), nk.c_str(), group_text(l.group_size).c_str(),
                  std::string(scalar_type_name(l.scalar)).c_str(), l.has_bias ? "yes" : "no", l.act_order ? "yes" : "no",
                  with_commas(l.bytes).c_str());
    }
  }
  const auto& dense = ck.unquantized_linears();
  std::printf("left in 16-bit: %zu linear%s\n", dense.size(), dense.size() == 1 ? "" : "s");
  for (const auto& d : dense) std::printf("  %s\n", d.c_str());
  return 0;
}

}  // namespace

Command inspect_command() {
  return {{"inspect",
           "print a checkpoint's quantization config, every quantized layer, and the linears left in 16-bit",
           {"DIR"},
           {{"json", "", "machine-readable output (one JSON object on stdout)"}},
           "DIR is a Hugging Face folder: config.json and model.safetensors (or a sharded index).\n"
           "Per layer: format, N x K (out x in features), group size, scalar type (uint4 with zero\n"
           "points, uint4b8 symmetric), bias, act-order, and the bytes of its tensors in the files."},
          run_inspect};
}

}  // namespace w4a16::cli
