// Registry adapters of the CUDA kernels (src/kernels/cuda): cuda_decode, cuda_prefill,
// cuda_hybrid (one copy of the weights in "cuda.tc16x64.v1", decode or prefill by M; opt-in, from
// W4A16_HYBRID_DENSE_MIN_M tokens, W dequantized per call into the workspace + cuBLAS: hybrid_thresholds.hpp
// says where it was measured and why its table is empty) and the opt-in cuda_dense_cache. Claims follow the kernels' contract blocks (decode.cu, prefill.hpp)
// and the cubins this build holds (W4A16_CUDA_ARCHS), so can_implement never promises a
// configuration that would fail at launch. Claims are pure functions of LinearConfig: no GPU
// is touched until prepare().
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "adapters.hpp"
#include "common.cuh"
#include "decode/decode.hpp"
#include "hybrid_thresholds.hpp"
#include "prefill/prefill.hpp"
#include "tc/tc_weights.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::registry_detail {

namespace kc = w4a16::kernels::cuda;

namespace {

std::string arch_refusal(const LinearConfig& c, int min_capability) {
  if (c.device != Device::cuda) return "device " + std::string(device_name(c.device)) + ": a CUDA kernel";
  if (c.capability < min_capability)
    return "capability " + std::to_string(c.capability) + " below its minimum " + std::to_string(min_capability);
  if (kc::code_arch(c.capability) == 0)  // sm_90a runs on exactly 9.0, sm_80 on 8.0 (its PTX, where embedded, on newer)
    return "this build holds no code for sm_" + std::to_string(c.capability) + " (W4A16_CUDA_ARCHS=" + kc::build_archs() + ")";
  return {};
}

// Claims shared by every kernel on the tensor-core layout: fp16/bf16 activations, y of the
// same dtype (decode.cu, prefill.hpp contracts), extents within the kernels' int32 indexing.
std::string tc_refusal(const LinearConfig& c, int min_capability) {
  if (std::string r = arch_refusal(c, min_capability); !r.empty()) return r;
  if (std::string r = c.invalid_reason(); !r.empty()) return r;
  if (!is_activation_dtype(c.act_dtype))
    return "act_dtype " + std::string(dtype_name(c.act_dtype)) + " not in {float16, bfloat16}";
  if (c.out_dtype != c.act_dtype)
    return "out_dtype " + std::string(dtype_name(c.out_dtype)) + " != act_dtype " + std::string(dtype_name(c.act_dtype));
  if (c.n > (std::int64_t{1} << 30) || c.k > (std::int64_t{1} << 30))
    return "N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + " above 2^30 (int32 indexing)";
  return {};
}

std::string decode_refusal(const LinearConfig& c) {
  if (std::string r = tc_refusal(c, 80); !r.empty()) return r;
  if (!kc::decode_fits(c.k, 1, c.has_zeros, c.group_size, kc::decode_device_for(c.capability)))
    return "K=" + std::to_string(c.k) + " above the decode kernel's shared-memory bound (x staged per block) even at 1 token";
  return {};
}

std::string prefill_refusal(const LinearConfig& c) {
  if (std::string r = tc_refusal(c, 80); !r.empty()) return r;
  if (!kc::prefill_supported(c.capability))
    return "prefill_supported(" + std::to_string(c.capability) + ") is false in this build";
  return {};
}

int current_device() {
  int d = 0;
  W4A16_CUDA_TRY(cudaGetDevice(&d));
  return d;
}

cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

// What the plans of describe_run are made for: this machine's GPU, else an H200 (132 SMs) or, below capability 90, an
// A100 (108 SMs); prefill_max_active_clusters then finds no device and the plans weigh no cluster split.
int plan_sm_count(int capability) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return capability < 90 ? 108 : 132;
  }
  return kc::device_sm_count();
}

