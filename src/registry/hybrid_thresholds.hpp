// cuda_hybrid: the largest M it runs on the decode path (mma.sync, memory-bound) before it
// switches to the prefill path (wgmma, compute-bound). One prepared weight copy serves both,
// so the switch costs nothing but this lookup at run time.
//
// Measured on the H200, 2026-12-02, fp16, g = 128, with the shared timer (cold L2, graph replay,
// median), decode / prefill / hybrid side by side:
//   W4A16_BENCH_ARGS="--registry cuda_hybrid,cuda_prefill --no-extra-groups --ms 1,8,16,32,64,256,1024
//   --dtypes f16" scripts/gpu-check          (docs/BENCHMARKS.md, "hybrid" section)
// What it showed: decode wins at M <= 8 on every PERF.md shape and loses at M >= 32 on every one;
// at M = 16 the winner depends on the layer (decode's 9..16-token variants are slower on some
// shapes, e.g. llama8b.qkv uint4b8: 38.8 us decode vs 19.4 us prefill, while on qwen0.5b.qkv
// decode is 4.9 us vs 6.7 us). So the table is per measured layer shape, with M = 8 or 16 as
// the switch (9..15 were not measured separately), and per size class for other shapes.
#pragma once
#include <cstdint>
#include <iterator>
#include <limits>

namespace w4a16::registry_detail {

struct HybridShape {
  std::int64_t n, k;                              // the layer (partition) shape
  std::int64_t decode_max_m_sym, decode_max_m_asym;  // uint4b8 / uint4 (zero points)
};

// Measured layer shapes (us at M = 16, decode vs prefill, sym / asym, in the comments).
inline constexpr HybridShape kHybridShapes[] = {
    {1152, 896, 16, 16},    // qwen0.5b.qkv      4.87 vs 6.67   / 5.00 vs 7.09
    {896, 896, 16, 16},     // qwen0.5b.o        4.95 vs 6.66   / 5.04 vs 7.10
    {9728, 896, 16, 16},    // qwen0.5b.gate_up  9.46 vs 10.52  / 10.57 vs 12.07
    {896, 4864, 16, 16},    // qwen0.5b.down     10.65 vs 12.13 / 11.03 vs 14.79
    {6144, 4096, 8, 8},     // llama8b.qkv       38.80 vs 19.35 / 26.69 vs 22.74
    {4096, 4096, 16, 16},   // llama8b.o         16.36 vs 16.38 / 14.00 vs 18.88
    {28672, 4096, 16, 8},   // llama8b.gate_up   56.47 vs 72.86 / 91.55 vs 88.44
    {4096, 14336, 8, 8},    // llama8b.down      53.80 vs 40.36 / 61.31 vs 48.62
    {8192, 8192, 16, 8},    // 8192x8192         32.57 vs 40.04 / 69.32 vs 48.28
    {57344, 8192, 16, 16},  // llama70b.gate_up  220.0 vs 282.5 / 297.0 vs 348.7
};

// Other shapes: by packed int4 bytes (N * K / 2). Small layers (<= 8 MiB) kept decode at 16 in
// every measurement; in the medium range the measured shapes split, and 8 is the safe switch
// (decode never won at 32, always at 8); large layers kept decode at 16 (within 4% where not best).
struct HybridClass {
  const char* name;
  std::int64_t max_weight_bytes;  // inclusive
  std::int64_t decode_max_m_sym, decode_max_m_asym;
};
inline constexpr HybridClass kHybridClasses[] = {
    {"small (<= 8 MiB int4)", std::int64_t{8} << 20, 16, 16},
    {"medium (<= 32 MiB int4)", std::int64_t{32} << 20, 8, 8},
    {"large (> 32 MiB int4)", std::numeric_limits<std::int64_t>::max(), 16, 16},
};

// The largest M the hybrid runs on its decode path for this layer.
inline std::int64_t hybrid_decode_max_m(std::int64_t n, std::int64_t k, bool has_zeros) {
  for (const HybridShape& s : kHybridShapes)
    if (s.n == n && s.k == k) return has_zeros ? s.decode_max_m_asym : s.decode_max_m_sym;
  const std::int64_t bytes = n * k / 2;
  for (const HybridClass& c : kHybridClasses)
    if (bytes <= c.max_weight_bytes) return has_zeros ? c.decode_max_m_asym : c.decode_max_m_sym;
  return 16;
}

}  // namespace w4a16::registry_detail
