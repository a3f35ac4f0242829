// Host <-> device buffers for the tool's CUDA path, so that subcommands need no CUDA headers.
// In a build without CUDA every function reports that there is no device.
#pragma once
#include <cstddef>

namespace w4a16::cli {

bool cuda_device_present();         // the build has CUDA and cudaGetDeviceCount() > 0
int cuda_capability(int device);    // 90 for sm_90; cuda_error if it cannot be read
void cuda_synchronize();

// An owning device allocation (cudaMalloc); the copies are synchronous.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return ptr_; }
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace w4a16::cli
