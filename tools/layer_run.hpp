// Running one quantized layer through w4a16::Linear on the CPU or CUDA, and the same input
// through the cpu_reference kernel (the oracle), for `run-layer` and `demo`.
#pragma once
#include <string>

#include "w4a16/core/canonical.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::cli {

// The oracle every --check compares against (registry name).
inline constexpr const char* kReferenceKernel = "cpu_reference";

struct LayerRun {
  std::string kernel;         // the kernel w4a16::choose() picked (or the forced --backend)
  HostTensor y;               // [M, N], dtype of x, on the host
  double median_ms = 0;       // wall time of one forward (CUDA: including the synchronize)
  std::size_t weight_bytes = 0;
};

// x: host [M, K] f16/bf16. backend "" = let the registry choose. repeats >= 1 timed calls
// after one warm-up call; 0 = a single timed call.
LayerRun run_linear(const QuantizedLinear& w, const HostTensor& x, Device device, const std::string& backend, int repeats);

// y of the cpu_reference kernel for the same layer and input.
HostTensor run_reference(const QuantizedLinear& w, const HostTensor& x);

// --backend NAME must be a registered kernel; not_found listing the registered names otherwise.
void check_backend_name(const std::string& name, const std::string& arg);

}  // namespace w4a16::cli