// decode_run's plan of m tokens (its chunks of decode_chunk tokens; x rows 16-byte aligned unless act-order, as the hybrid asks).
std::string decode_run_text(const LinearConfig& c, std::int64_t m) {
  const kc::DecodeDevice dev = kc::decode_device_for(c.capability);
  const int per_launch = kc::decode_chunk(c.k, m, c.has_zeros, c.group_size, !c.act_order, dev);
  const int chunk = static_cast<int>(std::min<std::int64_t>(m, per_launch));
  try {
    return "decode: " + kc::decode_plan_for_sms(c.n, c.k, chunk, c.has_zeros, c.group_size, !c.act_order, plan_sm_count(c.capability), dev).describe() +
           (m > chunk ? " (per " + std::to_string(chunk) + "-token chunk)" : "");
  } catch (const Error& e) {
    return std::string("decode: no plan (") + e.what() + ")";
  }
}

std::string prefill_run_text(const LinearConfig& c, std::int64_t m) {
  return "prefill: " + kc::prefill_default_describe(c.n, c.k, m, c.capability, plan_sm_count(c.capability));
}

// ---- "cuda.tc16x64.v1": one TcWeights, shared by decode, prefill and the hybrid.
class TcPrepared : public PreparedWeights {
 public:
  TcPrepared(const LinearConfig& c, std::unique_ptr<kc::TcWeights> w, int device, std::unique_ptr<kc::CublasHandle> cublas = nullptr)
      : PreparedWeights(c), w_(std::move(w)), device_(device), cublas_(std::move(cublas)) {}
  std::string_view layout() const override { return kc::kTcLayoutTag; }
  std::size_t device_bytes() const override { return w_->bytes; }
  const kc::TcWeights& weights() const { return *w_; }
  int device_index() const { return device_; }
  // The hybrid's dense path: a cuBLAS handle made at prepare where that path may run, else null.
  const kc::CublasHandle* cublas() const { return cublas_.get(); }

 private:
  std::unique_ptr<kc::TcWeights> w_;
  int device_;
  std::unique_ptr<kc::CublasHandle> cublas_;
};

template <class T>
const T& prepared_as(const PreparedWeights& w, std::string_view kernel) {
  const T* p = dynamic_cast<const T*>(&w);
  if (!p)
    fail(ErrorCode::internal, "weights: layout tag \"" + std::string(w.layout()) + "\" but not the type " +
                                  std::string(kernel) + " prepares");
  return *p;
}

void check_device_index(const RunArgs& a, int device) {
  for (const auto& [t, arg] : {std::pair{&a.x, "x"}, std::pair{&a.out, "out"}})
    if (t->device_index != device)
      fail(ErrorCode::invalid_argument, arg, "a tensor on cuda:" + std::to_string(device) + " (where the weights live)",
           describe(*t));
}

std::unique_ptr<kc::TcWeights> prepare_tc(const Kernel& k, const CanonicalView& w, const LinearConfig& c, void* stream) {
  check_weights_match(w, c);
  if (std::string why = k.can_implement(c); !why.empty())
    fail(ErrorCode::unsupported, "config", "a config " + std::string(k.name()) + " implements",
         c.describe() + " (" + why + ")");
  return kc::tc_prepare(w, c.act_dtype, stream_of(stream));
}

// The arrays of layout "cuda.tc16x64.v1" for config `c` (tc_weights.hpp), in TcHostLayout's order; zeros, bias and
// perm only where c has them.
std::vector<LayoutSpec> tc_array_specs(const LinearConfig& c) {
  const std::int64_t np = (c.n + kc::kTcPadN - 1) / kc::kTcPadN * kc::kTcPadN;
  const std::int64_t kp = (c.k + kc::kTcPadK - 1) / kc::kTcPadK * kc::kTcPadK, g = c.spec().groups();
  std::vector<LayoutSpec> s = {{"qweight", DType::i32, {np / kc::kTcTileN, kp / kc::kTcTileK, 32, 4}},
                               {"scales", c.act_dtype, {g, np}}};
  if (c.has_zeros) s.push_back({"zeros", DType::u8, {g, np / kc::kTcTileN, 8}});
  if (c.has_bias) s.push_back({"bias", c.act_dtype, {c.n}});
  if (c.act_order) s.push_back({"perm", DType::i32, {c.k}});
  return s;
}

