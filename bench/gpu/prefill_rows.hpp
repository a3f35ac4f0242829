// Benchmark rows of the prefill kernels for the shared GPU sweep (bench/gpu, the decode
// developer's), owned by the prefill developer. Coordination happens only through this header:
//
//   std::vector<PrefillRow> rows = prefill_rows(spec, stream);
//
// times, for one (shape, M, act dtype, scalar type, group), with the shared timer
// (bench/common/gpu_timer: cold L2 through rotating weight copies, graph replay, median):
//   "cuda_prefill"           prefill_run with its default plan
//   "cuda_prefill:<config>"  every compiled config, forced (only if spec.all_configs), or the
//                            configs of spec.forced with prefill_plan_for_config's split, or the
//                            tuning grid spec.tune_configs x spec.tune_splits (":s<split>")
//   "cuda_prefill_cp_async_plan"  prefill_run_plan with prefill_plan(..., cp_async): the plan
//                            measured on 2026-12-02, before the TMA configs (spec.old_plan)
//   "dense_cache"            dense_cache_run (dequantized copy + cuBLAS)
//   "cublas_f16"/"cublas_bf16"  cublasGemmEx on dense weights of the act dtype (the peer)
// and checks every int4 row against the dense-cache output of the same weights (rel_err).
// Link: bench/gpu/prefill_rows.cu, w4a16_cuda_kernels, w4a16_gpu_timer, w4a16_testutil.
//
// For the shared sweep (bench/gpu/gpu_sweep.hpp) the same kernels as BenchKernel rows:
//   for (auto& k : make_prefill_bench_kernels()) opts_extra.push_back(std::move(k));
// gives "cuda_prefill" (prefill_run, default plan; plan() prints it) and "dense_cache"
// (dequantized copy + cuBLAS, one cache per rotating copy). Add prefill_rows.cu to the sweep's
// library to use it; its M list then decides where the rows are timed (any M >= 1 runs).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <memory>

#include "gpu_sweep.hpp"
#include "w4a16/core/dtype.hpp"

namespace w4a16::bench {

struct PrefillBenchSpec {
  std::string shape;  // "llama8b.gate_up"
  std::int64_t n = 0, k = 0;
  std::vector<std::int64_t> ms;  // M values timed on the same weights
  DType act = DType::f16;
  ScalarType scalar = ScalarType::uint4b8;
  int group = 128;
  bool all_configs = false;  // also time every forced tile config (tuning)
  bool peers = true;         // time cuBLAS on dense weights too
  bool peer_bf16 = true;     // with peers: cuBLAS bf16 as well as fp16
  bool time_dense_cache = true;  // time the dense cache (its output is the reference either way)
  bool default_plan = true;  // time prefill_run's own plan (row "cuda_prefill")
  // > 0 (with peers): after the tune rows, cuBLAS fp16 (and bf16), the default plan and every tune plan timed side by
  // side (time_graphs_interleaved: `interleave` rounds of one replay each, after 10 warm-up rounds) as rows
  // "cublas_f16_il", "cublas_bf16_il", "cuda_prefill_il", "cuda_prefill:<config>:s<split>_il"; speedups against
  // "cublas_f16_il".
  int interleave = 0;
  // With interleave: the default plan once more per item "NAME=VALUE" of interleave_env, that environment variable set
  // while its graph is captured (a launch-time knob against the default in one process), row "cuda_prefill_il:NAME=VALUE".
  std::vector<std::string> interleave_env;
  bool old_plan = false;     // also time the cp.async plan (row "cuda_prefill_cp_async_plan")
  std::vector<int> forced;   // config indices timed with their own split (prefill_plan_for_config)
  // Tuning grid: every config of tune_configs at every split of tune_splits, each distinct effective
  // split once, where the workspace allows it (until 2026-12-03 stop 22 only splits 1 and 2 above
  // M = 256, though the plan takes up to 4 at M = 1024 on the Qwen shapes).
  std::vector<int> tune_configs, tune_splits;
  // Split-K reduce x PDL A/B (prefill_bench reduce_ab): the default plan's tile and split under the
  // four launch variants "ab_old" (reduce kernel, no PDL), "ab_pdl" (reduce kernel, PDL),
  // "ab_cluster" (cluster reduce, no PDL), "ab_both" (cluster reduce, PDL); then the same tile with
  // each split of ab_splits forced (":s<split>", effective splits, each once). The workspace is
  // sized for the reduce kernel at every split timed.
  bool reduce_ab = false;
  std::vector<int> ab_splits;
  // k-loop order A/B (prefill_bench sched_ab): after "cuda_prefill", the default plan's tile and
  // split with each k-loop order of sched_ab (prefill_sched_twin; PrefillConfig::sched) as
  // "cuda_prefill_sched<s>" (and "cuda_prefill_sched<s>_eb": the tma_eb twin, no CTA barrier, where
  // compiled), then the default plan again as "cuda_prefill_again" (drift check).
  std::vector<int> sched_ab;
  // Row splits (prefill_run_row_split), after "cuda_prefill": the head is row_split_head (a config index; -1: the
  // default plan's config) at split 1 over the rows of its grid's full waves (SMs x its CTAs per SM; none where the grid
  // has no part wave), or row_split_rows rows where > 0; the rest with each (config, split) of row_split_tails whose
  // tile rows divide the head's rows, as "cuda_prefill_rowsplit:<config>:s<split>" (a config of the measured k-loop
  // order runs as its twin in the head's order where one is compiled, as the library's measured row splits do).
  int row_split_head = -1;
  std::int64_t row_split_rows = 0;
  std::vector<std::pair<int, int>> row_split_tails;
};

struct PrefillRow {
  std::string kernel, shape, format, plan;  // plan: the chosen config / split (int4 rows)
  std::int64_t n = 0, k = 0, m = 0;
  DType act = DType::f16;
  int group = 128;
  double us = 0;        // median per call
  double tbps = 0;      // bytes that the call must move / time (PERF.md byte count)
  double tflops = 0;    // 2 M N K / time
  double vs_cublas_f16 = 0;  // cuBLAS fp16 us / us (>1 = faster), 0 if not timed
  double rel_err = 0;   // vs the dense-cache output (int4 rows), 0 for peers
};

std::vector<PrefillRow> prefill_rows(const PrefillBenchSpec& spec, cudaStream_t stream);

// BenchKernel rows for the shared sweep: "cuda_prefill", "dense_cache".
std::vector<std::unique_ptr<BenchKernel>> make_prefill_bench_kernels();

std::string prefill_csv_header();
std::string prefill_csv_row(const PrefillRow& r);

}  // namespace w4a16::bench
