// w4a16 bench: the benchmark sweep of shared/PERF.md for the backends this build has:
// bench/cpu run_cpu_sweep (fast_gemm vs the machine's measured read bandwidth) and, in CUDA
// builds, bench/gpu run_gpu_sweep (graph replay, cold L2, cuBLAS peers in the same run).
// The sweeps own timing and checking; this file maps flags onto their options.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli.hpp"
#include "device.hpp"
#include "w4a16/core/canonical.hpp"

#ifdef W4A16_TOOL_HAVE_CPU_BENCH
#include "cpu_sweep.hpp"
#endif
#ifdef W4A16_TOOL_HAVE_GPU_BENCH
#include "gpu_sweep.hpp"
#endif

namespace w4a16::cli {
namespace {

struct Common {
  std::vector<std::string> shapes;
  std::vector<std::int64_t> ms;
  std::vector<DType> dtypes;
  std::vector<ScalarType> scalars;
  std::vector<int> groups;
  std::string csv;
  int repeats = 0;  // 0: the sweep's default
  bool quick = false;
};

Common common_options(const ParsedArgs& a) {
  Common c;
  c.shapes = a.get_list("shapes");
  c.ms = a.get_int_list("m");
  for (std::int64_t m : c.ms)
    if (m < 1) usage_fail("--m", "M values >= 1", std::to_string(m));
  for (const auto& d : a.get_list("dtype")) c.dtypes.push_back(parse_act_dtype(d, "--dtype"));
  for (const auto& s : a.get_list("scalar")) {
    auto t = parse_scalar_type(s);
    if (!t) usage_fail("--scalar", "uint4b8 or uint4", "'" + s + "'");
    c.scalars.push_back(*t);
  }
  for (std::int64_t g : a.get_int_list("group-size")) {
    if (!is_supported_group_size(static_cast<int>(g)))
      usage_fail("--group-size", "32, 64, 128, 256 or -1 (channelwise)", std::to_string(g));
    c.groups.push_back(static_cast<int>(g));
  }
  c.csv = a.get_or("csv", "");
  c.repeats = static_cast<int>(a.get_int("repeats", 0));
  if (a.has("repeats") && c.repeats < 1) usage_fail("--repeats", "a count >= 1", std::to_string(c.repeats));
  c.quick = a.has("quick");
  return c;
}

#ifdef W4A16_TOOL_HAVE_CPU_BENCH
int bench_cpu(const ParsedArgs& a, const Common& c) {
  bench::CpuSweepOptions o;
  if (c.quick) {  // a short smoke run: the small Qwen shapes, decode and a short prefill
    o.shapes = {bench::parse_cpu_shape("qwen0.5b.o"), bench::parse_cpu_shape("qwen0.5b.qkv")};
    o.ms = {1, 16};
    o.repeats = 3;
    o.bw_buffer_mb = 256;
  }
  if (!c.shapes.empty()) o.shapes.clear();
  for (const auto& s : c.shapes) o.shapes.push_back(bench::parse_cpu_shape(s, "--shapes"));
  if (!c.ms.empty()) o.ms = c.ms;
  if (!c.dtypes.empty()) o.dtypes = c.dtypes;
  if (!c.scalars.empty()) o.scalars = c.scalars;
  if (!c.groups.empty()) o.groups = c.groups;
  if (c.repeats) o.repeats = c.repeats;
  o.csv_path = c.csv;
  o.threads = static_cast<int>(a.get_int("threads", 0));
  if (o.threads < 0) usage_fail("--threads", "a count >= 0 (0 = all cores)", std::to_string(o.threads));
  o.bw_buffer_mb = a.get_int("bw-mb", o.bw_buffer_mb);
  if (o.bw_buffer_mb < 1) usage_fail("--bw-mb", "MiB >= 1", std::to_string(o.bw_buffer_mb));
  o.check = !a.has("no-check");
  if (a.has("isa")) {
    o.isas = a.get_list("isa");
    for (const auto& s : o.isas)
      if (s != "best" && s != "scalar" && s != "avx2" && s != "amx") usage_fail("--isa", "best, scalar, avx2 or amx", s);
  }
  o.log = &std::cerr;
  const int rc = bench::run_cpu_sweep(o);
  if (rc != 0)
    fail(ErrorCode::internal, "check", "every timed configuration within tolerance of reference_gemm",
         "at least one FAIL (see the check column)");
  return 0;
}
#endif

#ifdef W4A16_TOOL_HAVE_GPU_BENCH
int bench_gpu(const ParsedArgs& a, const Common& c) {
  bench::SweepOptions o;
  if (c.quick) {
    o.shapes = {{"qwen0.5b.o", 896, 896}, {"llama8b.gate_up", 28672, 4096}, {"8192x8192", 8192, 8192}};
    o.ms = {1, 4, 16};
    o.extra_groups.clear();
  }
  if (!c.shapes.empty()) o.shapes.clear();
  for (const auto& s : c.shapes) {  // one shape syntax for both devices: NxK or a PERF.md name
    bench::CpuShape sh = bench::parse_cpu_shape(s, "--shapes");
    o.shapes.push_back({sh.name, sh.n, sh.k});
  }
  if (!c.ms.empty()) o.ms = c.ms;
  if (!c.dtypes.empty()) o.dtypes = c.dtypes;
  if (!c.scalars.empty()) o.scalars = c.scalars;
  if (!c.groups.empty()) {
    o.groups = c.groups;
    o.extra_groups.clear();  // the groups asked for, and only those
  }
  if (c.repeats) o.replays = c.repeats;
  o.builtin_cublas = !a.has("no-peers");
  const std::string csv = c.csv.empty() ? "w4a16_bench_gpu.csv" : c.csv;
  o.progress_csv = csv;  // rows survive a cut run; rewritten with the speedups at the end
  std::vector<bench::SweepRow> rows = bench::run_gpu_sweep(o);
  bench::write_csv(rows, csv);
  std::printf("%s", bench::format_table(rows).c_str());
  int bad = 0;
  for (const auto& r : rows) bad += r.ok ? 0 : 1;
  std::printf("%zu rows, %d failed the check; CSV: %s\n", rows.size(), bad, csv.c_str());
  if (bad)
    fail(ErrorCode::internal, "check", "every timed configuration within tolerance of the f64 reference",
         std::to_string(bad) + " rows failing (ok = 0 in " + csv + ")");
  return 0;
}
#endif

// One PNG per shape from the sweep's CSV through bench/gpu/plot.py, where python3 has
// matplotlib; otherwise a note and no plots (the CSV is the result, the plots a view of it).
void write_plots(const std::string& csv, const std::string& dir) {
  const std::string script = W4A16_PLOT_SCRIPT;
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "w4a16 bench: no plots: python3 with matplotlib not found (CSV: %s)\n", csv.c_str());
    return;
  }
  const std::string cmd = "python3 '" + script + "' '" + csv + "' --out '" + dir + "'";
  if (std::system(cmd.c_str()) != 0)
    fail(ErrorCode::io_error, "--plots", "bench/gpu/plot.py to write PNGs into '" + dir + "'", "a failure running " + script);
}

