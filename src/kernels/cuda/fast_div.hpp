// n / d for 0 <= n < 2^31 by a multiply-high, an add and a shift instead of the ~20 instructions of a
// 32-bit division (I2F, MUFU.RCP, F2I and the fix-ups): d's multiplier and shift are made once on the host.
// Granlund and Montgomery, "Division by invariant integers using multiplication" (PLDI 1994):
// l = ceil(log2 d), m = floor(2^32 (2^l - d) / d) + 1, n / d = (mulhi(n, m) + n) >> l, exact for n < 2^31
// (mulhi(n, m) < n, so the sum stays below 2^32). Host and device alike: tests/gpu/decode/test_decode_host.cpp
// checks it against the division on the host.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define W4A16_HD __host__ __device__
#else
#define W4A16_HD
#endif

namespace w4a16::kernels::cuda {

struct FastDiv {
  std::uint32_t mul = 1;  // d = 1: (0 + n) >> 0
  int shift = 0;
  FastDiv() = default;
  explicit FastDiv(std::uint32_t d) {  // d >= 1
    while ((std::uint64_t{1} << shift) < d) ++shift;
    mul = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1);
  }
  W4A16_HD int div(int n) const {
    const auto u = static_cast<std::uint32_t>(n);
    const auto hi = static_cast<std::uint32_t>((static_cast<std::uint64_t>(u) * mul) >> 32);
    return static_cast<int>((hi + u) >> shift);
  }
};

}  // namespace w4a16::kernels::cuda

#undef W4A16_HD
