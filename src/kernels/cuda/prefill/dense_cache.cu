// Contract: the opt-in dequantized prefill cache (issue 5 item 4).
//   prepare: TcWeights (layout cuda.tc16x64.v1) -> Wd (N, K) act dtype, original channel order
//            (Wd[n, perm[k']] = w(n, k'), so x needs no gather), dequantized on the GPU with the
//            same rounding as the tensor-core kernel: (q - z) * s rounded once to the act dtype.
//            Memory cost: N * K * 2 bytes (DenseCache::bytes), on top of the packed weights.
//   run:     y (M, N) = x (M, K) . Wd^T + bias by cublasGemmEx (fp32 accumulation); bias is
//            broadcast into y first and the GEMM runs with beta = 1 (one rounding).
//            The cuBLAS workspace is the caller's (cublasSetWorkspace), the handle is made at
//            prepare: no allocation in run, capture-safe.
// The transient path (dense_transient_*, the hybrid's third path): the same dequantization per
// call into the caller's workspace by dequant_rows_kernel (one warp per 16 x 64 tile, the tile
// transposed through shared memory so that every lane stores 16-byte pieces of whole rows), then the
// same cuBLAS call (gemm_dense).
// Checked by tests/gpu/prefill (DenseCache.* tests) and tests/gpu/registry (the hybrid's dense path).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {

