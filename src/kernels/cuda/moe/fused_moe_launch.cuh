// launch_fused_moe_t<T, kZeros>: GEMM 1 (+ SiLU * up) -> GEMM 2 -> weighted reduction, on one
// stream, no allocation, no synchronisation. Included by fused_moe_{f16,bf16}.cu only, which
// instantiate it (explicit instantiation keeps the two dtypes compiling in parallel).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "moe/fused_moe.cuh"
#include "moe/moe_ring.cuh"
#include "moe/ring_align.hpp"
#include "prefill/prefill.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

// Every kernel of the chain is launched with programmatic stream serialization (PDL, sm_90): it
// may start while its predecessor drains and prefetch constant weights before griddepcontrol.wait
// (fused_moe.cuh, pdl_wait). The legacy default stream keeps plain serialization.
template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, Args... args) {
  cuda::launch_pdl(kernel, grid, block, smem, stream, stream != nullptr, args...);
}

template <class T, bool kZeros, bool kDirect>
void launch_decode(const MoeRunDev& r, const GemmParams& g1, const GemmParams& g2, int nblocks, cudaStream_t stream) {
  const int w1 = decode_warps(g1.k / 64), w2 = decode_warps(g2.k / 64);
  launch_pdl(moe_decode_kernel<T, kZeros, true, kDirect>, dim3(nblocks, r.inter / 16), dim3(32 * w1),
             decode_smem_bytes<T>(w1), stream, g1);
  launch_pdl(moe_decode_kernel<T, kZeros, false, kDirect>, dim3(nblocks, r.hidden / 32), dim3(32 * w2),
             decode_smem_bytes<T>(w2), stream, g2);
}

// W4A16_MOE_RING: the decode paths (aligned block 8, direct block 1) run the persistent ring kernel
// (moe_ring.cuh; the default since the H200 A/B of 2026-12-03, docs/benchmarks/moe.md: T = 1 / 4 / 16 / 64
// 15.2 / 38.3 / 100.8 / 155.9 -> 13.0 / 29.9 / 67.9 / 101.8 us) with every resident block taking items round robin
// ("2" or unset: the default since stop 32: 0.96-0.985x the time of the balanced grid at T = 4..64 in two calls, fp16 /
// bf16 x uint4b8 / uint4, T = 1 0.99-1.0x; the kernel is bound by its warps' instruction streams, so an SM with two
// busy blocks is what counts, not a block with one item more), "1" with the balanced grid (the fewest blocks that
// finish in the same rounds), "0" moe_decode_kernel (the A/B knobs). Read per call, so one process can A/B.
inline int ring_mode() {
  const char* env = std::getenv("W4A16_MOE_RING");
  if (!env || !*env) return 2;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0 && std::strcmp(env, "2") != 0)
    fail(ErrorCode::invalid_argument, "W4A16_MOE_RING", "0, 1 or 2", env);
  return *env - '0';
}

// W4A16_MOE_FUSED_ALIGN: "1" or unset computes the alignment of the aligned block-8 ring path inside
// both ring kernels (moe_ring.cuh, ring_align: no alignment launch) where it fits (ring_align_fits);
// "0" launches the alignment kernel first (the A/B knob). Read per call. Measured on the H200
// (2026-12-03, docs/benchmarks/moe.md; outputs bit-equal): block 8 at T = 16 / 64 69.6 -> 65.0 /
// 103.7 -> 95.5 us, T = 1 / 4 / 256 -3.0 / -1.8 / -19 us.
inline bool fused_align_mode() {
  const char* env = std::getenv("W4A16_MOE_FUSED_ALIGN");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0)
    fail(ErrorCode::invalid_argument, "W4A16_MOE_FUSED_ALIGN", "0 or 1", env);
  return *env == '1';
}

