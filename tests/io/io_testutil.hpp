// Helpers for the io tests: a temporary folder under /tmp, raw file writing (for files the
// library's writer would never produce), expect_error.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "w4a16/core/error.hpp"

namespace w4a16::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::path("/tmp") /
           ("w4a16-io-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file from a header text and data bytes, unpadded; `len` overrides the length field.
inline std::string raw_safetensors(const std::string& header, const std::string& data, long long len = -1) {
  std::uint64_t h = len < 0 ? header.size() : static_cast<std::uint64_t>(len);
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((h >> (8 * i)) & 0xff);
  return s + header + data;
}

template <class F>
void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << (needles.empty() ? "" : needles[0]) << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
  }
}

}  // namespace w4a16::test
