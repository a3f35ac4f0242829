// check_run_args: the argument checks shared by every kernel's run(). Kernels call it first,
// so a wrong layout, dtype, shape, stride, alignment or workspace fails loudly by name and
// never reaches a kernel.
#include "w4a16/registry/kernel.hpp"

#include <cstdint>
#include <string>

#include "w4a16/core/error.hpp"

namespace w4a16 {

namespace {

// x or out: rank 2 [M, cols] of `dtype` on `device`, inner stride 1, row stride >= cols,
// base and row stride (bytes) multiples of `align`.
void check_matrix(const TensorView& t, std::string_view arg, DType dtype, std::int64_t cols, std::string_view cols_name,
                  Device device, std::size_t align) {
  std::string want = std::string(dtype_name(dtype)) + " [M, " + std::string(cols_name) + " = " + std::to_string(cols) + "]";
  if (!t.defined()) fail(ErrorCode::invalid_argument, arg, want, "no tensor");
  if (t.rank != 2) fail(ErrorCode::shape_mismatch, arg, want + " (rank 2)", describe(t));
  if (t.dtype != dtype) fail(ErrorCode::dtype_mismatch, arg, want, describe(t));
  if (t.shape[1] != cols) fail(ErrorCode::shape_mismatch, arg, want, describe(t));
  if (t.shape[0] < 0) fail(ErrorCode::shape_mismatch, arg, want + " with M >= 0", describe(t));
  if (t.device != device)
    fail(ErrorCode::invalid_argument, arg, want + " on " + std::string(device_name(device)),
         describe(t) + (t.device == Device::cpu ? " on cpu" : ""));
  if (t.shape[0] == 0) return;  // nothing is read or written
  if (t.data == nullptr) fail(ErrorCode::invalid_argument, arg, want, "a null data pointer");
  if (t.stride[1] != 1) fail(ErrorCode::layout_mismatch, arg, want + " with inner stride 1", describe(t));
  if (t.shape[0] > 1 && t.stride[0] < cols)
    fail(ErrorCode::layout_mismatch, arg, want + " with row stride >= " + std::to_string(cols),
         describe(t) + " (row stride " + std::to_string(t.stride[0]) + ")");
  const std::size_t elem = dtype_size(dtype);
  const std::size_t a = align > elem ? align : elem;
  if (reinterpret_cast<std::uintptr_t>(t.data) % a != 0) check_aligned(t.data, a, std::string(arg) + ".data");
  if (t.shape[0] > 1 && (static_cast<std::size_t>(t.stride[0]) * elem) % a != 0)
    fail(ErrorCode::alignment, std::string(arg) + ".stride[0]",
         "a row stride of a multiple of " + std::to_string(a) + " bytes (" + std::to_string(a / elem) + " elements)",
         std::to_string(t.stride[0]) + " elements");
}

// The default Kernel::layout_host / adopt: the kernel's layout lives only inside its PreparedWeights.
[[noreturn]] void no_caller_layout(const Kernel& k) {
  fail(ErrorCode::unsupported, "kernel", "a kernel whose prepared layout a caller may hold (the cuda.tc16x64.v1 kernels)",
       std::string(k.name()) + " (layout " + std::string(k.layout()) + ")");
}

}  // namespace

std::vector<LayoutArray> Kernel::layout_host(const CanonicalView&, const LinearConfig&) const { no_caller_layout(*this); }

std::unique_ptr<PreparedWeights> Kernel::adopt(const std::vector<LayoutView>&, const LinearConfig&) const { no_caller_layout(*this); }

void check_run_args(const Kernel& kernel, const PreparedWeights& w, const RunArgs& args, std::size_t ws_needed) {
  const std::string kname(kernel.name());
  if (w.layout() != kernel.layout())
    fail(ErrorCode::layout_mismatch, "weights",
         "layout \"" + std::string(kernel.layout()) + "\" (the layout kernel " + kname + " prepares and runs)",
         "weights prepared in layout \"" + std::string(w.layout()) + "\"");
  const LinearConfig& c = w.config();
  if (std::string why = kernel.can_implement(c); !why.empty())
    fail(ErrorCode::unsupported, "weights", "a config kernel " + kname + " implements",
         c.describe() + " (" + why + ")");
  const IoAlignment align = kernel.io_alignment(c);
  check_matrix(args.x, "x", c.act_dtype, c.k, "K", c.device, align.x);
  check_matrix(args.out, "out", c.out_dtype, c.n, "N", c.device, align.out);
  if (args.x.shape[0] != args.out.shape[0])
    fail(ErrorCode::shape_mismatch, "out", "M = " + std::to_string(args.x.shape[0]) + " rows (the rows of x)",
         describe(args.out));
  if (args.workspace_bytes < ws_needed)
    fail(ErrorCode::invalid_argument, "workspace",
         ">= " + std::to_string(ws_needed) + " bytes for M = " + std::to_string(args.x.shape[0]) + " (kernel " + kname + ")",
         std::to_string(args.workspace_bytes) + " bytes");
  if (ws_needed > 0 && args.workspace == nullptr)
    fail(ErrorCode::invalid_argument, "workspace", std::to_string(ws_needed) + " bytes", "a null pointer");
  if (ws_needed > 0 && align.workspace > 1) check_aligned(args.workspace, align.workspace, "workspace");
}

}  // namespace w4a16
