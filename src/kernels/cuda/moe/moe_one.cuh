// One-launch MoE layer for few slots (direct mode, S = T*k <= 16): GEMM 1 (+ SiLU * up), a grid
// barrier, GEMM 2 and the weighted top-k sum in one cooperative launch, with GEMM 2's weights
// streamed into shared memory while GEMM 1 runs. W4A16_MOE_ONE (fused_moe_launch.cuh) picks it for
// the direct path where it applies; otherwise the chain of three launches runs (moe_ring.cuh).
// Why: the chain's two dependent launches cannot reach 70% of the bandwidth at T = 1 whatever their
// kernels do (docs/benchmarks/moe.md, "The read ceiling of the touched bytes").
//
// Contract (host: one_plan in fused_moe_launch.cuh checks it; where it fails the chain runs):
//   slots S = T*k <= kOneMaxSlots; x [T, H] and h [S, I] 16-byte aligned (h: the direct path's
//   workspace); both GEMMs' groups a power of two >= 64 or channelwise (one scale entry per k64
//   tile); the shared-memory layout (OneParams) fits the device with ring1 >= min(2, units of a block).
// Launch: cooperative (every block resident: the grid barrier needs it), grid = resident blocks,
// block = kOneWarps consumer warps + 1 producer warp.
// Work:
//   GEMM 1  unit u = (slot s = u / (I/16), pair j = u % (I/16)): gate stripe j and up stripe I/16 + j
//           of expert topk_ids[s] over all of K = H; block b takes units [b U / G, (b+1) U / G).
//           The producer warp bulk-copies a unit (both stripes' weights, scale rows, zero chunks)
//           into slot i % ring1 of a ring (full / empty mbarriers). Consumer warp w computes tiles
//           [(w%8) KT/8, (w%8+1) KT/8) of stripe w/8 (gate, up) against x row s / k (shared memory);
//           warp 0 sums each stripe's 8 partials in warp order (deterministic) and stores
//           h = silu(gate) * up rounded to act.
//   GEMM 2  stripe n (16 output rows; block b takes [b NT2 / G, (b+1) NT2 / G)): the producer copies
//           w2 of the block's stripes for every slot's expert into shared memory right after the first
//           GEMM 1 units; after the grid barrier the consumers load h [S, I], warp w computes slot
//           w / wps over tiles [(w % wps) KT2 / wps, ...) (wps = kOneWarps / S warps per slot), then
//           out[t, row] = sum_j tw[t, j] * (the slot's partials summed in warp order), j ascending,
//           rounded once: the reduce kernel's expression over the same fp32 terms.
// Dequantization and mma: decode_device.cuh (Dt, mma_pair, scale_group). The slot is column 0 of
// an n-8 mma: B rows 1..7 of every ldmatrix point at a 16-byte zero row.
// Checked by: tests/gpu/moe/test_moe_gpu.cpp (MoeGpuOne: against the f64 oracle and the chain).
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "decode/decode_device.cuh"
#include "moe/fused_moe.cuh"
#include "moe/moe_kernels.cuh"
#include "pdl.cuh"
#include "sm90_async.cuh"