namespace {

void cublas_try(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(ErrorCode::cuda_error, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

template <class T> __device__ __forceinline__ T from_f(float f);
template <> __device__ __forceinline__ half from_f<half>(float f) { return __float2half_rn(f); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
template <class T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<half>(half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// One thread per layout word (nt, kt, lane, j) = 8 weights; decodes docs/LAYOUT.md literally.
template <class T>
__global__ void dequant_kernel(const std::int32_t* __restrict__ qweight, const T* __restrict__ scales,
                               const std::uint8_t* __restrict__ zeros, const std::int32_t* __restrict__ perm, T* __restrict__ wd,
                               std::int64_t n, std::int64_t k, std::int64_t n_pad, std::int64_t k_tiles, std::int64_t group_len,
                               std::int64_t groups) {
  const std::int64_t words = (n_pad / 16) * k_tiles * 128;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i & 3), lane = static_cast<int>((i >> 2) & 31);
    const std::int64_t tile = i >> 7, nt = tile / k_tiles, kt = tile % k_tiles;
    const int gid = lane >> 2, t = lane & 3;
    const std::uint32_t word = static_cast<std::uint32_t>(qweight[i]);
#pragma unroll
    for (int nib = 0; nib < 8; ++nib) {
      const int e = nib < 4 ? 2 * nib : 2 * (nib - 4) + 1;  // nibbles hold [a0,a2,a4,a6,a1,a3,a5,a7]
      const int hi_row = (e >> 1) & 1, hi_k = e >> 2, odd_k = e & 1;
      const std::int64_t row = nt * 16 + gid + 8 * hi_row;
      const std::int64_t kk = kt * 64 + 16 * j + 2 * t + odd_k + 8 * hi_k;
      if (row >= n || kk >= k) continue;
      const std::int64_t g = kk / group_len < groups ? kk / group_len : groups - 1;
      const int q = static_cast<int>((word >> (4 * nib)) & 15u);
      const int z = zeros ? static_cast<int>((zeros[(g * (n_pad / 16) + nt) * 8 + gid] >> (4 * hi_row)) & 15u) : 8;
      const float s = to_f<T>(scales[g * n_pad + 16 * nt + 2 * gid + hi_row]);
      const std::int64_t col = perm ? perm[kk] : kk;
      wd[row * k + col] = from_f<T>(static_cast<float>(q - z) * s);
    }
  }
}

// One warp per tile (16 rows x 64 k of docs/LAYOUT.md) per step: the lane's 4 words dequantized as
// (q - z) * s rounded once (dequant_kernel's values), written into the warp's 16 x 64 tile in shared
// memory (row stride 144 bytes: the 8 rows of a half2 store fall in 8 bank quads), then each lane
// stores 4 of the tile's 128 16-byte pieces (8 lanes per 128-byte row piece: coalesced). Rows past N
// and columns past K (K % 8 == 0: a piece lies wholly inside or outside) are not written. No act-order.
constexpr int kDqWarps = 8;
constexpr int kDqRowBytes = 144;
template <class T, bool ZEROS>
__global__ void __launch_bounds__(kDqWarps * 32) dequant_rows_kernel(const uint4* __restrict__ qweight, const std::uint32_t* __restrict__ scales,
                                    const std::uint8_t* __restrict__ zeros, T* __restrict__ wd, std::int64_t n,
                                    std::int64_t k, std::int64_t n_pad, std::int64_t k_tiles, int group_shift,
                                    std::int64_t groups) {
  __shared__ __align__(16) unsigned char tile_sh[kDqWarps][16 * kDqRowBytes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, t = lane % 4;
  unsigned char* sh = tile_sh[warp];
  const std::int64_t tiles = (n_pad / 16) * k_tiles;
  for (std::int64_t tile = blockIdx.x * static_cast<std::int64_t>(kDqWarps) + warp; tile < tiles;
       tile += static_cast<std::int64_t>(gridDim.x) * kDqWarps) {
    const std::int64_t nt = tile / k_tiles, kt = tile % k_tiles;
    const uint4 q4 = qweight[tile * 32 + lane];
    const std::uint32_t words[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // group of sub-tile j (g >= 32: a sub-tile lies in one group; channelwise: group_shift 62)
      std::int64_t g = (kt * 64 + 16 * j) >> group_shift;
      if (g >= groups) g = groups - 1;
      const std::uint32_t sp = scales[g * (n_pad / 2) + 8 * nt + gid];  // (s[gid], s[gid + 8])
      const std::uint16_t sb[2] = {static_cast<std::uint16_t>(sp & 0xffffu), static_cast<std::uint16_t>(sp >> 16)};
      int z[2] = {8, 8};
      if constexpr (ZEROS) {
        const int zb = zeros[(g * (n_pad / 16) + nt) * 8 + gid];
        z[0] = zb & 15;
        z[1] = zb >> 4;
      }
      // nibble i holds element e = [a0,a2,a4,a6,a1,a3,a5,a7][i]; e: row gid + 8 ((e >> 1) & 1), k 2t + (e & 1) + 8 (e >> 2)
#pragma unroll
      for (int pair = 0; pair < 4; ++pair) {  // pairs (a0,a1) (a2,a3) (a4,a5) (a6,a7): one row, two adjacent k
        const int hi_row = pair & 1, hi_k = pair >> 1;
        const int e0 = 2 * pair, nib0 = e0 / 2, nib1 = 4 + e0 / 2;  // even element in nibbles 0..3, odd in 4..7
        const int q0 = static_cast<int>((words[j] >> (4 * nib0)) & 15u), q1 = static_cast<int>((words[j] >> (4 * nib1)) & 15u);
        const float s = to_f<T>(*reinterpret_cast<const T*>(&sb[hi_row]));
        T v[2] = {from_f<T>(static_cast<float>(q0 - z[hi_row]) * s), from_f<T>(static_cast<float>(q1 - z[hi_row]) * s)};
        const int row = gid + 8 * hi_row, col = 16 * j + 2 * t + 8 * hi_k;
        *reinterpret_cast<std::uint32_t*>(sh + row * kDqRowBytes + col * 2) = *reinterpret_cast<const std::uint32_t*>(v);
      }
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = lane + 32 * i, row = c / 8, piece = c % 8;
      const std::int64_t grow = nt * 16 + row, gcol = kt * 64 + piece * 8;
      if (grow < n && gcol < k)
        *reinterpret_cast<uint4*>(wd + grow * k + gcol) = *reinterpret_cast<const uint4*>(sh + row * kDqRowBytes + piece * 16);
    }
    __syncwarp();  // the tile is read before the next one overwrites it
  }
}

template <class T>
__global__ void bias_fill_kernel(const T* __restrict__ bias, T* __restrict__ y, std::int64_t y_stride, std::int64_t m, std::int64_t n) {
  const std::int64_t total = m * n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[(i / n) * y_stride + i % n] = bias[i % n];
}

int grid_for(std::int64_t total) {
  std::int64_t b = (total + 255) / 256;
  return static_cast<int>(b < 1 ? 1 : (b > 132 * 32 ? 132 * 32 : b));
}

// y (M, N) = x (M, K) . wd^T (+ bias of w, broadcast into y first, beta = 1: one rounding) by
// cublasGemmEx with fp32 accumulation on `stream`, cuBLAS's workspace the caller's, the handle's lock held.
void gemm_dense(const CublasHandle& handle, const void* wd, const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride,
                void* y, std::int64_t y_stride, void* cublas_ws, std::size_t cublas_ws_bytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(handle.mu);
  auto h = static_cast<cublasHandle_t>(handle.h);
  cublas_try(cublasSetStream(h, stream), "cublasSetStream");
  cublas_try(cublasSetWorkspace(h, cublas_ws, cublas_ws_bytes), "cublasSetWorkspace");
  float beta = 0.f;
  if (w.has_bias && w.bias) {
    if (w.act_dtype == DType::bf16)
      bias_fill_kernel<__nv_bfloat16><<<grid_for(m * w.n), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(w.bias),
                                                                             static_cast<__nv_bfloat16*>(y), y_stride, m, w.n);
    else
      bias_fill_kernel<half><<<grid_for(m * w.n), 256, 0, stream>>>(static_cast<const half*>(w.bias), static_cast<half*>(y), y_stride, m, w.n);
    W4A16_CUDA_TRY(cudaGetLastError());
    beta = 1.f;
  }
  const float alpha = 1.f;
  const cudaDataType_t dt = w.act_dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  // Column-major view: y^T (N x M, ld y_stride) = op(Wd) (N x K; Wd is K x N column-major, ld K, op = T) . x^T (K x M, ld x_stride).
  cublas_try(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.n), static_cast<int>(m), static_cast<int>(w.k), &alpha,
                          wd, dt, static_cast<int>(w.k), x, dt, static_cast<int>(x_stride), &beta, y, dt, static_cast<int>(y_stride),
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

}  // namespace

DenseCache::~DenseCache() {
  if (w) cudaFree(w);
}

std::unique_ptr<DenseCache> dense_cache_prepare(const TcWeights& w, cudaStream_t stream) {
  if (w.layout == nullptr || std::string(w.layout) != kTcLayoutTag)
    fail(ErrorCode::layout_mismatch, "w", std::string("prepared weights in layout ") + kTcLayoutTag, w.layout ? w.layout : "(null)");
  if (!is_activation_dtype(w.act_dtype))
    fail(ErrorCode::dtype_mismatch, "w.act_dtype", "float16 or bfloat16", std::string(dtype_name(w.act_dtype)));
  auto c = std::make_unique<DenseCache>();
  c->n = w.n;
  c->k = w.k;
  c->dtype = w.act_dtype;
  c->bytes = static_cast<std::size_t>(w.n * w.k) * 2;
  W4A16_CUDA_TRY(cudaMalloc(&c->w, c->bytes));
  const std::int64_t words = (w.n_pad / 16) * (w.k_pad / 64) * 128;
  if (w.act_dtype == DType::bf16)
    dequant_kernel<__nv_bfloat16><<<grid_for(words), 256, 0, stream>>>(
        w.qweight, static_cast<const __nv_bfloat16*>(w.scales), w.zeros, w.perm, static_cast<__nv_bfloat16*>(c->w), w.n, w.k,
        w.n_pad, w.k_pad / 64, w.group_len(), w.groups);
  else
    dequant_kernel<half><<<grid_for(words), 256, 0, stream>>>(w.qweight, static_cast<const half*>(w.scales), w.zeros, w.perm,
                                                              static_cast<half*>(c->w), w.n, w.k, w.n_pad, w.k_pad / 64,
                                                              w.group_len(), w.groups);
  W4A16_CUDA_TRY(cudaGetLastError());
  W4A16_CUDA_TRY(cudaStreamSynchronize(stream));
  c->cublas = cublas_handle_create();
  return c;
}

std::size_t dense_cache_workspace_bytes(std::int64_t max_m) {
  (void)max_m;
  return std::size_t{32} << 20;  // cuBLAS's recommended workspace on Hopper (32 MiB), any M
}

void dense_cache_run(const DenseCache& c, const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y,
                     std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (c.w == nullptr || c.cublas == nullptr) fail(ErrorCode::invalid_argument, "c", "a prepared DenseCache", "empty");
  if (c.n != w.n || c.k != w.k || c.dtype != w.act_dtype)
    fail(ErrorCode::shape_mismatch, "w", "the weights the cache was prepared from (N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + ")",
         "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k));
  if (m < 0) fail(ErrorCode::invalid_argument, "m", "M >= 0", std::to_string(m));
  if (m == 0) return;
  if (x == nullptr || y == nullptr) fail(ErrorCode::invalid_argument, "x, y", "device pointers", "null");
  if (x_stride < c.k) fail(ErrorCode::shape_mismatch, "x_stride", ">= K = " + std::to_string(c.k), std::to_string(x_stride));
  if (y_stride < c.n) fail(ErrorCode::shape_mismatch, "y_stride", ">= N = " + std::to_string(c.n), std::to_string(y_stride));
  if (workspace == nullptr || workspace_bytes < dense_cache_workspace_bytes(m))
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(dense_cache_workspace_bytes(m)) + " bytes",
         std::to_string(workspace ? workspace_bytes : 0) + " bytes");
  gemm_dense(*c.cublas, c.w, w, x, m, x_stride, y, y_stride, workspace, workspace_bytes, stream);
}

// ---- The transient dense path ----
CublasHandle::~CublasHandle() {
  if (h) cublasDestroy(static_cast<cublasHandle_t>(h));
}

std::unique_ptr<CublasHandle> cublas_handle_create() {
  auto c = std::make_unique<CublasHandle>();
  cublasHandle_t h = nullptr;
  cublas_try(cublasCreate(&h), "cublasCreate");
  c->h = h;
  return c;
}

std::string dense_transient_refusal(bool act_order) {
  return act_order ? "act-order (the transient dequantization writes W in layout order; x would need the gather)" : "";
}

namespace {
std::size_t dense_bytes_aligned(std::int64_t n, std::int64_t k) { return (static_cast<std::size_t>(n * k) * 2 + 255) / 256 * 256; }
}  // namespace

std::size_t dense_transient_workspace_bytes(std::int64_t n, std::int64_t k) {
  return dense_bytes_aligned(n, k) + dense_cache_workspace_bytes(0);
}

void dense_transient_run(const TcWeights& w, const CublasHandle& h, const void* x, std::int64_t m, std::int64_t x_stride, void* y,
                         std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (w.layout == nullptr || std::string(w.layout) != kTcLayoutTag)
    fail(ErrorCode::layout_mismatch, "w", std::string("prepared weights in layout ") + kTcLayoutTag, w.layout ? w.layout : "(null)");
  if (h.h == nullptr) fail(ErrorCode::invalid_argument, "h", "a cuBLAS handle from cublas_handle_create", "null");
  if (std::string why = dense_transient_refusal(w.act_order); !why.empty())
    fail(ErrorCode::unsupported, "w", "weights without act-order", why);
  if (m < 0) fail(ErrorCode::invalid_argument, "m", "M >= 0", std::to_string(m));
  if (m == 0) return;
  if (x == nullptr || y == nullptr) fail(ErrorCode::invalid_argument, "x, y", "device pointers", "null");
  if (x_stride < w.k) fail(ErrorCode::shape_mismatch, "x_stride", ">= K = " + std::to_string(w.k), std::to_string(x_stride));
  if (y_stride < w.n) fail(ErrorCode::shape_mismatch, "y_stride", ">= N = " + std::to_string(w.n), std::to_string(y_stride));
  const std::size_t need = dense_transient_workspace_bytes(w.n, w.k);
  if (workspace == nullptr || workspace_bytes < need)
    fail(ErrorCode::invalid_argument, "workspace", ">= " + std::to_string(need) + " bytes", std::to_string(workspace ? workspace_bytes : 0) + " bytes");
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0)
    fail(ErrorCode::alignment, "workspace", "256-byte aligned", std::to_string(reinterpret_cast<std::uintptr_t>(workspace) % 256) + " bytes past");
  const std::int64_t k_tiles = w.k_pad / 64, tiles = (w.n_pad / 16) * k_tiles;
  const std::int64_t gl = w.group_len();
  const int group_shift = w.group_size == kChannelwise ? 62 : __builtin_ctzll(static_cast<unsigned long long>(gl));
  const int blocks = static_cast<int>(std::min<std::int64_t>((tiles + kDqWarps - 1) / kDqWarps, 132 * 16));
  const auto* q = reinterpret_cast<const uint4*>(w.qweight);
  const auto* sc = static_cast<const std::uint32_t*>(w.scales);
  const bool bf = w.act_dtype == DType::bf16, z = w.zeros != nullptr;
#define W4A16_DQ(T, ZZ) dequant_rows_kernel<T, ZZ><<<blocks, kDqWarps * 32, 0, stream>>>(q, sc, w.zeros, static_cast<T*>(workspace), \
                                                                                       w.n, w.k, w.n_pad, k_tiles, group_shift, w.groups)
  if (bf && z) W4A16_DQ(__nv_bfloat16, true);
  else if (bf) W4A16_DQ(__nv_bfloat16, false);
  else if (z) W4A16_DQ(half, true);
  else W4A16_DQ(half, false);
#undef W4A16_DQ
  W4A16_CUDA_TRY(cudaGetLastError());
  const std::size_t off = dense_bytes_aligned(w.n, w.k);
  gemm_dense(h, workspace, w, x, m, x_stride, y, y_stride, static_cast<char*>(workspace) + off, workspace_bytes - off, stream);
}

}  // namespace w4a16::kernels::cuda
