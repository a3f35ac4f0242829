// The CPU reference GEMM: the oracle every other kernel is checked against.
//
//   y[M, N] = x[:, perm] . W^T + bias
//   w    canonical layout (w4a16/core/canonical.hpp), host view; any scalar type, group size,
//        bias, act-order perm
//   x    [M, K] float16 | bfloat16 | float32, host, rows may be strided (stride[1] == 1)
//   out  [M, N] float16 | bfloat16 | float32, host, rows may be strided (stride[1] == 1)
//   M    any, including 0 (then nothing is read or written)
//
// Naive and readable on purpose: each weight row is dequantized straight from the packed
// nibbles (w = (q - z) * s) and every product is accumulated in f64, so the only rounding
// is the final store into out's dtype. Checked by tests/kernels_cpu (w4a16_test_kernels_cpu).
#pragma once
#include <initializer_list>
#include <string_view>

#include "w4a16/core/canonical.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::kernels::cpu {

// Validates w, x and out (each error names the argument) and computes out = x[:, perm] . W^T + bias.
void reference_gemm(const CanonicalView& w, const TensorView& x, const TensorView& out);

namespace detail {
// The operand checks reference_gemm and fast_gemm share. `t` must be a host matrix
// [rows, cols] (rows < 0: any) of one of `allowed`, inner stride 1, row stride >= cols,
// data non-null unless empty. `dims` names the shape in messages, e.g. "[M, K]".
void check_matrix(const TensorView& t, std::string_view arg, std::string_view dims, std::int64_t rows,
                  std::int64_t cols, std::initializer_list<DType> allowed);
// Host weights with consistent pointers (the view came from make_canonical_view).
void check_host_weights(const CanonicalView& w, std::string_view arg);
}  // namespace detail

}  // namespace w4a16::kernels::cpu
