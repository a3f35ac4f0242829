// Row kernels of the CPU MoE fast path (layer_cpu.cpp): one canonical weight row dequantized to fp32,
// and fp32 dot products. Two builds: portable (rows_cpu.cpp, any x86-64 or other ISA) and AVX2 + FMA
// (rows_cpu_avx2.cpp, the only file compiled with -mavx2 -mfma; called only where the CPU has them,
// as the linear fast kernel does, src/kernels/cpu/fast.cpp). W4A16_CPU_ISA=scalar keeps the portable
// ones. The two builds sum in different orders (rounding differs in the last bits); each is
// deterministic and independent of the thread count.
#pragma once
#include <cstdint>

namespace w4a16::moe::detail {

// dst[k] = (q[k] - z_g) * s_g for k in [0, K): q the row's canonical words (K / 8 int32, nibble i of word
// j is k = 8 j + i), sc[g] = s_g and zs[g] = z_g * s_g per group of group_len (a multiple of 8) values.
using DequantRowFn = void (*)(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                              float* dst);
// sum over i < n of a[i] * b[i].
using DotFn = float (*)(const float* a, const float* b, std::int64_t n);
// sum over k of (q[k] - z_g) s_g x[k]: dequant_row then dot without the row in memory (a row used by one
// token slot only); null where the ISA has none (the portable build: dequant_row + dot are faster there).
using DequantDotFn = float (*)(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                               const float* x);

struct RowKernels {
  DequantRowFn dequant_row;
  DotFn dot;
  DequantDotFn dequant_dot;
  const char* isa;  // "avx2" or "scalar"
};

void dequant_row_scalar(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst);
float dot_scalar(const float* a, const float* b, std::int64_t n);
#if defined(W4A16_MOE_HAVE_AVX2_TU)
void dequant_row_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst);
float dot_avx2(const float* a, const float* b, std::int64_t n);
float dequant_dot_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, const float* x);
#endif

// The best row kernels for this CPU (and W4A16_CPU_ISA), chosen on every call (cheap).
RowKernels row_kernels();

}  // namespace w4a16::moe::detail