namespace w4a16::kernels::cuda::moe {

constexpr int kOneWarps = 16;  // consumer warps (the producer is warp kOneWarps)
constexpr int kOneThreads = (kOneWarps + 1) * 32;
constexpr int kOneMaxSlots = 16;
constexpr int kOneTraceStamps = 8;  // diagnostics: %globaltimer stamps per block (OneParams::trace)
static_assert(kOneTraceStamps == kOneTraceStampsHost, "moe_kernels.cuh names the same count");

// Bytes of one 16-row stripe's pieces over K: weights, scale rows (32 B per group), zero chunks
// (the 16-byte aligned chunk holding the stripe's 8 zero bytes, per group).
struct OnePiece {
  int w, s, z;
  __host__ __device__ int bytes() const { return w + s + z; }
};
__host__ __device__ inline OnePiece one_piece(int k, int groups, bool zeros) { return {k / 64 * 512, groups * 32, zeros ? groups * 16 : 0}; }

struct OneParams {
  const uint4* w13;            // [E][2I/16][H/64][32] uint4
  const std::uint16_t* s13;    // [E][G1][2I]
  const std::uint8_t* z13;     // [E][G1][2I/16][8]
  const uint4* w2;             // [E][H/16][I/64][32]
  const std::uint16_t* s2;     // [E][G2][H]
  const std::uint8_t* z2;      // [E][G2][H/16][8]
  const void* x;               // [T, H] act
  const std::int32_t* topk_ids;
  const float* topk_weights;
  void* h;                     // [S, I] act (workspace)
  void* out;                   // [T, H] act
  int tokens, top_k, slots, hidden, inter;
  int g1_groups, g1_tshift;    // groups of w13; k64 tile -> group shift (log2(g) - 6; 30 channelwise)
  int g2_groups, g2_tshift;
  int ring1;                   // GEMM 1 ring slots (units)
  int small_cp;                // scale rows / zero chunks by per-lane cp.async (1) or bulk copies (0)
  unsigned long long* trace;   // null, or [grid][kOneTraceStamps] %globaltimer stamps (set_one_trace):
                               // start, producer done with its first pieces, unit 0 / last unit in,
                               // GEMM 1 done, past the grid barrier, h and w2 in, end
  // Shared-memory layout, byte offsets (16-byte aligned): GEMM 1 ring (ring1 units), w2 region
  // (stripes x S pieces), x rows, h rows, partials [2][kOneWarps][16] fp32, a zero row, the slots'
  // expert ids and routing weights [kOneMaxSlots] each, mbarriers.
  int off_w2, off_x, off_h, off_red, off_zero, off_meta, off_bar, smem_bytes;
};

namespace one_detail {
__device__ __forceinline__ std::uint32_t lds32(unsigned a) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ std::uint32_t lds8(unsigned a) {
  std::uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void stamp(unsigned long long* trace, int i) {
  if (trace) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    trace[blockIdx.x * kOneTraceStamps + i] = t;
  }
}
// 16 bytes global -> shared by cp.async, then (at the end of a piece list) the thread's arrival on
// an mbarrier once all its cp.asyncs landed (.noinc: counted in the barrier's init count).
__device__ __forceinline__ void cp16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_arrive_noinc(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// The consumer warps only (named barrier 1; the producer warp never joins it).
__device__ __forceinline__ void consumer_sync() { asm volatile("bar.sync 1, %0;" ::"n"(kOneWarps * 32) : "memory"); }

// Up to 4 k64 tiles [t, t + valid) of one stripe from shared memory into acc (rows gid, gid + 8 of
// column 0: acc[0][0], acc[0][2] on lanes with lane % 4 == 0). wb / sb / zb: the stripe's weights,
// scale rows, zero chunks (zhalf: which 8 bytes of a chunk are this stripe's); xb: this lane's
// ldmatrix row (the B row + (lane / 8) 16 bytes on lanes 0, 8, 16, 24; the zero row elsewhere).
template <class D, bool kZeros>
__device__ __forceinline__ void tiles4(unsigned wb, unsigned sb, unsigned zb, int zhalf, unsigned xb, bool row0, int t, int valid,
                                       int tshift, float (&acc)[1][4]) {
  namespace dd = decode_detail;
  const int lane = static_cast<int>(threadIdx.x) % 32, gid = lane / 4;
  uint4 wv[4];
  float2 sc[4][1];
  std::uint32_t zlo[4][1], zhi[4][1];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int tile = t + min(q, valid - 1);  // tiles past `valid` repeat the last one; scale_group drops them
    wv[q] = dd::lds128(wb + tile * 512 + lane * 16);
    const int g = tile >> tshift;
    sc[q][0] = D::to_float2(lds32(sb + g * 32 + gid * 4));
    if constexpr (kZeros) {
      const std::uint32_t z = lds8(zb + g * 16 + zhalf * 8 + gid);
      zlo[q][0] = D::zlo_of(z & 15u);
      zhi[q][0] = D::zhi_of(z >> 4);
    } else {
      zlo[q][0] = D::zlo_of(8u);
      zhi[q][0] = D::zhi_of(8u);
    }
  }
  float tmp[4][1][4];
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c) tmp[q][0][c] = 0.f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint4 bf[4][1];
#pragma unroll
    for (int q = 0; q < 4; ++q) bf[q][0] = dd::ldmatrix_x4(row0 ? xb + (t + min(q, valid - 1)) * 128 + h * 64 : xb);
    dd::mma_pair<D, false, 4, 1>(h, wv, zlo, zhi, bf, tmp);
  }
  dd::scale_group<false, 4, 1>(1, valid, sc, tmp, acc);
}
}  // namespace one_detail

