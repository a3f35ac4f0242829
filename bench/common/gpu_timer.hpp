// The one GPU benchmark timer of this project (shared/PERF.md "How to measure"):
//   - warm-up launches first (module load, handles, first-touch),
//   - `calls` launches captured into one CUDA graph, each call i using rotating input set
//     i % copies, where the caller sizes `copies` so that all sets together are >= 3x L2
//     (cold L2: no call finds its weights in cache),
//   - the graph replayed `replays` times (>= 7), each replay timed with CUDA events,
//   - the median replay time / calls is reported, in microseconds per call.
// The launch callback must enqueue exactly one call on `stream` and must not allocate or
// synchronize (it is captured). Errors abort with the CUDA error string.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <vector>

namespace w4a16::bench {

struct TimerOptions {
  int copies = 1;      // rotating input sets (>= 3x L2 in total)
  int calls = 0;       // launches per graph; 0 = max(copies, 20) rounded up to a multiple of copies
  int replays = 9;     // timed graph replays (median taken)
  int warmup = 3;      // untimed replays first
};

struct Timing {
  double median_us = 0;  // per call
  double min_us = 0;
  double max_us = 0;
  // With W4A16_TIMER_CLOCK=1 only (else 0): the SM clock in MHz just before and just after each timed replay (medians),
  // read by a one-warp probe kernel between replays (clock64 ticks over %globaltimer nanoseconds, ~20 us spin), outside
  // the timed events. It tells what clock a member ran at, and what the previous member left it.
  double clock_before_mhz = 0;
  double clock_after_mhz = 0;
};

// fn(i, stream): enqueue call i (use input set i % copies).
Timing time_graph(const std::function<void(int, cudaStream_t)>& fn, const TimerOptions& opt, cudaStream_t stream);

// Several calls timed side by side (a kernel against its peer): each fn captured into its own graph as time_graph
// does (opts[i]: its copies and calls; warm-up launches first), then `rounds` rounds of one timed replay of each graph
// in turn, each round in a shuffled order (fixed seed), after `warmup_rounds` untimed rounds, so that a slow drift of
// the GPU's clocks or temperature, and what a member leaves to the next (heat, power), fall on every call alike; the
// median per call of each. Replays of successive rounds of one call are what the median runs over, as in time_graph.
std::vector<Timing> time_graphs_interleaved(const std::vector<std::function<void(int, cudaStream_t)>>& fns,
                                            const std::vector<TimerOptions>& opts, int rounds, int warmup_rounds,
                                            cudaStream_t stream);

// Number of rotating copies of `bytes_per_set` needed so that copies * bytes >= 3 * L2 size.
int cold_l2_copies(std::size_t bytes_per_set);

}  // namespace w4a16::bench
