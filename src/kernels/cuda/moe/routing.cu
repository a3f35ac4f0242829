// CUDA routing and alignment for the MoE layer; the same results as src/moe/routing.cpp.
//   router logits: x act [T, H] . router f16|bf16 [E, H]^T -> logits fp32 [T, E]; one warp per (token, expert),
//          16-byte loads, fp32 in a fixed order (router_logits_cpu accumulates in f64: the logits agree to ~1e-6)
//   route: logits fp32 [T, E] (E <= 1024) -> topk_ids int32 [T, k], topk_weights fp32 [T, k]
//          one warp per token; softmax with expf; k rounds of (value, lower id) warp argmax
//   align: topk_ids int32 [T, k] -> sorted_ids [cap], block_expert [cap / block], total [1]
//          three launches over contiguous slot ranges (count, offsets, placement; see align_count_kernel);
//          slots of an expert in ascending slot order (FORMATS.md)
// No host synchronisation: both are capturable in a CUDA graph.
// Checked by tests/gpu/moe/test_moe_gpu.cpp (against route_cpu / align_cpu, bit for bit for ids).
#include <algorithm>
#include <cfloat>

#include <cub/block/block_scan.cuh>

#include "common.cuh"
#include "moe/moe_kernels.cuh"
#include "pdl.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda::moe {

namespace {

constexpr int kLogitWarps = 8;  // experts per CTA of the router logits, one warp each

template <bool kBf16>
__device__ __forceinline__ float bits_to_float(unsigned bits16) {
  if constexpr (kBf16) return __uint_as_float(bits16 << 16);
  else return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Sum over the 8 16-bit values of a and b (two uint4 loads) of a_i * b_i, into acc in order.
template <bool kXBf16, bool kRBf16>
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b, float acc) {
  const unsigned aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = fmaf(bits_to_float<kXBf16>(aw[i] & 0xffffu), bits_to_float<kRBf16>(bw[i] & 0xffffu), acc);
    acc = fmaf(bits_to_float<kXBf16>(aw[i] >> 16), bits_to_float<kRBf16>(bw[i] >> 16), acc);
  }
  return acc;
}

// logits[t, e] = x[t, :] . router[e, :]; CTA (t, expert group of 8), warp w: expert 8 blockIdx.y + w. Lane l takes the
// 8-value chunks l, l + 32, ... of the row (H % 8 == 0, rows 16-byte aligned: router_logits_cuda checks), then the
// warp sums the lanes by xor shuffles: the same order every run.
template <bool kXBf16, bool kRBf16>
__global__ void __launch_bounds__(kLogitWarps * 32)
    router_logits_kernel(const std::uint16_t* __restrict__ x, std::int64_t x_stride, const std::uint16_t* __restrict__ router,
                         int H, int E, float* __restrict__ logits) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int e = blockIdx.y * kLogitWarps + warp;
  if (e >= E) return;
  const std::int64_t t = blockIdx.x;
  const uint4* xr = reinterpret_cast<const uint4*>(x + t * x_stride);  // (H / 8) chunks of 8 values
  const uint4* rr = reinterpret_cast<const uint4*>(router + static_cast<std::int64_t>(e) * H);
  float acc = 0.f;
  for (int c = lane; c < H / 8; c += 32) acc = dot8<kXBf16, kRBf16>(xr[c], __ldg(rr + c), acc);
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) logits[t * E + e] = acc;
}

constexpr int kRouteWarps = 4;  // tokens per CTA

