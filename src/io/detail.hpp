// Helpers shared by the readers of src/io (not installed).
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "w4a16/core/error.hpp"

namespace w4a16::io::detail {

// The whole file as bytes (config.json, an index); io_error naming the path if it cannot be opened.
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorCode::io_error, p.string() + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace w4a16::io::detail
