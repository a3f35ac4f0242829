// The CPU benchmark sweep (contract in cpu_sweep.hpp).
#include "cpu_sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fast.hpp"
#include "reference.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace w4a16::bench {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int resolve_threads(int t) {
#if defined(_OPENMP)
  return t > 0 ? t : omp_get_max_threads();
#else
  return 1;
#endif
}

// splitmix64: fast, full-period filler (the bench must not time on zeros).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-24f; }  // [0, 1)
  float normalish() { return (uniform() + uniform() + uniform() + uniform() - 2.f) * 1.7320508f; }  // mean 0, var 1
};

QuantizedLinear random_layer(const QuantSpec& s, DType scale_dtype, Rng& rng) {
  QuantizedLinear q(s, scale_dtype, /*has_bias=*/true, /*act_order=*/false);
  auto fill_words = [&](HostTensor& t) {
    auto* p = t.ptr<std::uint32_t>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<std::uint32_t>(rng.next());
  };
  fill_words(q.qweight());
  if (s.has_zeros()) fill_words(q.zeros());
  auto* sc = q.scales().ptr<std::uint16_t>();
  for (std::int64_t i = 0; i < q.scales().numel(); ++i) sc[i] = float_to_f16x(scale_dtype, (0.5f + rng.uniform()) * 0.02f);
  auto* b = q.bias().ptr<std::uint16_t>();
  for (std::int64_t i = 0; i < s.n; ++i) b[i] = float_to_f16x(scale_dtype, rng.normalish());
  return q;
}

// Rows [n0, n0 + rows) of a canonical view as a layer of its own (rows of W are independent).
CanonicalView row_slice(const CanonicalView& w, std::int64_t n0, std::int64_t rows) {
  CanonicalView v = w;
  v.spec.n = rows;
  const std::int64_t G = w.spec.groups();
  v.qweight = w.qweight + n0 * w.words_per_row();
  v.scales = w.scales + n0 * G;
  if (w.zeros.defined()) {
    // PackedZeros::from validates the sliced [rows/8, G] view like any other
    TensorView z(const_cast<std::int32_t*>(w.zeros.data() + (n0 / 8) * G), DType::i32, {rows / 8, G});
    v.zeros = PackedZeros::from(z, v.spec, "zeros");
  }
  if (w.bias) v.bias = w.bias + n0;
  return v;
}

std::string group_text(int g) { return std::to_string(g); }

}  // namespace

// Last-level cache size in bytes: sysfs first (a VM's sysconf may report the host's L3),
// then glibc sysconf, else a generous 32 MiB.
std::int64_t llc_bytes() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string s;
  if (f >> s && !s.empty()) {
    std::int64_t n = std::atoll(s.c_str());
    if (s.back() == 'K') n <<= 10;
    if (s.back() == 'M') n <<= 20;
    if (n > 0) return n;
  }
#if defined(_SC_LEVEL3_CACHE_SIZE)
  long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (v > 0) return v;
#endif
  return std::int64_t{32} << 20;
}

std::vector<CpuShape> cpu_perf_shapes() {
  return {{"qwen0.5b.o", 896, 896},          {"qwen0.5b.qkv", 1152, 896},  {"qwen0.5b.down", 896, 4864},
          {"qwen0.5b.gate_up", 9728, 896},   {"llama8b.o", 4096, 4096},    {"llama8b.qkv", 6144, 4096},
          {"llama8b.down", 4096, 14336},     {"8192x8192", 8192, 8192},    {"llama8b.gate_up", 28672, 4096},
          {"llama70b.gate_up", 57344, 8192}};
}

CpuShape parse_cpu_shape(const std::string& s, const std::string& arg) {
  for (const CpuShape& c : cpu_perf_shapes())
    if (c.name == s) return c;
  const auto x = s.find('x');
  if (x != std::string::npos && x > 0 && x + 1 < s.size()) {
    char* e1 = nullptr;
    char* e2 = nullptr;
    const long long n = std::strtoll(s.c_str(), &e1, 10), k = std::strtoll(s.c_str() + x + 1, &e2, 10);
    if (e1 == s.c_str() + x && *e2 == '\0' && n > 0 && k > 0) return {s, n, k};
  }
  fail(ErrorCode::invalid_argument, arg, "N x K (e.g. 8192x8192) or a PERF.md shape name (e.g. llama8b.down)", "'" + s + "'");
}

