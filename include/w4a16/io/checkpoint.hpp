// Hugging Face checkpoint folders: config.json quantization_config, the quantized linears
// found by their tensor names, and loading one layer by prefix into the canonical layout.
#pragma once
#include <map>
#include <optional>
#include <string>
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

}  // namespace w4a16::io
