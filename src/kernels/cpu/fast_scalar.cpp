// Portable fallback of fast_gemm (cpu.fast.v1 layout, fast.hpp), for CPUs without AVX2.
//   x   p.xf [M][K] fp32, gathered (x[:, perm]) and unscaled; p.xsum [M][G] group sums
//   w   qweight [Nb][K/8][8] u32, scales [Nb][G][8], zeros [Nb][G] (uint4)
//   out [M][N] act dtype
// Per (row block, x row, group): acc[l] = sum_k q * x in fp32, then out[l] += s * (acc - z * sum_k x),
// the same factoring as the AVX2 decode kernel; the lane loop is written so compilers vectorize it.
// Configurations: all that fast_supports accepts. Check: w4a16_test_kernels_cpu (CpuFast*, isa=scalar).
#include <algorithm>

#include "fast_impl.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::kernels::cpu::impl {

void run_scalar(const Problem& p) {
  const FastWeights& w = *p.w;
  const std::int64_t M = p.m, K = p.k, G = p.groups, words = K / 8, wpg = p.group_len / 8;  // words per group
  const DType sdt = w.scale_dtype;
  const bool zp = !w.zeros.empty();
#pragma omp parallel for schedule(static) num_threads(p.threads)
  for (std::int64_t b = 0; b < w.blocks; ++b) {
    const std::uint32_t* qb = w.qweight.data() + b * words * kBlockRows;  // (K/8, 8)
    const std::uint16_t* sb = w.scales.data() + b * G * kBlockRows;      // (G, 8)
    for (std::int64_t m = 0; m < M; ++m) {
      const float* xr = p.xf + m * K;
      float y[kBlockRows] = {};
      for (std::int64_t g = 0; g < G; ++g) {
        float acc[kBlockRows] = {};
        for (std::int64_t j = g * wpg; j < (g + 1) * wpg; ++j) {
          const std::uint32_t* wv = qb + j * kBlockRows;
          for (int i = 0; i < 8; ++i) {
            const float xv = xr[8 * j + i];
            for (int l = 0; l < kBlockRows; ++l) acc[l] += static_cast<float>((wv[l] >> (4 * i)) & 15u) * xv;
          }
        }
        const float xs = p.xsum[m * G + g];
        const std::uint32_t zw = zp ? w.zeros[static_cast<std::size_t>(b * G + g)] : 0x88888888u;  // uint4b8: z = 8
        for (int l = 0; l < kBlockRows; ++l) {
          const float z = static_cast<float>((zw >> (4 * l)) & 15u);
          y[l] += f16x_to_float(sdt, sb[g * kBlockRows + l]) * (acc[l] - z * xs);
        }
      }
      const std::int64_t n0 = b * kBlockRows;
      store_row(p, m, n0, y, std::min<std::int64_t>(kBlockRows, p.n - n0));
    }
  }
}

}  // namespace w4a16::kernels::cpu::impl
