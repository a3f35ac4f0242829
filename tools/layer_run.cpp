#include "layer_run.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "cli.hpp"
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
  if (device == Device::cpu) {
    TensorView xv = x.view(), yv = r.y.view();
    r.median_ms = median_call_ms(repeats, [&] { lin.forward(xv, yv); });
  } else {
    DeviceBuffer dx(x.nbytes()), dy(r.y.nbytes());
    dx.upload(x.data(), x.nbytes());
    dy.upload(r.y.data(), r.y.nbytes());
    TensorView xv(dx.data(), dt, {m, x.shape()[1]}, Device::cuda, lo.device_index);
    TensorView yv(dy.data(), dt, {m, n}, Device::cuda, lo.device_index);
    r.median_ms = median_call_ms(repeats, [&] {
      lin.forward(xv, yv);
      cuda_synchronize();
    });
    dy.download(r.y.data(), r.y.nbytes());
  }
  return r;
}

HostTensor run_reference(const QuantizedLinear& w, const HostTensor& x) {
  if (!find_kernel(kReferenceKernel))
    fail(ErrorCode::not_found, "--check", std::string("the ") + kReferenceKernel + " kernel in the registry", "no such kernel");
  return run_linear(w, x, Device::cpu, kReferenceKernel, 0).y;
}

}  // namespace w4a16::cli
