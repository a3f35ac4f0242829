#include "w4a16/core/canonical.hpp"

#include <cstring>
#include <vector>

#include "w4a16/core/error.hpp"

namespace w4a16 {

bool is_supported_group_size(int g) { return g == 32 || g == 64 || g == 128 || g == 256 || g == kChannelwise; }

static std::string group_text(int g) { return g == kChannelwise ? std::string("channelwise") : std::to_string(g); }

void QuantSpec::validate(std::string_view arg) const {
  std::string a(arg);
  if (!is_supported_group_size(group_size))
    fail(ErrorCode::invalid_argument, a + ".group_size", "one of 32, 64, 128, 256, -1 (channelwise)",
         std::to_string(group_size));
  if (n <= 0) fail(ErrorCode::shape_mismatch, a + ".N", "N > 0", std::to_string(n));
  if (k <= 0) fail(ErrorCode::shape_mismatch, a + ".K", "K > 0", std::to_string(k));
  if (k % 8 != 0) fail(ErrorCode::shape_mismatch, a + ".K", "a multiple of 8 (8 nibbles per int32)", std::to_string(k));
  if (group_size != kChannelwise && k % group_size != 0)
    fail(ErrorCode::shape_mismatch, a + ".K", "a multiple of the group size " + std::to_string(group_size),
         std::to_string(k));
  if (has_zeros() && n % 8 != 0)
    fail(ErrorCode::shape_mismatch, a + ".N",
         "a multiple of 8 with uint4 zero points (packed 8 per int32 along N)", std::to_string(n));
}

std::string QuantSpec::describe() const {
  return "N=" + std::to_string(n) + " K=" + std::to_string(k) + " g=" + group_text(group_size) + " " +
         std::string(scalar_type_name(scalar));
}

PackedZeros PackedZeros::from(const TensorView& t, const QuantSpec& spec, std::string_view arg) {
  std::vector<std::int64_t> want = {spec.n / 8, spec.groups()};
  std::string expected = "int32 [N/8, G] packed 8 x uint4 along N = " + shape_str(want);
  if (t.dtype != DType::i32 || t.shape_vec() != want) fail(ErrorCode::layout_mismatch, arg, expected, describe(t));
  if (!t.is_contiguous()) fail(ErrorCode::layout_mismatch, arg, expected + ", contiguous", describe(t));
  if (t.data == nullptr && t.numel() > 0) fail(ErrorCode::invalid_argument, arg, expected, "a null pointer");
  PackedZeros z;
  z.data_ = static_cast<const std::int32_t*>(t.data);
  z.device_ = t.device;
  return z;
}

static bool absent(const TensorView& t) { return t.data == nullptr && t.rank == 0; }

CanonicalView make_canonical_view(const CanonicalTensors& t, const QuantSpec& spec) {
  spec.validate("weights");
  const std::int64_t N = spec.n, K = spec.k, G = spec.groups();
  if (absent(t.qweight)) fail(ErrorCode::invalid_argument, "qweight", "int32 [N, K/8]", "no tensor");
  Device dev = t.qweight.device;
  int dev_idx = t.qweight.device_index;

  check_dtype(t.qweight, "qweight", DType::i32);
  check_shape(t.qweight, "qweight", {N, K / 8}, "[N, K/8]");
  check_contiguous(t.qweight, "qweight");
  check_aligned(t.qweight.data, 16, "qweight");

  if (absent(t.scales)) fail(ErrorCode::invalid_argument, "scales", "float16 or bfloat16 [N, G]", "no tensor");
  if (t.scales.dtype != DType::f16 && t.scales.dtype != DType::bf16)
    fail(ErrorCode::dtype_mismatch, "scales", "float16 or bfloat16 [N, G] = " + shape_str({N, G}), describe(t.scales));
  check_shape(t.scales, "scales", {N, G}, "[N, G]");
  check_contiguous(t.scales, "scales");
  check_device(t.scales, "scales", dev);

  CanonicalView v;
  v.spec = spec;
  v.scale_dtype = t.scales.dtype;
  v.device = dev;
  v.device_index = dev_idx;
  v.qweight = static_cast<const std::int32_t*>(t.qweight.data);
  v.scales = static_cast<const std::uint16_t*>(t.scales.data);

  if (spec.has_zeros()) {
    if (absent(t.zeros))
      fail(ErrorCode::invalid_argument, "zeros",
           "int32 [N/8, G] packed 8 x uint4 along N = " + shape_str({N / 8, G}) + " (scalar type uint4)", "no tensor");
    v.zeros = PackedZeros::from(t.zeros, spec, "zeros");
    check_device(t.zeros, "zeros", dev);
  } else if (!absent(t.zeros)) {
    fail(ErrorCode::invalid_argument, "zeros", "no zero-point tensor for uint4b8 (z = 8)", describe(t.zeros));
  }

  if (!absent(t.bias)) {
    if (t.bias.dtype != v.scale_dtype)
      fail(ErrorCode::dtype_mismatch, "bias", std::string(dtype_name(v.scale_dtype)) + " [N] (the scales' dtype)",
           describe(t.bias));
    check_shape(t.bias, "bias", {N}, "[N]");
    check_contiguous(t.bias, "bias");
    check_device(t.bias, "bias", dev);
    v.bias = static_cast<const std::uint16_t*>(t.bias.data);
  }

  if (!absent(t.perm)) {
    check_dtype(t.perm, "perm", DType::i32);
    check_shape(t.perm, "perm", {K}, "[K]");
    check_contiguous(t.perm, "perm");
    check_device(t.perm, "perm", dev);
    v.perm = static_cast<const std::int32_t*>(t.perm.data);
    if (dev == Device::cpu) {
      std::vector<unsigned char> seen(static_cast<std::size_t>(K), 0);
      for (std::int64_t i = 0; i < K; ++i) {
        std::int32_t p = v.perm[i];
        if (p < 0 || p >= K || seen[static_cast<std::size_t>(p)])
          fail(ErrorCode::invalid_argument, "perm", "a permutation of 0.." + std::to_string(K - 1),
               "perm[" + std::to_string(i) + "] = " + std::to_string(p) + (p >= 0 && p < K ? " (repeated)" : ""));
        seen[static_cast<std::size_t>(p)] = 1;
      }
    }
  }
  return v;
}

QuantizedLinear::QuantizedLinear(const QuantSpec& spec, DType scale_dtype, bool has_bias, bool act_order)
    : spec_(spec), scale_dtype_(scale_dtype) {
  spec.validate("weights");
  if (scale_dtype != DType::f16 && scale_dtype != DType::bf16)
    fail(ErrorCode::dtype_mismatch, "scale_dtype", "float16 or bfloat16", std::string(dtype_name(scale_dtype)));
  qweight_ = HostTensor(DType::i32, {spec.n, spec.k / 8});
  scales_ = HostTensor(scale_dtype, {spec.n, spec.groups()});
  if (spec.has_zeros()) zeros_ = HostTensor(DType::i32, {spec.n / 8, spec.groups()});
  if (has_bias) bias_ = HostTensor(scale_dtype, {spec.n});
  if (act_order) {
    perm_ = HostTensor(DType::i32, {spec.k});
    for (std::int64_t i = 0; i < spec.k; ++i) perm_.ptr<std::int32_t>()[i] = static_cast<std::int32_t>(i);
  }
}

static void copy_into(HostTensor& dst, const TensorView& src) {
  if (src.data && src.nbytes()) std::memcpy(dst.data(), src.data, src.nbytes());
}

QuantizedLinear QuantizedLinear::from_tensors(const CanonicalTensors& t, const QuantSpec& spec) {
  CanonicalView v = make_canonical_view(t, spec);
  if (v.device != Device::cpu)
    fail(ErrorCode::invalid_argument, "qweight", "host tensors for QuantizedLinear", describe(t.qweight));
  QuantizedLinear q(spec, v.scale_dtype, v.has_bias(), v.act_order());
  copy_into(q.qweight_, t.qweight);
  copy_into(q.scales_, t.scales);
  if (spec.has_zeros()) copy_into(q.zeros_, t.zeros);
  if (v.has_bias()) copy_into(q.bias_, t.bias);
  if (v.act_order()) copy_into(q.perm_, t.perm);
  return q;
}

CanonicalTensors QuantizedLinear::tensors() const {
  CanonicalTensors t;
  t.qweight = qweight_.view();
  t.scales = scales_.view();
  if (!zeros_.empty()) t.zeros = zeros_.view();
  if (!bias_.empty()) t.bias = bias_.view();
  if (!perm_.empty()) t.perm = perm_.view();
  return t;
}

CanonicalView QuantizedLinear::view() const { return make_canonical_view(tensors(), spec_); }

std::size_t QuantizedLinear::nbytes() const {
  return qweight_.nbytes() + scales_.nbytes() + zeros_.nbytes() + bias_.nbytes() + perm_.nbytes();
}

}  // namespace w4a16
