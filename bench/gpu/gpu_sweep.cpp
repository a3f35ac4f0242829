// The GPU sweep (see gpu_sweep.hpp): built-in rows for the CUDA decode kernel and cuBLAS.
#include "gpu_sweep.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include "decode/decode.hpp"
#include "dense_fill.hpp"
#include "gpu_timer.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::bench {
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(st)));
}

constexpr double kPeakTBps = 4.4;  // shared/PERF.md: read-only streaming ceiling of the H200

class DecodeBench final : public BenchKernel {
 public:
  explicit DecodeBench(std::int64_t max_m) : max_m_(max_m) {}
  std::string name() const override { return "cuda_decode"; }
  std::string refuses(const BenchCase&, std::int64_t m) const override {
    return max_m_ > 0 && m > max_m_ ? "M above --decode-max-m" : std::string();
  }
  void prepare(const BenchCase& c, const QuantizedLinear* q, int copies, cudaStream_t s) override {
    release();
    w_.push_back(kernels::cuda::tc_prepare(q->view(), c.act, s));
    for (int i = 1; i < copies; ++i) w_.push_back(kernels::cuda::tc_clone(*w_[0], s));
  }
  void run(int copy, const void* x, std::int64_t m, void* y, cudaStream_t s) override {
    const auto& w = *w_[static_cast<std::size_t>(copy) % w_.size()];
    kernels::cuda::decode_run(w, x, m, w.k, y, w.n, nullptr, 0, s);
  }
  std::string plan(std::int64_t m) const override {
    if (w_.empty()) return {};
    // The sweep's x rows are contiguous and 16-byte aligned, without act-order: x may be streamed.
    return kernels::cuda::decode_plan(w_[0]->n, w_[0]->k, static_cast<int>(std::min<std::int64_t>(m, 16)), w_[0]->zeros != nullptr,
                                      w_[0]->group_size, /*xstream_ok=*/!w_[0]->act_order).describe() +
           (m > 16 ? " x" + std::to_string((m + 15) / 16) + " launches" : "");
  }
  void release() override { w_.clear(); }

 private:
  std::int64_t max_m_;  // 0: every M
  std::vector<std::unique_ptr<kernels::cuda::TcWeights>> w_;
};

