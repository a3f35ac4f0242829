// Tensor-parallel check and benchmark: one process per GPU (scripts/tp-launch -n TP).
// For Llama-70B gate_up (57344 x 8192, column split) and down (8192 x 28672, row split) at
// M = 1, 16, 1024: every rank runs its shard and the collective; rank 0 also runs the unsplit
// layer on its own GPU, checks the tp output against it (relative error, fp16) and reports
// the time per layer of both with the shared timer (graph replay, median; NCCL is captured).
//   scripts/tp-launch -n 2 build/bench/tp/w4a16_tp_bench [--csv out.csv]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_timer.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/linear.hpp"
#include "w4a16/parallel/nccl.hpp"

using namespace w4a16;

namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "tp_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

// The same random layer on every rank (fixed seed): q, z uniform, scales ~ 0.01.
QuantizedLinear make_layer(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  QuantSpec s{n, k, 128, ScalarType::uint4};
  QuantizedLinear q(s, DType::f16, false, false);
  std::mt19937_64 g(seed);
  auto* w = q.qweight().ptr<std::uint64_t>();
  for (std::int64_t i = 0; i < q.qweight().numel() / 2; ++i) w[i] = g();
  auto* z = q.zeros().ptr<std::int32_t>();
  for (std::int64_t i = 0; i < q.zeros().numel(); ++i) z[i] = static_cast<std::int32_t>(g());
  std::uniform_real_distribution<float> u(0.005f, 0.015f);
  for (std::int64_t i = 0; i < q.scales().numel(); ++i) q.scales().ptr<std::uint16_t>()[i] = float_to_half(u(g));
  return q;
}

double rel_err(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double x = half_to_float(a[i]), y = half_to_float(b[i]);
    if (!std::isfinite(x)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return std::sqrt(num / den);
}

}  // namespace

int main(int argc, char** argv) {
  const char* csv_path = nullptr;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--csv") csv_path = argv[i + 1];
  auto comm = parallel::Communicator::from_env();
  const int rank = comm->rank(), tp = comm->world();
  cudaStream_t stream;
  ck(cudaStreamCreate(&stream), "stream");
  FILE* csv = nullptr;
  if (rank == 0) {
    csv = csv_path ? std::fopen(csv_path, "w") : stdout;
    std::fprintf(csv, "shape,split,tp,M,us_tp,us_tp1,speedup,rel_err_vs_tp1\n");
  }
  struct Shape {
    const char* name;
    std::int64_t n, k;
    parallel::Split split;
  };
  int failures = 0;
  for (Shape sh : {Shape{"llama70b.gate_up", 57344, 8192, parallel::Split::column},
                   Shape{"llama70b.down", 8192, 28672, parallel::Split::row}}) {
    QuantizedLinear full = make_layer(sh.n, sh.k, 1234);
    parallel::Shard shard = parallel::shard_canonical(full.view(), {sh.split, rank, tp});
    const std::int64_t max_m = 1024;
    LinearOptions opt;
    opt.device = Device::cuda;
    opt.device_index = rank;
    opt.max_m = max_m;
    parallel::TpLinear layer(shard, sh.split, comm, opt);
    std::unique_ptr<Linear> whole;
    if (rank == 0) whole = std::make_unique<Linear>(Linear::create(full.view(), opt));

    std::vector<std::uint16_t> x(static_cast<std::size_t>(max_m * sh.k));
    std::mt19937_64 g(99);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : x) v = float_to_half(nd(g));
    const std::int64_t k_in = sh.split == parallel::Split::row ? sh.k / tp : sh.k;
    std::vector<std::uint16_t> x_local(static_cast<std::size_t>(max_m * k_in));
    for (std::int64_t i = 0; i < max_m; ++i)
      std::memcpy(&x_local[i * k_in], &x[i * sh.k + shard.k_offset], k_in * 2);
    void *dx, *dxl, *dy, *dy1, *ws;
    ck(cudaMalloc(&dx, x.size() * 2), "x");
    ck(cudaMalloc(&dxl, x_local.size() * 2), "x local");
    ck(cudaMalloc(&dy, max_m * sh.n * 2), "y");
    ck(cudaMalloc(&dy1, max_m * sh.n * 2), "y1");
    std::size_t wsb = std::max(layer.workspace_bytes(), whole ? whole->workspace_bytes() : 0);
    ck(cudaMalloc(&ws, wsb + 256), "ws");
    ck(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice), "copy x");
    ck(cudaMemcpy(dxl, x_local.data(), x_local.size() * 2, cudaMemcpyHostToDevice), "copy x local");

    for (std::int64_t m : {1, 16, 1024}) {
      TensorView xv(dxl, DType::f16, {m, k_in}, Device::cuda, rank), yv(dy, DType::f16, {m, sh.n}, Device::cuda, rank);
      layer.run(xv, yv, ws, stream);
      ck(cudaStreamSynchronize(stream), "tp run");
      bench::TimerOptions to;
      to.calls = 20;
      bench::Timing t = bench::time_graph([&](int, cudaStream_t s) { layer.run(xv, yv, ws, s); }, to, stream);
      if (rank == 0) {
        std::vector<std::uint16_t> ytp(m * sh.n), y1(m * sh.n);
        ck(cudaMemcpy(ytp.data(), dy, ytp.size() * 2, cudaMemcpyDeviceToHost), "y back");
        TensorView xf(dx, DType::f16, {m, sh.k}, Device::cuda, 0), y1v(dy1, DType::f16, {m, sh.n}, Device::cuda, 0);
        whole->run(xf, y1v, ws, stream);
        ck(cudaStreamSynchronize(stream), "tp1 run");
        ck(cudaMemcpy(y1.data(), dy1, y1.size() * 2, cudaMemcpyDeviceToHost), "y1 back");
        double err = rel_err(ytp, y1);
        bench::Timing t1 = bench::time_graph([&](int, cudaStream_t s) { whole->run(xf, y1v, ws, s); }, to, stream);
        if (!(err < 2e-3)) ++failures;
        std::fprintf(csv, "%s,%s,%d,%lld,%.2f,%.2f,%.2f,%.2e\n", sh.name, std::string(parallel::split_name(sh.split)).c_str(), tp,
                     static_cast<long long>(m), t.median_us, t1.median_us, t1.median_us / t.median_us, err);
        std::fflush(csv);
      }
    }
    cudaFree(dx); cudaFree(dxl); cudaFree(dy); cudaFree(dy1); cudaFree(ws);
  }
  if (rank == 0) std::fprintf(stderr, "tp_bench: tp=%d %s\n", tp, failures ? "FAILED (tp output differs from tp=1)" : "outputs match tp=1");
  return failures ? 1 : 0;
}
