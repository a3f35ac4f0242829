// cuda_hybrid: the largest M it runs on the decode path (mma.sync, memory-bound) before it
// switches to the prefill path (wgmma, compute-bound). One prepared weight copy serves both,
// so the switch costs nothing but this lookup at run time.
//
// Set from H200 measurements of 2026-12-02 with the shared timer (cold L2, graph replay,
// median), fp16 and bf16, g = 128, decode v4 against the prefill kernel of commit 2aa983b:
//   decode:  w4a16_bench_gpu --no-extra-groups --no-cublas --ms 8,12,16,32 --dtypes f16,bf16
//            --registry cuda_hybrid,cuda_prefill   (docs/benchmarks/decode_registry_2026-12-02_v4.csv;
//            its cuda_decode rows: the prefill rows of that run timed an unfinished prefill build)
//   prefill: w4a16_bench_gpu --prefill ... (docs/benchmarks/prefill_sweep8192_2026-12-02_run2.csv,
//            prefill_tune_2026-12-02_run2.csv: 8192x8192, llama8b.qkv, llama8b.gate_up) and, for
//            the other shapes, the previous prefill kernel (docs/benchmarks/hybrid_2026-12-02_run3_*.csv),
//            which the new one beats by 1.08-1.2x at M = 32.
// What they show: the decode path wins at M <= 16 on every PERF.md shape, dtype and scalar type
// (the closest, llama8b.o M = 16: 12.5 us against 16.3 us for the previous prefill kernel), and
// loses at M = 32 everywhere except with zero points on the two gate_up shapes, where decode
// measured 69.4 us (llama8b) and 258 us (llama70b) against 74-82 and 290-320 us expected of the
// prefill path (previous kernel 89.0 / 349 us, uint4 1.09-1.2x faster now). The whole table was
// NOT re-measured as the hybrid after these two kernels changed (device time spent): the next
// device run must check it, with the binaries of scripts/pack-gpu:
//   W4A16_HYBRID_CHECK=1 W4A16_SKIP_SWEEP=1 W4A16_SKIP_PEERS=1 W4A16_SKIP_SANITIZER=1 scripts/gpu-check
// (hybrid, decode and prefill over M = 1..4096 in fp16 and bf16; bench/gpu/hybrid_report.py
// counts the points within 5% of the faster path into hybrid_report.md).
#pragma once
#include <cstdint>

namespace w4a16::registry_detail {

struct HybridShape {
  std::int64_t n, k;                                 // the layer (partition) shape
  std::int64_t decode_max_m_sym, decode_max_m_asym;  // uint4b8 / uint4 (zero points)
};

// Measured layer shapes that switch later than the default; fp16 us, decode / prefill at M = 32, uint4.
inline constexpr HybridShape kHybridShapes[] = {
    {28672, 4096, 16, 32},  // llama8b.gate_up   uint4 M = 32: decode 69.4, prefill (previous kernel) 89.0
    {57344, 8192, 16, 32},  // llama70b.gate_up  uint4 M = 32: decode 258,  prefill (previous kernel) 349
};

// Every other shape: decode up to 16 tokens (it won at M = 16 on all ten PERF.md shapes, from
// 896x896 to 57344x8192, and lost at M = 32 on all but the two above).
inline constexpr std::int64_t kHybridDefaultDecodeMaxM = 16;

// The largest M the hybrid runs on its decode path for this layer.
inline std::int64_t hybrid_decode_max_m(std::int64_t n, std::int64_t k, bool has_zeros) {
  for (const HybridShape& s : kHybridShapes)
    if (s.n == n && s.k == k) return has_zeros ? s.decode_max_m_asym : s.decode_max_m_sym;
  return kHybridDefaultDecodeMaxM;
}

}  // namespace w4a16::registry_detail