// Base of the three kernels on the tc layout: prepare, adopt and the device checks are shared.
class TcKernel : public Kernel {
 public:
  Device device() const override { return Device::cuda; }
  std::string_view layout() const override { return kc::kTcLayoutTag; }
  std::unique_ptr<PreparedWeights> prepare(const CanonicalView& w, const LinearConfig& c, void* stream) const override {
    return wrap(c, prepare_tc(*this, w, c, stream));
  }
  std::vector<LayoutArray> layout_host(const CanonicalView& w, const LinearConfig& c) const override {
    check_weights_match(w, c);
    if (w.device != Device::cpu) fail(ErrorCode::invalid_argument, "weights", "host canonical weights", "device weights");
    const kc::TcHostLayout L = kc::tc_layout_host(w, c.act_dtype);
    std::vector<LayoutArray> out;
    for (const LayoutSpec& a : tc_array_specs(c))
      out.push_back(layout_array(a, a.name == "qweight"  ? static_cast<const void*>(L.qweight.data())
                                    : a.name == "scales" ? static_cast<const void*>(L.scales.data())
                                    : a.name == "zeros"  ? static_cast<const void*>(L.zeros.data())
                                    : a.name == "bias"   ? static_cast<const void*>(L.bias.data())
                                                         : static_cast<const void*>(L.perm.data())));
    return out;
  }
  std::unique_ptr<PreparedWeights> adopt(const std::vector<LayoutView>& arrays, const LinearConfig& c) const override {
    if (std::string why = can_implement(c); !why.empty())
      fail(ErrorCode::unsupported, "config", "a config " + std::string(name()) + " implements", c.describe() + " (" + why + ")");
    const std::vector<LayoutSpec> specs = tc_array_specs(c);
    const std::vector<const TensorView*> views = check_layout_views(arrays, specs, layout());
    const int dev = current_device();
    auto tc = std::make_unique<kc::TcWeights>();  // a view: owned = false, the arrays stay the caller's
    tc->owned = false;
    tc->n = c.n; tc->k = c.k; tc->groups = c.spec().groups();
    tc->n_pad = specs[1].shape[1];                // scales [G, N_pad]
    tc->k_pad = specs[0].shape[1] * kc::kTcTileK;  // qweight [N_pad/16, K_pad/64, 32, 4]
    tc->group_size = c.group_size; tc->scalar = c.scalar; tc->act_dtype = c.act_dtype;
    tc->has_bias = c.has_bias; tc->act_order = c.act_order;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const TensorView& t = *views[i];
      if (t.device_index != dev)
        fail(ErrorCode::invalid_argument, specs[i].name, "an array on cuda:" + std::to_string(dev) + " (the Linear's device)",
             describe(t));
      const std::string& n = specs[i].name;
      if (n == "qweight") tc->qweight = static_cast<std::int32_t*>(t.data);
      else if (n == "scales") tc->scales = t.data;
      else if (n == "zeros") tc->zeros = static_cast<std::uint8_t*>(t.data);
      else if (n == "bias") tc->bias = t.data;
      else tc->perm = static_cast<std::int32_t*>(t.data);
      tc->bytes += t.nbytes();
    }
    return wrap(c, std::move(tc));
  }

 protected:
  // Prepared weights of this kernel over `w` (prepare's upload or adopt's view): the hybrid adds its cuBLAS handle.
  virtual std::unique_ptr<PreparedWeights> wrap(const LinearConfig& c, std::unique_ptr<kc::TcWeights> w) const {
    return std::make_unique<TcPrepared>(c, std::move(w), current_device());
  }

  const TcPrepared& checked(const PreparedWeights& w, const RunArgs& a, std::size_t ws_needed) const {
    check_run_args(*this, w, a, ws_needed);
    const TcPrepared& p = prepared_as<TcPrepared>(w, name());
    check_device_index(a, p.device_index());
    return p;
  }
};

