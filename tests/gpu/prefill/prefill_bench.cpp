// Stand-alone prefill benchmark (until bench/gpu's shared sweep calls prefill_rows): the
// PERF.md shapes at M = 32..4096, int4 prefill vs cuBLAS fp16/bf16 vs the dense cache, in one
// process, with the shared timer. Usage: prefill_bench <out.csv> [quick|tune|full]
//   quick: 3 shapes fp16; tune: + every forced config on 3 shapes; full: all shapes, fp16 + bf16.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "common.cuh"
#include "prefill_rows.hpp"

using namespace w4a16;

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : "prefill_bench.csv";
  const std::string mode = argc > 2 ? argv[2] : "full";
  FILE* f = std::fopen(out, "w");
  if (!f) return 2;
  std::fprintf(f, "%s\n", bench::prefill_csv_header().c_str());
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  struct Shape { const char* name; std::int64_t n, k; bool tune; };
  const Shape shapes[] = {{"qwen0.5b.qkv", 1152, 896, false},   {"qwen0.5b.o", 896, 896, false},
                          {"qwen0.5b.gate_up", 9728, 896, false}, {"qwen0.5b.down", 896, 4864, false},
                          {"llama8b.qkv", 6144, 4096, true},    {"llama8b.o", 4096, 4096, false},
                          {"llama8b.gate_up", 28672, 4096, true}, {"llama8b.down", 4096, 14336, false},
                          {"8192x8192", 8192, 8192, true},      {"llama70b.gate_up", 57344, 8192, false}};
  for (const Shape& sh : shapes) {
    if (mode == "quick" && !sh.tune) continue;
    for (DType act : {DType::f16, DType::bf16}) {
      if (act == DType::bf16 && mode == "quick") continue;
      bench::PrefillBenchSpec spec;
      spec.shape = sh.name;
      spec.n = sh.n;
      spec.k = sh.k;
      spec.ms = {32, 64, 128, 256, 1024, 4096};
      spec.act = act;
      spec.all_configs = sh.tune && mode != "full" && act == DType::f16;
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
  }
  // Formats / groups on 8192x8192 (PERF.md: sym + asym, g = 32, 64, 128, channelwise).
  if (mode != "quick")
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (int g : {32, 64, 128, -1}) {
        bench::PrefillBenchSpec spec;
        spec.shape = "8192x8192";
        spec.n = spec.k = 8192;
        spec.ms = {64, 1024};
        spec.scalar = st;
        spec.group = g;
        spec.peers = false;
        for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      }
  std::fclose(f);
  return 0;
}
