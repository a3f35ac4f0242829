#include "cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "w4a16/core/half.hpp"

namespace w4a16::cli {

DType parse_act_dtype(const std::string& text, const std::string& arg) {
  auto d = parse_dtype(text);
  if (!d || !is_activation_dtype(*d)) usage_fail(arg, "float16 or bfloat16", "'" + text + "'");
  return *d;
}

Device parse_device(const std::string& text, const std::string& arg) {
  if (text == "cpu") return Device::cpu;
  if (text == "cuda") {
#ifdef W4A16_TOOL_HAVE_CUDA
    return Device::cuda;
#else
    usage_fail(arg, "cpu (this build has no CUDA kernels; configure with -DW4A16_ENABLE_CUDA=ON)", "'cuda'");
#endif
  }
  usage_fail(arg, "cpu or cuda", "'" + text + "'");
}

void with_context(const std::string& context, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    throw Error(e.code(), context + ": " + e.what());
  }
}

double rel_error_16(const std::uint16_t* a, const std::uint16_t* b, std::int64_t count, DType dtype) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    double x = f16x_to_float(dtype, a[i]), y = f16x_to_float(dtype, b[i]);
    if (!std::isfinite(x) || !std::isfinite(y)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

HostTensor poisoned_output(std::int64_t m, std::int64_t n, DType dtype) {
  HostTensor y(dtype, {m, n});
  std::fill_n(y.ptr<std::uint16_t>(), y.numel(), std::uint16_t{dtype == DType::bf16 ? std::uint16_t{0x7fc1} : std::uint16_t{0x7e01}});
  return y;
}

double median_call_ms(int repeats, const std::function<void()>& fn) {
  std::vector<double> times;
  const int calls = repeats > 0 ? repeats + 1 : 1;  // the first of several is a warm-up
  for (int i = 0; i < calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    if (calls == 1 || i > 0) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Progress::Progress(std::string label, std::int64_t total, bool quiet)
    : label_(std::move(label)), total_(total), tty_(isatty(STDERR_FILENO) == 1), quiet_(quiet),
      start_(std::chrono::steady_clock::now()) {}

void Progress::step(const std::string& item) {
  ++current_;
  if (quiet_) return;
  if (!tty_) {
    std::fprintf(stderr, "%s: [%lld/%lld] %s\n", label_.c_str(), static_cast<long long>(current_),
                 static_cast<long long>(total_), item.c_str());
    return;
  }
  constexpr int kWidth = 30;  // bar cells; leaves room for the item name on an 80-column terminal
  int filled = total_ > 0 ? static_cast<int>(kWidth * (current_ - 1) / total_) : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string shown = item.size() > 40 ? "..." + item.substr(item.size() - 37) : item;
  // \r redraws the line, \033[K clears what a longer previous item left behind.
  std::fprintf(stderr, "\r%s [%s] %lld/%lld %s\033[K", label_.c_str(), bar.c_str(), static_cast<long long>(current_),
               static_cast<long long>(total_), shown.c_str());
  std::fflush(stderr);
}

Progress::~Progress() {
  if (tty_ && !quiet_ && !finished_ && current_ > 0) std::fputc('\n', stderr);
}

void Progress::done() {
  finished_ = true;
  if (quiet_) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_)
    std::fprintf(stderr, "\r%s [%s] %lld/%lld done in %.2f s\033[K\n", label_.c_str(), std::string(30, '#').c_str(),
                 static_cast<long long>(current_), static_cast<long long>(total_), s);
  else
    std::fprintf(stderr, "%s: done, %lld items in %.2f s\n", label_.c_str(), static_cast<long long>(current_), s);
}

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string with_commas(std::uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), 1, ',');
  return s;
}

}  // namespace w4a16::cli
