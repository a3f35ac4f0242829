// The configuration grid the registry tests walk, and helpers shared by tests/registry and
// tests/gpu/registry: platform configs, forced-kernel acceptance (environment guards: testutil.hpp),
// activation buffers of any dtype, and a checked run against the f64 oracle.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "w4a16/linear.hpp"
#include "w4a16/registry/registry.hpp"
#include "testutil.hpp"  // ScopedEnv

namespace w4a16::test {

// Device and capability of a platform as LinearConfig carries them (cpu 0, sm80 80, sm90 90).
void set_platform(LinearConfig& c, Platform p);
// The CUDA platform this build runs code for, whose grid the tests of the CUDA kernels' claims walk: sm90 where code of
// the build runs on 9.0 (the sm_90a cubin, or the compute_80 PTX), else sm80 (a build of 80 alone). CUDA builds only.
Platform cuda_platform();

struct GridOptions {
  bool small_shapes_only = false;  // only shapes cheap enough to compute with the f64 oracle
  bool with_invalid = true;        // include configurations no kernel may accept
};
// Every combination of shape, act/out dtype, scalar type, group size, bias and act-order on
// platform p. Shapes mix real model layers, odd factors and non-dividing extents.
std::vector<LinearConfig> config_grid(Platform p, const GridOptions& opt = {});

// "" if choose(c, backend = name) accepts, else the error text (not_found fails the test).
std::string forced_refusal(const LinearConfig& c, std::string_view name);

// A strided host matrix [rows, cols] of float16/bfloat16/float32 with guard elements past the
// last row; contents as raw bytes.
struct HostMatrix {
  DType dtype = DType::f16;
  std::int64_t rows = 0, cols = 0, stride = 0, guard = 0;
  std::vector<unsigned char> bytes;
  TensorView view(Device d = Device::cpu, void* data = nullptr) const;  // data: an override (device copy)
  double at(std::int64_t r, std::int64_t c) const;
  std::vector<double> values() const;  // [rows, cols] dense
  // Number of elements outside [rows, cols] (row padding and guard) that no longer hold the poison.
  std::int64_t clobbered_padding() const;
};
HostMatrix random_matrix(std::int64_t rows, std::int64_t cols, DType dtype, std::int64_t stride, std::int64_t guard);
HostMatrix poisoned_matrix(std::int64_t rows, std::int64_t cols, DType dtype, std::int64_t stride, std::int64_t guard);

// Random canonical weights for config c (scales of `scale_dtype`).
QuantizedLinear random_weights(const LinearConfig& c, DType scale_dtype);

// The bound a kernel's output is held to: the looser of the activation and output tolerances.
double tolerance_for(const LinearConfig& c);

}  // namespace w4a16::test
