// Hash-defined dense weights: element i of seed s is dense_value(s, i) rounded to the dtype.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace w4a16::bench {

// splitmix64 of (seed, i) mapped to [-0.05, 0.05): magnitudes like trained weights.
__host__ __device__ inline float dense_value(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (static_cast<float>(z >> 40) / 16777216.0f - 0.5f) * 0.1f;
}

cudaError_t dense_fill(std::uint16_t* p, std::int64_t count, std::uint64_t seed, bool bf16, cudaStream_t s);

}  // namespace w4a16::bench
