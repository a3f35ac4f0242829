// Contract: the opt-in dequantized prefill cache (issue 5 item 4).
//   prepare: TcWeights (layout cuda.tc16x64.v1) -> Wd (N, K) act dtype, original channel order
//            (Wd[n, perm[k']] = w(n, k'), so x needs no gather), dequantized on the GPU with the
//            same rounding as the tensor-core kernel: (q - z) * s rounded once to the act dtype.
//            Memory cost: N * K * 2 bytes (DenseCache::bytes), on top of the packed weights.
//   run:     y (M, N) = x (M, K) . Wd^T + bias by cublasGemmEx (fp32 accumulation); bias is
//            broadcast into y first and the GEMM runs with beta = 1 (one rounding).
//            The cuBLAS workspace is the caller's (cublasSetWorkspace), the handle is made at
//            prepare: no allocation in run, capture-safe.
// Checked by tests/gpu/prefill (DenseCache.* tests).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

}  // namespace

DenseCache::~DenseCache() {
  if (cublas_handle) cublasDestroy(static_cast<cublasHandle_t>(cublas_handle));
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
  cublasHandle_t h = nullptr;
  cublas_try(cublasCreate(&h), "cublasCreate");
  c->cublas_handle = h;
  return c;
}

std::size_t dense_cache_workspace_bytes(std::int64_t max_m) {
  (void)max_m;
  return std::size_t{32} << 20;  // cuBLAS's recommended workspace on Hopper (32 MiB), any M
}

void dense_cache_run(const DenseCache& c, const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y,
                     std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (c.w == nullptr || c.cublas_handle == nullptr) fail(ErrorCode::invalid_argument, "c", "a prepared DenseCache", "empty");
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
  auto h = static_cast<cublasHandle_t>(c.cublas_handle);
  cublas_try(cublasSetStream(h, stream), "cublasSetStream");
  cublas_try(cublasSetWorkspace(h, workspace, workspace_bytes), "cublasSetWorkspace");
  float beta = 0.f;
  if (w.has_bias && w.bias) {
    if (c.dtype == DType::bf16)
      bias_fill_kernel<__nv_bfloat16><<<grid_for(m * c.n), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(w.bias),
                                                                             static_cast<__nv_bfloat16*>(y), y_stride, m, c.n);
    else
      bias_fill_kernel<half><<<grid_for(m * c.n), 256, 0, stream>>>(static_cast<const half*>(w.bias), static_cast<half*>(y), y_stride, m, c.n);
    W4A16_CUDA_TRY(cudaGetLastError());
    beta = 1.f;
  }
  const float alpha = 1.f;
  const cudaDataType_t dt = c.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  // Column-major view: y^T (N x M, ld y_stride) = Wd^T^T ... i.e. op(Wd) = T: (N x K) . x^T (K x M, ld x_stride).
  cublas_try(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(c.n), static_cast<int>(m), static_cast<int>(c.k), &alpha,
                          c.w, dt, static_cast<int>(c.k), x, dt, static_cast<int>(x_stride), &beta, y, dt, static_cast<int>(y_stride),
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

}  // namespace w4a16::kernels::cuda
