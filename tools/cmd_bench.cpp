// w4a16 bench: the benchmark sweep of shared/PERF.md for the backends this build has
// (bench/cpu run_cpu_sweep; bench/gpu run_gpu_sweep in CUDA builds).
#include <cstdio>

#include "cli.hpp"

namespace w4a16::cli {
namespace {

int run_bench(const ParsedArgs& a) {
  const std::string dev = a.get_choice("device", {"cpu", "cuda"}, "cpu");
  (void)dev;
  fail(ErrorCode::unsupported, "bench", "the benchmark sweeps (bench/cpu, bench/gpu)", "not built in this tree yet");
}

}  // namespace

Command bench_command() {
  return {{"bench",
           "the benchmark sweep of shared/PERF.md (CPU; GPU in CUDA builds), CSV out",
           {},
           {{"device", "D", "cpu or cuda", "cpu"},
            {"csv", "FILE", "write the CSV rows to FILE"},
            {"shapes", "LIST", "comma-separated N x K shapes, e.g. 8192x8192,4096x14336", "the PERF.md shapes"},
            {"m", "LIST", "comma-separated M values", "the PERF.md M values"}},
           ""},
          run_bench};
}

}  // namespace w4a16::cli
