// The canonical quantized-linear layout of shared/FORMATS.md, the one layout every
// converter produces and every kernel's prepare() starts from:
//   qweight int32 [N, K/8]   nibble i of word (n, j) is q[n, 8j + i]
//   scales  f16|bf16 [N, G]  s[n, group]
//   zeros   int32 [N/8, G]   uint4 only; nibble i of word (r, group) is z[8r + i, group]
//   bias    f16|bf16 [N]     optional
//   perm    int32 [K]        optional (act-order): y = x[:, perm] . W^T with W in this layout
// w = (q - z) * s, z = 8 for uint4b8. Requires K % 8 == 0, K % g == 0, N % 8 == 0 with zeros.
//
// CanonicalView is non-owning and can only be made by make_canonical_view(), which checks
// every tensor; PackedZeros is a distinct type, so an unpacked [N, G] zero tensor can never
// stand where packed zeros are expected. QuantizedLinear owns host copies.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "w4a16/core/dtype.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16 {

constexpr int kChannelwise = -1;  // group_size meaning one group spanning all of K

// True for the group sizes the library is specified for: 32, 64, 128, 256, channelwise.
bool is_supported_group_size(int group_size);

// Shape and quantization parameters of one layer (partition shapes: what this rank holds).
struct QuantSpec {
  std::int64_t n = 0;  // out features
  std::int64_t k = 0;  // in features
  int group_size = 128;  // 32, 64, 128, 256 or kChannelwise
  ScalarType scalar = ScalarType::uint4b8;

  std::int64_t group_len() const { return group_size == kChannelwise ? k : group_size; }  // K-extent of one group
  std::int64_t groups() const { return group_size == kChannelwise ? 1 : k / group_size; }  // G
  bool has_zeros() const { return scalar == ScalarType::uint4; }
  // Throws naming `arg` if the spec breaks the canonical requirements.
  void validate(std::string_view arg = "spec") const;
  std::string describe() const;  // "N=4096 K=4096 g=128 uint4"
};

// Packed zero points: int32 [N/8, G], nibble i of word (r, group) = z[8r + i, group].
class PackedZeros {
 public:
  PackedZeros() = default;
  // Validates dtype int32, rank 2, shape [N/8, G], contiguity; the error text is the contract's.
  static PackedZeros from(const TensorView& t, const QuantSpec& spec, std::string_view arg = "zeros");
  const std::int32_t* data() const { return data_; }
  bool defined() const { return data_ != nullptr; }
  Device device() const { return device_; }

 private:
  const std::int32_t* data_ = nullptr;
  Device device_ = Device::cpu;
};

struct CanonicalView {
  QuantSpec spec;
  DType scale_dtype = DType::f16;  // also the bias dtype
  Device device = Device::cpu;
  int device_index = 0;
  const std::int32_t* qweight = nullptr;  // [N, K/8]
  const std::uint16_t* scales = nullptr;  // [N, G] raw f16/bf16 bits
  PackedZeros zeros;                      // [N/8, G], defined iff spec.scalar == uint4
  const std::uint16_t* bias = nullptr;    // [N] or null
  const std::int32_t* perm = nullptr;     // [K] or null

  bool has_bias() const { return bias != nullptr; }
  bool act_order() const { return perm != nullptr; }
  std::int64_t words_per_row() const { return spec.k / 8; }

  // Element access for host views (readable oracles; not for hot loops).
  int q(std::int64_t n, std::int64_t kk) const {
    return (static_cast<std::uint32_t>(qweight[n * words_per_row() + kk / 8]) >> (4 * (kk % 8))) & 0xf;
  }
  int z(std::int64_t n, std::int64_t group) const {
    if (!zeros.defined()) return 8;
    return (static_cast<std::uint32_t>(zeros.data()[(n / 8) * spec.groups() + group]) >> (4 * (n % 8))) & 0xf;
  }
  float s(std::int64_t n, std::int64_t group) const {
    return f16x_to_float(scale_dtype, scales[n * spec.groups() + group]);
  }
  // Dequantized weight at canonical position (n, k') (k' indexes x[:, perm]).
  float w(std::int64_t n, std::int64_t kk) const {
    std::int64_t g = kk / spec.group_len();
    return static_cast<float>(q(n, kk) - z(n, g)) * s(n, g);
  }
};

// The tensors of a canonical layer as the caller has them; an undefined view = absent.
struct CanonicalTensors {
  TensorView qweight, scales, zeros, bias, perm;
};

// Checks every tensor against the canonical contract and returns the view.
// Host perm tensors are also checked to be a permutation of 0..K-1.
CanonicalView make_canonical_view(const CanonicalTensors& t, const QuantSpec& spec);

// Owning host copy of a canonical layer.
class QuantizedLinear {
 public:
  QuantizedLinear() = default;
  // Allocates tensors of the right shapes (zeros only for uint4); contents zero-filled.
  QuantizedLinear(const QuantSpec& spec, DType scale_dtype, bool has_bias, bool act_order);
  // Copies host tensors after validating them as make_canonical_view does.
  static QuantizedLinear from_tensors(const CanonicalTensors& t, const QuantSpec& spec);

  const QuantSpec& spec() const { return spec_; }
  DType scale_dtype() const { return scale_dtype_; }
  CanonicalView view() const;
  CanonicalTensors tensors() const;  // views of the owned storage

  HostTensor& qweight() { return qweight_; }
  HostTensor& scales() { return scales_; }
  HostTensor& zeros() { return zeros_; }
  HostTensor& bias() { return bias_; }
  HostTensor& perm() { return perm_; }
  const HostTensor& qweight() const { return qweight_; }
  const HostTensor& scales() const { return scales_; }
  const HostTensor& zeros() const { return zeros_; }
  const HostTensor& bias() const { return bias_; }
  const HostTensor& perm() const { return perm_; }
  bool has_bias() const { return !bias_.empty(); }
  bool act_order() const { return !perm_.empty(); }
  // Bytes of the packed representation (qweight + scales + zeros + bias + perm).
  std::size_t nbytes() const;

 private:
  QuantSpec spec_;
  DType scale_dtype_ = DType::f16;
  HostTensor qweight_, scales_, zeros_, bias_, perm_;
};

}  // namespace w4a16
