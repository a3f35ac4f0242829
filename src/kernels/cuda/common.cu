#include "common.cuh"

#include <array>
#include <atomic>

#include "w4a16/core/error.hpp"

#ifndef W4A16_CUDA_ARCH_LIST
#error "W4A16_CUDA_ARCH_LIST (the W4A16_CUDA_ARCHS list, comma-separated) must be defined by CMake"
#endif

namespace w4a16::kernels::cuda {

void throw_if_error(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    fail(ErrorCode::cuda_error, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

int device_capability(int device) {
  if (device < 0) W4A16_CUDA_TRY(cudaGetDevice(&device));
  int major = 0, minor = 0;
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

int device_sm_count(int device) {
  if (device < 0) W4A16_CUDA_TRY(cudaGetDevice(&device));
  int n = 0;
  W4A16_CUDA_TRY(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

int code_arch_for(std::string_view archs, bool ptx, int capability) {
  bool sm90a = false, sm80 = false;
  while (!archs.empty()) {
    const std::size_t c = archs.find(',');
    const std::string_view a = archs.substr(0, c);
    archs = c == std::string_view::npos ? std::string_view{} : archs.substr(c + 1);
    sm90a |= a == "90a";
    sm80 |= a == "80";
  }
  if (sm90a && capability == 90) return 90;
  // The sm_80 cubin would run on 8.6 / 8.9 too, but their 100 KB of shared memory per SM leaves some decode variants
  // (1..8 tokens, g = 32 with zero points: ~97 KB of rings) without a plan: A100-class (8.0) only, until they have one.
  if (sm80 && (capability == 80 || (ptx && capability > 80))) return 80;
  return 0;
}

int code_arch(int capability) { return code_arch_for(W4A16_CUDA_ARCH_LIST, W4A16_CUDA_PTX_EMBEDDED != 0, capability); }

int device_code_arch(int device) {
  if (device < 0) W4A16_CUDA_TRY(cudaGetDevice(&device));
  static std::array<std::atomic<int>, 64> cache{};  // code_arch + 1 per device index; 0 = not read yet
  if (device >= static_cast<int>(cache.size())) return code_arch(device_capability(device));
  int v = cache[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = code_arch(device_capability(device)) + 1;
    cache[device].store(v, std::memory_order_relaxed);
  }
  return v - 1;
}

std::string build_archs() { return std::string(W4A16_CUDA_ARCH_LIST) + (W4A16_CUDA_PTX_EMBEDDED ? "+ptx" : ""); }

}  // namespace w4a16::kernels::cuda
