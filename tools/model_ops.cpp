#include "model_ops.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace w4a16::cli {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::io_error, path, "a readable file", std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorCode::io_error, path, "a writable file", std::strerror(errno));
  out << text;
  if (!out.flush()) fail(ErrorCode::io_error, path, "a complete write", std::strerror(errno));
}

namespace {

void make_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) fail(ErrorCode::io_error, dir, "a directory that can be created", ec ? ec.message() : "not a directory");
}

// ---- synth ----------------------------------------------------------------------------

struct SynthTensor {
  std::string name;
  HostTensor t;
};

// Normal(mean, std) values rounded to the checkpoint dtype (never all zeros: a kernel that
// ignores its weights must not pass the round trip).
HostTensor random_tensor(std::vector<std::int64_t> shape, DType dtype, float mean, float std, std::mt19937_64& rng) {
  HostTensor t(dtype, std::move(shape));
  std::normal_distribution<float> dist(mean, std);
  auto* p = t.ptr<std::uint16_t>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = float_to_f16x(dtype, dist(rng));
  return t;
}

}  // namespace

SynthReport synth_checkpoint(const std::string& out_dir, const SynthOptions& o) {
  if (o.arch != "qwen2") fail(ErrorCode::invalid_argument, "--arch", "qwen2", "'" + o.arch + "'");
  if (o.layers < 1) fail(ErrorCode::invalid_argument, "--layers", "at least 1", std::to_string(o.layers));
  if (o.hidden < 8 || o.hidden % 8) fail(ErrorCode::invalid_argument, "--hidden", "a positive multiple of 8", std::to_string(o.hidden));
  if (o.intermediate < 8 || o.intermediate % 8)
    fail(ErrorCode::invalid_argument, "--intermediate", "a positive multiple of 8", std::to_string(o.intermediate));
  if (o.vocab < 1) fail(ErrorCode::invalid_argument, "--vocab", "at least 1", std::to_string(o.vocab));
  if (!is_activation_dtype(o.dtype)) fail(ErrorCode::invalid_argument, "--dtype", "float16 or bfloat16", std::string(dtype_name(o.dtype)));
  const int heads = o.heads > 0 ? o.heads : static_cast<int>(std::max<std::int64_t>(1, o.hidden / 64));
  if (o.hidden % heads || (o.hidden / heads) % 8)
    fail(ErrorCode::invalid_argument, "--heads", "a divisor of --hidden " + std::to_string(o.hidden) + " leaving a head_dim that is a multiple of 8",
         std::to_string(heads));
  const int kv = o.kv_heads > 0 ? o.kv_heads : (heads % 2 == 0 ? heads / 2 : heads);
  if (heads % kv) fail(ErrorCode::invalid_argument, "--kv-heads", "a divisor of the " + std::to_string(heads) + " heads", std::to_string(kv));
  const std::int64_t head_dim = o.hidden / heads, kv_dim = kv * head_dim, H = o.hidden, I = o.intermediate;

  std::mt19937_64 rng(o.seed);
  constexpr float kInit = 0.02f;  // Qwen2's initializer_range
  SynthReport report;
  std::vector<SynthTensor> ts;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, float mean, float std) {
    ts.push_back({name, random_tensor(std::move(shape), o.dtype, mean, std, rng)});
  };
  auto add_linear = [&](const std::string& prefix, std::int64_t n, std::int64_t k, bool bias) {
    add(prefix + ".weight", {n, k}, 0.f, kInit);
    if (bias) add(prefix + ".bias", {n}, 0.f, kInit);
    report.linears.push_back(prefix);
  };
  add("model.embed_tokens.weight", {o.vocab, H}, 0.f, kInit);
  for (int l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    add(p + ".input_layernorm.weight", {H}, 1.f, 0.05f);
    add_linear(p + ".self_attn.q_proj", H, H, true);  // Qwen2 has biases on q, k, v only
    add_linear(p + ".self_attn.k_proj", kv_dim, H, true);
    add_linear(p + ".self_attn.v_proj", kv_dim, H, true);
    add_linear(p + ".self_attn.o_proj", H, H, false);
    add(p + ".post_attention_layernorm.weight", {H}, 1.f, 0.05f);
    add_linear(p + ".mlp.gate_proj", I, H, false);
    add_linear(p + ".mlp.up_proj", I, H, false);
    add_linear(p + ".mlp.down_proj", H, I, false);
  }
  add("model.norm.weight", {H}, 1.f, 0.05f);
  add("lm_head.weight", {o.vocab, H}, 0.f, kInit);
  std::sort(ts.begin(), ts.end(), [](const SynthTensor& a, const SynthTensor& b) { return a.name < b.name; });

  make_dir(out_dir);
  std::vector<std::pair<std::string, TensorView>> views;
  for (const auto& t : ts) {
    views.emplace_back(t.name, t.t.view());
    report.bytes += t.t.nbytes();
  }
  report.tensors = ts.size();
  io::write_safetensors((fs::path(out_dir) / "model.safetensors").string(), views, {{"format", "pt"}});

  ojson cfg;
  cfg["architectures"] = {"Qwen2ForCausalLM"};
  cfg["model_type"] = "qwen2";
  cfg["hidden_size"] = H;
  cfg["intermediate_size"] = I;
  cfg["num_hidden_layers"] = o.layers;
  cfg["num_attention_heads"] = heads;
  cfg["num_key_value_heads"] = kv;
  cfg["hidden_act"] = "silu";
  cfg["max_position_embeddings"] = 32768;
  cfg["max_window_layers"] = o.layers;
  cfg["rms_norm_eps"] = 1e-6;
  cfg["rope_theta"] = 1000000.0;
  cfg["sliding_window"] = 32768;
  cfg["use_sliding_window"] = false;
  cfg["attention_dropout"] = 0.0;
  cfg["initializer_range"] = kInit;
  cfg["tie_word_embeddings"] = false;
  cfg["torch_dtype"] = o.dtype == DType::bf16 ? "bfloat16" : "float16";
  cfg["use_cache"] = true;
  cfg["vocab_size"] = o.vocab;
  cfg["bos_token_id"] = 0;
  cfg["eos_token_id"] = 1;
  cfg["transformers_version"] = "4.45.0";
  cfg["_w4a16_synthetic"] = {{"seed", o.seed}, {"tool", "w4a16 synth"}};  // unknown fields are ignored by loaders
  write_text_file((fs::path(out_dir) / "config.json").string(), cfg.dump(2) + "\n");
  return report;
}