class CublasBench final : public BenchKernel {
 public:
  explicit CublasBench(DType dt) : dt_(dt) {}
  ~CublasBench() override {
    release();
    if (ws_) cudaFree(ws_);
    if (h_) cublasDestroy(h_);
  }
  std::string name() const override { return dt_ == DType::bf16 ? "cublas_bf16" : "cublas_f16"; }
  bool dense() const override { return true; }
  std::string refuses(const BenchCase& c, std::int64_t) const override {
    return c.act == dt_ ? std::string() : std::string("runs ") + std::string(dtype_name(dt_)) + " only";
  }
  void prepare(const BenchCase& c, const QuantizedLinear*, int copies, cudaStream_t s) override {
    release();
    if (!h_) {
      cublas_check(cublasCreate(&h_), "cublasCreate");
      // A fixed workspace: cuBLAS must not allocate inside graph capture.
      cuda_check(cudaMalloc(&ws_, kWs), "cublas workspace");
      cublas_check(cublasSetWorkspace(h_, ws_, kWs), "cublasSetWorkspace");
    }
    n_ = c.n;
    k_ = c.k;
    for (int i = 0; i < copies; ++i) {
      std::uint16_t* p = nullptr;
      cuda_check(cudaMalloc(&p, static_cast<std::size_t>(n_ * k_) * 2), "dense weights");
      cuda_check(dense_fill(p, n_ * k_, seed_, dt_ == DType::bf16, s), "dense_fill");  // every copy equal
      w_.push_back(p);
    }
    cuda_check(cudaStreamSynchronize(s), "dense fill sync");
  }
  void run(int copy, const void* x, std::int64_t m, void* y, cudaStream_t s) override {
    cublas_check(cublasSetStream(h_, s), "cublasSetStream");
    const float alpha = 1.f, beta = 0.f;
    const cudaDataType t = dt_ == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    // Row-major y[M,N] = x[M,K] W^T is column-major y^T (N x M) = W (K x N col-major)^T . x^T (K x M).
    cublas_check(cublasGemmEx(h_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n_), static_cast<int>(m), static_cast<int>(k_), &alpha,
                              w_[static_cast<std::size_t>(copy) % w_.size()], t, static_cast<int>(k_), x, t, static_cast<int>(k_), &beta,
                              y, t, static_cast<int>(n_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }
  double dense_weight(std::int64_t n, std::int64_t k) const override {
    const float v = dense_value(seed_, static_cast<std::uint64_t>(n * k_ + k));
    return f16x_to_float(dt_, float_to_f16x(dt_, v));
  }
  void release() override {
    for (auto* p : w_) cudaFree(p);
    w_.clear();
  }

 private:
  static constexpr std::size_t kWs = 32u << 20;
  DType dt_;
  cublasHandle_t h_ = nullptr;
  void* ws_ = nullptr;
  std::vector<std::uint16_t*> w_;
  std::int64_t n_ = 0, k_ = 0;
  std::uint64_t seed_ = 0x5eed1234abcdull;
};

std::vector<std::int64_t> sample_rows(std::int64_t n) {
  std::vector<std::int64_t> r;
  const std::int64_t count = std::min<std::int64_t>(n, 96);
  for (std::int64_t i = 0; i < count; ++i) r.push_back(i * (n - 1) / std::max<std::int64_t>(count - 1, 1));
  return r;
}

std::string fmt(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

constexpr const char* kCsvHeader =
    "kernel,shape,n,k,m,dtype,format,group,us,tb_per_s,pct_of_4.4TBps,tflops,speedup_vs_cublas_f16,rel_err,ok,plan\n";

std::string csv_line(const SweepRow& r) {
  std::ostringstream f;
  f << r.kernel << ',' << r.shape << ',' << r.n << ',' << r.k << ',' << r.m << ',' << r.dtype << ',' << r.format << ','
    << r.group << ',' << fmt(r.us, 3) << ',' << fmt(r.tbps, 4) << ',' << fmt(r.pct, 2) << ',' << fmt(r.tflops, 3) << ','
    << fmt(r.speedup_vs_cublas_f16, 3) << ',' << r.rel_err << ',' << (r.ok ? 1 : 0) << ",\"" << r.plan << "\"\n";
  return f.str();
}

}  // namespace

std::vector<SweepShape> perf_shapes() {
  return {{"qwen0.5b.qkv", 1152, 896},    {"qwen0.5b.o", 896, 896},      {"qwen0.5b.gate_up", 9728, 896},
          {"qwen0.5b.down", 896, 4864},   {"llama8b.qkv", 6144, 4096},   {"llama8b.o", 4096, 4096},
          {"llama8b.gate_up", 28672, 4096}, {"llama8b.down", 4096, 14336}, {"8192x8192", 8192, 8192},
          {"llama70b.gate_up", 57344, 8192}};
}

double call_bytes(const SweepRow& r) {
  const double N = static_cast<double>(r.n), K = static_cast<double>(r.k), M = static_cast<double>(r.m);
  const double act = 2 * M * K + 2 * M * N;
  if (r.format == "dense") return 2 * N * K + act;
  const double G = r.group == kChannelwise ? 1 : K / r.group;
  double b = N * K / 2 + N * G * 2 + act;
  if (r.format == "uint4") b += N * G / 2;
  return b;
}

std::vector<std::unique_ptr<BenchKernel>> builtin_kernels(std::int64_t decode_max_m) {
  std::vector<std::unique_ptr<BenchKernel>> v;
  v.push_back(std::make_unique<DecodeBench>(decode_max_m));
  v.push_back(std::make_unique<CublasBench>(DType::f16));
  v.push_back(std::make_unique<CublasBench>(DType::bf16));
  return v;
}

std::vector<SweepRow> run_gpu_sweep(const SweepOptions& opt_in, std::vector<std::unique_ptr<BenchKernel>> extra) {
  SweepOptions opt = opt_in;
  if (opt.shapes.empty()) opt.shapes = perf_shapes();
  if (opt.ms.empty()) opt.ms = {1, 2, 3, 4, 8, 12, 16, 32, 64};
  std::vector<std::unique_ptr<BenchKernel>> kernels;
  if (opt.builtin_kernels) kernels = builtin_kernels(opt.decode_max_m);
  if (!opt.builtin_cublas)
    kernels.erase(std::remove_if(kernels.begin(), kernels.end(), [](const auto& k) { return k->dense(); }), kernels.end());
  for (auto& e : extra) kernels.push_back(std::move(e));
  const std::int64_t max_m = *std::max_element(opt.ms.begin(), opt.ms.end());

  cudaStream_t s;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  std::vector<SweepRow> rows;
  std::unique_ptr<std::ofstream> progress;
  if (!opt.progress_csv.empty()) {
    progress = std::make_unique<std::ofstream>(opt.progress_csv);
    *progress << kCsvHeader;
  }
  TimerOptions topt;
  topt.replays = std::max(opt.replays, 7);

  for (const SweepShape& sh : opt.shapes) {
    const std::int64_t N = sh.n, K = sh.k;
    const std::vector<std::int64_t> srows = sample_rows(N);
    void *xd = nullptr, *yd = nullptr;
    cuda_check(cudaMalloc(&xd, static_cast<std::size_t>(max_m * K) * 2), "x");
    cuda_check(cudaMalloc(&yd, static_cast<std::size_t>(max_m * N) * 2), "y");
    std::vector<std::uint16_t> yh(static_cast<std::size_t>(max_m * N));

    // Reference on the sampled rows for all max_m tokens (token t's output does not depend on M).
    auto reference = [&](const std::vector<double>& xf, const std::function<double(std::int64_t, std::int64_t)>& wref) {
      std::vector<double> wr(srows.size() * static_cast<std::size_t>(K));
      for (std::size_t i = 0; i < srows.size(); ++i)
        for (std::int64_t kk = 0; kk < K; ++kk) wr[i * static_cast<std::size_t>(K) + static_cast<std::size_t>(kk)] = wref(srows[i], kk);
      std::vector<double> ref(static_cast<std::size_t>(max_m) * srows.size());
      // Host time, not device time, bounds a sweep at large M: one row of tokens per thread.
#pragma omp parallel for schedule(static)
      for (std::int64_t t = 0; t < max_m; ++t)
        for (std::size_t i = 0; i < srows.size(); ++i) {
          const double* xr = &xf[static_cast<std::size_t>(t * K)];
          const double* w = &wr[i * static_cast<std::size_t>(K)];
          double acc = 0;
          for (std::int64_t kk = 0; kk < K; ++kk) acc += xr[kk] * w[kk];
          ref[static_cast<std::size_t>(t) * srows.size() + i] = acc;
        }
      return ref;
    };
    // Times and checks one prepared kernel on every M against `refall` (max_m x sampled rows).
    auto measure = [&](BenchKernel& kern, const BenchCase& c, const std::string& format, int group, const std::vector<double>& refall,
                       int copies) {
      for (std::int64_t m : opt.ms) {
        if (!kern.refuses(c, m).empty()) continue;
        SweepRow r;
        r.kernel = kern.name();
        r.shape = sh.name;
        r.n = N; r.k = K; r.m = m;
        r.dtype = std::string(dtype_name(c.act));
        r.format = format;
        r.group = group;
        // Correctness first, on copy 0, poisoned output.
        cuda_check(cudaMemsetAsync(yd, 0xff, static_cast<std::size_t>(m * N) * 2, s), "poison y");
        kern.run(0, xd, m, yd, s);
        cuda_check(cudaStreamSynchronize(s), "check run");
        cuda_check(cudaMemcpy(yh.data(), yd, static_cast<std::size_t>(m * N) * 2, cudaMemcpyDeviceToHost), "y down");
        std::vector<double> out, ref(refall.begin(), refall.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(m) * srows.size()));
        for (std::int64_t t = 0; t < m; ++t)
          for (std::int64_t n : srows) out.push_back(f16x_to_float(c.act, yh[static_cast<std::size_t>(t * N + n)]));
        r.rel_err = test::rel_error(out, ref);
        r.ok = r.rel_err <= test::tolerance(c.act);
        Timing tm = time_graph([&](int i, cudaStream_t st) { kern.run(i % copies, xd, m, yd, st); }, [&] {
          TimerOptions o = topt;
          o.copies = copies;
          return o;
        }(), s);
        r.us = tm.median_us;
        r.tbps = call_bytes(r) / (r.us * 1e-6) / 1e12;
        r.pct = 100.0 * r.tbps / kPeakTBps;
        r.tflops = 2.0 * static_cast<double>(m) * N * K / (r.us * 1e-6) / 1e12;
        r.plan = kern.plan(m);
        if (opt.verbose)
          std::fprintf(stderr, "%-12s %-17s M=%-3lld %-8s %-7s g=%-4d %9.2f us %6.2f TB/s %5.1f%% err=%.1e %s %s\n", r.kernel.c_str(),
                       r.shape.c_str(), static_cast<long long>(m), r.dtype.c_str(), r.format.c_str(), r.group, r.us, r.tbps, r.pct,
                       r.rel_err, r.ok ? "ok" : "FAIL", r.plan.c_str());
        rows.push_back(r);
        if (progress) { *progress << csv_line(r); progress->flush(); }
      }
    };

    for (DType act : opt.dtypes) {
      std::vector<std::uint16_t> xh = test::random_act(max_m, K, act);
      cuda_check(cudaMemcpy(xd, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice), "x up");
      const std::vector<double> xf = test::to_f64(xh.data(), act, max_m, K, K);
      BenchCase c{sh.name, N, K, act, ScalarType::uint4b8, 0};
      for (auto& kern : kernels) {
        if (!kern->dense() || !kern->refuses(c, 1).empty()) continue;
        const int copies = cold_l2_copies(static_cast<std::size_t>(N * K * 2));
        kern->prepare(c, nullptr, copies, s);
        BenchKernel* kp = kern.get();
        const auto refall = reference(xf, [kp](std::int64_t n, std::int64_t k) { return kp->dense_weight(n, k); });
        measure(*kern, c, "dense", 0, refall, copies);
        kern->release();
      }
    }
    std::vector<int> groups = opt.groups;
    if (sh.name == opt.extra_group_shape)
      for (int g : opt.extra_groups)
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    for (ScalarType st : opt.scalars)
      for (int g : groups) {
        QuantSpec spec{N, K, g, st};
        if (g != kChannelwise && K % g != 0) continue;
        for (DType act : opt.dtypes) {
          QuantizedLinear q = test::random_linear(spec, act, false, false);
          const CanonicalView v = q.view();
          std::vector<std::uint16_t> xh = test::random_act(max_m, K, act);
          cuda_check(cudaMemcpy(xd, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice), "x up");
          const std::vector<double> xf = test::to_f64(xh.data(), act, max_m, K, K);
          BenchCase c{sh.name, N, K, act, st, g};
          const std::size_t qbytes = static_cast<std::size_t>(N * K / 2 + N * spec.groups() * 2);
          const int copies = cold_l2_copies(qbytes);
          const auto refall = reference(xf, [&v](std::int64_t n, std::int64_t k) { return static_cast<double>(v.w(n, k)); });
          for (auto& kern : kernels) {
            if (kern->dense() || !kern->refuses(c, 1).empty()) continue;
            kern->prepare(c, &q, copies, s);
            measure(*kern, c, std::string(scalar_type_name(st)), g, refall, copies);
            kern->release();
          }
        }
      }
    cudaFree(xd);
    cudaFree(yd);
  }
  cudaStreamDestroy(s);

  std::map<std::pair<std::string, std::int64_t>, double> base;
  for (const auto& r : rows)
    if (r.kernel == "cublas_f16") base[{r.shape, r.m}] = r.us;
  for (auto& r : rows) {
    auto it = base.find({r.shape, r.m});
    r.speedup_vs_cublas_f16 = it == base.end() ? 0.0 : it->second / r.us;
  }
  return rows;
}

void write_csv(const std::vector<SweepRow>& rows, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << kCsvHeader;
  for (const auto& r : rows) f << csv_line(r);
}

std::string format_table(const std::vector<SweepRow>& rows) {
  std::ostringstream o;
  char b[256];
  std::snprintf(b, sizeof b, "%-12s %-17s %4s %-8s %-7s %5s %9s %6s %6s %7s %s\n", "kernel", "shape", "M", "dtype", "format", "g", "us",
                "TB/s", "%peak", "xcuBLAS", "check");
  o << b;
  for (const auto& r : rows) {
    std::snprintf(b, sizeof b, "%-12s %-17s %4lld %-8s %-7s %5d %9.2f %6.2f %6.1f %7.2f %s\n", r.kernel.c_str(), r.shape.c_str(),
                  static_cast<long long>(r.m), r.dtype.c_str(), r.format.c_str(), r.group, r.us, r.tbps, r.pct,
                  r.speedup_vs_cublas_f16, r.ok ? "ok" : "FAIL");
    o << b;
  }
  return o.str();
}

}  // namespace w4a16::bench
