// Runs the built `w4a16` binary as a user runs it (tests/tools): stdout and stderr captured separately
// into files of the test's folder (stderr is then not a terminal, so progress comes as plain lines).
// W4A16_CLI overrides the compiled-in W4A16_CLI_PATH (the binaries carried to another machine).
#pragma once
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

}  // namespace w4a16::test
