// Validation and launch of the prefill kernels (prefill_run*: the plan of prefill_plan.cu, or one
// given), the two small kernels around them (the act-order gather of x, the split-K reduction), and the
// kernel-table queries the plan asks (resident clusters per kernel).
// Contract of the main kernel: prefill_kernel.cuh. Checked by tests/gpu/prefill.
//
// PDL (W4A16_PREFILL_PDL): every kernel here waits (griddepcontrol.wait) before it reads anything
// a previous kernel may write; only the prefill kernel does work before (its first W stages).
// The TMA configs need a tensor map of x per call: encoded here on the host
// (cuTensorMapEncodeTiled through tensor_map.cuh's encoder: no -lcuda), passed by value,
// so prefill_run stays allocation-free and graph-capturable.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

#include "common.cuh"
#include "pdl.cuh"
#include "prefill/prefill.hpp"
#include "prefill/prefill_launch.cuh"
#include "prefill/prefill_host.hpp"
#include "tensor_map.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

using namespace prefill_detail;

namespace {

bool config_runs_on(const PrefillConfig& c, int capability) {
  if (c.path == PrefillPath::wgmma) return sm90a_code(capability);
  return prefill_supported(capability);  // the mma.sync kernels: in the code of every architecture of the build
}

// W4A16_PREFILL_ONE_GROUP: "0" runs the per-half kernels at every group size (A/B measurement), "1"
// or unset the ONE_GROUP kernels where they apply (entry).
bool resolve_one_group(int one_group) { return resolve_switch(one_group, "plan.one_group", "W4A16_PREFILL_ONE_GROUP"); }

// The kernels of w's dtype and scalar type, per config: the per-half ones, or the ONE_GROUP ones
// ({nullptr, 0} outside OneGroupConfigs).
const KernelEntry* kernel_table(DType act_dtype, bool zeros, bool one_group) {
  if (act_dtype == DType::bf16)
    return one_group ? (zeros ? prefill_detail::kernels_bf16_zeros_one_group() : prefill_detail::kernels_bf16_sym_one_group())
                     : (zeros ? prefill_detail::kernels_bf16_zeros() : prefill_detail::kernels_bf16_sym());
  return one_group ? (zeros ? prefill_detail::kernels_f16_zeros_one_group() : prefill_detail::kernels_f16_sym_one_group())
                   : (zeros ? prefill_detail::kernels_f16_zeros() : prefill_detail::kernels_f16_sym());
}
const KernelEntry* kernel_table(const TcWeights& w, bool one_group) {
  return kernel_table(w.act_dtype, w.scalar == ScalarType::uint4, one_group);
}
// The kernel of plan.config for w: its ONE_GROUP variant (one scale pair and zero word per k tile
// and 64-row block, converted once for both k32 halves) where one group spans every 64-wide k tile
// (g >= 64: k tiles start at multiples of 64 and groups are powers of two; or a single group:
// channelwise, K <= g) and the config has one (OneGroupConfigs); else the per-half kernel (g = 32).
// Both variants of a config have the same shared memory and block size.
const KernelEntry& entry(DType act_dtype, bool zeros, std::int64_t groups, std::int64_t group_len, const PrefillPlan& plan) {
  if ((groups <= 1 || group_len >= 64) && resolve_one_group(plan.one_group)) {
    const KernelEntry& e = kernel_table(act_dtype, zeros, true)[plan.config];
    if (e.fn != nullptr) return e;
  }
  return kernel_table(act_dtype, zeros, false)[plan.config];
}
const KernelEntry& entry(const TcWeights& w, const PrefillPlan& plan) {
  return entry(w.act_dtype, w.scalar == ScalarType::uint4, w.groups, w.group_len(), plan);
}

// log2 of the group length where K holds several groups (the kernel's shift), 0 for one group; g = 32..256 are
// powers of two, anything else is refused.
int group_shift_of(std::int64_t groups, std::int64_t group_len, int group_size, const char* arg) {
  int shift = 0;
  while (groups > 1 && (std::int64_t{1} << shift) < group_len) ++shift;
  if (groups > 1 && (std::int64_t{1} << shift) != group_len)
    fail(ErrorCode::invalid_argument, arg, "a power of two (32..256) or channelwise", std::to_string(group_size));
  return shift;
}

// Raise the dynamic shared-memory limit once per kernel (not a stream operation: capture-safe).
void ensure_smem_attr(const KernelEntry& e) {
  static std::mutex mu;
  static std::vector<const void*> done;
  std::lock_guard<std::mutex> lock(mu);
  const void* key = reinterpret_cast<const void*>(e.fn);
  if (std::find(done.begin(), done.end(), key) != done.end()) return;
  W4A16_CUDA_TRY(cudaFuncSetAttribute(e.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, e.smem_bytes));
  done.push_back(key);
}

// An occupancy count of kernel `e` per (key, device), computed by count(device) on first use and kept (the device's
// answer does not change; occupancy queries are not stream operations: capture-safe). The kernel's shared-memory limit
// is raised first, as its launches do.
int per_kernel_count(const KernelEntry& e, int key, const std::function<int(int)>& count) {
  static std::mutex mu;
  struct Entry { const void* fn; int key, dev, value; };
  static std::vector<Entry> done;
  int dev = 0;
  W4A16_CUDA_TRY(cudaGetDevice(&dev));
  const void* fn = reinterpret_cast<const void*>(e.fn);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Entry& d : done)
      if (d.fn == fn && d.key == key && d.dev == dev) return d.value;
  }
  ensure_smem_attr(e);
  const int value = count(dev);
  std::lock_guard<std::mutex> lock(mu);
  done.push_back({fn, key, dev, value});
  return value;
}

