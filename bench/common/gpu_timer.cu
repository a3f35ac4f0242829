#include "gpu_timer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

Timing time_graph(const std::function<void(int, cudaStream_t)>& fn, const TimerOptions& opt, cudaStream_t stream) {
  int copies = std::max(opt.copies, 1);
  int calls = opt.calls > 0 ? opt.calls : std::max(copies, 20);
  calls = (calls + copies - 1) / copies * copies;
  // Eager warm-up: loads modules, creates handles, faults pages in.
  for (int i = 0; i < copies; ++i) fn(i, stream);
  check(cudaStreamSynchronize(stream), "warm-up");
  check(cudaGetLastError(), "warm-up launch");

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int i = 0; i < calls; ++i) fn(i, stream);
  check(cudaStreamEndCapture(stream, &graph), "end capture");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");

  for (int i = 0; i < std::max(opt.warmup, 1); ++i) check(cudaGraphLaunch(exec, stream), "warm-up replay");
  check(cudaStreamSynchronize(stream), "warm-up replay sync");

  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  std::vector<double> per_call;
  for (int r = 0; r < std::max(opt.replays, 7); ++r) {
    check(cudaEventRecord(a, stream), "record");
    check(cudaGraphLaunch(exec, stream), "replay");
    check(cudaEventRecord(b, stream), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    per_call.push_back(1000.0 * ms / calls);
  }
  check(cudaGetLastError(), "replays");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::sort(per_call.begin(), per_call.end());
  Timing t;
  t.median_us = per_call[per_call.size() / 2];
  t.min_us = per_call.front();
  t.max_us = per_call.back();
  return t;
}

}  // namespace w4a16::bench
