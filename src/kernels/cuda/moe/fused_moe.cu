// Dispatch of the fused MoE launcher on (activation dtype, zero points); kernels in fused_moe.cuh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "moe/fused_moe.cuh"
#include "prefill/prefill.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

bool is_supported_block(int block) { return block == 1 || block == 8 || block == 16 || block == 32 || block == 64 || block == 128; }

bool grouped_supported() {
  static const bool ok = prefill_grouped_supported(device_capability());
  return ok;
}

bool grouped_path(int block) {
  if (block == 128) return true;
  if ((block != 16 && block != 32 && block != 64) || !grouped_supported()) return false;
  const char* env = std::getenv("W4A16_MOE_WGMMA");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_MOE_WGMMA", "0 or 1", env);
  return *env == '1';
}

void grouped_configs(int block, int* config1, int* config2) {
  // Early-issue TMA configs (prefill_launch.cuh). Measured on the H200 (docs/benchmarks/moe.md), Qwen3-30B-A3B fp16:
  // block 128 (stop 28, T = 4096): both GEMMs on bm128_bn128 1116 us, GEMM 1 on bm128_bn256 1198 (both on it 1271,
  // GEMM 2 alone on it 1188); block 32 (stop 51, T = 256 / 384): the 3-CTA bm32 tile 157.1 / 164.6 us, the 2-CTA one
  // 173.3 / 180.3, the mma.sync kernel 179.9 / 190.7; block 16: the one-warpgroup bm16_bn128 tile at 3 CTAs per SM
  // (bn64 tiles hold an odd number of 64-row gate / up blocks: GEMM 1 cannot take them).
  constexpr int kBm16Occ3 = 35, kBm32Occ3 = 38, kBm64Occ2 = 23, kBm128Occ2 = 32;
  *config1 = *config2 = block == 16 ? kBm16Occ3 : block == 32 ? kBm32Occ3 : block == 64 ? kBm64Occ2 : kBm128Occ2;
  const char* env = std::getenv("W4A16_MOE_GROUPED_CONFIGS");
  if (env && *env) {
    int a = -1, b = -1;
    char tail = 0;
    const int n = prefill_config_count();
    if (std::sscanf(env, "%d,%d%c", &a, &b, &tail) != 2 || a < 0 || b < 0 || a >= n || b >= n || prefill_config(a).bm != block ||
        prefill_config(b).bm != block)
      fail(ErrorCode::invalid_argument, "W4A16_MOE_GROUPED_CONFIGS", "two prefill configs \"c1,c2\" whose tile is " + std::to_string(block) + " tokens", env);
    *config1 = a;
    *config2 = b;
  }
}

void launch_fused_moe(const MoeRunDev& r, cudaStream_t stream) {
  if (!is_supported_block(r.block)) fail(ErrorCode::unsupported, "block", "1, 8, 16, 32, 64 or 128", std::to_string(r.block));
  if (r.block == 16 && !grouped_path(16))
    fail(ErrorCode::unsupported, "block", "16 only on the grouped wgmma path (capability 90, the sm_90a build, W4A16_MOE_WGMMA not 0)",
         std::to_string(device_capability()));
  if (r.block == 128 && !grouped_supported())
    fail(ErrorCode::unsupported, "block", "128 only on capability 90 with the sm_90a build (the grouped wgmma path)",
         std::to_string(device_capability()));
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
