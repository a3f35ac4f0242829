// Selection: the backend override accepts every registered name (API and environment),
// unknown and disabled names are validated, a refusing forced kernel is an error with its
// reason, nothing-fits lists every kernel, and Decision::text explains the decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "grid.hpp"
#include "hybrid_thresholds.hpp"  // src/registry: the hybrid's switch point, to know which path an M takes
#if W4A16_HAVE_CUDA
#include "common.cuh"            // src/kernels/cuda: code_arch, which code of this build runs on a capability
#include "decode/decode.hpp"     // device_dram_tb_per_s: the memory class the hybrid's switch reads
#endif
#include "kernels/cpu/fast.hpp"  // cpu_fast says which implementation runs an M
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {
namespace {

const Platform kPlatforms[] = {Platform::cpu, Platform::sm80, Platform::sm90};

#if W4A16_HAVE_CUDA
// The peak bandwidth of the device this process runs on (0 without one): the hybrid's switch reads it, so the tests
// that predict which path an M takes read it too.
double live_dram() { return kernels::cuda::device_dram_tb_per_s(); }
#endif

// A grid config (valid, on the kernel's own device) that `k` accepts, if there is one.
std::optional<LinearConfig> accepted_config(const Kernel& k) {
  for (Platform p : kPlatforms)
    for (const LinearConfig& c : test::config_grid(p, {.small_shapes_only = false, .with_invalid = false}))
      if (k.device() == c.device && test::forced_refusal(c, k.name()).empty()) return c;
  return std::nullopt;
}

LinearConfig cpu_config(DType act = DType::f16) {
  LinearConfig c;
  c.n = c.n_full = 64;
  c.k = c.k_full = 256;
  c.act_dtype = c.out_dtype = act;
  return c;
}

SelectOptions no_env() {
  SelectOptions o;
  o.read_environment = false;
  return o;
}

template <class F>
Error expect_error(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(error_code_name(e.code()), error_code_name(code)) << e.what();
    return e;
  }
  ADD_FAILURE() << "no w4a16::Error thrown (expected " << error_code_name(code) << ")";
  return Error(ErrorCode::internal, "");
}

TEST(Registry, NamesAreUniqueAndFindable) {
  std::set<std::string_view> names;
  ASSERT_GE(all_kernels().size(), 2u);
  for (const KernelEntry& e : all_kernels()) {
    ASSERT_NE(e.kernel, nullptr);
    EXPECT_TRUE(names.insert(e.kernel->name()).second) << "duplicate kernel name " << e.kernel->name();
    EXPECT_EQ(find_kernel(e.kernel->name()), e.kernel);
  }
  EXPECT_EQ(find_kernel("no_such_kernel"), nullptr);
#if W4A16_HAVE_CUDA
  for (const char* n : {"cuda_decode", "cuda_prefill", "cuda_hybrid", "cuda_dense_cache"}) EXPECT_NE(find_kernel(n), nullptr) << n;
#endif
  for (const char* n : {"cpu_reference", "cpu_fast"}) EXPECT_NE(find_kernel(n), nullptr) << n;
}

// (a) every registered name is accepted by the backend override, through the API ...
TEST(Override, EveryRegisteredNameIsAcceptedByTheApi) {
  for (const KernelEntry& e : all_kernels()) {
    SCOPED_TRACE(std::string(e.kernel->name()));
    std::optional<LinearConfig> c = accepted_config(*e.kernel);
    ASSERT_TRUE(c.has_value()) << "no grid configuration is accepted when forcing " << e.kernel->name();
    SelectOptions o = no_env();
    o.backend = std::string(e.kernel->name());
    Decision d = choose(*c, o);
    ASSERT_EQ(d.chosen, e.kernel);
    EXPECT_EQ(d.forced_by, "SelectOptions.backend");
    EXPECT_NE(d.text().find("forced by SelectOptions.backend"), std::string::npos) << d.text();
  }
}

// ... and through W4A16_LINEAR_BACKEND.
TEST(Override, EveryRegisteredNameIsAcceptedByTheEnvironment) {
  for (const KernelEntry& e : all_kernels()) {
    SCOPED_TRACE(std::string(e.kernel->name()));
    std::optional<LinearConfig> c = accepted_config(*e.kernel);
    ASSERT_TRUE(c.has_value());
    test::ScopedEnv env("W4A16_LINEAR_BACKEND", std::string(e.kernel->name()));
    test::ScopedEnv dis("W4A16_DISABLED_KERNELS", std::nullopt);
    Decision d = choose(*c);
    ASSERT_EQ(d.chosen, e.kernel);
    EXPECT_EQ(d.forced_by, "W4A16_LINEAR_BACKEND");
    // read_environment = false ignores it: the default choice comes back.
    Decision plain = choose(*c, no_env());
    EXPECT_TRUE(plain.forced_by.empty());
  }
}

TEST(Override, ApiOptionWinsOverTheEnvironmentAndAutoMeansChoose) {
  LinearConfig c = cpu_config();
  test::ScopedEnv env("W4A16_LINEAR_BACKEND", std::string("cpu_fast"));
  test::ScopedEnv dis("W4A16_DISABLED_KERNELS", std::nullopt);
  SelectOptions o;
  o.backend = "cpu_reference";
  EXPECT_EQ(choose(c, o).chosen->name(), "cpu_reference");
  EXPECT_EQ(choose(c).chosen->name(), "cpu_fast");
  test::ScopedEnv env2("W4A16_LINEAR_BACKEND", std::string("auto"));
  Decision d = choose(c);
  EXPECT_TRUE(d.forced_by.empty());
  EXPECT_EQ(d.chosen, priority_list(Platform::cpu).front());
}

TEST(Override, UnknownNameIsNotFoundListingEveryRegisteredName) {
  LinearConfig c = cpu_config();
  SelectOptions o = no_env();
  o.backend = "marlin";
  Error e = expect_error([&] { choose(c, o); }, ErrorCode::not_found);
  std::string m = e.what();
  EXPECT_NE(m.find("SelectOptions.backend"), std::string::npos) << m;
  EXPECT_NE(m.find("\"marlin\""), std::string::npos) << m;
  for (const KernelEntry& k : all_kernels()) EXPECT_NE(m.find(std::string(k.kernel->name())), std::string::npos) << m;

  test::ScopedEnv env("W4A16_LINEAR_BACKEND", std::string("cpu_fastest"));
  Error e2 = expect_error([&] { choose(c); }, ErrorCode::not_found);
  EXPECT_NE(std::string(e2.what()).find("W4A16_LINEAR_BACKEND"), std::string::npos) << e2.what();
  for (const KernelEntry& k : all_kernels())
    EXPECT_NE(std::string(e2.what()).find(std::string(k.kernel->name())), std::string::npos) << e2.what();
}

TEST(Override, ForcedKernelThatRefusesIsAnErrorWithItsReason) {
  LinearConfig c = cpu_config(DType::f32);  // cpu_fast: float16 / bfloat16 activations only
  ASSERT_FALSE(find_kernel("cpu_fast")->can_implement(c).empty());
  SelectOptions o = no_env();
  o.backend = "cpu_fast";
  Error e = expect_error([&] { choose(c, o); }, ErrorCode::unsupported);
  std::string m = e.what();
  EXPECT_NE(m.find("\"cpu_fast\""), std::string::npos) << m;
  EXPECT_NE(m.find(find_kernel("cpu_fast")->can_implement(c)), std::string::npos) << m;
  EXPECT_NE(m.find(c.describe()), std::string::npos) << m;

  // A kernel of another device: the reason says so.
  for (const KernelEntry& k : all_kernels())
    if (k.kernel->device() == Device::cuda) {
      o.backend = std::string(k.kernel->name());
      Error e2 = expect_error([&] { choose(cpu_config(), o); }, ErrorCode::unsupported);
      EXPECT_NE(std::string(e2.what()).find("a cuda kernel; the config is on cpu"), std::string::npos) << e2.what();
    }
}

TEST(Disabled, EnvironmentAndOptionSkipKernelsWithTheReason) {
  LinearConfig c = cpu_config();
  test::ScopedEnv be("W4A16_LINEAR_BACKEND", std::nullopt);
  {
    test::ScopedEnv env("W4A16_DISABLED_KERNELS", std::string(" cpu_fast , ,"));  // spaces and empty items tolerated
    Error e = expect_error([&] { choose(c); }, ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cpu_fast: disabled by W4A16_DISABLED_KERNELS"), std::string::npos) << e.what();
    // Still forcible by name? No: forcing a disabled kernel is a contradiction and says so.
    SelectOptions o;
    o.backend = "cpu_fast";
    Error e2 = expect_error([&] { choose(c, o); }, ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e2.what()).find("W4A16_DISABLED_KERNELS disables"), std::string::npos) << e2.what();
    // Another kernel can be forced.
    o.backend = "cpu_reference";
    EXPECT_EQ(choose(c, o).chosen->name(), "cpu_reference");
  }
  {
    test::ScopedEnv env("W4A16_DISABLED_KERNELS", std::nullopt);
    EXPECT_EQ(choose(c).chosen->name(), "cpu_fast");  // the guard above restored the environment
    SelectOptions o;
    o.disabled = {"cpu_fast"};
    Error e = expect_error([&] { choose(c, o); }, ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cpu_fast: disabled by SelectOptions.disabled"), std::string::npos) << e.what();
  }
  {
    test::ScopedEnv env("W4A16_DISABLED_KERNELS", std::string("cpu_fast,typo_kernel"));
    Error e = expect_error([&] { choose(c); }, ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find("W4A16_DISABLED_KERNELS"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"typo_kernel\""), std::string::npos) << e.what();
    SelectOptions o = no_env();  // not read at all
    EXPECT_EQ(choose(c, o).chosen->name(), "cpu_fast");
    o.disabled = {"typo_kernel"};
    expect_error([&] { choose(c, o); }, ErrorCode::not_found);
  }
}

#if W4A16_HAVE_CUDA
TEST(Claims, DecodeRefusesAKBeyondItsBoundAndTheHybridRoutesItToPrefill) {
  // A K no decode chunk can stage (decode_fits(k, 1, ...) is false): the decode kernel says so,
  // naming K, instead of accepting and throwing at run time; the hybrid still claims the layer
  // and sends every M to its prefill path.
  LinearConfig c;
  c.n = c.n_full = 64;
  c.k = c.k_full = std::int64_t{1} << 24;
  c.group_size = 128;
  c.scalar = ScalarType::uint4b8;
  test::set_platform(c, test::cuda_platform());
  std::string why = find_kernel("cuda_decode")->can_implement(c);
  EXPECT_NE(why.find("K=16777216 above the decode kernel's shared-memory bound"), std::string::npos) << why;
  EXPECT_EQ(find_kernel("cuda_hybrid")->can_implement(c), find_kernel("cuda_prefill")->can_implement(c));
  // Beyond the 16-token bound only: accepted, decode_run takes smaller chunks. (That bound counts 8 cluster ranks
  // staging K / 8 each: a build whose code on 9.0 is sm_80, without clusters, stages all of K per block.)
  c.k = c.k_full = kernels::cuda::code_arch(c.capability) == 90 ? 65536 : 32768;
  EXPECT_EQ(find_kernel("cuda_decode")->can_implement(c), "");
}

// A GPU that no code of this build runs on (code_arch 0: an A100 under a 90a build, an RTX 4090 under any): every CUDA
// kernel refuses it, naming the capability and the build's code, before anything is launched.
TEST(Claims, ACapabilityWithoutCodeOfThisBuildIsRefusedByName) {
  int cap = 0;
  for (int c : {80, 86, 89, 90, 100, 120})
    if (kernels::cuda::code_arch(c) == 0) {
      cap = c;
      break;
    }
  if (cap == 0) GTEST_SKIP() << "this build's code (" << cuda_archs() << ") runs on every capability from 80 on";
  LinearConfig c = cpu_config();
  c.device = Device::cuda;
  c.capability = cap;
  for (const KernelEntry& e : all_kernels()) {
    if (e.kernel->device() != Device::cuda) continue;
    const std::string why = e.kernel->can_implement(c);
    EXPECT_NE(why.find("this build holds no code for sm_" + std::to_string(cap) + " (W4A16_CUDA_ARCHS=" + cuda_archs() + ")"),
              std::string::npos)
        << e.kernel->name() << ": " << why;
  }
}

TEST(Disabled, DisablingTheHybridLeavesItsPathsForcibleByName) {
  // A config the hybrid accepts (on sm90, or sm80 in a build of 80 alone); disabled, nothing is left in the list, and the error
  // says that its two paths accept the config and how to force them.
  std::optional<LinearConfig> hc;
  for (const LinearConfig& c : test::config_grid(test::cuda_platform(), {.small_shapes_only = false, .with_invalid = false}))
    if (find_kernel("cuda_hybrid")->can_implement(c).empty()) {
      hc = c;
      break;
    }
  ASSERT_TRUE(hc.has_value());
  SelectOptions o = no_env();
  EXPECT_EQ(choose(*hc, o).chosen->name(), "cuda_hybrid");
  o.disabled = {"cuda_hybrid"};
  Error e = expect_error([&] { choose(*hc, o); }, ErrorCode::unsupported);
  std::string m = e.what();
  EXPECT_NE(m.find("cuda_hybrid: disabled by SelectOptions.disabled"), std::string::npos) << m;
  EXPECT_NE(m.find("force it with backend=cuda_decode"), std::string::npos) << m;
  EXPECT_NE(m.find("force it with backend=cuda_prefill"), std::string::npos) << m;
  o.backend = "cuda_decode";
  EXPECT_EQ(choose(*hc, o).chosen->name(), "cuda_decode");
}
#endif

#if W4A16_HAVE_CUDA
// The hybrid's workspace covers whichever path an M <= max_m takes (decode up to its threshold,
// prefill above), so Linear's single allocation at create() is always enough.
TEST(Hybrid, WorkspaceCoversBothPaths) {
  const Kernel* h = find_kernel("cuda_hybrid");
  const Kernel* d = find_kernel("cuda_decode");
  const Kernel* p = find_kernel("cuda_prefill");
  for (const LinearConfig& c : test::config_grid(test::cuda_platform(), {.small_shapes_only = false, .with_invalid = false})) {
    if (!h->can_implement(c).empty()) continue;
    for (std::int64_t max_m : {1, 16, 17, 64, 4096}) {
      const std::size_t ws = h->workspace_bytes(c, max_m);
      for (std::int64_t m = 1; m <= max_m; m = m < 32 ? m + 1 : m * 2) {
        ASSERT_GE(ws, d->workspace_bytes(c, m)) << c.describe() << " max_m=" << max_m << " m=" << m;
        if (m > registry_detail::hybrid_decode_max_m(c.n, c.k, c.has_zeros, kernels::cuda::code_arch(c.capability), live_dram())) {
          ASSERT_GE(ws, p->workspace_bytes(c, m)) << c.describe() << " max_m=" << max_m << " m=" << m;
        }
      }
    }
  }
}

// The dense path (W dequantized into the workspace + cuBLAS) from W4A16_HYBRID_DENSE_MIN_M tokens on:
// the workspace holds the dense W (N K 2 bytes) for every max_m the path may take, and only then;
// never for act-order (the path writes W in layout order); a bad knob value is named.
TEST(Hybrid, DensePathWorkspaceOnlyWhereTheDensePathRuns) {
  const Kernel* h = find_kernel("cuda_hybrid");
  std::size_t checked = 0;
  for (const LinearConfig& c : test::config_grid(test::cuda_platform(), {.small_shapes_only = false, .with_invalid = false})) {
    if (!h->can_implement(c).empty()) continue;
    SCOPED_TRACE(c.describe());
    const std::size_t dense = static_cast<std::size_t>(c.n * c.k) * 2;
    std::size_t off99 = 0, off100 = 0;
    {
      test::ScopedEnv off("W4A16_HYBRID_DENSE_MIN_M", "0");
      off99 = h->workspace_bytes(c, 99);
      off100 = h->workspace_bytes(c, 100);
    }
    test::ScopedEnv on("W4A16_HYBRID_DENSE_MIN_M", "100");
    EXPECT_EQ(h->workspace_bytes(c, 99), off99) << "M = 99 never takes the dense path";
    if (c.act_order) {
      EXPECT_EQ(h->workspace_bytes(c, 100), off100) << "act-order never takes the dense path";
    } else {
      EXPECT_GE(h->workspace_bytes(c, 100), dense) << "M = 100 takes it";
      EXPECT_GE(h->workspace_bytes(c, 4096), dense);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
  LinearConfig c = test::config_grid(test::cuda_platform(), {.small_shapes_only = true, .with_invalid = false}).front();
  test::ScopedEnv bad("W4A16_HYBRID_DENSE_MIN_M", "many");
  Error e = expect_error([&] { h->workspace_bytes(c, 4096); }, ErrorCode::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("W4A16_HYBRID_DENSE_MIN_M"), std::string::npos) << e.what();
}
#endif

#if W4A16_HAVE_CUDA
// The hybrid's per-layer switch points were measured against the sm_90a prefill path; sm_80 code (mma.sync prefill,
// slower at small M) keeps the decode path up to the default on every layer, those of the table included.
TEST(Hybrid, Sm80CodeTakesTheDefaultSwitchOnEveryLayer) {
  std::size_t moved = 0;
  for (const registry_detail::HybridShape& s : registry_detail::kHybridShapes)
    for (bool zeros : {false, true}) {
      EXPECT_EQ(registry_detail::hybrid_decode_max_m(s.n, s.k, zeros, 80, 0), registry_detail::kHybridDefaultDecodeMaxM) << s.n << "x" << s.k;
      moved += registry_detail::hybrid_decode_max_m(s.n, s.k, zeros, 90, 0) != registry_detail::kHybridDefaultDecodeMaxM;
      EXPECT_EQ(registry_detail::hybrid_decode_max_m(s.n, s.k, zeros, 80, 3.35), registry_detail::kHybridDefaultDecodeMaxM);
    }
  EXPECT_GT(moved, 0u) << "the sm_90a table moves no layer: nothing left to test here";
}

// H100-class memory (a peak below kHybridSlowDramTbPerS) takes the table's own columns: the Qwen2.5-0.5B qkv / o layers
// run decode up to the default 16 tokens there (stop 46, measured on an H100) and up to 8 on the H200 and on a device of
// unknown bandwidth; stop 74 (the bulk decode kernel with x as one TMA box, its default at 9..16 tokens on H100-class
// memory) moved decode up to 16 there on qwen0.5b.gate_up, llama8b.down and 8192x8192 uint4b8, llama8b.o / qkv uint4,
// and to 12 on llama70b.gate_up uint4b8; llama8b.o / qkv uint4b8 and llama8b.gate_up uint4b8 keep prefill from 9 on
// every device; a layer outside the table (qwen0.5b.down) takes the default on every device.
TEST(Hybrid, H100ClassMemoryTakesItsOwnSwitchPoints) {
  using registry_detail::hybrid_decode_max_m;
  constexpr std::int64_t kDefault = registry_detail::kHybridDefaultDecodeMaxM;
  for (bool zeros : {false, true}) {
    for (std::int64_t n : {1152, 896, 9728}) {  // the Qwen qkv / o / gate_up layers (K = 896)
      EXPECT_EQ(hybrid_decode_max_m(n, 896, zeros, 90, 3.35), 16) << n;
      EXPECT_EQ(hybrid_decode_max_m(n, 896, zeros, 90, 4.8), 8) << n;
      EXPECT_EQ(hybrid_decode_max_m(n, 896, zeros, 90, 0), 8) << n;
    }
    for (double dram : {4.8, 0.0}) {  // llama8b.o / qkv: prefill from 9 tokens in both scalar types but on H100-class memory
      EXPECT_EQ(hybrid_decode_max_m(4096, 4096, zeros, 90, dram), 8) << dram;
      EXPECT_EQ(hybrid_decode_max_m(6144, 4096, zeros, 90, dram), 8) << dram;
    }
    EXPECT_EQ(hybrid_decode_max_m(4096, 4096, zeros, 90, 3.35), zeros ? 16 : 8);  // (uint4: the bulk kernel, stop 74)
    EXPECT_EQ(hybrid_decode_max_m(6144, 4096, zeros, 90, 3.35), zeros ? 16 : 8);
    EXPECT_EQ(hybrid_decode_max_m(4096, 14336, zeros, 90, 4.8), zeros ? 8 : 16);  // llama8b.down
    EXPECT_EQ(hybrid_decode_max_m(4096, 14336, zeros, 90, 3.35), 16);              // (the bulk kernel: stops 72, 74)
    for (double dram : {4.8, 0.0})  // the gate_up layers of Llama-3-70B / -8B: prefill from 9 tokens in uint4b8 (stop 51)
      EXPECT_EQ(hybrid_decode_max_m(57344, 8192, zeros, 90, dram), zeros ? 16 : 8) << dram;
    EXPECT_EQ(hybrid_decode_max_m(57344, 8192, zeros, 90, 3.35), zeros ? 16 : 12);  // (stop 74)
    for (double dram : {3.35, 4.8, 0.0})
      EXPECT_EQ(hybrid_decode_max_m(28672, 4096, zeros, 90, dram), zeros ? 16 : 8) << dram;
    // 8192x8192: the default on every device with a known bandwidth (H100-class memory: stop 74; before, 11 in uint4b8)
    EXPECT_EQ(hybrid_decode_max_m(8192, 8192, zeros, 90, 4.8), kDefault);
    EXPECT_EQ(hybrid_decode_max_m(8192, 8192, zeros, 90, 3.35), kDefault);
    for (double dram : {3.35, 4.8, 0.0})  // qwen0.5b.down: outside the table
      EXPECT_EQ(hybrid_decode_max_m(896, 4864, zeros, 90, dram), kDefault) << dram;
  }
}

// describe_run names the path each M takes, the same switch points run() uses: the hybrid's decode path up to
// hybrid_decode_max_m, the prefill path above, the dense path from W4A16_HYBRID_DENSE_MIN_M (never for act-order);
// decode and prefill alone name their own path at every M; no M < 1.
TEST(Hybrid, DescribeRunNamesThePathRunTakes) {
  const Kernel* h = find_kernel("cuda_hybrid");
  const Kernel* d = find_kernel("cuda_decode");
  const Kernel* p = find_kernel("cuda_prefill");
  auto starts = [](const std::string& s, const std::string& with) { return s.rfind(with, 0) == 0; };
  std::size_t checked = 0;
  for (const LinearConfig& c : test::config_grid(test::cuda_platform(), {.small_shapes_only = true, .with_invalid = false})) {
    if (!h->can_implement(c).empty()) continue;
    SCOPED_TRACE(c.describe());
    const std::int64_t t = registry_detail::hybrid_decode_max_m(c.n, c.k, c.has_zeros, kernels::cuda::code_arch(c.capability), live_dram());
    test::ScopedEnv off("W4A16_HYBRID_DENSE_MIN_M", "0");
    EXPECT_TRUE(starts(h->describe_run(c, t + 1), "prefill: ")) << h->describe_run(c, t + 1);
    EXPECT_TRUE(starts(p->describe_run(c, 1), "prefill: ")) << p->describe_run(c, 1);
    EXPECT_EQ(h->describe_run(c, 0), "");
    if (d->can_implement(c).empty()) {
      EXPECT_TRUE(starts(h->describe_run(c, 1), "decode: ")) << h->describe_run(c, 1);
      EXPECT_TRUE(starts(d->describe_run(c, 100), "decode: ")) << d->describe_run(c, 100);
    }
    test::ScopedEnv on("W4A16_HYBRID_DENSE_MIN_M", "64");
    EXPECT_EQ(starts(h->describe_run(c, 64), "dense: "), !c.act_order) << h->describe_run(c, 64);
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  // The CPU kernels: cpu_fast names the implementation it runs at that M (kernels/cpu/fast.hpp), the oracle has one path.
  for (const KernelEntry& e : all_kernels())
    if (e.kernel->device() == Device::cpu) {
      const std::string how = e.kernel->describe_run(cpu_config(), 16);
      if (e.kernel->name() == "cpu_fast") {
        using namespace kernels::cpu;
        const std::string isa(fast_isa_name(fast_isa_for(FastIsa::best, 16)));
        EXPECT_TRUE(starts(how, isa + ": ")) << how;
      } else {
        EXPECT_EQ(how, "") << e.kernel->name();
      }
    }
}
#endif

TEST(NothingFits, OneErrorListsEveryKernelAndItsReason) {
  for (Platform p : kPlatforms) {
    LinearConfig c = cpu_config();
    test::set_platform(c, p);
    c.group_size = 48;  // valid for no kernel
    Error e = expect_error([&] { choose(c, no_env()); }, ErrorCode::unsupported);
    std::string m = e.what();
    SCOPED_TRACE(m);
    EXPECT_NE(m.find("no kernel implements " + c.describe()), std::string::npos);
    for (const KernelEntry& k : all_kernels()) {
      std::string line = "\n  " + std::string(k.kernel->name()) + ": ";
      std::size_t at = m.find(line);
      ASSERT_NE(at, std::string::npos) << k.kernel->name();
      std::string reason = m.substr(at + line.size(), m.find('\n', at + 1) - at - line.size());
      EXPECT_FALSE(reason.empty()) << k.kernel->name();
      if (k.kernel->device() == c.device && c.capability >= k.kernel->min_capability()) {
        EXPECT_EQ(reason, k.kernel->can_implement(c)) << k.kernel->name();
      }
    }
  }
  // A config only an override-only kernel accepts: the error says how to force it.
  LinearConfig c = cpu_config(DType::f32);
  Error e = expect_error([&] { choose(c, no_env()); }, ErrorCode::unsupported);
  EXPECT_NE(std::string(e.what()).find("cpu_reference: override-only (it is the oracle"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("force it with backend=cpu_reference"), std::string::npos) << e.what();
}

// Decision::text: the chosen kernel, every refusal above it with its reason, the kernels outside the list.
TEST(Explain, TextListsChosenRefusalsAndTheRest) {
  std::size_t with_refusals = 0;
  for (Platform p : kPlatforms)
    for (const LinearConfig& c : test::config_grid(p)) {
      Decision d;
      try {
        d = choose(c, no_env());
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::unsupported) << e.what();
        continue;
      }
      std::string t = d.text();
      ASSERT_NE(t.find("chosen:   " + std::string(d.chosen->name())), std::string::npos) << t;
      ASSERT_NE(t.find("config:   " + c.describe()), std::string::npos) << t;
      ASSERT_NE(t.find("platform: " + std::string(platform_name(p))), std::string::npos) << t;
      for (const Decision::Refusal& r : d.refused) {
        ASSERT_FALSE(r.reason.empty());
        ASSERT_NE(t.find("  " + r.kernel + ": " + r.reason), std::string::npos) << t;
      }
      with_refusals += !d.refused.empty();
      for (const KernelEntry& k : all_kernels())  // chosen, refused, behind the chosen one, or outside the list
        ASSERT_NE(t.find(std::string(k.kernel->name())), std::string::npos) << k.kernel->name() << "\n" << t;
      for (const Decision::Refusal& r : d.not_listed) ASSERT_NE(t.find("  " + r.kernel + ": " + r.reason), std::string::npos) << t;
    }
  std::printf("[explain] %zu decisions with refusals above the chosen kernel\n", with_refusals);
  // The override-only reason is part of the explanation.
  Decision d = choose(cpu_config(), no_env());
  EXPECT_NE(d.text().find("cpu_reference: override-only: it is the oracle"), std::string::npos) << d.text();
}

// The text of a decision with refusals (the current lists hold one kernel per platform, so the
// grid above rarely produces one): each refused kernel with its reason, in order.
TEST(Explain, TextOfADecisionWithRefusals) {
  Decision d;
  d.chosen = find_kernel("cpu_fast");
  d.config_text = "N=8 K=64 g=32 uint4b8 act=float16 out=float16 on cpu";
  d.priority = {"a_kernel", "b_kernel", "cpu_fast"};
  d.refused = {{"a_kernel", "group_size 32 not in {128}"}, {"b_kernel", "disabled by W4A16_DISABLED_KERNELS"}};
  d.not_listed = {{"cpu_reference", "override-only: it is the oracle"}};
  EXPECT_EQ(d.text(),
            "config:   N=8 K=64 g=32 uint4b8 act=float16 out=float16 on cpu\n"
            "platform: cpu, priority: a_kernel > b_kernel > cpu_fast\n"
            "chosen:   cpu_fast\n"
            "refused:\n"
            "  a_kernel: group_size 32 not in {128}\n"
            "  b_kernel: disabled by W4A16_DISABLED_KERNELS\n"
            "not in the priority list:\n"
            "  cpu_reference: override-only: it is the oracle\n");
}

TEST(Platform, OfDeviceAndCapability) {
  EXPECT_EQ(platform_of(Device::cpu, 0), Platform::cpu);
  EXPECT_EQ(platform_of(Device::cuda, 80), Platform::sm80);
  EXPECT_EQ(platform_of(Device::cuda, 86), Platform::sm80);
  EXPECT_EQ(platform_of(Device::cuda, 90), Platform::sm90);
  EXPECT_EQ(platform_of(Device::cuda, 75), Platform::sm80);
  // Below every CUDA kernel's minimum: nothing fits, and each says why.
  LinearConfig c = cpu_config();
  c.device = Device::cuda;
  c.capability = 75;
  Error e = expect_error([&] { choose(c, no_env()); }, ErrorCode::unsupported);
#if W4A16_HAVE_CUDA
  EXPECT_NE(std::string(e.what()).find("cuda_decode: capability 75 below its minimum 80"), std::string::npos) << e.what();
#else
  EXPECT_NE(std::string(e.what()).find("cpu_fast: a cpu kernel; the config is on cuda"), std::string::npos) << e.what();
#endif
}

}  // namespace
}  // namespace w4a16