__global__ void __launch_bounds__(kRouteWarps * 32)
    route_kernel(const float* __restrict__ logits, int tokens, int E, int k, bool renorm, std::int32_t* __restrict__ ids,
                 float* __restrict__ weights) {
  __shared__ unsigned taken[kRouteWarps][kMaxExperts / 32];  // bit e: expert e already picked
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t = blockIdx.x * kRouteWarps + warp;
  if (t >= tokens) return;
  const float* l = logits + static_cast<std::int64_t>(t) * E;
  for (int i = lane; i < kMaxExperts / 32; i += 32) taken[warp][i] = 0;
  float mx = -FLT_MAX;
  for (int e = lane; e < E; e += 32) mx = fmaxf(mx, l[e]);
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
  for (int e = lane; e < E; e += 32) sum += expf(l[e] - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  __syncwarp();
  float picked = 0.f, my_w = 0.f;
  int my_id = 0;
  for (int j = 0; j < k; ++j) {
    float best = -1.f;
    int bid = 0x7fffffff;
    for (int e = lane; e < E; e += 32) {
      if (taken[warp][e / 32] & (1u << (e % 32))) continue;
      const float p = expf(l[e] - mx);
      if (p > best || (p == best && e < bid)) best = p, bid = e;
    }
    for (int o = 16; o; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bid, o);
      if (ob > best || (ob == best && oi < bid)) best = ob, bid = oi;
    }
    if (lane == 0) taken[warp][bid / 32] |= 1u << (bid % 32);
    __syncwarp();
    const float w = best / sum;
    picked += w;  // same order as route_cpu: j = 0, 1, ...
    if (lane == j) my_w = w, my_id = bid;
  }
  if (lane < k) {
    ids[static_cast<std::int64_t>(t) * k + lane] = my_id;
    weights[static_cast<std::int64_t>(t) * k + lane] = renorm ? my_w / picked : my_w;
  }
}

constexpr int kAlignThreads = 1024;
constexpr int kAlignMaxExperts = 4096;
constexpr int kScanItems = kAlignMaxExperts / kAlignThreads;  // experts per thread in the offset scan
using AlignScan = cub::BlockScan<int, kAlignThreads>;

// Three launches (PDL-chained), the slots cut into R contiguous ranges in slot order (alignment_ranges):
//   align_count_kernel    one CTA per range: its slots per expert -> scratch[r][e]
//   align_offsets_kernel  one CTA: per expert the ranges' counts -> exclusive prefixes (where range r's slots start
//                         in the expert's run, back into scratch), the padded runs' offsets (one block scan) ->
//                         scratch[R E ..], total, block_expert, the sentinel at every position
//   align_place_kernel    one warp per range: cursors = offset + the range's start, the range's slots 32 at a time in
//                         slot order, lanes of one expert ranked by __match_any_sync
// so slots of an expert land in ascending slot order (align_cpu's order, bit for bit). The counting atomics and the
// scattered stores are spread over R SMs: one CTA doing all of them (the single-kernel versions: 308.7 us at T = 4096,
// k = 8 with a CTA barrier per warp, 46.8 us with per-warp ranges) spent ~2 cycles per slot (docs/benchmarks/moe.md).
__global__ void align_count_kernel(const std::int32_t* __restrict__ ids, int slots, int E, int range_len, std::int32_t* __restrict__ scratch) {
  extern __shared__ int align_hist[];  // [E]
  pdl_wait();  // ids may come from the kernel before
  pdl_launch_dependents();
  for (int e = threadIdx.x; e < E; e += blockDim.x) align_hist[e] = 0;
  __syncthreads();
  const int s0 = blockIdx.x * range_len, s1 = min(slots, s0 + range_len);
  for (int s = s0 + threadIdx.x; s < s1; s += blockDim.x) atomicAdd(&align_hist[ids[s]], 1);  // integer: order-free
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) scratch[static_cast<std::int64_t>(blockIdx.x) * E + e] = align_hist[e];
}

