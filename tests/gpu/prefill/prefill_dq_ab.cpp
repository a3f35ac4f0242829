// The A/B driver of bit-identical prefill changes (issue 5; branches prefill-dq, prefill-g1):
// built from the branch and from main (the same source in both builds), run by
// scripts/prefill-ab/run.sh, which compares the two binaries' outputs.
//   prefill_dq_ab hash
//     fp16 and bf16 activations, uint4b8 and uint4, g = 32, 64, 128, 256, channelwise; N = 392,
//     K = 1344 (g 32 / 64), 1152 (g 128), 1280 (g 256): whole groups; 1360 channelwise (not a multiple
//     of 64); M = 100 (split 1; splits 2 and 3 with each reduce mode forced; split 1 into y rows padded
//     by 5) and 1000 (split 1); every config this device runs (no
//     diagnostics), forced: one line per run with an FNV-1a hash of y. With the same W4A16_SEED both
//     builds must print the same lines (branch prefill-dq: the dequantization; prefill-g1: the
//     one-group kernels). (Before prefill-g1 K was 1344 for every g: tc_prepare refused g = 128,
//     so the lines stopped after g = 64 uint4b8.)
//   prefill_dq_ab splits <out.csv> <name:N:K,...> <M,...>
//     as bench (fp16, uint4b8), and per M forced token splits ("seq:H") at heads of whole 256-token blocks
//     (an overlapped variant was measured in stop 26 and not kept: docs/benchmarks/prefill.md)
//   prefill_dq_ab plans <name:N:K,...> <M,...>
//     per shape, the token counts that this device's default plan splits (prefill_token_split): stdout
//     "name:N:K M,M,..." per shape with one, stderr every point's split.
//   prefill_dq_ab estimate < lines "N K M config_name split"
//     the cost model's estimate (us) of each forced plan, one per line, no device needed (model_bias.py)
//   prefill_dq_ab bench <out.csv> <name:N:K,...> <M,...> <uint4b8,uint4> [f16 | bf16]
//     per shape: cuBLAS (the activation dtype, f16 unless said) on dense weights, then per scalar
//     type (g = 128) the default plan
//     (prefill_run; the plan column names the token split where prefill_token_split makes one), with the shared timer (bench/common/gpu_timer: rotating copies for a cold L2,
//     graph replay, median); rows flushed as they come. Weights and x are random bit patterns tiled
//     on the device (no host quantization of 470M-weight layers: the run has 150 s), seeded per
//     shape, so both builds multiply the same bits: y_hash (FNV-1a of y after the first call) must
//     match between them.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <iostream>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "gpu_timer.hpp"
#include "w4a16/core/half.hpp"
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
  for (DType act : {DType::f16, DType::bf16})
  for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
    for (int g : {32, 64, 128, 256, kChannelwise}) {
      QuantSpec spec;
      spec.n = 392;
      spec.k = g == kChannelwise ? 1360 : (g == 128 ? 1152 : (g == 256 ? 1280 : 1344));
      spec.group_size = g;
      spec.scalar = st;
      const QuantizedLinear q = test::random_linear(spec, act, true, false);
      const auto w = kc::tc_prepare(q.view(), act, nullptr);
      for (std::int64_t m : {100, 1000}) {
        const std::vector<std::uint16_t> x = test::random_act(m, spec.k, act);
        void *dx = nullptr, *dy = nullptr, *dw = nullptr;
        W4A16_CUDA_TRY(cudaMalloc(&dx, x.size() * 2));
        W4A16_CUDA_TRY(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
        // Runs per config: split 1; at M = 100 also splits 2 / 3 with each reduce mode forced
        // (partials + reduce_kernel, the cluster where the config has it) and split 1 into rows of
        // y padded by 5 elements (stores that cannot be vectorized).
        struct Run { int split; kc::PrefillSplitReduce reduce; std::int64_t y_pad; };
        std::vector<Run> runs = {{1, kc::PrefillSplitReduce::automatic, 0}};
        if (m <= 100)
          for (int split : {2, 3})
            for (kc::PrefillSplitReduce r : {kc::PrefillSplitReduce::kernel, kc::PrefillSplitReduce::cluster}) runs.push_back({split, r, 0});
        if (m <= 100) runs.push_back({1, kc::PrefillSplitReduce::automatic, 5});
        const std::int64_t ys_max = spec.n + 5;
        W4A16_CUDA_TRY(cudaMalloc(&dy, static_cast<std::size_t>(m * ys_max * 2)));
        for (int cfg : cfgs)
          for (const Run& run : runs) {
            kc::PrefillPlan p;
            p.config = cfg;
            p.split = run.split;
            p.reduce = run.reduce;
            const std::int64_t ys = spec.n + run.y_pad;
            const std::size_t wsb = kc::prefill_plan_workspace_bytes(*w, p, m);
            W4A16_CUDA_TRY(cudaMalloc(&dw, std::max<std::size_t>(wsb, 256)));
            W4A16_CUDA_TRY(cudaMemset(dy, 0xff, static_cast<std::size_t>(m * ys_max * 2)));
            kc::prefill_run_plan(*w, p, dx, m, spec.k, dy, ys, dw, wsb, nullptr);
            W4A16_CUDA_TRY(cudaDeviceSynchronize());
            std::vector<std::uint16_t> y(static_cast<std::size_t>(m * ys));  // the padding too: a store past N would show
            W4A16_CUDA_TRY(cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost));
            cudaFree(dw);
            std::printf("hash %s %s g=%d m=%lld cfg=%d %s split=%d reduce=%s y_pad=%lld %016llx\n", std::string(dtype_name(act)).c_str(),
                        std::string(scalar_type_name(st)).c_str(), g, static_cast<long long>(m), cfg,
                        kc::prefill_config(cfg).name().c_str(), run.split, kc::prefill_split_reduce_name(run.reduce),
                        static_cast<long long>(run.y_pad), static_cast<unsigned long long>(fnv1a(y)));
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

// Device buffer with a host pattern tiled into it (fast: no host quantization of real-size layers).
void* dev_tiled(std::size_t bytes, const std::vector<std::uint8_t>& pat) {
  void* p = nullptr;
  W4A16_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(bytes, 256)));
  for (std::size_t off = 0; off < bytes; off += pat.size())
    W4A16_CUDA_TRY(cudaMemcpy(static_cast<char*>(p) + off, pat.data(), std::min(pat.size(), bytes - off), cudaMemcpyHostToDevice));
  return p;
}
// fp16 (or bf16) values in [lo, hi) (bit patterns, little-endian), count of them.
std::vector<std::uint8_t> f16_pattern(std::size_t count, float lo, float hi, std::mt19937_64& g, DType t = DType::f16) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<std::uint8_t> v(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint16_t h = t == DType::bf16 ? float_to_bf16(u(g)) : float_to_half(u(g));
    v[2 * i] = static_cast<std::uint8_t>(h);
    v[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
  }
  return v;
}

// Random weights in layout cuda.tc16x64.v1 made on the device side (timing only: the layout's
// bits are all valid, padded rows get scales too, which the kernels never store), act dtype, g = 128.
std::unique_ptr<kc::TcWeights> random_tc(std::int64_t n, std::int64_t k, ScalarType st, std::mt19937_64& g, DType act) {
  auto w = std::make_unique<kc::TcWeights>();
  w->n = n;
  w->k = k;
  w->n_pad = (n + 63) / 64 * 64;
  w->k_pad = (k + 63) / 64 * 64;
  w->group_size = 128;
  w->groups = k / 128;
  w->scalar = st;
  w->act_dtype = act;
  std::vector<std::uint8_t> bits(std::size_t{16} << 20);
  for (auto& b : bits) b = static_cast<std::uint8_t>(g());
  const std::size_t qb = static_cast<std::size_t>(w->n_pad * w->k_pad / 2), sb = static_cast<std::size_t>(w->groups * w->n_pad * 2);
  w->qweight = static_cast<std::int32_t*>(dev_tiled(qb, bits));
  w->scales = dev_tiled(sb, f16_pattern(static_cast<std::size_t>(w->groups * w->n_pad), 0.001f, 0.01f, g, act));
  std::size_t zb = 0;
  if (st == ScalarType::uint4) {
    zb = static_cast<std::size_t>(w->groups * w->n_pad / 2);
    w->zeros = static_cast<std::uint8_t*>(dev_tiled(zb, bits));
  }
  w->bytes = qb + sb + zb;
  return w;
}

int run_bench(const char* out, const std::string& shapes, const std::string& ms, const std::string& scalars, DType act,
              bool token_splits = false) {
  const cudaDataType_t cu = act == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const std::string cublas_name = act == DType::bf16 ? "cublas_bf16" : "cublas_f16";
  FILE* f = std::fopen(out, "w");
  if (!f) {
    std::fprintf(stderr, "prefill_dq_ab bench: cannot open out.csv '%s'\n", out);
    return 2;
  }
  std::fprintf(f, "shape,n,k,scalar,m,kernel,us,tflops,plan,y_hash\n");
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "prefill_dq_ab bench: cublasCreate failed\n");
    return 3;
  }
  std::vector<std::int64_t> mv;
  for (const std::string& m : split_list(ms, ',')) mv.push_back(std::stoll(m));
  const std::int64_t max_m = *std::max_element(mv.begin(), mv.end());
  const int cap = kc::device_capability(), sms = kc::device_sm_count();
  for (const std::string& sh : split_list(shapes, ',')) {
    const auto parts = split_list(sh, ':');
    if (parts.size() != 3) {
      std::fprintf(stderr, "prefill_dq_ab bench: shapes: expected name:N:K, got '%s'\n", sh.c_str());
      return 2;
    }
    const std::int64_t n = std::stoll(parts[1]), k = std::stoll(parts[2]);
    std::mt19937_64 g(0x5eed0000u + static_cast<std::uint64_t>(n * 131 + k));  // same bits in both builds
    void* x = dev_tiled(static_cast<std::size_t>(max_m * k * 2), f16_pattern(std::size_t{1} << 20, -1.f, 1.f, g, act));
    void* y = nullptr;
    W4A16_CUDA_TRY(cudaMalloc(&y, static_cast<std::size_t>(max_m * n * 2)));
    const std::size_t wsb = std::max<std::size_t>(kc::prefill_workspace_bytes(n, k, 128, false, max_m), std::size_t{32} << 20);
    void* work = nullptr;
    W4A16_CUDA_TRY(cudaMalloc(&work, wsb));
    // cuBLAS inside graph capture: its workspace given, as prefill_rows does (used one at a time).
    if (cublasSetWorkspace(h, work, wsb) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "prefill_dq_ab bench: cublasSetWorkspace failed\n");
      return 3;
    }
    auto row = [&](const char* scalar, std::int64_t m, const std::string& kernel, double us, const std::string& plan, std::uint64_t hash) {
      std::fprintf(f, "%s,%lld,%lld,%s,%lld,%s,%.3f,%.1f,\"%s\",%016llx\n", parts[0].c_str(), static_cast<long long>(n),
                   static_cast<long long>(k), scalar, static_cast<long long>(m), kernel.c_str(), us, 2.0 * m * n * k / us * 1e-6,
                   plan.c_str(), static_cast<unsigned long long>(hash));
      std::fflush(f);
    };
    std::vector<std::uint16_t> yh(static_cast<std::size_t>(max_m * n));
    auto y_hash = [&](std::int64_t m) {
      W4A16_CUDA_TRY(cudaStreamSynchronize(s));
      W4A16_CUDA_TRY(cudaMemcpy(yh.data(), y, static_cast<std::size_t>(m * n * 2), cudaMemcpyDeviceToHost));
      return fnv1a(std::vector<std::uint16_t>(yh.begin(), yh.begin() + m * n));
    };
    {  // cuBLAS fp16 on dense weights (rotating copies for a cold L2)
      const std::size_t db = static_cast<std::size_t>(n * k * 2);
      const int dcopies = bench::cold_l2_copies(db);
      const auto pat = f16_pattern(std::size_t{8} << 20, -0.05f, 0.05f, g, act);
      std::vector<void*> dense;
      for (int i = 0; i < dcopies; ++i) dense.push_back(dev_tiled(db, pat));
      for (std::int64_t m : mv) {
        auto call = [&](int i, cudaStream_t) {
          const float alpha = 1.f, beta = 0.f;
          cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
                       dense[static_cast<std::size_t>(i % dcopies)], cu, static_cast<int>(k), x, cu, static_cast<int>(k),
                       &beta, y, cu, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        };
        bench::TimerOptions opt;
        opt.copies = dcopies;
        row("-", m, cublas_name, bench::time_graph(call, opt, s).median_us, "cublasGemmEx", 0);
      }
      for (void* p : dense) cudaFree(p);
    }
    for (const std::string& sc : split_list(scalars, ',')) {
      ScalarType st;
      if (sc == "uint4b8") st = ScalarType::uint4b8;
      else if (sc == "uint4") st = ScalarType::uint4;
      else {
        std::fprintf(stderr, "prefill_dq_ab bench: scalars: expected uint4b8 or uint4, got '%s'\n", sc.c_str());
        return 2;
      }
      std::vector<std::unique_ptr<kc::TcWeights>> ws;
      ws.push_back(random_tc(n, k, st, g, act));
      const int copies = bench::cold_l2_copies(ws[0]->bytes);
      for (int i = 1; i < copies; ++i) ws.push_back(kc::tc_clone(*ws[0], s));
      for (std::int64_t m : mv) {
        auto call = [&](int i, cudaStream_t st2) {
          kc::prefill_run(*ws[static_cast<std::size_t>(i % copies)], x, m, k, y, n, work, wsb, st2);
        };
        W4A16_CUDA_TRY(cudaMemset(y, 0xff, static_cast<std::size_t>(m * n * 2)));
        call(0, s);
        const std::uint64_t hash = y_hash(m);
        bench::TimerOptions opt;
        opt.copies = copies;
        row(sc.c_str(), m, "cuda_prefill", bench::time_graph(call, opt, s).median_us, kc::prefill_default_describe(n, k, m, cap, sms), hash);
        if (!token_splits) continue;
        // Forced token splits at heads of whole 256-token blocks, each part with its default plan.
        std::vector<std::int64_t> heads;
        for (std::int64_t h : {m / 256 * 256, (m - 1) / 256 * 256 - 256, (m / 2) / 256 * 256, (m / 4) / 256 * 256})
          if (h > 0 && h < m && std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
        for (std::int64_t h : heads) {
          kc::PrefillTokenSplit ts;
          ts.head = h;
          ts.head_plan = kc::prefill_plan(n, k, h, cap, sms);
          ts.tail_plan = kc::prefill_plan(n, k, m - h, cap, sms);
          auto split_call = [&](int i, cudaStream_t st2) {
            kc::prefill_run_token_split(*ws[static_cast<std::size_t>(i % copies)], ts, x, m, k, y, n, work, wsb, st2);
          };
          W4A16_CUDA_TRY(cudaMemset(y, 0xff, static_cast<std::size_t>(m * n * 2)));
          split_call(0, s);
          const std::uint64_t h2 = y_hash(m);
          bench::TimerOptions o2;
          o2.copies = copies;
          row(sc.c_str(), m, "seq:" + std::to_string(h), bench::time_graph(split_call, o2, s).median_us, ts.describe(), h2);
        }
      }
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(work);
  }
  std::fclose(f);
  return 0;
}

