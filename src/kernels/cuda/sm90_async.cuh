// sm_90 mbarriers (the prefill kernel's TMA x tiles; also what a kernel with cp.async.bulk copies
// would wait on). Thin wrappers over PTX; every function is device-only. Compiled below sm_90 (an sm_8x build's copies
// of the kernels that use them: the wgmma prefill configs, the bulk decode kernel) they trap instead: the plans pick
// those kernels only where the code that runs on the device was compiled for sm_90a (kernel_arch.hpp).
//   mbar_*  an mbarrier in shared memory (a 64-bit word, 8-byte aligned, by its shared address)
#pragma once
#include <cstdint>

namespace w4a16::kernels::cuda {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900

__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the inits visible to the async proxy (the TMA unit completes transactions on them);
// a CTA is a cluster of one here, so .cluster scope covers it. Once per CTA, before a barrier.
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also expects `bytes` of transactions in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Wait until the phase of parity `parity` completed (acquire, CTA scope). No poll limit with a
// trap: a thread that may exit while a wgmma is in flight makes ptxas inject warpgroup waits
// (C7517) or, inside a divergent branch, serialize every wgmma (C7518). A wrong expect-tx count or
// a missing arrival therefore hangs: the device runs bound every step by a timeout.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
#else
__device__ __forceinline__ void mbar_init(std::uint32_t, std::uint32_t) { __trap(); }
__device__ __forceinline__ void mbar_fence_init() { __trap(); }
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t, std::uint32_t) { __trap(); }
__device__ __forceinline__ void mbar_arrive(std::uint32_t) { __trap(); }
__device__ __forceinline__ void mbar_wait(std::uint32_t, std::uint32_t) { __trap(); }
#endif
}  // namespace w4a16::kernels::cuda
