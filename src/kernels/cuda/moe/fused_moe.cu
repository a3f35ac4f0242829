// Dispatch of the fused MoE launcher on (activation dtype, zero points); kernels in fused_moe.cuh.
#include <string>

#include "common.cuh"
#include "moe/fused_moe.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

bool is_supported_block(int block) { return block == 1 || block == 8 || block == 32 || block == 64; }

void launch_fused_moe(const MoeRunDev& r, cudaStream_t stream) {
  if (!is_supported_block(r.block)) fail(ErrorCode::unsupported, "block", "1, 8, 32 or 64", std::to_string(r.block));
  if (r.hidden % 64 != 0 || r.inter % 64 != 0)
    fail(ErrorCode::unsupported, "moe shape", "H % 64 == 0 and I % 64 == 0",
         "H=" + std::to_string(r.hidden) + " I=" + std::to_string(r.inter));
  if (r.bf16) {
    if (r.zeros) launch_fused_moe_t<__nv_bfloat16, true>(r, stream);
    else launch_fused_moe_t<__nv_bfloat16, false>(r, stream);
  } else {
    if (r.zeros) launch_fused_moe_t<__half, true>(r, stream);
    else launch_fused_moe_t<__half, false>(r, stream);
  }
}

}  // namespace w4a16::kernels::cuda::moe
