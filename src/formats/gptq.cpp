// GPTQ (AutoGPTQ / GPTQModel) <-> canonical. See shared/FORMATS.md:
//   qweight int32 [K/8, N]: nibble i of word (r, n) is q[8r + i, n] (packed along K, no interleave)
//   qzeros  int32 [G, N/8]: nibble i of word (group, j) is the zero of column 8j + i;
//                           v1 ("gptq") stores z - 1 mod 16, v2 ("gptq_v2") stores z
//   scales  f16|bf16 [G, N]
//   g_idx   int32 [K]: group of input channel k (k / g without act-order)
// Act-order: the canonical perm is the stable argsort of g_idx, so canonical position k'
// holds original channel perm[k'] and belongs to group k' / g.
#include <cstring>
#include <vector>

#include "detail.hpp"
#include "w4a16/formats/formats.hpp"

namespace w4a16::formats {

namespace {
int stored_to_z(int stored, GptqVersion v) { return v == GptqVersion::v1 ? ((stored + 1) & 15) : stored; }
int z_to_stored(int z, GptqVersion v) { return v == GptqVersion::v1 ? ((z - 1) & 15) : z; }
const char* version_name(GptqVersion v) { return v == GptqVersion::v1 ? "v1 (checkpoint_format \"gptq\")" : "v2 (\"gptq_v2\")"; }
}  // namespace

QuantizedLinear gptq_to_canonical(const GptqTensors& t, const GptqOptions& opt) {
  detail::check_group_size(opt.group_size, "gptq group_size");
  detail::check_input(t.qweight, "qweight", DType::i32, 2, "[K/8, N] (GPTQ: 8 x uint4 along K)");
  QuantSpec spec;
  spec.k = 8 * t.qweight.size(0);
  spec.n = t.qweight.size(1);
  spec.group_size = opt.group_size;
  spec.scalar = opt.sym ? ScalarType::uint4b8 : ScalarType::uint4;
  spec.validate("qweight");  // K % group size; N % 8 with zero points
  const std::int64_t N = spec.n, K = spec.k, G = spec.groups(), gl = spec.group_len();
  const std::int64_t zcols = (N + 7) / 8;  // a symmetric layer with N % 8 != 0 still stores a padded word

  detail::check_scales(t.scales, "scales", "[G, N]");
  check_shape(t.scales, "scales", {G, N}, "[G, N]");

  const bool have_zeros = !detail::absent(t.qzeros);
  if (!opt.sym && !have_zeros)
    fail(ErrorCode::invalid_argument, "qzeros", "int32 [G, N/8] for an asymmetric (sym = false) layer", "no tensor");
  if (have_zeros) {
    const std::string zwhat = "[G, N/8] = [" + std::to_string(G) + ", " + std::to_string(zcols) + "] (GPTQ: 8 x uint4 along N)";
    detail::check_input(t.qzeros, "qzeros", DType::i32, 2, zwhat);
    check_shape(t.qzeros, "qzeros", {G, zcols}, "[G, N/8]");
  }

  // g_idx: validate, decide whether it is the trivial k / g, else build the stable argsort.
  std::vector<std::int32_t> perm;
  if (!detail::absent(t.g_idx)) {
    detail::check_input(t.g_idx, "g_idx", DType::i32, 1, "[K]");
    check_shape(t.g_idx, "g_idx", {K}, "[K]");
    bool trivial = true;
    std::vector<std::int64_t> count(static_cast<std::size_t>(G), 0);
    for (std::int64_t k = 0; k < K; ++k) {
      auto gi = static_cast<std::int32_t>(detail::load_u32(t.g_idx.data, k));
      if (gi < 0 || gi >= G)
        fail(ErrorCode::invalid_argument, "g_idx", "group indices in 0.." + std::to_string(G - 1) + " (G = K / g)",
             "g_idx[" + std::to_string(k) + "] = " + std::to_string(gi));
      if (gi != k / gl) trivial = false;
      ++count[static_cast<std::size_t>(gi)];
    }
    if (!trivial) {
      if (!opt.desc_act)
        fail(ErrorCode::format_error, "g_idx",
             "k / group_size for every k (desc_act is false), or desc_act = true for an act-order g_idx",
             "a g_idx that is not k / " + std::to_string(gl));
      for (std::int64_t g = 0; g < G; ++g)
        if (count[static_cast<std::size_t>(g)] != gl)
          fail(ErrorCode::format_error, "g_idx", "exactly g = " + std::to_string(gl) + " input channels in every group",
               "group " + std::to_string(g) + " with " + std::to_string(count[static_cast<std::size_t>(g)]));
      // Stable counting sort: channels of group 0 in increasing k, then group 1, ...
      std::vector<std::int64_t> next(static_cast<std::size_t>(G));
      for (std::int64_t g = 0; g < G; ++g) next[static_cast<std::size_t>(g)] = g * gl;
      perm.resize(static_cast<std::size_t>(K));
      for (std::int64_t k = 0; k < K; ++k) {
        auto gi = static_cast<std::int32_t>(detail::load_u32(t.g_idx.data, k));
        perm[static_cast<std::size_t>(next[static_cast<std::size_t>(gi)]++)] = static_cast<std::int32_t>(k);
      }
    }
  } else if (opt.desc_act) {
    fail(ErrorCode::invalid_argument, "g_idx", "int32 [K] for desc_act = true", "no tensor");
  }

  const bool has_bias = !detail::absent(t.bias);
  QuantizedLinear out(spec, t.scales.dtype, has_bias, !perm.empty());
  auto* qw = out.qweight().ptr<std::int32_t>();  // [N, K/8]
  for (std::int64_t kc = 0; kc < K; ++kc) {
    std::int64_t ko = perm.empty() ? kc : perm[static_cast<std::size_t>(kc)];
    for (std::int64_t n = 0; n < N; ++n) {
      int v = detail::nibble(detail::load_u32(t.qweight.data, (ko / 8) * N + n), static_cast<int>(ko % 8));
      reinterpret_cast<std::uint32_t&>(qw[n * (K / 8) + kc / 8]) |= static_cast<std::uint32_t>(v) << (4 * (kc % 8));
    }
  }
  if (have_zeros) {
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t j = 0; j < zcols; ++j) {
        std::uint32_t word = detail::load_u32(t.qzeros.data, g * zcols + j);
        std::uint32_t plain = 0;
        for (int i = 0; i < 8; ++i) {
          if (8 * j + i >= N) break;
          int z = stored_to_z(detail::nibble(word, i), opt.version);
          if (opt.sym && z != 8)
            fail(ErrorCode::format_error, "qzeros",
                 std::string("z = 8 in every group of a symmetric (sym = true) layer, read as ") + version_name(opt.version),
                 "z = " + std::to_string(z) + " at group " + std::to_string(g) + ", column " + std::to_string(8 * j + i) +
                     " (is the layer asymmetric, or the checkpoint_format wrong?)");
          plain |= static_cast<std::uint32_t>(z) << (4 * i);
        }
        if (!opt.sym) out.zeros().ptr<std::int32_t>()[j * G + g] = static_cast<std::int32_t>(plain);
      }
  }
  auto* sc = out.scales().ptr<std::uint16_t>();  // [N, G]
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n) sc[n * G + g] = detail::load_u16(t.scales.data, g * N + n);
  if (has_bias) detail::copy_bias(t.bias, N, out.bias(), "bias");
  if (!perm.empty()) std::memcpy(out.perm().data(), perm.data(), perm.size() * 4);
  return out;
}

