// Programmatic dependent launch (sm_90), the device side, shared by every kernel family that is
// launched with cudaLaunchAttributeProgrammaticStreamSerialization (decode, MoE). Both are no-ops
// for a launch without the attribute and below sm_90.
//   pdl_wait():              waits until the previous kernel of the stream has completed and its
//                            writes are visible; read before it only what was complete before that
//                            kernel started (constant, prepared weights).
//   pdl_launch_dependents(): lets the next kernel of the stream start its own pre-wait prologue.
//                            Called right after pdl_wait(), so that what the next kernel reads before
//                            its wait is older than this kernel's predecessor.
// The host side, launch_pdl(): one launch with programmatic stream serialization where `pdl` asks
// for it and the device runs this build's sm_90a code (graph capture keeps the programmatic edges); plain stream order
// otherwise.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "common.cuh"  // W4A16_CUDA_TRY
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, bool pdl, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl && device_code_arch() == 90 ? 1 : 0;  // sm_80 code has no griddepcontrol: plain stream order
  W4A16_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, args...));
}

}  // namespace w4a16::kernels::cuda
