// Runs the built `w4a16` binary as a user runs it (tests/tools): stdout and stderr captured separately
// into files of the test's folder (stderr is then not a terminal, so progress comes as plain lines).
// W4A16_CLI overrides the compiled-in W4A16_CLI_PATH (the binaries carried to another machine). CliTest: the
// fixture of both CLI suites (a fresh folder per test).
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace w4a16::test {

struct CliResult {
  int rc = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline CliResult run_cli(const std::string& dir, const std::string& args) {
  const std::string out = (std::filesystem::path(dir) / ".stdout").string(), err = (std::filesystem::path(dir) / ".stderr").string();
  const char* bin = std::getenv("W4A16_CLI");
  const std::string cmd = std::string("'") + (bin && *bin ? bin : W4A16_CLI_PATH) + "' " + args + " >'" + out + "' 2>'" + err + "' </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// A test with a fresh temporary folder (removed after) in which it runs the binary.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "w4a16-cli-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& rel) const { return (std::filesystem::path(dir_) / rel).string(); }
  // Runs `w4a16 <args>` (stdout and stderr captured separately, W4A16_CLI overrides the binary).
  CliResult cli(const std::string& args) const { return run_cli(dir_, args); }
  std::string dir_;
};

}  // namespace w4a16::test