// Dynamic shared memory a block of ring shape S may take (its ring + the fused alignment) with the
// same blocks per SM: kSmemCap, or the device's per-block opt-in limit where that is lower; a ring larger than that
// limit (the deep one on an A100) is refused by name. Once per shape.
template <class S>
int ring_smem_cap() {
  static const int cap = [] {
    int dev = 0, optin = 0;
    W4A16_CUDA_TRY(cudaGetDevice(&dev));
    W4A16_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (S::kSmemBytes > optin)  // the deep ring (W4A16_MOE_RING_DEEP=1) on a GPU of less than the H200's shared memory
      fail(ErrorCode::unsupported, "MoE ring", "a ring within this GPU's " + std::to_string(optin) + " bytes of shared memory a block",
           std::to_string(S::kSmemBytes) + " bytes (the deep ring of W4A16_MOE_RING_DEEP=1, sized for the H200: unset it)");
    return std::min(S::kSmemCap, optin);
  }();
  return cap;
}

// Resident blocks of one ring kernel on this device (once per instantiation): its persistent grid,
// counted at the ring's own shared memory; the attribute allows up to kSmemCap (the same blocks
// per SM) for the fused alignment's layout beside the ring.
template <class T, bool kZeros, bool kGemm1, int kGs, bool kDeep>
int ring_resident_blocks() {
  static const int n = [] {
    auto* k = moe_ring_kernel<T, kZeros, kGemm1, kGs, kDeep>;
    using S = RingShape<kGemm1, kZeros, kGs, kDeep>;
    const int smem = S::kSmemBytes;
    W4A16_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, ring_smem_cap<S>()));
    int per_sm = 0;
    W4A16_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kRingThreads, smem));
    return std::max(per_sm, 1) * cuda::device_sm_count();
  }();
  return n;
}

// W4A16_MOE_RING_DEEP: "1" takes the deep ring (one block per SM, more tiles in flight per warp),
// "0" or unset the shallow one (two blocks per SM). Measured on the H200 (2026-12-03) where the deep
// ring would have been chosen by items <= SMs: T = 1 13.7 us deep against 13.0 shallow, T = 4 equal;
// so it is opt-in.
inline int ring_deep_override() {
  const char* env = std::getenv("W4A16_MOE_RING_DEEP");
  if (!env || !*env) return -1;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0)
    fail(ErrorCode::invalid_argument, "W4A16_MOE_RING_DEEP", "0 or 1", env);
  return *env - '0';
}

template <class T, bool kZeros, bool kGemm1, int kGs, bool kDeep>
void launch_ring_kernel(const GemmParams& g, int items, cudaStream_t stream) {
  const int align_bytes = g.ring_align ? ring_align_layout(g.sentinel, g.experts).bytes : 0;
  launch_pdl(moe_ring_kernel<T, kZeros, kGemm1, kGs, kDeep>,
             dim3(std::min(ring_resident_blocks<T, kZeros, kGemm1, kGs, kDeep>(), items)), dim3(kRingThreads),
             RingShape<kGemm1, kZeros, kGs, kDeep>::kSmemBytes + align_bytes, stream, g);
}

// The ring variant of `g`'s groups: kGs 1 where every group is a power of two >= 128, two tiles' worth
// (RingShape::kPair), or the whole K (channelwise), else 2 (g = 32, g = 64, or another length: per-half-tile entries).
template <bool kZeros>
bool ring_groups_span_tiles(const GemmParams& g) { return g.groups == 1 || g.group_shift >= 7; }

// Whether the fused alignment fits beside the ring of the variant launch_ring_gemm picks for `g`.
template <bool kZeros, bool kGemm1>
bool ring_align_fits_gemm(const GemmParams& g, std::int64_t tokens, int top_k) {
  const bool deep = ring_deep_override() == 1, one = ring_groups_span_tiles<kZeros>(g);
  using A = RingShape<kGemm1, kZeros, 1, false>;
  using B = RingShape<kGemm1, kZeros, 1, true>;
  using C = RingShape<kGemm1, kZeros, 2, false>;
  using D = RingShape<kGemm1, kZeros, 2, true>;
  const int bytes = one ? (deep ? B::kSmemBytes : A::kSmemBytes) : (deep ? D::kSmemBytes : C::kSmemBytes);
  const int cap = one ? (deep ? ring_smem_cap<B>() : ring_smem_cap<A>()) : (deep ? ring_smem_cap<D>() : ring_smem_cap<C>());
  return ring_align_fits(tokens, top_k, g.experts, bytes, cap);
}

