// Hugging Face checkpoint folders: the quantization config, every quantized linear found by
// its tensor names (<prefix>.qweight with .scales, .qzeros, [.g_idx], [.bias]), the 2-D
// .weight linears left in 16 bits, and loading one layer into the canonical layout.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "detail.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/io/checkpoint.hpp"

namespace w4a16::io {

namespace fs = std::filesystem;

namespace {
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Embedding tables are 2-D .weight tensors too, but not linears.
bool is_embedding(const std::string& prefix) {
  std::string last = prefix.substr(prefix.rfind('.') == std::string::npos ? 0 : prefix.rfind('.') + 1);
  return last.find("embed") != std::string::npos || last == "wte" || last == "wpe";
}

std::int32_t load_i32(const TensorView& t, std::int64_t i) {
  std::int32_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(t.data) + 4 * i, 4);  // mapped data may be unaligned
  return v;
}
}  // namespace

HfCheckpoint HfCheckpoint::open(const std::string& dir) {
  HfCheckpoint c;
  c.dir_ = dir;
  const fs::path d(dir);
  if (!fs::is_directory(d)) fail(ErrorCode::not_found, dir + ": not a folder");
  const fs::path cfg = d / "config.json";
  bool have_cfg = fs::exists(cfg);
  if (have_cfg) {
    c.config_text_ = detail::read_text(cfg);
    c.qcfg_ = parse_quantization_config(c.config_text_, cfg.string());
  }
  // Older AutoGPTQ / AutoAWQ folders keep the settings beside config.json.
  for (const char* bare : {"quantize_config.json", "quant_config.json"}) {
    if (c.qcfg_.method != QuantMethod::none) break;
    if (fs::exists(d / bare)) {
      c.qcfg_ = parse_quantization_config(detail::read_text(d / bare), (d / bare).string());
      have_cfg = true;
    }
  }
  if (!have_cfg) fail(ErrorCode::not_found, dir + ": expected config.json (or quantize_config.json), got neither");
  c.store_ = TensorStore::open_dir(dir);
  const TensorStore& st = c.store_;
  const QuantizationConfig& q = c.qcfg_;

  std::vector<std::string> names = st.names();
  for (const auto& name : names) {
    if (!ends_with(name, ".qweight")) continue;
    const std::string p = name.substr(0, name.size() - 8);
    if (q.method == QuantMethod::none)
      fail(ErrorCode::format_error, dir + ": tensor '" + name + "'",
           "a quantization_config in config.json for quantized tensors", "an unquantized config");
    auto need = [&](const char* suffix) {
      if (!st.contains(p + suffix))
        fail(ErrorCode::format_error, dir + ": layer '" + p + "'", std::string("a tensor '") + p + suffix + "'", "none");
      return st.info(p + suffix);
    };
    LayerInfo L;
    L.prefix = p;
    L.format = q.method;
    L.group_size = q.group_size;
    const TensorInfo qw = need(".qweight");
    const TensorInfo sc = need(".scales");
    if (qw.shape.size() != 2 || sc.shape.size() != 2)
      fail(ErrorCode::format_error, dir + ": layer '" + p + "'", "2-D qweight and scales",
           "qweight " + shape_str(qw.shape) + ", scales " + shape_str(sc.shape));
    if (q.method == QuantMethod::awq) {
      L.k = qw.shape[0];
      L.n = 8 * qw.shape[1];
      L.scalar = ScalarType::uint4;
      need(".qzeros");
    } else {
      L.k = 8 * qw.shape[0];
      L.n = qw.shape[1];
      L.scalar = q.sym ? ScalarType::uint4b8 : ScalarType::uint4;
      if (!q.sym) need(".qzeros");
    }
    const std::int64_t G = q.group_size == kChannelwise ? 1 : (q.group_size > 0 ? L.k / q.group_size : 0);
    if (sc.shape[1] != L.n || sc.shape[0] != G)
      fail(ErrorCode::format_error, dir + ": tensor '" + p + ".scales'",
           std::string(quant_method_name(q.method)) + " scales [G, N] = " + shape_str({G, L.n}) + " for qweight " +
               shape_str(qw.shape) + " and group_size " + std::to_string(q.group_size),
           shape_str(sc.shape));
    L.has_bias = st.contains(p + ".bias");
    // Only a desc_act checkpoint may hold an act-order g_idx (the converter rejects one
    // elsewhere), so only then is g_idx read here: reading every layer's g_idx would touch
    // K * 4 bytes per layer of the mapped files just to open a folder.
    if (q.method == QuantMethod::gptq && q.desc_act && st.contains(p + ".g_idx")) {
      const TensorView gi = st.view(p + ".g_idx");
      const std::int64_t gl = q.group_size == kChannelwise ? L.k : q.group_size;
      if (gi.dtype == DType::i32 && gi.rank == 1 && gi.shape[0] == L.k)
        for (std::int64_t k = 0; k < L.k && !L.act_order; ++k) L.act_order = load_i32(gi, k) != k / gl;
    }
    for (const char* s : {".qweight", ".qzeros", ".scales", ".g_idx", ".bias"})
      if (st.contains(p + s)) L.bytes += st.info(p + s).end - st.info(p + s).begin;
    c.index_[p] = c.layers_.size();
    c.layers_.push_back(std::move(L));
  }
  // A layer's zero points or group index without its packed weights: a tensor lost in a conversion or a shard the
  // index leaves out. Refused here, named, rather than the layer missing later as a prefix "not found".
  for (const auto& name : names)
    for (const char* orphan : {".qzeros", ".g_idx"})
      if (ends_with(name, orphan)) {
        const std::string p = name.substr(0, name.size() - std::strlen(orphan));
        if (!c.index_.count(p))
          fail(ErrorCode::format_error, dir + ": tensor '" + name + "'", "a tensor '" + p + ".qweight' beside it", "none");
      }
  for (const auto& name : names) {
    if (!ends_with(name, ".weight")) continue;
    const std::string p = name.substr(0, name.size() - 7);
    if (st.info(name).shape.size() != 2 || is_embedding(p)) continue;
    if (c.index_.count(p)) continue;
    c.dense_.push_back(p);
  }
  return c;
}