// A row-major act-dtype matrix (rows x cols, row stride `stride` elements) in boxes of 64 columns (128 bytes, the
// 128B swizzle) x box_rows rows; `what` names it in the error. Encoding is host-only and allocation-free: safe inside
// graph capture.
CUtensorMap encode_act_map(const void* base, DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t stride, int box_rows,
                           CUtensorMapL2promotion promotion, const char* what) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                          const_cast<void*>(base), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    fail(ErrorCode::cuda_error, std::string("tensor map of ") + what, "cuTensorMapEncodeTiled success",
         "CUresult " + std::to_string(static_cast<int>(r)) + " (rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
             " stride=" + std::to_string(stride) + " box rows=" + std::to_string(box_rows) + ")");
  return map;
}

// The tensor map of x (M, K) for the TMA configs: dims {K, M} (k fastest), row stride in bytes,
// box {64 k, bm tokens} = one 128-byte swizzle span per row, the 128B swizzle that the kernel's
// wgmma descriptors assume, zero fill out of bounds (tokens >= M, k >= K: the cp.async path's
// zero-fill).
CUtensorMap make_x_tensor_map(const void* x, DType dtype, std::int64_t m, std::int64_t k, std::int64_t x_stride, int bm) {
  const auto addr = reinterpret_cast<std::uintptr_t>(x);
  if (addr % 16 != 0) fail(ErrorCode::alignment, "x", "16-byte aligned (TMA tensor map)", "address % 16 = " + std::to_string(addr % 16));
  if ((x_stride * 2) % 16 != 0)
    fail(ErrorCode::alignment, "x_stride", "a multiple of 16 bytes (TMA tensor map)", std::to_string(x_stride * 2) + " bytes");
  return encode_act_map(x, dtype, m, k, x_stride, bm, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "x");
}

// y (M x N, row stride y_stride) as TMA store boxes of 64 rows x bm tokens: the persistent loop's output panels
// (prefill_kernel.cuh KernelParams::tma_out). The caller checked y's 16-byte alignment and stride (persistent_ctas).
CUtensorMap make_y_tensor_map(void* y, DType dtype, std::int64_t m, std::int64_t n, std::int64_t y_stride, int bm) {
  return encode_act_map(y, dtype, m, n, y_stride, bm, CU_TENSOR_MAP_L2_PROMOTION_NONE, "y");
}

// x[:, perm] -> dst (M, K) contiguous.
template <class T>
__global__ void gather_kernel(const T* __restrict__ x, std::int64_t x_stride, const std::int32_t* __restrict__ perm,
                              T* __restrict__ dst, std::int64_t m, std::int64_t k) {
  pdl_wait();  // x is the previous kernel's output
  pdl_launch_dependents();
  const std::int64_t total = m * k;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / k, c = i % k;
    dst[i] = x[r * x_stride + perm[c]];
  }
}

// y[m, n] = sum over s in order of partial[s, m, n] + bias[n] for the columns n in [c0, c0 + cols) (a row split's part:
// prefill_run_row_split; else 0, N): deterministic split-K reduction.
template <class T>
__global__ void reduce_kernel(const float* __restrict__ partial, int split, const T* __restrict__ bias, T* __restrict__ y,
                              std::int64_t y_stride, std::int64_t m, std::int64_t n, std::int64_t c0, std::int64_t cols) {
  pdl_wait();  // the partials are the prefill kernel's output
  pdl_launch_dependents();
  const std::int64_t total = m * cols, plane = m * n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / cols, c = c0 + i % cols, at = r * n + c;
    float acc = 0.f;
    for (int s = 0; s < split; ++s) acc += partial[s * plane + at];
    if (bias) acc += prefill_detail::Num<T>::to_float(bias[c]);
    y[r * y_stride + c] = prefill_detail::Num<T>::from_float(acc);
  }
}

int elementwise_grid(std::int64_t total) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(total, 256), 1, 132 * 16));
}

// W4A16_PREFILL_PDL: "0" launches without programmatic dependent launch (A/B measurement), "1" or
// unset with it.
bool resolve_pdl(int pdl) { return resolve_switch(pdl, "plan.pdl", "W4A16_PREFILL_PDL"); }

// The cluster reduce for `split` splits of config `c` with kernel `e` on this device. The automatic
// mode (plan.reduce automatic, W4A16_PREFILL_SPLIT_REDUCE unset) takes the mode of the smaller
// estimate (prefill_plan_estimate_us, `n` x `k` at `m` tokens): the cluster needs no second kernel and
// no partials in HBM, but its waves count only the clusters that fit the GPCs at once.
bool cluster_reduce_for(const PrefillConfig& c, int config, const KernelEntry& e, std::int64_t split, PrefillSplitReduce reduce,
                        std::int64_t n, std::int64_t k, std::int64_t m) {
  const PrefillSplitReduce r = resolve_reduce(reduce);
  if (split <= 1 || split > kPrefillMaxSplit || r == PrefillSplitReduce::kernel || !is_tma_config(c)) return false;
  if (!sm90a_code(device_capability())) return false;
  const int clusters = active_clusters(e, c.threads(), static_cast<int>(split));
  if (clusters < 1) return false;
  // A tile without an estimate takes the cluster: it needs no partials, so no workspace either.
  if (r == PrefillSplitReduce::cluster || tile_us_per_k_tile(config) <= 0) return true;
  const int sms = device_sm_count();
  const int s = static_cast<int>(split);
  return prefill_plan_estimate_us(n, k, m, config, s, sms, PrefillSplitReduce::cluster, clusters) <
         prefill_plan_estimate_us(n, k, m, config, s, sms, PrefillSplitReduce::kernel);
}