double measure_read_bandwidth(int threads, std::int64_t buffer_mb, int repeats, int rounds) {
  const int nt = resolve_threads(threads);
  const std::int64_t words = (buffer_mb << 20) / 8;
  std::vector<std::uint64_t> buf(static_cast<std::size_t>(words));
  std::uint64_t* p = buf.data();
  // First touch by the threads that read it later (matters on NUMA hosts).
#pragma omp parallel for schedule(static) num_threads(nt)
  for (std::int64_t i = 0; i < words; ++i) p[i] = static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull;
  volatile std::uint64_t sink = 0;
  double best = 0;
  for (int r = 0; r < std::max(1, rounds); ++r) {
    std::vector<double> gbs;
    for (int i = 0; i < std::max(1, repeats) + 1; ++i) {  // +1: the first pass is a warm-up
      const auto t0 = Clock::now();
      std::uint64_t sum = 0;
      // Integer sum: associative, so the compiler vectorizes it without -ffast-math; a
      // 16-byte load per element pair is far above what DRAM delivers per core.
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(nt)
      for (std::int64_t j = 0; j < words; ++j) sum += p[j];
      const double t = seconds_since(t0);
      sink = sink + sum;
      if (i > 0) gbs.push_back(static_cast<double>(words * 8) / t / 1e9);
    }
    best = std::max(best, median(gbs));
  }
  (void)sink;
  return best;
}

