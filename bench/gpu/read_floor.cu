// w4a16_bench_read: what a pure streaming read of a decode call's bytes costs with the shared timer
// (cold L2 by rotating copies, CUDA-graph replay, median), the ceiling any decode kernel of that
// size can reach on this device. For each PERF.md shape it reads the weight + scale bytes of a
// uint4b8 g = 128 layer (N K / 2 + N K / 64) with the best of several plain read kernels: 16-byte
// non-caching loads, U loads in flight per thread, B blocks of 256 threads per SM, with and without
// programmatic dependent launch (the next call may start while this one drains, as the decode
// kernel is launched). No weights are interpreted; the bytes are a non-zero pattern.
// The MoE rows (moe.qwen3.T<t>) read the packed bytes of the experts a Qwen3-30B-A3B layer call
// touches at T tokens (w4a16_bench_moe's touched_MB: distinct experts x expert bytes, random top-8
// routing) once as one launch and once as the decode chain's two dependent phases (GEMM 1's w13
// share, 2/3, then GEMM 2's w2 share, 1/3; plain launches: the second starts after the first ends),
// the ceiling of a fused layer and of a two-launch chain of that size. (T = 16's 202 MB, one copy re-read
// call after call, partly hit L2 and gave no cold ceiling: dropped.)
//
//   w4a16_bench_read [--csv PATH] [--shapes a,b]
// Prints one line per (shape, variant) and the best per shape: us, TB/s, % of 4.4 TB/s.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "gpu_timer.hpp"
#include "pdl.cuh"
#include "gpu_sweep.hpp"

namespace {

using w4a16::kernels::cuda::launch_pdl;
using w4a16::kernels::cuda::pdl_launch_dependents;
using w4a16::kernels::cuda::pdl_wait;

__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Thread t of G reads 16-byte words t, t + G, ... in batches of U independent loads; the XOR of all
// words is stored only if it equals an impossible value, so the loads cannot be dropped and nothing
// is written. Launched with PDL the next call's blocks may start as this call's drain.
template <int U>
__global__ void __launch_bounds__(256) read_kernel(const uint4* __restrict__ p, std::size_t n16, unsigned* sink) {
  pdl_launch_dependents();
  const std::size_t g = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + (U - 1) * g < n16; i += U * g) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = ld_stream(p + i + u * g);
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += g) {
    const uint4 v = ld_stream(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  pdl_wait();
  if (acc == 0x9E3779B9u && threadIdx.x == 1023) sink[blockIdx.x] = acc;  // never: threadIdx.x < 256
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "w4a16_bench_read: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

using Kernel = void (*)(const uint4*, std::size_t, unsigned*);

// A case: bytes read per call, split into dependent launches of these shares (each a plain read).
struct Case {
  std::string name;
  std::size_t bytes;
  std::vector<double> phases;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& s : w4a16::bench::perf_shapes())
    out.push_back({s.name, static_cast<std::size_t>(s.n) * s.k / 2 + static_cast<std::size_t>(s.n) * (s.k / 128) * 2, {1.0}});
  // Qwen3-30B-A3B, uint4b8 g = 128: touched MB of w4a16_bench_moe (2026-12-03, call 2) at T = 1, 4.
  const std::pair<int, double> moe[] = {{1, 19.47}, {4, 70.29}};
  for (const auto& [t, mb] : moe) {
    const auto bytes = static_cast<std::size_t>(mb * 1e6);
    out.push_back({"moe.qwen3.T" + std::to_string(t), bytes, {1.0}});
    out.push_back({"moe.qwen3.T" + std::to_string(t) + ".chain2", bytes, {2.0 / 3.0, 1.0 / 3.0}});
  }
  return out;
}
struct Variant {
  int unroll;
  Kernel fn;
};

}  // namespace

