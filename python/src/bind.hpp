// Shared declarations of the binding files: the Python-visible Layer (an owned canonical
// layer) and the per-area bind functions called by module.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string_view>

#include "arrays.hpp"
#include "w4a16/core/canonical.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::py {

// w4a16._core.Layer: an owned host canonical layer. Shared so that Linear objects made from
// it keep its storage alive (a CPU kernel may run straight on the canonical tensors).
struct Layer {
  std::shared_ptr<const QuantizedLinear> q;
};

// CUDA arrays reach the kernels only in a CUDA build of the module; refused by name otherwise.
inline void check_cuda_built(Device d, std::string_view arg) {
#ifndef W4A16_PY_HAVE_CUDA
  if (d == Device::cuda)
    fail(ErrorCode::unsupported, arg,
         "a CPU array (this build of w4a16 has no CUDA kernels: rebuild with W4A16_ENABLE_CUDA=ON, see docs/PYTHON.md)",
         "a CUDA array");
#else
  (void)d;
  (void)arg;
#endif
}

// "uint4" / "uint4b8", refused by name otherwise (argument "scalar_type").
ScalarType parse_scalar(std::string_view s);
// A view of a host array (converters and builders read host memory): device arrays refused by name.
TensorView host_view(const InArray& a, std::string_view arg, std::string_view bits16 = "");
TensorView host_view(const std::optional<InArray>& a, std::string_view arg, std::string_view bits16 = "");  // absent: {}

// An x that a take_x (the Linear's, the Moe's) imported and checked, handed back to run as is: one import of the
// caller's array per call (a DLPack capsule can be imported only once). Bound as _core.CheckedX by linear.cpp.
struct CheckedX {
  InArray arr;      // keeps the caller's array (or the capsule's producer) alive while `view` is used
  TensorView view;  // (rows, K) of arr, checked by the take_x that made it
};

// (CheckedX, dtype, device, device_index, rows) of a checked x: what the Python side needs before run.
nb::tuple checked_x_tuple(const InArray& arr, const TensorView& x);

inline Layer make_layer(QuantizedLinear&& q) { return Layer{std::make_shared<const QuantizedLinear>(std::move(q))}; }

void bind_layer(nb::module_& m);    // layer.cpp: Layer, converters, quantize, pack/unpack
void bind_linear(nb::module_& m);   // linear.cpp: Linear (run), kernels, explain
void bind_io(nb::module_& m);       // io.cpp: checkpoints, safetensors
void bind_moe(nb::module_& m);      // moe.cpp: Moe (load, route, run, reference)

}  // namespace w4a16::py
