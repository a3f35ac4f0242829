// The MoE layer on the CPU: argument checks, the f64 oracle, and the fast fp32 path.
//   x act [T, H], topk_ids int32 [T, k], topk_weights fp32 [T, k], out act [T, H]
//   w13 [E, 2I, H] (gate rows, then up rows), w2 [E, H, I], canonical per expert.
// Checked by tests/moe/test_moe_cpu.cpp (every T, k, dtype, scalar type, group size there).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/cpu/fast.hpp"  // amx_gemm_canonical: the AMX tile kernel on canonical weights
#include "rows_cpu.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

namespace {

struct Checked {
  std::int64_t T = 0;
  int k = 0;
  DType act = DType::f16;
};

Checked check_args(const MoeWeights& w, const MoeArgs& a) {
  const MoeSpec& s = w.spec();
  if (!a.x.defined()) fail(ErrorCode::invalid_argument, "x", "float16 or bfloat16 [T, H]", "no tensor");
  if (!is_activation_dtype(a.x.dtype)) fail(ErrorCode::dtype_mismatch, "x", "float16 or bfloat16 [T, H]", describe(a.x));
  if (a.x.rank != 2 || a.x.size(1) != s.hidden)
    fail(ErrorCode::shape_mismatch, "x", "[T, H] with H = " + std::to_string(s.hidden), describe(a.x));
  check_device(a.x, "x", Device::cpu);
  check_contiguous(a.x, "x");
  Checked c;
  c.T = a.x.size(0);
  c.act = a.x.dtype;
  check_dtype(a.topk_ids, "topk_ids", DType::i32);
  if (a.topk_ids.rank != 2 || a.topk_ids.size(0) != c.T)
    fail(ErrorCode::shape_mismatch, "topk_ids", "int32 [T, k] with T = " + std::to_string(c.T), describe(a.topk_ids));
  c.k = static_cast<int>(a.topk_ids.size(1));
  if (c.k < 1 || c.k > s.experts)
    fail(ErrorCode::shape_mismatch, "topk_ids", "k in [1, E = " + std::to_string(s.experts) + "]", describe(a.topk_ids));
  check_device(a.topk_ids, "topk_ids", Device::cpu);
  check_contiguous(a.topk_ids, "topk_ids");
  check_dtype(a.topk_weights, "topk_weights", DType::f32);
  check_shape(a.topk_weights, "topk_weights", {c.T, c.k}, "[T, k]");
  check_device(a.topk_weights, "topk_weights", Device::cpu);
  check_contiguous(a.topk_weights, "topk_weights");
  check_dtype(a.out, "out", c.act);
  check_shape(a.out, "out", {c.T, s.hidden}, "[T, H]");
  check_device(a.out, "out", Device::cpu);
  check_contiguous(a.out, "out");
  const auto* ids = a.topk_ids.ptr<const std::int32_t>();
  for (std::int64_t i = 0; i < c.T * c.k; ++i)
    if (ids[i] < 0 || ids[i] >= s.experts)
      fail(ErrorCode::invalid_argument, "topk_ids[" + std::to_string(i / c.k) + ", " + std::to_string(i % c.k) + "]",
           "an expert id in [0, " + std::to_string(s.experts) + ")", std::to_string(ids[i]));
  return c;
}

template <class F>
F silu(F v) {
  return v / (F(1) + std::exp(-v));
}

}  // namespace

void moe_reference(const MoeWeights& w, const MoeArgs& a) {
  const Checked c = check_args(w, a);
  const MoeSpec& s = w.spec();
  const std::int64_t H = s.hidden, I = s.intermediate;
  const auto* x = a.x.ptr<const std::uint16_t>();
  const auto* ids = a.topk_ids.ptr<const std::int32_t>();
  const auto* tw = a.topk_weights.ptr<const float>();
  auto* out = a.out.ptr<std::uint16_t>();
  std::vector<double> xt(static_cast<std::size_t>(H)), h(static_cast<std::size_t>(I)), y(static_cast<std::size_t>(H));
  for (std::int64_t t = 0; t < c.T; ++t) {
    for (std::int64_t i = 0; i < H; ++i) xt[i] = f16x_to_float(c.act, x[t * H + i]);
    std::fill(y.begin(), y.end(), 0.0);
    for (int j = 0; j < c.k; ++j) {
      const int e = ids[t * c.k + j];
      const CanonicalView w13 = w.w13(e), w2 = w.w2(e);
      for (std::int64_t n = 0; n < I; ++n) {
        double gate = 0, up = 0;
        for (std::int64_t i = 0; i < H; ++i) {
          gate += xt[i] * w13.w(n, i);
          up += xt[i] * w13.w(I + n, i);
        }
        h[n] = silu(gate) * up;
      }
      for (std::int64_t n = 0; n < H; ++n) {
        double acc = 0;
        for (std::int64_t i = 0; i < I; ++i) acc += h[i] * w2.w(n, i);
        y[n] += static_cast<double>(tw[t * c.k + j]) * acc;
      }
    }
    for (std::int64_t n = 0; n < H; ++n) out[t * H + n] = float_to_f16x(c.act, static_cast<float>(y[n]));
  }
}