void validate(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride) {
  if (w.layout == nullptr || std::strcmp(w.layout, kTcLayoutTag) != 0)
    fail(ErrorCode::layout_mismatch, "w", std::string("prepared weights in layout ") + kTcLayoutTag,
         w.layout ? w.layout : "(null layout tag)");
  if (!is_activation_dtype(w.act_dtype))
    fail(ErrorCode::dtype_mismatch, "w.act_dtype", "float16 or bfloat16", std::string(dtype_name(w.act_dtype)));
  if (!is_supported_group_size(w.group_size))
    fail(ErrorCode::invalid_argument, "w.group_size", "32, 64, 128, 256 or -1 (channelwise)", std::to_string(w.group_size));
  if (w.n <= 0 || w.k <= 0 || w.k % 8 != 0 || w.n_pad != round_up(w.n, 64) || w.k_pad != round_up(w.k, 64))
    fail(ErrorCode::shape_mismatch, "w", "N > 0, K > 0, K % 8 == 0, N_pad = round_up(N, 64), K_pad = round_up(K, 64)",
         "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k) + " N_pad=" + std::to_string(w.n_pad) +
             " K_pad=" + std::to_string(w.k_pad));
  if (w.qweight == nullptr || w.scales == nullptr)
    fail(ErrorCode::invalid_argument, "w", "device qweight and scales", "null pointers");
  // The early-issue kernels address a thread's scale words and zero bytes by 32-bit offsets from its own base and count
  // k in 32 bits (prefill_kernel.cuh load_w_lean): group g at g x N_pad / 2 words, k0 < 2^31.
  if (static_cast<std::uint64_t>(w.groups) * static_cast<std::uint64_t>(w.n_pad) / 2 > (std::uint64_t{1} << 31))
    fail(ErrorCode::unsupported, "w.scales", "at most 8 GiB (groups x N_pad x 2 bytes)",
         std::to_string(w.groups) + " x " + std::to_string(w.n_pad) + " x 2 bytes");
  if (w.k_pad > (std::int64_t{1} << 31)) fail(ErrorCode::unsupported, "w.k", "K_pad <= 2^31", std::to_string(w.k));
  if ((w.scalar == ScalarType::uint4) != (w.zeros != nullptr))
    fail(ErrorCode::invalid_argument, "w.zeros", "zero points iff scalar type uint4",
         std::string(scalar_type_name(w.scalar)) + (w.zeros ? " with zeros" : " without zeros"));
  if (w.has_bias != (w.bias != nullptr))
    fail(ErrorCode::invalid_argument, "w.bias", "bias pointer iff has_bias", w.bias ? "pointer without has_bias" : "has_bias without pointer");
  if (w.act_order != (w.perm != nullptr))
    fail(ErrorCode::invalid_argument, "w.perm", "perm pointer iff act_order", w.perm ? "pointer without act_order" : "act_order without pointer");
  if (m < 0) fail(ErrorCode::invalid_argument, "m", "M >= 0", std::to_string(m));
  if (m == 0) return;
  if (x == nullptr || y == nullptr) fail(ErrorCode::invalid_argument, "x, y", "device pointers", "null");
  if (x_stride < w.k) fail(ErrorCode::shape_mismatch, "x_stride", ">= K = " + std::to_string(w.k), std::to_string(x_stride));
  if (y_stride < w.n) fail(ErrorCode::shape_mismatch, "y_stride", ">= N = " + std::to_string(w.n), std::to_string(y_stride));
  if (!w.act_order) {
    if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0)
      fail(ErrorCode::alignment, "x", "16-byte aligned (cp.async 16-byte copies, TMA tensor map)",
           "address % 16 = " + std::to_string(reinterpret_cast<std::uintptr_t>(x) % 16));
    if (x_stride % 8 != 0)
      fail(ErrorCode::alignment, "x_stride", "a multiple of 8 elements (16-byte rows)", std::to_string(x_stride));
  } else if (reinterpret_cast<std::uintptr_t>(x) % 2 != 0) {
    fail(ErrorCode::alignment, "x", "2-byte aligned", "odd address");
  }
  if (reinterpret_cast<std::uintptr_t>(y) % 2 != 0) fail(ErrorCode::alignment, "y", "2-byte aligned", "odd address");
}

// CTAs of kernel `e` resident on the device at once (occupancy x SMs); once per (kernel, device).
int resident_ctas(const KernelEntry& e, int threads) {
  return per_kernel_count(e, 0, [&](int dev) {  // key 0: no cluster split is 0
    int per_sm = 0;
    W4A16_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, e.fn, threads, static_cast<std::size_t>(e.smem_bytes)));
    return per_sm * device_sm_count(dev);
  });
}


// Whether the config's kernel has the persistent loop (prefill_kernel.cuh kPersistable): early-issue TMA tiles of at
// most 128 rows (the output tile in the ring's last two stages), one CTA per SM.
bool has_persistent_loop(const PrefillConfig& cfg) {
  return cfg.path == PrefillPath::wgmma && cfg.x_load == PrefillXLoad::tma && cfg.sched != 0 && cfg.overlap && cfg.bn() <= 128 &&
         cfg.min_blocks == 1;
}

// Workspace of a persistent launch's split tail on `resident` CTAs, whatever its tail: at most one part per CTA (fp32
// BM x BN each, tail_parts_bytes), then one arrival count per tail tile, each 256-byte aligned.
std::size_t tail_parts_bytes(const PrefillConfig& cfg, int resident) {
  return (static_cast<std::size_t>(resident) * cfg.bm * cfg.bn() * 4 + 255) / 256 * 256;
}
std::size_t tail_workspace_bound(const PrefillConfig& cfg, int resident) {
  return tail_parts_bytes(cfg, resident) + (static_cast<std::size_t>(resident) * 4 + 255) / 256 * 256;
}

