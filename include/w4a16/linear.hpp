// The public entry point: a linear layer bound to a chosen kernel and its prepared weights.
//   auto lin = w4a16::Linear::create(q.view(), {.act_dtype = DType::f16});
//   lin.forward(x, out);          // CPU, or CUDA with the caller's stream and workspace
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/registry/registry.hpp"

namespace w4a16 {

struct LinearOptions {
  DType act_dtype = DType::f16;
  Device device = Device::cpu;
  int device_index = 0;
  std::string backend;       // force a kernel by name ("" = choose)
  std::int64_t max_m = 4096; // workspace is sized for M <= max_m
  // false: create() / adopt() allocate no workspace; every call passes the caller's (run with its size), e.g. one
  // buffer shared by all the layers of a model on a stream, sized for the largest M of any call
  // (workspace_bytes_for(m)): a workspace per layer at max_m can match the layer's weight bytes.
  bool own_workspace = true;
  void* stream = nullptr;    // for CUDA prepare uploads
};

class Linear {
 public:
  // `w` may live on the host (CUDA kernels upload it in prepare).
  static Linear create(const CanonicalView& w, const LinearOptions& opt);
  // A Linear over prepared weights the caller holds in `layout` (Kernel::layout_host's arrays, by name, on opt's device;
  // Kernel::adopt: read in place, no copy, so they must outlive the Linear). `c` describes the layer (LinearConfig::from
  // of its canonical weights; device and capability are taken from opt). The kernel is chosen as create() chooses and
  // must run `layout` (else layout_mismatch, naming the one it runs).
  static Linear adopt(std::string_view layout, const std::vector<LayoutView>& arrays, LinearConfig c, const LinearOptions& opt);
  const Kernel& kernel() const { return *kernel_; }
  const LinearConfig& config() const { return config_; }
  const Decision& decision() const { return decision_; }
  std::size_t workspace_bytes() const { return ws_bytes_; }  // for max_m rows
  std::size_t workspace_bytes_for(std::int64_t m) const;      // what a call of m rows needs (0 where none)
  std::size_t weight_bytes() const { return prepared_->device_bytes(); }
  // Caller-owned workspace (>= workspace_bytes()) and stream; never allocates.
  void run(const TensorView& x, const TensorView& out, void* workspace, void* stream) const;
  // The same with a workspace of `workspace_bytes` (>= workspace_bytes_for(M), else invalid_argument).
  void run(const TensorView& x, const TensorView& out, void* workspace, std::size_t workspace_bytes, void* stream) const;
  // Convenience for the CPU or tests: uses an internal workspace (allocated at create() unless own_workspace is false).
  void forward(const TensorView& x, const TensorView& out, void* stream = nullptr) const;

 private:
  void choose_kernel(const LinearConfig& c, const LinearOptions& opt);  // config_, decision_, kernel_ (opt.backend honoured)
  void allocate_workspace(const LinearOptions& opt);  // ws_bytes_ for opt.max_m, and owned_ws_ on opt's device

  const Kernel* kernel_ = nullptr;
  LinearConfig config_;
  Decision decision_;
  std::shared_ptr<PreparedWeights> prepared_;
  std::size_t ws_bytes_ = 0;
  std::shared_ptr<void> owned_ws_;
};

}  // namespace w4a16