// ---- Fast path ----------------------------------------------------------------------------
namespace {

// Rows of one work item of a GEMM over `experts` experts of `rows` rows of `row_bytes` packed bytes each: a thread
// streams about kItemBytes of contiguous weights per item, since each new item starts a stream that the row kernels'
// prefetch ahead has not reached (16-row items, 16 KB of w13: T = 1 / 4 took 1.24 / 1.21x the time of 128-row ones on
// Qwen3-30B-A3B shapes, 2 threads; docs/benchmarks/cpu.md), and >= 4 items per thread where the rows allow (balance).
constexpr std::int64_t kMinRowsPerItem = 16;
constexpr std::int64_t kItemBytes = 128 << 10;
// Packed bytes of one item row: GEMM 1's row of h is a gate row and an up row of H / 2 bytes each; GEMM 2's row I / 2.
std::int64_t gemm1_row_bytes(const MoeSpec& s) { return 2 * (s.hidden / 2); }
std::int64_t gemm2_row_bytes(const MoeSpec& s) { return s.intermediate / 2; }
// The most rows an item holds: ~kItemBytes of them (at least kMinRowsPerItem), at most the layer's.
std::int64_t max_rows_per_item(std::int64_t rows, std::int64_t row_bytes) {
  return std::min(rows, std::max<std::int64_t>(kMinRowsPerItem, kItemBytes / std::max<std::int64_t>(row_bytes, 1)));
}
std::int64_t rows_per_item(std::int64_t rows, std::int64_t row_bytes, std::int64_t experts, int threads) {
  const std::int64_t by_balance = std::max<std::int64_t>(kMinRowsPerItem, rows * experts / (4 * std::max(threads, 1)));
  return std::min(max_rows_per_item(rows, row_bytes), by_balance);
}

// Floats of one thread's group factors for an item (row_factors): GEMM 1's gate and up rows, or GEMM 2's rows.
std::int64_t factor_floats(const MoeSpec& s) {
  const std::int64_t r1 = max_rows_per_item(s.intermediate, gemm1_row_bytes(s));
  const std::int64_t r2 = max_rows_per_item(s.hidden, gemm2_row_bytes(s));
  return std::max(2 * 2 * r1 * s.w13_spec().groups(), 2 * r2 * s.w2_spec().groups());
}

struct Workspace {  // carved from the caller's bytes, in this order (each 64-byte aligned)
  float* xf;          // [T, H] x in fp32
  float* h;           // [S, I] silu(gate) * up per slot
  float* y;           // [S, H] per-slot expert output, before the routing weight
  float* rowbuf;      // [threads, max(H, I)] one dequantized weight row per thread
  float* gbuf;        // [threads, factor_floats] the item's rows' scales and zero * scale per group, per thread
  std::int32_t* off;  // [E + 1] start of each expert's slots in `slots`
  std::int32_t* slots;  // [S] slot ids grouped by expert, ascending within an expert
  std::int32_t* items;  // [E * max(ceil(I/16), ceil(H/16))] packed (expert, chunk) work items (rows_per_item)
  // The AMX experts (kernels/cpu amx_gemm_canonical), rows by sorted slot: their tokens' x, the two GEMMs' outputs.
  float* xp;          // [T, planar_floats(H)] x per token as the planar kernel reads it (rows_cpu.hpp), for one-slot experts
  float* xw;          // [T, H / 8] their word sums
  float* hp;          // [S, planar_floats(I)] h per slot, likewise
  float* hw;          // [S, I / 8]
  std::uint16_t* xg;  // [S, H] act: x rows of the expert's tokens
  float* g1;          // [S, 2 I] gate and up rows
  std::uint16_t* hg;  // [S, I] act: silu(gate) * up, rounded to the act dtype as the CUDA path stores it
  float* yg;          // [S, H]
  std::int32_t* lists;  // [E + 2 S]: the AMX experts, the planar experts' slots, those slots' tokens
};

std::size_t align64(std::size_t b) { return (b + 63) / 64 * 64; }

std::size_t carve(const MoeSpec& s, std::int64_t T, int k, int threads, void* base, Workspace* ws) {
  const std::size_t S = static_cast<std::size_t>(T * k), H = static_cast<std::size_t>(s.hidden),
                    I = static_cast<std::size_t>(s.intermediate), E = static_cast<std::size_t>(s.experts);
  const std::size_t chunks =
      static_cast<std::size_t>((std::max(s.hidden, s.intermediate) + kMinRowsPerItem - 1) / kMinRowsPerItem);
  const std::size_t PH = static_cast<std::size_t>(detail::planar_floats(s.hidden)),
                    PI = static_cast<std::size_t>(detail::planar_floats(s.intermediate));  // planar inputs of x, h
  const std::size_t sizes[] = {4 * T * H, 4 * S * I, 4 * S * H, 4 * static_cast<std::size_t>(threads) * std::max(H, I),
                               4 * (E + 1), 4 * S, 4 * E * chunks, 4 * static_cast<std::size_t>(threads) * static_cast<std::size_t>(factor_floats(s)),
                               4 * T * PH, 4 * T * H / 8, 4 * S * PI, 4 * S * I / 8,
                               2 * S * H, 4 * S * 2 * I, 2 * S * I, 4 * S * H, 4 * (E + 2 * S)};
  constexpr int kBuffers = sizeof(sizes) / sizeof(sizes[0]);
  std::size_t off = 0;
  unsigned char* p = static_cast<unsigned char*>(base);
  void* ptrs[kBuffers];
  for (int i = 0; i < kBuffers; ++i) {
    ptrs[i] = p ? p + off : nullptr;
    off += align64(sizes[i]);
  }
  if (ws) {
    ws->xf = static_cast<float*>(ptrs[0]);
    ws->h = static_cast<float*>(ptrs[1]);
    ws->y = static_cast<float*>(ptrs[2]);
    ws->rowbuf = static_cast<float*>(ptrs[3]);
    ws->off = static_cast<std::int32_t*>(ptrs[4]);
    ws->slots = static_cast<std::int32_t*>(ptrs[5]);
    ws->items = static_cast<std::int32_t*>(ptrs[6]);
    ws->gbuf = static_cast<float*>(ptrs[7]);
    ws->xp = static_cast<float*>(ptrs[8]);
    ws->xw = static_cast<float*>(ptrs[9]);
    ws->hp = static_cast<float*>(ptrs[10]);
    ws->hw = static_cast<float*>(ptrs[11]);
    ws->xg = static_cast<std::uint16_t*>(ptrs[12]);
    ws->g1 = static_cast<float*>(ptrs[13]);
    ws->hg = static_cast<std::uint16_t*>(ptrs[14]);
    ws->yg = static_cast<float*>(ptrs[15]);
    ws->lists = static_cast<std::int32_t*>(ptrs[16]);
  }
  return off + 64;  // + 64: room to align the caller's base
}

// Row n of a canonical host layer, w = (q - z) * s, times the inputs of `count` token slots (x_of(slot):
// K floats; planes_of(slot): their planar input and word sums, where the ISA has a planar kernel), each product
// handed to emit(slot, value), by the row kernels of this CPU (rows_cpu.hpp).
// One slot (and an ISA with a fused kernel): dequantize and dot fused, no row in memory; several slots with the 16-bit
// pairs' kernel: fused too, up to 8 slots per pass over the row; otherwise the row dequantized once into buf, then one
// dot per slot. sc, zs: the row's s and z s per group (row_factors).
template <class XOf, class PlanesOf, class Emit>
void row_times_slots(const detail::RowKernels& rk, const CanonicalView& w, std::int64_t n, const std::int32_t* slots,
                     std::int32_t count, const float* sc, const float* zs, float* buf, XOf x_of, PlanesOf planes_of, Emit emit) {
  const std::int64_t K = w.spec.k, gl = w.spec.group_len();
  const std::uint32_t* q = reinterpret_cast<const std::uint32_t*>(w.qweight) + n * (K / 8);
  if (count == 1 && rk.dequant_dot_planar) {  // the input's planar form (built for the planar experts' slots)
    const auto [planes, wsum] = planes_of(slots[0]);
    emit(slots[0], rk.dequant_dot_planar(q, K, gl, sc, zs, planes, wsum));
    return;
  }
  if (rk.dequant_dot_planar_multi) {  // 16-bit pairs: the row's nibbles extracted once for up to 8 slots at a time
    for (std::int32_t i0 = 0; i0 < count; i0 += 8) {
      const int c = static_cast<int>(std::min<std::int32_t>(8, count - i0));
      const float* planes[8];
      const float* wsums[8];
      float out[8];
      for (int j = 0; j < c; ++j) std::tie(planes[j], wsums[j]) = planes_of(slots[i0 + j]);
      rk.dequant_dot_planar_multi(q, K, gl, sc, zs, planes, wsums, c, out);
      for (int j = 0; j < c; ++j) emit(slots[i0 + j], out[j]);
    }
    return;
  }
  if (count == 1 && rk.dequant_dot) {
    emit(slots[0], rk.dequant_dot(q, K, gl, sc, zs, x_of(slots[0])));
    return;
  }
  rk.dequant_row(q, K, gl, sc, zs, buf);
  for (std::int32_t i = 0; i < count; ++i) emit(slots[i], rk.dot(buf, x_of(slots[i]), K));
}

// The group factors of rows [n0, n0 + R) of w: s at f + r G, z s at f + R G + r G for row n0 + r. uint4b8 rows in one
// call (their scales are contiguous and z = 8: one vector loop over R G values instead of R short ones, whose tails
// ran scalar: ~12% of the layer's time at T = 1 on rows of 6 groups), uint4 rows one at a time (each row's zero nibble
// sits at its own shift of the packed words).
void row_factors(const detail::RowKernels& rk, const CanonicalView& w, std::int64_t n0, std::int64_t R, float* f) {
  const std::int64_t G = w.spec.groups();
  const bool bf16 = w.scale_dtype == DType::bf16;
  if (!w.zeros.defined()) {
    rk.group_scales(w.scales + n0 * G, bf16, nullptr, 0, R * G, f, f + R * G);
    return;
  }
  for (std::int64_t r = 0; r < R; ++r) {
    const std::int64_t n = n0 + r;
    rk.group_scales(w.scales + n * G, bf16, w.zeros.data() + (n / 8) * G, static_cast<int>(4 * (n % 8)), G, f + r * G,
                    f + R * G + r * G);
  }
}

// Slots of one expert from which its GEMMs run on the AMX tiles (kernels/cpu amx_gemm_canonical), or "never" where the
// CPU has none (or W4A16_CPU_ISA caps it), measured on Qwen3-30B-A3B shapes (docs/benchmarks/cpu.md): 2 against the
// dequantized rows and dots, kAmxMinSlotsVnni against the 16-bit pairs' kernel, which takes several slots per row.
// W4A16_MOE_CPU_AMX_MIN=n overrides it (A/B measurement; 0 = never; not a number: invalid_argument).
constexpr std::int64_t kAmxMinSlotsVnni = 9;
std::int64_t amx_min_slots(const detail::RowKernels& rk) {
  if (!kernels::cpu::fast_isa_available(kernels::cpu::FastIsa::amx)) return std::numeric_limits<std::int64_t>::max();
  if (const char* e = std::getenv("W4A16_MOE_CPU_AMX_MIN"); e && *e) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (*end != '\0' || v < 0) fail(ErrorCode::invalid_argument, "W4A16_MOE_CPU_AMX_MIN", "a count >= 0 (0 = never)", e);
    return v == 0 ? std::numeric_limits<std::int64_t>::max() : v;
  }
  return rk.dequant_dot_planar_multi ? kAmxMinSlotsVnni : 2;
}

