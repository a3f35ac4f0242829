// ---- Contract ------------------------------------------------------------------------------
// Decode kernel with a block-level bulk-copy ring (the "bulk" kernel). Same inputs, layout
// (cuda.tc16x64.v1), Args and math as the streaming kernel of decode.cu (see its contract block):
// swap-AB mma.sync m16n8k16, Dt's magic-number dequantization, fp32 accumulation per group scaled
// per (row, group), bias in fp32, y rounded once; fp16/bf16 x uint4b8/uint4 x every group size x
// bias x act-order, M <= 16 per launch (MB = 1: <= 8 tokens, 2: <= 16).
// Why: the streaming kernel keeps about 8 tiles per warp in flight (a per-warp cp.async ring of
// 2 x 8 tiles, refilled by the same warps that compute), ~64 KB per SM: Nsight Compute put it at
// 45% of DRAM bandwidth on 8192x8192 M = 1, latency-bound (docs/benchmarks/decode.md, version 9).
// Here one producer warp per block keeps a ring of `stages` stages of up to ~17 KB in flight
// (cp.async.bulk of whole contiguous runs of tiles into shared memory, completion on mbarriers),
// so the bytes in flight are set by shared memory, not by the consumers' registers or progress.
// Shape of the work: 8 consumer warps + 1 producer warp. An item is warps_n stripes (16 rows
// each) x all of K; the warps_k = 8 / warps_n warps of a stripe take its k tiles interleaved in
// runs of 4 (stage s: warp wk computes tiles s * 4 warps_k + 4 wk .. + 3), so one stage of one
// stripe is ONE contiguous run of 4 warps_k tiles in the layout: warps_n bulk copies per stage.
// Scale (and zero) rows of each (tile, group) come by 16-byte (8-byte) cp.async of the producer's
// lanes, completed on the same mbarrier (cp.async.mbarrier.arrive.noinc). The grid is persistent
// (one or two blocks per SM, each looping over items blockIdx.x, + gridDim.x, ...); the producer
// runs ahead across items while the consumers reduce and store.
// Order of a call:
//   1. barriers initialised; the producer starts filling the ring at once (weights, scales and
//      zeros are constant: read before griddepcontrol.wait, overlapping the previous kernel);
//   2. consumers: griddepcontrol.wait, x (the m real tokens, all of K) staged once in shared memory
//      (cp.async, or through registers for act-order / unaligned rows), one named barrier;
//   3. per stage: wait full, read the warp's 4 tiles' words and constants into registers, release the
//      stage (one arrival per warp on its empty barrier), dequantize + mma + scale (4 independent chains);
//   4. per item: warps_k = 1, each warp stores its stripe from registers; otherwise the warps of a
//      stripe meet at their own named barrier and the first sums their partials in warp order
//      (deterministic; shared memory double-buffered by item), bias, store.
// No cluster, no workspace, no atomics, no allocation: CUDA-graph safe, bitwise reproducible.
// Bounds: x of the whole K staged per block: m x (K_pad/64 x 128 + 16) bytes plus at least two
// stages must fit shared memory (decode_bulk_plan_for_sms decides; otherwise decode_plan falls
// back to the streaming kernel).
// x streamed (a.bulk_xstream: 16-byte rows, no perm, K a multiple of 64; W4A16_DECODE_BULK_XSTREAM=1): no staging in
// step 2; each stage also carries, in an x slot of its own (bulk_x_slot_bytes, 1024-aligned), the stage's k tiles of the
// m token rows as ONE TMA box (the tensor map xmap, encoded per launch: dims (64 k, k tile, token), box (64,
// bulk_x_box_tiles(span), m), the 128B swizzle; tiles past K arrive as zeros) onto the same full barrier: [token][box
// tile][64 k], 16-byte chunk c of 128-byte line R at ((c ^ R) & 7) x 16. One copy per stage instead of one per token row
// (stop 73: a probe with one copy per stage ran 1.02-1.50x faster, median 1.31x, on five layers at 8 / 16 tokens, H100).
// The producer issues the weights of the first `stages` stages, then griddepcontrol.wait, then their x, then weights and
// x together; so only x waits for the previous kernel. Consumers read B fragments from the slot.
// Instantiated: {fp16, bf16} x {MB 1, 2} x {uint4b8, uint4} x {g == 32, g >= 64 or channelwise}, and for uint4 with
// g >= 128 or channelwise (even K_pad / 64) the pair variant (kPair: one scale / zero row per tile pair).
// Checked by: build/tests/gpu/decode/w4a16_test_gpu_decode (tests Bulk*), timed by w4a16_bench_gpu
// (W4A16_DECODE_BULK=0 / 1 for the A/B).
// ---------------------------------------------------------------------------------------------
#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common.cuh"
#include "decode/decode_device.cuh"
#include "pdl.cuh"
#include "sm90_async.cuh"
#include "tensor_map.cuh"

