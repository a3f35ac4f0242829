// Helpers shared by the format tests: rejection checks, bit-exact comparison, views of plain
// vectors as checkpoint tensors.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "w4a16/core/error.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::test {

// f() must throw an Error of this code whose text mentions `needle` (usually the argument name).
template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

inline bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

inline TensorView view_of(std::vector<std::int32_t>& v, std::vector<std::int64_t> shape) {
  return TensorView(v.data(), DType::i32, shape);
}
inline TensorView view_of(std::vector<std::uint16_t>& v, DType dt, std::vector<std::int64_t> shape) {
  return TensorView(v.data(), dt, shape);
}

}  // namespace w4a16::test
