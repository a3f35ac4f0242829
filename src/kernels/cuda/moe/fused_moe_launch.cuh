// launch_fused_moe_t<T, kZeros>: GEMM 1 (+ SiLU * up) -> GEMM 2 -> weighted reduction, on one
// stream, no allocation, no synchronisation. Included by fused_moe_{f16,bf16}.cu only, which
// instantiate it (explicit instantiation keeps the two dtypes compiling in parallel).
#pragma once
#include <string>

#include "common.cuh"
#include "moe/fused_moe.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

template <class T, bool kZeros, int kBM, int kWarps, bool kDirect>
void launch_block_config(const MoeRunDev& r, const GemmParams& g1, const GemmParams& g2, int nblocks,
                         cudaStream_t stream) {
  moe_gemm_kernel<T, kZeros, kBM, kWarps, true, kDirect>
      <<<dim3(nblocks, r.inter / 16), kWarps * 32, 0, stream>>>(g1);
  W4A16_CUDA_TRY(cudaGetLastError());
  moe_gemm_kernel<T, kZeros, kBM, kWarps, false, kDirect>
      <<<dim3(nblocks, r.hidden / 32), kWarps * 32, 0, stream>>>(g2);
  W4A16_CUDA_TRY(cudaGetLastError());
}

template <class T, bool kZeros>
void launch_fused_moe_t(const MoeRunDev& r, cudaStream_t stream) {
  if (r.tokens == 0) return;
  const int slots = static_cast<int>(r.tokens * r.top_k);
  GemmParams g1{};
  g1.qweight = static_cast<const uint4*>(r.w13.qweight);
  g1.scales = r.w13.scales;
  g1.zeros = r.w13.zeros;
  g1.n = r.w13.n;
  g1.k = r.w13.k;
  g1.group_len = r.w13.group_len;
  g1.groups = r.w13.groups;
  g1.in = r.x;
  g1.in_div = r.top_k;
  g1.sorted = r.sorted_ids;
  g1.block_expert = r.block_expert;
  g1.total = r.total;
  g1.topk_ids = r.topk_ids;
  g1.sentinel = slots;
  g1.inter = r.inter;
  g1.h_out = r.h;
  GemmParams g2 = g1;
  g2.qweight = static_cast<const uint4*>(r.w2.qweight);
  g2.scales = r.w2.scales;
  g2.zeros = r.w2.zeros;
  g2.n = r.w2.n;
  g2.k = r.w2.k;
  g2.group_len = r.w2.group_len;
  g2.groups = r.w2.groups;
  g2.in = r.h;
  g2.in_div = 1;
  g2.y_out = r.y;
  switch (r.block) {
    case 1: launch_block_config<T, kZeros, 8, 8, true>(r, g1, g2, slots, stream); break;
    case 8: launch_block_config<T, kZeros, 8, 8, false>(r, g1, g2, r.max_blocks, stream); break;
    case 32: launch_block_config<T, kZeros, 32, 4, false>(r, g1, g2, r.max_blocks, stream); break;
    case 64: launch_block_config<T, kZeros, 64, 4, false>(r, g1, g2, r.max_blocks, stream); break;
    default: fail(ErrorCode::unsupported, "block", "1, 8, 32 or 64", std::to_string(r.block));
  }
  const std::int64_t n = r.tokens * r.hidden;
  moe_reduce_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      r.y, r.topk_weights, static_cast<int>(r.tokens), r.top_k, r.hidden, static_cast<T*>(r.out));
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace w4a16::kernels::cuda::moe
