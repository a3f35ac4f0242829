// Explicit instantiation of the prefill kernels for f16 activations, uint4 (packed zero points):
// every config of W4A16_PREFILL_CONFIGS (prefill_launch.cuh), and the ONE_GROUP kernels of OneGroupConfigs. One file per (dtype, scalar type)
// keeps the build parallel.
#include "prefill/prefill_launch.cuh"

namespace w4a16::kernels::cuda::prefill_detail {
const KernelEntry* kernels_f16_zeros() { return make_entries<half, true>(); }
const KernelEntry* kernels_f16_zeros_one_group() { return make_one_group_entries<half, true>(OneGroupConfigs{}); }
}  // namespace w4a16::kernels::cuda::prefill_detail