// The persistent tile loop of one launch (KernelParams::persist_items; W4A16_PREFILL_PERSIST "0" off, "1" or unset
// on): where the kernel has the loop (early-issue TMA tiles of at most 128 rows, one CTA per SM: the output tile in
// the ring's last two stages), at split 1 with the stmatrix epilogue on every tile (every row block inside N,
// 16-byte-aligned y rows) and more tiles than CTAs resident at once: ctas = those resident, else 0 (the plain grid).
// The split tail (W4A16_PREFILL_TAIL_SPLIT "0" off, "1" or unset on): where the last wave holds R tiles, R <= half the
// CTAs, they run as s = min(CTAs / R, 8, k tiles / 4) k parts each, one part per otherwise idle CTA.
PrefillPersistent persistent_launch(const PrefillConfig& cfg, const KernelEntry& e, std::int64_t split, bool epi16, std::int64_t n,
                                    std::int64_t row0, std::int64_t row_end, std::int64_t m, std::int64_t k_tiles, const void* y,
                                    std::int64_t y_stride) {
  PrefillPersistent r;
  const std::int64_t nx = ceil_div(row_end - row0, cfg.bn()), items = nx * ceil_div(m, cfg.bm);
  if (!has_persistent_loop(cfg) || split != 1 || !epi16 || row0 + nx * cfg.bn() > n || y_stride % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(y) % 16 != 0 || items * 8 > std::numeric_limits<int>::max())  // work items: tiles + 8 parts a tail tile
    return r;
  if (!resolve_switch(-1, "the persistent tile loop", "W4A16_PREFILL_PERSIST")) return r;
  const int resident = resident_ctas(e, cfg.threads());
  if (items <= resident) return r;
  if (resolve_switch(-1, "the persistent loop's split tail", "W4A16_PREFILL_TAIL_SPLIT")) r = prefill_tail_split(items, resident, k_tiles);
  r.ctas = resident;
  return r;
}

}  // namespace

// Shared with prefill_plan.cu (prefill_host.hpp).
namespace prefill_detail {

// How many clusters (1, 1, split) of kernel `e` can be resident at once (cudaOccupancyMaxActiveClusters;
// 0 where none can); once per (kernel, split, device). Not a stream operation: capture-safe. A cluster's
// CTAs must share one GPC, so on the H200 (132 SMs in GPCs of unequal size) clusters of 3..8 leave SMs
// idle: fewer CTAs than SMs x occupancy are resident (the plan's cluster waves count this).
int active_clusters(const KernelEntry& e, int threads, int split) {
  return per_kernel_count(e, split, [&](int) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1, 1, static_cast<unsigned>(split));
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = static_cast<std::size_t>(e.smem_bytes);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = static_cast<unsigned>(split);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, e.fn, &cfg) != cudaSuccess) {
      cudaGetLastError();  // not sticky; the caller falls back to the reduce kernel
      clusters = 0;
    }
    return clusters;
  });
}

bool cluster_schedulable(const KernelEntry& e, int threads, int split) { return active_clusters(e, threads, split) >= 1; }

std::size_t persistent_tail_bound(std::int64_t n, std::int64_t max_m) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return 0;
  }
  if (!sm90a_code(device_capability())) return 0;
  if (!resolve_switch(-1, "the persistent tile loop", "W4A16_PREFILL_PERSIST") ||
      !resolve_switch(-1, "the persistent loop's split tail", "W4A16_PREFILL_TAIL_SPLIT"))
    return 0;
  std::size_t bound = 0;
  for (int c = 0; c < prefill_config_count(); ++c) {
    const PrefillConfig& cfg = prefill_config(c);
    if (!has_persistent_loop(cfg)) continue;
    const int resident = resident_ctas(kernels_f16_sym()[c], cfg.threads());
    if (ceil_div(n, cfg.bn()) * ceil_div(max_m, cfg.bm) > resident) bound = std::max(bound, tail_workspace_bound(cfg, resident));
  }
  return bound;
}

}  // namespace prefill_detail

bool prefill_plan_uses_cluster(const TcWeights& w, const PrefillPlan& plan, std::int64_t m) {
  std::int64_t kts = 0;
  const std::int64_t split = normalize_split(w.k_pad / 64, plan.split, &kts);
  if (split <= 1) return false;
  return cluster_reduce_for(prefill_config(plan.config), plan.config, entry(w, plan), split, plan.reduce, w.n, w.k, m);
}

bool prefill_plan_uses_one_group(const TcWeights& w, const PrefillPlan& plan) {
  prefill_config(plan.config);  // range check
  return entry(w, plan).fn != kernel_table(w, false)[plan.config].fn;
}

std::size_t prefill_plan_workspace_bytes(const TcWeights& w, const PrefillPlan& plan, std::int64_t m) {
  std::int64_t kts = 0;
  const std::int64_t split = normalize_split(w.k_pad / 64, plan.split, &kts);
  const bool partials = split > 1 && !prefill_plan_uses_cluster(w, plan, m);
  // The persistent loop's split tail (its bound whatever the tail: y assumed aligned, the launch may take less).
  std::size_t tail = 0;
  if (split == 1 && m > 0) {
    const PrefillPersistent pl = prefill_plan_persistent(w, plan, m, reinterpret_cast<const void*>(std::uintptr_t{256}), 8);
    if (pl.ctas > 0 && resolve_switch(-1, "the persistent loop's split tail", "W4A16_PREFILL_TAIL_SPLIT"))
      tail = tail_workspace_bound(prefill_config(plan.config), pl.ctas);
  }
  return gather_bytes(w.act_order, m, w.k) + (partials ? static_cast<std::size_t>(split * m * w.n * 4) : tail);
}

