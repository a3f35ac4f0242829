// Instantiations of the fused MoE launcher for fp16 activations (contract: fused_moe.cuh).
#include "moe/fused_moe_launch.cuh"

namespace w4a16::kernels::cuda::moe {
template void launch_fused_moe_t<__half, false>(const MoeRunDev&, cudaStream_t);
template void launch_fused_moe_t<__half, true>(const MoeRunDev&, cudaStream_t);
}  // namespace w4a16::kernels::cuda::moe