namespace w4a16::kernels::cuda::decode_detail {
namespace {

// Timing-only diagnostic (CMakeLists.txt W4A16_DIAG_DECODE=W4A16_DIAG_BULK_X_ONCE; wrong results by design): the
// streamed-x kernels copy x into the first ring stages only, so the x stream's cost shows against a release build.
#ifdef W4A16_DIAG_BULK_X_ONCE
constexpr bool kDiagXOnce = true;
#else
constexpr bool kDiagXOnce = false;
#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // the kernel body below is sm_90 only
__device__ __forceinline__ void bulk_copy_g2s(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst), "l"(src),
               "r"(bytes), "r"(bar)
               : "memory");
}
// The TMA box at coordinates (0, kt0, 0) of the 3-D map (x streamed), completing on `bar`.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const CUtensorMap* map, int kt0, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %2}], [%4];" ::"r"(dst),
               "l"(reinterpret_cast<std::uint64_t>(map)), "r"(0), "r"(kt0), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void cp_async16_ca(unsigned smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async8_ca(unsigned smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem), "l"(gmem) : "memory");
}
// One arrival on `bar` once every cp.async this thread issued before has landed; the barrier's
// expected count includes it (.noinc).
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// The 8 consumer warps only (the producer warp never joins): barrier 1 of the block.
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }
// The warps of one stripe (`threads` = warps_k x 32): barrier `id` (2 + the stripe's index in the item).
__device__ __forceinline__ void stripe_sync(int id, int threads) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory"); }
#endif

