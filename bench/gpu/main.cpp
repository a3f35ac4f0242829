// w4a16_bench_gpu: the GPU sweep of shared/PERF.md (decode kernel + cuBLAS fp16/bf16, same process).
//   w4a16_bench_gpu [--csv PATH] [--shapes a,b] [--ms 1,2,4] [--dtypes f16,bf16] [--quick] [--no-extra-groups]
//                   [--no-cublas] [--decode-max-m M] [--scalars uint4b8,uint4] [--prefill] [--registry name,name] [--groups 128,32]
// Writes the CSV, prints the table; exit status 1 if any timed configuration failed its check.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "gpu_sweep.hpp"
#include "prefill_rows.hpp"
#include "registry_rows.hpp"

namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) v.push_back(t);
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace w4a16;
  bench::SweepOptions opt;
  std::string csv = "w4a16_bench_gpu.csv";
  std::vector<std::string> shape_filter;
  bool with_prefill = false;
  std::vector<std::string> registry_names;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--csv") csv = next();
    else if (a == "--shapes") shape_filter = split(next());
    else if (a == "--ms") { opt.ms.clear(); for (auto& t : split(next())) opt.ms.push_back(std::stoll(t)); }
    else if (a == "--dtypes") {
      opt.dtypes.clear();
      for (auto& t : split(next())) {
        auto d = parse_dtype(t);
        if (!d || !is_activation_dtype(*d)) { std::fprintf(stderr, "--dtypes: expected f16 or bf16, got %s\n", t.c_str()); return 2; }
        opt.dtypes.push_back(*d);
      }
    } else if (a == "--quick") {
      shape_filter = {"qwen0.5b.o", "qwen0.5b.gate_up", "llama8b.down", "llama8b.gate_up", "8192x8192"};
      opt.ms = {1, 4, 8, 16};
    } else if (a == "--no-extra-groups") opt.extra_groups.clear();
    else if (a == "--no-cublas") opt.builtin_cublas = false;
    else if (a == "--decode-max-m") opt.decode_max_m = std::stoll(next());  // skip direct decode rows above (they lose from M = 32)
    else if (a == "--prefill") with_prefill = true;
    else if (a == "--registry") registry_names = split(next());  // registered kernels through w4a16::Linear
    else if (a == "--groups") { opt.groups.clear(); for (auto& t : split(next())) opt.groups.push_back(std::stoi(t)); }
    else if (a == "--scalars") {
      opt.scalars.clear();
      for (auto& t : split(next())) {
        auto st = parse_scalar_type(t);
        if (!st) { std::fprintf(stderr, "--scalars: expected uint4b8 or uint4, got %s\n", t.c_str()); return 2; }
        opt.scalars.push_back(*st);
      }
    }
    else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [--csv PATH] [--shapes a,b] [--ms 1,2,4] [--dtypes f16,bf16] [--quick] [--no-extra-groups] [--no-cublas] [--decode-max-m M] [--scalars uint4b8,uint4] [--prefill] [--registry name,name] [--groups 128]\n", argv[0]);
      return 0;
    } else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  for (const auto& s : bench::perf_shapes()) {
    if (shape_filter.empty()) { opt.shapes.push_back(s); continue; }
    for (const auto& f : shape_filter)
      if (s.name == f) opt.shapes.push_back(s);
  }
  if (opt.shapes.empty()) { std::fprintf(stderr, "--shapes matched no PERF.md shape\n"); return 2; }
  opt.progress_csv = csv;  // rewritten with the speedups at the end
  try {
    std::vector<std::unique_ptr<bench::BenchKernel>> extra;
    if (with_prefill) extra = bench::make_prefill_bench_kernels();
    std::int64_t max_m = 1;
    for (auto m : opt.ms) max_m = std::max(max_m, m);
    for (auto& k : bench::make_registry_bench_kernels(registry_names, max_m)) extra.push_back(std::move(k));
    auto rows = bench::run_gpu_sweep(opt, std::move(extra));
    bench::write_csv(rows, csv);
    std::printf("%s", bench::format_table(rows).c_str());
    int bad = 0;
    for (const auto& r : rows) bad += r.ok ? 0 : 1;
    std::printf("%zu rows, %d failed the check; CSV: %s\n", rows.size(), bad, csv.c_str());
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "w4a16_bench_gpu: %s\n", e.what());
    return 3;
  }
}
