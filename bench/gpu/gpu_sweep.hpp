// The GPU benchmark sweep of shared/PERF.md as a library (target w4a16_gpu_bench): used by the
// w4a16_bench_gpu program and by `w4a16 bench --device cuda`.
// Every row is one (kernel, shape, M, dtype, format, group), timed with bench/common/gpu_timer
// (graph replay over rotating weight copies >= 3x L2, median of >= 7 replays) and checked against
// an f64 host reference on sampled output rows in the same run.
// Kernels are rows: implement BenchKernel and pass it in `extra` (prefill, hybrid, ...).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "w4a16/core/canonical.hpp"

namespace w4a16::bench {

struct BenchCase {
  std::string shape;  // "llama8b.gate_up"
  std::int64_t n = 0, k = 0;
  DType act = DType::f16;
  ScalarType scalar = ScalarType::uint4b8;  // ignored by dense kernels
  int group = 128;                          // ignored by dense kernels
};

class BenchKernel {
 public:
  virtual ~BenchKernel() = default;
  virtual std::string name() const = 0;
  // Dense kernels (cuBLAS) run once per (shape, dtype) on their own 16-bit weights; quantized
  // kernels once per (shape, dtype, scalar type, group) on the canonical layer they are given.
  virtual bool dense() const { return false; }
  // Empty if the kernel runs this case at this M, else the reason it does not.
  virtual std::string refuses(const BenchCase& c, std::int64_t m) const { return {}; }
  // Makes `copies` rotating weight copies (q is null for dense kernels).
  virtual void prepare(const BenchCase& c, const QuantizedLinear* q, int copies, cudaStream_t s) = 0;
  // Enqueues y[m, N] = x[m, K] . W^T (+ bias) with weight copy `copy`; no allocation, no sync.
  virtual void run(int copy, const void* x, std::int64_t m, void* y, cudaStream_t s) = 0;
  // Dense kernels: the weight value at (n, k) they multiply by (for the host reference).
  virtual double dense_weight(std::int64_t n, std::int64_t k) const { return 0; }
  // Free text for the CSV (tile plan, split-K, ...).
  virtual std::string plan(std::int64_t m) const { return {}; }
  virtual void release() = 0;  // frees the copies
};

struct SweepShape {
  std::string name;
  std::int64_t n, k;
};

struct SweepOptions {
  std::vector<SweepShape> shapes;            // default: the 10 shapes of PERF.md
  std::vector<std::int64_t> ms;              // default: 1 2 3 4 8 12 16 32 64
  std::vector<DType> dtypes{DType::f16, DType::bf16};
  std::vector<ScalarType> scalars{ScalarType::uint4b8, ScalarType::uint4};
  std::vector<int> groups{128};
  std::string extra_group_shape = "8192x8192";  // also g = 32, 64, 256, channelwise on this shape
  std::vector<int> extra_groups{32, 64, 256, kChannelwise};
  bool builtin_kernels = true;  // cuda_decode, cublas (fp16/bf16 of the case's dtype)
  bool builtin_cublas = true;   // with builtin_kernels: also the cuBLAS rows
  std::int64_t decode_max_m = 0;  // builtin cuda_decode rows only up to this M (0: every M)
  int replays = 9;
  bool verbose = true;          // one line per row on stderr
  std::string progress_csv;     // if set: rows appended as measured (speedups 0), so a cut run keeps them
};

struct SweepRow {
  std::string kernel, shape;
  std::int64_t n = 0, k = 0, m = 0;
  std::string dtype, format;  // "float16", "uint4b8" | "uint4" | "dense"
  int group = 0;              // 0 for dense
  double us = 0, tbps = 0, pct = 0, tflops = 0, speedup_vs_cublas_f16 = 0;
  double rel_err = 0;
  bool ok = true;             // rel_err within test tolerance (2e-3 fp16, 1e-2 bf16)
  std::string plan;
};

std::vector<SweepShape> perf_shapes();
// Bytes a call must move (shared/PERF.md): int4 weights + scales + zeros + x + y; dense: 2 N K + x + y.
double call_bytes(const SweepRow& r);

std::vector<std::unique_ptr<BenchKernel>> builtin_kernels(std::int64_t decode_max_m = 0);
std::vector<SweepRow> run_gpu_sweep(const SweepOptions& opt, std::vector<std::unique_ptr<BenchKernel>> extra = {});
void write_csv(const std::vector<SweepRow>& rows, const std::string& path);
std::string format_table(const std::vector<SweepRow>& rows);  // compact text table

}  // namespace w4a16::bench
