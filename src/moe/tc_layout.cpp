// Host packer of one layer into "cuda.tc16x64.v1" (docs/LAYOUT.md), written from that spec
// alone so the MoE kernels depend on no other kernel's internals. The MoE CUDA weights stack
// one such layer per expert. Checked by tests/moe/test_tc_layout.cpp (unpacks per the spec).
#include <cstring>

#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/formats/tc16x64_words.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {

Tc16x64Sizes tc16x64_sizes(const QuantSpec& spec) {
  Tc16x64Sizes s;
  s.n_pad = (spec.n + 63) / 64 * 64;
  s.k_pad = (spec.k + 63) / 64 * 64;
  s.groups = spec.groups();
  s.qweight_bytes = static_cast<std::size_t>(s.n_pad * s.k_pad / 2);
  s.scales_bytes = static_cast<std::size_t>(s.groups * s.n_pad * 2);
  s.zeros_bytes = spec.has_zeros() ? static_cast<std::size_t>(s.groups * s.n_pad / 2) : 0;
  return s;
}

void tc16x64_pack(const CanonicalView& w, DType act, void* qweight, void* scales, void* zeros) {
  if (w.device != Device::cpu) fail(ErrorCode::invalid_argument, "w", "a host canonical view", "a cuda view");
  if (!is_activation_dtype(act)) fail(ErrorCode::dtype_mismatch, "act", "float16 or bfloat16", std::string(dtype_name(act)));
  if (w.act_order()) fail(ErrorCode::unsupported, "w.perm", "no act-order permutation", "a perm");
  const Tc16x64Sizes sz = tc16x64_sizes(w.spec);
  const std::int64_t N = w.spec.n, K = w.spec.k, G = sz.groups;
  formats::tc16x64_qweight_words(w.qweight, N, K, sz.n_pad, sz.k_pad, static_cast<std::uint32_t*>(qweight));  // [N_pad/16][K_pad/64][32][4]
  auto* sc = static_cast<std::uint16_t*>(scales);  // [G][N_pad], pair-interleaved per 16 rows
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t nt = 0; nt < sz.n_pad / 16; ++nt)
      for (int r = 0; r < 8; ++r)
        for (int h = 0; h < 2; ++h) {
          const std::int64_t n = 16 * nt + r + 8 * h;
          sc[g * sz.n_pad + 16 * nt + 2 * r + h] = n < N ? float_to_f16x(act, w.s(n, g)) : 0;  // padded rows: scale 0
        }
  if (w.spec.has_zeros()) {
    auto* z = static_cast<std::uint8_t*>(zeros);  // [G][N_pad/16][8]
    for (std::int64_t g = 0; g < G; ++g)
      for (std::int64_t nt = 0; nt < sz.n_pad / 16; ++nt)
        for (int r = 0; r < 8; ++r) {
          const std::int64_t n0 = 16 * nt + r, n1 = n0 + 8;
          const int z0 = n0 < N ? w.z(n0, g) : 0, z1 = n1 < N ? w.z(n1, g) : 0;
          z[(g * (sz.n_pad / 16) + nt) * 8 + r] = static_cast<std::uint8_t>(z0 | (z1 << 4));
        }
  }
}

}  // namespace w4a16::moe
