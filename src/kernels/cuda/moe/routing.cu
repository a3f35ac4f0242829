// CUDA routing and alignment for the MoE layer; the same results as src/moe/routing.cpp.
//   route: logits fp32 [T, E] (E <= 1024) -> topk_ids int32 [T, k], topk_weights fp32 [T, k]
//          one warp per token; softmax with expf; k rounds of (value, lower id) warp argmax
//   align: topk_ids int32 [T, k] -> sorted_ids [cap], block_expert [cap / block], total [1]
//          one CTA of 1024 threads, each warp placing a contiguous range of slots; slots of an expert in
//          ascending slot order (FORMATS.md)
// No host synchronisation: both are capturable in a CUDA graph.
// Checked by tests/gpu/moe/test_moe_gpu.cpp (against route_cpu / align_cpu, bit for bit for ids).
#include <cfloat>

#include <cub/block/block_scan.cuh>

#include "common.cuh"
#include "moe/moe_kernels.cuh"
#include "pdl.cuh"

namespace w4a16::kernels::cuda::moe {

namespace {

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
// Per-range histograms, ranges x E ints: E = 128 gets 32 ranges (one per warp), E = 4096 four.
constexpr int kAlignHistInts = 16384;
constexpr int kAlignSmemBytes = (kAlignHistInts + kAlignMaxExperts + 1) * 4;  // + offsets (dynamic: > 48 KB)
using AlignScan = cub::BlockScan<int, kAlignThreads>;

// Slots are cut into `ranges` contiguous ranges in slot order (one per warp, ranges = min(32, 16384 / E)). Each range
// counts its slots per expert (hist[r][e]); per expert those counts become exclusive prefixes over the ranges (where the
// range's slots start within the expert's run) and the padded runs' offsets come from one block scan; then every warp
// places its range's slots, 32 at a time in slot order, lanes of one expert ranked by __match_any_sync, with no barrier
// between warps. Slots of an expert therefore land in ascending slot order (align_cpu's order). The earlier placement
// (chunks of 1024 slots, the warps of a chunk one after another, a CTA barrier per warp) took 307 us at T = 4096, k = 8
// on the H200 (docs/benchmarks/moe.md, stop 28): a quarter of the layer's time.
__global__ void __launch_bounds__(kAlignThreads)
    align_kernel(const std::int32_t* __restrict__ ids, int slots, int E, int block, int cap, std::int32_t* __restrict__ sorted,
                 std::int32_t* __restrict__ block_expert, std::int32_t* __restrict__ total) {
  extern __shared__ int align_smem[];
  int* hist = align_smem;                     // [ranges][E]: slots of expert e in range r, then where they start in e's run
  int* offset = align_smem + kAlignHistInts;  // [E + 1]: padded start of each expert's run, then the total
  __shared__ typename AlignScan::TempStorage scan_tmp;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int ranges = min(32, kAlignHistInts / E);
  const int per_range = max(1, (slots + ranges - 1) / ranges);
  // PDL (pdl.cuh): ids may come from the kernel before; GEMM 1 reads nothing before its wait.
  pdl_wait();
  pdl_launch_dependents();
  for (int i = tid; i < ranges * E; i += kAlignThreads) hist[i] = 0;
  for (int i = tid; i < cap; i += kAlignThreads) sorted[i] = slots;  // sentinel everywhere first
  __syncthreads();
  for (int s = tid; s < slots; s += kAlignThreads) atomicAdd(&hist[(s / per_range) * E + ids[s]], 1);  // integer: order-free
  __syncthreads();
  // Per expert: the ranges' counts -> their exclusive prefixes, the padded run length; the runs' exclusive offsets
  // block-wide (each thread scans kScanItems experts of its own, CUB combines the threads).
  {
    int run[kScanItems], off[kScanItems];
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int e = tid * kScanItems + i;
      int c = 0;
      if (e < E)
        for (int r = 0; r < ranges; ++r) {
          const int h = hist[r * E + e];
          hist[r * E + e] = c;
          c += h;
        }
      run[i] = (c + block - 1) / block * block;
    }
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
  __syncthreads();  // offsets and the ranges' starts before the block map and the placement
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
  if (warp < ranges) {
    int* cursor = hist + warp * E;  // this range's next position within each expert's run
    const int s0 = warp * per_range, s1 = min(slots, s0 + per_range);
    int e_next = s0 + lane < s1 ? ids[s0 + lane] : -1;
    for (int base = s0; base < s1; base += 32) {
      const int s = base + lane;
      const int e = e_next;
      e_next = s + 32 < s1 ? ids[s + 32] : -1;  // the next step's expert in flight
      const unsigned peers = __match_any_sync(0xffffffffu, e);
      const int leader = __ffs(peers) - 1;
      int start = 0;
      if (lane == leader && e >= 0) {
        start = cursor[e];
        cursor[e] = start + __popc(peers);
      }
      start = __shfl_sync(0xffffffffu, start, leader);
      if (e >= 0) sorted[offset[e] + start + __popc(peers & ((1u << lane) - 1u))] = s;
    }
  }
}

}  // namespace

void launch_route(const float* logits, std::int64_t tokens, int experts, int top_k, bool renormalize,
                  std::int32_t* topk_ids, float* topk_weights, cudaStream_t stream) {
  if (tokens == 0) return;
  const int grid = static_cast<int>((tokens + kRouteWarps - 1) / kRouteWarps);
  route_kernel<<<grid, kRouteWarps * 32, 0, stream>>>(logits, static_cast<int>(tokens), experts, top_k, renormalize,
                                                       topk_ids, topk_weights);
  W4A16_CUDA_TRY(cudaGetLastError());
}

void launch_align(const std::int32_t* topk_ids, std::int64_t tokens, int top_k, int experts, int block,
                  std::int32_t* sorted_ids, std::int32_t* block_expert, std::int32_t* total, cudaStream_t stream) {
  const int slots = static_cast<int>(tokens * top_k);
  const int cap = slots + experts * (block - 1);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(kAlignThreads);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;  // may start while the caller's last kernel drains
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = stream != nullptr ? 1 : 0;  // the legacy default stream keeps plain serialization
  static const bool smem_set = [] {  // once: more than 48 KB of dynamic shared memory
    W4A16_CUDA_TRY(cudaFuncSetAttribute(align_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kAlignSmemBytes));
    return true;
  }();
  (void)smem_set;
  cfg.dynamicSmemBytes = kAlignSmemBytes;
  W4A16_CUDA_TRY(cudaLaunchKernelEx(&cfg, align_kernel, topk_ids, slots, experts, block, cap, sorted_ids, block_expert, total));
}

}  // namespace w4a16::kernels::cuda::moe