__global__ void __launch_bounds__(kAlignThreads)
    align_offsets_kernel(int slots, int E, int block, int cap, int ranges, std::int32_t* __restrict__ scratch,
                         std::int32_t* __restrict__ sorted, std::int32_t* __restrict__ block_expert, std::int32_t* __restrict__ total,
                         AlignLists lists) {
  extern __shared__ int align_smem[];
  int* hist = align_smem;                  // [ranges][E], then the ranges' starts
  int* offset = align_smem + ranges * E;   // [E + 1]
  __shared__ typename AlignScan::TempStorage scan_tmp;
  const int tid = threadIdx.x;
  pdl_wait();  // the counts
  pdl_launch_dependents();
  for (int i = tid; i < cap; i += kAlignThreads) sorted[i] = slots;  // sentinel everywhere; the placement comes after
  for (int i = tid; i < ranges * E; i += kAlignThreads) hist[i] = scratch[i];
  __syncthreads();
  for (int e = tid; e < E; e += kAlignThreads) {  // one expert per thread: its ranges' starts, then its padded run
    int c = 0;
    for (int r = 0; r < ranges; ++r) {
      const int h = hist[r * E + e];
      hist[r * E + e] = c;
      c += h;
    }
    offset[e] = (c + block - 1) / block * block;
  }
  __syncthreads();
  {
    int run[kScanItems], off[kScanItems];
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int e = tid * kScanItems + i;
      run[i] = e < E ? offset[e] : 0;
    }
    __syncthreads();  // every run read before offset[] is overwritten
    int acc = 0;
    AlignScan(scan_tmp).ExclusiveSum(run, off, acc);
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int e = tid * kScanItems + i;
      if (e < E) offset[e] = off[i];
    }
    if (tid == 0) {
      offset[E] = acc;
      *total = acc;
    }
  }
  __syncthreads();
  if (lists.row128 != nullptr) {  // block 64: each run as whole 128-row blocks and an odd 64-row tail (AlignLists)
    int n128[kScanItems], tail[kScanItems], p128[kScanItems], p64[kScanItems];
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int e = tid * kScanItems + i;
      const int run = e < E ? offset[e + 1] - offset[e] : 0;
      n128[i] = run / 128;
      tail[i] = run % 128 != 0 ? 1 : 0;
    }
    int c128 = 0, c64 = 0;
    AlignScan(scan_tmp).ExclusiveSum(n128, p128, c128);
    __syncthreads();  // the scan's temporary storage is reused
    AlignScan(scan_tmp).ExclusiveSum(tail, p64, c64);
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int e = tid * kScanItems + i;
      if (e >= E) continue;
      for (int j = 0; j < n128[i]; ++j) {
        lists.row128[p128[i] + j] = offset[e] + 128 * j;
        lists.expert128[p128[i] + j] = e;
      }
      if (tail[i]) {
        lists.row64[p64[i]] = offset[e] + 128 * n128[i];
        lists.expert64[p64[i]] = e;
      }
    }
    for (int b = c128 + tid; b < lists.cap128; b += kAlignThreads) lists.expert128[b] = -1;
    for (int b = c64 + tid; b < E; b += kAlignThreads) lists.expert64[b] = -1;
  }
  for (int i = tid; i < ranges * E; i += kAlignThreads) scratch[i] = hist[i];
  for (int e = tid; e <= E; e += kAlignThreads) scratch[ranges * E + e] = offset[e];
  const int nblocks = cap / block, used = offset[E] / block;
  for (int b = tid; b < nblocks; b += kAlignThreads) {
    int e = -1;
    if (b < used) {  // the expert whose run holds position b * block: binary search over offsets
      int lo = 0, hi = E - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (offset[mid] <= b * block) lo = mid; else hi = mid - 1;
      }
      e = lo;
    }
    block_expert[b] = e;
  }
}

__global__ void __launch_bounds__(32)
    align_place_kernel(const std::int32_t* __restrict__ ids, int slots, int E, int range_len, int ranges,
                       const std::int32_t* __restrict__ scratch, std::int32_t* __restrict__ sorted) {
  extern __shared__ int align_cursor[];  // [E]: next position of this range's slots in each expert's run
  const int lane = threadIdx.x, r = blockIdx.x;
  pdl_wait();  // the offsets and the ranges' starts (and the sentinels, which this overwrites)
  pdl_launch_dependents();
  for (int e = lane; e < E; e += 32) align_cursor[e] = scratch[ranges * E + e] + scratch[static_cast<std::int64_t>(r) * E + e];
  __syncwarp();
  const int s0 = r * range_len, s1 = min(slots, s0 + range_len);
  int e_next = s0 + lane < s1 ? ids[s0 + lane] : -1;
  for (int base = s0; base < s1; base += 32) {
    const int s = base + lane;
    const int e = e_next;
    e_next = s + 32 < s1 ? ids[s + 32] : -1;  // the next step's expert in flight
    const unsigned peers = __match_any_sync(0xffffffffu, e);
    const int leader = __ffs(peers) - 1;
    int start = 0;
    if (lane == leader && e >= 0) {
      start = align_cursor[e];
      align_cursor[e] = start + __popc(peers);
    }
    start = __shfl_sync(0xffffffffu, start, leader);
    if (e >= 0) sorted[start + __popc(peers & ((1u << lane) - 1u))] = s;
  }
}

