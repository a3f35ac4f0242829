// w4a16._core.Layer and the functions that make one: the checkpoint-format converters, the
// canonical constructor, pack/unpack of uint8 values and the RTN quantizer. Every conversion
// is the library's (src/formats); this file only turns arrays into views and back.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <cstring>

#include "bind.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"

namespace w4a16::py {

ScalarType parse_scalar(std::string_view s) {
  std::optional<ScalarType> t = parse_scalar_type(s);
  if (!t) fail(ErrorCode::invalid_argument, "scalar_type", "\"uint4\" or \"uint4b8\"", "\"" + std::string(s) + "\"");
  return *t;
}

TensorView host_view(const InArray& a, std::string_view arg, std::string_view bits16) {
  TensorView v = to_view(a, arg, bits16);
  require_host(v, arg);
  return v;
}
TensorView host_view(const std::optional<InArray>& a, std::string_view arg, std::string_view bits16) {
  if (!a) return {};
  return host_view(*a, arg, bits16);
}

namespace {

formats::GptqVersion parse_gptq_version(std::string_view s) {
  if (s == "gptq" || s == "v1") return formats::GptqVersion::v1;
  if (s == "gptq_v2" || s == "v2") return formats::GptqVersion::v2;
  fail(ErrorCode::invalid_argument, "checkpoint_format", "\"gptq\" (v1, stored zero = z - 1) or \"gptq_v2\"",
       "\"" + std::string(s) + "\"");
}

nb::object opt_numpy(HostTensor&& t) {
  if (t.empty()) return nb::none();
  return nb::cast(to_numpy(std::move(t)));
}

nb::dict unpack_dict(const Layer& self) {
  formats::Unpacked u = formats::unpack(self.q->view());
  const QuantSpec& s = u.spec;
  nb::dict d;
  d["q"] = to_numpy(std::move(u.q), {s.n, s.k});
  d["z"] = u.z.empty() ? nb::none() : nb::cast(to_numpy(std::move(u.z), {s.n, s.groups()}));
  d["scale_dtype"] = std::string(dtype_name(u.scales.dtype()));
  d["scales"] = to_numpy(std::move(u.scales));
  d["bias"] = opt_numpy(std::move(u.bias));
  d["perm"] = u.perm.empty() ? nb::none() : nb::cast(to_numpy(std::move(u.perm), {s.k}));
  d["group_size"] = s.group_size;
  d["scalar_type"] = std::string(scalar_type_name(s.scalar));
  return d;
}

// Unpacked values (one uint8 per 4-bit value) -> Layer through formats::pack, which checks the
// values; the shapes are checked here because Unpacked holds flat vectors.
Layer pack_values(const InArray& q_arr, const InArray& scales_arr, const std::optional<InArray>& z_arr,
                  const std::optional<InArray>& bias_arr, const std::optional<InArray>& perm_arr, int group_size,
                  std::optional<std::string> scalar, std::string_view bits16) {
  TensorView q = host_view(q_arr, "q");
  check_dtype(q, "q", DType::u8);
  if (q.rank != 2) fail(ErrorCode::shape_mismatch, "q", "uint8 [N, K] (one 4-bit value per byte)", describe(q));
  formats::Unpacked u;
  u.spec.n = q.size(0);
  u.spec.k = q.size(1);
  u.spec.group_size = group_size;
  u.spec.scalar = scalar ? parse_scalar(*scalar) : (z_arr ? ScalarType::uint4 : ScalarType::uint4b8);
  u.spec.validate("q");
  HostTensor qh = copy_to_host(q);
  u.q.assign(qh.ptr<std::uint8_t>(), qh.ptr<std::uint8_t>() + qh.numel());
  if (z_arr) {
    TensorView z = host_view(*z_arr, "z");
    check_dtype(z, "z", DType::u8);
    check_shape(z, "z", {u.spec.n, u.spec.groups()}, "uint8 [N, G] (one zero point per byte)");
    HostTensor zh = copy_to_host(z);
    u.z.assign(zh.ptr<std::uint8_t>(), zh.ptr<std::uint8_t>() + zh.numel());
  }
  u.scales = copy_to_host(host_view(scales_arr, "scales", bits16));
  if (bias_arr) u.bias = copy_to_host(host_view(*bias_arr, "bias", bits16));
  if (perm_arr) {
    TensorView p = host_view(*perm_arr, "perm");
    check_dtype(p, "perm", DType::i32);
    check_shape(p, "perm", {u.spec.k}, "int32 [K]");
    HostTensor ph = copy_to_host(p);
    u.perm.assign(ph.ptr<std::int32_t>(), ph.ptr<std::int32_t>() + ph.numel());
  }
  return make_layer(formats::pack(u));
}

nb::dict awq_dict(const Layer& self) {
  formats::AwqHost a = formats::canonical_to_awq(self.q->view());
  nb::dict d;
  d["qweight"] = to_numpy(std::move(a.qweight));
  d["qzeros"] = to_numpy(std::move(a.qzeros));
  d["scales"] = to_numpy(std::move(a.scales));
  d["bias"] = opt_numpy(std::move(a.bias));
  return d;
}

nb::dict gptq_dict(const Layer& self, std::optional<std::string> version) {
  std::optional<formats::GptqVersion> v;
  if (version) v = parse_gptq_version(*version);
  formats::GptqHost g = formats::canonical_to_gptq(self.q->view(), v);
  nb::dict d;
  d["qweight"] = to_numpy(std::move(g.qweight));
  d["qzeros"] = opt_numpy(std::move(g.qzeros));
  d["scales"] = to_numpy(std::move(g.scales));
  d["g_idx"] = opt_numpy(std::move(g.g_idx));
  d["bias"] = opt_numpy(std::move(g.bias));
  d["checkpoint_format"] = g.version == formats::GptqVersion::v1 ? "gptq" : "gptq_v2";
  return d;
}

}  // namespace

void bind_layer(nb::module_& m) {
  nb::class_<Layer>(m, "Layer", "An owned canonical quantized layer (shared/FORMATS.md), host memory.")
      .def_prop_ro("n", [](const Layer& l) { return l.q->spec().n; })
      .def_prop_ro("k", [](const Layer& l) { return l.q->spec().k; })
      .def_prop_ro("group_size", [](const Layer& l) { return l.q->spec().group_size; })
      .def_prop_ro("groups", [](const Layer& l) { return l.q->spec().groups(); })
      .def_prop_ro("scalar_type", [](const Layer& l) { return std::string(scalar_type_name(l.q->spec().scalar)); })
      .def_prop_ro("scale_dtype", [](const Layer& l) { return std::string(dtype_name(l.q->scale_dtype())); })
      .def_prop_ro("has_bias", [](const Layer& l) { return l.q->has_bias(); })
      .def_prop_ro("act_order", [](const Layer& l) { return l.q->act_order(); })
      .def_prop_ro("nbytes", [](const Layer& l) { return l.q->nbytes(); })
      .def("describe", [](const Layer& l) { return l.q->spec().describe(); })
      .def(
          "tensors",
          [](nb::handle self) {
            // Read-only views of the owned canonical tensors, keeping the Layer alive.
            const Layer& l = nb::cast<const Layer&>(self);
            CanonicalTensors t = l.q->tensors();
            nb::dict d;
            auto put = [&](const char* name, const TensorView& v) {
              d[name] = v.defined() && v.rank > 0 ? nb::cast(numpy_view(v, self)) : nb::none();
            };
            put("qweight", t.qweight);
            put("scales", t.scales);
            put("zeros", t.zeros);
            put("bias", t.bias);
            put("perm", t.perm);
            return d;
          },
          "Canonical tensors as read-only numpy views (bf16 as uint16 bits); absent ones are None.")
      .def("unpack", &unpack_dict, "One uint8 per 4-bit value: q [N, K], z [N, G] (uint4), scales, bias, perm.")
      .def("dequantize", [](const Layer& l) { return to_numpy(formats::dequantize(l.q->view())); },
           "float32 [N, K] in the original input-channel order.")
      .def("to_awq", &awq_dict, "AutoAWQ GEMM tensors (uint4 without act-order only).")
      .def("to_gptq", &gptq_dict, nb::arg("checkpoint_format") = nb::none(),
           "GPTQ tensors; checkpoint_format None lets the writer choose (gptq for sym, gptq_v2 for asym).");

  m.def(
      "from_awq",
      [](const InArray& qweight, const InArray& qzeros, const InArray& scales, int group_size,
         const std::optional<InArray>& bias, std::string_view bits16) {
        formats::AwqTensors t;
        t.qweight = host_view(qweight, "qweight");
        t.qzeros = host_view(qzeros, "qzeros");
        t.scales = host_view(scales, "scales", bits16);
        t.bias = host_view(bias, "bias", bits16);
        return make_layer(formats::awq_to_canonical(t, group_size));
      },
      nb::arg("qweight"), nb::arg("qzeros"), nb::arg("scales"), nb::arg("group_size"), nb::arg("bias") = nb::none(),
      nb::arg("dtype") = "");

  m.def(
      "from_gptq",
      [](const InArray& qweight, const std::optional<InArray>& qzeros, const InArray& scales,
         const std::optional<InArray>& g_idx, const std::optional<InArray>& bias, int group_size, bool sym,
         bool desc_act, std::string_view checkpoint_format, std::string_view bits16) {
        formats::GptqTensors t;
        t.qweight = host_view(qweight, "qweight");
        t.qzeros = host_view(qzeros, "qzeros");
        t.scales = host_view(scales, "scales", bits16);
        t.g_idx = host_view(g_idx, "g_idx");
        t.bias = host_view(bias, "bias", bits16);
        formats::GptqOptions o;
        o.group_size = group_size;
        o.sym = sym;
        o.desc_act = desc_act;
        o.version = parse_gptq_version(checkpoint_format);
        return make_layer(formats::gptq_to_canonical(t, o));
      },
      nb::arg("qweight"), nb::arg("qzeros").none(), nb::arg("scales"), nb::arg("g_idx").none(),
      nb::arg("bias").none(), nb::arg("group_size"), nb::arg("sym"), nb::arg("desc_act"),
      nb::arg("checkpoint_format") = "gptq", nb::arg("dtype") = "");

  m.def(
      "from_canonical",
      [](const InArray& qweight, const InArray& scales, const std::optional<InArray>& zeros,
         const std::optional<InArray>& bias, const std::optional<InArray>& perm, int group_size,
         std::optional<std::string> scalar, std::string_view bits16) {
        CanonicalTensors t;
        t.qweight = host_view(qweight, "qweight");
        t.scales = host_view(scales, "scales", bits16);
        t.zeros = host_view(zeros, "zeros");
        t.bias = host_view(bias, "bias", bits16);
        t.perm = host_view(perm, "perm");
        if (t.qweight.rank != 2)
          fail(ErrorCode::shape_mismatch, "qweight", "int32 [N, K/8] (canonical, packed along K)", describe(t.qweight));
        QuantSpec s;
        s.n = t.qweight.size(0);
        s.k = t.qweight.size(1) * 8;
        s.group_size = group_size;
        s.scalar = scalar ? parse_scalar(*scalar) : (zeros ? ScalarType::uint4 : ScalarType::uint4b8);
        return make_layer(QuantizedLinear::from_tensors(t, s));
      },
      nb::arg("qweight"), nb::arg("scales"), nb::arg("zeros").none(), nb::arg("bias").none(), nb::arg("perm").none(),
      nb::arg("group_size"), nb::arg("scalar_type").none(), nb::arg("dtype") = "");

  m.def("pack", &pack_values, nb::arg("q"), nb::arg("scales"), nb::arg("z").none(), nb::arg("bias").none(),
        nb::arg("perm").none(), nb::arg("group_size"), nb::arg("scalar_type").none(), nb::arg("dtype") = "");

  m.def(
      "quantize",
      [](const InArray& weight, int group_size, std::string_view scalar, std::optional<std::string> scale_dtype,
         const std::optional<InArray>& bias, std::string_view bits16) {
        TensorView w = host_view(weight, "weight", bits16);
        formats::QuantizeOptions o;
        o.group_size = group_size;
        o.scalar = parse_scalar(scalar);
        if (scale_dtype) {
          std::optional<DType> d = parse_dtype(*scale_dtype);
          if (!d || !is_activation_dtype(*d))
            fail(ErrorCode::invalid_argument, "scale_dtype", "\"float16\" or \"bfloat16\"", "\"" + *scale_dtype + "\"");
          o.scale_dtype = *d;
        } else {
          o.scale_dtype = w.dtype == DType::bf16 ? DType::bf16 : DType::f16;
        }
        return make_layer(formats::quantize_rtn(w, o, host_view(bias, "bias", bits16)));
      },
      nb::arg("weight"), nb::arg("group_size"), nb::arg("scalar_type"), nb::arg("scale_dtype").none(),
      nb::arg("bias").none(), nb::arg("dtype") = "");
}

}  // namespace w4a16::py
