// w4a16 demo: the whole path in one command, for a newcomer, with no GPU needed:
// synthetic 16-bit checkpoint -> AWQ g=128 -> inspect -> load a layer -> run it on the best
// device -> compare with the cpu_reference kernel. Exit code 1 if the error is too large.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "cli.hpp"
#include "device.hpp"
#include "layer_run.hpp"
#include "model_ops.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"

namespace fs = std::filesystem;

namespace w4a16::cli {
namespace {

// The layer the demo runs: the MLP down projection has K = intermediate = 1408 = 11 * 128,
// an odd number of groups, which catches kernels that assume powers of two.
constexpr const char* kDemoLayer = "model.layers.0.mlp.down_proj";

// ||dequantize(w) - original|| / ||original|| over the whole weight matrix.
double weight_error(const QuantizedLinear& w, const TensorView& original) {
  HostTensor deq = formats::dequantize(w.view());  // f32 [N, K], original channel order
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < deq.numel(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(original.data) + 2 * i, 2);  // mapped data need not be aligned
    const double o = f16x_to_float(original.dtype, bits), d = deq.ptr<float>()[i];
    num += (d - o) * (d - o);
    den += o * o;
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

std::string make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "w4a16-demo-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) fail(ErrorCode::io_error, tmpl, "a new temporary directory", "mkdtemp failed");
  return tmpl;
}

int run_demo(const ParsedArgs& a) {
  const std::string dev_text = a.get_choice("device", {"auto", "cpu", "cuda"}, "auto");
  Device device = Device::cpu;
  if (dev_text == "cuda") device = parse_device("cuda", "--device");
  if (dev_text == "cuda" && !cuda_device_present())
    fail(ErrorCode::unsupported, "--device", "a CUDA device (cudaGetDeviceCount > 0)", "none present (try --device cpu)");
  if (dev_text == "auto" && cuda_device_present()) device = Device::cuda;
  const DType dtype = parse_act_dtype(a.get_or("dtype", "float16"), "--dtype");
  const std::string backend = a.get_or("backend", "");
  const int repeats = static_cast<int>(a.get_int("repeat", 20));
  if (repeats < 1) usage_fail("--repeat", "a count >= 1", std::to_string(repeats));
  check_backend_name(backend, "--backend");
  const bool keep = a.has("keep") || a.has("dir");
  const std::string root = a.has("dir") ? a.get_or("dir", "") : make_temp_dir();
  // Remove the temporary folder on every exit path, errors included.
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{root, keep};
  const std::string src = (fs::path(root) / "qwen2-fp16").string(), dst = (fs::path(root) / "qwen2-awq-g128").string();

  SynthOptions so;
  so.layers = 2;
  so.hidden = 512;
  so.intermediate = 1408;
  so.vocab = 1024;
  so.seed = static_cast<std::uint64_t>(a.get_int("seed", 1));
  SynthReport sr = synth_checkpoint(src, so);
  std::printf("[1/5] synth     %s: Qwen2-shaped, %d layers, hidden %lld, intermediate %lld, %zu tensors, %s\n", src.c_str(),
              so.layers, static_cast<long long>(so.hidden), static_cast<long long>(so.intermediate), sr.tensors,
              human_bytes(sr.bytes).c_str());

  QuantizeCkptOptions qo;
  qo.format = OutFormat::awq;
  qo.group_size = 128;
  qo.quiet = true;
  QuantizeReport qr = quantize_checkpoint(src, dst, qo);
  std::printf("[2/5] quantize  %s: AWQ uint4 g=128 round-to-nearest, %zu linears quantized, %zu kept in 16-bit, %s -> %s\n",
              dst.c_str(), qr.quantized.size(), qr.kept.size(), human_bytes(qr.bytes_in).c_str(), human_bytes(qr.bytes_out).c_str());

  io::HfCheckpoint ck = io::HfCheckpoint::open(dst);
  const io::LayerInfo& info = ck.layer(kDemoLayer);
  std::printf("[3/5] inspect   %s: %zu quantized layers, %zu linear%s left in 16-bit; %s: %s %lld x %lld, g=%d, %s, %zu bytes\n",
              std::string(io::quant_method_name(ck.quant_config().method)).c_str(), ck.quantized_layers().size(),
              ck.unquantized_linears().size(), ck.unquantized_linears().size() == 1 ? "" : "s", kDemoLayer, std::string(io::quant_method_name(info.format)).c_str(),
              static_cast<long long>(info.n), static_cast<long long>(info.k), info.group_size,
              std::string(scalar_type_name(info.scalar)).c_str(), info.bytes);

  QuantizedLinear w = ck.load_linear(kDemoLayer);
  // What 4 bits cost: the dequantized weights against the 16-bit originals (formats::dequantize).
  const double werr = weight_error(w, io::TensorStore::open_dir(src).view(std::string(kDemoLayer) + ".weight"));
  std::printf("[4/5] load      %s -> canonical layout (%s, %zu bytes); 4-bit weights vs the 16-bit ones: relative error %.3f\n",
              kDemoLayer, w.spec().describe().c_str(), w.nbytes(), werr);

  std::mt19937_64 rng(so.seed + 1);
  std::normal_distribution<float> normal(0.f, 1.f);
  const double tol = tolerance(dtype);
  bool ok = true;
  std::printf("[5/5] run       on %s, %s activations, checked against %s (tolerance %.0e):\n", std::string(device_name(device)).c_str(),
              std::string(dtype_name(dtype)).c_str(), kReferenceKernel, tol);
  for (std::int64_t m : {1, 16}) {  // a decode step and a short prefill
    HostTensor x(dtype, {m, info.k});
    for (std::int64_t i = 0; i < x.numel(); ++i) x.ptr<std::uint16_t>()[i] = float_to_f16x(dtype, normal(rng));
    LayerRun r = run_linear(w, x, device, backend, repeats);
    HostTensor ref = run_reference(w, x);
    const double err = rel_error_16(r.y.ptr<std::uint16_t>(), ref.ptr<std::uint16_t>(), ref.numel(), dtype);
    ok = ok && err <= tol;
    std::printf("      M = %-3lld kernel %-14s %9.3f ms per call (median of %d)   relative error %.2e  %s\n",
                static_cast<long long>(m), r.kernel.c_str(), r.median_ms, repeats, err, err <= tol ? "ok" : "FAILED");
    if (keep) io::write_safetensors((fs::path(root) / ("x_m" + std::to_string(m) + ".safetensors")).string(), {{"x", x.view()}});
  }
  if (keep)
    std::printf("kept in %s; try:\n  w4a16 inspect %s\n  w4a16 run-layer %s --prefix %s --input %s --output %s --check\n",
                root.c_str(), dst.c_str(), dst.c_str(), kDemoLayer, (fs::path(root) / "x_m16.safetensors").string().c_str(),
                (fs::path(root) / "y.safetensors").string().c_str());
  if (!ok) fail(ErrorCode::internal, "demo", "relative error <= " + std::to_string(tol) + " against " + kReferenceKernel, "a larger error (see above)");
  std::printf("demo passed. Next: w4a16 inspect / run-layer / explain --list / bench (see docs/CLI.md)\n");
  return 0;
}

}  // namespace

Command demo_command() {
  return {{"demo",
           "synthesize, quantize (AWQ g=128), inspect, load and run a layer, check it against the reference",
           {},
           {{"device", "D", "auto, cpu or cuda", "auto: cuda if a GPU is present"},
            {"dtype", "T", "activation dtype: float16 or bfloat16", "float16"},
            {"backend", "NAME", "force a kernel instead of the registry's choice"},
            {"seed", "S", "random seed of the synthetic weights and inputs", "1"},
            {"repeat", "R", "timed calls per M (after a warm-up); the median is printed", "20"},
            {"dir", "DIR", "work in DIR (kept) instead of a temporary folder"},
            {"keep", "", "keep the temporary folder (checkpoints and inputs) and print how to use it"}},
           "Exits with 1 if the kernel's output differs from cpu_reference by more than the tolerance\n"
           "(relative L2 error: float16 2e-3, bfloat16 1e-2). Needs no GPU."},
          run_demo};
}

}  // namespace w4a16::cli