// `plans`: per shape the token counts whose default plan on this device is a token split, one line
// "name:N:K M,M,..." (nothing for a shape without one), for the A/B of the split to time only those; on stderr
// every point's default plan ("name:N:K M=m <prefill_default_describe>": plans_diff.py compares two runs).
int run_plans(const std::string& shapes, const std::string& ms) {
  const int cap = kc::device_capability(), sms = kc::device_sm_count();
  for (const std::string& sh : split_list(shapes, ',')) {
    const auto parts = split_list(sh, ':');
    if (parts.size() != 3) {
      std::fprintf(stderr, "prefill_dq_ab plans: shapes: expected name:N:K, got '%s'\n", sh.c_str());
      return 2;
    }
    std::string hit;
    for (const std::string& m : split_list(ms, ',')) {
      const kc::PrefillTokenSplit ts = kc::prefill_token_split(std::stoll(parts[1]), std::stoll(parts[2]), std::stoll(m), cap, sms);
      if (ts.head > 0) hit += (hit.empty() ? "" : ",") + m;
      std::fprintf(stderr, "%s M=%s %s\n", sh.c_str(), m.c_str(),
                   kc::prefill_default_describe(std::stoll(parts[1]), std::stoll(parts[2]), std::stoll(m), cap, sms).c_str());
    }
    if (!hit.empty()) std::printf("%s %s\n", sh.c_str(), hit.c_str());
  }
  return 0;
}

}  // namespace

