// MoeSpec checks and the stacked host weights of a MoE layer (canonical layout per expert).
#include <cstring>
#include <string>

#include "w4a16/core/error.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

void MoeSpec::validate(std::string_view arg) const {
  const std::string a(arg);
  if (experts < 1) fail(ErrorCode::invalid_argument, a + ".experts", ">= 1", std::to_string(experts));
  if (hidden <= 0 || intermediate <= 0)
    fail(ErrorCode::invalid_argument, a, "hidden > 0 and intermediate > 0",
         "H=" + std::to_string(hidden) + " I=" + std::to_string(intermediate));
  // Both layers must be canonical: K % 8, K % g, N % 8 with zeros. w13 has K = H, N = 2I; w2 K = I, N = H.
  w13_spec().validate(a + ".w13");
  w2_spec().validate(a + ".w2");
}

std::string MoeSpec::describe() const {
  return "E=" + std::to_string(experts) + " H=" + std::to_string(hidden) + " I=" + std::to_string(intermediate) +
         " g=" + (group_size == kChannelwise ? std::string("channelwise") : std::to_string(group_size)) + " " +
         std::string(scalar_type_name(scalar));
}

MoeWeights::MoeWeights(const MoeSpec& spec, DType scale_dtype) : spec_(spec), scale_dtype_(scale_dtype) {
  spec.validate();
  if (!is_activation_dtype(scale_dtype))
    fail(ErrorCode::dtype_mismatch, "scale_dtype", "float16 or bfloat16", std::string(dtype_name(scale_dtype)));
  const std::int64_t E = spec.experts, H = spec.hidden, I = spec.intermediate;
  const QuantSpec a = spec.w13_spec(), b = spec.w2_spec();
  w13_qweight = HostTensor(DType::i32, {E, 2 * I, H / 8});
  w13_scales = HostTensor(scale_dtype, {E, 2 * I, a.groups()});
  w2_qweight = HostTensor(DType::i32, {E, H, I / 8});
  w2_scales = HostTensor(scale_dtype, {E, H, b.groups()});
  if (spec.scalar == ScalarType::uint4) {
    w13_zeros = HostTensor(DType::i32, {E, 2 * I / 8, a.groups()});
    w2_zeros = HostTensor(DType::i32, {E, H / 8, b.groups()});
  }
}

namespace {
// Slice e of a stacked [E, ...] host tensor as a view of the trailing dimensions.
TensorView slice(const HostTensor& t, int e) {
  const auto& s = t.shape();
  std::vector<std::int64_t> rest(s.begin() + 1, s.end());
  std::int64_t per = 1;
  for (auto d : rest) per *= d;
  auto* base = static_cast<unsigned char*>(const_cast<void*>(t.data()));
  return TensorView(base + static_cast<std::size_t>(e) * static_cast<std::size_t>(per) * dtype_size(t.dtype()),
                    t.dtype(), rest);
}

void check_layer(const CanonicalView& v, const QuantSpec& want, DType scale_dtype, const std::string& arg) {
  if (v.device != Device::cpu) fail(ErrorCode::invalid_argument, arg, "a host canonical view", "a cuda view");
  if (v.spec.n != want.n || v.spec.k != want.k || v.spec.group_size != want.group_size || v.spec.scalar != want.scalar)
    fail(ErrorCode::shape_mismatch, arg, want.describe(), v.spec.describe());
  if (v.scale_dtype != scale_dtype)
    fail(ErrorCode::dtype_mismatch, arg + ".scales", std::string(dtype_name(scale_dtype)),
         std::string(dtype_name(v.scale_dtype)));
  if (v.has_bias()) fail(ErrorCode::unsupported, arg + ".bias", "no bias (MoE experts have none)", "a bias");
  if (v.act_order())
    fail(ErrorCode::unsupported, arg + ".perm", "no act-order permutation (desc_act MoE experts are not supported)",
         "a perm");
}

void copy_rows(HostTensor& dst, int e, std::int64_t row0_bytes, const void* src, std::size_t bytes) {
  auto v = slice(dst, e);
  std::memcpy(static_cast<unsigned char*>(v.data) + row0_bytes, src, bytes);
}
}  // namespace

