// The registry: every kernel, the per-platform priority lists, and choose().
// Selection is a pure function of the config, the options and the environment; it never
// touches a GPU, so tests/registry checks every platform's decisions on the CPU.
#include "w4a16/registry/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "adapters.hpp"
#include "kernels/cpu/fast.hpp"  // cpu_isa: which implementation cpu_fast runs here
#include "w4a16/core/error.hpp"

namespace w4a16 {

using namespace registry_detail;

#if W4A16_HAVE_CUDA
// Whether this build runs on some sm_8x GPU (W4A16_CUDA_ARCHS holds 80).
static bool sm80_build() {
  for (int cap = 80; cap < 90; ++cap)
    if (cuda_build_runs_on(cap)) return true;
  return false;
}
#endif

const std::vector<KernelEntry>& all_kernels() {
  static const std::vector<KernelEntry> entries = [] {
    std::vector<KernelEntry> e;
    e.push_back({&cpu_reference_kernel(),
                 "it is the oracle: naive, f64 accumulation straight from the canonical layout, slow by design"});
    e.push_back({&cpu_fast_kernel(), ""});
#if W4A16_HAVE_CUDA
    e.push_back({&cuda_hybrid_kernel(), ""});
    e.push_back({&cuda_decode_kernel(),
                 "cuda_hybrid runs it for small M on the same weights (it claims the same configurations); forced, "
                 "every M takes the decode path (16-token chunks)"});
    e.push_back({&cuda_prefill_kernel(),
                 "cuda_hybrid runs it for large M on the same weights (it claims the same configurations); "
                 "forced, every M takes the prefill path"});
    e.push_back({&cuda_dense_cache_kernel(), "holds an fp16/bf16 copy of the weights; opt-in per layer"});
#endif
    return e;
  }();
  return entries;
}

std::string cuda_archs() {
#if W4A16_HAVE_CUDA
  return cuda_build_archs();
#else
  return {};
#endif
}

std::string cpu_isa() { return std::string(kernels::cpu::fast_isa_name(kernels::cpu::FastIsa::best)); }

const Kernel* find_kernel(std::string_view name) {
  for (const KernelEntry& e : all_kernels())
    if (e.kernel->name() == name) return e.kernel;
  return nullptr;
}

Platform platform_of(Device d, int capability) {
  if (d == Device::cpu) return Platform::cpu;
  return capability >= 90 ? Platform::sm90 : Platform::sm80;
}

std::string_view platform_name(Platform p) {
  switch (p) {
    case Platform::cpu: return "cpu";
    case Platform::sm80: return "sm80";
    case Platform::sm90: return "sm90";
  }
  return "?";
}

namespace {

// The priority lists, first = preferred. Every kernel here must be chosen by default for some
// configuration of its platform (tests/registry checks it on a grid); a kernel that never
// would be belongs off the list, marked override-only with its reason in all_kernels().
std::vector<std::string_view> priority_names(Platform p) {
  switch (p) {
    case Platform::cpu: return {"cpu_fast"};
#if W4A16_HAVE_CUDA
    // The hybrid alone: one weight copy, the faster path per M (on sm_80 code its prefill path is the mma.sync kernel).
    // Decode and prefill claim the same configurations as the hybrid, so behind it they would be dead entries; they
    // stay forcible by name (override-only, reasons in all_kernels()). Each list only where the build runs code there.
    case Platform::sm80:
      if (sm80_build()) return {"cuda_hybrid"};
      return {};
    case Platform::sm90:
      if (cuda_build_runs_on(90)) return {"cuda_hybrid"};  // sm_90a, or the sm_80 PTX
      return {};
#else
    case Platform::sm80: case Platform::sm90: return {};
#endif
  }
  return {};
}

const KernelEntry* find_entry(std::string_view name) {
  for (const KernelEntry& e : all_kernels())
    if (e.kernel->name() == name) return &e;
  return nullptr;
}

std::string registered_names() {
  std::string s;
  for (const KernelEntry& e : all_kernels()) {
    if (!s.empty()) s += ", ";
    s += e.kernel->name();
  }
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split_names(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    std::size_t c = s.find(',');
    std::string item = trim(s.substr(0, c));
    if (!item.empty()) out.push_back(std::move(item));
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
  }
  return out;
}

const Kernel* lookup_or_fail(const std::string& name, std::string_view source) {
  const Kernel* k = find_kernel(name);
  if (!k)
    fail(ErrorCode::not_found, source, "a registered kernel name (" + registered_names() + ")", "\"" + name + "\"");
  return k;
}

// Why `k` cannot run `c`, "" when it can: device and capability first, then its own claims.
std::string refusal(const Kernel& k, const LinearConfig& c) {
  if (k.device() != c.device)
    return "a " + std::string(device_name(k.device())) + " kernel; the config is on " + std::string(device_name(c.device));
  if (k.device() == Device::cuda && c.capability < k.min_capability())
    return "capability " + std::to_string(c.capability) + " below its minimum " + std::to_string(k.min_capability());
  return k.can_implement(c);
}

struct Disabled {
  std::string name, source;
};

}  // namespace

std::vector<const Kernel*> priority_list(Platform p) {
  std::vector<const Kernel*> out;
  for (std::string_view name : priority_names(p)) {
    const KernelEntry* e = find_entry(name);
    if (!e) continue;  // a CUDA kernel in a build without CUDA
    if (!e->override_only_reason.empty())
      fail(ErrorCode::internal, "registry: override-only kernel " + std::string(name) + " is in the " +
                                    std::string(platform_name(p)) + " priority list");
    out.push_back(e->kernel);
  }
  return out;
}

Decision choose(const LinearConfig& c, const SelectOptions& opt) {
  Decision d;
  d.config_text = c.describe();
  d.platform = platform_of(c.device, c.capability);
  const std::vector<const Kernel*> list = priority_list(d.platform);
  for (const Kernel* k : list) d.priority.emplace_back(k->name());

  // Disabled names: the option's and the environment's, each validated.
  std::vector<Disabled> disabled;
  for (const std::string& n : opt.disabled) {
    lookup_or_fail(n, "SelectOptions.disabled");
    disabled.push_back({n, "SelectOptions.disabled"});
  }
  std::string backend = opt.backend, backend_source = "SelectOptions.backend";
  if (opt.read_environment) {
    if (const char* env = std::getenv("W4A16_DISABLED_KERNELS"))
      for (std::string& n : split_names(env)) {
        lookup_or_fail(n, "W4A16_DISABLED_KERNELS");
        disabled.push_back({std::move(n), "W4A16_DISABLED_KERNELS"});
      }
    if (backend.empty())
      if (const char* env = std::getenv("W4A16_LINEAR_BACKEND")) {
        backend = trim(env);
        backend_source = "W4A16_LINEAR_BACKEND";
      }
  }
  auto disabled_by = [&](std::string_view name) -> const Disabled* {
    for (const Disabled& x : disabled)
      if (x.name == name) return &x;
    return nullptr;
  };

  // Kernels outside the list, for the explanation.
  for (const KernelEntry& e : all_kernels()) {
    if (std::find(list.begin(), list.end(), e.kernel) != list.end()) continue;
    std::string why = e.kernel->device() != c.device
                          ? "a " + std::string(device_name(e.kernel->device())) + " kernel"
                          : (e.override_only_reason.empty() ? "not in the " + std::string(platform_name(d.platform)) +
                                                                  " priority list"
                                                            : "override-only: " + e.override_only_reason);
    d.not_listed.push_back({std::string(e.kernel->name()), std::move(why)});
  }

  if (!backend.empty() && backend != "auto") {
    const Kernel* k = lookup_or_fail(backend, backend_source);
    if (const Disabled* x = disabled_by(backend))
      fail(ErrorCode::invalid_argument, backend_source, "a kernel that is not disabled",
           "\"" + backend + "\", which " + x->source + " disables");
    if (std::string why = refusal(*k, c); !why.empty())
      fail(ErrorCode::unsupported, backend_source,
           "a kernel that implements " + c.describe(), "\"" + backend + "\", which refuses it: " + why);
    d.chosen = k;
    d.forced_by = backend_source;
    return d;
  }

  for (const Kernel* k : list) {
    if (const Disabled* x = disabled_by(k->name())) {
      d.refused.push_back({std::string(k->name()), "disabled by " + x->source});
      continue;
    }
    std::string why = refusal(*k, c);
    if (why.empty()) {
      d.chosen = k;
      return d;
    }
    d.refused.push_back({std::string(k->name()), std::move(why)});
  }

  // Nothing fits: one error with every registered kernel and its reason.
  std::string msg = "no kernel implements " + c.describe() + " (platform " + std::string(platform_name(d.platform)) + "):";
  for (const Decision::Refusal& r : d.refused) msg += "\n  " + r.kernel + ": " + r.reason;
  for (const KernelEntry& e : all_kernels()) {
    if (std::find(list.begin(), list.end(), e.kernel) != list.end()) continue;
    std::string why = refusal(*e.kernel, c);
    msg += "\n  " + std::string(e.kernel->name()) + ": ";
    if (!why.empty())
      msg += why;
    else
      msg += "override-only (" + e.override_only_reason + "); it accepts this config: force it with backend=" +
             std::string(e.kernel->name());
  }
  fail(ErrorCode::unsupported, std::move(msg));
}

std::string Decision::text() const {
  std::string s = "config:   " + config_text + "\n";
  s += "platform: " + std::string(platform_name(platform)) + ", priority:";
  if (priority.empty()) s += " (no kernel registered)";
  for (std::size_t i = 0; i < priority.size(); ++i) s += (i ? " > " : " ") + priority[i];
  s += "\n";
  s += "chosen:   " + std::string(chosen ? chosen->name() : "(none)");
  if (!forced_by.empty()) s += " (forced by " + forced_by + ")";
  s += "\n";
  if (!refused.empty()) {
    s += "refused:\n";
    for (const Refusal& r : refused) s += "  " + r.kernel + ": " + r.reason + "\n";
  }
  if (!not_listed.empty()) {
    s += "not in the priority list:\n";
    for (const Refusal& r : not_listed) s += "  " + r.kernel + ": " + r.reason + "\n";
  }
  return s;
}

}  // namespace w4a16
