// Prepare for layout "cuda.tc16x64.v1": canonical (shared/FORMATS.md) -> tensor-core fragments
// (docs/LAYOUT.md). Host code only; checked bit for bit by tests/gpu/decode/test_tc_layout.cpp
// against an independent transcription of docs/LAYOUT.md.
#include "tc/tc_weights.hpp"

#include <cstring>
#include <string>

#include "common.cuh"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/tc16x64_words.hpp"

namespace w4a16::kernels::cuda {
namespace {

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// A canonical view whose tensors live on the host (device views are copied down first).
struct HostCopy {
  std::vector<std::int32_t> qweight, zeros, perm;
  std::vector<std::uint16_t> scales, bias;
  CanonicalView view;
};

template <class T>
std::vector<T> download(const T* p, std::size_t count) {
  std::vector<T> v(count);
  if (count) W4A16_CUDA_TRY(cudaMemcpy(v.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

HostCopy to_host(const CanonicalView& w) {
  HostCopy h;
  h.view = w;
  const QuantSpec& s = w.spec;
  const auto N = static_cast<std::size_t>(s.n), K = static_cast<std::size_t>(s.k), G = static_cast<std::size_t>(s.groups());
  h.qweight = download(w.qweight, N * K / 8);
  h.scales = download(w.scales, N * G);
  h.view.qweight = h.qweight.data();
  h.view.scales = h.scales.data();
  if (w.zeros.defined()) {
    h.zeros = download(w.zeros.data(), N / 8 * G);
    // PackedZeros can only be made through its validating factory: rebuild it over the host copy.
    TensorView zt(h.zeros.data(), DType::i32, {s.n / 8, s.groups()});
    h.view.zeros = PackedZeros::from(zt, s, "zeros");
  }
  if (w.bias) { h.bias = download(w.bias, N); h.view.bias = h.bias.data(); }
  if (w.perm) { h.perm = download(w.perm, K); h.view.perm = h.perm.data(); }
  h.view.device = Device::cpu;
  return h;
}

void check_view(const CanonicalView& w, DType act_dtype) {
  if (!is_activation_dtype(act_dtype))
    fail(ErrorCode::dtype_mismatch, "act_dtype", "float16 or bfloat16", std::string(dtype_name(act_dtype)));
  w.spec.validate("weights");
  if (!w.qweight || !w.scales) fail(ErrorCode::invalid_argument, "weights", "qweight and scales", "a null tensor");
  if (w.spec.has_zeros() != w.zeros.defined())
    fail(ErrorCode::invalid_argument, "zeros", w.spec.has_zeros() ? "packed zeros for uint4" : "no zeros for uint4b8",
         w.zeros.defined() ? "a zero tensor" : "none");
}

}  // namespace

TcHostLayout tc_layout_host(const CanonicalView& w, DType act_dtype) {
  check_view(w, act_dtype);
  if (w.device != Device::cpu) fail(ErrorCode::invalid_argument, "weights", "a host canonical view", "a device view");
  const QuantSpec& s = w.spec;
  TcHostLayout L;
  L.n = s.n;
  L.k = s.k;
  L.n_pad = round_up(s.n, kTcPadN);
  L.k_pad = round_up(s.k, kTcPadK);
  L.groups = s.groups();
  const std::int64_t NT = L.n_pad / kTcTileN, KT = L.k_pad / kTcTileK, G = L.groups;

  // qweight: per (n-tile, k-tile, lane, sub-tile j) one word, nibbles [a0,a2,a4,a6,a1,a3,a5,a7] (tc16x64_words.hpp).
  L.qweight.assign(static_cast<std::size_t>(NT * KT * 128), 0);
  formats::tc16x64_qweight_words(w.qweight, s.n, s.k, L.n_pad, L.k_pad, reinterpret_cast<std::uint32_t*>(L.qweight.data()));

  // scales: converted to the activation dtype once (fp16 -> bf16 rounds to nearest even).
  L.scales.assign(static_cast<std::size_t>(G * L.n_pad), 0);
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t nt = 0; nt < NT; ++nt)
      for (int r = 0; r < 8; ++r)
        for (int h = 0; h < 2; ++h) {
          const std::int64_t n = nt * 16 + r + 8 * h;
          std::uint16_t v = 0;
          if (n < s.n) {
            const std::uint16_t raw = w.scales[n * G + g];
            v = w.scale_dtype == act_dtype ? raw : float_to_f16x(act_dtype, f16x_to_float(w.scale_dtype, raw));
          }
          L.scales[static_cast<std::size_t>(g * L.n_pad + nt * 16 + 2 * r + h)] = v;
        }

  if (s.has_zeros()) {
    L.zeros.assign(static_cast<std::size_t>(G * NT * 8), 0);
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t nt = 0; nt < NT; ++nt)
        for (int r = 0; r < 8; ++r) {
          const std::int64_t n0 = nt * 16 + r, n1 = n0 + 8;
          const unsigned z0 = n0 < s.n ? static_cast<unsigned>(w.z(n0, g)) : 0u;
          const unsigned z1 = n1 < s.n ? static_cast<unsigned>(w.z(n1, g)) : 0u;
          L.zeros[static_cast<std::size_t>((g * NT + nt) * 8 + r)] = static_cast<std::uint8_t>(z0 | (z1 << 4));
        }
  }
  if (w.has_bias()) {
    L.bias.resize(static_cast<std::size_t>(s.n));
    for (std::int64_t n = 0; n < s.n; ++n)
      L.bias[static_cast<std::size_t>(n)] =
          w.scale_dtype == act_dtype ? w.bias[n] : float_to_f16x(act_dtype, f16x_to_float(w.scale_dtype, w.bias[n]));
  }
  if (w.act_order()) L.perm.assign(w.perm, w.perm + s.k);
  return L;
}

TcWeights::~TcWeights() {
  if (!owned) return;
  // Destructors must not throw: errors of cudaFree at teardown are ignored on purpose.
  for (void* p : {static_cast<void*>(qweight), scales, static_cast<void*>(zeros), bias, static_cast<void*>(perm)})
    if (p) cudaFree(p);
}

std::size_t TcWeights::stream_bytes() const {
  std::size_t b = static_cast<std::size_t>(n_pad * k_pad / 2) + static_cast<std::size_t>(groups * n_pad * 2);
  if (zeros) b += static_cast<std::size_t>(groups * n_pad / 2);
  return b;
}

namespace {
template <class T>
T* upload(const std::vector<T>& v, cudaStream_t stream, std::size_t& bytes) {
  if (v.empty()) return nullptr;
  void* p = nullptr;
  W4A16_CUDA_TRY(cudaMalloc(&p, v.size() * sizeof(T)));
  W4A16_CUDA_TRY(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  bytes += v.size() * sizeof(T);
  return static_cast<T*>(p);
}
template <class T>
T* copy_device(const T* src, std::size_t count, cudaStream_t stream, std::size_t& bytes) {
  if (!src || !count) return nullptr;
  void* p = nullptr;
  W4A16_CUDA_TRY(cudaMalloc(&p, count * sizeof(T)));
  W4A16_CUDA_TRY(cudaMemcpyAsync(p, src, count * sizeof(T), cudaMemcpyDeviceToDevice, stream));
  bytes += count * sizeof(T);
  return static_cast<T*>(p);
}
}  // namespace

std::unique_ptr<TcWeights> tc_prepare(const CanonicalView& w, DType act_dtype, cudaStream_t stream) {
  check_view(w, act_dtype);
  TcHostLayout L;
  if (w.device == Device::cpu) {
    L = tc_layout_host(w, act_dtype);
  } else {
    HostCopy h = to_host(w);
    L = tc_layout_host(h.view, act_dtype);
  }
  auto out = std::make_unique<TcWeights>();
  out->n = L.n; out->k = L.k; out->n_pad = L.n_pad; out->k_pad = L.k_pad; out->groups = L.groups;
  out->group_size = w.spec.group_size;
  out->scalar = w.spec.scalar;
  out->act_dtype = act_dtype;
  out->has_bias = w.has_bias();
  out->act_order = w.act_order();
  out->qweight = upload(L.qweight, stream, out->bytes);
  out->scales = upload(L.scales, stream, out->bytes);
  out->zeros = upload(L.zeros, stream, out->bytes);
  out->bias = upload(L.bias, stream, out->bytes);
  out->perm = upload(L.perm, stream, out->bytes);
  // The host vectors die at return: the copies must be complete first.
  W4A16_CUDA_TRY(cudaStreamSynchronize(stream));
  return out;
}

std::unique_ptr<TcWeights> tc_clone(const TcWeights& w, cudaStream_t stream) {
  auto out = std::make_unique<TcWeights>();
  out->n = w.n; out->k = w.k; out->n_pad = w.n_pad; out->k_pad = w.k_pad; out->groups = w.groups;
  out->group_size = w.group_size; out->scalar = w.scalar; out->act_dtype = w.act_dtype;
  out->has_bias = w.has_bias; out->act_order = w.act_order;
  const auto NP = static_cast<std::size_t>(w.n_pad), KP = static_cast<std::size_t>(w.k_pad), G = static_cast<std::size_t>(w.groups);
  out->qweight = copy_device(w.qweight, NP * KP / 8, stream, out->bytes);
  out->scales = copy_device(static_cast<const std::uint16_t*>(w.scales), G * NP, stream, out->bytes);
  out->zeros = copy_device(w.zeros, G * NP / 2, stream, out->bytes);
  out->bias = copy_device(static_cast<const std::uint16_t*>(w.bias), static_cast<std::size_t>(w.n), stream, out->bytes);
  out->perm = copy_device(w.perm, static_cast<std::size_t>(w.k), stream, out->bytes);
  W4A16_CUDA_TRY(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace w4a16::kernels::cuda
