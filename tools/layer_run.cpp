#include "layer_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "device.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/linear.hpp"
#include "w4a16/registry/registry.hpp"

namespace w4a16::cli {

void check_backend_name(const std::string& name, const std::string& arg) {
  if (name.empty() || find_kernel(name)) return;
  std::string known;
  for (const auto& e : all_kernels()) known += (known.empty() ? "" : ", ") + std::string(e.kernel->name());
  fail(ErrorCode::not_found, arg, "a registered kernel (" + known + ")", "'" + name + "'");
}

namespace {

// NaN-filled output: a kernel that leaves elements unwritten fails the check (inf error).
HostTensor poisoned_output(std::int64_t m, std::int64_t n, DType dtype) {
  HostTensor y(dtype, {m, n});
  std::uint16_t nan_bits = dtype == DType::bf16 ? 0x7fc1 : 0x7e01;  // quiet NaNs
  std::fill_n(y.ptr<std::uint16_t>(), y.numel(), nan_bits);
  return y;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

LayerRun run_linear(const QuantizedLinear& w, const HostTensor& x, Device device, const std::string& backend, int repeats) {
  check_backend_name(backend, "--backend");
  const DType dt = x.dtype();
  const std::int64_t m = x.shape()[0], n = w.spec().n;
  LinearOptions lo;
  lo.act_dtype = dt;
  lo.device = device;
  lo.backend = backend;
  lo.max_m = std::max<std::int64_t>(m, 1);
  Linear lin = Linear::create(w.view(), lo);

  LayerRun r;
  r.kernel = std::string(lin.kernel().name());
  r.weight_bytes = lin.weight_bytes();
  r.y = poisoned_output(m, n, dt);
  std::vector<double> times;
  const int calls = repeats > 0 ? repeats + 1 : 1;  // the first of several is a warm-up
  auto record = [&](int i, double ms) {
    if (calls == 1 || i > 0) times.push_back(ms);
  };
  using clock = std::chrono::steady_clock;
  if (device == Device::cpu) {
    TensorView xv = x.view(), yv = r.y.view();
    for (int i = 0; i < calls; ++i) {
      auto t0 = clock::now();
      lin.forward(xv, yv);
      record(i, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
  } else {
    DeviceBuffer dx(x.nbytes()), dy(r.y.nbytes());
    dx.upload(x.data(), x.nbytes());
    dy.upload(r.y.data(), r.y.nbytes());
    TensorView xv(dx.data(), dt, {m, x.shape()[1]}, Device::cuda, lo.device_index);
    TensorView yv(dy.data(), dt, {m, n}, Device::cuda, lo.device_index);
    for (int i = 0; i < calls; ++i) {
      auto t0 = clock::now();
      lin.forward(xv, yv);
      cuda_synchronize();
      record(i, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    dy.download(r.y.data(), r.y.nbytes());
  }
  r.median_ms = median(times);
  return r;
}

HostTensor run_reference(const QuantizedLinear& w, const HostTensor& x) {
  if (!find_kernel(kReferenceKernel))
    fail(ErrorCode::not_found, "--check", std::string("the ") + kReferenceKernel + " kernel in the registry", "no such kernel");
  return run_linear(w, x, Device::cpu, kReferenceKernel, 0).y;
}

}  // namespace w4a16::cli