int thread_id() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace

std::size_t moe_cpu_workspace_bytes(const MoeSpec& s, std::int64_t tokens, int top_k, int threads) {
  s.validate();
  return carve(s, tokens, top_k, std::max(threads, 1), nullptr, nullptr);
}

void moe_cpu(const MoeWeights& w, const MoeArgs& a, void* workspace, std::size_t workspace_bytes, int threads) {
  const Checked c = check_args(w, a);
  const MoeSpec& s = w.spec();
  threads = std::max(threads, 1);
#ifndef _OPENMP
  threads = 1;  // built without OpenMP: one thread, the same result
#endif
  const std::size_t need = moe_cpu_workspace_bytes(s, c.T, c.k, threads);
  if (workspace == nullptr || workspace_bytes < need)
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(need) + " bytes (moe_cpu_workspace_bytes)",
         std::to_string(workspace == nullptr ? 0 : workspace_bytes) + " bytes");
  auto* base = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(workspace) + 63) / 64 * 64);
  Workspace ws{};
  carve(s, c.T, c.k, threads, base, &ws);

  const std::int64_t T = c.T, H = s.hidden, I = s.intermediate, S = T * c.k;
  const int E = s.experts, k = c.k;
  const auto* x = a.x.ptr<const std::uint16_t>();
  const auto* ids = a.topk_ids.ptr<const std::int32_t>();
  const auto* tw = a.topk_weights.ptr<const float>();
  auto* out = a.out.ptr<std::uint16_t>();
  const std::int64_t RB = std::max(H, I);
  const std::int64_t FB = factor_floats(s);
  const detail::RowKernels rk = detail::row_kernels();
  const std::int64_t PH = detail::planar_floats(H), PI = detail::planar_floats(I);

  for (std::int64_t i = 0; i < T * H; ++i) ws.xf[i] = f16x_to_float(c.act, x[i]);
  // Counting sort of slots by expert (ascending slot order within an expert).
  std::fill(ws.off, ws.off + E + 1, 0);
  for (std::int64_t i = 0; i < S; ++i) ++ws.off[ids[i] + 1];
  for (int e = 0; e < E; ++e) ws.off[e + 1] += ws.off[e];
  {
    std::int32_t* cursor = ws.items;  // borrowed as E cursors before the item list is built
    std::copy(ws.off, ws.off + E, cursor);
    for (std::int64_t i = 0; i < S; ++i) ws.slots[cursor[ids[i]]++] = static_cast<std::int32_t>(i);
  }
  // Experts with at least amx_min slots run both GEMMs on the AMX tiles (where the CPU has them): in parallel, one thread
  // each, where there are enough of them to share out; else one at a time, each GEMM threaded inside. Buffers are
  // indexed by sorted slot (expert e's rows at off[e] ..), so concurrent experts never share a row.
  const std::int64_t amx_min = amx_min_slots(rk);
  std::int32_t* const amx_experts = ws.lists;
  std::int64_t n_amx = 0;
  for (int e = 0; e < E; ++e)
    if (ws.off[e + 1] - ws.off[e] >= amx_min) amx_experts[n_amx++] = e;
  std::stable_sort(amx_experts, amx_experts + n_amx,
                   [&](int a, int b) { return ws.off[a + 1] - ws.off[a] > ws.off[b + 1] - ws.off[b]; });  // largest first
  auto amx_expert = [&](int e, int gemm_threads) {
    const std::int32_t count = ws.off[e + 1] - ws.off[e], base = ws.off[e];
    const std::int32_t* slots = ws.slots + base;
    std::uint16_t* xg = ws.xg + static_cast<std::int64_t>(base) * H;
    float* g1 = ws.g1 + static_cast<std::int64_t>(base) * 2 * I;
    std::uint16_t* hg = ws.hg + static_cast<std::int64_t>(base) * I;
    float* yg = ws.yg + static_cast<std::int64_t>(base) * H;
    for (std::int32_t i = 0; i < count; ++i) std::copy_n(x + (slots[i] / k) * H, H, xg + i * H);
    kernels::cpu::amx_gemm_canonical(w.w13(e), c.act, xg, count, H, g1, 2 * I, gemm_threads);
    for (std::int64_t i = 0; i < count * I; ++i) {
      const float g = g1[(i / I) * 2 * I + i % I], u = g1[(i / I) * 2 * I + I + i % I];
      hg[i] = float_to_f16x(c.act, silu(g) * u);
    }
    kernels::cpu::amx_gemm_canonical(w.w2(e), c.act, hg, count, I, yg, H, gemm_threads);
    for (std::int32_t i = 0; i < count; ++i) std::copy_n(yg + i * H, H, ws.y + slots[i] * H);
  };
  if (n_amx >= 2 * threads) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::int64_t i = 0; i < n_amx; ++i) amx_expert(amx_experts[i], 1);
  } else {
    for (std::int64_t i = 0; i < n_amx; ++i) amx_expert(amx_experts[i], threads);
  }
  struct Items {
    std::int32_t n, chunks;  // items (expert e's chunk ch = e * chunks + ch), chunks per expert
    std::int64_t rows;       // rows per item
  };
  auto build_items = [&](std::int64_t rows, std::int64_t row_bytes) {
    auto here = [&](int e) { return ws.off[e + 1] > ws.off[e] && ws.off[e + 1] - ws.off[e] < amx_min; };
    std::int64_t experts = 0;
    for (int e = 0; e < E; ++e) experts += here(e) ? 1 : 0;
    const std::int64_t rpi = rows_per_item(rows, row_bytes, experts, threads);
    const std::int32_t chunks = static_cast<std::int32_t>((rows + rpi - 1) / rpi);
    std::int32_t n = 0;
    for (int e = 0; e < E; ++e)
      if (here(e))
        for (std::int32_t ch = 0; ch < chunks; ++ch) ws.items[n++] = e * chunks + ch;
    return Items{n, chunks, rpi};
  };

  // The experts on the planar kernels (rows_cpu.hpp: one-slot experts; with the 16-bit pairs' kernel, which takes several
  // slots per row, every expert below amx_min) read their inputs as that kernel's planar input: of x per token here,
  // of h per slot after GEMM 1.
  const std::int64_t planar_max = rk.dequant_dot_planar_multi ? S : (rk.dequant_dot_planar ? 1 : 0);
  std::int32_t* const planar_slots = ws.lists + E;
  std::int64_t n_planar = 0;
  for (int e = 0; e < E; ++e) {
    const std::int64_t count = ws.off[e + 1] - ws.off[e];
    if (count >= 1 && count <= planar_max && count < amx_min)
      for (std::int32_t i = ws.off[e]; i < ws.off[e + 1]; ++i) planar_slots[n_planar++] = ws.slots[i];
  }
  std::int32_t* const planar_tokens = ws.lists + E + S;  // each once (a token may sit in several planar experts)
  for (std::int64_t i = 0; i < n_planar; ++i) planar_tokens[i] = planar_slots[i] / k;
  std::sort(planar_tokens, planar_tokens + n_planar);
  const std::int64_t n_tokens = std::unique(planar_tokens, planar_tokens + n_planar) - planar_tokens;
