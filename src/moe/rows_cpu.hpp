// Row kernels of the CPU MoE fast path (layer_cpu.cpp): one canonical weight row dequantized to fp32,
// and fp32 dot products. Four builds: portable (rows_cpu.cpp, any x86-64 or other ISA), AVX2 + FMA
// (rows_cpu_avx2.cpp, the only file compiled with -mavx2 -mfma -mf16c), AVX-512 (rows_cpu_avx512.cpp: the fused
// row-times-one-input kernel over x in nibble planes) and AVX-512 VNNI (rows_cpu_vnni.cpp: the same over x in 16-bit
// pairs), each called only where the CPU has it, as the linear fast kernel does (src/kernels/cpu/fast.cpp). W4A16_CPU_ISA=scalar keeps the portable ones, =avx2 the AVX2 ones. The
// builds sum in different orders (rounding differs in the last bits); each is deterministic and independent of the
// thread count.
#pragma once
#include <cstdint>
#include <vector>

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

// The same sum with x prepared once per input by the kernel's own PlanarInputFn (below) into `planes` and
// wsum[w] = sum over i of x[8 w + i]; null where the ISA has none. Two kernels:
//   nibble planes (AVX-512, x_planes): planes[i * K/8 + w] = x[8 w + i] * 2^-4i (i < 7; plane 7 unscaled), fp32 exact;
//     16 words of the row against 8 planes take one load, 8 and / convert / fma and the group's scale: ~0.25
//     instructions per weight (dequant_dot: ~0.8).
//   16-bit pairs (AVX-512 VNNI, x_q16): per 128 values of x (16 words) one scale xs = max |x| / 32767 and the values as
//     int16 round(x / xs), paired as vpdpwssd reads them; the row's nibbles i and i + 4 of a word are one shift and one
//     and, so 16 words take 3 shifts, 4 ands, 4 vpdpwssd (int32, exact) and one convert: 1.5x the planes' rate on rows
//     in L1 (2026-12-05). x carries 15 bits below its block's largest value: finer than float16's 11-bit mantissa
//     near that value, so the error stays far below the activations' own rounding.
using PlanarDotFn = float (*)(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                              const float* planes, const float* wsum);
// The same for `count` inputs of one row (the token slots of one expert): out[c] from planes[c], wsum[c]. The 16-bit
// pairs' kernel extracts the row's nibble pairs once per step for up to 8 inputs a pass (4 + 3 count instructions a
// step instead of 7 count); null for the nibble planes.
using PlanarMultiFn = void (*)(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                               const float* const* planes, const float* const* wsum, int count, float* out);
// x [K] (K % 8 == 0) -> the planar kernel's input: planes (planar_floats(K) floats, 64-byte aligned) and wsum [K / 8].
using PlanarInputFn = void (*)(const float* x, std::int64_t k, float* planes, float* wsum);
// Floats of `planes` that either PlanarInputFn writes for K values, rounded up to 16 so that consecutive inputs stay
// 64-byte aligned (the 16-bit pairs are read by aligned loads).
inline std::int64_t planar_floats(std::int64_t k) {
  const std::int64_t steps = (k / 8 + 15) / 16;            // 16 words of the row per step
  const std::int64_t n = k > steps * 65 ? k : steps * 65;  // nibble planes: K; 16-bit pairs: 64 int32 + one scale per step
  return (n + 15) / 16 * 16;
}

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
  PlanarInputFn planar_input;             // the input dequant_dot_planar reads (null with it)
  PlanarMultiFn dequant_dot_planar_multi;  // several inputs at once (null but for the 16-bit pairs)
  const char* isa;  // "avx512-vnni", "avx512", "avx2" or "scalar"
};

// x [K] (K % 8 == 0) -> planes [8][K / 8] and wsum [K / 8] for the nibble-plane kernel (exact: scaling by powers of two).
void x_planes(const float* x, std::int64_t k, float* planes, float* wsum);
// x [K] -> the 16-bit pairs of dequant_dot_q16: per step s of 16 words, 64 int32 at planes + 64 s (pair i of lane l:
// x16[8 w + i] | x16[8 w + i + 4] << 16, w = 16 s + l; zero past K), then the steps' scales xs[s] (float) after the
// last step's pairs, and wsum [K / 8]. A step whose x holds a NaN or an infinity gets a NaN scale: its rows' sums are NaN.
void x_q16(const float* x, std::int64_t k, float* planes, float* wsum);

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
#if defined(W4A16_MOE_HAVE_VNNI_TU)
float dequant_dot_q16_vnni(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc, const float* zs,
                           const float* planes, const float* wsum);
void dequant_dot_q16_multi_vnni(const std::uint32_t* q, std::int64_t k, std::int64_t group_len, const float* sc,
                                const float* zs, const float* const* planes, const float* const* wsum, int count, float* out);
#endif

// The best row kernels for this CPU (and W4A16_CPU_ISA), chosen on every call (cheap).
RowKernels row_kernels();

// Every planar kernel this CPU can run with its input builder (the nibble planes, then the 16-bit pairs), best last:
// row_kernels takes the last; tests check each.
struct PlanarKernel {
  PlanarDotFn dot;
  PlanarInputFn input;
  PlanarMultiFn multi;  // null for the nibble planes
  const char* isa;      // "avx512" or "avx512-vnni"
};
std::vector<PlanarKernel> planar_kernels_here();

}  // namespace w4a16::moe::detail
