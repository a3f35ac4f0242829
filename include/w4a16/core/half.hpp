// Host-side fp16 / bf16 <-> fp32 conversions (IEEE round-to-nearest-even), no CUDA needed.
// Tensors store 16-bit floats as raw std::uint16_t bits on the host.
#pragma once
#include <cstdint>
#include <cstring>

#include "w4a16/core/dtype.hpp"

namespace w4a16 {

inline float bf16_to_float(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

inline float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
      u = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_half(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0u));
  if (absu >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absu < 0x38800000u) {  // result is subnormal or zero: scale into the 2^-24 grid, round to even
    if (absu < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half of the smallest subnormal
    std::uint32_t man = (absu & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(absu >> 23);  // 14 + (113 - exp) - ... places to drop
    std::uint32_t q = man >> shift;
    std::uint32_t rem = man & ((1u << shift) - 1u);
    std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  std::uint32_t rounding = 0xfffu + ((absu >> 13) & 1u);
  absu += rounding;
  return static_cast<std::uint16_t>(sign | ((absu - 0x38000000u) >> 13));
}

// 16-bit float of either kind to fp32 and back; `t` must be f16 or bf16.
inline float f16x_to_float(DType t, std::uint16_t bits) {
  return t == DType::bf16 ? bf16_to_float(bits) : half_to_float(bits);
}
inline std::uint16_t float_to_f16x(DType t, float f) {
  return t == DType::bf16 ? float_to_bf16(f) : float_to_half(f);
}

}  // namespace w4a16