// One GEMM through the ring kernel: kGs as ring_groups_span_tiles says, deep as W4A16_MOE_RING_DEEP says.
template <class T, bool kZeros, bool kGemm1>
void launch_ring_gemm(const GemmParams& g, int items, cudaStream_t stream) {
  const bool deep = ring_deep_override() == 1;
  if (ring_groups_span_tiles<kZeros>(g)) {
    if (deep) launch_ring_kernel<T, kZeros, kGemm1, 1, true>(g, items, stream);
    else launch_ring_kernel<T, kZeros, kGemm1, 1, false>(g, items, stream);
  } else {
    if (deep) launch_ring_kernel<T, kZeros, kGemm1, 2, true>(g, items, stream);
    else launch_ring_kernel<T, kZeros, kGemm1, 2, false>(g, items, stream);
  }
}

// Stages of the decode paths' chain that run: 3 (GEMM 1, GEMM 2, the reduce). A timing-only diagnostic build
// (cmake -DW4A16_DIAG_MOE_STAGES=ON: wrong results, never the library's) reads W4A16_MOE_DIAG_STAGES: 1 launches the ring
// paths' GEMM 1 alone, 2 GEMM 1 and GEMM 2 (no reduce), so that differences of times place the chain's time.
inline int diag_stages() {
#if defined(W4A16_DIAG_MOE_STAGES)
  const char* env = std::getenv("W4A16_MOE_DIAG_STAGES");
  return env && (*env == '1' || *env == '2') ? *env - '0' : 3;
#else
  return 3;
#endif
}

// W4A16_MOE_RING_FOLD: "1" or unset folds the weighted top-k sum into GEMM 2 of the direct path where 4 <= top_k <= 8
// (moe_ring.cuh, ring_fold: no y rows, no reduce launch), "0" keeps GEMM 2 per slot and the reduce launch (the A/B
// knob). Read per call.
inline bool ring_fold_mode() {
  const char* env = std::getenv("W4A16_MOE_RING_FOLD");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_MOE_RING_FOLD", "0 or 1", env);
  return *env == '1';
}
inline bool ring_fold_applies(const MoeRunDev& r) { return ring_fold_mode() && r.top_k >= 4 && r.top_k <= kRingSlots; }  // knob read first: refused at any k

// The ring's contract: rows 16-byte aligned, offsets within 32 bits.
inline bool ring_contract(const MoeRunDev& r, const GemmParams& g1, const GemmParams& g2) {
  const std::int64_t slots = r.tokens * r.top_k;
  return g1.in_vec16 && g2.in_vec16 && slots * std::max(r.hidden, r.inter) < (std::int64_t{1} << 31);
}

// The ring kernels for both GEMMs of the aligned block-8 path (direct: block 1, nblocks = slots); false (nothing launched) where the
// ring's contract does not hold. g1 / g2 carry ring_align (aligned mode: the alignment inside).
template <class T, bool kZeros>
bool launch_ring(const MoeRunDev& r, GemmParams g1, GemmParams g2, int nblocks, bool balanced, bool direct,
                 cudaStream_t stream) {
  g1.ring_balanced = g2.ring_balanced = balanced;
  g1.ring_direct = g2.ring_direct = direct;
  if (!ring_contract(r, g1, g2)) return false;
  const int rows1 = r.inter / 64, rows2 = (r.hidden / 16 + 7) / 8;  // row blocks per slot block
  launch_ring_gemm<T, kZeros, true>(g1, nblocks * rows1, stream);
  if (diag_stages() < 2) return true;
  if (g2.ring_fold) {  // the direct path: items (token, 16-row stripe); out written here (the caller skips the reduce)
    launch_ring_gemm<T, kZeros, false>(g2, static_cast<int>(r.tokens) * (r.hidden / 16), stream);
  } else {
    launch_ring_gemm<T, kZeros, false>(g2, nblocks * rows2, stream);
  }
  return true;
}