#pragma omp parallel for schedule(static) num_threads(threads) if (n_tokens * H >= (1 << 16))
  for (std::int64_t i = 0; i < n_tokens; ++i) {
    const std::int64_t t = planar_tokens[i];
    rk.planar_input(ws.xf + t * H, H, ws.xp + t * PH, ws.xw + t * (H / 8));
  }
  auto x_planes_of = [&](std::int32_t sl) {
    return std::pair<const float*, const float*>(ws.xp + (sl / k) * PH, ws.xw + (sl / k) * (H / 8));
  };
  auto h_planes_of = [&](std::int32_t sl) { return std::pair<const float*, const float*>(ws.hp + sl * PI, ws.hw + sl * (I / 8)); };

  // GEMM 1 + SiLU(gate) * up: item = (expert, rows1 rows of I); each weight row dequantized once.
  const Items it1 = build_items(I, gemm1_row_bytes(s));
  const std::int32_t n1 = it1.n, ch1 = it1.chunks;
  const std::int64_t rows1 = it1.rows;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (std::int32_t it = 0; it < n1; ++it) {
    const int e = ws.items[it] / ch1;
    const std::int64_t r0 = static_cast<std::int64_t>(ws.items[it] % ch1) * rows1;
    const CanonicalView w13 = w.w13(e);
    float* buf = ws.rowbuf + thread_id() * RB;
    const std::int32_t* slots = ws.slots + ws.off[e];
    const std::int32_t count = ws.off[e + 1] - ws.off[e];
    auto x_of = [&](std::int32_t sl) { return ws.xf + (sl / k) * H; };
    const std::int64_t R = std::min(I, r0 + rows1) - r0, G = w13.spec.groups();
    float* fg = ws.gbuf + thread_id() * FB;  // the gate rows' factors, then the up rows'
    float* fu = fg + 2 * R * G;
    row_factors(rk, w13, r0, R, fg);
    row_factors(rk, w13, I + r0, R, fu);
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t n = r0 + r;
      row_times_slots(rk, w13, n, slots, count, fg + r * G, fg + R * G + r * G, buf, x_of, x_planes_of,
                      [&](std::int32_t sl, float v) { ws.h[sl * I + n] = v; });  // gate, for now
      row_times_slots(rk, w13, I + n, slots, count, fu + r * G, fu + R * G + r * G, buf, x_of, x_planes_of,
                      [&](std::int32_t sl, float v) { ws.h[sl * I + n] = silu(ws.h[sl * I + n]) * v; });
    }
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (n_planar * I >= (1 << 16))
  for (std::int64_t i = 0; i < n_planar; ++i) {
    const std::int64_t sl = planar_slots[i];
    rk.planar_input(ws.h + sl * I, I, ws.hp + sl * PI, ws.hw + sl * (I / 8));
  }
  // GEMM 2: item = (expert, rows2 rows of H).
  const Items it2 = build_items(H, gemm2_row_bytes(s));
  const std::int32_t n2 = it2.n, ch2 = it2.chunks;
  const std::int64_t rows2 = it2.rows;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (std::int32_t it = 0; it < n2; ++it) {
    const int e = ws.items[it] / ch2;
    const std::int64_t r0 = static_cast<std::int64_t>(ws.items[it] % ch2) * rows2;
    const CanonicalView w2 = w.w2(e);
    float* buf = ws.rowbuf + thread_id() * RB;
    const std::int32_t* slots = ws.slots + ws.off[e];
    const std::int32_t count = ws.off[e + 1] - ws.off[e];
    const std::int64_t R = std::min(H, r0 + rows2) - r0, G = w2.spec.groups();
    float* f = ws.gbuf + thread_id() * FB;
    row_factors(rk, w2, r0, R, f);
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t n = r0 + r;
      row_times_slots(rk, w2, n, slots, count, f + r * G, f + R * G + r * G, buf, [&](std::int32_t sl) { return ws.h + sl * I; },
                      h_planes_of, [&](std::int32_t sl, float v) { ws.y[sl * H + n] = v; });
    }
  }
  // Weighted sum over the k slots of each token, in slot order (deterministic).
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t n = 0; n < H; ++n) {
      float acc = 0.f;
      for (int j = 0; j < k; ++j) acc += tw[t * k + j] * ws.y[(t * k + j) * H + n];
      out[t * H + n] = float_to_f16x(c.act, acc);
    }
}

