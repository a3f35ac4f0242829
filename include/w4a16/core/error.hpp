// The one error type of the library. Every rejection names the argument, what was
// expected and what was given:
//   zeros: expected int32 [N/8, G] packed 8 x uint4 along N = [512, 32], got float16 [4096, 32]
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace w4a16 {

enum class ErrorCode : int {
  invalid_argument = 1,  // a value out of its allowed set (group size 48, M < 0, ...)
  dtype_mismatch,        // a tensor of the wrong element type
  shape_mismatch,        // a tensor of the wrong rank or extent, or a shape that does not divide
  layout_mismatch,       // wrong packing/layout tag, non-contiguous where contiguity is required
  alignment,             // a pointer or stride not aligned as the kernel requires
  unsupported,           // a valid configuration that no (chosen) kernel implements
  format_error,          // a checkpoint or file that breaks its format's rules
  io_error,              // the operating system refused (open, mmap, write)
  not_found,             // a named tensor, layer, file or kernel that does not exist
  cuda_error,            // the CUDA runtime or a library (cuBLAS, NCCL) reported failure
  internal,              // a broken invariant of this library: a bug
};

std::string_view error_code_name(ErrorCode c);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, "<arg>: expected <expected>, got <got>").
[[noreturn]] void fail(ErrorCode code, std::string_view arg, std::string_view expected, std::string_view got);
// Throws Error(code, message) for messages that do not fit the expected/got shape.
[[noreturn]] void fail(ErrorCode code, std::string message);

}  // namespace w4a16