// `estimate`: the cost model's estimate of forced plans, no device needed: stdin lines "N K M config_name split",
// stdout one estimate in us per line ("nan" for a config name this build does not have), the kernel reduce mode for
// splits > 1 (no cluster counts without a device). For scripts/prefill-ab/model_bias.py.
int run_estimate() {
  std::string name;
  long long n = 0, k = 0, m = 0;
  int split = 0;
  while (std::cin >> n >> k >> m >> name >> split) {
    int config = -1;
    for (int i = 0; i < kc::prefill_config_count(); ++i)
      if (kc::prefill_config(i).name() == name) config = i;
    if (config < 0) {
      std::printf("nan\n");
      continue;
    }
    std::printf("%.3f\n", kc::prefill_plan_estimate_us(n, k, m, config, split, /*sm_count: the H200's*/ 132,
                                                       split > 1 ? kc::PrefillSplitReduce::kernel : kc::PrefillSplitReduce::automatic, 0));
  }
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "hash") return run_hash();
    if (mode == "estimate" && argc == 2) return run_estimate();
    if (mode == "plans" && argc == 4) return run_plans(argv[2], argv[3]);
    if (mode == "bench" && (argc == 6 || argc == 7)) {
      const std::string dt = argc == 7 ? argv[6] : "f16";
      if (dt != "f16" && dt != "bf16") {
        std::fprintf(stderr, "prefill_dq_ab bench: dtype: expected f16 or bf16, got '%s'\n", dt.c_str());
        return 2;
      }
      return run_bench(argv[2], argv[3], argv[4], argv[5], dt == "bf16" ? DType::bf16 : DType::f16);
    }
    if (mode == "splits" && argc == 5) {  // measurement of forced token splits (the candidates' design)
      return run_bench(argv[2], argv[3], argv[4], "uint4b8", DType::f16, true);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prefill_dq_ab %s: %s\n", mode.c_str(), e.what());
    return 3;
  }
  std::fprintf(stderr, "usage: prefill_dq_ab hash | prefill_dq_ab bench <out.csv> <name:N:K,...> <M,...> <uint4b8,uint4> [f16|bf16] | prefill_dq_ab splits <out.csv> <name:N:K,...> <M,...> | prefill_dq_ab plans <name:N:K,...> <M,...> | prefill_dq_ab estimate < lines\n");
  return 2;
}
