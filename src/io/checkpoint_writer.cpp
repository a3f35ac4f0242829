// Writing Hugging Face style quantized folders (config.json + safetensors, optionally sharded)
// from canonical layers, through the AWQ / GPTQ writers of src/formats.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "w4a16/core/error.hpp"
#include "w4a16/io/checkpoint.hpp"

namespace w4a16::io {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
// Temporary file + rename, as write_safetensors does, so a reader never sees half a file.
void write_text_atomic(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) fail(ErrorCode::io_error, tmp.string() + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fail(ErrorCode::io_error, p.string() + ": rename failed: " + ec.message());
}
}  // namespace

std::string quantization_config_json(const QuantizationConfig& q) {
  ojson j = ojson::object();
  j["quant_method"] = std::string(quant_method_name(q.method));
  j["bits"] = q.bits;
  j["group_size"] = q.group_size;
  if (q.method == QuantMethod::awq) {
    j["zero_point"] = q.zero_point;
    j["version"] = q.version;
  } else if (q.method == QuantMethod::gptq) {
    j["sym"] = q.sym;
    j["desc_act"] = q.desc_act;
    j["checkpoint_format"] = q.checkpoint_format == formats::GptqVersion::v1 ? "gptq" : "gptq_v2";
  }
  if (q.modules_to_not_convert.empty()) j["modules_to_not_convert"] = nullptr;
  else j["modules_to_not_convert"] = q.modules_to_not_convert;
  return j.dump();
}

void write_hf_checkpoint(const std::string& dir, const std::vector<std::pair<std::string, const QuantizedLinear*>>& layers,
                         const std::vector<std::pair<std::string, TensorView>>& dense, const HfWriteOptions& opt) {
  if (opt.method == QuantMethod::none)
    fail(ErrorCode::invalid_argument, "write_hf_checkpoint method", "awq or gptq", "none");
  QuantizationConfig q;
  q.method = opt.method;
  q.modules_to_not_convert = opt.modules_to_not_convert;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& [name, l] = layers[i];
    if (!l) fail(ErrorCode::invalid_argument, "write_hf_checkpoint layer '" + name + "'", "a layer", "a null pointer");
    const QuantSpec& s = l->spec();
    if (i == 0) {
      q.group_size = s.group_size;
      q.sym = !s.has_zeros();
    } else if (s.group_size != q.group_size || s.has_zeros() == q.sym) {
      const QuantSpec& f = layers[0].second->spec();
      fail(ErrorCode::invalid_argument, "write_hf_checkpoint layer '" + name + "'",
           "the group size and scalar type of every other layer (one quantization_config): g=" +
               std::to_string(f.group_size) + " " + std::string(scalar_type_name(f.scalar)),
           "g=" + std::to_string(s.group_size) + " " + std::string(scalar_type_name(s.scalar)));
    }
    if (l->act_order()) q.desc_act = true;
  }
  q.checkpoint_format = q.sym ? formats::GptqVersion::v1 : formats::GptqVersion::v2;

  // Converted tensors are kept alive here while the views below point into them.
  std::vector<formats::AwqHost> awq;
  std::vector<formats::GptqHost> gptq;
  awq.reserve(layers.size());
  gptq.reserve(layers.size());
  std::vector<std::pair<std::string, TensorView>> tensors;
  for (const auto& [name, l] : layers) {
    try {
      if (opt.method == QuantMethod::awq) {
        const auto& h = awq.emplace_back(formats::canonical_to_awq(l->view()));
        tensors.emplace_back(name + ".qweight", h.qweight.view());
        tensors.emplace_back(name + ".qzeros", h.qzeros.view());
        tensors.emplace_back(name + ".scales", h.scales.view());
        if (l->has_bias()) tensors.emplace_back(name + ".bias", h.bias.view());
      } else {
        const auto& h = gptq.emplace_back(formats::canonical_to_gptq(l->view(), q.checkpoint_format));
        tensors.emplace_back(name + ".qweight", h.qweight.view());
        tensors.emplace_back(name + ".qzeros", h.qzeros.view());
        tensors.emplace_back(name + ".scales", h.scales.view());
        tensors.emplace_back(name + ".g_idx", h.g_idx.view());
        if (l->has_bias()) tensors.emplace_back(name + ".bias", h.bias.view());
      }
    } catch (const Error& e) {
      throw Error(e.code(), "write_hf_checkpoint layer '" + name + "': " + e.what());
    }
  }
  for (const auto& d : dense) tensors.push_back(d);

  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(opt.config_json);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::invalid_argument, "write_hf_checkpoint config_json", "a JSON object", std::string("a parse error: ") + e.what());
  }
  if (!cfg.is_object()) fail(ErrorCode::invalid_argument, "write_hf_checkpoint config_json", "a JSON object", cfg.dump());
  cfg["quantization_config"] = nlohmann::json::parse(quantization_config_json(q));

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(ErrorCode::io_error, dir + ": cannot create the folder: " + ec.message());
  const fs::path d(dir);
  write_text_atomic(d / "config.json", cfg.dump(2) + "\n");
  if (opt.shard_bytes == 0) {
    fs::remove(d / "model.safetensors.index.json", ec);  // it would take precedence over the new file
    write_safetensors((d / "model.safetensors").string(), tensors, {{"format", "pt"}});
    return;
  }
  std::vector<std::vector<std::pair<std::string, TensorView>>> shards(1);
  std::size_t bytes = 0, total = 0;
  for (const auto& t : tensors) {
    if (!shards.back().empty() && bytes + t.second.nbytes() > opt.shard_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(t);
    bytes += t.second.nbytes();
    total += t.second.nbytes();
  }
  auto shard_name = [&](std::size_t i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    return std::string(buf);
  };
  ojson index = ojson::object();
  index["metadata"] = {{"total_size", total}};
  ojson map = ojson::object();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    write_safetensors((d / shard_name(i)).string(), shards[i], {{"format", "pt"}});
    for (const auto& t : shards[i]) map[t.first] = shard_name(i);
  }
  index["weight_map"] = std::move(map);
  fs::remove(d / "model.safetensors", ec);  // the index takes precedence, but leave no stale copy
  write_text_atomic(d / "model.safetensors.index.json", index.dump(2) + "\n");
}

}  // namespace w4a16::io