class CudaDecode final : public TcKernel {
 public:
  std::string_view name() const override { return "cuda_decode"; }
  int min_capability() const override { return 80; }
  std::string can_implement(const LinearConfig& c) const override { return decode_refusal(c); }
  std::size_t workspace_bytes(const LinearConfig& c, std::int64_t max_m) const override {
    return kc::decode_workspace_bytes(c.n, c.k, c.group_size, c.act_order, max_m);
  }
  std::string describe_run(const LinearConfig& c, std::int64_t m) const override { return m > 0 ? decode_run_text(c, m) : ""; }
  // decode.cu: x and y need element (2-byte) alignment only; 16-byte rows take a vector path.
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    const TcPrepared& p = checked(w, a, workspace_bytes(w.config(), a.x.shape[0]));
    kc::decode_run(p.weights(), a.x.data, a.x.shape[0], a.x.stride[0], a.out.data, a.out.stride[0], a.workspace,
                   a.workspace_bytes, stream_of(a.stream));
  }
};

// prefill.hpp: x 16-byte aligned with 16-byte rows unless act-order (then gathered into the
// workspace first); y 2-byte; the workspace 256-byte aligned.
IoAlignment prefill_alignment(const LinearConfig& c) { return {c.act_order ? 1u : 16u, 1, 256}; }

class CudaPrefill final : public TcKernel {
 public:
  std::string_view name() const override { return "cuda_prefill"; }
  int min_capability() const override { return 80; }  // mma.sync below 9.0 (and on sm_80 code), wgmma on sm_90a
  std::string can_implement(const LinearConfig& c) const override { return prefill_refusal(c); }
  std::size_t workspace_bytes(const LinearConfig& c, std::int64_t max_m) const override {
    return kc::prefill_workspace_bytes(c.n, c.k, c.group_size, c.act_order, max_m);
  }
  std::string describe_run(const LinearConfig& c, std::int64_t m) const override { return m > 0 ? prefill_run_text(c, m) : ""; }
  IoAlignment io_alignment(const LinearConfig& c) const override { return prefill_alignment(c); }
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    const TcPrepared& p = checked(w, a, workspace_bytes(w.config(), a.x.shape[0]));
    kc::prefill_run(p.weights(), a.x.data, a.x.shape[0], a.x.stride[0], a.out.data, a.out.stride[0], a.workspace,
                    a.workspace_bytes, stream_of(a.stream));
  }
};