// kBf16   activations (x, scales, bias, y) bf16; else fp16
// MB      token halves of 8 computed per mma chain: 1 for <= 8 tokens, 2 for 9..16
// kZeros  uint4 with per-(row, group) zero points (the zero rows ride in the stages); else uint4b8 (z = 8)
// kG32    group size 32: two groups per 64-wide tile (two scale / zero rows per tile); else one (g >= 64, channelwise)
// kPair   (uint4, g >= 128 or channelwise, K_pad / 64 even: decode_tile_pairs) tiles 2j, 2j + 1 share their group:
//         the producer copies the scale / zero rows of even tiles only, the consumers read them once per pair and
//         keep one fp32 partial per pair (tiles_math kShare 2); the stage layout is unchanged
// kXs     x streamed per stage (a.bulk_xstream; decode_plan's bulk_xstream): a variant of its own, so that the staged
//         kernels' code is as measured before it
// xmap    the streamed x's tensor map (kXs only; unused otherwise)
template <bool kBf16, int MB, bool kZeros, bool kG32, bool kPair = false, bool kXs = false>
__global__ void __launch_bounds__(kBulkThreads, kBulkMinBlocks<MB>) decode_bulk_kernel(const Args a, const __grid_constant__ CUtensorMap xmap) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // cp.async.bulk and mbarrier transactions are sm_90: decode_plan never picks this kernel below it
#else
  using D = Dt<kBf16>;
  using St = BulkStage<kZeros, kG32>;
  constexpr int kGs = St::kGs, kP = kBulkTiles, kShare = kPair ? 2 : 1, kParts = kP / kShare;
  static_assert(!kPair || !kG32, "pairs: one group per tile");
  // uint4b8 pairs: two accumulator chains per partial (one partial per pair leaves 2 chains a warp).
  constexpr bool kSplit = kPair && !kZeros;
  // x streamed: the slots' 128B swizzle is a function of address bits [4, 10), so they start 1024-aligned: the
  // declaration asks for it (the dynamic shared memory follows sm_90's 1 KB reserved for the system; the kernel has no
  // static shared memory), and a block that found it otherwise would stop here rather than read x in the wrong order.
  // bulk_smem counts no padding for it (stop 74: +1 KB cost the g = 32 plan of llama8b.down at 16 tokens its ring).
  extern __shared__ __align__(1024) uint4 smem_v4[];
  unsigned char* xs = reinterpret_cast<unsigned char*>(smem_v4);
  if constexpr (kXs)
    if ((smem_addr(xs) & 1023u) != 0) __trap();
  const int xrow = x_row_bytes(a.kt_count);                                 // x staged: m rows of all of K
  const int xbox = bulk_x_box_tiles(a.warps_k * kP);                         // x streamed: k tiles of a slot's rows
  const unsigned x_slot = bulk_x_slot_bytes(a.m, a.warps_k * kP);  // x streamed: one slot per stage, at xs + slot * x_slot
  const unsigned x_bytes = kXs ? static_cast<unsigned>(a.stages) * x_slot : bulk_x_bytes(a.m, a.kt_count);
  const unsigned ring = smem_addr(xs + x_bytes);
  float* red = reinterpret_cast<float*>(xs + x_bytes + static_cast<unsigned>(a.stages) * St::kBytes);  // 2 x (8 warps, MB, 32, 4)
  const unsigned full0 = smem_addr(red + 2 * kWarps * MB * 128);  // full[s] at full0 + 8 s, empty[s] at + 8 kBulkMaxStages
  const unsigned empty0 = full0 + 8 * kBulkMaxStages;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < a.stages; ++s) {
      mbar_init(full0 + 8 * s, 1 + 32);  // the producer's expect-tx arrival + its 32 lanes' cp.async arrivals
      mbar_init(empty0 + 8 * s, kWarps);
    }
    mbar_fence_init();
  }
  __syncthreads();

  const int span = a.warps_k * kP;                       // tiles of one stripe per stage
  const int nsteps = (a.kt_count + span - 1) / span;     // stages per item
  const int items = (a.row_blocks - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);

  if (warp == kWarps) {
    // ---- Producer ----
    const char* const qbase = reinterpret_cast<const char*>(a.qweight);
    const char* const sbase = reinterpret_cast<const char*>(a.scales);
    const char* const zbase = reinterpret_cast<const char*>(a.zeros);
    const unsigned s_gbytes = static_cast<unsigned>(a.nt_count) * 32, z_gbytes = static_cast<unsigned>(a.nt_count) * 8;
    const int gsh = a.gshift - 6;  // g >= 64: tile kt lies in group kt >> gsh (channelwise: 24, always group 0)
    // Two producer loops: the staged kernels' is the measured code as it was (their SASS compared identical after the
    // streamed variant came: one loop for both, with the weights' copies in a shared lambda, changed it in all 24).
    if constexpr (!kXs) {
      int slot = 0;
      unsigned phase = 0;
      for (int it = 0; it < items; ++it) {
        const int rb = static_cast<int>(blockIdx.x) + it * static_cast<int>(gridDim.x);
        const int stripes = min(a.warps_n, a.nt_count - rb * a.warps_n);
        for (int step = 0; step < nsteps; ++step) {
          const unsigned full = full0 + 8 * slot, stage = ring + static_cast<unsigned>(slot) * St::kBytes;
          mbar_wait(empty0 + 8 * slot, phase ^ 1u);  // the consumers released this slot's previous use
          const int kt0 = step * span;
          const int tiles = min(span, a.kt_count - kt0);
          if (lane == 0) mbar_arrive_expect_tx(full, static_cast<unsigned>(stripes * tiles * 512));
          __syncwarp();
          if (lane < stripes) {
            const long long tile = static_cast<long long>(rb * a.warps_n + lane) * a.kt_count + kt0;
            bulk_copy_g2s(stage + static_cast<unsigned>(lane * span * 512), qbase + tile * 512, static_cast<unsigned>(tiles * 512), full);
          }
          // Entry row e = ((ws * span) + r) * kGs + h: stripe ws of the item, tile kt0 + r, group h of it.
#pragma unroll
          for (int c = 0; c < kGs; ++c) {
            const int e = lane + 32 * c;
            const int ws = e / (span * kGs), r = (e / kGs) % span, h = e % kGs;
            const int kt = kt0 + r;
            if (ws < stripes && kt < a.kt_count && (!kPair || r % 2 == 0)) {
              const unsigned stripe = static_cast<unsigned>(rb * a.warps_n + ws);
              const unsigned g = static_cast<unsigned>(kG32 ? min(2 * kt + h, a.groups - 1) : kt >> gsh);
              const char* s = sbase + (g * s_gbytes + stripe * 32u);
              cp_async16_ca(stage + St::kScaleOffset + e * 32, s);
              cp_async16_ca(stage + St::kScaleOffset + e * 32 + 16, s + 16);
              if constexpr (kZeros) cp_async8_ca(stage + St::kZeroOffset + e * 8, zbase + (g * z_gbytes + stripe * 8u));
            }
          }
          cp_async_arrive_noinc(full);
          if (++slot == a.stages) { slot = 0; phase ^= 1u; }
        }
      }
      if (a.pdl_late) {  // every stage issued: the next kernel may start filling its ring during this one's tail
        pdl_wait();      // (after this block's own wait, as everywhere: pdl.cuh)
        pdl_launch_dependents();
      }
    } else {
      // Timing-only (kDiagXOnce; wrong results): stage q >= stages copies no x, its slot keeps the x of an earlier stage.
      auto x_once = [&](int q) { return kDiagXOnce && q >= a.stages; };
      // Stage q of the block (item q / nsteps, step q % nsteps) into ring slot `slot`: its weights, scale (and zero)
      // rows, and the full barrier's expected bytes (x's too where streamed: those copies follow in issue_x).
      auto issue_w = [&](int q, int slot) {
        const int rb = static_cast<int>(blockIdx.x) + (q / nsteps) * static_cast<int>(gridDim.x);
        const int stripes = min(a.warps_n, a.nt_count - rb * a.warps_n);
        const int kt0 = (q % nsteps) * span;
        const int tiles = min(span, a.kt_count - kt0);
        const unsigned full = full0 + 8 * slot, stage = ring + static_cast<unsigned>(slot) * St::kBytes;
        const unsigned x_tx = kXs && !x_once(q) ? static_cast<unsigned>(a.m * xbox * 128) : 0u;  // the whole box (tiles past K: zeros)
        if (lane == 0) mbar_arrive_expect_tx(full, static_cast<unsigned>(stripes * tiles * 512) + x_tx);
        __syncwarp();
        if (lane < stripes) {
          const long long tile = static_cast<long long>(rb * a.warps_n + lane) * a.kt_count + kt0;
          bulk_copy_g2s(stage + static_cast<unsigned>(lane * span * 512), qbase + tile * 512, static_cast<unsigned>(tiles * 512), full);
        }
        // Entry row e = ((ws * span) + r) * kGs + h: stripe ws of the item, tile kt0 + r, group h of it.
#pragma unroll
        for (int c = 0; c < kGs; ++c) {
          const int e = lane + 32 * c;
          const int ws = e / (span * kGs), r = (e / kGs) % span, h = e % kGs;
          const int kt = kt0 + r;
          if (ws < stripes && kt < a.kt_count && (!kPair || r % 2 == 0)) {
            const unsigned stripe = static_cast<unsigned>(rb * a.warps_n + ws);
            const unsigned g = static_cast<unsigned>(kG32 ? min(2 * kt + h, a.groups - 1) : kt >> gsh);
            const char* s = sbase + (g * s_gbytes + stripe * 32u);
            cp_async16_ca(stage + St::kScaleOffset + e * 32, s);
            cp_async16_ca(stage + St::kScaleOffset + e * 32 + 16, s + 16);
            if constexpr (kZeros) cp_async8_ca(stage + St::kZeroOffset + e * 8, zbase + (g * z_gbytes + stripe * 8u));
          }
        }
        cp_async_arrive_noinc(full);
      };
      // x streamed: the stage's box (k tiles kt0 .. kt0 + xbox - 1 of the m tokens) into the slot, by lane 16.
      auto issue_x = [&](int q, int slot) {
        if (lane != 16 || x_once(q)) return;
        tma_load_3d(smem_addr(xs) + static_cast<unsigned>(slot) * x_slot, &xmap, (q % nsteps) * span, full0 + 8 * slot);
      };
      if (lane == 16) asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(&xmap)) : "memory");
      const int total = items * nsteps;
      // x streamed: the first stages' weights go out before griddepcontrol.wait (constant), their x after it.
      const int pre = min(a.stages, total);
      for (int q = 0; q < pre; ++q) issue_w(q, q);
      pdl_wait();
      for (int q = 0; q < pre; ++q) issue_x(q, q);
      int slot = pre % a.stages;
      unsigned phase = pre == a.stages ? 1u : 0u;
      for (int q = pre; q < total; ++q) {
        mbar_wait(empty0 + 8 * slot, phase ^ 1u);  // the consumers released this slot's previous use
        issue_w(q, slot);
        issue_x(q, slot);
        if (++slot == a.stages) { slot = 0; phase ^= 1u; }
      }
      if (a.pdl_late) pdl_launch_dependents();  // every stage issued (this warp waited above)
    }
    cp_async_wait<0>();
    return;
  }

  // ---- Consumers ----
  pdl_wait();
  if (!a.pdl_late) pdl_launch_dependents();
  const unsigned xs_sh = smem_addr(xs);
  if constexpr (!kXs) {  // (streamed: each stage's x arrives with its weights; the wait above still orders the stores of y)
    if (a.xvec && !a.perm) {
      copy_x_rows(a, xs_sh, xrow, 0, a.kt_count);
      cp_async_commit();
      cp_async_wait<0>();
    } else {
      stage_x_rows(a, xs, xrow, 0, a.kt_count);  // gathered (act-order) or 2-byte loads
    }
    consumers_sync();
  }

  const int ws = warp % a.warps_n, wk = warp / a.warps_n, gid = lane / 4;
  // This lane's ldmatrix row: token mb * 8 + lane % 8 (clamped to the last real token: absent tokens
  // compute on real data into output columns never stored), k 8 (lane / 8) of tile 0. x staged: its shared address;
  // streamed: its 128-byte line in a slot at the warp's first tile (token x xbox + wk x kP), and x_at the swizzle.
  unsigned xl[MB];
