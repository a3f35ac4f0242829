// Linear: create() decides (choose), prepares and sizes the workspace once; run()/forward()
// only launch. forward() uses the workspace allocated at create(), so no call allocates.
#include "w4a16/linear.hpp"

#include <cstdlib>
#include <new>
#include <optional>

#include "adapters.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {

namespace {

// The capability of opt's device (0 on the CPU); throws where this build has no CUDA kernels.
int capability_of(const LinearOptions& opt) {
  if (opt.max_m < 1) fail(ErrorCode::invalid_argument, "max_m", ">= 1", std::to_string(opt.max_m));
  if (opt.device != Device::cuda) return 0;
#if W4A16_HAVE_CUDA
  return registry_detail::cuda_capability(opt.device_index);
#else
  fail(ErrorCode::unsupported, "device", "cpu (this build of w4a16 has no CUDA kernels)", "cuda");
#endif
}

}  // namespace

Linear Linear::create(const CanonicalView& w, const LinearOptions& opt) {
  const int capability = capability_of(opt);
#if W4A16_HAVE_CUDA
  // Prepare uploads and the workspace land on the requested device.
  std::optional<registry_detail::CudaDeviceScope> scope;
  if (opt.device == Device::cuda) scope.emplace(opt.device_index);
#endif
  Linear lin;
  lin.choose_kernel(LinearConfig::from(w, opt.act_dtype, opt.device, capability), opt);
  lin.prepared_ = std::shared_ptr<PreparedWeights>(lin.kernel_->prepare(w, lin.config_, opt.stream));
  lin.allocate_workspace(opt);
  return lin;
}

Linear Linear::adopt(std::string_view layout, const std::vector<LayoutView>& arrays, LinearConfig c, const LinearOptions& opt) {
  const int capability = capability_of(opt);
#if W4A16_HAVE_CUDA
  std::optional<registry_detail::CudaDeviceScope> scope;
  if (opt.device == Device::cuda) scope.emplace(opt.device_index);
#endif
  c.device = opt.device;
  c.capability = capability;
  c.out_dtype = c.act_dtype;
  if (std::string why = c.invalid_reason(); !why.empty())
    fail(ErrorCode::invalid_argument, "config", "a layer shared/FORMATS.md allows", c.describe() + " (" + why + ")");
  Linear lin;
  lin.choose_kernel(c, opt);
  if (lin.kernel_->layout() != layout) {
    std::string want = "the layout of the kernel chosen for ";
    want.append(c.describe()).append(": ").append(lin.kernel_->name()).append(" runs ").append(lin.kernel_->layout());
    fail(ErrorCode::layout_mismatch, "layout", want, layout);
  }
  lin.prepared_ = std::shared_ptr<PreparedWeights>(lin.kernel_->adopt(arrays, lin.config_));
  lin.allocate_workspace(opt);
  return lin;
}

void Linear::choose_kernel(const LinearConfig& c, const LinearOptions& opt) {
  config_ = c;
  SelectOptions so;
  so.backend = opt.backend;
  decision_ = choose(config_, so);
  kernel_ = decision_.chosen;
}

void Linear::allocate_workspace(const LinearOptions& opt) {
  ws_bytes_ = kernel_->workspace_bytes(config_, opt.max_m);
  if (ws_bytes_ > 0 && opt.own_workspace) {
    if (opt.device == Device::cpu) {
      // 256-byte alignment satisfies every kernel's io_alignment().
      void* p = ::operator new(ws_bytes_, std::align_val_t(256));
      owned_ws_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(256)); });
    } else {
#if W4A16_HAVE_CUDA
      owned_ws_ = registry_detail::cuda_alloc(ws_bytes_, opt.device_index);
#endif
    }
  }
}

void Linear::run(const TensorView& x, const TensorView& out, void* workspace, void* stream) const {
  run(x, out, workspace, workspace ? ws_bytes_ : 0, stream);
}

void Linear::run(const TensorView& x, const TensorView& out, void* workspace, std::size_t workspace_bytes, void* stream) const {
  if (!kernel_) fail(ErrorCode::invalid_argument, "Linear", "a Linear made by Linear::create", "an empty Linear");
  RunArgs a;
  a.x = x;
  a.out = out;
  a.workspace = workspace;
  a.workspace_bytes = workspace ? workspace_bytes : 0;
  a.stream = stream;
  kernel_->run(*prepared_, a);
}

std::size_t Linear::workspace_bytes_for(std::int64_t m) const {
  if (!kernel_) fail(ErrorCode::invalid_argument, "Linear", "a Linear made by Linear::create", "an empty Linear");
  if (m < 0) fail(ErrorCode::invalid_argument, "m", ">= 0", std::to_string(m));
  return m == 0 ? 0 : kernel_->workspace_bytes(config_, m);
}

void Linear::forward(const TensorView& x, const TensorView& out, void* stream) const {
  run(x, out, owned_ws_.get(), stream);
}

}  // namespace w4a16
