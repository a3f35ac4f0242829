// Explicit instantiation of the prefill kernels for bf16 activations, uint4b8 (z = 8):
// every config of W4A16_PREFILL_CONFIGS (prefill_launch.cuh), and the ONE_GROUP kernels of OneGroupConfigs. One file per (dtype, scalar type)
// keeps the build parallel.
#include "prefill/prefill_launch.cuh"

namespace w4a16::kernels::cuda::prefill_detail {
const KernelEntry* kernels_bf16_sym() { return make_entries<__nv_bfloat16, false>(); }
const KernelEntry* kernels_bf16_sym_one_group() { return make_one_group_entries<__nv_bfloat16, false>(OneGroupConfigs{}); }
}  // namespace w4a16::kernels::cuda::prefill_detail