#pragma unroll
  for (int mb = 0; mb < MB; ++mb) {
    const int tok = min(mb * 8 + lane % 8, a.m - 1);
    xl[mb] = pin(kXs ? static_cast<unsigned>(tok * xbox + wk * kP) : xs_sh + static_cast<unsigned>(tok * xrow + (lane / 8) * 16));
  }
  const unsigned xchunk = static_cast<unsigned>(lane / 8);
  // uint4: each lane's byte of the zero word by shift and mask. The byte-permute form (Dt::zeros_of, which the streaming
  // kernel and the MoE ring use) measured 0.97-0.98x the speed here on qwen0.5b.gate_up / llama8b.o bf16 uint4 at 1..8
  // tokens, 0.98-1.01x elsewhere (H100, stop 47 call 2), so not here.
  const unsigned zshift = 8 * (gid % 4);
  const int r0 = ws * span + wk * kP;                                  // this warp's first tile row in a stage
  const unsigned w_read = pin(ring + static_cast<unsigned>(r0 * 512 + lane * 16));
  const unsigned s_read = pin(ring + St::kScaleOffset + static_cast<unsigned>(r0 * kGs * 32 + gid * 4));
  const unsigned z_read = ring + St::kZeroOffset + static_cast<unsigned>(r0 * kGs * 8 + (gid / 4) * 4);

  // One stage of this warp: the kP tiles' weight words and their scale / zero constants, read from
  // the stage into registers (load); then tiles_math (decode_device.cuh) on x tile kt.
  struct Frag {
    uint4 wv[kP];
    float2 sc[kParts][kGs];
    std::uint32_t zlo[kParts][kGs], zhi[kParts][kGs];
  };
  auto load = [&](unsigned sb, Frag& f) {
#pragma unroll
    for (int p = 0; p < kP; ++p) f.wv[p] = lds128(w_read + sb + p * 512);
#pragma unroll
    for (int j = 0; j < kParts; ++j) {
      const int p = j * kShare;  // the tile whose rows hold the constants
#pragma unroll
      for (int h = 0; h < kGs; ++h) {
        f.sc[j][h] = D::to_float2(lds32(s_read + sb + (p * kGs + h) * 32));  // (row gid, row gid + 8)
        if constexpr (kZeros) {
          const std::uint32_t z = lds32(z_read + sb + (p * kGs + h) * 8) >> zshift;
          f.zlo[j][h] = D::zlo_of(z & 15u);
          f.zhi[j][h] = D::zhi_of((z >> 4) & 15u);
        } else {
          f.zlo[j][h] = D::zlo_of(8u);
          f.zhi[j][h] = D::zhi_of(8u);
        }
      }
    }
  };

  const int vals4 = a.warps_n * MB * 32;  // float4 partials of one K slice (warps_n stripes)
  int slot = 0;
  unsigned phase = 0;
  for (int it = 0; it < items; ++it) {
    const int rb = static_cast<int>(blockIdx.x) + it * static_cast<int>(gridDim.x);
    float acc[MB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mb][c] = 0.f;
    for (int step = 0; step < nsteps; ++step) {
      const int kt = step * span + wk * kP;
      const int valid = min(kP, a.kt_count - kt);
      // B fragments of tile kt: x staged whole (its tile kt), or streamed (this slot's x: line xl + p of the slot, its
      // chunk xchunk (+ 4 for h = 1) where bulk_x_swizzled says; the slot is 1024-aligned, so h flips bit 6)
      const unsigned xoff = kXs ? xs_sh + static_cast<unsigned>(slot) * x_slot : static_cast<unsigned>(kt) * 128;
      mbar_wait(full0 + 8 * slot, phase);
      if (a.pdl_late && it == items - 1 && step == nsteps - 1) pdl_launch_dependents();  // the block's last stage is here
      Frag f;
      if (valid > 0) load(static_cast<unsigned>(slot) * St::kBytes, f);
      // Released once the warp's reads of it are issued (the arrive orders them before the producer's
      // refill), so the refill overlaps this stage's math. (x streamed: the arrive follows tiles_math, so the slot's
      // ldmatrix reads precede it too.)
      // Past `valid` (the last stage of an item only) the reads land on stale stage words and x past
      // the rows: those tiles' partials are dropped, never scaled into acc.
      if constexpr (kXs) {
        if (valid > 0)
          tiles_math_at<D, kG32, kShare, kSplit>(f.wv, f.zlo, f.zhi, f.sc, [&](int p, int mb, int h) {
            return (xoff + bulk_x_swizzled(xl[mb] + static_cast<unsigned>(p), xchunk)) ^ static_cast<unsigned>(h << 6);
          }, valid, acc);
      } else {
        if (valid > 0) tiles_math<D, kG32, kShare, kSplit>(f.wv, f.zlo, f.zhi, f.sc, xl, xoff, valid, acc);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty0 + 8 * slot);
      if (++slot == a.stages) { slot = 0; phase ^= 1u; }
    }
    if (a.warps_k == 1) {  // the warp holds its stripe's sums: store them, no barrier
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
        store_outputs<D, MB>(a, make_float4(acc[mb][0], acc[mb][1], acc[mb][2], acc[mb][3]), (ws * MB + mb) * 32 + lane, rb);
      continue;
    }
    // The warps_k warps of a stripe meet at their own barrier (2 + ws) and the first sums them in warp
    // order (warp = wk * warps_n + ws); partials double-buffered by item parity, so that barrier also
    // orders the previous item's reads before these writes.
    float* const rbuf = red + (it & 1) * kWarps * MB * 128;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
      *reinterpret_cast<float4*>(rbuf + ((warp * MB + mb) * 32 + lane) * 4) = make_float4(acc[mb][0], acc[mb][1], acc[mb][2], acc[mb][3]);
    stripe_sync(2 + ws, a.warps_k * 32);
    if (wk != 0) continue;
    const float4* red4 = reinterpret_cast<const float4*>(rbuf);
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      const int i4 = (ws * MB + mb) * 32 + lane;
      float4 sum = red4[i4];
      for (int q = 1; q < a.warps_k; ++q) {
        const float4 v = red4[q * vals4 + i4];
        sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
      }
      store_outputs<D, MB>(a, sum, i4, rb);
    }
  }