const LayerInfo& HfCheckpoint::layer(const std::string& prefix) const {
  if (auto it = index_.find(prefix); it != index_.end()) return layers_[it->second];
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& l : layers_) near.emplace_back(edit_distance(prefix, l.prefix), l.prefix);
  std::sort(near.begin(), near.end());
  std::string list;
  for (std::size_t i = 0; i < near.size() && i < 3; ++i) list += (i ? ", '" : "'") + near[i].second + "'";
  bool dense = std::find(dense_.begin(), dense_.end(), prefix) != dense_.end();
  fail(ErrorCode::not_found, dir_ + ": layer '" + prefix + "'",
       "the prefix of a quantized linear (" + std::to_string(layers_.size()) + " in this checkpoint" +
           (list.empty() ? std::string(")") : "; closest: " + list + ")"),
       dense ? "an unquantized 16-bit linear (read '" + prefix + ".weight' through store())" : "no such layer");
}

QuantizedLinear HfCheckpoint::load_linear(const std::string& prefix) const {
  const LayerInfo& L = layer(prefix);
  auto opt = [&](const char* s) { return store_.contains(prefix + s) ? store_.view(prefix + s) : TensorView{}; };
  try {
    if (L.format == QuantMethod::awq)
      return formats::awq_to_canonical({opt(".qweight"), opt(".qzeros"), opt(".scales"), opt(".bias")}, L.group_size);
    formats::GptqOptions o;
    o.group_size = L.group_size;
    o.sym = qcfg_.sym;
    o.desc_act = qcfg_.desc_act;
    o.version = qcfg_.checkpoint_format;
    return formats::gptq_to_canonical({opt(".qweight"), opt(".qzeros"), opt(".scales"), opt(".g_idx"), opt(".bias")}, o);
  } catch (const Error& e) {
    throw Error(e.code(), dir_ + ": layer '" + prefix + "': " + e.what());  // name the layer and its folder
  }
}

}  // namespace w4a16::io
