// Checkpoint folders and safetensors files (src/io): open a Hugging Face checkpoint, list its
// quantized layers, load one into a Layer; read and write safetensors from numpy arrays.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bind.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"

namespace w4a16::py {
namespace {

nb::dict layer_info(const io::LayerInfo& l) {
  nb::dict d;
  d["prefix"] = l.prefix;
  d["format"] = std::string(io::quant_method_name(l.format));
  d["n"] = l.n;
  d["k"] = l.k;
  d["group_size"] = l.group_size;
  d["scalar_type"] = std::string(scalar_type_name(l.scalar));
  d["has_bias"] = l.has_bias;
  d["act_order"] = l.act_order;
  d["bytes"] = l.bytes;
  return d;
}

nb::dict quant_config(const io::QuantizationConfig& q) {
  nb::dict d;
  d["quant_method"] = std::string(io::quant_method_name(q.method));
  d["bits"] = q.bits;
  d["group_size"] = q.group_size;
  d["zero_point"] = q.zero_point;
  d["version"] = q.version;
  d["sym"] = q.sym;
  d["desc_act"] = q.desc_act;
  d["checkpoint_format"] = q.checkpoint_format == formats::GptqVersion::v1 ? "gptq" : "gptq_v2";
  d["modules_to_not_convert"] = q.modules_to_not_convert;
  return d;
}

// Python handle on an open checkpoint (the tensor store maps shards lazily).
struct Checkpoint {
  std::shared_ptr<io::HfCheckpoint> ck;
};

}  // namespace

void bind_io(nb::module_& m) {
  nb::class_<Checkpoint>(m, "Checkpoint", "A Hugging Face checkpoint folder (config.json + safetensors).")
      .def_static("open", [](const std::string& dir) { return Checkpoint{std::make_shared<io::HfCheckpoint>(io::HfCheckpoint::open(dir))}; },
                  nb::arg("dir"))
      .def_prop_ro("dir", [](const Checkpoint& c) { return c.ck->dir(); })
      .def_prop_ro("quantization_config", [](const Checkpoint& c) { return quant_config(c.ck->quant_config()); })
      .def_prop_ro("quantized_layers",
                   [](const Checkpoint& c) {
                     nb::list l;
                     for (const auto& x : c.ck->quantized_layers()) l.append(layer_info(x));
                     return l;
                   })
      .def_prop_ro("unquantized_linears", [](const Checkpoint& c) { return c.ck->unquantized_linears(); })
      .def("layer", [](const Checkpoint& c, const std::string& p) { return layer_info(c.ck->layer(p)); }, nb::arg("prefix"))
      .def("load_linear", [](const Checkpoint& c, const std::string& p) { return make_layer(c.ck->load_linear(p)); },
           nb::arg("prefix"));

  m.def(
      "load_linear",
      [](const std::string& dir, const std::string& prefix) {
        return make_layer(io::HfCheckpoint::open(dir).load_linear(prefix));
      },
      nb::arg("dir"), nb::arg("prefix"));

  m.def(
      "write_checkpoint",
      [](const std::string& dir, const std::vector<std::pair<std::string, const Layer*>>& layers,
         const std::vector<std::pair<std::string, InArray>>& dense, std::string_view method,
         const std::vector<std::string>& modules_to_not_convert, std::size_t shard_bytes,
         const std::string& config_json, std::string_view bits16) {
        io::HfWriteOptions o;
        if (method == "awq") o.method = io::QuantMethod::awq;
        else if (method == "gptq") o.method = io::QuantMethod::gptq;
        else fail(ErrorCode::invalid_argument, "format", "\"awq\" or \"gptq\"", "\"" + std::string(method) + "\"");
        o.modules_to_not_convert = modules_to_not_convert;
        o.shard_bytes = shard_bytes;
        o.config_json = config_json;
        std::vector<std::pair<std::string, const QuantizedLinear*>> ls;
        for (const auto& [prefix, layer] : layers) {
          if (!layer) fail(ErrorCode::invalid_argument, prefix, "a QuantizedLinear", "None");
          ls.emplace_back(prefix, layer->q.get());
        }
        std::vector<std::pair<std::string, TensorView>> dv;
        for (const auto& [name, arr] : dense) {
          TensorView v = to_view(arr, name, bits16);
          require_host(v, name);
          check_contiguous(v, name);
          dv.emplace_back(name, v);
        }
        nb::gil_scoped_release release;
        io::write_hf_checkpoint(dir, ls, dv, o);
      },
      nb::arg("dir"), nb::arg("layers"), nb::arg("dense"), nb::arg("format"), nb::arg("modules_to_not_convert"),
      nb::arg("shard_bytes"), nb::arg("config_json"), nb::arg("dtype") = "",
      "dense: (name, array) pairs written as given; uint16 arrays with dtype=\"bfloat16\" are stored as BF16.");

  m.def(
      "write_safetensors",
      [](const std::string& path, const std::vector<std::pair<std::string, InArray>>& tensors,
         const std::map<std::string, std::string>& metadata, std::string_view bits16) {
        std::vector<std::pair<std::string, TensorView>> views;
        views.reserve(tensors.size());
        for (const auto& [name, arr] : tensors) {
          TensorView v = to_view(arr, name, bits16);
          require_host(v, name);
          check_contiguous(v, name);
          views.emplace_back(name, v);
        }
        nb::gil_scoped_release release;
        io::write_safetensors(path, views, metadata);
      },
      nb::arg("path"), nb::arg("tensors"), nb::arg("metadata") = std::map<std::string, std::string>{},
      nb::arg("dtype") = "",
      "Writes (name, array) pairs in order; uint16 arrays with dtype=\"bfloat16\" are stored as BF16.");

  m.def(
      "read_safetensors",
      [](const std::string& path) {
        // Read-only numpy views into the mapping; the capsule keeps the file mapped.
        auto f = io::SafetensorsFile::open(path);
        auto* holder = new std::shared_ptr<io::SafetensorsFile>(f);
        nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<io::SafetensorsFile>*>(p); });
        nb::dict tensors;
        for (const auto& info : f->tensors()) tensors[info.name.c_str()] = numpy_view(f->view(info.name), owner);
        nb::dict meta;
        for (const auto& [k, v] : f->metadata()) meta[k.c_str()] = v;
        nb::dict dtypes;
        for (const auto& info : f->tensors()) dtypes[info.name.c_str()] = info.dtype_tag;
        return nb::make_tuple(tensors, meta, dtypes);
      },
      nb::arg("path"), "(tensors, metadata, dtype tags); BF16 tensors come back as uint16 bits.");
}

}  // namespace w4a16::py