// ---- quantize -------------------------------------------------------------------------

bool is_quantizable_linear(const std::string& prefix, const std::vector<std::string>& skip) {
  const std::string last = prefix.substr(prefix.rfind('.') == std::string::npos ? 0 : prefix.rfind('.') + 1);
  if (last == "lm_head" || prefix.find("embed") != std::string::npos || prefix.find("norm") != std::string::npos) return false;
  for (const auto& s : skip)
    if (!s.empty() && prefix.find(s) != std::string::npos) return false;
  return true;
}

QuantizeReport quantize_checkpoint(const std::string& in_dir, const std::string& out_dir, const QuantizeCkptOptions& opt) {
  if (!fs::is_directory(in_dir)) fail(ErrorCode::not_found, in_dir, "a checkpoint directory", "no such directory");
  {
    std::error_code ec;
    if (fs::exists(out_dir) && fs::equivalent(in_dir, out_dir, ec))
      fail(ErrorCode::invalid_argument, "OUT_DIR", "a directory other than IN_DIR (the input is read while the output is written)", out_dir);
  }
  if (opt.format == OutFormat::awq && opt.sym)
    fail(ErrorCode::invalid_argument, "--sym", "--format gptq (AWQ is always asymmetric uint4 with zero points)", "--format awq");
  const std::string cfg_path = (fs::path(in_dir) / "config.json").string();
  ojson cfg;
  try {
    cfg = ojson::parse(read_text_file(cfg_path));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::format_error, cfg_path, "valid JSON", e.what());
  }
  if (!cfg.is_object()) fail(ErrorCode::format_error, cfg_path, "a JSON object", cfg.type_name());
  if (cfg.contains("quantization_config") && !cfg["quantization_config"].is_null())
    fail(ErrorCode::invalid_argument, cfg_path, "an unquantized (16-bit) checkpoint",
         "one with a quantization_config (" + cfg["quantization_config"].value("quant_method", std::string("?")) + ")");

  io::TensorStore store = io::TensorStore::open_dir(in_dir);
  QuantizeReport report;
  std::vector<std::string> todo;
  for (const auto& name : store.names()) {
    const io::TensorInfo& info = store.info(name);
    report.bytes_in += info.end - info.begin;
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (!weight || info.shape.size() != 2) continue;
    const std::string prefix = name.substr(0, name.size() - 7);
    const bool floating = info.dtype == DType::f16 || info.dtype == DType::bf16 || info.dtype == DType::f32;
    if (floating && is_quantizable_linear(prefix, opt.skip))
      todo.push_back(prefix);
    else
      report.kept.push_back(prefix);
  }
  if (todo.empty())
    fail(ErrorCode::not_found, in_dir, "at least one 2-D float linear weight to quantize", "none (every one is an embedding, norm, lm_head or skipped)");

  formats::QuantizeOptions qo;
  qo.group_size = opt.group_size;
  qo.scalar = (opt.format == OutFormat::gptq && opt.sym) ? ScalarType::uint4b8 : ScalarType::uint4;
  qo.scale_dtype = DType::f16;  // AWQ and GPTQ checkpoints store fp16 scales (shared/FORMATS.md)

  std::vector<QuantizedLinear> quantized;  // canonical layers; io::write_hf_checkpoint packs them
  quantized.reserve(todo.size());
  std::map<std::string, bool> replaced;     // input tensors not copied through
  Progress progress("quantize", static_cast<std::int64_t>(todo.size()), opt.quiet);
  for (const auto& prefix : todo) {
    progress.step(prefix);
    const std::string wname = prefix + ".weight";
    with_context(wname, [&] {
      // Copy out of the mapped file: safetensors data need not be aligned for its dtype.
      TensorView src = store.view(wname);
      HostTensor w(src.dtype, src.shape_vec());
      std::memcpy(w.data(), src.data, w.nbytes());
      QuantizedLinear q = formats::quantize_rtn(w.view(), qo);
      // The format's layout rules (both pack 8 columns of N per zero-point word) are checked
      // now, so the error names this weight instead of coming from the writer after all the work.
      if (opt.format == OutFormat::awq)
        (void)formats::canonical_to_awq(q.view());
      else
        (void)formats::canonical_to_gptq(q.view());
      quantized.push_back(std::move(q));
    });
    replaced[wname] = true;
    report.quantized.push_back(prefix);
  }
  progress.done();
  std::vector<std::pair<std::string, const QuantizedLinear*>> layers;
  for (std::size_t i = 0; i < todo.size(); ++i) layers.emplace_back(todo[i], &quantized[i]);
  // Everything else (biases, norms, embeddings, lm_head, skipped linears) is copied bit for bit:
  // a bias stays in the model's dtype instead of being rounded to the scales' float16.
  std::vector<std::pair<std::string, TensorView>> dense;
  for (const auto& name : store.names())
    if (!replaced.count(name)) dense.emplace_back(name, store.view(name));

  io::HfWriteOptions wo;
  wo.method = opt.format == OutFormat::awq ? io::QuantMethod::awq : io::QuantMethod::gptq;
  wo.modules_to_not_convert = opt.skip;
  wo.shard_bytes = opt.shard_bytes;
  wo.config_json = cfg.dump();
  make_dir(out_dir);
  io::write_hf_checkpoint(out_dir, layers, dense, wo);

  // What was written, read back as HfCheckpoint will: the byte count of the folder's tensors,
  // and (GPTQ) the checkpoint_format the writer chose; AutoGPTQ also reads quantize_config.json.
  io::TensorStore written = io::TensorStore::open_dir(out_dir);
  for (const auto& name : written.names()) report.bytes_out += written.info(name).end - written.info(name).begin;
  const ojson out_cfg = ojson::parse(read_text_file((fs::path(out_dir) / "config.json").string()));
  if (opt.format == OutFormat::gptq) {
    report.checkpoint_format = out_cfg["quantization_config"].value("checkpoint_format", std::string());
    write_text_file((fs::path(out_dir) / "quantize_config.json").string(), out_cfg["quantization_config"].dump(2) + "\n");
  }

  // Tokenizer and generation files travel with the weights; old weight files do not.
  for (const auto& e : fs::directory_iterator(in_dir)) {
    const std::string fname = e.path().filename().string();
    if (!e.is_regular_file() || fname == "config.json" || fname == "quantize_config.json" ||
        fname == "model.safetensors.index.json" || e.path().extension() == ".safetensors" || e.path().extension() == ".bin")
      continue;
    std::error_code ec;
    fs::copy_file(e.path(), fs::path(out_dir) / fname, fs::copy_options::overwrite_existing, ec);
    if (ec) fail(ErrorCode::io_error, (fs::path(out_dir) / fname).string(), "a copy of " + e.path().string(), ec.message());
  }
  return report;
}

}  // namespace w4a16::cli
