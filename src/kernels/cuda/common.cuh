// CUDA helpers shared by every kernel family: error propagation and device queries.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <string_view>

namespace w4a16::kernels::cuda {

// Throws w4a16::Error(cuda_error) naming `what` if e != cudaSuccess.
void throw_if_error(cudaError_t e, const char* what);

// Compute capability as 10 * major + minor (90 on H100/H200), of the current device.
int device_capability(int device = -1);
int device_sm_count(int device = -1);

// The architecture of the code this build runs on a device of `capability`: 90 (the sm_90a cubin, on exactly 9.0),
// 80 (the sm_80 cubin on exactly 8.0: A100 / A800; or - W4A16_CUDA_PTX - the compute_80 PTX, which the driver compiles
// for any newer device), or 0 (no code of this build runs there). Host code asks this, not the capability, before it plans an sm_90
// feature (thread-block clusters, bulk copies, programmatic dependent launch, wgmma): an H200 running a build of 80 with
// the PTX runs sm_80 code, whose copies of those kernels trap.
int code_arch(int capability);
// The same rule for a given W4A16_CUDA_ARCHS list ("90a,80") and PTX flag: a pure function, for host tests.
int code_arch_for(std::string_view archs, bool ptx, int capability);
// code_arch of the current (or a given) device, read once per device: what every launch asks before it requests PDL.
int device_code_arch(int device = -1);
// This build's W4A16_CUDA_ARCHS, comma-separated, with "+ptx" where the PTX rides along (for messages).
std::string build_archs();

}  // namespace w4a16::kernels::cuda

#define W4A16_CUDA_TRY(expr) ::w4a16::kernels::cuda::throw_if_error((expr), #expr)