int main(int argc, char** argv) try {  // launch_pdl throws w4a16::Error on a failed launch
  std::string csv = "read_floor.csv";
  std::vector<std::string> filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--csv" || a == "--shapes") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--csv") {
        csv = v;
      } else {
        for (std::size_t s = 0, e; s <= v.size(); s = e + 1) {
          e = v.find(',', s);
          if (e == std::string::npos) e = v.size();
          filter.push_back(v.substr(s, e - s));
        }
      }
    } else {
      std::printf("usage: %s [--csv PATH] [--shapes a,b] (PERF.md shapes, moe.qwen3.T1|T4[.chain2])\n", argv[0]);
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  int dev = 0, sms = 0;
  check(cudaGetDevice(&dev), "device");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  const Variant variants[] = {{4, read_kernel<4>}, {8, read_kernel<8>}, {16, read_kernel<16>}};
  const int blocks_per_sm[] = {2, 4, 8};

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  unsigned* sink = nullptr;
  check(cudaMalloc(&sink, 4096 * sizeof(unsigned)), "sink");
  std::FILE* f = std::fopen(csv.c_str(), "w");
  if (!f) { std::fprintf(stderr, "cannot write %s\n", csv.c_str()); return 2; }
  std::fprintf(f, "shape,bytes,unroll,blocks_per_sm,pdl,us,tbps,pct_of_4p4\n");
  std::printf("%-18s %10s %6s %5s %4s %9s %7s %6s\n", "shape", "MB", "unroll", "bpsm", "pdl", "us", "TB/s", "%4.4");
  for (const Case& s : cases()) {
    if (!filter.empty() && std::find(filter.begin(), filter.end(), s.name) == filter.end()) continue;
    const std::size_t bytes = s.bytes;
    const std::size_t n16 = (bytes + 15) / 16;
    std::vector<std::size_t> cut{0};  // phase p reads 16-byte words [cut[p], cut[p + 1])
    double acc_share = 0;
    for (const double share : s.phases) {
      acc_share += share;
      cut.push_back(std::min(n16, static_cast<std::size_t>(acc_share * static_cast<double>(n16) + 0.5)));
    }
    cut.back() = n16;
    const int copies = w4a16::bench::cold_l2_copies(n16 * 16);
    std::vector<uint4*> bufs(copies);
    for (auto& b : bufs) {
      check(cudaMalloc(&b, n16 * 16), "buffer");
      check(cudaMemset(b, 0x5A, n16 * 16), "fill");  // non-zero bytes
    }
    double best = 1e30;
    std::string best_desc;
    for (const Variant& v : variants)
      for (int bps : blocks_per_sm)
        for (int pdl = 0; pdl <= 1; ++pdl) {
          const unsigned grid = static_cast<unsigned>(sms * bps);
          w4a16::bench::TimerOptions opt;
          opt.copies = copies;
          const auto t = w4a16::bench::time_graph(
              [&](int i, cudaStream_t st) {
                for (std::size_t p = 0; p + 1 < cut.size(); ++p)
                  launch_pdl(v.fn, dim3(grid), dim3(256), 0, st, pdl == 1, static_cast<const uint4*>(bufs[i % copies]) + cut[p],
                             cut[p + 1] - cut[p], sink);
              },
              opt, stream);
          const double tbps = static_cast<double>(bytes) / (t.median_us * 1e6);
          std::fprintf(f, "%s,%zu,%d,%d,%d,%.3f,%.4f,%.2f\n", s.name.c_str(), bytes, v.unroll, bps, pdl, t.median_us, tbps, 100.0 * tbps / 4.4);
          std::printf("%-18s %10.2f %6d %5d %4d %9.3f %7.3f %6.1f\n", s.name.c_str(), bytes / 1e6, v.unroll, bps, pdl, t.median_us, tbps,
                      100.0 * tbps / 4.4);
          if (t.median_us < best) {
            best = t.median_us;
            best_desc = "unroll " + std::to_string(v.unroll) + ", " + std::to_string(bps) + " blocks/SM" + (pdl ? ", PDL" : "");
          }
        }
    const double tbps = static_cast<double>(bytes) / (best * 1e6);
    std::printf("BEST %-18s %8.2f MB  %8.3f us  %6.3f TB/s  %5.1f%% of 4.4  (%s)\n", s.name.c_str(), bytes / 1e6, best, tbps, 100.0 * tbps / 4.4,
                best_desc.c_str());
    for (auto* b : bufs) check(cudaFree(b), "free");
  }
  std::fclose(f);
  check(cudaFree(sink), "free sink");
  check(cudaStreamDestroy(stream), "stream destroy");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "w4a16_bench_read: %s\n", e.what());
  return 3;
}
