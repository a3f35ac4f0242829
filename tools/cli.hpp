// Shared pieces of the w4a16 subcommands: the command table, value parsing that maps to
// usage errors, error context, tolerances and progress output. Everything numerical or
// format-specific is the library's (include/w4a16); this folder only wires it to argv.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "args.hpp"
#include "w4a16/core/dtype.hpp"
#include "w4a16/core/tensor.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::cli {

struct Command {
  CommandSpec spec;
  int (*run)(const ParsedArgs&);
};
// Each subcommand file defines one of these.
Command inspect_command();
Command synth_command();
Command quantize_command();
Command run_layer_command();
Command bench_command();
Command explain_command();
Command demo_command();
Command moe_command();

// --dtype float16|bfloat16 (also accepts the library's aliases fp16, bf16, ...).
DType parse_act_dtype(const std::string& text, const std::string& arg);
// --device cpu|cuda; cuda in a build without CUDA is a usage error that says so.
Device parse_device(const std::string& text, const std::string& arg);

// Runs fn; a w4a16::Error escaping it is rethrown (same code) with "context: " in front,
// so a library message such as "x: expected ..." also names the file it came from.
void with_context(const std::string& context, const std::function<void()>& fn);

// Relative error bounds ||out - ref|| / ||ref|| of a kernel against the CPU reference;
// the same values as tests/util/testutil.hpp (kTolF16, kTolBF16), which tools cannot link.
constexpr double kTolF16 = 2e-3;
constexpr double kTolBF16 = 1e-2;
inline double tolerance(DType t) { return t == DType::bf16 ? kTolBF16 : kTolF16; }

// ||a - b|| / ||b|| over two 16-bit float buffers of `count` values; NaN or inf anywhere -> inf.
double rel_error_16(const std::uint16_t* a, const std::uint16_t* b, std::int64_t count, DType dtype);

// A NaN-filled [m, n] output: a kernel that leaves elements unwritten fails the check (inf error).
HostTensor poisoned_output(std::int64_t m, std::int64_t n, DType dtype);

// Calls fn once (repeats = 0) or repeats + 1 times, the first a warm-up, and returns the median wall time in ms of
// the timed calls; fn includes whatever synchronization the timing needs (cuda_synchronize on the CUDA paths).
double median_call_ms(int repeats, const std::function<void()>& fn);

// Progress of a long loop on stderr: a redrawn bar when stderr is a terminal, otherwise one
// plain line per step (logs and CI stay readable).
class Progress {
 public:
  Progress(std::string label, std::int64_t total, bool quiet = false);
  ~Progress();  // ends a half-drawn bar's line, so an error message starts on a line of its own
  void step(const std::string& item);  // call once per item, before working on it
  void done();

 private:
  std::string label_;
  std::int64_t total_, current_ = 0;
  bool tty_, quiet_, finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

std::string human_bytes(std::uint64_t bytes);  // "1.5 MiB"
std::string with_commas(std::uint64_t v);      // "1,234,567"

}  // namespace w4a16::cli
