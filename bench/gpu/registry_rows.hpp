// Sweep rows for registered kernels by name (cuda_hybrid, cuda_decode, cuda_prefill,
// cuda_dense_cache), run through the public w4a16::Linear with the backend forced: what a
// user of the library gets, selection and argument checks included.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gpu_sweep.hpp"

namespace w4a16::bench {

// One row kernel per name; max_m sizes each layer's workspace.
std::vector<std::unique_ptr<BenchKernel>> make_registry_bench_kernels(const std::vector<std::string>& names,
                                                                      std::int64_t max_m);

}  // namespace w4a16::bench
