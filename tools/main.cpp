// w4a16: the command-line front door of the library (docs/CLI.md).
// Exit codes: 0 success; 2 usage error (unknown flag, bad value); 1 any other error.
// Every error is ONE line on stderr: "w4a16 <subcommand>: <message>", where the message is
// the library's w4a16::Error text (it names the file, tensor or argument).
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

using namespace w4a16::cli;

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {inspect_command(), synth_command(),   quantize_command(), run_layer_command(),
                                           bench_command(),   explain_command(), demo_command(),      moe_command()};
  return all;
}

void print_main_help(std::FILE* f) {
  std::fprintf(f,
               "usage: w4a16 <command> [options]   (w4a16 <command> --help for its options)\n\n"
               "W4A16 (4-bit weight, 16-bit activation) linear layers: checkpoints, kernels, benchmarks.\n\n"
               "commands:\n");
  for (const auto& c : commands()) std::fprintf(f, "  %-10s %s\n", c.spec.name.c_str(), c.spec.summary.c_str());
  std::fprintf(f, "\nStart with: w4a16 demo\n");
}

// A message on one line: library texts that list several kernels hold one per line.
std::string one_line(const std::string& s) {
  std::string out, line;
  std::istringstream in(s);
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    if (!out.empty()) out += out.back() == ':' ? " " : "; ";
    out += line.substr(b, e - b + 1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_main_help(stderr);
    return 2;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    print_main_help(stdout);
    return 0;
  }
  const Command* cmd = nullptr;
  for (const auto& c : commands())
    if (c.spec.name == name) cmd = &c;
  if (!cmd) {
    std::fprintf(stderr, "w4a16: unknown command '%s' (see w4a16 --help)\n", name.c_str());
    return 2;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    ParsedArgs parsed = parse_args(cmd->spec, rest);
    if (parsed.help) {
      std::fputs(help_text(cmd->spec).c_str(), stdout);
      return 0;
    }
    return cmd->run(parsed);
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "w4a16 %s: %s\n", name.c_str(), one_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {  // w4a16::Error and anything the standard library throws
    std::fflush(stdout);
    std::fprintf(stderr, "w4a16 %s: %s\n", name.c_str(), one_line(e.what()).c_str());
    return 1;
  }
}