#endif  // __CUDA_ARCH__ >= 900
}

// The bulk kernel's instantiations (pick_variant), up to kBulkMaxSmem of shared memory; x staged or streamed (kXs).
using BulkFn = void (*)(const Args, const CUtensorMap);
template <bool kBf16, int MB, bool kZeros, bool kG32>
struct BulkKernel {
  static BulkFn fn() {
    static const BulkFn f = smem_opt_in<BulkFn>(decode_bulk_kernel<kBf16, MB, kZeros, kG32>, kBulkMaxSmem);
    return f;
  }
};
template <bool kBf16, int MB, bool kZeros, bool kG32>
struct BulkKernelXs {
  static BulkFn fn() {
    static const BulkFn f = smem_opt_in<BulkFn>(decode_bulk_kernel<kBf16, MB, kZeros, kG32, false, true>, kBulkMaxSmem);
    return f;
  }
};

template <bool kBf16, int MB, bool kZeros, bool kXs>
BulkFn bulk_pair_kernel() {
  static const BulkFn f = smem_opt_in<BulkFn>(decode_bulk_kernel<kBf16, MB, kZeros, false, true, kXs>, kBulkMaxSmem);
  return f;
}
template <bool kZeros, bool kXs>
BulkFn bulk_pair_kernel(bool bf16, int mb) {
  return bf16 ? (mb == 1 ? bulk_pair_kernel<true, 1, kZeros, kXs>() : bulk_pair_kernel<true, 2, kZeros, kXs>())
              : (mb == 1 ? bulk_pair_kernel<false, 1, kZeros, kXs>() : bulk_pair_kernel<false, 2, kZeros, kXs>());
}
template <bool kXs>
BulkFn bulk_pair_kernel(bool bf16, int mb, bool zeros) {
  return zeros ? bulk_pair_kernel<true, kXs>(bf16, mb) : bulk_pair_kernel<false, kXs>(bf16, mb);
}

