#include "device.hpp"

#include <string>

#include "w4a16/core/error.hpp"

#ifdef W4A16_TOOL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace w4a16::cli {

#ifdef W4A16_TOOL_HAVE_CUDA
namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(ErrorCode::cuda_error, what, "cudaSuccess", cudaGetErrorString(e));
}
}  // namespace

bool cuda_device_present() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls start clean
    return false;
  }
  return n > 0;
}

int cuda_capability(int device) {
  int major = 0, minor = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  return major * 10 + minor;
}

void cuda_synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check(cudaMalloc(&ptr_, bytes ? bytes : 1), ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str());
}
DeviceBuffer::~DeviceBuffer() { cudaFree(ptr_); }
void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  check(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
}
void DeviceBuffer::download(void* host, std::size_t bytes) const {
  check(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
}

#else  // no CUDA in this build

namespace {
[[noreturn]] void no_cuda(const char* what) {
  fail(ErrorCode::unsupported, what, "a build with CUDA (-DW4A16_ENABLE_CUDA=ON)", "a CPU-only build");
}
}  // namespace

bool cuda_device_present() { return false; }
int cuda_capability(int) { no_cuda("cuda_capability"); }
void cuda_synchronize() { no_cuda("cuda_synchronize"); }
DeviceBuffer::DeviceBuffer(std::size_t) { no_cuda("DeviceBuffer"); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const void*, std::size_t) { no_cuda("DeviceBuffer::upload"); }
void DeviceBuffer::download(void*, std::size_t) const { no_cuda("DeviceBuffer::download"); }

#endif

}  // namespace w4a16::cli
