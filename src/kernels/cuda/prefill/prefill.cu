// Plan (tile config + split-K heuristic), validation and launch of the prefill kernels, plus
// the two small kernels around them: the act-order gather of x and the split-K reduction.
// Contract of the main kernel: prefill_kernel.cuh. Checked by tests/gpu/prefill.
//
// Tile heuristic (prefill_plan): a latency model measured on the H200. The kernels run far from
// both roofs (docs/benchmarks/prefill.md): one 64-wide k tile costs a CTA about t_iter[config]
// whatever M (<= bm) and K, so for every config of the device's path and every split
// s = 1..8 (s * round_up(M, bm) <= kPrefillMaxSplitRows):
//   ctas = ceil(N_pad / bn) * ceil(M / bm) * s,   kts = ceil(K_pad / 64 / s)
//   est  = ceil(ctas / (sms * occ)) * kts * t_iter      (waves of resident CTAs)
//        + [s > 1] (4 us + 2 * s * M * N * 4 B / 2 TB/s)  (partials + the reduction launch)
// and the smallest est wins (ties: the earlier config, the smaller split). t_iter and occ
// per config are in kIterUs / kOcc below, read off the 2026-12-02 sweep (bench/gpu/prefill_rows,
// tests/gpu/prefill/prefill_bench tune): e.g. gate_up M=64 wgmma_bm64_bn128_s5_ov split 1,
// 224 CTAs = 2 waves x 64 tiles in 71 us -> 0.55 us per tile.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "prefill/prefill_launch.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

namespace {

using prefill_detail::KernelEntry;
using prefill_detail::KernelParams;

struct ConfigModel {
  PrefillConfig cfg;
  int occ;     // CTAs resident per SM (registers / shared memory; estimated, printed by the tests)
  double eff;  // fraction of tensor-core peak on large problems
};

#define W4A16_MODEL(WGMMA, BM, WG, MB, ST, OV, MINB) \
  PrefillConfig{(WGMMA) ? PrefillPath::wgmma : PrefillPath::mma, BM, WG, MB, ST, OV, MINB},
const PrefillConfig kConfigs[] = {W4A16_PREFILL_CONFIGS(W4A16_MODEL)};
#undef W4A16_MODEL
static_assert(sizeof(kConfigs) / sizeof(kConfigs[0]) == prefill_detail::kNumConfigs, "config table out of sync");

// Per config index (order of W4A16_PREFILL_CONFIGS): CTAs resident per SM (ptxas registers:
// 230/166/140 regs x 256 threads -> 1; 158 x 128 -> 3) and microseconds per 64-wide k tile per
// CTA with that many resident (measured; the mma entries are estimates: not measured on sm_80).
// Configs 10 and 11 (register-capped for 2 / 4 CTAs per SM) are not measured yet: their entries
// are set so that they are never chosen by default until docs/benchmarks/prefill.md has them.
constexpr int kOcc[prefill_detail::kNumConfigs] = {1, 1, 1, 3, 1, 1, 1, 1, 1, 3, 2, 4};
constexpr double kIterUs[prefill_detail::kNumConfigs] = {1.40, 0.99, 0.79, 1.40, 3.0, 2.0, 1.38, 0.97, 0.55, 1.30, 1e9, 1e9};
constexpr double kReduceLaunchUs = 4.0;   // split-K: the reduction kernel and its launch gap
constexpr double kPartialBw = 2.0e12;     // B/s for the fp32 partials (written + read, mostly L2)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

bool has_sm90a() {
#ifdef W4A16_PREFILL_HAS_SM90A
  return true;
#else
  return false;
#endif
}
bool has_sm80() {
#ifdef W4A16_PREFILL_HAS_SM80
  return true;
#else
  return false;
#endif
}

PrefillPath path_for(int capability) { return capability == 90 && has_sm90a() ? PrefillPath::wgmma : PrefillPath::mma; }

bool config_runs_on(const PrefillConfig& c, int capability) {
  if (c.path == PrefillPath::wgmma) return capability == 90 && has_sm90a();
  // mma.sync kernels exist in the sm_90a cubin (capability 90) and the sm_80 cubin (80..89, 100+).
  return (capability == 90 && has_sm90a()) || (capability >= 80 && has_sm80());
}

std::int64_t normalize_split(std::int64_t k_tiles, std::int64_t split, std::int64_t* kts) {
  split = std::clamp<std::int64_t>(split, 1, std::max<std::int64_t>(1, k_tiles));
  *kts = ceil_div(k_tiles, split);
  return ceil_div(k_tiles, *kts);  // no empty split
}

std::size_t gather_bytes(bool act_order, std::int64_t m, std::int64_t k) {
  return act_order ? static_cast<std::size_t>(round_up(m * k * 2, 256)) : 0;
}

const KernelEntry& entry(const TcWeights& w, int config) {
  const bool zeros = w.scalar == ScalarType::uint4;
  const KernelEntry* t = w.act_dtype == DType::bf16 ? (zeros ? prefill_detail::kernels_bf16_zeros() : prefill_detail::kernels_bf16_sym())
                                                    : (zeros ? prefill_detail::kernels_f16_zeros() : prefill_detail::kernels_f16_sym());
  return t[config];
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

// x[:, perm] -> dst (M, K) contiguous.
template <class T>
__global__ void gather_kernel(const T* __restrict__ x, std::int64_t x_stride, const std::int32_t* __restrict__ perm,
                              T* __restrict__ dst, std::int64_t m, std::int64_t k) {
  const std::int64_t total = m * k;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / k, c = i % k;
    dst[i] = x[r * x_stride + perm[c]];
  }
}

// y[m, n] = sum over s in order of partial[s, m, n] + bias[n]: deterministic split-K reduction.
template <class T>
__global__ void reduce_kernel(const float* __restrict__ partial, int split, const T* __restrict__ bias, T* __restrict__ y,
                              std::int64_t y_stride, std::int64_t m, std::int64_t n) {
  const std::int64_t total = m * n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / n, c = i % n;
    float acc = 0.f;
    for (int s = 0; s < split; ++s) acc += partial[s * total + i];
    if (bias) acc += prefill_detail::Num<T>::to_float(bias[c]);
    y[r * y_stride + c] = prefill_detail::Num<T>::from_float(acc);
  }
}