// The streamed x's tensor map (a.bulk_xstream): x as dims (64 k, K / 64 tiles, m tokens), strides (128 bytes, the row
// stride), box (64, bulk_x_box_tiles(span), m) in the 128B swizzle, zeros past K. decode_run only streams x of 16-byte
// aligned rows whose stride is a multiple of 8 elements and K % 64 == 0 (xstream_ok); checked again here by name.
CUtensorMap streamed_x_map(const Args& a, bool bf16) {
  const auto addr = reinterpret_cast<std::uintptr_t>(a.x);
  if (addr % 16 != 0) fail(ErrorCode::alignment, "x", "16-byte aligned (TMA tensor map)", "address % 16 = " + std::to_string(addr % 16));
  if ((a.x_stride * 2) % 16 != 0)
    fail(ErrorCode::alignment, "x_stride", "a multiple of 16 bytes (TMA tensor map)", std::to_string(a.x_stride * 2) + " bytes");
  if (static_cast<std::int64_t>(a.kt_count) * 64 != a.k)
    fail(ErrorCode::invalid_argument, "K", "a multiple of 64 (x streamed by the bulk kernel)", std::to_string(a.k));
  CUtensorMap map{};
  const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(a.kt_count), static_cast<cuuint64_t>(a.m)};
  const cuuint64_t strides[2] = {128, static_cast<cuuint64_t>(a.x_stride) * 2};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(bulk_x_box_tiles(a.warps_k * kBulkTiles)), static_cast<cuuint32_t>(a.m)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder()(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3,
                                          const_cast<std::uint16_t*>(a.x), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fail(ErrorCode::cuda_error, "tensor map of the streamed x", "cuTensorMapEncodeTiled success",
         "CUresult " + std::to_string(static_cast<int>(r)) + " (m=" + std::to_string(a.m) + " K=" + std::to_string(a.k) +
             " x_stride=" + std::to_string(a.x_stride) + " box tiles=" + std::to_string(box[1]) + ")");
  return map;
}

}  // namespace

void launch_decode_bulk(const Args& a, int grid, std::size_t smem, bool bf16, bool zeros, bool g32, bool pairs, bool pdl, cudaStream_t stream) {
  const int mb = a.m <= 8 ? 1 : 2;
  BulkFn f = a.bulk_xstream ? (!pairs ? pick_variant<BulkKernelXs>(bf16, mb, zeros, g32) : bulk_pair_kernel<true>(bf16, mb, zeros))
                            : (!pairs ? pick_variant<BulkKernel>(bf16, mb, zeros, g32) : bulk_pair_kernel<false>(bf16, mb, zeros));
  const CUtensorMap xmap = a.bulk_xstream ? streamed_x_map(a, bf16) : CUtensorMap{};
  launch_pdl(f, dim3(static_cast<unsigned>(grid)), dim3(kBulkThreads), smem, stream, pdl, a, xmap);
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace w4a16::kernels::cuda::decode_detail