GptqHost canonical_to_gptq(const CanonicalView& w, std::optional<GptqVersion> version) {
  detail::check_host_view(w.device, "canonical_to_gptq");
  const bool sym = !w.spec.has_zeros();
  const GptqVersion v = version.value_or(sym ? GptqVersion::v1 : GptqVersion::v2);
  const std::int64_t N = w.spec.n, K = w.spec.k, G = w.spec.groups(), gl = w.spec.group_len();
  const std::int64_t zcols = (N + 7) / 8;
  if (!sym && v == GptqVersion::v1)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t g = 0; g < G; ++g)
        if (w.z(n, g) == 0)
          fail(ErrorCode::unsupported, "canonical_to_gptq version",
               "gptq_v2 for an asymmetric layer with a zero point of 0 (v1 would store z - 1 = -1)",
               "v1 with z[" + std::to_string(n) + ", " + std::to_string(g) + "] = 0");
  GptqHost h;
  h.version = v;
  h.qweight = HostTensor(DType::i32, {K / 8, N});
  h.qzeros = HostTensor(DType::i32, {G, zcols});
  h.g_idx = HostTensor(DType::i32, {K});
  auto* qw = h.qweight.ptr<std::int32_t>();
  auto* gi = h.g_idx.ptr<std::int32_t>();
  for (std::int64_t kc = 0; kc < K; ++kc) {
    std::int64_t ko = w.act_order() ? w.perm[kc] : kc;  // rows are written in the original channel order
    gi[ko] = static_cast<std::int32_t>(kc / gl);
    for (std::int64_t n = 0; n < N; ++n)
      reinterpret_cast<std::uint32_t&>(qw[(ko / 8) * N + n]) |= static_cast<std::uint32_t>(w.q(n, kc)) << (4 * (ko % 8));
  }
  auto* zp = h.qzeros.ptr<std::int32_t>();
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t j = 0; j < zcols; ++j) {
      std::uint32_t word = 0;
      for (int i = 0; i < 8; ++i) {
        std::int64_t n = 8 * j + i;
        int z = (sym || n >= N) ? 8 : w.z(n, g);  // padding columns of a symmetric layer repeat z = 8
        word |= static_cast<std::uint32_t>(z_to_stored(z, v)) << (4 * i);
      }
      zp[g * zcols + j] = static_cast<std::int32_t>(word);
    }
  detail::export_scales_and_bias(w, h.scales, h.bias);
  return h;
}

}  // namespace w4a16::formats