int run_cpu_sweep(const CpuSweepOptions& opt) {
  std::ostream& log = opt.log ? *opt.log : std::cerr;
  if (opt.repeats < 1) fail(ErrorCode::invalid_argument, "repeats", ">= 1", std::to_string(opt.repeats));
  if (opt.rounds < 1) fail(ErrorCode::invalid_argument, "rounds", ">= 1", std::to_string(opt.rounds));
  if (opt.threads < 0) fail(ErrorCode::invalid_argument, "threads", ">= 0 (0 = all)", std::to_string(opt.threads));
  if (opt.ms.empty()) fail(ErrorCode::invalid_argument, "m", "at least one M", "an empty list");
  for (std::int64_t m : opt.ms)
    if (m < 1) fail(ErrorCode::invalid_argument, "m", "M >= 1", std::to_string(m));
  for (DType d : opt.dtypes)
    if (!is_activation_dtype(d)) fail(ErrorCode::invalid_argument, "dtype", "float16 or bfloat16", std::string(dtype_name(d)));
  for (int g : opt.groups)
    if (!is_supported_group_size(g)) fail(ErrorCode::invalid_argument, "group", "32, 64, 128, 256 or -1", std::to_string(g));

  std::ofstream file;
  if (!opt.csv_path.empty()) {
    file.open(opt.csv_path);
    if (!file) fail(ErrorCode::io_error, "csv", "a writable file", "'" + opt.csv_path + "'");
  }
  std::ostream& csv = opt.csv_path.empty() ? std::cout : file;
  const std::vector<CpuShape> shapes = opt.shapes.empty() ? cpu_perf_shapes() : opt.shapes;
  const int threads = resolve_threads(opt.threads);
  const std::string isa(kernels::cpu::fast_isa_name(kernels::cpu::FastIsa::best));
  std::vector<kernels::cpu::FastIsa> isas;
  for (const std::string& name : opt.isas) {
    const auto i = kernels::cpu::fast_isa_from_name(name);
    if (!i) fail(ErrorCode::invalid_argument, "isa", "best, scalar, avx2, vnni or amx", "'" + name + "'");
    if (!kernels::cpu::fast_isa_available(*i)) {
      log << "skip isa " << name << ": this CPU (or build) does not run it\n";
      continue;
    }
    isas.push_back(*i);
  }
  const std::int64_t llc = llc_bytes();

  const double bw = measure_read_bandwidth(threads, opt.bw_buffer_mb, opt.repeats, opt.rounds);
  log << "w4a16_bench_cpu: read bandwidth " << bw << " GB/s (" << threads << " threads, " << opt.bw_buffer_mb
      << " MiB buffer, LLC " << (llc >> 20) << " MiB), fast_gemm isa " << isa << "\n";
  csv << "kernel,shape,n,k,M,dtype,format,group,us,GB/s,pct_of_bw,GFLOP/s,bw_GBps,threads,isa,rel_err,check\n";

  Rng rng{0x5eed};
  int failures = 0;
  for (const CpuShape& sh : shapes)
    for (ScalarType st : opt.scalars)
      for (int g : opt.groups)
        for (DType dt : opt.dtypes) {
          const QuantSpec spec{sh.n, sh.k, g, st};
          std::string why;
          if (!kernels::cpu::fast_supports(dt, spec, &why)) {
            log << "skip " << sh.name << " " << spec.describe() << ": " << why << "\n";
            continue;
          }
          const QuantizedLinear layer = random_layer(spec, dt, rng);
          const CanonicalView cv = layer.view();
          std::vector<kernels::cpu::FastWeights> copies;
          copies.push_back(kernels::cpu::fast_prepare(cv, dt));
          const std::int64_t wbytes = static_cast<std::int64_t>(copies[0].bytes());
          const std::int64_t ncopies = std::clamp<std::int64_t>((3 * llc + wbytes - 1) / wbytes, 1, 512);
          for (std::int64_t c = 1; c < ncopies; ++c) copies.push_back(copies[0]);
          const std::int64_t G = spec.groups();
          const double moved_w = static_cast<double>(sh.n * sh.k / 2 + sh.n * G * 2 + (spec.has_zeros() ? sh.n * G / 2 : 0));

          for (std::int64_t m : opt.ms) {
            std::vector<std::uint16_t> xs(static_cast<std::size_t>(m * sh.k)), ys(static_cast<std::size_t>(m * sh.n));
            for (auto& v : xs) v = float_to_f16x(dt, rng.normalish());
            const TensorView x(xs.data(), dt, {m, sh.k}), y(ys.data(), dt, {m, sh.n});
           for (kernels::cpu::FastIsa fi : isas) {
            const std::string ran(kernels::cpu::fast_isa_name(kernels::cpu::fast_isa_for(fi, m)));
            std::fill(ys.begin(), ys.end(), std::uint16_t{0x7e00});  // NaN in both dtypes: a row left unwritten fails the check
            std::size_t idx = 0;
            auto call = [&] { kernels::cpu::fast_gemm_isa(copies[idx++ % copies.size()], x, y, fi, opt.threads); };
            call();  // warm-up: thread pool, scratch buffers, page faults
            // Calls per sample from the fastest of 3 calls: one call stretched by a descheduled
            // thread (the 2 cores here are shared) must not shrink every sample to one call.
            double once = 1e30;
            auto t0 = Clock::now();
            for (int i = 0; i < 3; ++i) {
              t0 = Clock::now();
              call();
              once = std::min(once, seconds_since(t0));
            }
            const std::int64_t batch = std::max<std::int64_t>(1, static_cast<std::int64_t>(opt.sample_ms * 1e-3 / once));
            double best = 1e30;
            for (int r = 0; r < opt.rounds; ++r) {
              std::vector<double> samples;
              for (int i = 0; i < opt.repeats; ++i) {
                t0 = Clock::now();
                for (std::int64_t b = 0; b < batch; ++b) call();
                samples.push_back(seconds_since(t0) / static_cast<double>(batch));
              }
              best = std::min(best, median(samples));
            }

            // Check the last output (of copy idx - 1; all copies are equal) on the first and last
            // 64 columns against the reference on the same rows of W.
            double err = 0;
            std::string verdict = "skipped";
            if (opt.check) {
              const std::int64_t cols = std::min<std::int64_t>(64, sh.n);
              const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
              double num = 0, den = 0;
              for (std::int64_t n0 : {std::int64_t{0}, sh.n - cols}) {
                std::vector<float> ref(static_cast<std::size_t>(m * cols));
                kernels::cpu::reference_gemm(row_slice(cv, n0, cols), x, TensorView(ref.data(), DType::f32, {m, cols}));
                for (std::int64_t i = 0; i < m; ++i)
                  for (std::int64_t j = 0; j < cols; ++j) {
                    const double r = ref[static_cast<std::size_t>(i * cols + j)];
                    const double o = f16x_to_float(dt, ys[static_cast<std::size_t>(i * sh.n + n0 + j)]);
                    num += (o - r) * (o - r);
                    den += r * r;
                  }
              }
              err = std::isfinite(num) ? std::sqrt(num / std::max(den, 1e-300)) : INFINITY;
              verdict = err <= tol ? "ok" : "FAIL";
              if (err > tol) ++failures;
            }
            const double bytes = moved_w + static_cast<double>(m * sh.k * 2 + m * sh.n * 2);
            const double gbs = bytes / best / 1e9;
            const double gflops = 2.0 * static_cast<double>(m) * static_cast<double>(sh.n) * static_cast<double>(sh.k) / best / 1e9;
            char line[512];
            std::snprintf(line, sizeof line, "fast_gemm,%s,%lld,%lld,%lld,%s,%s,%s,%.1f,%.2f,%.1f,%.2f,%.2f,%d,%s,%.2e,%s",
                          sh.name.c_str(), static_cast<long long>(sh.n), static_cast<long long>(sh.k),
                          static_cast<long long>(m), std::string(dtype_name(dt)).c_str(),
                          std::string(scalar_type_name(st)).c_str(), group_text(g).c_str(), best * 1e6, gbs,
                          100.0 * gbs / bw, gflops, bw, threads, ran.c_str(), err, verdict.c_str());
            csv << line << "\n" << std::flush;
            log << line << "  (" << ncopies << " weight copies, " << batch << " calls/sample)\n" << std::flush;
           }
          }
        }
  // Bandwidth again at the end; the CSV rows used the first figure, the log says both.
  const double bw_end = measure_read_bandwidth(threads, opt.bw_buffer_mb, opt.repeats, opt.rounds);
  log << "w4a16_bench_cpu: read bandwidth at the end " << bw_end << " GB/s (start " << bw << ")\n";
  if (failures) log << "w4a16_bench_cpu: " << failures << " configuration(s) FAILED the reference check\n";
  return failures ? 1 : 0;
}

}  // namespace w4a16::bench
