// cuda_hybrid: the M at which it leaves the decode path (mma.sync, memory-bound) for the
// prefill path (wgmma, compute-bound), per shape class. One prepared weight copy serves both,
// so the switch costs nothing but this comparison at run time.
//
// PROVISIONAL TABLE, NOT MEASURED: decode for M <= 16 (the largest M one decode launch takes:
// two m16n8k16 n-halves of 8 tokens), prefill above, in every class. The lead replaces it with
// the crossovers measured on the H200 (the M where the prefill path becomes faster than the
// decode path, per class and activation dtype), with the command and date of the measurement
// written next to the table. PERF.md's target: the hybrid within 5% of the faster path at every M.
#pragma once
#include <cstdint>
#include <iterator>
#include <limits>

namespace w4a16::registry_detail {

struct HybridThreshold {
  const char* shape_class;            // for messages and docs/REGISTRY.md
  std::int64_t max_weight_bytes;      // class bound (inclusive): packed int4 bytes N * K / 2
  std::int64_t decode_max_m;          // M <= this runs the decode path, larger M the prefill path
};

// Classes by weight size: below ~4 MB a layer fits many times in L2 (60 MiB) and launch latency
// dominates; 4..32 MB is the Llama-8B range; above, HBM streaming dominates decode.
inline constexpr HybridThreshold kHybridThresholds[] = {
    // class                       bytes up to                               decode while M <=
    {"small (<= 4 MiB int4)",      std::int64_t{4} << 20,                      16},  // provisional
    {"medium (<= 32 MiB int4)",    std::int64_t{32} << 20,                     16},  // provisional
    {"large (> 32 MiB int4)",      std::numeric_limits<std::int64_t>::max(),   16},  // provisional
};

inline const HybridThreshold& hybrid_threshold(std::int64_t n, std::int64_t k) {
  const std::int64_t bytes = n * k / 2;
  for (const HybridThreshold& t : kHybridThresholds)
    if (bytes <= t.max_weight_bytes) return t;
  return kHybridThresholds[std::size(kHybridThresholds) - 1];
}

}  // namespace w4a16::registry_detail
