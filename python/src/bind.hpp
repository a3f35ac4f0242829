// Shared declarations of the binding files: the Python-visible Layer (an owned canonical
// layer) and the per-area bind functions called by module.cpp.
#pragma once
#include <memory>

#include "arrays.hpp"
#include "w4a16/core/canonical.hpp"

namespace w4a16::py {

// w4a16._core.Layer: an owned host canonical layer. Shared so that Linear objects made from
// it keep its storage alive (a CPU kernel may run straight on the canonical tensors).
struct Layer {
  std::shared_ptr<const QuantizedLinear> q;
};

inline Layer make_layer(QuantizedLinear&& q) { return Layer{std::make_shared<const QuantizedLinear>(std::move(q))}; }

void bind_layer(nb::module_& m);    // layer.cpp: Layer, converters, quantize, pack/unpack
void bind_linear(nb::module_& m);   // linear.cpp: Linear (run), kernels, explain
void bind_io(nb::module_& m);       // io.cpp: checkpoints, safetensors

}  // namespace w4a16::py
