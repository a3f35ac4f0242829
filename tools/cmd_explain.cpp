// w4a16 explain: which kernel the registry picks for a layer configuration, and why each one
// above it refused (w4a16::choose()'s Decision::text()); --m adds how it runs given token counts
// (Kernel::describe_run: the hybrid's path and plan); --list shows every registered kernel.
#include <cstdio>

#include "cli.hpp"
#include "device.hpp"
#include "layer_run.hpp"
#include "w4a16/registry/registry.hpp"

namespace w4a16::cli {
namespace {

int list_kernels() {
  const std::string archs = cuda_archs();
  std::printf("CUDA code in this build: %s\n", archs.empty() ? "none (W4A16_ENABLE_CUDA off)" : archs.c_str());
  std::printf("CPU implementation of cpu_fast here: %s\n", cpu_isa().c_str());
  std::printf("registered kernels (any name works with --backend and W4A16_LINEAR_BACKEND):\n");
  for (const auto& e : all_kernels()) {
    const Kernel& k = *e.kernel;
    std::string cap = k.min_capability() ? " sm_" + std::to_string(k.min_capability()) + "+" : "";
    std::printf("  %-16s %-4s%-7s layout %-18s %s\n", std::string(k.name()).c_str(), std::string(device_name(k.device())).c_str(),
                cap.c_str(), std::string(k.layout()).c_str(),
                e.override_only_reason.empty() ? "" : ("override only: " + e.override_only_reason).c_str());
  }
  std::printf("priority lists (first = preferred):\n");
  for (Platform p : {Platform::sm90, Platform::sm80, Platform::cpu}) {
    std::string names;
    for (const Kernel* k : priority_list(p)) names += (names.empty() ? "" : " > ") + std::string(k->name());
    std::printf("  %-5s %s\n", std::string(platform_name(p)).c_str(), names.empty() ? "(none in this build)" : names.c_str());
  }
  return 0;
}

int run_explain(const ParsedArgs& a) {
  if (a.has("list")) return list_kernels();
  for (const char* required : {"n", "k"})
    if (!a.has(required)) usage_fail(std::string("--") + required, "a positive integer (or use --list)", "nothing (the option is required)");
  LinearConfig c;
  c.n = c.n_full = a.get_int("n", 0);
  c.k = c.k_full = a.get_int("k", 0);
  c.group_size = static_cast<int>(a.get_int("group-size", 128));
  const std::string scalar = a.get_choice("scalar", {"uint4", "uint4b8"}, "uint4b8");
  c.scalar = *parse_scalar_type(scalar);
  c.has_zeros = c.scalar == ScalarType::uint4;
  c.act_dtype = c.out_dtype = parse_act_dtype(a.get_or("dtype", "float16"), "--dtype");
  c.has_bias = a.has("bias");
  c.act_order = a.has("act-order");
  // A what-if query: --device cuda is allowed in any build (a CPU-only build then shows that
  // no CUDA kernel is registered). No --device: the best this machine has.
  const std::string dev = a.get_choice("device", {"cpu", "cuda"}, cuda_device_present() ? "cuda" : "cpu");
  c.device = dev == "cuda" ? Device::cuda : Device::cpu;
  if (c.device == Device::cpu) {
    if (a.has("capability")) usage_fail("--capability", "no value with --device cpu", a.get_or("capability", ""));
    c.capability = 0;
  } else {
    c.capability = static_cast<int>(a.get_int("capability", cuda_device_present() ? cuda_capability(0) : 90));
  }
  SelectOptions so;
  so.backend = a.get_or("backend", "");
  check_backend_name(so.backend, "--backend");
  const std::vector<std::int64_t> ms = a.get_int_list("m");
  for (std::int64_t m : ms)
    if (m < 1) usage_fail("--m", "token counts >= 1", std::to_string(m));
  Decision d = choose(c, so);
  std::printf("%s", d.text().c_str());
  if (!d.text().empty() && d.text().back() != '\n') std::printf("\n");
  if (!ms.empty()) {
    std::printf("how %s runs M tokens%s:\n", std::string(d.chosen->name()).c_str(),
                c.device == Device::cuda ? (cuda_device_present()      ? " (plans for this GPU)"
                                           : c.capability < 90 ? " (no GPU here: plans for an A100, 108 SMs)"
                                                               : " (no GPU here: plans for an H200, 132 SMs, no cluster split weighed)")
                                 : "");
    for (std::int64_t m : ms) {
      const std::string how = d.chosen->describe_run(c, m);
      std::printf("  M=%lld: %s\n", static_cast<long long>(m), how.empty() ? "one path at every M" : how.c_str());
    }
  }
  return 0;
}

}  // namespace

Command explain_command() {
  return {{"explain",
           "print which kernel the registry chooses for a layer configuration and why the others refused",
           {},
           {{"list", "", "list every registered kernel and the per-platform priority lists"},
            {"n", "N", "out features (required unless --list)"},
            {"k", "K", "in features (required unless --list)"},
            {"group-size", "G", "32, 64, 128, 256 or -1 (channelwise)", "128"},
            {"scalar", "S", "uint4 (with zero points, AWQ / GPTQ asym) or uint4b8 (symmetric GPTQ)", "uint4b8"},
            {"dtype", "T", "activation dtype: float16 or bfloat16", "float16"},
            {"bias", "", "the layer has a bias"},
            {"act-order", "", "the layer has an act-order permutation (GPTQ desc_act)"},
            {"device", "D", "cpu or cuda", "cuda if a GPU is present, else cpu"},
            {"capability", "CC", "CUDA compute capability, e.g. 80 or 90", "the GPU's, else 90"},
            {"backend", "NAME", "force a kernel by name, as W4A16_LINEAR_BACKEND does"},
            {"m", "M,M,...", "also print how the chosen kernel runs these token counts (path and plan)"}},
           "Selection also honours W4A16_DISABLED_KERNELS=a,b and W4A16_LINEAR_BACKEND=name.\n"
           "When no kernel fits, the error lists every kernel and its reason (exit code 1)."},
          run_explain};
}

}  // namespace w4a16::cli
