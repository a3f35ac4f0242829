// cuda_hybrid: the largest M it runs on the decode path (mma.sync, memory-bound) before it
// switches to the prefill path (wgmma, compute-bound). One prepared weight copy serves both,
// so the switch costs nothing but this lookup at run time.
//
// Set from H200 measurements and CHECKED AS THE HYBRID: first on 2026-12-02 19:45 UTC (run 4 of
// docs/BENCHMARKS.md: 479 of 480 points within 5%), then re-checked with the kernels of the night
// (refitted decode plans, the small-layer decode kernel, the prefill cost-model plan), final run of
// 2026-12-02 21:35 UTC (docs/BENCHMARKS.md "Run 5"): fp16, uint4b8 over M = 1..4096 and uint4 over
// M = 1..1024, all ten PERF.md shapes: 109 of 110 and 79 of 80 points within 5% of the faster path.
// The two misses set the new entries below (llama8b.down uint4b8 M = 16: prefill 26.8 us against
// decode 28.9, decode still ahead at M = 12 in the plan sweep (23.5 against ~26.7): crossover
// interpolated at 14; qwen0.5b.o uint4 M = 32: decode 6.08 against prefill 6.62), and the same run
// moved llama70b.gate_up uint4 M = 32 to prefill (256.7 against decode 265.0). The new entries,
// re-run as the hybrid right after (21:39 UTC): llama8b.down uint4b8 M = 12/14/15/16 and qwen0.5b.o /
// qkv uint4 M = 16/32, 8 of 8 points within 5% (M = 14: decode 27.7 us, prefill 26.8: 3%).
// Run 6 (2026-12-02 23:25 UTC, docs/BENCHMARKS.md): decode x as token rows (faster at M = 4..16),
// prefill with PDL and the cluster split reduce (the Qwen shapes at M = 32..128 1.5-2x faster):
// 185 of 190 points within 5%; the misses moved the table (not re-run as the hybrid: no device time
// was left): llama8b.down uint4b8 back to 16 (M = 16: decode 23.9 us, prefill 26.1), the Qwen qkv / o
// uint4 layers back to 16 (M = 32: prefill now ahead, the hybrid's decode 6.1-6.5 us was > 5% off),
// llama70b.gate_up uint4 to 32 (M = 32: decode 222.2, prefill 255.1).
// 2026-12-03 05:25 UTC (scripts/session-check on the H200, docs/BENCHMARKS.md "Session of 2026-12-03,
// morning"): with the refitted prefill plan, llama8b.down uint4b8 M = 16 runs faster on the prefill
// path in both dtypes (fp16 prefill 21.6 us against decode 22.6; bf16 21.7 against 23.7; prefill
// is flat in M up to 32, 22.5 us, decode 16.4 us at M = 8): crossover ~14.6, so decode up to 14
// (uint4 stays at 16: decode 25.4 against prefill 30.3). Then the measured decode plans at 9..16 tokens
// (decode_plan.cu kMeasuredPlans, 07:00 UTC) took llama8b.down M = 16 to 20.6 us fp16 / 21.4 bf16, ahead of
// prefill again: the entry was removed, the default (decode up to 16) holds.
// 2026-12-03 evening (call 6, scripts/hybrid-check after the two prefill dequantization changes,
// docs/BENCHMARKS.md "Session of 2026-12-03, evening"): the prefill path got 4-9% faster, so
//   llama8b.gate_up / llama70b.gate_up uint4 M = 32 now run faster on prefill (44.4 / 171.4 us against
//   decode 59.0 / 226.7): both back to the default 16;
//   llama8b.down uint4 M = 16: prefill 22.9 us against decode 25.3 (decode 17.8 at M = 4, prefill flat
//   in M): crossover interpolated at ~12, so decode up to 12 (uint4b8 stays at 16: prefill within 4%).
// 2026-12-03 stop 20 (scripts/hybrid-check after the prefill k loop's constant stage indices, prefill
// 3-9% faster at M = 64..128, docs/BENCHMARKS.md "Session of 2026-12-03, stop 20"): llama8b.down
// uint4b8 M = 16 ran faster on prefill in both dtypes (fp16 prefill 17.7 us against decode 20.7).
// Both paths were then measured at every M = 8..16 (fp16 / bf16 x uint4b8 / uint4, same process,
// docs/benchmarks/session_2026-12-03_stop20/call3_down_8to16.csv): prefill is flat (fp16 uint4b8
// 17.7-19.0 us but 21.1 at M = 11, uint4 21.4-21.7); decode is 16.6-16.9 us at M = 9 / 10 (its
// measured staged plan, kMeasuredPlans) and 20.8-22.9 from M = 11 (uint4b8), 25.0-27.6 from M = 9
// (uint4, 19.1 at M = 8). bf16 alike. So decode up to 10 (uint4b8) and 8 (uint4).
// 2026-12-03 stop 22 (the prefill epilogue's lean loop now covers partial m blocks, so the bm64 tile
// at M < 64 got 2-16% faster): the hybrid sweep (call 3) missed at M = 16 on qwen0.5b.qkv / o / gate_up
// (prefill 2.7 us against decode 3.2-3.4 on qkv / o). Both paths were then measured at every M = 4..16
// on six layers (fp16 / bf16 x uint4b8 / uint4, same process; docs/benchmarks/session_2026-12-03_stop22/
// call4_hybrid_4to16.csv), decode / prefill time: qwen0.5b.qkv / o 0.88-0.99 up to M = 7, 0.99-1.06 at
// 8, 1.04-1.32 from 9; qwen0.5b.gate_up 0.82-0.96 up to 8, 0.97-1.16 from 9; llama8b.down uint4b8
// 0.69-0.84 up to 8, 0.98-1.02 at 9 / 10, 1.05-1.34 from 11 (uint4 1.18-1.32 from 9); llama8b.o and
// qwen0.5b.down decode at or ahead up to 16 (worst 1.04x). The threshold of least summed log ratio
// per layer and scalar type (both dtypes) is the table below.
// 2026-12-03 stop 23 (the measured prefill plans, prefill_plan.cu kMeasuredPrefillPlans: llama8b.o at M <= 32
// runs bm64 with 4 splits, 0.70-0.74x the time at M = 8 / 16): the fp16 sweep missed llama8b.o M = 16
// (decode 8.42 us, prefill 7.59). Both paths at every M = 4..16 (call 2, session_2026-12-03_stop23/
// call2_hybrid_4to16.csv), decode / prefill time: 0.81-0.92 up to M = 8, 1.08-1.14 from 9 (fp16 and
// bf16 alike): decode up to 8. uint4 (call 3, call3_hybrid_4to16_o.csv): 0.80-0.87 up to 8, 1.01-1.07
// from 9: 8 as well.
// 2026-12-05 stop 46 (call 5 on the H200, docs/benchmarks/session_2026-12-05_stop46/call5_data/call3_h200.txt): since
// stop 45 the H200's decode path streams x at 4..8 tokens on layers <= 8 MB, and on qwen0.5b.qkv / o at M = 8 it ran
// 2.23-2.40 us against the prefill path's 2.61-2.73 (decode / prefill 0.86-0.89), so the hybrid with decode up to 7
// was 1.12-1.17x behind decode there; from M = 9 prefill leads (1.03-1.15). Decode up to 8 on both layers.
// 2026-12-05 stop 47 (call 3 on the H200, docs/benchmarks/session_2026-12-05_stop47/: scripts/hybrid-check of the whole
// table, then both paths at M = 8..16 on llama8b.o / down, fp16 / bf16, 2 rounds): the decode path's 9..16-token kernels got
// faster since stop 23 (the streamed x, the x windows per K group, the uint4 zero constants), and the hybrid ran prefill
// 1.03-1.10x behind decode at M = 9..16 there. Decode / prefill now: llama8b.o uint4b8 0.92-0.97 at every M = 9..16,
// uint4 0.95-0.98 up to 12 and 1.01 at 14 / 16; llama8b.down uint4b8 0.92-0.98 at 9..16, uint4 1.10-1.19 from 9 (0.88-0.97
// at 8). So llama8b.o decode up to 16 / 12, llama8b.down up to 16 / 8 (the H100 columns stay as measured in stop 46).
// Call 4 ran that table as the hybrid at M = 8..16 (2 rounds): within 0-1.8% of the faster path everywhere but llama8b.o
// fp16 uint4 M = 13..16, where its prefill ran 1.02-1.04x behind decode (bf16: prefill ahead by 0.3-1.3% at 14 / 16), so
// llama8b.o uint4 takes decode up to 16 as well (decode at 13..16 within 1.3% of the faster path in both dtypes).
// 2026-12-06 stop 51 (call 1 on the H200, docs/benchmarks/session_2026-12-06_stop51/): the prefill plan's 16-token tiles
// (configs 35 / 36, measured entries at M = 1..16 since stop 50) against the decode path at M = 8..16, fp16, one process:
// decode / prefill on llama70b.gate_up uint4b8 0.84 at M = 8, 1.03-1.07 at 9..16 (M = 16: prefill 87.6 us, decode 93.0),
// llama8b.gate_up uint4b8 0.91 at 8, 1.03-1.08 at 9..16 (M = 16: 24.0 / 25.8); their uint4 0.85-0.90 / 0.72-0.75 (the
// zero points cost the prefill tile more); 8192x8192 0.82-0.86, llama8b.qkv 0.81-0.89 (their 16-token entries need a
// resident-cluster count this H200 does not give: the bm64 plan ran), llama8b.o 0.96-1.00, llama8b.down uint4b8
// 0.91-0.98 / uint4 1.05-1.08 (as set). So the two gate_up layers take prefill from M = 9 in uint4b8 (on the H100 too:
// stop 50 measured prefill ahead at M = 16 on both, 0.89 / 0.95). Call 2 timed the 16-token entries the plan had refused
// on this H200 (a resident-cluster count 3-7% below the tiles': prefill_plan.cu timed_clusters now takes them): M = 16
// llama8b.qkv 7.96 us (decode 8.92, 8.64 at M = 9), llama8b.o 6.51 (decode 7.68, 7.22 at M = 9), flat in M up to 16;
// so both take prefill from 9 in uint4b8 (their uint4 keeps decode: the zero points cost the prefill tile 1.2-1.5x on
// the gate_up layers), llama8b.down uint4b8 stays (16.23 against decode 15.5-16.8 at 9..16). Call 3 ran this table as
// the hybrid at M = 1..32 on the six large layers: within 5% of the faster path at 36 of 36 uint4b8 and 6 of 6 uint4 points
// (llama8b.down M = 16 the closest: decode 16.65 against prefill 16.03).
// 2026-12-06 stop 52 (docs/benchmarks/session_2026-12-06_stop52/): the prefill kernel's uint4 16-token tile got
// 1.13-1.41x faster at M = 16 (its W slot's scale and zero words in one 8-byte aux word: 4 CTAs per SM as uint4b8's).
// Both paths in uint4 at M = 8..16, fp16 / bf16, one process (call 3, H200; call 2, H100): llama8b.o prefill 6.86-7.25 us
// against decode 8.32-9.26 at M = 9..16 (M = 8: decode 5.78-5.98 against 6.84-7.06), llama8b.qkv 9.07-9.58 against
// 9.61-10.83 (M = 8: 8.66 / 8.90 fp16, a tie in bf16); H100 llama8b.qkv 9.09-9.35 against 10.13-10.42 (M = 8: 7.96 / 8.91).
// So both take prefill from M = 9 in uint4 too, on both devices. Decode keeps the lead in uint4 on llama8b.gate_up (25.4-29.5
// against 31.1-32.3), llama70b.gate_up (92.7-111.2 against 103.2-109.9: prefill ahead by 1% at bf16 M = 16 only) and
// 8192x8192 (16.9-18.4 against 21.4-22.5). On the H100 (calls 5-6) 8192x8192 uint4b8 ran prefill ahead from M = 10-12:
// fp16 17.97 us against decode 18.10 / 18.26 / 18.73 at M = 10 / 11 / 12 (17.63 / 17.97 at 9), bf16 18.87 / 19.03 at M = 12
// (18.44 / 18.84 at 11), 18.0-18.9 against 19.8-20.3 at 16: decode up to 11 there (uint4: decode ahead to 16, 16.4-18.8 against
// 21.4-21.7 in call 2).
// 2026-12-07 stop 72 (call B on an H100 80GB HBM3, docs/benchmarks/session_2026-12-07_stop72/: the decode path, the bulk
// kernel with x streamed and the prefill path at M = 9 / 12 / 16 on 8 layers, fp16 / bf16 x uint4b8 / uint4, 2 interleaved
// rounds): on llama8b.down uint4 the bulk kernel with x streamed ran 16.15-19.12 us against the prefill path's 19.22-20.34
// (the streaming kernel's 22.29-25.67), so it is now the decode plan there on H100-class memory (decode_plan.cu
// bulk_xstream_by_default) and the H100 column takes decode up to 16 in uint4 (uint4b8 stays at 8: prefill 15.94-16.96
// against decode 17.12-18.15). Measured at g = 128, as every entry here; at g = 32 that decode plan stays the streaming
// kernel (the bulk rule leaves out the spilling g = 32 kernels), and it still leads there: stop 73 call A (H100) at
// g = 32, M = 9 / 12 / 16, fp16 / bf16: decode 28.02-28.77 us against prefill 36.97-37.33 (prefill's g = 32 tile is
// slower), so the switch at 16 holds for every group size. The hybrid at g = 128 in the same call: 16.36 / 17.56 /
// 19.13 us at M = 9 / 12 / 16 fp16 (bf16 16.41 / 17.65 / 19.20) against prefill's 19.29-19.57 (bf16 20.12-20.35). The call's
// other H100 points agree with the table (llama8b.o / qkv prefill from 9, the gate_up layers' uint4b8 prefill from 9 and
// uint4 decode to 16 (llama70b.gate_up bf16 M = 16 1.9% the other way), 8192x8192 uint4b8 prefill from 12, qwen0.5b.down
// decode to 16); qwen0.5b.gate_up M = 9..16 within 0.97-1.03.
// 2026-12-07 stop 74 (call 2 on an H100 80GB HBM3, docs/benchmarks/session_2026-12-07_stop74/): with the bulk kernel's
// x as one TMA box per stage, decode_plan takes it at 9..16 tokens on H100-class memory, and the decode path (the default
// plans, 2 rounds) against the prefill path (registry cuda_prefill, same call) at M = 9 / 12 / 16, fp16 / bf16, g = 128,
// prefill / decode: llama8b.down uint4b8 1.16-1.20 (16.0-17.0 against 13.7-14.3 us), 8192x8192 uint4b8 1.11-1.14,
// qwen0.5b.gate_up 1.05-1.08 / uint4 1.09-1.12, llama8b.o uint4 1.03-1.06, llama8b.qkv uint4 0.98-1.00 at 9 and
// 1.02-1.08 at 12 / 16, llama70b.gate_up uint4b8 fp16 1.07 / 1.07 / 1.01 and bf16 0.99 / 1.00 / 0.96 at 9 / 12 / 16; the
// prefill path still leads on llama8b.qkv uint4b8 (0.89-0.95), llama8b.gate_up uint4b8 (0.93-0.98) and llama8b.o
// uint4b8 (0.98-1.00). So the H100 columns: decode up to 16 on llama8b.down uint4b8, 8192x8192 uint4b8, qwen0.5b.gate_up,
// llama8b.o uint4 and llama8b.qkv uint4 (-1.7% at M = 9), up to 12 on llama70b.gate_up uint4b8; the rest as before.
// 8192x8192 then took the default in every column and left the table (its H100 uint4b8 entry had been 11, stop 52).
// What the runs show: the decode path wins at M <= 16 on the large layers (since stop 47 also llama8b.o, and llama8b.down
// uint4b8, on the H200), the prefill path from M = 9 on the small Qwen layers (H200), llama8b.down uint4 and, on
// H100-class memory, llama8b.o / down; decode loses at M = 32 everywhere.
#pragma once
#include <array>
#include <cstdint>

