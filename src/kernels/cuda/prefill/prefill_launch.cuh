// Internal: the table of compiled prefill kernels (one entry per config x dtype x scalar type),
// filled by the explicit instantiation files prefill_inst_*.cu. Not a public header.
#pragma once
#include <cuda_runtime.h>

#include "prefill/prefill_kernel.cuh"

namespace w4a16::kernels::cuda::prefill_detail {

using KernelFn = void (*)(KernelParams);

struct KernelEntry {
  KernelFn fn;
  int smem_bytes;  // dynamic shared memory: STAGES * BM * 128 + 1024 (alignment slack)
};

// The configurations, in the order of kPrefillConfigs (prefill.cu). Keep the two in sync:
// prefill.cu static_asserts the count.
// X(wgmma, BM, WG, MB, STAGES, OVERLAP, MINB)
#define W4A16_PREFILL_CONFIGS(X)                \
  X(true, 256, 2, 1, 4, false, 1) /* 0 */        \
  X(true, 128, 2, 1, 4, false, 1) /* 1 */        \
  X(true, 64, 2, 1, 5, false, 1) /* 2 */         \
  X(true, 64, 1, 1, 5, false, 1) /* 3 */         \
  X(false, 128, 1, 2, 4, false, 1) /* 4 */       \
  X(false, 64, 1, 2, 4, false, 1) /* 5 */        \
  X(true, 256, 2, 1, 4, true, 1) /* 6 */         \
  X(true, 128, 2, 1, 4, true, 1) /* 7 */         \
  X(true, 64, 2, 1, 5, true, 1) /* 8 */          \
  X(true, 64, 1, 1, 5, true, 1) /* 9 */          \
  X(true, 64, 2, 1, 4, true, 2) /* 10 */         \
  X(true, 64, 1, 1, 4, true, 4) /* 11 */

constexpr int kNumConfigs = 12;

// Entries for one (dtype, scalar type): defined in prefill_inst_<dtype>_<scalar>.cu.
const KernelEntry* kernels_f16_zeros();
const KernelEntry* kernels_f16_sym();
const KernelEntry* kernels_bf16_zeros();
const KernelEntry* kernels_bf16_sym();

template <class T, bool ZEROS>
const KernelEntry* make_entries() {
#define W4A16_ENTRY(WGMMA, BM, WG, MB, ST, OV, MINB) \
  KernelEntry{&prefill_kernel<T, BM, WG, MB, ST, WGMMA, OV, MINB, ZEROS>, ST * BM * 128 + 1024},
  static const KernelEntry table[kNumConfigs] = {W4A16_PREFILL_CONFIGS(W4A16_ENTRY)};
#undef W4A16_ENTRY
  return table;
}

}  // namespace w4a16::kernels::cuda::prefill_detail
