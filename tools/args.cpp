#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace w4a16::cli {

void usage_fail(const std::string& arg, const std::string& expected, const std::string& got) {
  throw UsageError(arg + ": expected " + expected + ", got " + got);
}

namespace {

const OptionSpec* find_option(const CommandSpec& spec, const std::string& name) {
  for (const auto& o : spec.options)
    if (o.name == name) return &o;
  return nullptr;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ','))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::int64_t parse_int(const std::string& text, const std::string& arg) {
  std::int64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (text.empty() || ec != std::errc() || p != e) usage_fail(arg, "an integer", "'" + text + "'");
  return v;
}

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();  // a non-repeatable option given twice: the last one wins, as in most tools
}

std::string ParsedArgs::get_or(const std::string& name, const std::string& fallback) const {
  auto v = get(name);
  return v ? *v : fallback;
}

const std::vector<std::string>& ParsedArgs::all(const std::string& name) const {
  static const std::vector<std::string> none;
  auto it = values_.find(name);
  return it == values_.end() ? none : it->second;
}

std::int64_t ParsedArgs::get_int(const std::string& name, std::int64_t fallback) const {
  auto v = get(name);
  return v ? parse_int(*v, "--" + name) : fallback;
}

std::vector<std::int64_t> ParsedArgs::get_int_list(const std::string& name) const {
  std::vector<std::int64_t> out;
  for (const auto& s : get_list(name)) out.push_back(parse_int(s, "--" + name));
  return out;
}

std::vector<std::string> ParsedArgs::get_list(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& v : all(name))
    for (auto& s : split_commas(v)) out.push_back(std::move(s));
  return out;
}

std::string ParsedArgs::get_choice(const std::string& name, const std::vector<std::string>& allowed,
                                   const std::string& fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end())
    usage_fail("--" + name, "one of " + join(allowed, ", "), "'" + *v + "'");
  return *v;
}

ParsedArgs parse_args(const CommandSpec& spec, const std::vector<std::string>& args) {
  ParsedArgs out;
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
  bool only_positionals = false;  // after "--"
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a.size() < 2 || a[0] != '-' || a == "-") {
      out.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) usage_fail(a, "an option of the form --name (see --help)", "'" + a + "'");
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* o = find_option(spec, name);
    if (!o) throw UsageError("unknown option --" + name + " (see w4a16 " + spec.name + " --help)");
    std::string value;
    if (o->metavar.empty()) {
      if (inline_value) usage_fail("--" + name, "no value (it is a flag)", "'" + *inline_value + "'");
    } else if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= args.size()) usage_fail("--" + name, "a value " + o->metavar, "nothing");
      value = args[++i];
    }
    auto& slot = out.values_[name];
    if (!o->repeatable) slot.clear();
    slot.push_back(value);
  }
  if (out.positionals.size() != spec.positionals.size()) {
    std::string expected = spec.positionals.empty()
                               ? std::string("no positional arguments")
                               : std::to_string(spec.positionals.size()) + " positional argument" +
                                     (spec.positionals.size() > 1 ? "s " : " ") + join(spec.positionals, " ");
    std::string got = out.positionals.empty() ? std::string("none") : std::string(1, '\'').append(join(out.positionals, "' '")).append(1, '\'');
    usage_fail("arguments", expected, got);
  }
  return out;
}

std::string help_text(const CommandSpec& spec) {
  std::ostringstream s;
  s << "usage: w4a16 " << spec.name;
  for (const auto& p : spec.positionals) s << " " << p;
  if (!spec.options.empty()) s << " [options]";
  s << "\n\n" << spec.summary << "\n";
  if (!spec.description.empty()) s << "\n" << spec.description << "\n";
  s << "\noptions:\n";
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& o : spec.options) {
    std::string left = "--" + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    std::string right = o.help;
    if (!o.default_text.empty()) right += " (default: " + o.default_text + ")";
    if (o.repeatable) right += " [repeatable]";
    rows.emplace_back(left, right);
  }
  rows.emplace_back("--help, -h", "print this help and exit");
  std::size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.first.size());
  for (const auto& r : rows) s << "  " << r.first << std::string(width + 2 - r.first.size(), ' ') << r.second << "\n";
  return s.str();
}

}  // namespace w4a16::cli
