// The CPU benchmark sweep (target w4a16_cpu_bench): used by the w4a16_bench_cpu program and by
// `w4a16 bench` on the CPU.
//
// It first measures this machine's memory read bandwidth (a multithreaded streaming sum over a
// buffer much larger than the last-level cache, median of repeats), then times fast_gemm per
// (shape, M, dtype, format, group): warm-up, then samples of back-to-back calls that rotate
// over weight copies totalling >= 3x the LLC (or one copy larger than that), median of the
// samples; `rounds` > 1 repeats that and keeps the best median (the 2 cores here are shared).
// Every timed configuration is checked in the same run: the first and last 64 output columns
// against reference_gemm, relative error <= the dtype's tolerance (2e-3 f16, 1e-2 bf16).
//
// CSV columns: kernel, shape, n, k, M, dtype, format, group (-1 = channelwise), us, GB/s,
// pct_of_bw, GFLOP/s, bw_GBps (the measured read bandwidth), threads, isa (the implementation that ran), rel_err, check.
// GB/s counts the bytes a call must move (shared/PERF.md): N*K/2 + N*G*2 (scales) + N*G/2
// (zeros, uint4 only) + M*K*2 + M*N*2.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "w4a16/core/canonical.hpp"

namespace w4a16::bench {

struct CpuShape {
  std::string name;  // "llama8b.gate_up"
  std::int64_t n = 0, k = 0;
};

// The 10 shapes of shared/PERF.md, smallest first.
std::vector<CpuShape> cpu_perf_shapes();
// "8192x8192" or a PERF.md name ("llama8b.down"); throws naming `arg` otherwise.
CpuShape parse_cpu_shape(const std::string& s, const std::string& arg = "shapes");

struct CpuSweepOptions {
  std::vector<CpuShape> shapes;                 // empty: cpu_perf_shapes()
  std::vector<std::int64_t> ms{1, 4, 16, 64};
  std::vector<DType> dtypes{DType::f16};
  std::vector<ScalarType> scalars{ScalarType::uint4b8, ScalarType::uint4};
  std::vector<int> groups{128};
  // fast_gemm implementations timed per row, one after the other (an in-process A/B): "best" (what fast_gemm runs),
  // "scalar", "avx2", "amx"; one this CPU does not run is skipped with a log line.
  std::vector<std::string> isas{"best"};
  std::string csv_path;      // empty: CSV to stdout
  int threads = 0;           // 0: all
  int repeats = 7;           // samples per median (>= 1)
  int rounds = 1;            // medians per configuration; the best is reported
  double sample_ms = 20;     // a sample is at least this long (back-to-back calls)
  std::int64_t bw_buffer_mb = 1024;  // bandwidth buffer size
  bool check = true;         // compare with reference_gemm (and fail the sweep on a mismatch)
  std::ostream* log = nullptr;  // progress and the summary; null: std::cerr
};

// Last-level cache size in bytes: sysfs first (a VM's sysconf may report the host's L3), then glibc sysconf, else 32 MiB.
std::int64_t llc_bytes();

// GB/s of a multithreaded streaming read (sum) over `buffer_mb` MiB: median of `repeats`,
// best of `rounds` medians.
double measure_read_bandwidth(int threads, std::int64_t buffer_mb, int repeats, int rounds);

// Runs the sweep; returns 0 when every checked configuration is within tolerance, 1 otherwise.
// Throws w4a16::Error on bad options (naming the option) or an unwritable CSV path.
int run_cpu_sweep(const CpuSweepOptions& opt);

}  // namespace w4a16::bench