int run_bench_sweep(const ParsedArgs& a);

int run_bench(const ParsedArgs& a) {
  if (a.has("plots") && a.get_or("csv", "").empty())
    usage_fail("--plots", "--csv FILE as well (the plots are drawn from the CSV)", "no --csv");
  const int rc = run_bench_sweep(a);
  if (rc == 0 && a.has("plots")) write_plots(a.get_or("csv", ""), a.get_or("plots", ""));
  return rc;
}

int run_bench_sweep(const ParsedArgs& a) {
  const std::string dev = a.get_choice("device", {"cpu", "cuda"}, cuda_device_present() ? "cuda" : "cpu");
  const Common c = common_options(a);
  if (dev == "cuda") {
    parse_device("cuda", "--device");  // a usage error in a build without CUDA
#ifdef W4A16_TOOL_HAVE_GPU_BENCH
    if (a.has("threads") || a.has("bw-mb") || a.has("no-check") || a.has("isa"))
      usage_fail("--threads/--bw-mb/--no-check/--isa", "--device cpu (CPU sweep options)", "--device cuda");
    return bench_gpu(a, c);
#else
    fail(ErrorCode::unsupported, "--device", "a build with the GPU sweep (bench/gpu, W4A16_BUILD_BENCH=ON)", "cuda");
#endif
  }
  if (a.has("no-peers")) usage_fail("--no-peers", "--device cuda (the GPU sweep's cuBLAS rows)", "--device cpu");
#ifdef W4A16_TOOL_HAVE_CPU_BENCH
  return bench_cpu(a, c);
#else
  fail(ErrorCode::unsupported, "--device", "a build with the CPU sweep (bench/cpu, W4A16_BUILD_BENCH=ON)", "cpu");
#endif
}

}  // namespace

Command bench_command() {
  return {{"bench",
           "the benchmark sweep of shared/PERF.md (CPU; GPU in CUDA builds), CSV out",
           {},
           {{"device", "D", "cpu or cuda", "cuda if a GPU is present, else cpu"},
            {"csv", "FILE", "write the CSV to FILE", "cpu: stdout; cuda: w4a16_bench_gpu.csv"},
            {"shapes", "LIST", "N x K shapes or PERF.md names, e.g. 8192x8192,llama8b.down", "the 10 PERF.md shapes"},
            {"m", "LIST", "M values, e.g. 1,4,16", "cpu: 1,4,16,64; cuda: 1,2,3,4,8,12,16,32,64"},
            {"dtype", "LIST", "activation dtypes: float16,bfloat16", "cpu: float16; cuda: both"},
            {"scalar", "LIST", "uint4b8,uint4", "both"},
            {"group-size", "LIST", "group sizes, -1 = channelwise", "128 (cuda: also 32,64,256,-1 on 8192x8192)"},
            {"repeats", "R", "samples per median (cpu) / graph replays (cuda)", "cpu 7, cuda 9"},
            {"quick", "", "a short smoke sweep (a few shapes and M values)"},
            {"threads", "T", "cpu: threads, 0 = all cores", "0"},
            {"bw-mb", "MB", "cpu: buffer of the read-bandwidth measurement, MiB", "1024"},
            {"no-check", "", "cpu: skip the comparison with reference_gemm"},
            {"isa", "LIST", "cpu: fast_gemm implementations timed side by side (best, scalar, avx2, vnni, amx; one the CPU lacks is skipped)", "best"},
            {"no-peers", "", "cuda: skip the cuBLAS rows"},
            {"plots", "DIR", "also a PNG per shape into DIR (needs --csv, python3 with matplotlib)", "no plots"}},
           "Every timed configuration is also checked against a reference in the same run; the\n"
           "command fails (exit 1) if one is outside its tolerance. --plots draws bench/gpu/plot.py's PNGs."},
          run_bench};
}

}  // namespace w4a16::cli
