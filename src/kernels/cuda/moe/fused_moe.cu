// Dispatch of the fused MoE launcher on (activation dtype, zero points); kernels in fused_moe.cuh.
#include <atomic>
#include <string>

#include "common.cuh"
#include "moe/fused_moe.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

namespace {
std::atomic<std::int64_t> g_one_launches{0};
unsigned long long* g_trace = nullptr;
int g_trace_calls = 0;
std::size_t g_trace_per_launch = 0;
std::atomic<int> g_trace_next{0};
}  // namespace
std::int64_t one_launches() { return g_one_launches.load(); }
void count_one_launch() { ++g_one_launches; }
void set_one_trace(unsigned long long* buf, int calls, std::size_t per_launch) {
  g_trace = calls > 0 ? buf : nullptr;
  g_trace_calls = calls;
  g_trace_per_launch = per_launch;
  g_trace_next = 0;
}
unsigned long long* one_trace_slot(std::size_t per_launch) {
  if (!g_trace || per_launch > g_trace_per_launch) return nullptr;
  return g_trace + static_cast<std::size_t>(g_trace_next++ % g_trace_calls) * g_trace_per_launch;
}

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
