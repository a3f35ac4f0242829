// Hugging Face checkpoint folders: config.json quantization_config, the quantized linears
// found by their tensor names, and loading one layer by prefix into the canonical layout.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/safetensors.hpp"

namespace w4a16::io {

enum class QuantMethod { none, awq, gptq };
std::string_view quant_method_name(QuantMethod m);

struct QuantizationConfig {
  QuantMethod method = QuantMethod::none;
  int bits = 4;
  int group_size = 128;  // -1 channelwise
  bool zero_point = true;  // awq
  std::string version = "gemm";  // awq
  bool sym = true;          // gptq
  bool desc_act = false;    // gptq
  formats::GptqVersion checkpoint_format = formats::GptqVersion::v1;  // gptq
  std::vector<std::string> modules_to_not_convert;
};
// Parses config.json text's "quantization_config" (or a quantize_config.json body). Unknown
// fields are ignored; missing required ones are a format_error naming the field.
QuantizationConfig parse_quantization_config(const std::string& json_text, const std::string& source);

// The fields above as config.json's "quantization_config" object (JSON text); what
// parse_quantization_config reads back to an equal config.
std::string quantization_config_json(const QuantizationConfig& q);

struct LayerInfo {
  std::string prefix;  // "model.layers.0.self_attn.q_proj"
  QuantMethod format = QuantMethod::none;
  std::int64_t n = 0, k = 0;
  int group_size = 0;
  ScalarType scalar = ScalarType::uint4;
  bool has_bias = false;
  bool act_order = false;
  std::size_t bytes = 0;  // bytes of the layer's tensors in the files
};

class HfCheckpoint {
 public:
  static HfCheckpoint open(const std::string& dir);
  const std::string& dir() const { return dir_; }
  const QuantizationConfig& quant_config() const { return qcfg_; }
  const std::string& config_json() const { return config_text_; }
  const TensorStore& store() const { return store_; }
  const std::vector<LayerInfo>& quantized_layers() const { return layers_; }
  // Prefixes of 2-D ".weight" tensors left unquantized (lm_head, modules_to_not_convert, ...).
  const std::vector<std::string>& unquantized_linears() const { return dense_; }
  const LayerInfo& layer(const std::string& prefix) const;  // not_found lists near names
  QuantizedLinear load_linear(const std::string& prefix) const;

 private:
  std::string dir_;
  std::string config_text_;
  QuantizationConfig qcfg_;
  TensorStore store_;
  std::vector<LayerInfo> layers_;               // in tensor-name order
  std::map<std::string, std::size_t> index_;     // prefix -> position in layers_
  std::vector<std::string> dense_;
};

// Writes a Hugging Face style folder that HfCheckpoint::open reads back exactly: config.json
// (`config_json`'s fields plus "quantization_config"), and model.safetensors or, when
// shard_bytes > 0, shards of at most shard_bytes (a larger tensor gets its own shard) named
// model-0000i-of-0000n.safetensors with model.safetensors.index.json. The config is global, so
// every layer must share group size and scalar type. AWQ takes uint4 layers without perm;
// GPTQ writes checkpoint_format "gptq" (v1) for uint4b8, "gptq_v2" for uint4 (v1 cannot store
// z = 0), and desc_act = true when any layer has a perm. `dense` tensors (e.g. "lm_head.weight")
// are written as given. The folder is created if needed.
struct HfWriteOptions {
  QuantMethod method = QuantMethod::gptq;
  std::vector<std::string> modules_to_not_convert;
  std::size_t shard_bytes = 0;     // 0: one model.safetensors
  std::string config_json = "{}";  // a JSON object: the model's other config.json fields
};
void write_hf_checkpoint(const std::string& dir, const std::vector<std::pair<std::string, const QuantizedLinear*>>& layers,
                         const std::vector<std::pair<std::string, TensorView>>& dense, const HfWriteOptions& opt);

}  // namespace w4a16::io
