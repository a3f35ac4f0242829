// w4a16._core.Linear (a layer bound to a kernel chosen by the registry, for one device and
// activation dtype), the registry listing and explain. Runs never allocate: the caller passes
// `out` (the Python layer allocates it with x's framework) and the stream.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bind.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/linear.hpp"
#include "w4a16/registry/registry.hpp"

namespace w4a16::py {
namespace {

struct PyLinear {
  Linear lin;
  LinearOptions opt;
  // What the prepared weights may point into: a CPU kernel is free to run on the canonical tensors it was given
  // (cpu_reference does), so their owner lives as long as this object. Null for CUDA kernels, whose prepared weights
  // are their own device copies (tests/gpu/registry scrambles the source after prepare): a QuantizedLinear may then
  // drop its host copy (drop_host) and keep the binding.
  std::shared_ptr<const QuantizedLinear> owner;
  // adopt_linear: the binding runs on the caller's arrays; `held` keeps them alive where the caller asked (keep=True).
  bool adopted = false;
  std::vector<InArray> held;
};

Device parse_device(std::string_view s) {
  if (s == "cpu") return Device::cpu;
  if (s == "cuda") return Device::cuda;
  fail(ErrorCode::invalid_argument, "device", "\"cpu\" or \"cuda\"", "\"" + std::string(s) + "\"");
}

DType parse_act(std::string_view s, std::string_view arg) {
  std::optional<DType> d = parse_dtype(s);
  if (!d || !is_activation_dtype(*d))
    fail(ErrorCode::dtype_mismatch, arg, "float16 or bfloat16", "\"" + std::string(s) + "\"");
  return *d;
}

LinearOptions make_options(std::string_view act_dtype, std::string_view device, int device_index,
                           std::string_view backend, std::int64_t max_m, std::uintptr_t stream, bool own_workspace = true) {
  LinearOptions o;
  o.act_dtype = parse_act(act_dtype, "dtype");
  o.device = parse_device(device);
  check_cuda_built(o.device, "device");
  o.device_index = device_index;
  o.backend = std::string(backend);
  if (max_m < 1) fail(ErrorCode::invalid_argument, "max_m", ">= 1", std::to_string(max_m));
  o.max_m = max_m;
  o.stream = reinterpret_cast<void*>(stream);
  o.own_workspace = own_workspace;
  return o;
}

// x [M, K] of an activation dtype: checked here so the message names what the Python caller
// passed (the kernels check again, in their terms).
TensorView checked_x_view(const InArray& x_arr, std::int64_t k, std::string_view bits16) {
  TensorView x = to_view(x_arr, "x", bits16);
  auto want = [k] { return "float16 or bfloat16 [M, K=" + std::to_string(k) + "]"; };
  if (!is_activation_dtype(x.dtype)) fail(ErrorCode::dtype_mismatch, "x", want(), describe(x));
  if (x.rank != 2 || x.size(1) != k) fail(ErrorCode::shape_mismatch, "x", want(), describe(x));
  check_cuda_built(x.device, "x");
  return x;
}

// x imported and checked once (take_x), then handed to Linear.run as is.
nb::tuple take_x(const InArray& x_arr, std::int64_t k, std::string_view bits16) {
  return checked_x_tuple(x_arr, checked_x_view(x_arr, k, bits16));
}

void run_view(const PyLinear& self, const TensorView& x, const OutArray& out_arr, std::uintptr_t stream,
              std::string_view bits16, std::uintptr_t workspace = 0, std::size_t workspace_bytes = 0, bool given = false) {
  const TensorView out = to_view(out_arr, "out", bits16);
  const LinearOptions& o = self.opt;
  for (const auto& [t, arg] : {std::pair{&x, "x"}, std::pair{&out, "out"}}) {
    if (t->device != o.device || (o.device == Device::cuda && t->device_index != o.device_index)) {
      std::string where = std::string(device_name(o.device));
      if (o.device == Device::cuda) where += ":" + std::to_string(o.device_index);
      std::string got = std::string(device_name(t->device));
      if (t->device == Device::cuda) got += ":" + std::to_string(t->device_index);
      fail(ErrorCode::invalid_argument, arg, "an array on " + where + " (the device this Linear was prepared for)",
           got + " " + describe(*t));
    }
  }
  if (x.rank == 2 && x.size(0) > o.max_m)
    fail(ErrorCode::shape_mismatch, "x", "at most max_m = " + std::to_string(o.max_m) + " rows", describe(x));
  nb::gil_scoped_release release;  // kernels may run for a while and never touch Python
  if (given)
    self.lin.run(x, out, reinterpret_cast<void*>(workspace), workspace_bytes, reinterpret_cast<void*>(stream));
  else
    self.lin.forward(x, out, reinterpret_cast<void*>(stream));
}

void run_linear(const PyLinear& self, const InArray& x_arr, const OutArray& out_arr, std::uintptr_t stream,
                std::string_view bits16) {
  run_view(self, to_view(x_arr, "x", bits16), out_arr, stream, bits16);
}

void run_checked(const PyLinear& self, const CheckedX& x, const OutArray& out_arr, std::uintptr_t stream,
                 std::string_view bits16) {
  run_view(self, x.view, out_arr, stream, bits16);
}

void run_checked_ws(const PyLinear& self, const CheckedX& x, const OutArray& out_arr, std::uintptr_t workspace,
                    std::size_t workspace_bytes, std::uintptr_t stream, std::string_view bits16) {
  run_view(self, x.view, out_arr, stream, bits16, workspace, workspace_bytes, true);
}

// The decision as a dict; "runs": [(M, how the chosen kernel runs M tokens)] for the token counts asked
// (Kernel::describe_run: the hybrid's path and plan; "" where the kernel has one way).
nb::dict decision_dict(const Decision& d, const LinearConfig& c, const std::vector<std::int64_t>& ms) {
  nb::dict r;
  r["chosen"] = d.chosen ? nb::cast(std::string(d.chosen->name())) : nb::none();
  nb::list refused;
  for (const auto& f : d.refused) refused.append(nb::make_tuple(f.kernel, f.reason));
  r["refused"] = refused;
  r["text"] = d.text();
  nb::list runs;
  for (std::int64_t m : ms) {
    if (m < 1) fail(ErrorCode::invalid_argument, "ms", "token counts >= 1", std::to_string(m));
    runs.append(nb::make_tuple(m, d.chosen ? d.chosen->describe_run(c, m) : std::string()));
  }
  r["runs"] = runs;
  return r;
}

SelectOptions select_options(std::string_view backend, const std::vector<std::string>& disabled) {
  SelectOptions s;
  s.backend = std::string(backend);
  s.disabled = disabled;
  return s;
}

}  // namespace

nb::tuple checked_x_tuple(const InArray& arr, const TensorView& x) {
  return nb::make_tuple(nb::cast(CheckedX{arr, x}, nb::rv_policy::move), std::string(dtype_name(x.dtype)),
                        std::string(device_name(x.device)), x.device_index, x.size(0));
}

void bind_linear(nb::module_& m) {
  nb::class_<CheckedX>(m, "CheckedX", "An x that a take_x (Linear's or Moe's) imported and checked, for run.");
  nb::class_<PyLinear>(m, "Linear", "A layer bound to one kernel for one device and activation dtype.")
      .def_prop_ro("kernel", [](const PyLinear& l) { return std::string(l.lin.kernel().name()); })
      .def_prop_ro("layout", [](const PyLinear& l) { return std::string(l.lin.kernel().layout()); })
      .def_prop_ro("decision", [](const PyLinear& l) { return decision_dict(l.lin.decision(), l.lin.config(), {}); })
      .def_prop_ro("config", [](const PyLinear& l) { return l.lin.config().describe(); })
      .def_prop_ro("weight_bytes", [](const PyLinear& l) { return l.lin.weight_bytes(); })
      .def_prop_ro("workspace_bytes", [](const PyLinear& l) { return l.lin.workspace_bytes(); })
      .def_prop_ro("max_m", [](const PyLinear& l) { return l.opt.max_m; })
      .def_prop_ro("owns_workspace", [](const PyLinear& l) { return l.opt.own_workspace; },
                   "False for a binding made with own_workspace=False: every call passes a workspace (run_ws).")
      .def("workspace_for", [](const PyLinear& l, std::int64_t m) { return l.lin.workspace_bytes_for(m); }, nb::arg("m"),
           "Bytes of workspace a call of m rows needs (0 where none).")
      .def_prop_ro("adopted", [](const PyLinear& l) { return l.adopted; },
                   "Whether this binding runs on the caller's arrays (adopt_linear) rather than its own copy.")
      .def_prop_ro("holds_canonical", [](const PyLinear& l) { return l.owner != nullptr; },
                   "Whether this binding keeps the layer's host canonical tensors alive (CPU kernels may run on them).")
      .def_prop_ro("dtype", [](const PyLinear& l) { return std::string(dtype_name(l.opt.act_dtype)); })
      .def_prop_ro("device", [](const PyLinear& l) { return std::string(device_name(l.opt.device)); })
      .def_prop_ro("device_index", [](const PyLinear& l) { return l.opt.device_index; })
      .def("run", &run_checked, nb::arg("x"), nb::arg("out"), nb::arg("stream") = 0, nb::arg("dtype") = "",
           "out[M, N] = x[M, K] . W^T (+ bias) on the Linear's device, x as take_x returned it (checked, imported "
           "once); stream is a cudaStream_t as int.")
      .def("run_ws", &run_checked_ws, nb::arg("x"), nb::arg("out"), nb::arg("workspace"), nb::arg("workspace_bytes"),
           nb::arg("stream") = 0, nb::arg("dtype") = "",
           "As run, with the caller's workspace (a device pointer as int and its size, >= workspace_for(M)).")
      .def("run", &run_linear, nb::arg("x"), nb::arg("out"), nb::arg("stream") = 0, nb::arg("dtype") = "",
           "out[M, N] = x[M, K] . W^T (+ bias) on the Linear's device; stream is a cudaStream_t as int.");

  m.def(
      "make_linear",
      [](const Layer& layer, std::string_view act_dtype, std::string_view device, int device_index,
         std::string_view backend, std::int64_t max_m, std::uintptr_t stream, bool own_workspace) {
        auto* p = new PyLinear();
        std::unique_ptr<PyLinear> guard(p);
        p->opt = make_options(act_dtype, device, device_index, backend, max_m, stream, own_workspace);
        p->owner = layer.q;
        {
          nb::gil_scoped_release release;  // CUDA prepare uploads and repacks
          p->lin = Linear::create(layer.q->view(), p->opt);
        }
        if (p->lin.kernel().device() != Device::cpu) p->owner.reset();
        return guard.release();
      },
      nb::arg("layer"), nb::arg("dtype"), nb::arg("device") = "cpu", nb::arg("device_index") = 0,
      nb::arg("backend") = "", nb::arg("max_m") = 4096, nb::arg("stream") = 0, nb::arg("own_workspace") = true,
      nb::rv_policy::take_ownership);

  m.def(
      "layout_arrays",
      [](const Layer& layer, std::string_view kernel, std::string_view act_dtype) {
        const Kernel* k = find_kernel(kernel);
        if (!k) fail(ErrorCode::not_found, "kernel", "a registered kernel name (w4a16.kernels())", "\"" + std::string(kernel) + "\"");
        // The layout's bytes depend on the weights and the activation dtype only: no device is asked.
        const LinearConfig c = LinearConfig::from(layer.q->view(), parse_act(act_dtype, "dtype"), k->device(), 0);
        return nb::make_tuple(std::string(k->layout()), layout_numpy(k->layout_host(layer.q->view(), c)));
      },
      nb::arg("layer"), nb::arg("kernel"), nb::arg("dtype"),
      "(layout tag, {name: numpy array}) of kernel's prepared layout for the layer and activation dtype (bfloat16 as "
      "uint16 bits): what adopt_linear runs on once the caller holds them on the device.");

  m.def(
      "adopt_linear",
      [](std::string_view layout, const nb::dict& arrays, std::int64_t n, std::int64_t k, int group_size,
         std::string_view scalar, std::string_view act_dtype, std::string_view device, int device_index,
         std::string_view backend, std::int64_t max_m, std::uintptr_t stream, bool own_workspace, bool keep) {
        auto* p = new PyLinear();
        std::unique_ptr<PyLinear> guard(p);
        p->opt = make_options(act_dtype, device, device_index, backend, max_m, stream, own_workspace);
        LinearConfig c;
        c.n = c.n_full = n;
        c.k = c.k_full = k;
        c.scalar = parse_scalar(scalar);
        c.has_zeros = c.scalar == ScalarType::uint4;
        c.group_size = group_size;
        c.act_dtype = c.out_dtype = p->opt.act_dtype;
        const std::vector<LayoutView> views = layout_views(arrays, act_dtype, keep ? &p->held : nullptr);
        for (const LayoutView& v : views) {
          c.has_bias = c.has_bias || v.name == "bias";
          c.act_order = c.act_order || v.name == "perm";
        }
        {
          nb::gil_scoped_release release;
          p->lin = Linear::adopt(layout, views, c, p->opt);
        }
        p->adopted = true;
        return guard.release();
      },
      nb::arg("layout"), nb::arg("arrays"), nb::arg("n"), nb::arg("k"), nb::arg("group_size"), nb::arg("scalar_type"),
      nb::arg("dtype"), nb::arg("device") = "cuda", nb::arg("device_index") = 0, nb::arg("backend") = "",
      nb::arg("max_m") = 4096, nb::arg("stream") = 0, nb::arg("own_workspace") = true, nb::arg("keep") = true,
      nb::rv_policy::take_ownership,
      "A Linear over the caller's arrays of `layout` (layout_arrays' names; bias and perm where the layer has them), "
      "read in place. keep=True: the binding keeps them alive; keep=False: the caller does, and uses the binding only "
      "while they live (w4a16.torch: its cache entry goes with the weight tensor, and a binding whose arrays moved is "
      "never looked up). own_workspace=False: no workspace of its own (run_ws).");

  m.def("take_x", &take_x, nb::arg("x"), nb::arg("k"), nb::arg("dtype") = "",
        "Validates x [M, K] and returns (x checked, for Linear.run; dtype, device, device_index, M).");

  m.def("kernels", []() {
    nb::list out;
    for (const KernelEntry& e : all_kernels()) {
      nb::dict d;
      d["name"] = std::string(e.kernel->name());
      d["device"] = std::string(device_name(e.kernel->device()));
      d["min_capability"] = e.kernel->min_capability();
      d["layout"] = std::string(e.kernel->layout());
      d["override_only_reason"] = e.override_only_reason;
      out.append(d);
    }
    return out;
  });

  m.def(
      "explain_layer",
      [](const Layer& layer, std::string_view act_dtype, std::string_view device, int capability,
         std::string_view backend, const std::vector<std::string>& disabled, const std::vector<std::int64_t>& ms) {
        LinearConfig c = LinearConfig::from(layer.q->view(), parse_act(act_dtype, "dtype"), parse_device(device), capability);
        return decision_dict(choose(c, select_options(backend, disabled)), c, ms);
      },
      nb::arg("layer"), nb::arg("dtype"), nb::arg("device"), nb::arg("capability"), nb::arg("backend") = "",
      nb::arg("disabled") = std::vector<std::string>{}, nb::arg("ms") = std::vector<std::int64_t>{});

  m.def(
      "explain_config",
      [](std::int64_t n, std::int64_t k, int group_size, std::string_view scalar, std::string_view act_dtype,
         std::string_view device, int capability, bool bias, bool act_order, std::string_view backend,
         const std::vector<std::string>& disabled, const std::vector<std::int64_t>& ms) {
        LinearConfig c;
        c.n = c.n_full = n;
        c.k = c.k_full = k;
        std::optional<ScalarType> st = parse_scalar_type(scalar);
        if (!st) fail(ErrorCode::invalid_argument, "scalar_type", "\"uint4\" or \"uint4b8\"", "\"" + std::string(scalar) + "\"");
        c.scalar = *st;
        c.act_dtype = c.out_dtype = parse_act(act_dtype, "dtype");
        c.group_size = group_size;
        c.has_zeros = c.scalar == ScalarType::uint4;
        c.act_order = act_order;
        c.has_bias = bias;
        c.device = parse_device(device);
        c.capability = capability;
        return decision_dict(choose(c, select_options(backend, disabled)), c, ms);
      },
      nb::arg("n"), nb::arg("k"), nb::arg("group_size"), nb::arg("scalar_type"), nb::arg("dtype"), nb::arg("device"),
      nb::arg("capability"), nb::arg("bias"), nb::arg("act_order"), nb::arg("backend") = "",
      nb::arg("disabled") = std::vector<std::string>{}, nb::arg("ms") = std::vector<std::int64_t>{});

  m.attr("cuda_archs") = w4a16::cuda_archs();
  m.def("cpu_isa", &w4a16::cpu_isa,
        "The implementation cpu_fast runs on this CPU at many rows: 'amx' (AMX-BF16 tiles; few rows then run the VNNI "
        "weight stream), 'vnni' (AVX-512 VNNI, no AMX), 'avx2' or 'scalar' (`explain` says which per M; "
        "W4A16_CPU_ISA=vnni / avx2 / scalar caps it; read on every call).");
#ifdef W4A16_PY_HAVE_CUDA
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
}

}  // namespace w4a16::py
