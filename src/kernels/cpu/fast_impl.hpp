// Internal to src/kernels/cpu: the problem description fast.cpp hands to an implementation
// (fast_scalar.cpp, fast_avx2.cpp, fast_vnni.cpp, fast_amx.cpp) after validating arguments and gathering x.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fast.hpp"

namespace w4a16::kernels::cpu::impl {

struct Problem {
  const FastWeights* w = nullptr;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t groups = 0, group_len = 0;  // G, K-extent of a group
  // x[:, perm] in fp32, [m][k] contiguous (exact).
  const float* xf = nullptr;
  const float* xsum = nullptr;  // [m][G]: sum over each group of the unscaled xf; null for prefill
  // xf in 16-bit integers (XPrep::pairs16; x_pairs16 below): xq [m][K / 2] pairs, xs16 [m][xblocks] scales.
  const std::int32_t* xq = nullptr;
  const float* xs16 = nullptr;
  std::int64_t xblocks = 0;
  // x as given (fast_amx.cpp reads it itself: XPrep::gather false, xf null): act dtype, row stride x_stride elements,
  // columns x[:, perm] where perm is not null.
  const std::uint16_t* x = nullptr;
  std::int64_t x_stride = 0;
  const std::int32_t* perm = nullptr;
  void* out = nullptr;          // [m][n] act_dtype, row stride out_stride elements
  std::int64_t out_stride = 0;
  DType out_dtype = DType::f16;
  int threads = 1;
};

// How an implementation wants x prepared.
struct XPrep {
  bool sums = false;      // compute xsum
  bool gather = true;     // fill xf (false: the implementation reads Problem::x)
  bool pairs16 = false;   // and xq / xs16 from it (the integer dot-product kernels)
};

XPrep avx2_xprep(std::int64_t m);
void run_avx2(const Problem& p);
// fast_vnni.cpp (x gathered, with sums and 16-bit pairs).
void run_vnni(const Problem& p);
void run_scalar(const Problem& p);
// fast_amx.cpp (x not gathered, no sums: it converts x itself). amx_usable: the OS grants this process the tile state
// (false in builds without that file).
bool amx_usable();
void run_amx(const Problem& p);
// The same kernel on a canonical host layer read in place: out fp32 [m][out_stride] = x[:, perm] . W^T + bias.
void run_amx_canonical(const CanonicalView& w, DType act, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride, float* out,
                       std::int64_t out_stride, int threads);

// x in 16-bit integers for the integer dot-product kernels (fast_vnni.cpp, fast_avx2.cpp's decode; fast.cpp converts
// the gathered rows when XPrep::pairs16 asks): one row x [K]
// fp32 -> q [K / 2] int32, pair i of word j at 4 j + i (x16[8j + i] in the low half, x16[8j + i + 4] in the high), and
// xs [ceil(K / kX16Block)]: x16 = round(x / xs), xs per block the least power of two with max |x| / xs <= 32767.
constexpr std::int64_t kX16Block = 128;
void x_pairs16(const float* x, std::int64_t K, std::int32_t* q, float* xs);
// The exponent e of a block's scale xs = 2^e: the least with mx / 2^e < 32767 for its largest |x| = mx (finite), from
// mx / 32767 in double (exact enough that no rounding crosses a power of two), at least -149 (2^-149, the least
// float: a block below 32767 of it is still within range). Also the AMX kernel's int8 float16 path (fast_amx.cpp).
inline int x16_exponent(float mx) {
  int e = 0;
  if (mx > 0.f) std::frexp(static_cast<double>(mx) / 32767.0, &e);
  return std::max(e, -149);
}

// Writes fp32 values v[0..count) + bias (if any) to out row `m`, columns n0 .. n0 + count.
void store_row(const Problem& p, std::int64_t m, std::int64_t n0, const float* v, std::int64_t count);

}  // namespace w4a16::kernels::cpu::impl
