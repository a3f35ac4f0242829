// Internal to src/kernels/cpu: the problem description fast.cpp hands to an implementation
// (fast_scalar.cpp, fast_avx2.cpp, fast_vnni.cpp, fast_amx.cpp) after validating arguments and gathering x.
#pragma once
#include <cstdint>

#include "fast.hpp"

namespace w4a16::kernels::cpu::impl {

struct Problem {
  const FastWeights* w = nullptr;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t groups = 0, group_len = 0;  // G, K-extent of a group
  // x[:, perm] in fp32, [m][k] contiguous. For the AVX2 decode path element k is multiplied
  // by 2^-4(k % 8) for k % 8 < 7 (see fast_avx2.cpp), for the others it is exact.
  const float* xf = nullptr;
  const float* xsum = nullptr;  // [m][G]: sum over each group of the unscaled xf; null for prefill
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
  bool prescale = false;  // multiply xf[k] by 2^-4(k % 8) for k % 8 < 7
  bool sums = false;      // compute xsum
  bool gather = true;     // fill xf (false: the implementation reads Problem::x)
};

XPrep avx2_xprep(std::int64_t m);
void run_avx2(const Problem& p);
// fast_vnni.cpp (x gathered unscaled, with sums).
void run_vnni(const Problem& p);
void run_scalar(const Problem& p);
// fast_amx.cpp (x unscaled, no sums: it converts x itself). amx_usable: the OS grants this process the tile state
// (false in builds without that file).
bool amx_usable();
void run_amx(const Problem& p);
// The same kernel on a canonical host layer read in place: out fp32 [m][out_stride] = x[:, perm] . W^T + bias.
void run_amx_canonical(const CanonicalView& w, DType act, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride, float* out,
                       std::int64_t out_stride, int threads);

// Writes fp32 values v[0..count) + bias (if any) to out row `m`, columns n0 .. n0 + count.
void store_row(const Problem& p, std::int64_t m, std::int64_t n0, const float* v, std::int64_t count);

}  // namespace w4a16::kernels::cpu::impl
