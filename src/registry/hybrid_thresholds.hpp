// cuda_hybrid: the largest M it runs on the decode path (mma.sync, memory-bound) before it
// switches to the prefill path (wgmma, compute-bound). One prepared weight copy serves both,
// so the switch costs nothing but this lookup at run time.
//
// Set from H200 measurements of 2026-12-02 (decode v4 against the cp.async prefill kernel) and
// CHECKED AS THE HYBRID with the kernels of now (decode v5: PDL + persistent grid; prefill with x by
// TMA), run 4 of docs/BENCHMARKS.md, 2026-12-02 19:45 UTC:
//   W4A16_TEST_TIMEOUT=120 W4A16_SKIP_PEERS=1 W4A16_HYBRID_CHECK=1 W4A16_SKIP_SWEEP=1 scripts/gpu-check
// (hybrid, decode and prefill over M = 1..4096 in fp16 and bf16, uint4b8 and uint4, all ten PERF.md
// shapes; bench/gpu/hybrid_report.py): 479 of 480 points within 5% of the faster path; the one miss
// (8192x8192 bf16 uint4b8 M = 1024, both paths prefill, 1.06x) measured 1.00x in three repeats of that
// point right after (203.7 us hybrid, 203.8-204.3 prefill): noise between two timings of one kernel.
// What the runs show: the decode path wins at M <= 16 on every shape, dtype and scalar type (run 4:
// closest qwen0.5b.down uint4b8 M = 16, decode 9.49 us, prefill 9.5: a tie) and loses at M = 32
// everywhere except with zero points on the two gate_up shapes (run 4, fp16 uint4 M = 32:
// llama8b.gate_up decode 68.5 us against prefill 71.3; llama70b.gate_up a tie within 5%).
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
