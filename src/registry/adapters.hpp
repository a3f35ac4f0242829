// Internal to the registry: the kernel adapters (one object per registered kernel) and the
// CUDA runtime helpers Linear needs. Adapters wrap the kernel functions of src/kernels,
// which know nothing of the registry; nothing outside src/registry includes this file.
#pragma once
#include <cstddef>
#include <memory>

#include "w4a16/registry/kernel.hpp"

namespace w4a16::registry_detail {

// cpu_adapters.cpp
const Kernel& cpu_reference_kernel();  // "cpu_reference", layout cpu.canonical
const Kernel& cpu_fast_kernel();       // "cpu_fast", layout cpu.fast.v1

#if W4A16_HAVE_CUDA
// cuda_adapters.cpp
const Kernel& cuda_decode_kernel();       // "cuda_decode",      cuda.tc16x64.v1, sm_80+
const Kernel& cuda_prefill_kernel();      // "cuda_prefill",     cuda.tc16x64.v1, sm_90a
const Kernel& cuda_hybrid_kernel();       // "cuda_hybrid",      cuda.tc16x64.v1, sm_90a: decode or prefill by M
const Kernel& cuda_dense_cache_kernel();  // "cuda_dense_cache", cuda.dense_cache.v1 (opt-in fp16/bf16 copy)

bool cuda_build_runs_on(int capability);  // this build holds code that runs on it (kernels::cuda::code_arch)
std::string cuda_build_archs();           // kernels::cuda::build_archs
int cuda_capability(int device_index);    // 10 * major + minor
std::shared_ptr<void> cuda_alloc(std::size_t bytes, int device_index);  // cudaMalloc, freed by the deleter

// Makes `device_index` current for the scope (prepare uploads there), restores the previous.
class CudaDeviceScope {
 public:
  explicit CudaDeviceScope(int device_index);
  ~CudaDeviceScope();
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;

 private:
  int previous_ = 0;
};
#endif

}  // namespace w4a16::registry_detail
