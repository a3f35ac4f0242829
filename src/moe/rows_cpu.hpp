// Row kernels of the CPU MoE fast path (layer_cpu.cpp): one canonical weight row dequantized to fp32,
// and fp32 dot products. Three builds: portable (rows_cpu.cpp, any x86-64 or other ISA), AVX2 + FMA
// (rows_cpu_avx2.cpp, the only file compiled with -mavx2 -mfma -mf16c) and AVX-512 (rows_cpu_avx512.cpp: the fused
// row-times-one-input kernel over x in nibble planes), each called only where the CPU has it, as the linear fast
// kernel does (src/kernels/cpu/fast.cpp). W4A16_CPU_ISA=scalar keeps the portable ones, =avx2 the AVX2 ones. The
// builds sum in different orders (rounding differs in the last bits); each is deterministic and independent of the
// thread count.
#pragma once
#include <cstdint>

namespace w4a16::moe::detail {

// The fused row kernels ask for the weight words this far ahead of each 64-byte line they read: the rows of an item
// are read one after another, and the hardware prefetcher alone kept too few lines in flight (one thread read ~3 GB/s
// of a plain row stream; 2026-12-05, docs/benchmarks/cpu.md). Past the item's last row it fetches the expert's next
// rows (another item's), which is harmless. dequant_row does not: its rows are followed by one dot per slot, and asking
// ahead there measured 0.90-0.93x at T = 64 / 256 (AVX2).
constexpr int kPrefetchBytes = 4096;

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

// The same sum with x given as nibble planes (x_planes below): planes[i * K/8 + w] = x[8 w + i] * 2^-4i (i < 7; plane 7
// unscaled) and wsum[w] = sum over i of x[8 w + i]; null where the ISA has none. 16 words of the row against 8 planes
// take one load, 8 and / convert / fma and the group's scale: ~0.25 instructions per weight (dequant_dot: ~0.8).
using PlanarDotFn = float (*)(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                              const float* planes, const float* wsum);

// A row's per-group factors for the kernels above: sc[g] = s_g and zs[g] = z_g s_g for g < groups, from the row's
// scales (16-bit bits, float16 or bfloat16) and zero points (zero_words: the row's packed word per group, its nibble at
// bit zero_shift, as in the canonical layout's [N / 8, G]; null: 8, uint4b8).
using GroupScalesFn = void (*)(const std::uint16_t* s, bool bf16, const std::int32_t* zero_words, int zero_shift, std::int64_t groups,
                               float* sc, float* zs);

struct RowKernels {
  GroupScalesFn group_scales;
  DequantRowFn dequant_row;
  DotFn dot;
  DequantDotFn dequant_dot;
  PlanarDotFn dequant_dot_planar;
  const char* isa;  // "avx512", "avx2" or "scalar"
};

// x [K] (K % 8 == 0) -> planes [8][K / 8] and wsum [K / 8] for PlanarDotFn (exact: scaling by powers of two).
void x_planes(const float* x, std::int64_t k, float* planes, float* wsum);

void group_scales_scalar(const std::uint16_t* s, bool bf16, const std::int32_t* zero_words, int zero_shift, std::int64_t groups, float* sc,
                         float* zs);
void dequant_row_scalar(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst);
float dot_scalar(const float* a, const float* b, std::int64_t n);
#if defined(W4A16_MOE_HAVE_AVX2_TU)
void group_scales_f16c(const std::uint16_t* s, bool bf16, const std::int32_t* zero_words, int zero_shift, std::int64_t groups, float* sc,
                       float* zs);
void dequant_row_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, float* dst);
float dot_avx2(const float* a, const float* b, std::int64_t n);
float dequant_dot_avx2(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs, const float* x);
#endif
#if defined(W4A16_MOE_HAVE_AVX512_TU)
float dequant_dot_planar_avx512(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                                const float* planes, const float* wsum);
#endif

// The best row kernels for this CPU (and W4A16_CPU_ISA), chosen on every call (cheap).
RowKernels row_kernels();

}  // namespace w4a16::moe::detail
