#include "registry_rows.hpp"

#include <cuda_runtime.h>

#include "w4a16/core/error.hpp"
#include "w4a16/linear.hpp"

namespace w4a16::bench {

namespace {

class RegistryBench final : public BenchKernel {
 public:
  RegistryBench(std::string name, std::int64_t max_m) : name_(std::move(name)), max_m_(max_m) {}
  std::string name() const override { return name_ + " (registry)"; }
  std::string refuses(const BenchCase& c, std::int64_t m) const override {
    if (m > max_m_) return "M above the sweep's max_m";
    return {};
  }
  void prepare(const BenchCase& c, const QuantizedLinear* q, int copies, cudaStream_t s) override {
    release();
    LinearOptions opt;
    opt.act_dtype = c.act;
    opt.device = Device::cuda;
    opt.backend = name_;
    opt.max_m = max_m_;
    opt.stream = s;
    for (int i = 0; i < copies; ++i) layers_.push_back(std::make_unique<Linear>(Linear::create(q->view(), opt)));
    std::size_t ws = layers_[0]->workspace_bytes();
    if (ws && cudaMalloc(&ws_, ws) != cudaSuccess) fail(ErrorCode::cuda_error, "registry bench: workspace allocation failed");
    n_ = c.n;
    k_ = c.k;
    act_ = c.act;
  }
  void run(int copy, const void* x, std::int64_t m, void* y, cudaStream_t s) override {
    const Linear& l = *layers_[static_cast<std::size_t>(copy) % layers_.size()];
    TensorView xv(const_cast<void*>(x), act_, {m, k_}, Device::cuda), yv(y, act_, {m, n_}, Device::cuda);
    l.run(xv, yv, ws_, s);
  }
  std::string plan(std::int64_t) const override { return name_; }
  void release() override {
    layers_.clear();
    if (ws_) cudaFree(ws_);
    ws_ = nullptr;
  }
  ~RegistryBench() override { release(); }

 private:
  std::string name_;
  std::int64_t max_m_;
  std::vector<std::unique_ptr<Linear>> layers_;
  void* ws_ = nullptr;
  std::int64_t n_ = 0, k_ = 0;
  DType act_ = DType::f16;
};

}  // namespace

std::vector<std::unique_ptr<BenchKernel>> make_registry_bench_kernels(const std::vector<std::string>& names, std::int64_t max_m) {
  std::vector<std::unique_ptr<BenchKernel>> v;
  for (const auto& n : names) {
    if (!find_kernel(n)) fail(ErrorCode::not_found, "--registry", "a registered kernel name", n);
    v.push_back(std::make_unique<RegistryBench>(n, max_m));
  }
  return v;
}

}  // namespace w4a16::bench
