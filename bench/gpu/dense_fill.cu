// Device fill of dense 16-bit weights from a counter hash, so that the host can recompute any
// element for the reference without holding (or uploading) the whole matrix.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dense_fill.hpp"

namespace w4a16::bench {

__global__ void dense_fill_kernel(std::uint16_t* p, std::int64_t count, std::uint64_t seed, bool bf16) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = dense_value(seed, static_cast<std::uint64_t>(i));
    p[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
  }
}

cudaError_t dense_fill(std::uint16_t* p, std::int64_t count, std::uint64_t seed, bool bf16, cudaStream_t s) {
  dense_fill_kernel<<<1024, 256, 0, s>>>(p, count, seed, bf16);
  return cudaGetLastError();
}

}  // namespace w4a16::bench
