// w4a16 run-layer DIR --prefix P --input X --output Y: one checkpoint layer on a given input.
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "layer_run.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"

namespace w4a16::cli {
namespace {

std::string required(const ParsedArgs& a, const std::string& name, const std::string& what) {
  auto v = a.get(name);
  if (!v || v->empty()) usage_fail("--" + name, what, "nothing (the option is required)");
  return *v;
}

// The input activation: --input-name, or the file's only 2-D tensor; copied to aligned host memory.
HostTensor read_input(const std::string& path, const std::string& name_opt, std::int64_t k, std::string& name_out) {
  auto file = io::SafetensorsFile::open(path);
  std::string name = name_opt;
  if (name.empty()) {
    std::string all;
    int count = 0;
    for (const auto& t : file->tensors()) {
      all += (all.empty() ? "" : ", ") + t.name + " " + shape_str(t.shape);
      if (t.shape.size() == 2) {
        name = t.name;
        ++count;
      }
    }
    if (count != 1)
      fail(ErrorCode::invalid_argument, path, "exactly one 2-D tensor [M, K] (or choose one with --input-name)",
           std::to_string(count) + (all.empty() ? " tensors" : " 2-D tensors among: " + all));
  }
  name_out = name;
  HostTensor x;
  with_context(path + ": tensor '" + name + "'", [&] {
    TensorView v = file->view(name);  // not_found if --input-name names no tensor
    if (!is_activation_dtype(v.dtype)) fail(ErrorCode::dtype_mismatch, "x", "float16 or bfloat16 [M, " + std::to_string(k) + "]", describe(v));
    if (v.rank != 2 || v.shape[1] != k)
      fail(ErrorCode::shape_mismatch, "x", std::string(dtype_name(v.dtype)) + " [M, " + std::to_string(k) + "] (K = the layer's in features)",
           describe(v));
    x = HostTensor(v.dtype, v.shape_vec());
    std::memcpy(x.data(), v.data, x.nbytes());
  });
  return x;
}

int run_run_layer(const ParsedArgs& a) {
  const std::string prefix = required(a, "prefix", "a layer name such as model.layers.0.self_attn.q_proj (see w4a16 inspect)");
  const std::string in_path = required(a, "input", "a safetensors file holding x [M, K]");
  const std::string out_path = required(a, "output", "a safetensors file to write y [M, N] to");
  const Device device = parse_device(a.get_or("device", "cpu"), "--device");
  const std::string backend = a.get_or("backend", "");
  const int repeats = static_cast<int>(a.get_int("repeat", 0));
  if (repeats < 0) usage_fail("--repeat", "a count >= 0", std::to_string(repeats));
  check_backend_name(backend, "--backend");

  io::HfCheckpoint ck = io::HfCheckpoint::open(a.positionals[0]);
  const io::LayerInfo& info = ck.layer(prefix);  // not_found naming near prefixes
  QuantizedLinear w = ck.load_linear(prefix);
  std::string x_name;
  HostTensor x = read_input(in_path, a.get_or("input-name", ""), info.k, x_name);

  LayerRun r;
  with_context(prefix, [&] { r = run_linear(w, x, device, backend, repeats); });
  const std::string y_name = a.get_or("output-name", "y");
  io::write_safetensors(out_path, {{y_name, r.y.view()}}, {{"format", "pt"}, {"w4a16.kernel", r.kernel}, {"w4a16.layer", prefix}});
  std::printf("%s: %s x '%s' %s -> y '%s' %s with %s on %s in %.3f ms; wrote %s\n", prefix.c_str(), w.spec().describe().c_str(),
              x_name.c_str(), describe(x.view()).c_str(), y_name.c_str(), describe(r.y.view()).c_str(), r.kernel.c_str(),
              std::string(device_name(device)).c_str(), r.median_ms, out_path.c_str());

  if (a.has("check")) {
    HostTensor ref = run_reference(w, x);
    const double err = rel_error_16(r.y.ptr<std::uint16_t>(), ref.ptr<std::uint16_t>(), ref.numel(), x.dtype());
    const double tol = tolerance(x.dtype());
    std::printf("check: relative error %.3e vs %s (tolerance %.0e): %s\n", err, kReferenceKernel, tol, err <= tol ? "ok" : "FAILED");
    if (!(err <= tol)) {
      char got[64];
      std::snprintf(got, sizeof got, "%.3e", err);
      fail(ErrorCode::internal, "--check", "relative error <= " + std::to_string(tol) + " of " + r.kernel + " vs " + kReferenceKernel,
           got);
    }
  }
  return 0;
}

}  // namespace

Command run_layer_command() {
  return {{"run-layer",
           "run one quantized layer of a checkpoint on an input tensor and write the output",
           {"DIR"},
           {{"prefix", "NAME", "the layer, e.g. model.layers.0.mlp.down_proj (required; see w4a16 inspect)"},
            {"input", "X.safetensors", "file holding x [M, K] float16/bfloat16 (required)"},
            {"input-name", "NAME", "the tensor of --input to use", "its only 2-D tensor"},
            {"output", "Y.safetensors", "file to write y [M, N] to, same dtype as x (required)"},
            {"output-name", "NAME", "tensor name of y in --output", "y"},
            {"device", "D", "cpu or cuda", "cpu"},
            {"backend", "NAME", "force a registered kernel (w4a16 explain --list)", "chosen by the registry"},
            {"repeat", "R", "time R calls after a warm-up and print the median", "0: one call"},
            {"check", "", "also run the cpu_reference kernel and fail if the relative error is above the tolerance"}},
           "y = x . W^T + bias, with W the layer's dequantized weights. Tolerances (relative L2 error vs\n"
           "cpu_reference): float16 2e-3, bfloat16 1e-2."},
          run_run_layer};
}

}  // namespace w4a16::cli