int elementwise_grid(std::int64_t total) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(total, 256), 1, 132 * 16));
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
      fail(ErrorCode::alignment, "x", "16-byte aligned (cp.async 16-byte copies)",
           "address % 16 = " + std::to_string(reinterpret_cast<std::uintptr_t>(x) % 16));
    if (x_stride % 8 != 0)
      fail(ErrorCode::alignment, "x_stride", "a multiple of 8 elements (16-byte rows)", std::to_string(x_stride));
  } else if (reinterpret_cast<std::uintptr_t>(x) % 2 != 0) {
    fail(ErrorCode::alignment, "x", "2-byte aligned", "odd address");
  }
  if (reinterpret_cast<std::uintptr_t>(y) % 2 != 0) fail(ErrorCode::alignment, "y", "2-byte aligned", "odd address");
}

}  // namespace

std::string PrefillConfig::name() const {
  std::ostringstream s;
  s << (path == PrefillPath::wgmma ? "wgmma" : "mma") << "_bm" << bm << "_bn" << bn() << "_s" << stages << (overlap ? "_ov" : "") << (min_blocks > 1 ? "_occ" + std::to_string(min_blocks) : "");
  return s.str();
}

std::string PrefillPlan::describe() const {
  std::ostringstream s;
  s << (config >= 0 ? prefill_config(config).name() : std::string("none")) << " split=" << split
    << " k_tiles/split=" << k_tiles_per_split << " est=" << est_us << "us";
  return s.str();
}

int prefill_config_count() { return prefill_detail::kNumConfigs; }

const PrefillConfig& prefill_config(int i) {
  if (i < 0 || i >= prefill_detail::kNumConfigs)
    fail(ErrorCode::invalid_argument, "config", "0.." + std::to_string(prefill_detail::kNumConfigs - 1), std::to_string(i));
  return kConfigs[i];
}

bool prefill_supported(int capability) {
  return (capability == 90 && has_sm90a()) || (capability >= 80 && has_sm80());
}

PrefillPlan prefill_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count) {
  PrefillPlan best;
  best.est_us = std::numeric_limits<double>::infinity();
  const PrefillPath path = path_for(capability);
  const std::int64_t n_pad = round_up(n, 64), k_tiles = round_up(k, 64) / 64;
  const double sms = std::max(1, sm_count);
  for (int c = 0; c < prefill_detail::kNumConfigs; ++c) {
    const PrefillConfig& cfg = kConfigs[c];
    if (cfg.path != path) continue;
    const std::int64_t tiles_n = ceil_div(n_pad, cfg.bn()), tiles_m = ceil_div(std::max<std::int64_t>(m, 1), cfg.bm);
    for (std::int64_t s = 1; s <= kPrefillMaxSplit; ++s) {
      if (s > 1 && s * tiles_m * cfg.bm > kPrefillMaxSplitRows) break;
      std::int64_t kts = 0;
      const std::int64_t split = normalize_split(k_tiles, s, &kts);
      if (split != s) continue;  // the same as a smaller split
      const double ctas = static_cast<double>(tiles_n * tiles_m * split);
      const double waves = std::ceil(ctas / (sms * kOcc[c]));
      double est = waves * static_cast<double>(kts) * kIterUs[c];
      if (split > 1) est += kReduceLaunchUs + 2.0 * split * m * n * 4 / kPartialBw * 1e6;
      if (est < best.est_us * 0.999) {
        best.config = c;
        best.split = static_cast<int>(split);
        best.k_tiles_per_split = kts;
        best.est_us = est;
      }
    }
  }
  if (best.config < 0) fail(ErrorCode::internal, "prefill_plan: no configuration for capability " + std::to_string(capability));
  return best;
}

