// w4a16_bench_cpu: the CPU sweep of bench/cpu/cpu_sweep.hpp from the command line.
//   w4a16_bench_cpu [--shapes LIST] [--m LIST] [--dtype f16,bf16] [--format uint4b8,uint4]
//                   [--group LIST] [--isa LIST] [--threads T] [--repeats R] [--rounds R] [--csv FILE]
//                   [--bw-mb MB] [--no-check]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cpu_sweep.hpp"
#include "w4a16/core/error.hpp"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

long long to_int(const std::string& s, const std::string& arg) {
  char* e = nullptr;
  const long long v = std::strtoll(s.c_str(), &e, 10);
  if (s.empty() || *e != '\0') w4a16::fail(w4a16::ErrorCode::invalid_argument, arg, "an integer", "'" + s + "'");
  return v;
}

const char* kUsage =
    "usage: w4a16_bench_cpu [--shapes LIST] [--m LIST] [--dtype f16,bf16] [--format uint4b8,uint4]\n"
    "                       [--group LIST] [--isa LIST] [--threads T] [--repeats R] [--rounds R] [--csv FILE]\n"
    "                       [--bw-mb MB] [--no-check]\n"
    "  --shapes   N x K or PERF.md names, e.g. 8192x8192,llama8b.down (default: the 10 PERF.md shapes)\n"
    "  --m        M values (default 1,4,16,64)\n"
    "  --dtype    activation dtypes (default f16)\n"
    "  --format   scalar types (default uint4b8,uint4)\n"
    "  --group    group sizes, -1 = channelwise (default 128)\n"
    "  --isa      fast_gemm implementations, each timed per row: best, scalar, avx2, vnni, amx (default best)\n"
    "  --threads  0 = all (default)\n"
    "  --repeats  samples per median (default 7); --rounds: medians per row, best kept (default 1)\n"
    "  --csv      write the CSV to FILE instead of stdout\n"
    "  --bw-mb    bandwidth buffer in MiB (default 1024)\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace w4a16;
  bench::CpuSweepOptions o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) fail(ErrorCode::invalid_argument, a, "a value after it", "the end of the command line");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a == "--shapes") {
        o.shapes.clear();
        for (const auto& s : split(value())) o.shapes.push_back(bench::parse_cpu_shape(s, "--shapes"));
      } else if (a == "--m") {
        o.ms.clear();
        for (const auto& s : split(value())) o.ms.push_back(to_int(s, "--m"));
      } else if (a == "--dtype") {
        o.dtypes.clear();
        for (const auto& s : split(value())) {
          auto d = parse_dtype(s);
          if (!d || !is_activation_dtype(*d)) fail(ErrorCode::invalid_argument, "--dtype", "f16 or bf16", "'" + s + "'");
          o.dtypes.push_back(*d);
        }
      } else if (a == "--format") {
        o.scalars.clear();
        for (const auto& s : split(value())) {
          auto t = parse_scalar_type(s);
          if (!t) fail(ErrorCode::invalid_argument, "--format", "uint4b8 or uint4", "'" + s + "'");
          o.scalars.push_back(*t);
        }
      } else if (a == "--group") {
        o.groups.clear();
        for (const auto& s : split(value())) o.groups.push_back(static_cast<int>(to_int(s, "--group")));
      } else if (a == "--isa") {
        o.isas = split(value());
      } else if (a == "--threads") {
        o.threads = static_cast<int>(to_int(value(), "--threads"));
      } else if (a == "--repeats") {
        o.repeats = static_cast<int>(to_int(value(), "--repeats"));
      } else if (a == "--rounds") {
        o.rounds = static_cast<int>(to_int(value(), "--rounds"));
      } else if (a == "--csv") {
        o.csv_path = value();
      } else if (a == "--bw-mb") {
        o.bw_buffer_mb = to_int(value(), "--bw-mb");
      } else if (a == "--no-check") {
        o.check = false;
      } else {
        fail(ErrorCode::invalid_argument, "argument", "an option of --help", "'" + a + "'");
      }
    }
    return bench::run_cpu_sweep(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "w4a16_bench_cpu: %s\n", e.what());
    return 2;
  }
}
