// TMA tensor maps, host side (tensor_map.cuh).
#include "tensor_map.cuh"

#include <cuda_runtime.h>

#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // not sticky; clear it for the caller
      f = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  if (fn == nullptr)
    fail(ErrorCode::unsupported, "cuTensorMapEncodeTiled", "a driver entry point (driver for CUDA 12.0 or newer)", "not found");
  return fn;
}

}  // namespace w4a16::kernels::cuda
