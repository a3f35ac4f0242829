#include "gpu_timer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace w4a16::bench {

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_timer: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

int cold_l2_copies(std::size_t bytes_per_set) {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  int l2 = 0;
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "L2 size");
  std::size_t need = 3ull * static_cast<std::size_t>(l2);
  std::size_t c = (need + bytes_per_set - 1) / std::max<std::size_t>(bytes_per_set, 1);
  return static_cast<int>(std::max<std::size_t>(c, 1));
}

namespace {
// The clock probe (W4A16_TIMER_CLOCK=1): one warp spins ~20 us reading %globaltimer and clock64 and stores the MHz.
__global__ void clock_probe_kernel(double* mhz) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < 20000ull);
  const long long c1 = clock64();
  if (threadIdx.x == 0) *mhz = 1e3 * static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
}

bool clock_probe_on() {
  const char* v = std::getenv("W4A16_TIMER_CLOCK");
  return v != nullptr && std::string(v) == "1";
}

// The probe's device word and a synchronous read of it (between replays, never inside a timed one).
struct ClockProbe {
  double* dev = nullptr;
  ClockProbe() { check(cudaMalloc(&dev, sizeof(double)), "clock probe alloc"); }
  ~ClockProbe() { cudaFree(dev); }
  ClockProbe(const ClockProbe&) = delete;
  ClockProbe& operator=(const ClockProbe&) = delete;
  double read(cudaStream_t stream) const {
    clock_probe_kernel<<<1, 32, 0, stream>>>(dev);
    double mhz = 0;
    check(cudaMemcpyAsync(&mhz, dev, sizeof(double), cudaMemcpyDeviceToHost, stream), "clock probe copy");
    check(cudaStreamSynchronize(stream), "clock probe sync");
    return mhz;
  }
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One call's graph: `calls` launches over its rotating copies, after the eager warm-up (modules, handles, pages).
struct CallGraph {
  int calls = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CallGraph(const std::function<void(int, cudaStream_t)>& fn, const TimerOptions& opt, cudaStream_t stream) {
    const int copies = std::max(opt.copies, 1);
    calls = opt.calls > 0 ? opt.calls : std::max(copies, 20);
    calls = (calls + copies - 1) / copies * copies;
    for (int i = 0; i < copies; ++i) fn(i, stream);
    check(cudaStreamSynchronize(stream), "warm-up");
    check(cudaGetLastError(), "warm-up launch");
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    for (int i = 0; i < calls; ++i) fn(i, stream);
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  }
  ~CallGraph() {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  CallGraph(const CallGraph&) = delete;
  CallGraph& operator=(const CallGraph&) = delete;
  // One replay timed with the events a / b: microseconds per call.
  double timed_replay(cudaEvent_t a, cudaEvent_t b, cudaStream_t stream) const {
    check(cudaEventRecord(a, stream), "record");
    check(cudaGraphLaunch(exec, stream), "replay");
    check(cudaEventRecord(b, stream), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    return 1000.0 * ms / calls;
  }
};

Timing summarize(std::vector<double> per_call) {
  Timing t;
  t.min_us = *std::min_element(per_call.begin(), per_call.end());
  t.max_us = *std::max_element(per_call.begin(), per_call.end());
  t.median_us = median_of(std::move(per_call));
  return t;
}
}  // namespace

std::vector<Timing> time_graphs_interleaved(const std::vector<std::function<void(int, cudaStream_t)>>& fns,
                                            const std::vector<TimerOptions>& opts, int rounds, int warmup_rounds,
                                            cudaStream_t stream) {
  if (fns.size() != opts.size() || fns.empty()) {
    std::fprintf(stderr, "gpu_timer: time_graphs_interleaved: %zu calls, %zu options\n", fns.size(), opts.size());
    std::exit(3);
  }
  std::vector<std::unique_ptr<CallGraph>> graphs;
  for (std::size_t i = 0; i < fns.size(); ++i) graphs.push_back(std::make_unique<CallGraph>(fns[i], opts[i], stream));
  for (int r = 0; r < std::max(warmup_rounds, 1); ++r)
    for (const auto& g : graphs) check(cudaGraphLaunch(g->exec, stream), "warm-up replay");
  check(cudaStreamSynchronize(stream), "warm-up replay sync");

  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  std::vector<std::vector<double>> per_call(graphs.size()), before(graphs.size()), after(graphs.size());
  const std::unique_ptr<ClockProbe> probe = clock_probe_on() ? std::make_unique<ClockProbe>() : nullptr;
  // Each round in its own order, a fixed-seed shuffle: every member follows every other about equally often. In a
  // fixed order the member after a long, hot one ran slower (stop 55, H200 / H100: the one plan of llama70b.gate_up
  // M = 1024 at 1543 us right after cuBLAS fp16 and 1492 us after another int4 row; rotating the start keeps those
  // neighbours, so it did not help).
  const std::size_t n = graphs.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 rng(12345);
  for (int r = 0; r < std::max(rounds, 7); ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::size_t i : order) {
      if (probe) before[i].push_back(probe->read(stream));
      per_call[i].push_back(graphs[i]->timed_replay(a, b, stream));
      if (probe) after[i].push_back(probe->read(stream));
    }
  }
  check(cudaGetLastError(), "replays");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::vector<Timing> t;
  for (std::size_t i = 0; i < n; ++i) {
    t.push_back(summarize(std::move(per_call[i])));
    t.back().clock_before_mhz = median_of(std::move(before[i]));
    t.back().clock_after_mhz = median_of(std::move(after[i]));
  }
  return t;
}

// One call alone: the interleaved timer with one member (its rounds are the replays, its warm-up rounds the warm-up).
Timing time_graph(const std::function<void(int, cudaStream_t)>& fn, const TimerOptions& opt, cudaStream_t stream) {
  return time_graphs_interleaved({fn}, {opt}, opt.replays, opt.warmup, stream).front();
}

}  // namespace w4a16::bench
