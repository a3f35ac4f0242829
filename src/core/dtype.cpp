#include "w4a16/core/dtype.hpp"

#include <string>

namespace w4a16 {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::i16: return "int16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::bool_: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "float16" || s == "fp16" || s == "f16" || s == "half") return DType::f16;
  if (s == "bfloat16" || s == "bf16") return DType::bf16;
  if (s == "float32" || s == "fp32" || s == "f32" || s == "float") return DType::f32;
  if (s == "float64" || s == "fp64" || s == "f64" || s == "double") return DType::f64;
  if (s == "int32" || s == "i32") return DType::i32;
  if (s == "int64" || s == "i64") return DType::i64;
  if (s == "int16" || s == "i16") return DType::i16;
  if (s == "int8" || s == "i8") return DType::i8;
  if (s == "uint8" || s == "u8") return DType::u8;
  if (s == "bool") return DType::bool_;
  return std::nullopt;
}

std::string_view scalar_type_name(ScalarType s) { return s == ScalarType::uint4 ? "uint4" : "uint4b8"; }

std::optional<ScalarType> parse_scalar_type(std::string_view s) {
  if (s == "uint4") return ScalarType::uint4;
  if (s == "uint4b8") return ScalarType::uint4b8;
  return std::nullopt;
}

std::string_view device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace w4a16