template <class T, bool kZeros, int kBM>
void launch_prefill(const MoeRunDev& r, const GemmParams& g1, const GemmParams& g2, int nblocks, cudaStream_t stream) {
  using L = PrefillSmem<kBM, kZeros>;
  auto* k1 = moe_prefill_kernel<T, kZeros, kBM, true>;
  auto* k2 = moe_prefill_kernel<T, kZeros, kBM, false>;
  static const bool attrs_set = [&] {  // once per instantiation: > 48 KB of dynamic shared memory
    W4A16_CUDA_TRY(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes));
    W4A16_CUDA_TRY(cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes));
    return true;
  }();
  (void)attrs_set;
  const int pairs1 = r.inter / 16, pairs2 = r.hidden / 32;
  launch_pdl(k1, dim3(nblocks, (pairs1 + L::kWarps - 1) / L::kWarps), dim3(L::kThreads), L::kBytes, stream, g1);
  launch_pdl(k2, dim3(nblocks, (pairs2 + L::kWarps - 1) / L::kWarps), dim3(L::kThreads), L::kBytes, stream, g2);
}

// The grouped wgmma path (blocks 16..128 on sm_90a): the alignment (launched by the caller) -> x rows
// gathered in sorted order -> GEMM 1 over the experts with silu(gate) * up in its epilogue -> GEMM 2, rows by
// slot into r.y in the act dtype (rounded once, as h is; vLLM's fused MoE keeps them so too) -> the weighted
// reduction (the caller). Each GEMM is the linear prefill kernel's early-issue TMA tile in grouped mode
// (prefill.hpp, prefill_run_grouped): m block b uses expert block_expert[b]; blocks past the total exit.
// Block 64: the alignment's 64-row blocks, one pass per GEMM. Block 128: the alignment at 64 with block lists
// (AlignLists): each GEMM as a pass over the whole 128-row blocks (bm128 tile) and one over the 64-row tails (the
// bm64 2-CTA tile), so a run pads to 64 rows, not 128.
// c1 / c2: the two GEMMs' configs (grouped_configs, resolved by the caller before anything is launched).
template <class T>
void launch_grouped(const MoeRunDev& r, int c1, int c2, cudaStream_t stream) {
  const int slots = static_cast<int>(r.tokens * r.top_k);
  const std::int64_t rows = r.grouped_rows;
  // Gather: 16-byte vectors where x allows (H % 64 == 0 makes every row a multiple of 128 bytes).
  const bool vec16 = reinterpret_cast<std::uintptr_t>(r.x) % 16 == 0;
  const int row_bytes = r.hidden * static_cast<int>(sizeof(T));
  const dim3 gg(static_cast<unsigned>(std::clamp<std::int64_t>((rows + 7) / 8, 1, 132 * 16))), gb(256);  // a warp per row
  if (vec16)
    launch_pdl(moe_gather_rows_kernel<uint4>, gg, gb, 0, stream, static_cast<const uint4*>(r.x), row_bytes / 16, r.top_k,
               static_cast<const std::int32_t*>(r.sorted_ids), static_cast<const std::int32_t*>(r.total), slots,
               static_cast<uint4*>(r.xg), static_cast<int>(rows));
  else
    launch_pdl(moe_gather_rows_kernel<std::uint32_t>, gg, gb, 0, stream, static_cast<const std::uint32_t*>(r.x), row_bytes / 4,
               r.top_k, static_cast<const std::int32_t*>(r.sorted_ids), static_cast<const std::int32_t*>(r.total), slots,
               static_cast<std::uint32_t*>(r.xg), static_cast<int>(rows));
  W4A16_CUDA_TRY(cudaGetLastError());
  auto layer = [&](const MoeLayerDev& w, int config) {
    PrefillGrouped g;
    const std::size_t n = static_cast<std::size_t>(w.n), k = static_cast<std::size_t>(w.k), groups = static_cast<std::size_t>(w.groups);
    g.qweight = w.qweight;
    g.scales = w.scales;
    g.zeros = w.zeros;
    g.expert_qweight_bytes = n * k / 2;  // cuda.tc16x64.v1 of an unpadded layer (H, I multiples of 64)
    g.expert_scales_bytes = groups * n * 2;
    g.expert_zeros_bytes = r.zeros ? groups * n / 2 : 0;
    g.n = w.n;
    g.k = w.k;
    g.group_size = w.groups == 1 ? kChannelwise : w.group_len;
    g.act_dtype = r.bf16 ? DType::bf16 : DType::f16;
    g.zeros_present = r.zeros;
    g.rows = rows;
    g.block_expert = r.block_expert;
    g.config = config;
    g.pdl = stream != nullptr;
    return g;
  };
  constexpr int kTailConfig = 23;  // the bm64 2-CTA tile (grouped_configs' block 64)
  // One GEMM: one pass (block 64), or the 128-row blocks' pass and the 64-row tails' (block 128).
  auto gemm = [&](PrefillGrouped g) {
    if (r.block != 128) {
      prefill_run_grouped(g, stream);
      return;
    }
    if (rows >= 128) {  // else no expert's run holds a whole 128-row block (the list is all -1)
      g.block_row = r.lists.row128;
      g.block_expert = r.lists.expert128;
      g.blocks = r.lists.cap128;
      prefill_run_grouped(g, stream);
    }
    g.config = kTailConfig;
    g.block_row = r.lists.row64;
    g.block_expert = r.lists.expert64;
    g.blocks = r.experts;
    prefill_run_grouped(g, stream);
  };
  PrefillGrouped g1 = layer(r.w13, c1);
  g1.x = r.xg;
  g1.silu_inter = r.inter;
  g1.y = r.hg;
  gemm(g1);
  PrefillGrouped g2 = layer(r.w2, c2);
  g2.x = r.hg;
  g2.row_map = r.sorted_ids;
  g2.rows_out = r.y;
  g2.row_map_limit = slots;
  gemm(g2);
}