// The hybrid: both paths over one TcWeights; M <= hybrid_decode_max_m(N, K, zeros, code arch, the device's memory) runs
// decode, larger M prefill. It claims what the prefill path claims, and asks the stricter
// (prefill) alignment at every M so that a caller valid at M = 1 stays valid at M = 4096.
class CudaHybrid final : public TcKernel {
 public:
  std::string_view name() const override { return "cuda_hybrid"; }
  int min_capability() const override { return 80; }
  // The prefill path takes every M, so it decides what the hybrid claims; a K the decode path
  // cannot stage even at 1 token sends every M to the prefill path.
  std::string can_implement(const LinearConfig& c) const override {
    if (std::string r = prefill_refusal(c); !r.empty()) return "prefill path: " + r;
    return {};
  }
  // Everything else the decode path needs is already implied by the prefill path's claim
  // (same layout, dtypes and minimum capability): only its K bound can differ.
  static std::int64_t decode_max_m(const LinearConfig& c) {
    return kc::decode_fits(c.k, 1, c.has_zeros, c.group_size, kc::decode_device_for(c.capability))
               ? hybrid_decode_max_m(c.n, c.k, c.has_zeros, kc::code_arch(c.capability), kc::device_dram_tb_per_s())
               : 0;
  }
  // The smallest M of the dense path (0: never): hybrid_dense_min_m_table, or W4A16_HYBRID_DENSE_MIN_M
  // (0: off, m: from m tokens on, for every layer; the A/B knob, read per call). Never for act-order.
  static std::int64_t dense_min_m(const LinearConfig& c) {
    if (!kc::dense_transient_refusal(c.act_order).empty()) return 0;
    std::int64_t from = hybrid_dense_min_m_table(c.n, c.k);
    if (const char* env = std::getenv("W4A16_HYBRID_DENSE_MIN_M")) {
      char* end = nullptr;
      from = std::strtoll(env, &end, 10);
      if (end == env || *end != '\0' || from < 0)
        fail(ErrorCode::invalid_argument, "W4A16_HYBRID_DENSE_MIN_M", "0 (off) or the smallest M of the dense path", env);
    }
    return from == 0 ? 0 : std::max<std::int64_t>(from, decode_max_m(c) + 1);  // above the decode range
  }
  std::unique_ptr<PreparedWeights> wrap(const LinearConfig& c, std::unique_ptr<kc::TcWeights> tc) const override {
    std::unique_ptr<kc::CublasHandle> h = dense_min_m(c) > 0 ? kc::cublas_handle_create() : nullptr;
    return std::make_unique<TcPrepared>(c, std::move(tc), current_device(), std::move(h));
  }
  std::size_t workspace_bytes(const LinearConfig& c, std::int64_t max_m) const override {
    const std::int64_t t = decode_max_m(c), d = dense_min_m(c);
    std::size_t ws = kc::decode_workspace_bytes(c.n, c.k, c.group_size, c.act_order, std::min(max_m, t));
    if (max_m > t) ws = std::max(ws, kc::prefill_workspace_bytes(c.n, c.k, c.group_size, c.act_order, max_m));
    if (d > 0 && max_m >= d) ws = std::max(ws, kc::dense_transient_workspace_bytes(c.n, c.k));
    return ws;
  }
  IoAlignment io_alignment(const LinearConfig& c) const override { return prefill_alignment(c); }
  std::string describe_run(const LinearConfig& c, std::int64_t m) const override {
    if (m <= 0) return {};
    if (m <= decode_max_m(c)) return decode_run_text(c, m);
    if (const std::int64_t d = dense_min_m(c); d > 0 && m >= d)
      return "dense: W dequantized into the workspace (" + std::to_string(c.n * c.k * 2) + " bytes), then cuBLAS";
    return prefill_run_text(c, m);
  }
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    const LinearConfig& c = w.config();
    const std::int64_t m = a.x.defined() ? a.x.shape[0] : 0;
    const bool decode = m <= decode_max_m(c);
    const std::int64_t d = decode ? 0 : dense_min_m(c);
    // Weights prepared by another tc kernel carry no cuBLAS handle: those run the prefill path.
    const auto* tp = dynamic_cast<const TcPrepared*>(&w);
    const bool dense = d > 0 && m >= d && tp != nullptr && tp->cublas() != nullptr;
    const std::size_t need = decode  ? kc::decode_workspace_bytes(c.n, c.k, c.group_size, c.act_order, m)
                             : dense ? kc::dense_transient_workspace_bytes(c.n, c.k)
                                     : kc::prefill_workspace_bytes(c.n, c.k, c.group_size, c.act_order, m);
    const TcPrepared& p = checked(w, a, need);
    if (decode)
      kc::decode_run(p.weights(), a.x.data, m, a.x.stride[0], a.out.data, a.out.stride[0], a.workspace,
                     a.workspace_bytes, stream_of(a.stream));
    else if (dense)
      kc::dense_transient_run(p.weights(), *p.cublas(), a.x.data, m, a.x.stride[0], a.out.data, a.out.stride[0], a.workspace,
                              a.workspace_bytes, stream_of(a.stream));
    else
      kc::prefill_run(p.weights(), a.x.data, m, a.x.stride[0], a.out.data, a.out.stride[0], a.workspace,
                      a.workspace_bytes, stream_of(a.stream));
  }
};

