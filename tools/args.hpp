// A small command-line parser for the w4a16 tool: each subcommand declares its options and
// positionals once (CommandSpec); parse() checks argv against it and help_text() prints it,
// so the help and the accepted flags cannot drift apart.
//   --name VALUE, --name=VALUE, --flag, and repeatable options (--skip a --skip b).
// Every mistake is a UsageError (exit code 2) naming the argument.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace w4a16::cli {

// A mistake in how the tool was called (unknown flag, missing value, value not allowed).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void usage_fail(const std::string& arg, const std::string& expected, const std::string& got);

struct OptionSpec {
  std::string name;           // without the leading "--", e.g. "group-size"
  std::string metavar{};      // "G"; empty for a flag that takes no value
  std::string help{};
  std::string default_text{};  // shown in --help as "(default: ...)"; empty = none
  bool repeatable = false;    // may be given several times; values are collected in order
};

struct CommandSpec {
  std::string name;                      // "quantize"
  std::string summary;                   // one line for `w4a16 --help`
  std::vector<std::string> positionals;  // names shown in usage, all required ("IN_DIR", "OUT_DIR")
  std::vector<OptionSpec> options;       // --help is added by the parser
  std::string description;               // paragraphs after the usage line
};

class ParsedArgs {
 public:
  bool help = false;
  std::vector<std::string> positionals;

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  const std::vector<std::string>& all(const std::string& name) const;  // repeatable options
  // Typed access; a value that does not parse is a UsageError naming --name.
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  // Comma-separated integers ("1,2,16"), possibly given several times; empty if absent.
  std::vector<std::int64_t> get_int_list(const std::string& name) const;
  // Comma-separated words, possibly given several times.
  std::vector<std::string> get_list(const std::string& name) const;
  // The value must be one of `allowed`; returns fallback when absent.
  std::string get_choice(const std::string& name, const std::vector<std::string>& allowed,
                         const std::string& fallback) const;

 private:
  friend ParsedArgs parse_args(const CommandSpec&, const std::vector<std::string>&);
  std::map<std::string, std::vector<std::string>> values_;  // flags hold one empty string
};

// Parses the arguments after the subcommand name. With --help/-h anywhere, returns with
// help = true and checks nothing else.
ParsedArgs parse_args(const CommandSpec& spec, const std::vector<std::string>& args);
std::string help_text(const CommandSpec& spec);

std::int64_t parse_int(const std::string& text, const std::string& arg);  // UsageError if not an integer

}  // namespace w4a16::cli