void router_logits_cpu(const TensorView& x, const TensorView& router, float* logits) {
  if (!is_activation_dtype(x.dtype)) fail(ErrorCode::dtype_mismatch, "x", "float16 or bfloat16 [T, H]", describe(x));
  if (!is_activation_dtype(router.dtype))
    fail(ErrorCode::dtype_mismatch, "router", "float16 or bfloat16 [E, H]", describe(router));
  if (x.rank != 2 || router.rank != 2 || x.size(1) != router.size(1))
    fail(ErrorCode::shape_mismatch, "router", "[E, H] with H = x.shape[1] = " + std::to_string(x.rank == 2 ? x.size(1) : -1),
         describe(router));
  check_contiguous(x, "x");
  check_contiguous(router, "router");
  const std::int64_t T = x.size(0), E = router.size(0), H = x.size(1);
  const auto* xp = x.ptr<const std::uint16_t>();
  const auto* rp = router.ptr<const std::uint16_t>();
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t e = 0; e < E; ++e) {
      double acc = 0;
      for (std::int64_t i = 0; i < H; ++i)
        acc += static_cast<double>(f16x_to_float(x.dtype, xp[t * H + i])) * f16x_to_float(router.dtype, rp[e * H + i]);
      logits[t * E + e] = static_cast<float>(acc);
    }
}

}  // namespace w4a16::moe
