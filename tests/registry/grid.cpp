#include "grid.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

#if W4A16_HAVE_CUDA
#include "common.cuh"  // src/kernels/cuda: code_arch
#endif
namespace w4a16::test {

#if W4A16_HAVE_CUDA
Platform cuda_platform() { return kernels::cuda::code_arch(90) != 0 ? Platform::sm90 : Platform::sm80; }
#endif

void set_platform(LinearConfig& c, Platform p) {
  c.device = p == Platform::cpu ? Device::cpu : Device::cuda;
  c.capability = p == Platform::cpu ? 0 : (p == Platform::sm80 ? 80 : 90);
}

namespace {
struct Shape {
  std::int64_t n, k;
  bool small;
};
// small: computed by the CPU claims test with the f64 oracle; the rest are selection only.
const Shape kShapes[] = {
    {24, 512, true},      // every group size divides K
    {13, 96, true},       // odd N (no uint4), K = 3 * 32: only g = 32 and channelwise
    {40, 200, true},      // K = 25 * 8: channelwise only
    {72, 256, true},      // N = 9 * 8
    {8, 64, true},        // the smallest layer with every g <= 64
    {200, 1024, false},   // N % 16 != 0, N % 64 != 0
    {1152, 896, false},   // Qwen2.5-0.5B qkv (K = 7 * 128)
    {9728, 896, false},   // Qwen2.5-0.5B gate_up
    {896, 4864, false},   // Qwen2.5-0.5B down (K = 19 * 256)
    {4096, 4096, false},  // Llama-3-8B o
    {28672, 4096, false}, // Llama-3-8B gate_up
    {4096, 14336, false}, // Llama-3-8B down
    {8192, 8192, false},
};
const DType kDtypes[] = {DType::f16, DType::bf16, DType::f32};
const int kGroups[] = {32, 64, 128, 256, kChannelwise, 48 /* not a supported group size */};
}  // namespace

std::vector<LinearConfig> config_grid(Platform p, const GridOptions& opt) {
  std::vector<LinearConfig> out;
  // sm80 stands for every sm_8x GPU: a build may hold an 80, 86 or 89 cubin only.
  const std::vector<int> caps = p == Platform::sm80 ? std::vector<int>{80, 86, 89} : std::vector<int>{-1};
  for (int cap : caps)
  for (const Shape& s : kShapes) {
    if (opt.small_shapes_only && !s.small) continue;
    for (DType act : kDtypes)
      for (DType o : kDtypes)
        for (ScalarType sc : {ScalarType::uint4b8, ScalarType::uint4})
          for (int g : kGroups)
            for (int bias = 0; bias < 2; ++bias)
              for (int ao = 0; ao < 2; ++ao) {
                LinearConfig c;
                c.n = c.n_full = s.n;
                c.k = c.k_full = s.k;
                c.scalar = sc;
                c.has_zeros = sc == ScalarType::uint4;
                c.act_dtype = act;
                c.out_dtype = o;
                c.group_size = g;
                c.has_bias = bias != 0;
                c.act_order = ao != 0;
                set_platform(c, p);
                if (cap > 0) c.capability = cap;
                if (!opt.with_invalid && !c.invalid_reason().empty()) continue;
                out.push_back(c);
              }
  }
  if (opt.with_invalid) {  // fields that contradict each other
    LinearConfig c;
    c.n = c.n_full = 64;
    c.k = c.k_full = 256;
    set_platform(c, p);
    c.scalar = ScalarType::uint4b8;
    c.has_zeros = true;  // zero points with a symmetric type
    out.push_back(c);
    c.scalar = ScalarType::uint4;
    c.has_zeros = false;  // uint4 without zero points
    out.push_back(c);
    c.has_zeros = true;
    c.n_full = 32;  // a partition larger than its layer
    out.push_back(c);
  }
  return out;
}

std::string forced_refusal(const LinearConfig& c, std::string_view name) {
  SelectOptions o;
  o.backend = std::string(name);
  o.read_environment = false;
  try {
    Decision d = choose(c, o);
    if (d.chosen == nullptr || d.chosen->name() != name) return "choose returned another kernel";
    return {};
  } catch (const Error& e) {
    if (e.code() == ErrorCode::not_found) throw;  // a registered name must always be found
    return e.what();
  }
}

TensorView HostMatrix::view(Device d, void* data) const {
  TensorView v(data ? data : const_cast<unsigned char*>(bytes.data()), dtype, {rows, cols}, d);
  v.stride[0] = stride;
  return v;
}

double HostMatrix::at(std::int64_t r, std::int64_t c) const {
  const std::int64_t i = r * stride + c;
  if (dtype == DType::f32) {
    float f;
    std::memcpy(&f, bytes.data() + i * 4, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, bytes.data() + i * 2, 2);
  return f16x_to_float(dtype, h);
}

std::vector<double> HostMatrix::values() const {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) v[static_cast<std::size_t>(r * cols + c)] = at(r, c);
  return v;
}

namespace {
// Quiet-NaN bit patterns that no kernel produces from finite inputs.
void put_poison(unsigned char* p, DType t) {
  if (t == DType::f32) {
    std::uint32_t u = 0x7fc00bad;
    std::memcpy(p, &u, 4);
  } else {
    std::uint16_t u = poison_bits(t);
    std::memcpy(p, &u, 2);
  }
}
std::int64_t total_elems(std::int64_t rows, std::int64_t stride, std::int64_t guard) {
  return (rows > 0 ? rows * stride : 0) + guard;
}
}  // namespace

std::int64_t HostMatrix::clobbered_padding() const {
  const std::size_t es = dtype_size(dtype);
  unsigned char poison[4];
  put_poison(poison, dtype);
  std::int64_t bad = 0;
  const std::int64_t total = total_elems(rows, stride, guard);
  for (std::int64_t i = 0; i < total; ++i) {
    const bool inside = i < rows * stride && (i % stride) < cols;
    if (!inside && std::memcmp(bytes.data() + i * static_cast<std::int64_t>(es), poison, es) != 0) ++bad;
  }
  return bad;
}

HostMatrix poisoned_matrix(std::int64_t rows, std::int64_t cols, DType dtype, std::int64_t stride, std::int64_t guard) {
  HostMatrix m;
  m.dtype = dtype;
  m.rows = rows;
  m.cols = cols;
  m.stride = stride;
  m.guard = guard;
  const std::size_t es = dtype_size(dtype);
  const std::int64_t total = total_elems(rows, stride, guard);
  m.bytes.resize(static_cast<std::size_t>(total) * es);
  for (std::int64_t i = 0; i < total; ++i) put_poison(m.bytes.data() + i * static_cast<std::int64_t>(es), dtype);
  return m;
}

HostMatrix random_matrix(std::int64_t rows, std::int64_t cols, DType dtype, std::int64_t stride, std::int64_t guard) {
  HostMatrix m = poisoned_matrix(rows, cols, dtype, stride, guard);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * stride + c;
      if (dtype == DType::f32) {
        float f = nd(rng());
        std::memcpy(m.bytes.data() + i * 4, &f, 4);
      } else {
        std::uint16_t h = float_to_f16x(dtype, nd(rng()));
        std::memcpy(m.bytes.data() + i * 2, &h, 2);
      }
    }
  return m;
}

QuantizedLinear random_weights(const LinearConfig& c, DType scale_dtype) {
  return random_linear(c.spec(), scale_dtype, c.has_bias, c.act_order);
}

double tolerance_for(const LinearConfig& c) {
  return std::max(tolerance(c.act_dtype), tolerance(c.out_dtype));
}

}  // namespace w4a16::test