template <class T, bool kZeros>
__global__ void __launch_bounds__(kOneThreads, 1) moe_one_kernel(const OneParams p) {
  namespace dd = decode_detail;
  namespace od = one_detail;
  constexpr bool kBf16 = Act<T>::kMagic != 0x64006400u;
  using D = dd::Dt<kBf16>;
  extern __shared__ __align__(128) unsigned char one_smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int gid = lane / 4, tq = lane % 4;
  const unsigned base = dd::smem_addr(one_smem);
  const unsigned full1 = base + p.off_bar, empty1 = full1 + 8 * p.ring1, full2 = empty1 + 8 * p.ring1;
  const int G = static_cast<int>(gridDim.x), b = static_cast<int>(blockIdx.x);
  const int H = p.hidden, I = p.inter, S = p.slots, ring1 = p.ring1;
  const int KT1 = H / 64, KT2 = I / 64, NT1 = 2 * I / 16, NT2 = H / 16, pairs = I / 16;
  const int U = S * pairs;
  const int u_beg = static_cast<int>(static_cast<long long>(b) * U / G);
  const int n1 = static_cast<int>(static_cast<long long>(b + 1) * U / G) - u_beg;
  const int n_beg = static_cast<int>(static_cast<long long>(b) * NT2 / G);
  const int n2 = static_cast<int>(static_cast<long long>(b + 1) * NT2 / G) - n_beg;
  const OnePiece q1 = one_piece(H, p.g1_groups, kZeros), q2 = one_piece(I, p.g2_groups, kZeros);
  const int unit_bytes = 2 * q1.bytes(), piece2 = q2.bytes();

  const bool small_cp = p.small_cp != 0;
  const unsigned full_count = small_cp ? 33u : 1u;  // the expect-tx arrival (+ 32 producer lanes' cp.async arrivals)
  if (threadIdx.x == 0) {
    for (int i = 0; i < ring1; ++i) {
      mbar_init(full1 + 8 * i, full_count);
      mbar_init(empty1 + 8 * i, kOneWarps);
    }
    mbar_init(full2, full_count);
    mbar_fence_init();
  }
  if (threadIdx.x < 4) reinterpret_cast<std::uint32_t*>(one_smem + p.off_zero)[threadIdx.x] = 0u;
  int* const ids = reinterpret_cast<int*>(one_smem + p.off_meta);                           // [S]
  float* const tw = reinterpret_cast<float*>(one_smem + p.off_meta + 4 * kOneMaxSlots);  // [S]
  pdl_wait();  // topk_ids, topk_weights and x come from the caller's kernels
  pdl_launch_dependents();
  // One round trip for the routing of every slot (the producer's copies and the final sum read it
  // from here, not once per piece).
  if (threadIdx.x < S) ids[threadIdx.x] = p.topk_ids[threadIdx.x], tw[threadIdx.x] = p.topk_weights[threadIdx.x];
  if (threadIdx.x == 0) od::stamp(p.trace, 0);
  __syncthreads();

  if (warp == kOneWarps) {
    // ---- Producer warp: every lane issues its share of a piece list's bulk copies.
    auto issue_unit = [&](int i) {
      const int u = u_beg + i, s = u / pairs, j = u % pairs, e = ids[s];
      const int slot = i % ring1;
      const unsigned dst = base + static_cast<unsigned>(slot * unit_bytes), bar = full1 + 8 * slot;
      if (lane == 0) mbar_arrive_expect_tx(bar, static_cast<std::uint32_t>(small_cp ? 2 * q1.w : unit_bytes));
      __syncwarp();
      const int G1 = p.g1_groups, per_stripe = 1 + G1 * (kZeros ? 2 : 1);
      for (int c = lane; c < 2 * per_stripe; c += 32) {
        const int st = c / per_stripe, r = c % per_stripe, stripe = st == 0 ? j : pairs + j;
        if (r == 0) {
          bulk_copy_g2s(dst + st * q1.w, p.w13 + (static_cast<std::int64_t>(e) * NT1 + stripe) * KT1 * 32, q1.w, bar);
        } else if (r <= G1) {
          const int g = r - 1;
          const unsigned d = dst + 2 * q1.w + st * q1.s + g * 32;
          const std::uint16_t* src = p.s13 + (static_cast<std::int64_t>(e) * G1 + g) * (2 * I) + 16 * stripe;
          if (small_cp) od::cp16(d, src), od::cp16(d + 16, src + 8);
          else bulk_copy_g2s(d, src, 32, bar);
        } else {
          const int g = r - 1 - G1;
          const unsigned d = dst + 2 * (q1.w + q1.s) + st * q1.z + g * 16;
          const std::uint8_t* src = p.z13 + ((static_cast<std::int64_t>(e) * G1 + g) * NT1 + (stripe & ~1)) * 8;
          if (small_cp) od::cp16(d, src);
          else bulk_copy_g2s(d, src, 16, bar);
        }
      }
      if (small_cp) od::cp_arrive_noinc(bar);
    };
    auto issue_w2 = [&]() {
      if (n2 == 0) return;
      if (lane == 0) mbar_arrive_expect_tx(full2, static_cast<std::uint32_t>(n2 * S * (small_cp ? q2.w : piece2)));
      __syncwarp();
      const int G2 = p.g2_groups, per = 1 + G2 * (kZeros ? 2 : 1);
      for (int c = lane; c < n2 * S * per; c += 32) {
        const int ps = c / per, r = c % per, n = n_beg + ps / S, e = ids[ps % S];
        const unsigned dst = base + static_cast<unsigned>(p.off_w2 + ps * piece2);
        if (r == 0) {
          bulk_copy_g2s(dst, p.w2 + (static_cast<std::int64_t>(e) * NT2 + n) * KT2 * 32, q2.w, full2);
        } else if (r <= G2) {
          const int g = r - 1;
          const std::uint16_t* src = p.s2 + (static_cast<std::int64_t>(e) * G2 + g) * H + 16 * n;
          if (small_cp) od::cp16(dst + q2.w + g * 32, src), od::cp16(dst + q2.w + g * 32 + 16, src + 8);
          else bulk_copy_g2s(dst + q2.w + g * 32, src, 32, full2);
        } else {
          const int g = r - 1 - G2;
          const std::uint8_t* src = p.z2 + ((static_cast<std::int64_t>(e) * G2 + g) * NT2 + (n & ~1)) * 8;
          if (small_cp) od::cp16(dst + q2.w + q2.s + g * 16, src);
          else bulk_copy_g2s(dst + q2.w + q2.s + g * 16, src, 16, full2);
        }
      }
      if (small_cp) od::cp_arrive_noinc(full2);
    };
    const int first = min(ring1, n1);
    for (int i = 0; i < first; ++i) issue_unit(i);
    issue_w2();  // GEMM 2's weights stream while GEMM 1 computes
    if (lane == 0) od::stamp(p.trace, 1);
    for (int i = first; i < n1; ++i) {
      mbar_wait(empty1 + 8 * (i % ring1), static_cast<std::uint32_t>(i / ring1 - 1) & 1u);
      issue_unit(i);
    }
  } else {
    // ---- Consumer warps: GEMM 1.
    const int ctid = static_cast<int>(threadIdx.x);
    for (int c = ctid; c < p.tokens * H / 8; c += kOneWarps * 32)
      dd::cp_async16_zfill(base + p.off_x + c * 16, static_cast<const T*>(p.x) + static_cast<std::int64_t>(c) * 8, 16u);
    dd::cp_async_commit();
    dd::cp_async_wait<0>();
    od::consumer_sync();
    const unsigned zero_row = base + p.off_zero;
    const bool row0 = lane % 8 == 0;
    const unsigned lane_col = static_cast<unsigned>(lane / 8) * 16;
    float* const red = reinterpret_cast<float*>(one_smem + p.off_red);  // [2][kOneWarps][16]
    const int st = warp / 8, kw = warp % 8;
    const int t0 = kw * KT1 / 8, t1 = (kw + 1) * KT1 / 8;
    for (int i = 0; i < n1; ++i) {
      const int slot = i % ring1, u = u_beg + i, s = u / pairs, j = u % pairs;
      mbar_wait(full1 + 8 * slot, static_cast<std::uint32_t>(i / ring1) & 1u);
      if (ctid == 0 && i == 0) od::stamp(p.trace, 2);
      if (ctid == 0 && i == n1 - 1) od::stamp(p.trace, 3);
      const unsigned ub = base + static_cast<unsigned>(slot * unit_bytes);
      const unsigned wb = ub + st * q1.w, sb = ub + 2 * q1.w + st * q1.s, zb = ub + 2 * (q1.w + q1.s) + st * q1.z;
      const int stripe = st == 0 ? j : pairs + j;
      const unsigned xb = row0 ? base + p.off_x + static_cast<unsigned>((s / p.top_k) * H * 2) + lane_col : zero_row;
      float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
      for (int t = t0; t < t1; t += 4) od::tiles4<D, kZeros>(wb, sb, zb, stripe & 1, xb, row0, t, min(4, t1 - t), p.g1_tshift, acc);
      __syncwarp();
      if (lane == 0) mbar_arrive(empty1 + 8 * slot);  // this warp no longer reads the slot
      float* const r = red + ((i & 1) * kOneWarps + warp) * 16;
      if (tq == 0) r[gid] = acc[0][0], r[gid + 8] = acc[0][2];
      od::consumer_sync();
      if (warp == 0 && lane < 16) {
        const float* rr = red + (i & 1) * kOneWarps * 16 + lane;
        float g = 0.f, up = 0.f;
#pragma unroll
        for (int w = 0; w < 8; ++w) g += rr[w * 16], up += rr[(w + 8) * 16];
        const float hv = g / (1.f + __expf(-g)) * up;
        static_cast<std::uint16_t*>(p.h)[static_cast<std::int64_t>(s) * I + 16 * j + lane] = D::from_float(hv);
      }
    }
  }

  if (threadIdx.x == 0) od::stamp(p.trace, 4);
  cooperative_groups::this_grid().sync();  // every h row written (the grid barrier orders the stores)
  if (threadIdx.x == 0) od::stamp(p.trace, 5);

  if (warp < kOneWarps && n2 > 0) {
    // ---- Consumer warps: GEMM 2 and the weighted sum.
    const int ctid = static_cast<int>(threadIdx.x);
    for (int c = ctid; c < S * I / 8; c += kOneWarps * 32)
      dd::cp_async16_zfill(base + p.off_h + c * 16, static_cast<const T*>(p.h) + static_cast<std::int64_t>(c) * 8, 16u);
    dd::cp_async_commit();
    dd::cp_async_wait<0>();
    mbar_wait(full2, 0);
    if (ctid == 0) od::stamp(p.trace, 6);
    od::consumer_sync();
    const unsigned zero_row = base + p.off_zero;
    const bool row0 = lane % 8 == 0;
    const unsigned lane_col = static_cast<unsigned>(lane / 8) * 16;
    float* const red = reinterpret_cast<float*>(one_smem + p.off_red);
    const int wps = kOneWarps / S, s = warp / wps, kw = warp % wps;
    const int t0 = kw * KT2 / wps, t1 = (kw + 1) * KT2 / wps;
    const unsigned xb = row0 ? base + p.off_h + static_cast<unsigned>(s * I * 2) + lane_col : zero_row;
    for (int i = 0; i < n2; ++i) {
      const int n = n_beg + i;
      float acc[1][4] = {{0.f, 0.f, 0.f, 0.f}};
      if (s < S) {
        const unsigned pb = base + static_cast<unsigned>(p.off_w2 + (i * S + s) * piece2);
        for (int t = t0; t < t1; t += 4)
          od::tiles4<D, kZeros>(pb, pb + q2.w, pb + q2.w + q2.s, n & 1, xb, row0, t, min(4, t1 - t), p.g2_tshift, acc);
      }
      float* const r = red + ((i & 1) * kOneWarps + warp) * 16;
      if (tq == 0) r[gid] = acc[0][0], r[gid + 8] = acc[0][2];
      od::consumer_sync();
      if (ctid < p.tokens * 16) {
        const int t = ctid / 16, row = ctid % 16;
        const float* rr = red + (i & 1) * kOneWarps * 16 + row;
        float o = 0.f;
        for (int jj = 0; jj < p.top_k; ++jj) {
          const int sl = t * p.top_k + jj;
          float y = 0.f;
          for (int w = 0; w < wps; ++w) y += rr[(sl * wps + w) * 16];
          o += tw[sl] * y;
        }
        static_cast<std::uint16_t*>(p.out)[static_cast<std::int64_t>(t) * H + 16 * n + row] = D::from_float(o);
      }
    }
  }
  if (threadIdx.x == 0) od::stamp(p.trace, 7);
}

}  // namespace w4a16::kernels::cuda::moe
