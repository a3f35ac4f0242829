// cuda_hybrid: the largest M it runs on the decode path (mma.sync, memory-bound) before it
// switches to the prefill path (wgmma, compute-bound). One prepared weight copy serves both,
// so the switch costs nothing but this lookup at run time.
//
// Measured on the H200, 2026-12-02, fp16, g = 128, with the shared timer (cold L2, graph replay,
// median), decode / prefill / hybrid side by side:
//   W4A16_BENCH_ARGS="--registry cuda_hybrid,cuda_prefill --no-extra-groups --ms 1,8,16,32,64,256,1024
//   --dtypes f16" scripts/gpu-check          (docs/BENCHMARKS.md, "hybrid" section)
// and a second sweep at M = 8, 12, 16 in fp16 and bf16 (--ms 8,12,16, same method).
// What they showed: decode wins at M <= 8 on every PERF.md shape and loses at M >= 32 on every
// one; between, the winner depends on the layer (decode's 9..16-token variants are slower on
// some shapes, e.g. llama8b.qkv uint4b8 at M = 16: 38.8 us decode vs 19.2 us prefill, while on
// qwen0.5b.qkv decode is 4.9 us vs 6.6 us). So the switch is per measured layer shape (the
// largest of M = 8, 12, 16 up to which decode won in both dtypes; M = 9..11 and 13..15 were not
// measured), and per size class for other shapes.
#pragma once
#include <cstdint>
#include <iterator>
#include <limits>

namespace w4a16::registry_detail {

struct HybridShape {
  std::int64_t n, k;                              // the layer (partition) shape
  std::int64_t decode_max_m_sym, decode_max_m_asym;  // uint4b8 / uint4 (zero points)
};

// Measured layer shapes: fp16 us at M = 12 and 16, decode vs prefill, sym / asym.
inline constexpr HybridShape kHybridShapes[] = {
    {1152, 896, 16, 16},    // qwen0.5b.qkv      12: 4.5/6.7   16: 4.9/6.6    | 12: 4.7/7.1   16: 5.0/7.1
    {896, 896, 16, 16},     // qwen0.5b.o        12: 4.6/6.6   16: 4.9/6.6    | 12: 4.7/7.0   16: 5.0/7.0
    {9728, 896, 16, 16},    // qwen0.5b.gate_up  12: 8.8/10.4  16: 9.5/10.5   | 12: 9.9/11.9  16: 10.5/12.0
    {896, 4864, 16, 16},    // qwen0.5b.down     12: 9.1/12.2  16: 10.7/12.1  | 12: 9.5/14.7  16: 11.1/14.7
    {6144, 4096, 8, 8},     // llama8b.qkv       12: 31.8/19.2 16: 38.8/19.2  | 12: 33.5/22.7 16: 26.3/22.7
    {4096, 4096, 16, 16},   // llama8b.o         12: 14.0/16.4 16: 16.4/16.3  | 12: 14.7/18.8 16: 14.0/18.8
    {28672, 4096, 16, 12},  // llama8b.gate_up   12: 50.5/72.6 16: 55.5/72.7  | 12: 56.6/89.0 16: 91.4/88.9
    {4096, 14336, 8, 8},    // llama8b.down      12: 49.5/40.2 16: 53.6/40.3  | 12: 55.7/48.4 16: 60.8/48.4
    {8192, 8192, 16, 12},   // 8192x8192         12: 29.1/39.8 16: 31.9/39.9  | 12: 32.5/48.1 16: 69.0/48.1
    {57344, 8192, 16, 16},  // llama70b.gate_up  12: 196/281   16: 216/280    | 12: 216/345   16: 296/345
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
