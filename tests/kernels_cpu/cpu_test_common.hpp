// Helpers shared by the CPU kernel tests: random layer configurations and output buffers
// with poisoned padding between rows (a write outside [M, N] shows up as changed bits).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "testutil.hpp"
#include "w4a16/core/canonical.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::test {

inline const int kGroupSizes[] = {32, 64, 128, 256, kChannelwise};

// K = group length x an odd factor (channelwise: 8 x an odd factor); N = 8 x an odd factor,
// or (uint4b8, no zero points) sometimes not a multiple of 8 at all.
inline QuantSpec random_spec(int group_size, ScalarType scalar, int max_k_factor = 5) {
  auto& g = rng();
  const int odd[] = {1, 3, 5, 7};
  std::uniform_int_distribution<int> pick(0, 3);
  QuantSpec s;
  s.group_size = group_size;
  s.scalar = scalar;
  int kf = odd[pick(g)];
  while (kf > max_k_factor) kf = odd[pick(g)];
  s.k = group_size == kChannelwise ? 8 * (kf * 8 + 1 + 2 * pick(g)) : static_cast<std::int64_t>(group_size) * kf;
  const std::int64_t nodd[] = {1, 3, 5, 7};
  s.n = 8 * nodd[pick(g)];
  if (scalar == ScalarType::uint4b8 && pick(g) == 0) s.n += 5;  // N % 8 != 0 is legal without zeros
  return s;
}

// A [rows, cols] matrix of 16/32-bit elements whose row stride is cols + pad, every element
// (pad included) set to a quiet NaN, so tests can check that exactly [rows, cols] is written.
struct PoisonedMatrix {
  DType dtype;
  std::int64_t rows, cols, stride;
  std::vector<std::uint32_t> storage;  // enough for either element size

  PoisonedMatrix(DType dt, std::int64_t r, std::int64_t c, std::int64_t pad)
      : dtype(dt), rows(r), cols(c), stride(c + pad), storage(static_cast<std::size_t>(r * (c + pad)) + 1) {
    for (std::int64_t i = 0; i < r * stride; ++i) set_bits(i, poison());
  }
  std::uint32_t poison() const { return dtype == DType::f32 ? 0x7fc00001u : poison_bits(dtype); }
  void set_bits(std::int64_t i, std::uint32_t b) {
    if (dtype == DType::f32)
      storage[static_cast<std::size_t>(i)] = b;
    else
      reinterpret_cast<std::uint16_t*>(storage.data())[i] = static_cast<std::uint16_t>(b);
  }
  std::uint32_t bits(std::int64_t i) const {
    return dtype == DType::f32 ? storage[static_cast<std::size_t>(i)]
                               : reinterpret_cast<const std::uint16_t*>(storage.data())[i];
  }
  double value(std::int64_t r, std::int64_t c) const {
    std::uint32_t b = bits(r * stride + c);
    if (dtype == DType::f32) {
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    return f16x_to_float(dtype, static_cast<std::uint16_t>(b));
  }
  std::vector<double> values() const {
    std::vector<double> v;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) v.push_back(value(r, c));
    return v;
  }
  TensorView view() {
    TensorView t(storage.data(), dtype, {rows, cols});
    t.stride[0] = stride;
    return t;
  }
  // Number of elements inside [rows, cols] that are not finite, and of pad elements changed.
  std::int64_t unwritten() const {
    std::int64_t bad = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) bad += !std::isfinite(value(r, c));
    return bad;
  }
  std::int64_t pad_touched() const {
    std::int64_t bad = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = cols; c < stride; ++c) bad += bits(r * stride + c) != poison();
    return bad;
  }
};

// x as a strided view over 16-bit storage from random_act.
inline TensorView act_view(std::vector<std::uint16_t>& x, DType dt, std::int64_t m, std::int64_t k, std::int64_t stride) {
  TensorView t(x.data(), dt, {m, k});
  t.stride[0] = stride;
  return t;
}

// Runs f and checks it throws a w4a16::Error of `code` whose message starts with "<arg>: ".
template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& arg) {
  try {
    f();
    ADD_FAILURE() << "expected an error naming " << arg;
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(arg + ": ", 0), 0u) << "message does not name " << arg << ": " << e.what();
  }
}

}  // namespace w4a16::test
