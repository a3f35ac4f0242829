// The A/B driver of branch prefill-dq (the fp16 dequantization of the prefill kernel, issue 5):
// built from that branch and from main (the same source in both builds), run by
// .carry-prefill-dq/run.sh, which compares the two binaries' outputs.
//   prefill_dq_ab hash
//     fp16 activations, uint4b8 and uint4, g = 32, 64, 128, channelwise; N = 392, K = 1344 (1360
//     channelwise: not a multiple of 64); M = 100 (splits 1, 2) and 1000 (split 1); every config this
//     device runs (no diagnostics), forced: one line per run with an FNV-1a hash of y. With the same
//     W4A16_SEED both builds must print the same lines (the new dequantization is bit-identical).
//   prefill_dq_ab bench <out.csv> <name:N:K,...> <M,...> <uint4b8,uint4>
//     per shape and scalar type (fp16, g = 128): cuBLAS fp16 and the default plan (prefill_rows, the
//     shared timer: cold L2, graph replay, median), rows flushed as they come.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "prefill_rows.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"

using namespace w4a16;
namespace kc = w4a16::kernels::cuda;

namespace {

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, sep);)
    if (!t.empty()) v.push_back(t);
  return v;
}

std::uint64_t fnv1a(const std::vector<std::uint16_t>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint16_t e : v) {
    h = (h ^ (e & 0xffu)) * 1099511628211ull;
    h = (h ^ (e >> 8)) * 1099511628211ull;
  }
  return h;
}

int run_hash() {
  const int cap = kc::device_capability();
  if (!kc::prefill_supported(cap)) {
    std::fprintf(stderr, "prefill_dq_ab hash: prefill kernel not built for capability %d\n", cap);
    return 2;
  }
  // The configs of the default plan's path and the mma path, less the diagnostics (prefill_gpu_test's device_configs).
  const kc::PrefillPath path = kc::prefill_config(kc::prefill_plan(1024, 1024, 1024, cap, 132).config).path;
  std::vector<int> cfgs;
  for (int i = 0; i < kc::prefill_config_count(); ++i)
    if ((kc::prefill_config(i).path == path || kc::prefill_config(i).path == kc::PrefillPath::mma) && !kc::prefill_config(i).diagnostic())
      cfgs.push_back(i);
  int lines = 0;
  for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
    for (int g : {32, 64, 128, kChannelwise}) {
      QuantSpec spec;
      spec.n = 392;
      spec.k = g == kChannelwise ? 1360 : 1344;
      spec.group_size = g;
      spec.scalar = st;
      const QuantizedLinear q = test::random_linear(spec, DType::f16, true, false);
      const auto w = kc::tc_prepare(q.view(), DType::f16, nullptr);
      for (std::int64_t m : {100, 1000}) {
        const std::vector<std::uint16_t> x = test::random_act(m, spec.k, DType::f16);
        void *dx = nullptr, *dy = nullptr, *dw = nullptr;
        W4A16_CUDA_TRY(cudaMalloc(&dx, x.size() * 2));
        W4A16_CUDA_TRY(cudaMalloc(&dy, static_cast<std::size_t>(m * spec.n * 2)));
        W4A16_CUDA_TRY(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
        std::vector<std::uint16_t> y(static_cast<std::size_t>(m * spec.n));
        for (int cfg : cfgs)
          for (int split : {1, 2}) {
            if (split > 1 && m > 100) continue;
            kc::PrefillPlan p;
            p.config = cfg;
            p.split = split;
            const std::size_t wsb = kc::prefill_plan_workspace_bytes(*w, p, m);
            W4A16_CUDA_TRY(cudaMalloc(&dw, std::max<std::size_t>(wsb, 256)));
            W4A16_CUDA_TRY(cudaMemset(dy, 0xff, y.size() * 2));
            kc::prefill_run_plan(*w, p, dx, m, spec.k, dy, spec.n, dw, wsb, nullptr);
            W4A16_CUDA_TRY(cudaDeviceSynchronize());
            W4A16_CUDA_TRY(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
            cudaFree(dw);
            std::printf("hash f16 %s g=%d m=%lld cfg=%d %s split=%d %016llx\n", std::string(scalar_type_name(st)).c_str(), g,
                        static_cast<long long>(m), cfg, kc::prefill_config(cfg).name().c_str(), split,
                        static_cast<unsigned long long>(fnv1a(y)));
            ++lines;
          }
        cudaFree(dx);
        cudaFree(dy);
      }
    }
  std::fflush(stdout);
  std::fprintf(stderr, "prefill_dq_ab hash: %d lines\n", lines);
  return 0;
}

int run_bench(const char* out, const std::string& shapes, const std::string& ms, const std::string& scalars) {
  FILE* f = std::fopen(out, "w");
  if (!f) {
    std::fprintf(stderr, "prefill_dq_ab bench: cannot open out.csv '%s'\n", out);
    return 2;
  }
  std::fprintf(f, "%s\n", bench::prefill_csv_header().c_str());
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  for (const std::string& sh : split_list(shapes, ',')) {
    const auto parts = split_list(sh, ':');
    if (parts.size() != 3) {
      std::fprintf(stderr, "prefill_dq_ab bench: shapes: expected name:N:K, got '%s'\n", sh.c_str());
      return 2;
    }
    for (const std::string& sc : split_list(scalars, ',')) {
      bench::PrefillBenchSpec spec;
      spec.shape = parts[0];
      spec.n = std::stoll(parts[1]);
      spec.k = std::stoll(parts[2]);
      for (const std::string& m : split_list(ms, ',')) spec.ms.push_back(std::stoll(m));
      spec.act = DType::f16;
      if (sc == "uint4b8") spec.scalar = ScalarType::uint4b8;
      else if (sc == "uint4") spec.scalar = ScalarType::uint4;
      else {
        std::fprintf(stderr, "prefill_dq_ab bench: scalars: expected uint4b8 or uint4, got '%s'\n", sc.c_str());
        return 2;
      }
      spec.peers = true;
      spec.peer_bf16 = false;
      spec.time_dense_cache = false;
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
  }
  std::fclose(f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "hash") return run_hash();
  if (mode == "bench" && argc == 6) return run_bench(argv[2], argv[3], argv[4], argv[5]);
  std::fprintf(stderr, "usage: prefill_dq_ab hash | prefill_dq_ab bench <out.csv> <name:N:K,...> <M,...> <uint4b8,uint4>\n");
  return 2;
}
