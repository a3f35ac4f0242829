// Helpers shared by the converters of src/formats (not installed).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "w4a16/core/canonical.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::formats::detail {

// Tensors may come straight from a memory-mapped safetensors file, whose data need not be
// 4-byte aligned (the format guarantees no alignment), so words are read through memcpy.
inline std::uint32_t load_u32(const void* base, std::int64_t i) {
  std::uint32_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + 4 * i, 4);
  return v;
}
inline std::uint16_t load_u16(const void* base, std::int64_t i) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + 2 * i, 2);
  return v;
}
inline int nibble(std::uint32_t word, int i) { return static_cast<int>((word >> (4 * i)) & 0xfu); }

inline bool absent(const TensorView& t) { return t.data == nullptr && t.rank == 0; }

// A host, contiguous tensor of the given dtype and rank, with data for its elements.
inline void check_input(const TensorView& t, const std::string& arg, DType dtype, int rank, const std::string& what) {
  if (absent(t)) fail(ErrorCode::invalid_argument, arg, std::string(dtype_name(dtype)) + " " + what, "no tensor");
  if (t.dtype != dtype) fail(ErrorCode::dtype_mismatch, arg, std::string(dtype_name(dtype)) + " " + what, describe(t));
  if (t.rank != rank) fail(ErrorCode::shape_mismatch, arg, std::string(dtype_name(dtype)) + " " + what, describe(t));
  if (t.device != Device::cpu) fail(ErrorCode::invalid_argument, arg, "a host tensor", describe(t));
  if (!t.is_contiguous()) fail(ErrorCode::layout_mismatch, arg, "a contiguous row-major tensor", describe(t));
  if (t.data == nullptr && t.numel() > 0) fail(ErrorCode::invalid_argument, arg, what, "a null data pointer");
}

inline void check_scales(const TensorView& t, const std::string& arg, const std::string& what) {
  if (absent(t)) fail(ErrorCode::invalid_argument, arg, "float16 or bfloat16 " + what, "no tensor");
  if (t.dtype != DType::f16 && t.dtype != DType::bf16)
    fail(ErrorCode::dtype_mismatch, arg, "float16 or bfloat16 " + what, describe(t));
  check_input(t, arg, t.dtype, 2, what);
}

inline void check_host_view(Device d, const std::string& fn) {
  if (d != Device::cpu) fail(ErrorCode::invalid_argument, fn, "a host (cpu) canonical view", "a cuda view");
}

inline std::string group_text(int g) { return g == -1 ? std::string("channelwise") : std::to_string(g); }

inline void check_group_size(int g, const std::string& arg) {
  if (!(g == 32 || g == 64 || g == 128 || g == 256 || g == -1))
    fail(ErrorCode::unsupported, arg, "one of 32, 64, 128, 256, -1 (channelwise)", std::to_string(g));
}

// Copies an optional bias [N] of f16/bf16/f32 into `dst` (already [N] of the scales' dtype):
// a 16-bit bias of the scales' dtype is copied bit for bit, others are rounded once.
void copy_bias(const TensorView& bias, std::int64_t n, HostTensor& dst, const std::string& arg);

// The scales and bias of a checkpoint written from `w` (AWQ and GPTQ agree here): scales
// [G, N], the canonical [N, G] transposed; bias [N] bit for bit, allocated only if `w` has one.
inline void export_scales_and_bias(const CanonicalView& w, HostTensor& scales, HostTensor& bias) {
  const std::int64_t N = w.spec.n, G = w.spec.groups();
  scales = HostTensor(w.scale_dtype, {G, N});
  auto* sc = scales.ptr<std::uint16_t>();
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n) sc[g * N + n] = w.scales[n * G + g];
  if (w.has_bias()) {
    bias = HostTensor(w.scale_dtype, {N});
    std::memcpy(bias.data(), w.bias, bias.nbytes());
  }
}

}  // namespace w4a16::formats::detail
