// CUDA helpers shared by every kernel family: error propagation and device queries.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace w4a16::kernels::cuda {

// Throws w4a16::Error(cuda_error) naming `what` if e != cudaSuccess.
void throw_if_error(cudaError_t e, const char* what);

// Compute capability as 10 * major + minor (90 on H100/H200), of the current device.
int device_capability(int device = -1);
int device_sm_count(int device = -1);

}  // namespace w4a16::kernels::cuda

#define W4A16_CUDA_TRY(expr) ::w4a16::kernels::cuda::throw_if_error((expr), #expr)