namespace {

// The workspace and plan checks of one plan at M = m (prefill_run_plan, each part of prefill_run_row_split).
void check_plan(const TcWeights& w, const PrefillPlan& plan, std::int64_t m, const void* workspace, std::size_t workspace_bytes) {
  const int cap = device_capability();
  const PrefillConfig& cfg = prefill_config(plan.config);
  if (!config_runs_on(cfg, cap))
    fail(ErrorCode::unsupported, "prefill config", "one this build runs on capability " + std::to_string(cap), cfg.name());
  const std::size_t need = prefill_plan_workspace_bytes(w, plan, m);
  if (need > 0 && (workspace == nullptr || workspace_bytes < need))
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(need) + " bytes (prefill_workspace_bytes)",
         std::to_string(workspace == nullptr ? 0 : workspace_bytes) + " bytes");
  if (need > 0 && reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    fail(ErrorCode::alignment, "workspace", "256-byte aligned", "address % 256 = " + std::to_string(reinterpret_cast<std::uintptr_t>(workspace) % 256));
}

// x[:, perm] into the workspace where w has act order (one launch); returns the x the kernels read and sets *stride
// and *ws past the gathered rows.
const void* gather_x(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, unsigned char** ws,
                     std::int64_t* stride, bool pdl, cudaStream_t stream) {
  *stride = x_stride;
  if (!w.act_order) return x;
  const std::int64_t total = m * w.k;
  const dim3 g(static_cast<unsigned>(elementwise_grid(total))), b(256);
  if (w.act_dtype == DType::bf16)
    launch_pdl(gather_kernel<__nv_bfloat16>, g, b, 0, stream, pdl, static_cast<const __nv_bfloat16*>(x), x_stride, w.perm,
               reinterpret_cast<__nv_bfloat16*>(*ws), m, w.k);
  else
    launch_pdl(gather_kernel<half>, g, b, 0, stream, pdl, static_cast<const half*>(x), x_stride, w.perm, reinterpret_cast<half*>(*ws), m, w.k);
  W4A16_CUDA_TRY(cudaGetLastError());
  const void* xk = *ws;
  *stride = w.k;
  *ws += gather_bytes(true, m, w.k);
  return xk;
}

// The plan's prefill kernel (and reduce kernel) over the weight rows [row0, row_end) (row0 a multiple of the tile's
// rows; row_end N_pad or a multiple of them), x already gathered; ws past the gathered rows.
void launch_rows(const TcWeights& w, const PrefillPlan& plan, const void* xk, std::int64_t xk_stride, std::int64_t m, void* y,
                 std::int64_t y_stride, unsigned char* ws, std::int64_t row0, std::int64_t row_end, bool pdl, cudaStream_t stream) {
  const PrefillConfig& cfg = prefill_config(plan.config);
  std::int64_t kts = 0;
  const std::int64_t k_tiles = w.k_pad / 64;
  const std::int64_t split = normalize_split(k_tiles, plan.split, &kts);
  const KernelEntry& e = entry(w, plan);
  const bool cluster = split > 1 && cluster_reduce_for(cfg, plan.config, e, split, plan.reduce, w.n, w.k, m);
  // W4A16_PREFILL_TAIL_BOX: "0" loads the last m block through the full box, zero-filled past M (A/B
  // baseline); "1" or unset only its M % bm real rows (prefill_kernel.cuh tmap_tail). Read before any launch.
  const bool tail_box = resolve_switch(-1, "the tail box", "W4A16_PREFILL_TAIL_BOX");

  KernelParams p{};
  p.qweight = reinterpret_cast<const uint4*>(w.qweight);
  p.scales = static_cast<const std::uint32_t*>(w.scales);
  p.zeros = w.zeros;
  p.bias = w.bias;
  p.x = xk;
  p.y = y;
  p.partial = split > 1 && !cluster ? reinterpret_cast<float*>(ws) : nullptr;
  p.cluster_reduce = cluster ? 1 : 0;
  p.m = m;
  p.n = w.n;
  p.k = w.k;
  p.n_pad = w.n_pad;
  p.k_tiles = k_tiles;
  p.x_stride = xk_stride;
  p.y_stride = y_stride;
  p.group_len = w.group_len();
  p.groups = w.groups;
  p.k_tiles_per_split = kts;
  p.split = static_cast<int>(split);
  p.row_block0 = row0 / cfg.bn();
  p.group_shift = group_shift_of(w.groups, w.group_len(), w.group_size, "w.group_size");
  // The stmatrix epilogue of split-1 early-issue TMA tiles (KernelParams::epi16; the same bits, 1-4% less time at
  // M >= 1024, stop 54); W4A16_PREFILL_EPI16=0 keeps the fp32 staging (the A/B baseline).
  p.epi16 = resolve_switch(-1, "the stmatrix epilogue", "W4A16_PREFILL_EPI16") ? 1 : 0;

  ensure_smem_attr(e);
  dim3 grid(static_cast<unsigned>(ceil_div(row_end - row0, cfg.bn())), static_cast<unsigned>(ceil_div(m, cfg.bm)), static_cast<unsigned>(split));
  if (grid.y > 65535) fail(ErrorCode::unsupported, "m", "<= " + std::to_string(65535LL * cfg.bm), std::to_string(m));
  CUtensorMap tmap_y{};
  if (const PrefillPersistent pl = persistent_launch(cfg, e, split, p.epi16 != 0, w.n, row0, row_end, m, k_tiles, y, y_stride); pl.ctas > 0) {
    const int items = static_cast<int>(grid.x * grid.y);
    p.persist_nx = static_cast<int>(grid.x);
    p.persist_full = items - pl.tail_items;
    p.persist_items = p.persist_full + pl.tail_items * pl.tail_split;
    if (pl.tail_items > 0) {  // the parts and their arrival counts in the workspace (prefill_plan_workspace_bytes holds them)
      p.tail_items = pl.tail_items;
      p.tail_split = pl.tail_split;
      p.tail_kts = static_cast<int>(pl.tail_kts);
      p.tail_partial = reinterpret_cast<float*>(ws);
      p.tail_count = reinterpret_cast<int*>(ws + tail_parts_bytes(cfg, pl.ctas));
      W4A16_CUDA_TRY(cudaMemsetAsync(p.tail_count, 0, static_cast<std::size_t>(pl.tail_items) * 4, stream));
    }
    grid = dim3(static_cast<unsigned>(pl.ctas), 1, 1);
    // The next item decoded in the k loop (KernelParams::next_info; "0": at the item boundary).
    p.next_info = resolve_switch(-1, "the persistent loop's next-item decode", "W4A16_PREFILL_NEXT_INFO") ? 1 : 0;
    // The output tiles by TMA (KernelParams::tma_out; W4A16_PREFILL_TMA_STORE "0" keeps the threads' copies).
    if (resolve_switch(-1, "the persistent loop's TMA store", "W4A16_PREFILL_TMA_STORE")) {
      p.tma_out = 1;
      tmap_y = make_y_tensor_map(y, w.act_dtype, m, w.n, y_stride, cfg.bm);
    }
  }
  // TMA configs read x through a tensor map of this call's x (or its act-order gather); the others
  // ignore the (zero) map.
  const bool tma = cfg.x_load == PrefillXLoad::tma || cfg.x_load == PrefillXLoad::tma_eb;
  const CUtensorMap tmap = tma ? make_x_tensor_map(xk, w.act_dtype, m, w.k, xk_stride, cfg.bm) : CUtensorMap{};
  // The last m block's box: its M % bm real token rows, or (tail_box off) the full box of tmap.
  p.tail_box_rows = tail_box ? static_cast<int>(m % cfg.bm) : cfg.bm;
  const CUtensorMap tmap_tail = tma && tail_box && m % cfg.bm != 0
                                    ? make_x_tensor_map(xk, w.act_dtype, m, w.k, xk_stride, p.tail_box_rows)
                                    : tmap;
  cudaLaunchConfig_t lc{};
  lc.gridDim = grid;
  lc.blockDim = dim3(static_cast<unsigned>(cfg.threads()));
  lc.dynamicSmemBytes = static_cast<std::size_t>(e.smem_bytes);
  lc.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned nattr = 0;
  if (pdl) {  // may start while the stream's previous kernel drains (the prologue fetches weights only)
    attr[nattr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[nattr++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster) {  // the splits of one output tile form a cluster: rank = blockIdx.z = split index
    attr[nattr].id = cudaLaunchAttributeClusterDimension;
    attr[nattr].val.clusterDim.x = 1;
    attr[nattr].val.clusterDim.y = 1;
    attr[nattr++].val.clusterDim.z = static_cast<unsigned>(split);
  }
  lc.attrs = attr;
  lc.numAttrs = nattr;
  W4A16_CUDA_TRY(cudaLaunchKernelEx(&lc, e.fn, p, tmap, tmap_tail, tmap_y));
  W4A16_CUDA_TRY(cudaGetLastError());

  if (split > 1 && !cluster) {
    const std::int64_t c1 = std::min(row_end, w.n), cols = c1 - row0;
    const dim3 g(static_cast<unsigned>(elementwise_grid(m * cols))), b(256);
    if (w.act_dtype == DType::bf16)
      launch_pdl(reduce_kernel<__nv_bfloat16>, g, b, 0, stream, pdl, static_cast<const float*>(p.partial), p.split,
                 static_cast<const __nv_bfloat16*>(w.bias), static_cast<__nv_bfloat16*>(y), y_stride, m, w.n, row0, cols);
    else
      launch_pdl(reduce_kernel<half>, g, b, 0, stream, pdl, static_cast<const float*>(p.partial), p.split, static_cast<const half*>(w.bias),
                 static_cast<half*>(y), y_stride, m, w.n, row0, cols);
    W4A16_CUDA_TRY(cudaGetLastError());
  }
}

}  // namespace

PrefillPersistent prefill_tail_split(std::int64_t items, int resident, std::int64_t k_tiles) {
  if (items < 1 || resident < 1 || k_tiles < 1)
    fail(ErrorCode::invalid_argument, "items, resident, k_tiles", ">= 1 each",
         std::to_string(items) + ", " + std::to_string(resident) + ", " + std::to_string(k_tiles));
  constexpr std::int64_t kMaxTailSplit = 8, kMinTailKTiles = 4;  // parts a tile, k tiles a part
  PrefillPersistent r;
  const std::int64_t rem = items % resident;
  if (items <= resident || rem == 0 || 2 * rem > resident) return r;
  const std::int64_t want = std::min({resident / rem, kMaxTailSplit, k_tiles / kMinTailKTiles});
  if (want < 2) return r;
  const std::int64_t kts = ceil_div(k_tiles, want), parts = ceil_div(k_tiles, kts);  // no empty part
  if (parts < 2) return r;
  r.tail_items = static_cast<int>(rem);
  r.tail_split = static_cast<int>(parts);
  r.tail_kts = kts;
  return r;
}

PrefillPersistent prefill_plan_persistent(const TcWeights& w, const PrefillPlan& plan, std::int64_t m, const void* y, std::int64_t y_stride) {
  std::int64_t kts = 0;
  const std::int64_t split = normalize_split(w.k_pad / 64, plan.split, &kts);
  const bool epi16 = resolve_switch(-1, "the stmatrix epilogue", "W4A16_PREFILL_EPI16");
  return persistent_launch(prefill_config(plan.config), entry(w, plan), split, epi16, w.n, 0, w.n_pad, m, w.k_pad / 64, y, y_stride);
}

void prefill_run_plan(const TcWeights& w, const PrefillPlan& plan, const void* x, std::int64_t m, std::int64_t x_stride,
                      void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  validate(w, x, m, x_stride, y, y_stride);
  if (m == 0) return;
  check_plan(w, plan, m, workspace, workspace_bytes);
  const bool pdl = resolve_pdl(plan.pdl) && code_arch(device_capability()) == 90;  // sm_80 code has no griddepcontrol
  auto* ws = static_cast<unsigned char*>(workspace);
  std::int64_t xk_stride = 0;
  const void* xk = gather_x(w, x, m, x_stride, &ws, &xk_stride, pdl, stream);
  launch_rows(w, plan, xk, xk_stride, m, y, y_stride, ws, 0, w.n_pad, pdl, stream);
}

void prefill_run_row_split(const TcWeights& w, const PrefillRowSplit& s, const void* x, std::int64_t m, std::int64_t x_stride,
                           void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  const std::int64_t head_bn = prefill_config(s.head_plan.config).bn(), tail_bn = prefill_config(s.tail_plan.config).bn();
  if (s.rows <= 0 || s.rows >= w.n_pad || s.rows % head_bn != 0 || s.rows % tail_bn != 0)
    fail(ErrorCode::invalid_argument, "split.rows",
         "a multiple of both tiles' rows (" + std::to_string(head_bn) + ", " + std::to_string(tail_bn) + ") in 1.." +
             std::to_string(w.n_pad - 1) + " (N_pad)",
         std::to_string(s.rows));
  validate(w, x, m, x_stride, y, y_stride);
  if (m == 0) return;
  check_plan(w, s.head_plan, m, workspace, workspace_bytes);
  check_plan(w, s.tail_plan, m, workspace, workspace_bytes);
  // One gather for both parts; the tail's kernels wait (PDL) for the head's last kernel before they write the
  // workspace's partials (each part needs no more than a whole call's: prefill_plan_workspace_bytes).
  const bool pdl = resolve_pdl(s.head_plan.pdl) && code_arch(device_capability()) == 90;
  auto* ws = static_cast<unsigned char*>(workspace);
  std::int64_t xk_stride = 0;
  const void* xk = gather_x(w, x, m, x_stride, &ws, &xk_stride, pdl, stream);
  launch_rows(w, s.head_plan, xk, xk_stride, m, y, y_stride, ws, 0, s.rows, pdl, stream);
  launch_rows(w, s.tail_plan, xk, xk_stride, m, y, y_stride, ws, s.rows, w.n_pad, pdl, stream);
}

void prefill_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                 void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  validate(w, x, m, x_stride, y, y_stride);
  if (m == 0) return;
  const int cap = device_capability();
  if (!prefill_supported(cap))
    fail(ErrorCode::unsupported, "device", "capability 90 (sm_90a build) or >= 80 (sm_80 build)", std::to_string(cap));
  const int sms = device_sm_count();
  if (const PrefillRowSplit rs = prefill_row_split(w.n, w.k, m, cap, sms); rs.rows > 0) {
    prefill_run_row_split(w, rs, x, m, x_stride, y, y_stride, workspace, workspace_bytes, stream);
    return;
  }
  const PrefillTokenSplit ts = prefill_token_split(w.n, w.k, m, cap, sms);
  if (ts.head == 0) {
    prefill_run_plan(w, prefill_plan(w.n, w.k, m, cap, sms), x, m, x_stride, y, y_stride, workspace, workspace_bytes, stream);
    return;
  }
  prefill_run_token_split(w, ts, x, m, x_stride, y, y_stride, workspace, workspace_bytes, stream);
}

void prefill_run_token_split(const TcWeights& w, const PrefillTokenSplit& s, const void* x, std::int64_t m, std::int64_t x_stride,
                             void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (s.head <= 0 || s.head >= m)
    fail(ErrorCode::invalid_argument, "split.head", "1.." + std::to_string(m - 1) + " (tokens of the first call, M = " + std::to_string(m) + ")",
         std::to_string(s.head));
  validate(w, x, m, x_stride, y, y_stride);
  // Two calls in stream order, sharing the workspace: every kernel of the second waits (PDL) for the
  // first's last kernel before it writes, and each part needs no more than M's (prefill_workspace_bytes).
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(w.act_dtype));
  prefill_run_plan(w, s.head_plan, x, s.head, x_stride, y, y_stride, workspace, workspace_bytes, stream);
  prefill_run_plan(w, s.tail_plan, static_cast<const unsigned char*>(x) + s.head * x_stride * es, m - s.head, x_stride,
                   static_cast<unsigned char*>(y) + s.head * y_stride * es, y_stride, workspace, workspace_bytes, stream);
}

