// Registry adapters of the CPU kernels (src/kernels/cpu): cpu_reference and cpu_fast.
// Each states the claims its kernel's contract block makes, prepares its own layout and
// runs it after check_run_args.
#include <string>

#include "adapters.hpp"
#include "fast.hpp"
#include "reference.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::registry_detail {

namespace {

// The common CPU claims: a consistent config on the CPU.
std::string cpu_refusal(const LinearConfig& c) {
  if (c.device != Device::cpu) return "device " + std::string(device_name(c.device)) + ": a CPU kernel";
  return c.invalid_reason();
}

bool is_ref_dtype(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32; }

// The prepared weights of `w` as the adapter's own type; check_run_args has already matched
// the layout tag, so a failure here is a broken invariant of the registry.
template <class T>
const T& prepared_as(const PreparedWeights& w, std::string_view kernel) {
  const T* p = dynamic_cast<const T*>(&w);
  if (!p) fail(ErrorCode::internal, "weights: layout tag \"" + std::string(w.layout()) + "\" but not the type " + std::string(kernel) + " prepares");
  return *p;
}

void check_host(const CanonicalView& w, std::string_view kernel) {
  if (w.device != Device::cpu)
    fail(ErrorCode::invalid_argument, "weights", "host (cpu) canonical weights for " + std::string(kernel),
         "weights on " + std::string(device_name(w.device)));
}

// ---- cpu_reference: layout "cpu.canonical" = an owned host copy of the canonical tensors.
constexpr std::string_view kCanonicalLayout = "cpu.canonical";

class CanonicalPrepared final : public PreparedWeights {
 public:
  CanonicalPrepared(const LinearConfig& c, QuantizedLinear q) : PreparedWeights(c), q_(std::move(q)), view_(q_.view()) {}
  std::string_view layout() const override { return kCanonicalLayout; }
  std::size_t device_bytes() const override { return q_.nbytes(); }
  const CanonicalView& view() const { return view_; }

 private:
  QuantizedLinear q_;
  CanonicalView view_;
};

class CpuReference final : public Kernel {
 public:
  std::string_view name() const override { return "cpu_reference"; }
  Device device() const override { return Device::cpu; }
  std::string_view layout() const override { return kCanonicalLayout; }
  // reference.hpp: any valid canonical layer; x and out each float16, bfloat16 or float32.
  std::string can_implement(const LinearConfig& c) const override {
    if (std::string r = cpu_refusal(c); !r.empty()) return r;
    if (!is_ref_dtype(c.act_dtype))
      return "act_dtype " + std::string(dtype_name(c.act_dtype)) + " not in {float16, bfloat16, float32}";
    if (!is_ref_dtype(c.out_dtype))
      return "out_dtype " + std::string(dtype_name(c.out_dtype)) + " not in {float16, bfloat16, float32}";
    return {};
  }
  std::unique_ptr<PreparedWeights> prepare(const CanonicalView& w, const LinearConfig& c, void*) const override {
    check_host(w, name());
    check_weights_match(w, c);
    if (std::string why = can_implement(c); !why.empty())
      fail(ErrorCode::unsupported, "config", "a config cpu_reference implements", c.describe() + " (" + why + ")");
    CanonicalTensors t;
    const QuantSpec& s = w.spec;
    t.qweight = TensorView(const_cast<std::int32_t*>(w.qweight), DType::i32, {s.n, s.k / 8});
    t.scales = TensorView(const_cast<std::uint16_t*>(w.scales), w.scale_dtype, {s.n, s.groups()});
    if (w.zeros.defined()) t.zeros = TensorView(const_cast<std::int32_t*>(w.zeros.data()), DType::i32, {s.n / 8, s.groups()});
    if (w.has_bias()) t.bias = TensorView(const_cast<std::uint16_t*>(w.bias), w.scale_dtype, {s.n});
    if (w.act_order()) t.perm = TensorView(const_cast<std::int32_t*>(w.perm), DType::i32, {s.k});
    return std::make_unique<CanonicalPrepared>(c, QuantizedLinear::from_tensors(t, s));
  }
  std::size_t workspace_bytes(const LinearConfig&, std::int64_t) const override { return 0; }
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    check_run_args(*this, w, a, 0);
    kernels::cpu::reference_gemm(prepared_as<CanonicalPrepared>(w, name()).view(), a.x, a.out);
  }
};

// ---- cpu_fast: layout "cpu.fast.v1" (fast.hpp).
class FastPrepared final : public PreparedWeights {
 public:
  FastPrepared(const LinearConfig& c, kernels::cpu::FastWeights fw) : PreparedWeights(c), w_(std::move(fw)) {}
  std::string_view layout() const override { return kernels::cpu::FastWeights::kLayout; }
  std::size_t device_bytes() const override { return w_.bytes(); }
  const kernels::cpu::FastWeights& weights() const { return w_; }

 private:
  kernels::cpu::FastWeights w_;
};

class CpuFast final : public Kernel {
 public:
  std::string_view name() const override { return "cpu_fast"; }
  Device device() const override { return Device::cpu; }
  std::string_view layout() const override { return kernels::cpu::FastWeights::kLayout; }
  // fast.hpp: every valid spec, x and out of one dtype, float16 or bfloat16.
  std::string can_implement(const LinearConfig& c) const override {
    if (std::string r = cpu_refusal(c); !r.empty()) return r;
    std::string why;
    if (!kernels::cpu::fast_supports(c.act_dtype, c.spec(), &why)) return why.empty() ? "fast_supports: no" : why;
    if (c.out_dtype != c.act_dtype)
      return "out_dtype " + std::string(dtype_name(c.out_dtype)) + " != act_dtype " + std::string(dtype_name(c.act_dtype));
    return {};
  }
  std::unique_ptr<PreparedWeights> prepare(const CanonicalView& w, const LinearConfig& c, void*) const override {
    check_host(w, name());
    check_weights_match(w, c);
    if (std::string why = can_implement(c); !why.empty())
      fail(ErrorCode::unsupported, "config", "a config cpu_fast implements", c.describe() + " (" + why + ")");
    return std::make_unique<FastPrepared>(c, kernels::cpu::fast_prepare(w, c.act_dtype));
  }
  std::size_t workspace_bytes(const LinearConfig&, std::int64_t) const override { return 0; }
  std::string describe_run(const LinearConfig& c, std::int64_t m) const override {
    return kernels::cpu::fast_describe_run(c.act_dtype, m);
  }
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    check_run_args(*this, w, a, 0);
    kernels::cpu::fast_gemm(prepared_as<FastPrepared>(w, name()).weights(), a.x, a.out, 0);  // 0 = all threads
  }
};

}  // namespace

const Kernel& cpu_reference_kernel() {
  static const CpuReference k;
  return k;
}
const Kernel& cpu_fast_kernel() {
  static const CpuFast k;
  return k;
}

}  // namespace w4a16::registry_detail
