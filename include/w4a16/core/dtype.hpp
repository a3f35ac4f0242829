// Element types of tensors and the two 4-bit scalar types of shared/FORMATS.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace w4a16 {

// Element type of a tensor in memory. Names follow safetensors ("F16", "I32", ...) in io/.
enum class DType : std::uint8_t { f16, bf16, f32, f64, i32, i64, i16, i8, u8, bool_ };

// The quantized value type (names as in vLLM).
//   uint4b8: symmetric, no zero-point tensor, z = 8 for every group (GPTQ sym=True).
//   uint4:   asymmetric, packed int32 zero points per (row, group) (AWQ, GPTQ sym=False).
enum class ScalarType : std::uint8_t { uint4, uint4b8 };

enum class Device : std::uint8_t { cpu, cuda };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f16: case DType::bf16: case DType::i16: return 2;
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
    case DType::i8: case DType::u8: case DType::bool_: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t);            // "float16", "bfloat16", "int32", ...
std::optional<DType> parse_dtype(std::string_view s);  // accepts "float16"/"fp16"/"f16"/"half", ...
std::string_view scalar_type_name(ScalarType s);  // "uint4", "uint4b8"
std::optional<ScalarType> parse_scalar_type(std::string_view s);
std::string_view device_name(Device d);           // "cpu", "cuda"

// Activation dtypes every linear kernel is specified for.
constexpr bool is_activation_dtype(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace w4a16