void MoeWeights::set_expert(int e, const CanonicalView& w13v, const CanonicalView& w2v) {
  if (e < 0 || e >= spec_.experts)
    fail(ErrorCode::invalid_argument, "expert", "[0, " + std::to_string(spec_.experts) + ")", std::to_string(e));
  check_layer(w13v, spec_.w13_spec(), scale_dtype_, "w13");
  check_layer(w2v, spec_.w2_spec(), scale_dtype_, "w2");
  copy_rows(w13_qweight, e, 0, w13v.qweight, slice(w13_qweight, e).nbytes());
  copy_rows(w13_scales, e, 0, w13v.scales, slice(w13_scales, e).nbytes());
  copy_rows(w2_qweight, e, 0, w2v.qweight, slice(w2_qweight, e).nbytes());
  copy_rows(w2_scales, e, 0, w2v.scales, slice(w2_scales, e).nbytes());
  if (spec_.scalar == ScalarType::uint4) {
    copy_rows(w13_zeros, e, 0, w13v.zeros.data(), slice(w13_zeros, e).nbytes());
    copy_rows(w2_zeros, e, 0, w2v.zeros.data(), slice(w2_zeros, e).nbytes());
  }
}

void MoeWeights::set_expert(int e, const CanonicalView& gate, const CanonicalView& up, const CanonicalView& down) {
  if (e < 0 || e >= spec_.experts)
    fail(ErrorCode::invalid_argument, "expert", "[0, " + std::to_string(spec_.experts) + ")", std::to_string(e));
  const QuantSpec half{spec_.intermediate, spec_.hidden, spec_.group_size, spec_.scalar};
  check_layer(gate, half, scale_dtype_, "gate_proj");
  check_layer(up, half, scale_dtype_, "up_proj");
  check_layer(down, spec_.w2_spec(), scale_dtype_, "down_proj");
  // Row blocks of the fused w13: gate rows [0, I), up rows [I, 2I). Zero words pack 8 rows, and
  // I % 8 == 0 (checked by the w13 spec with zeros), so the zero tensors split on word rows too.
  const std::size_t qw = slice(w13_qweight, e).nbytes() / 2, sc = slice(w13_scales, e).nbytes() / 2;
  copy_rows(w13_qweight, e, 0, gate.qweight, qw);
  copy_rows(w13_qweight, e, static_cast<std::int64_t>(qw), up.qweight, qw);
  copy_rows(w13_scales, e, 0, gate.scales, sc);
  copy_rows(w13_scales, e, static_cast<std::int64_t>(sc), up.scales, sc);
  copy_rows(w2_qweight, e, 0, down.qweight, slice(w2_qweight, e).nbytes());
  copy_rows(w2_scales, e, 0, down.scales, slice(w2_scales, e).nbytes());
  if (spec_.scalar == ScalarType::uint4) {
    if (spec_.intermediate % 8 != 0)
      fail(ErrorCode::shape_mismatch, "intermediate", "a multiple of 8 (packed zero rows)",
           std::to_string(spec_.intermediate));
    const std::size_t zb = slice(w13_zeros, e).nbytes() / 2;
    copy_rows(w13_zeros, e, 0, gate.zeros.data(), zb);
    copy_rows(w13_zeros, e, static_cast<std::int64_t>(zb), up.zeros.data(), zb);
    copy_rows(w2_zeros, e, 0, down.zeros.data(), slice(w2_zeros, e).nbytes());
  }
}

namespace {
// Expert e of stacked [E, ...] canonical tensors as a checked canonical view.
CanonicalView expert_view(const HostTensor& qweight, const HostTensor& scales, const HostTensor& zeros, int e,
                          const QuantSpec& spec) {
  CanonicalTensors t;
  t.qweight = slice(qweight, e);
  t.scales = slice(scales, e);
  if (spec.has_zeros()) t.zeros = slice(zeros, e);
  return make_canonical_view(t, spec);
}
}  // namespace

CanonicalView MoeWeights::w13(int e) const { return expert_view(w13_qweight, w13_scales, w13_zeros, e, spec_.w13_spec()); }

CanonicalView MoeWeights::w2(int e) const { return expert_view(w2_qweight, w2_scales, w2_zeros, e, spec_.w2_spec()); }

std::size_t MoeWeights::expert_bytes() const {
  const std::size_t E = static_cast<std::size_t>(spec_.experts);
  std::size_t b = (w13_qweight.nbytes() + w13_scales.nbytes() + w2_qweight.nbytes() + w2_scales.nbytes()) / E;
  if (spec_.scalar == ScalarType::uint4) b += (w13_zeros.nbytes() + w2_zeros.nbytes()) / E;
  return b;
}

}  // namespace w4a16::moe