// The ranges: at least 256 slots each, at most 64 of them, and ranges x E <= 16384 (the offsets kernel's shared copy).
constexpr int kAlignMaxRanges = 64, kAlignMinRangeLen = 256, kAlignHistInts = 16384;
int alignment_ranges(int slots, int E) {
  return std::max(1, std::min({kAlignMaxRanges, kAlignHistInts / E, (slots + kAlignMinRangeLen - 1) / kAlignMinRangeLen}));
}

}  // namespace

void launch_router_logits(const void* x, std::int64_t x_row_stride, bool x_bf16, const void* router, bool router_bf16,
                          std::int64_t tokens, int hidden, int experts, float* logits, cudaStream_t stream) {
  if (tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>((experts + kLogitWarps - 1) / kLogitWarps));
  const auto* xp = static_cast<const std::uint16_t*>(x);
  const auto* rp = static_cast<const std::uint16_t*>(router);
  if (x_bf16 && router_bf16)
    router_logits_kernel<true, true><<<grid, kLogitWarps * 32, 0, stream>>>(xp, x_row_stride, rp, hidden, experts, logits);
  else if (x_bf16)
    router_logits_kernel<true, false><<<grid, kLogitWarps * 32, 0, stream>>>(xp, x_row_stride, rp, hidden, experts, logits);
  else if (router_bf16)
    router_logits_kernel<false, true><<<grid, kLogitWarps * 32, 0, stream>>>(xp, x_row_stride, rp, hidden, experts, logits);
  else
    router_logits_kernel<false, false><<<grid, kLogitWarps * 32, 0, stream>>>(xp, x_row_stride, rp, hidden, experts, logits);
  W4A16_CUDA_TRY(cudaGetLastError());
}

void launch_route(const float* logits, std::int64_t tokens, int experts, int top_k, bool renormalize,
                  std::int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  if (tokens == 0) return;
  const int grid = static_cast<int>((tokens + kRouteWarps - 1) / kRouteWarps);
  route_kernel<<<grid, kRouteWarps * 32, 0, stream>>>(logits, static_cast<int>(tokens), experts, top_k, renormalize,
                                                       topk_ids, topk_weights);
  W4A16_CUDA_TRY(cudaGetLastError());
}

std::size_t align_scratch_bytes(std::int64_t tokens, int top_k, int experts) {
  const int slots = static_cast<int>(tokens * top_k);
  return static_cast<std::size_t>(alignment_ranges(slots, experts) * experts + experts + 1) * 4;
}

void launch_align(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block,
                  std::int32_t* sorted_ids, std::int32_t* block_expert, std::int32_t* total, std::int32_t* scratch,
                  const AlignLists* lists, cudaStream_t stream) {
  if (lists != nullptr && block != 64) fail(ErrorCode::invalid_argument, "block", "64 with block lists", std::to_string(block));
  const int slots = static_cast<int>(tokens * top_k);
  const int cap = slots + experts * (block - 1);
  const int ranges = alignment_ranges(slots, experts);
  const int range_len = std::max(1, (slots + ranges - 1) / ranges);
  const int offsets_smem = (ranges * experts + experts + 1) * 4;  // <= (16384 + 4097) * 4
  static const bool smem_set = [] {  // once: more than 48 KB of dynamic shared memory
    W4A16_CUDA_TRY(cudaFuncSetAttribute(align_offsets_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (kAlignHistInts + kAlignMaxExperts + 1) * 4));
    return true;
  }();
  (void)smem_set;
  // Each launch may start while the one before drains (PDL; the legacy default stream keeps plain serialization).
  launch_pdl(align_count_kernel, dim3(ranges), dim3(256), experts * 4, stream, stream != nullptr, topk_ids, slots, experts, range_len, scratch);
  launch_pdl(align_offsets_kernel, dim3(1), dim3(kAlignThreads), offsets_smem, stream, stream != nullptr, slots, experts, block, cap, ranges,
             scratch, sorted_ids, block_expert, total, lists != nullptr ? *lists : AlignLists{});
  launch_pdl(align_place_kernel, dim3(ranges), dim3(32), experts * 4, stream, stream != nullptr, topk_ids, slots, experts, range_len, ranges,
             static_cast<const std::int32_t*>(scratch), sorted_ids);
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace w4a16::kernels::cuda::moe
