#include "w4a16/core/error.hpp"

namespace w4a16 {

std::string_view error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::dtype_mismatch: return "dtype_mismatch";
    case ErrorCode::shape_mismatch: return "shape_mismatch";
    case ErrorCode::layout_mismatch: return "layout_mismatch";
    case ErrorCode::alignment: return "alignment";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::format_error: return "format_error";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::cuda_error: return "cuda_error";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

void fail(ErrorCode code, std::string_view arg, std::string_view expected, std::string_view got) {
  std::string m;
  m.reserve(arg.size() + expected.size() + got.size() + 24);
  m.append(arg).append(": expected ").append(expected).append(", got ").append(got);
  throw Error(code, std::move(m));
}

void fail(ErrorCode code, std::string message) { throw Error(code, std::move(message)); }

}  // namespace w4a16