namespace w4a16::registry_detail {

struct HybridShape {
  std::int64_t n, k;                                 // the layer (partition) shape
  std::int64_t decode_max_m_sym, decode_max_m_asym;  // uint4b8 / uint4 (zero points)
  std::int64_t slow_dram_sym, slow_dram_asym;        // the same on H100-class memory (below kHybridSlowDramTbPerS)
};

// H100-class memory (a measured peak below this, TB/s; the H200's is 4.8): its own switch points in the table's last
// two columns. 2026-12-05 stop 46 (an H100 80GB HBM3, calls 1-3, docs/benchmarks/session_2026-12-05_stop46/): the
// prefill path at 7..16 tokens on the Qwen2.5-0.5B layers took ~3.0-3.2 us there (the H200's ~2.6 in stop 22), the
// decode path 2.1-3.1, so decode / prefill on qwen0.5b.qkv / o was 0.72-0.78 at M = 7 / 8, 0.90-0.97 at M = 9..12 and
// 0.94-0.96 at M = 16 (fp16 / bf16 x uint4b8 / uint4, 2 rounds each call, every row against f64): decode up to the
// default 16 there (call 3, the hybrid with decode up to 12: within 0-2% of decode at M = 7..12, 5-8% behind it at 16).
// qwen0.5b.gate_up (M = 9: 1.00-1.05) and llama8b.o (M = 9: 0.99-1.02, M = 10: 1.03-1.08) keep their H200 points;
// llama8b.down not measured. A device whose bandwidth is unknown (0) takes the H200's columns.
inline constexpr double kHybridSlowDramTbPerS = 4.0;

// Measured layer shapes that switch elsewhere than the default (fp16 us of the last run above).
inline constexpr HybridShape kHybridShapes[] = {
    {4096, 14336, 16, 8, 16, 16},  // llama8b.down      fp16 uint4b8 M = 16: decode 16.67 us, prefill 16.97; uint4 M = 9: 22.02 / 20.01 (stop 47); H100 uint4 M = 9 / 16: 16.15 / 18.99 (bulk, x streamed) / 19.22 / 19.45 (stop 72)
    {9728, 896, 8, 8, 16, 16},    // qwen0.5b.gate_up  fp16 uint4b8 M = 8: 4.76 / 5.54; M = 9: 6.00 / 5.49 (stop 22); H100 M = 9: 5.39 / 5.37
    {1152, 896, 8, 8, 16, 16},    // qwen0.5b.qkv      fp16 uint4b8 M = 8: 2.30 / 2.63; M = 9: 2.77 / 2.64 (stop 46); H100 M = 16: 2.94 / 3.14
    {896, 896, 8, 8, 16, 16},     // qwen0.5b.o        fp16 uint4b8 M = 8: 2.23 / 2.61; M = 9: 2.69 / 2.63 (stop 46); H100 M = 16: 2.87 / 3.04
    {57344, 8192, 8, 16, 12, 16},  // llama70b.gate_up  fp16 uint4b8 M = 8: 64.65 / 76.77; M = 9: 82.87 / 77.30 (stop 51)
    {28672, 4096, 8, 16, 8, 16},  // llama8b.gate_up   fp16 uint4b8 M = 8: 21.32 / 23.52; M = 9: 24.64 / 23.84 (stop 51)
    {6144, 4096, 8, 8, 8, 16},    // llama8b.qkv       fp16 uint4b8 M = 9: decode 8.64 us, prefill (bm16 s8) 7.96 at M = 16 (stop 51); uint4 M = 9: 9.63 / 9.07 (stop 52)
    {4096, 4096, 8, 8, 8, 16},    // llama8b.o         fp16 uint4b8 M = 9: decode 7.22, prefill (bm16_bn64 s8) 6.51 at M = 16 (stop 51); uint4 M = 9: 8.32 / 6.86 (stop 52); H100 M = 9: 1.02x
};

// Every other shape: decode up to 16 tokens (it won at M = 16 on the other five PERF.md shapes, from
// 896x4864 to 57344x8192, and lost or tied at M = 32 on all of them: 2026-12-03 evening, stops 20, 22, 23).
inline constexpr std::int64_t kHybridDefaultDecodeMaxM = 16;

// The largest M the hybrid runs on its decode path for this layer, on the code a device runs (code_arch: 90 for the
// sm_90a kernels, 80 for sm_80's). The table above was measured against the sm_90a prefill path (wgmma); sm_80 code's
// prefill path (mma.sync) is slower at small M, and its decode path ran ahead at M = 16 on every layer measured
// (2026-12-05 stop 38 call 4, the sm_80 code on the H200 through its PTX: qwen0.5b.qkv M = 16 decode 3.47 us against
// prefill 8.58; 8192x8192 / llama8b.gate_up decode already; prefill ahead at M = 64 on all three), so it takes the
// default on every layer. dram_tb_per_s: the peak of the device that runs it (device_dram_tb_per_s(); 0 = unknown).
inline std::int64_t hybrid_decode_max_m(std::int64_t n, std::int64_t k, bool has_zeros, int code_arch, double dram_tb_per_s) {
  const bool slow = dram_tb_per_s > 0 && dram_tb_per_s < kHybridSlowDramTbPerS;
  if (code_arch == 90)
    for (const HybridShape& s : kHybridShapes)
      if (s.n == n && s.k == k) return slow ? (has_zeros ? s.slow_dram_asym : s.slow_dram_sym) : (has_zeros ? s.decode_max_m_asym : s.decode_max_m_sym);
  return kHybridDefaultDecodeMaxM;
}

// ---- The third path: W dequantized per call into the workspace + cuBLAS (kernels/cuda/prefill/prefill.hpp
// dense_transient_run), from dense_min_m tokens on. Measured on the H200 (2026-12-04 stop 27, calls 1-4,
// docs/benchmarks/prefill.md): the dequantization costs 1.8-2.2 us on the Qwen2.5-0.5B qkv / o layers and
// 8-10 us on gate_up (N K 2.5 bytes of traffic, the copy read from L2 by the GEMM), 25 us on llama8b.qkv.
// Against the int4 kernel with the measured plans of call 4 it wins by 8% or more only at qwen0.5b.qkv
// M ~ 2048 and on qwen0.5b.gate_up uint4 from 2560 tokens; everywhere else it ties or loses (up to 1.5x at
// M = 256). So no layer takes it by default: the table is empty and W4A16_HYBRID_DENSE_MIN_M opts in.
struct HybridDenseShape {
  std::int64_t n, k;
  std::int64_t dense_min_m;  // 0: never
};
inline constexpr std::array<HybridDenseShape, 0> kHybridDenseShapes{};

// The smallest M the hybrid runs on the dense path for this layer, 0 for never (the table above).
inline std::int64_t hybrid_dense_min_m_table(std::int64_t n, std::int64_t k) {
  for (const HybridDenseShape& s : kHybridDenseShapes)
    if (s.n == n && s.k == k) return s.dense_min_m;
  return 0;
}

}  // namespace w4a16::registry_detail
