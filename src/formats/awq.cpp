// AWQ (AutoAWQ "GEMM") <-> canonical. See shared/FORMATS.md:
//   qweight int32 [K, N/8]: nibble i of word (k, j) holds column 8j + ORDER[i]
//   qzeros  int32 [G, N/8]: the same interleave along N
//   scales  f16|bf16 [G, N]
// ORDER = [0, 2, 4, 6, 1, 3, 5, 7] (AutoAWQ's pack order, chosen so that its GEMM kernel's
// dequant of one word yields half2 pairs of adjacent columns); column c of a word therefore
// sits in nibble REVERSE[c].
#include "detail.hpp"
#include "w4a16/formats/formats.hpp"

namespace w4a16::formats {

namespace {
constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};    // nibble i -> column within the word
constexpr int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // column within the word -> nibble

// AWQ word (interleaved, column c in nibble REVERSE[c]) -> plain word (column c in nibble c).
std::uint32_t deinterleave(std::uint32_t w) {
  std::uint32_t out = 0;
  for (int c = 0; c < 8; ++c) out |= static_cast<std::uint32_t>(detail::nibble(w, kReverse[c])) << (4 * c);
  return out;
}
std::uint32_t interleave(std::uint32_t plain) {
  std::uint32_t out = 0;
  for (int i = 0; i < 8; ++i) out |= static_cast<std::uint32_t>(detail::nibble(plain, kOrder[i])) << (4 * i);
  return out;
}
}  // namespace

QuantizedLinear awq_to_canonical(const AwqTensors& t, int group_size) {
  detail::check_group_size(group_size, "awq group_size");
  detail::check_input(t.qweight, "qweight", DType::i32, 2, "[K, N/8] (AWQ GEMM: 8 x uint4 along N, interleaved)");
  QuantSpec spec;
  spec.k = t.qweight.size(0);
  spec.n = 8 * t.qweight.size(1);
  spec.group_size = group_size;
  spec.scalar = ScalarType::uint4;
  spec.validate("qweight");  // K % 8, K % group size
  const std::int64_t N = spec.n, K = spec.k, G = spec.groups();

  const std::string zwhat = "[G, N/8] = [" + std::to_string(G) + ", " + std::to_string(N / 8) +
                            "] (AWQ: 8 x uint4 zero points along N, interleaved)";
  detail::check_input(t.qzeros, "qzeros", DType::i32, 2, zwhat);
  check_shape(t.qzeros, "qzeros", {G, N / 8}, "[G, N/8]");
  detail::check_scales(t.scales, "scales", "[G, N]");
  check_shape(t.scales, "scales", {G, N}, "[G, N]");
  const bool has_bias = !detail::absent(t.bias);

  QuantizedLinear out(spec, t.scales.dtype, has_bias, false);
  auto* qw = out.qweight().ptr<std::int32_t>();  // [N, K/8]
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N / 8; ++j) {
      std::uint32_t plain = deinterleave(detail::load_u32(t.qweight.data, k * (N / 8) + j));
      for (int c = 0; c < 8; ++c) {
        std::int64_t n = 8 * j + c;
        auto& word = reinterpret_cast<std::uint32_t&>(qw[n * (K / 8) + k / 8]);
        word |= static_cast<std::uint32_t>(detail::nibble(plain, c)) << (4 * (k % 8));
      }
    }
  auto* zp = out.zeros().ptr<std::int32_t>();  // [N/8, G]: the same 8 columns per word, plain order
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t j = 0; j < N / 8; ++j)
      zp[j * G + g] = static_cast<std::int32_t>(deinterleave(detail::load_u32(t.qzeros.data, g * (N / 8) + j)));
  auto* sc = out.scales().ptr<std::uint16_t>();  // [N, G]
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n) sc[n * G + g] = detail::load_u16(t.scales.data, g * N + n);
  if (has_bias) detail::copy_bias(t.bias, N, out.bias(), "bias");
  return out;
}

AwqHost canonical_to_awq(const CanonicalView& w) {
  detail::check_host_view(w.device, "canonical_to_awq");
  if (!w.spec.has_zeros())
    fail(ErrorCode::unsupported, "canonical_to_awq weights", "scalar type uint4 (AWQ always stores zero points)",
         std::string(scalar_type_name(w.spec.scalar)));
  if (w.act_order())
    fail(ErrorCode::unsupported, "canonical_to_awq perm", "no act-order permutation (AWQ has no g_idx)", "a perm [K]");
  const std::int64_t N = w.spec.n, K = w.spec.k, G = w.spec.groups();
  AwqHost h;
  h.qweight = HostTensor(DType::i32, {K, N / 8});
  h.qzeros = HostTensor(DType::i32, {G, N / 8});
  auto* qw = h.qweight.ptr<std::int32_t>();
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t j = 0; j < N / 8; ++j) {
      std::uint32_t plain = 0;
      for (int c = 0; c < 8; ++c) plain |= static_cast<std::uint32_t>(w.q(8 * j + c, k)) << (4 * c);
      qw[k * (N / 8) + j] = static_cast<std::int32_t>(interleave(plain));
    }
  auto* zp = h.qzeros.ptr<std::int32_t>();
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t j = 0; j < N / 8; ++j)
      zp[g * (N / 8) + j] = static_cast<std::int32_t>(interleave(static_cast<std::uint32_t>(w.zeros.data()[j * G + g])));
  detail::export_scales_and_bias(w, h.scales, h.bias);
  return h;
}

}  // namespace w4a16::formats
