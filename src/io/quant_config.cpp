// config.json "quantization_config" (Hugging Face) or a bare quantize_config.json (AutoGPTQ) /
// quant_config.json (AutoAWQ). Unknown fields are ignored; a missing required field, a field of
// the wrong type and any setting this library cannot load exactly are format_error / unsupported.
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "w4a16/core/error.hpp"
#include "w4a16/io/checkpoint.hpp"

namespace w4a16::io {

using json = nlohmann::json;

std::string_view quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::none: return "none";
    case QuantMethod::awq: return "awq";
    case QuantMethod::gptq: return "gptq";
  }
  return "?";
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Fields {
  const json& j;
  std::string where;

  // The first of `names` present (older spellings second), or null.
  const json* find(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (auto it = j.find(n); it != j.end() && !it->is_null()) return &*it;
    return nullptr;
  }
  [[noreturn]] void wrong(const char* name, const char* expected, const json& v) const {
    fail(ErrorCode::format_error, where + " \"" + name + "\"", expected, v.dump());
  }
  int integer(std::initializer_list<const char*> names, std::optional<int> dflt) const {
    const json* v = find(names);
    if (!v) {
      if (dflt) return *dflt;
      fail(ErrorCode::format_error, where + " \"" + *names.begin() + "\"", "a required integer field", "none");
    }
    if (!v->is_number_integer()) wrong(*names.begin(), "an integer", *v);
    return v->get<int>();
  }
  bool boolean(std::initializer_list<const char*> names, bool dflt) const {
    const json* v = find(names);
    if (!v) return dflt;
    if (!v->is_boolean()) wrong(*names.begin(), "true or false", *v);
    return v->get<bool>();
  }
  std::optional<std::string> string(std::initializer_list<const char*> names) const {
    const json* v = find(names);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong(*names.begin(), "a string", *v);
    return v->get<std::string>();
  }
};
}  // namespace

QuantizationConfig parse_quantization_config(const std::string& json_text, const std::string& source) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail(ErrorCode::format_error, source + ": expected well-formed JSON, got a parse error: " + e.what());
  }
  if (!root.is_object()) fail(ErrorCode::format_error, source, "a JSON object", std::string(root.type_name()));
  QuantizationConfig c;
  const json* q = nullptr;
  std::string where = source;
  if (auto it = root.find("quantization_config"); it != root.end() && !it->is_null()) {
    if (!it->is_object()) fail(ErrorCode::format_error, source + " \"quantization_config\"", "an object", it->dump());
    q = &*it;
    where = source + " quantization_config";
  } else if (root.contains("quant_method") || root.contains("bits") || root.contains("w_bit")) {
    q = &root;  // a bare quantize_config.json / quant_config.json
  } else {
    return c;  // an unquantized model
  }
  Fields f{*q, where};

  auto method = f.string({"quant_method"});
  if (method) {
    std::string m = lower(*method);
    if (m == "awq") c.method = QuantMethod::awq;
    else if (m == "gptq") c.method = QuantMethod::gptq;
    else fail(ErrorCode::unsupported, where + " \"quant_method\"", "\"awq\" or \"gptq\"", "\"" + *method + "\"");
  } else {
    // Bare files name no method: AutoAWQ's quant_config.json has zero_point, AutoGPTQ's has none.
    c.method = (q->contains("zero_point") || q->contains("w_bit")) ? QuantMethod::awq : QuantMethod::gptq;
  }

  c.bits = f.integer({"bits", "w_bit"}, std::nullopt);
  if (c.bits != 4) fail(ErrorCode::unsupported, where + " \"bits\"", "4", std::to_string(c.bits));
  c.group_size = f.integer({"group_size", "q_group_size"}, std::nullopt);
  if (!(c.group_size == 32 || c.group_size == 64 || c.group_size == 128 || c.group_size == 256 || c.group_size == -1))
    fail(ErrorCode::unsupported, where + " \"group_size\"", "one of 32, 64, 128, 256, -1 (channelwise)",
         std::to_string(c.group_size));

  if (const json* m = f.find({"modules_to_not_convert"})) {
    if (!m->is_array()) f.wrong("modules_to_not_convert", "null or a list of strings", *m);
    for (const auto& e : *m) {
      if (!e.is_string()) f.wrong("modules_to_not_convert", "null or a list of strings", *m);
      c.modules_to_not_convert.push_back(e.get<std::string>());
    }
  }

  if (c.method == QuantMethod::awq) {
    c.zero_point = f.boolean({"zero_point"}, true);  // Hugging Face AwqConfig's default
    if (!c.zero_point)
      fail(ErrorCode::unsupported, where + " \"zero_point\"", "true (AWQ GEMM with zero points)", "false");
    c.version = lower(f.string({"version"}).value_or("gemm"));
    if (c.version != "gemm")
      fail(ErrorCode::unsupported, where + " \"version\"", "\"gemm\" (the packing of shared/FORMATS.md)",
           "\"" + c.version + "\"");
  } else {
    c.sym = f.boolean({"sym"}, true);  // Hugging Face GPTQConfig's defaults
    c.desc_act = f.boolean({"desc_act"}, false);
    std::string fmt = lower(f.string({"checkpoint_format"}).value_or("gptq"));
    if (fmt == "gptq") c.checkpoint_format = formats::GptqVersion::v1;
    else if (fmt == "gptq_v2") c.checkpoint_format = formats::GptqVersion::v2;
    else fail(ErrorCode::unsupported, where + " \"checkpoint_format\"", "\"gptq\" (v1) or \"gptq_v2\"", "\"" + fmt + "\"");
    if (f.boolean({"is_marlin_format"}, false))
      fail(ErrorCode::unsupported, where + " \"is_marlin_format\"", "false (GPTQ packing)", "true");
  }
  return c;
}

}  // namespace w4a16::io
