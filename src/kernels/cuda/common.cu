#include "common.cuh"

#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

void throw_if_error(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    fail(ErrorCode::cuda_error, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

int device_capability(int device) {
  if (device < 0) W4A16_CUDA_TRY(cudaGetDevice(&device));
  int major = 0, minor = 0;
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

int device_sm_count(int device) {
  if (device < 0) W4A16_CUDA_TRY(cudaGetDevice(&device));
  int n = 0;
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

}  // namespace w4a16::kernels::cuda