std::size_t prefill_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m) {
  if (max_m < 0) fail(ErrorCode::invalid_argument, "max_m", ">= 0", std::to_string(max_m));
  const std::int64_t split_rows = std::min<std::int64_t>(kPrefillMaxSplitRows, kPrefillMaxSplit * round_up(max_m, 64));
  return gather_bytes(act_order, max_m, k) + static_cast<std::size_t>(split_rows * n * 4);
}

std::size_t prefill_plan_workspace_bytes(const TcWeights& w, const PrefillPlan& plan, std::int64_t m) {
  std::int64_t kts = 0;
  const std::int64_t split = normalize_split(w.k_pad / 64, plan.split, &kts);
  return gather_bytes(w.act_order, m, w.k) + (split > 1 ? static_cast<std::size_t>(split * m * w.n * 4) : 0);
}

void prefill_run_plan(const TcWeights& w, const PrefillPlan& plan, const void* x, std::int64_t m, std::int64_t x_stride,
                      void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  validate(w, x, m, x_stride, y, y_stride);
  if (m == 0) return;
  const int cap = device_capability();
  const PrefillConfig& cfg = prefill_config(plan.config);
  if (!config_runs_on(cfg, cap))
    fail(ErrorCode::unsupported, "prefill config", "one this build runs on capability " + std::to_string(cap), cfg.name());
  std::int64_t kts = 0;
  const std::int64_t k_tiles = w.k_pad / 64;
  const std::int64_t split = normalize_split(k_tiles, plan.split, &kts);
  const std::size_t need = prefill_plan_workspace_bytes(w, plan, m);
  if (need > 0 && (workspace == nullptr || workspace_bytes < need))
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(need) + " bytes (prefill_workspace_bytes)",
         std::to_string(workspace == nullptr ? 0 : workspace_bytes) + " bytes");
  if (need > 0 && reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    fail(ErrorCode::alignment, "workspace", "256-byte aligned", "address % 256 = " + std::to_string(reinterpret_cast<std::uintptr_t>(workspace) % 256));

  auto* ws = static_cast<unsigned char*>(workspace);
  const void* xk = x;
  std::int64_t xk_stride = x_stride;
  if (w.act_order) {
    const std::int64_t total = m * w.k;
    if (w.act_dtype == DType::bf16)
      gather_kernel<__nv_bfloat16><<<elementwise_grid(total), 256, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(x), x_stride, w.perm, reinterpret_cast<__nv_bfloat16*>(ws), m, w.k);
    else
      gather_kernel<half><<<elementwise_grid(total), 256, 0, stream>>>(static_cast<const half*>(x), x_stride, w.perm,
                                                                        reinterpret_cast<half*>(ws), m, w.k);
    W4A16_CUDA_TRY(cudaGetLastError());
    xk = ws;
    xk_stride = w.k;
    ws += gather_bytes(true, m, w.k);
  }

  KernelParams p{};
  p.qweight = reinterpret_cast<const uint4*>(w.qweight);
  p.scales = static_cast<const std::uint32_t*>(w.scales);
  p.zeros = w.zeros;
  p.bias = w.bias;
  p.x = xk;
  p.y = y;
  p.partial = split > 1 ? reinterpret_cast<float*>(ws) : nullptr;
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

  const KernelEntry& e = entry(w, plan.config);
  ensure_smem_attr(e);
  const dim3 grid(static_cast<unsigned>(ceil_div(w.n_pad, cfg.bn())), static_cast<unsigned>(ceil_div(m, cfg.bm)), static_cast<unsigned>(split));
  if (grid.y > 65535) fail(ErrorCode::unsupported, "m", "<= " + std::to_string(65535LL * cfg.bm), std::to_string(m));
  e.fn<<<grid, cfg.threads(), e.smem_bytes, stream>>>(p);
  W4A16_CUDA_TRY(cudaGetLastError());

  if (split > 1) {
    const std::int64_t total = m * w.n;
    if (w.act_dtype == DType::bf16)
      reduce_kernel<__nv_bfloat16><<<elementwise_grid(total), 256, 0, stream>>>(
          p.partial, p.split, static_cast<const __nv_bfloat16*>(w.bias), static_cast<__nv_bfloat16*>(y), y_stride, m, w.n);
    else
      reduce_kernel<half><<<elementwise_grid(total), 256, 0, stream>>>(p.partial, p.split, static_cast<const half*>(w.bias),
                                                                       static_cast<half*>(y), y_stride, m, w.n);
    W4A16_CUDA_TRY(cudaGetLastError());
  }
}

void prefill_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                 void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  validate(w, x, m, x_stride, y, y_stride);
  if (m == 0) return;
  const int cap = device_capability();
  if (!prefill_supported(cap))
    fail(ErrorCode::unsupported, "device", "capability 90 (sm_90a build) or >= 80 (sm_80 build)", std::to_string(cap));
  const PrefillPlan plan = prefill_plan(w.n, w.k, m, cap, device_sm_count());
  prefill_run_plan(w, plan, x, m, x_stride, y, y_stride, workspace, workspace_bytes, stream);
}

}  // namespace w4a16::kernels::cuda
