// The kernel interface every registered kernel implements (the registry's only view of it).
//   can_implement(config) -> "" for yes, else the failing condition ("group_size 48 not in {32,...}")
//   prepare(canonical)    -> the kernel's own weights, tagged with its layout name
//   workspace_bytes(config, max_m)
//   run(x, prepared, out, workspace, stream): launch only, never allocates (CUDA-graph safe)
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/registry/config.hpp"

namespace w4a16 {

// A kernel's prepared weights. The layout tag is checked on every run(), so weights
// prepared by one kernel can never be fed to another with a different layout.
class PreparedWeights {
 public:
  virtual ~PreparedWeights() = default;
  virtual std::string_view layout() const = 0;  // e.g. "cpu.canonical", "cuda.tc16x64.v1"
  virtual std::size_t device_bytes() const = 0;  // memory it holds (reported to users)
  const LinearConfig& config() const { return config_; }

 protected:
  explicit PreparedWeights(const LinearConfig& c) : config_(c) {}
  LinearConfig config_;
};

struct RunArgs {
  TensorView x;    // [M, K] act_dtype, rows may be strided (stride[1] == 1)
  TensorView out;  // [M, N] out_dtype, rows may be strided (stride[1] == 1)
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // cudaStream_t for CUDA kernels; ignored on the CPU
};

// Byte alignments a kernel needs of its run() arguments.
struct IoAlignment {
  std::size_t x = 1;          // x base pointer and x row stride (in bytes)
  std::size_t out = 1;        // out base pointer and out row stride (in bytes)
  std::size_t workspace = 1;  // workspace base pointer
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string_view name() const = 0;
  virtual Device device() const = 0;
  virtual int min_capability() const { return 0; }
  // Empty string: yes. Otherwise the reason, naming the failing condition.
  virtual std::string can_implement(const LinearConfig& c) const = 0;
  // The layout tag this kernel's prepare() produces and run() accepts.
  virtual std::string_view layout() const = 0;
  // `w` is a host or device view matching `c`; stream used for CUDA uploads.
  virtual std::unique_ptr<PreparedWeights> prepare(const CanonicalView& w, const LinearConfig& c,
                                                   void* stream = nullptr) const = 0;
  virtual std::size_t workspace_bytes(const LinearConfig& c, std::int64_t max_m) const = 0;
  virtual void run(const PreparedWeights& w, const RunArgs& args) const = 0;
  // Alignment run() needs (check_run_args enforces it); 1 = element alignment only.
  virtual IoAlignment io_alignment(const LinearConfig& c) const { return {}; }
  // How run() computes m tokens of a configuration it accepts: the path and plan (e.g. "prefill:
  // wgmma_bm256_bn128_s5_ov_tma_ei split=1 k_tiles/split=64"), for `w4a16 explain --m`. Host arithmetic only;
  // CUDA kernels plan for this machine's GPU, or without one for an H200 (132 SMs, no cluster split weighed).
  // Empty where the kernel has one way to run.
  virtual std::string describe_run(const LinearConfig& c, std::int64_t m) const { return {}; }
  // Prepared weights held by the caller (a framework's tensors, so that a layer keeps one copy of its weights in memory
  // the framework accounts for): layout_host gives the bytes of this kernel's layout for host canonical weights `w`,
  // by name; adopt returns prepared weights over the caller's arrays of those names, dtypes and shapes, on the config's
  // device, read in place (no copy: they must outlive the result and stay unchanged). adopt checks every array (present,
  // no extra, dtype, shape, device, contiguous, 16-byte aligned) and throws naming the first that differs. Kernels
  // whose layout lives only inside their PreparedWeights (the default) throw unsupported from both.
  virtual std::vector<LayoutArray> layout_host(const CanonicalView& w, const LinearConfig& c) const;
  virtual std::unique_ptr<PreparedWeights> adopt(const std::vector<LayoutView>& arrays, const LinearConfig& c) const;
};

// Checks shared by every run(): layout tag of `w` == kernel.layout(), the kernel accepts
// w.config(), x [M, K] act_dtype and out [M, N] out_dtype on the config's device, rank 2,
// inner stride 1, row strides >= the row extent, alignment (kernel.io_alignment(config)), workspace
// >= ws_needed bytes. Throws w4a16::Error naming the argument, what was expected and given.
void check_run_args(const Kernel& kernel, const PreparedWeights& w, const RunArgs& args, std::size_t ws_needed);

}  // namespace w4a16