// ---- cuda_dense_cache: the tc weights (bias, and the int4 copy a layer keeps anyway) plus
// an fp16/bf16 dequantized copy run through cuBLAS. Its own layout tag: the dense copy is
// part of what run() reads, so tc-only weights must not reach it.
constexpr std::string_view kDenseLayout = "cuda.dense_cache.v1";

class DensePrepared final : public PreparedWeights {
 public:
  DensePrepared(const LinearConfig& c, std::unique_ptr<kc::TcWeights> w, std::unique_ptr<kc::DenseCache> d, int device)
      : PreparedWeights(c), w_(std::move(w)), d_(std::move(d)), device_(device) {}
  std::string_view layout() const override { return kDenseLayout; }
  std::size_t device_bytes() const override { return w_->bytes + d_->bytes; }  // both copies, honestly
  const kc::TcWeights& weights() const { return *w_; }
  const kc::DenseCache& cache() const { return *d_; }
  int device_index() const { return device_; }

 private:
  std::unique_ptr<kc::TcWeights> w_;
  std::unique_ptr<kc::DenseCache> d_;
  int device_;
};

class CudaDenseCache final : public Kernel {
 public:
  std::string_view name() const override { return "cuda_dense_cache"; }
  Device device() const override { return Device::cuda; }
  int min_capability() const override { return 80; }  // bf16 cuBLAS GEMM and the dequantize kernel's cubins
  std::string_view layout() const override { return kDenseLayout; }
  std::string can_implement(const LinearConfig& c) const override { return tc_refusal(c, 80); }
  std::unique_ptr<PreparedWeights> prepare(const CanonicalView& w, const LinearConfig& c, void* stream) const override {
    std::unique_ptr<kc::TcWeights> tc = prepare_tc(*this, w, c, stream);
    std::unique_ptr<kc::DenseCache> d = kc::dense_cache_prepare(*tc, stream_of(stream));
    return std::make_unique<DensePrepared>(c, std::move(tc), std::move(d), current_device());
  }
  std::size_t workspace_bytes(const LinearConfig&, std::int64_t max_m) const override {
    return kc::dense_cache_workspace_bytes(max_m);
  }
  IoAlignment io_alignment(const LinearConfig&) const override { return {1, 1, 256}; }  // cuBLAS workspace
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    check_run_args(*this, w, a, workspace_bytes(w.config(), a.x.shape[0]));
    const DensePrepared& p = prepared_as<DensePrepared>(w, name());
    check_device_index(a, p.device_index());
    kc::dense_cache_run(p.cache(), p.weights(), a.x.data, a.x.shape[0], a.x.stride[0], a.out.data, a.out.stride[0],
                        a.workspace, a.workspace_bytes, stream_of(a.stream));
  }
};

}  // namespace

const Kernel& cuda_decode_kernel() {
  static const CudaDecode k;
  return k;
}
const Kernel& cuda_prefill_kernel() {
  static const CudaPrefill k;
  return k;
}
const Kernel& cuda_hybrid_kernel() {
  static const CudaHybrid k;
  return k;
}
const Kernel& cuda_dense_cache_kernel() {
  static const CudaDenseCache k;
  return k;
}

bool cuda_build_runs_on(int capability) { return kc::code_arch(capability) != 0; }
std::string cuda_build_archs() { return kc::build_archs(); }

int cuda_capability(int device_index) { return kc::device_capability(device_index); }

std::shared_ptr<void> cuda_alloc(std::size_t bytes, int device_index) {
  CudaDeviceScope scope(device_index);
  void* p = nullptr;
  W4A16_CUDA_TRY(cudaMalloc(&p, bytes));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

CudaDeviceScope::CudaDeviceScope(int device_index) {
  W4A16_CUDA_TRY(cudaGetDevice(&previous_));
  if (device_index != previous_) W4A16_CUDA_TRY(cudaSetDevice(device_index));
}
CudaDeviceScope::~CudaDeviceScope() {
  int now = previous_;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

}  // namespace w4a16::registry_detail
