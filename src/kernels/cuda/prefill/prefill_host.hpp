// Internal: the host helpers that the prefill plan (prefill_plan.cu) and the launch (prefill.cu) share.
// Not a public header.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "prefill/prefill_launch.cuh"

namespace w4a16::kernels::cuda::prefill_detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

// Whether a device of `capability` runs this build's sm_90a code (code_arch, common.cuh): the wgmma / TMA configs,
// clusters and PDL; otherwise the mma.sync configs alone.
inline bool sm90a_code(int capability) { return code_arch(capability) == 90; }

inline std::int64_t normalize_split(std::int64_t k_tiles, std::int64_t split, std::int64_t* kts) {
  split = std::clamp<std::int64_t>(split, 1, std::max<std::int64_t>(1, k_tiles));
  *kts = ceil_div(k_tiles, split);
  return ceil_div(k_tiles, *kts);  // no empty split
}

inline std::size_t gather_bytes(bool act_order, std::int64_t m, std::int64_t k) {
  return act_order ? static_cast<std::size_t>(round_up(m * k * 2, 256)) : 0;
}

inline bool is_tma_config(const PrefillConfig& c) { return c.x_load == PrefillXLoad::tma || c.x_load == PrefillXLoad::tma_eb; }

// prefill_plan.cu
// A plan's on/off switch: 0 / 1 as given, -1 = the environment variable `env` (contract at the definition).
bool resolve_switch(int value, const char* field, const char* env);
// W4A16_PREFILL_SPLIT_REDUCE over an automatic `r`.
PrefillSplitReduce resolve_reduce(PrefillSplitReduce r);
// us per k tile per wave of the plan's estimate; 0 for the tiles without one.
double tile_us_per_k_tile(int config);

// prefill.cu
// Clusters (1, 1, split) of kernel `e` resident at once on this device (0: none).
int active_clusters(const KernelEntry& e, int threads, int split);
bool cluster_schedulable(const KernelEntry& e, int threads, int split);
// The largest split-tail workspace of a persistent launch (prefill.cu persistent_launch) at M <= max_m on this device:
// 0 without an sm_90a device or with the loop or its tail switched off.
std::size_t persistent_tail_bound(std::int64_t n, std::int64_t max_m);

}  // namespace w4a16::kernels::cuda::prefill_detail
