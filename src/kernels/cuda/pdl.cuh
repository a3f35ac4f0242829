// Programmatic dependent launch (sm_90), the device side, shared by every kernel family that is
// launched with cudaLaunchAttributeProgrammaticStreamSerialization (decode, MoE). Both are no-ops
// for a launch without the attribute and below sm_90.
//   pdl_wait():              waits until the previous kernel of the stream has completed and its
//                            writes are visible; read before it only what was complete before that
//                            kernel started (constant, prepared weights).
//   pdl_launch_dependents(): lets the next kernel of the stream start its own pre-wait prologue.
//                            Called right after pdl_wait(), so that what the next kernel reads before
//                            its wait is older than this kernel's predecessor.
#pragma once

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

}  // namespace w4a16::kernels::cuda