std::string prefill_grouped_refusal(int config, std::int64_t n, std::int64_t silu_inter) {
  if (config < 0 || config >= prefill_config_count()) return "config " + std::to_string(config) + " does not exist";
  const PrefillConfig& c = prefill_config(config);
  if (c.path != PrefillPath::wgmma || !is_tma_config(c) || c.sched == 0)
    return c.name() + " is not an early-issue TMA config (the grouped mode offsets the W bases those make once)";
  if (c.bn() % 128 != 0) return c.name() + ": an odd number of 64-row blocks (gate / up halves)";
  if (n % 64 != 0) return "N = " + std::to_string(n) + " is not a multiple of 64";
  if (silu_inter > 0) {
    if (n != 2 * silu_inter) return "N = " + std::to_string(n) + " is not 2 x silu_inter = " + std::to_string(2 * silu_inter);
    if (silu_inter % (c.bn() / 2) != 0)
      return "I = " + std::to_string(silu_inter) + " is not a multiple of " + std::to_string(c.bn() / 2) + " (half of " + c.name() + "'s rows)";
  }
  return "";
}

bool prefill_grouped_supported(int capability) { return sm90a_code(capability); }

void prefill_run_grouped(const PrefillGrouped& g, cudaStream_t stream) {
  if (const std::string why = prefill_grouped_refusal(g.config, g.n, g.silu_inter); !why.empty())
    fail(ErrorCode::unsupported, "grouped prefill config", "an early-issue TMA config whose tile fits the layer", why);
  const PrefillConfig& cfg = prefill_config(g.config);
  // The arguments first (host checks, no device needed), then the device.
  if (g.k % 64 != 0) fail(ErrorCode::unsupported, "k", "a multiple of 64", std::to_string(g.k));
  if (g.block_row == nullptr ? g.rows <= 0 || g.rows % cfg.bm != 0 : g.rows < cfg.bm || g.rows % 64 != 0)
    fail(ErrorCode::invalid_argument, "rows",
         g.block_row == nullptr ? "a positive multiple of the tile's " + std::to_string(cfg.bm) + " tokens"
                                : ">= " + std::to_string(cfg.bm) + " and a multiple of 64 (a block list)",
         std::to_string(g.rows));
  const std::int64_t blocks = g.blocks > 0 ? g.blocks : g.rows / cfg.bm;
  if (g.block_row != nullptr && g.blocks <= 0) fail(ErrorCode::invalid_argument, "blocks", "> 0 with a block list", std::to_string(g.blocks));
  if (blocks > 65535) fail(ErrorCode::unsupported, "m blocks", "<= 65535", std::to_string(blocks));
  if (g.block_expert == nullptr) fail(ErrorCode::invalid_argument, "block_expert", "a device array of rows / BM experts", "null");
  if (g.zeros_present != (g.zeros != nullptr))
    fail(ErrorCode::invalid_argument, "zeros", g.zeros_present ? "zero points (uint4)" : "null (uint4b8)", g.zeros ? "a pointer" : "null");
  const bool silu = g.silu_inter > 0;
  if (silu ? g.y == nullptr : (g.row_map == nullptr || g.rows_out == nullptr))
    fail(ErrorCode::invalid_argument, silu ? "y" : "row_map / rows_out", "device pointers", "null");
  if (silu && reinterpret_cast<std::uintptr_t>(g.y) % 8 != 0)
    fail(ErrorCode::alignment, "y", "8-byte aligned", "address % 8 = " + std::to_string(reinterpret_cast<std::uintptr_t>(g.y) % 8));
  if (!silu && reinterpret_cast<std::uintptr_t>(g.rows_out) % 8 != 0)
    fail(ErrorCode::alignment, "rows_out", "8-byte aligned", "address % 8 = " + std::to_string(reinterpret_cast<std::uintptr_t>(g.rows_out) % 8));
  for (const std::size_t b : {g.expert_qweight_bytes, g.expert_scales_bytes, g.expert_zeros_bytes})
    if (b % 16 != 0) fail(ErrorCode::alignment, "expert stride", "a multiple of 16 bytes", std::to_string(b));
  if (g.group_size != kChannelwise && g.group_size <= 0)
    fail(ErrorCode::invalid_argument, "group_size", "32..256 or channelwise", std::to_string(g.group_size));
  const std::int64_t groups = g.group_size == kChannelwise ? 1 : ceil_div(g.k, g.group_size);
  const std::int64_t group_len = g.group_size == kChannelwise ? g.k : g.group_size;
  const int group_shift = group_shift_of(groups, group_len, g.group_size, "group_size");
  const int cap = device_capability();
  if (!prefill_grouped_supported(cap) || !config_runs_on(cfg, cap))
    fail(ErrorCode::unsupported, "grouped prefill", "capability 90 with the sm_90a build", std::to_string(cap));

  PrefillPlan plan;
  plan.config = g.config;
  const KernelEntry& e = entry(g.act_dtype, g.zeros_present, groups, group_len, plan);

  KernelParams p{};
  p.qweight = static_cast<const uint4*>(g.qweight);
  p.scales = static_cast<const std::uint32_t*>(g.scales);
  p.zeros = g.zeros;
  p.x = g.x;
  p.y = g.y;
  p.m = g.rows;
  p.n = g.n;
  p.k = g.k;
  p.n_pad = g.n;
  p.k_tiles = g.k / 64;
  p.x_stride = g.k;
  p.y_stride = g.silu_inter;
  p.group_len = group_len;
  p.groups = groups;
  p.k_tiles_per_split = p.k_tiles;
  p.split = 1;
  p.group_shift = group_shift;
  p.tail_box_rows = cfg.bm;
  p.block_expert = g.block_expert;
  p.block_row = g.block_row;
  p.expert_qw = static_cast<std::int64_t>(g.expert_qweight_bytes / 16);
  p.expert_sc = static_cast<std::int64_t>(g.expert_scales_bytes / 4);
  p.expert_z = static_cast<std::int64_t>(g.expert_zeros_bytes);
  p.silu_inter = g.silu_inter;
  p.row_map = g.row_map;
  p.rows_out = g.rows_out;
  p.row_map_limit = g.row_map_limit;

  ensure_smem_attr(e);
  const std::int64_t n_tiles = silu ? g.silu_inter / (cfg.bn() / 2) : ceil_div(g.n, cfg.bn());
  const CUtensorMap tmap = make_x_tensor_map(g.x, g.act_dtype, g.rows, g.k, g.k, cfg.bm);
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(static_cast<unsigned>(n_tiles), static_cast<unsigned>(blocks), 1);
  lc.blockDim = dim3(static_cast<unsigned>(cfg.threads()));
  lc.dynamicSmemBytes = static_cast<std::size_t>(e.smem_bytes);
  lc.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  lc.attrs = attr;
  lc.numAttrs = g.pdl && stream != nullptr && code_arch(cap) == 90 ? 1 : 0;
  W4A16_CUDA_TRY(cudaLaunchKernelEx(&lc, e.fn, p, tmap, tmap, tmap));
  W4A16_CUDA_TRY(cudaGetLastError());
}

}  // namespace w4a16::kernels::cuda
