// The one place that knows every kernel: per-platform priority lists, selection, override.
//   W4A16_DISABLED_KERNELS=a,b   skip these names (each validated against the registry)
//   W4A16_LINEAR_BACKEND=name    force one (any registered name; validated; "" or "auto" = choose)
// Selection is a pure function of (LinearConfig, options, environment): no GPU is touched, so
// every platform's decision can be tested on the CPU from LinearConfig::capability alone.
// docs/REGISTRY.md lists the kernels, the priority lists and the override-only reasons.
#pragma once
#include <string>
#include <vector>

#include "w4a16/registry/kernel.hpp"

namespace w4a16 {

enum class Platform { cpu, sm80, sm90 };
// cpu for Device::cpu; on CUDA sm90 for capability >= 90, else sm80 (kernels below their
// min_capability are then refused with that reason).
Platform platform_of(Device d, int capability);
std::string_view platform_name(Platform p);  // "cpu", "sm80", "sm90"

struct KernelEntry {
  const Kernel* kernel;
  // Kernels never chosen by default on any configuration say why here (e.g. the slow
  // CPU reference exists to be the oracle). Empty for kernels that selection may pick.
  std::string override_only_reason;
};

// All registered kernels (stable order).
const std::vector<KernelEntry>& all_kernels();
const Kernel* find_kernel(std::string_view name);  // nullptr if unknown
// The priority list of a platform, first = preferred.
std::vector<const Kernel*> priority_list(Platform p);
// The CUDA code this build holds: its W4A16_CUDA_ARCHS, comma-separated, "+ptx" where the compute_80 PTX rides along
// ("90a", "90a,80", "80+ptx"); "" in a build without the CUDA kernels. 90a runs on exactly 9.0 (H100 / H200), 80 on 8.0
// (A100), the PTX on any newer GPU (docs/REGISTRY.md).
std::string cuda_archs();
// The widest implementation cpu_fast runs on this CPU: "amx" (AMX-BF16 tiles from 2 rows, the AVX2 kernel below), "avx2"
// or "scalar"; W4A16_CPU_ISA=avx2 / scalar caps it (read on every call).
std::string cpu_isa();

struct SelectOptions {
  std::string backend;                  // forced kernel name, "" = choose (falls back to W4A16_LINEAR_BACKEND)
  std::vector<std::string> disabled;    // in addition to W4A16_DISABLED_KERNELS
  bool read_environment = true;
};

struct Decision {
  const Kernel* chosen = nullptr;
  struct Refusal {
    std::string kernel;
    std::string reason;
  };
  std::vector<Refusal> refused;  // every kernel above the chosen one, in order, with its reason
  std::string config_text;       // LinearConfig::describe() of the config decided on
  Platform platform = Platform::cpu;
  std::vector<std::string> priority;  // the platform's list, by name, first = preferred
  std::string forced_by;         // "" (chosen by priority), "SelectOptions.backend" or "W4A16_LINEAR_BACKEND"
  std::vector<Refusal> not_listed;  // kernels outside the priority list and why (override-only, device)
  std::string text() const;      // printable explanation
};

// Walks the priority list; throws unsupported listing every kernel and its reason when none fits,
// not_found when a forced backend name (or a disabled name) is not registered, unsupported with
// the kernel's reason when a forced kernel refuses the config, invalid_argument when the forced
// kernel is also disabled.
Decision choose(const LinearConfig& c, const SelectOptions& opt = {});

}  // namespace w4a16
