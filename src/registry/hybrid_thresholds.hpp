// cuda_hybrid: the M at which it leaves the decode path (mma.sync, memory-bound) for the
// prefill path (wgmma, compute-bound), per shape class. One prepared weight copy serves both,
// so the switch costs nothing but this comparison at run time.
//
// Measured on the H200 (2026-12-02; decode: docs/benchmarks/decode.md run B, prefill:
// docs/benchmarks/prefill.md run 4, both with bench/common/gpu_timer, cold L2, graph replay):
// - symmetric (uint4b8): decode wins through M = 16 on every PERF.md shape (8192x8192 M=16:
//   31.9 us decode vs ~55 us prefill; qwen0.5b.qkv M=16: 4.9 vs ~7.6), prefill wins from M = 32
//   (8192x8192 M=32: 68.5 decode vs 55.6 prefill; llama70b.gate_up 449 vs 267).
// - asymmetric (uint4): decode at 9..16 tokens takes a slower variant (8192x8192 M=16: 69 us,
//   llama70b.gate_up 298 us) that the prefill path beats (~55 / ~267 us) on layers >= 4 MiB, so
//   those classes leave decode after M = 12 (8192x8192 M=12: 32.7 decode vs ~55 prefill).
// The hybrid row of the GPU sweep (w4a16_bench_gpu --hybrid) checks the result against both paths.
#pragma once
#include <cstdint>
#include <iterator>
#include <limits>

namespace w4a16::registry_detail {

struct HybridThreshold {
  const char* shape_class;            // for messages and docs/REGISTRY.md
  std::int64_t max_weight_bytes;      // class bound (inclusive): packed int4 bytes N * K / 2
  std::int64_t decode_max_m_sym;      // uint4b8: M <= this runs the decode path, larger M the prefill path
  std::int64_t decode_max_m_asym;     // uint4 (zero points): likewise
};

// Classes by weight size: below ~4 MB a layer fits many times in L2 (60 MiB) and launch latency
// dominates; 4..32 MB is the Llama-8B range; above, HBM streaming dominates decode.
inline constexpr HybridThreshold kHybridThresholds[] = {
    // class                       bytes up to                               decode while M <= (sym, asym)
    {"small (<= 4 MiB int4)",      std::int64_t{4} << 20,                      16, 16},
    {"medium (<= 32 MiB int4)",    std::int64_t{32} << 20,                     16, 12},
    {"large (> 32 MiB int4)",      std::numeric_limits<std::int64_t>::max(),   16, 12},
};

inline const HybridThreshold& hybrid_class(std::int64_t n, std::int64_t k) {
  const std::int64_t bytes = n * k / 2;
  for (const HybridThreshold& t : kHybridThresholds)
    if (bytes <= t.max_weight_bytes) return t;
  return kHybridThresholds[std::size(kHybridThresholds) - 1];
}

// The largest M the hybrid runs on its decode path for this layer.
inline std::int64_t hybrid_decode_max_m(std::int64_t n, std::int64_t k, bool has_zeros) {
  const HybridThreshold& t = hybrid_class(n, k);
  return has_zeros ? t.decode_max_m_asym : t.decode_max_m_sym;
}

}  // namespace w4a16::registry_detail