inline int log2_if_pow2(int v) {
  if (v <= 0 || (v & (v - 1)) != 0) return -1;
  int s = 0;
  while ((1 << s) < v) ++s;
  return s;
}

// The weight fields of one GEMM of the chain, from its stacked expert weights.
inline void set_weights(GemmParams& g, const MoeLayerDev& w) {
  g.qweight = static_cast<const uint4*>(w.qweight);
  g.scales = w.scales;
  g.zeros = w.zeros;
  g.n = w.n;
  g.k = w.k;
  g.group_len = w.group_len;
  g.group_shift = log2_if_pow2(w.group_len);
  g.groups = w.groups;
}

template <class T, bool kZeros>
void launch_fused_moe_t(const MoeRunDev& r, cudaStream_t stream) {
  if (r.tokens == 0) return;
  const int slots = static_cast<int>(r.tokens * r.top_k);
  GemmParams g1{};
  set_weights(g1, r.w13);
  g1.in = r.x;
  g1.in_div = FastDiv(static_cast<std::uint32_t>(r.top_k));
  g1.in_vec16 = reinterpret_cast<std::uintptr_t>(r.x) % 16 == 0;
  g1.index_ready = false;  // GEMM 1 follows the alignment (or the caller's kernels): wait first
  g1.sorted = r.sorted_ids;
  g1.block_expert = r.block_expert;
  g1.total = r.total;
  g1.topk_ids = r.topk_ids;
  g1.sentinel = slots;
  g1.inter = r.inter;
  g1.h_out = r.h;
  GemmParams g2 = g1;
  set_weights(g2, r.w2);
  g2.in = r.h;
  g2.in_div = FastDiv(1);
  g2.in_vec16 = reinterpret_cast<std::uintptr_t>(r.h) % 16 == 0;
  g2.index_ready = true;  // GEMM 1 triggered only after its wait: ids and alignment are complete
  g2.y_out = r.y;
  g1.experts = g2.experts = r.experts;
  g1.ring_align = g2.ring_align = false;
  if (r.block == 1 && ring_fold_applies(r)) {  // the knob read before any launch; used by the ring kernel only
    g2.ring_fold = true;
    g2.fold_k = r.top_k;
    g2.topk_weights = r.topk_weights;
    g2.fold_out = r.out;
  }
  const bool grouped = grouped_path(r.block);  // blocks 16..128 on the grouped wgmma path (read once per call)
  int c1 = -1, c2 = -1;  // its tiles: the knob is read (and refused) before any launch
  if (grouped) grouped_configs(r.block, &c1, &c2);
  auto align = [&] {  // the alignment launch (block > 1, unless fused into the ring kernels)
    // Block 128 aligns at 64 and lists the whole 128-row blocks and the 64-row tails (launch_grouped).
    const bool lists = r.block == 128;
    launch_align(r.topk_ids, r.tokens, r.top_k, r.experts, lists ? 64 : r.block, r.sorted_ids, r.block_expert, r.total,
                 r.align_scratch, lists ? &r.lists : nullptr, stream);
  };
  bool folded = false;  // the direct path's GEMM 2 wrote out itself (ring_fold): no reduce launch
  switch (r.block) {
    case 1:
      if (const int ring = ring_mode(); ring == 0 || !launch_ring<T, kZeros>(r, g1, g2, slots, ring == 1, true, stream))
        launch_decode<T, kZeros, true>(r, g1, g2, slots, stream);
      else folded = g2.ring_fold;
      break;
    case 8: {
      const int ring = ring_mode();
      const bool ring_ok = ring != 0 && ring_contract(r, g1, g2);
      // Fused alignment: where it fits beside both rings (T <= 1024, shared memory), else the launch.
      const bool fused = ring_ok && fused_align_mode() && ring_align_fits_gemm<kZeros, true>(g1, r.tokens, r.top_k) &&
                         ring_align_fits_gemm<kZeros, false>(g2, r.tokens, r.top_k);
      g1.ring_align = g2.ring_align = fused;
      if (!fused) align();
      if (!ring_ok || !launch_ring<T, kZeros>(r, g1, g2, r.max_blocks, ring == 1, false, stream))
        launch_decode<T, kZeros, false>(r, g1, g2, r.max_blocks, stream);
      break;
    }
    case 16: align(); launch_grouped<T>(r, c1, c2, stream); break;
    case 32:
      align();
      if (grouped) launch_grouped<T>(r, c1, c2, stream);
      else launch_prefill<T, kZeros, 32>(r, g1, g2, r.max_blocks, stream);
      break;
    case 64:
      align();
      if (grouped) launch_grouped<T>(r, c1, c2, stream);
      else launch_prefill<T, kZeros, 64>(r, g1, g2, r.max_blocks, stream);
      break;
    case 128: align(); launch_grouped<T>(r, c1, c2, stream); break;
    default: fail(ErrorCode::unsupported, "block", "1, 8, 16, 32, 64 or 128", std::to_string(r.block));
  }
  // The reduce: on the grouped path 8 columns per thread where out allows 16-byte stores (H % 64 == 0 here), else one
  // per thread. Measured on the H200 (docs/benchmarks/moe.md, stop 28 calls 9 / 11): 8 columns took T = 4096's reduce
  // from 66.7 to 37.9 us but cost the few-token paths 0.7-2.2 us (T = 1 12.8 -> 13.6, T = 64 95.8 -> 98.0: fewer loads
  // in flight), so those keep one column per thread.
  const bool vec8 = grouped && reinterpret_cast<std::uintptr_t>(r.out) % 16 == 0;
  const std::int64_t n = r.tokens * r.hidden / (vec8 ? 8 : 1);
  const dim3 rg(static_cast<unsigned>((n + 255) / 256)), rb(256);
  const int tokens = static_cast<int>(r.tokens);
  T* out = static_cast<T*>(r.out);
  if (grouped) {  // the grouped path's rows are act dtype (half the bytes of fp32)
    const T* y = static_cast<const T*>(static_cast<const void*>(r.y));
    if (vec8) launch_pdl(moe_reduce8_kernel<T>, rg, rb, 0, stream, y, r.topk_weights, tokens, r.top_k, r.hidden, out);
    else launch_pdl(moe_reduce_kernel<T, T>, rg, rb, 0, stream, y, r.topk_weights, tokens, r.top_k, r.hidden, out);
  } else if (diag_stages() == 3 && !folded) {  // the mma.sync and ring paths' fp32 rows
    launch_pdl(moe_reduce_kernel<T, float>, rg, rb, 0, stream, static_cast<const float*>(r.y), r.topk_weights, tokens, r.top_k,
               r.hidden, out);
  }
}

}  // namespace w4a16::kernels::cuda::moe
