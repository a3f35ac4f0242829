// Probe: does cp.async.mbarrier.arrive.noinc stall the issuing thread until its prior cp.async land?
// One warp; per iteration each lane issues one 16-byte cp.async from a fresh global address (cold L2
// lines of a 1 GB buffer), then (mode 1) an arrive.noinc on an mbarrier, (mode 0) nothing,
// (mode 2) commit_group. clock64 per iteration, averaged; lane 0 prints.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned sa(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
template <int MODE>
__global__ void probe(const char* g, long long stride, int iters, long long* out) {
  __shared__ __align__(16) char buf[32 * 16];
  __shared__ __align__(8) unsigned long long bar;
  const int lane = threadIdx.x;
  if (lane == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(sa(&bar)), "r"((1 << 20) - 1));
  __syncwarp();
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    const char* src = g + (static_cast<long long>(i) * stride + lane * 16);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa(buf + lane * 16)), "l"(src) : "memory");
    if (MODE == 1) asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(sa(&bar)) : "memory");
    if (MODE == 2) asm volatile("cp.async.commit_group;" ::: "memory");
  }
  long long t1 = clock64();
  asm volatile("cp.async.wait_all;" ::: "memory");
  long long t2 = clock64();
  if (lane == 0) { out[0] = t1 - t0; out[1] = t2 - t0; }
}
int main() {
  const size_t bytes = size_t(1) << 30;
  char* g; cudaMalloc(&g, bytes); cudaMemset(g, 1, bytes);
  long long* out; cudaMallocManaged(&out, 16);
  const int iters = 2000; const long long stride = 4096 * 16;  // 64 KB apart: fresh lines
  for (int rep = 0; rep < 2; ++rep) {
    probe<0><<<1, 32>>>(g, stride, iters, out); cudaDeviceSynchronize();
    printf("mode 0 (cp.async only):          issue %.1f cycles/iter, all landed %.1f\n", double(out[0]) / iters, double(out[1]) / iters);
    probe<1><<<1, 32>>>(g, stride, iters, out); cudaDeviceSynchronize();
    printf("mode 1 (+ arrive.noinc):         issue %.1f cycles/iter, all landed %.1f\n", double(out[0]) / iters, double(out[1]) / iters);
    probe<2><<<1, 32>>>(g, stride, iters, out); cudaDeviceSynchronize();
    printf("mode 2 (+ commit_group):         issue %.1f cycles/iter, all landed %.1f\n", double(out[0]) / iters, double(out[1]) / iters);
  }
  printf("err: %s\n", cudaGetErrorString(cudaGetLastError()));
}
