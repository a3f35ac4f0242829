// Host-only check (no GPU: runs in CI) that the prefill kernel's fp16 dequantization of the
// registers taken "high" (prefill_kernel.cuh dequant_word, Marlin's form: one hfma2 with 1/16 and
// -(64 + z)) gives the same bits as the form every register had before (shift, subtract 1024 + z),
// for every nibble q and zero point z and a spread of scales, including the multiply by the scale.
// Both forms are emulated word by word from the kernel's own constants (dequant_consts.hpp), with
// IEEE fp16 rounding: float arithmetic for the subtract and the multiply (24 >= 2 * 11 + 2 bits:
// the double rounding through float is innocuous), exact double for the fma whose one rounding
// then is the one to fp16. Also: the uint4 zero constants' byte-permute build equals the direct one.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "prefill/dequant_consts.hpp"

using namespace w4a16::kernels::cuda::prefill_detail;

namespace {

float h2f(std::uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half2float(__half(r));
}
std::uint16_t f2h(float f) { return static_cast<__half_raw>(__float2half_rn(f)).x; }
std::uint16_t lane(std::uint32_t w, int i) { return static_cast<std::uint16_t>(w >> (16 * i)); }

// fp16 a - b, a * b: correctly rounded through float.
std::uint16_t hsub(std::uint16_t a, std::uint16_t b) { return f2h(h2f(a) - h2f(b)); }
std::uint16_t hmul(std::uint16_t a, std::uint16_t b) { return f2h(h2f(a) * h2f(b)); }
// fp16 fma(a, b, c) for the operands of the dequantization: a * b + c is exact in double there
// (asserted), so its one rounding to fp16 is the fma's.
std::uint16_t hfma_exact(std::uint16_t a, std::uint16_t b, std::uint16_t c) {
  const double r = static_cast<double>(h2f(a)) * h2f(b) + h2f(c);
  EXPECT_EQ(static_cast<double>(static_cast<float>(r)), r) << "fma operands outside the exact range";
  return f2h(static_cast<float>(r));
}

using Regs = std::array<std::uint32_t, 4>;
// lane-wise fp16 (x - zz) * s, and fma(x, 1/16, zz) * s
std::uint32_t sub_mul(std::uint32_t x, std::uint32_t zz, std::uint32_t s) {
  std::uint32_t r = 0;
  for (int i = 0; i < 2; ++i) r |= static_cast<std::uint32_t>(hmul(hsub(lane(x, i), lane(zz, i)), lane(s, i))) << (16 * i);
  return r;
}
std::uint32_t fma_mul(std::uint32_t x, std::uint32_t zz, std::uint32_t s) {
  std::uint32_t r = 0;
  for (int i = 0; i < 2; ++i)
    r |= static_cast<std::uint32_t>(hmul(hfma_exact(lane(x, i), lane(kSixteenthF16, i), lane(zz, i)), lane(s, i))) << (16 * i);
  return r;
}
// One layout word -> its 4 A registers (rows gid, gid + 8, gid, gid + 8), as dequant_word.
// Old (main before this change, still the bf16 form): every register low after a shift by 0/4/8/12.
Regs word_old(std::uint32_t w, std::uint32_t z_lo, std::uint32_t z_hi, std::uint32_t s_lo, std::uint32_t s_hi) {
  const std::uint32_t zl = zlo_of(kMagicF16, z_lo), zh = zlo_of(kMagicF16, z_hi);
  auto lo = [](std::uint32_t v) { return (v & kNibbleLo) | kMagicF16; };
  return {sub_mul(lo(w), zl, s_lo), sub_mul(lo(w >> 4), zh, s_hi), sub_mul(lo(w >> 8), zl, s_lo), sub_mul(lo(w >> 12), zh, s_hi)};
}
// New fp16 form: registers 0 / 2 low from w / w >> 8, registers 1 / 3 high from w / w >> 8.
Regs word_new(std::uint32_t w, std::uint32_t z_lo, std::uint32_t z_hi, std::uint32_t s_lo, std::uint32_t s_hi) {
  const std::uint32_t zl = zlo_of(kMagicF16, z_lo), zh = zhi_of_f16(z_hi), w8 = w >> 8;
  auto lo = [](std::uint32_t v) { return (v & kNibbleLo) | kMagicF16; };
  auto hi = [](std::uint32_t v) { return (v & kNibbleHi) | kMagicF16; };
  return {sub_mul(lo(w), zl, s_lo), fma_mul(hi(w), zh, s_hi), sub_mul(lo(w8), zl, s_lo), fma_mul(hi(w8), zh, s_hi)};
}

// Scales: signed, normal, subnormal, zero, the largest finite, and a sweep of exponents.
std::vector<std::uint16_t> scale_bits() {
  std::vector<std::uint16_t> v = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x2e66, 0x1234};
  for (std::uint32_t e = 1; e < 31; e += 3)
    for (std::uint32_t m : {0u, 0x155u, 0x3ffu}) {
      v.push_back(static_cast<std::uint16_t>((e << 10) | m));
      v.push_back(static_cast<std::uint16_t>(0x8000u | (e << 10) | m));
    }
  return v;
}

}  // namespace

// The constants say what their comments say.
TEST(PrefillDequantHost, ConstantsAreTheDocumentedFp16Values) {
  EXPECT_EQ(h2f(lane(kMagicF16, 0)), 1024.f);
  EXPECT_EQ(h2f(lane(kSixteenthF16, 1)), 1.f / 16);
  for (std::uint32_t z = 0; z < 16; ++z) {
    EXPECT_EQ(h2f(lane(zlo_of(kMagicF16, z), 0)), 1024.f + z) << "z=" << z;
    EXPECT_EQ(h2f(lane(zhi_of_f16(z), 0)), -(64.f + z)) << "z=" << z;
    EXPECT_EQ(lane(zhi_of_f16(z), 0), lane(zhi_of_f16(z), 1)) << "z=" << z << ": both lanes";
    EXPECT_EQ(lane(zlo_of(kMagicBf16, z), 1), 0x4300u + z) << "z=" << z << ": bf16 128 + z";
  }
}

// Every q in every nibble position (each nibble of the word sweeps 0..15, the others shifted
// patterns), every z of both rows, every scale, scale lanes of opposite sign: the new form is
// bit-identical to the old, including the sign of zero (q == z: +0 in both, then +-0 by the scale).
TEST(PrefillDequantHost, Fp16WordIsBitIdenticalToSubtractForm) {
  const std::vector<std::uint16_t> scales = scale_bits();
  long checked = 0, diff = 0;
  for (std::uint32_t q = 0; q < 16; ++q) {
    // nibble i = (q + 5 i) mod 16: over q, every nibble takes every value
    std::uint32_t w = 0;
    for (int i = 0; i < 8; ++i) w |= ((q + 5u * i) & 15u) << (4 * i);
    for (std::uint32_t z = 0; z < 16; ++z) {
      const std::uint32_t z_lo = z, z_hi = (z * 7u + 3u) & 15u;  // rows gid / gid + 8 with different zero points
      for (std::size_t si = 0; si < scales.size(); ++si) {
        const std::uint32_t s_lo = scales[si] | static_cast<std::uint32_t>(scales[si] ^ 0x8000u) << 16;
        const std::uint32_t s_hi = scales[(si + 7) % scales.size()] * 0x00010001u;
        const Regs a = word_old(w, z_lo, z_hi, s_lo, s_hi), b = word_new(w, z_lo, z_hi, s_lo, s_hi);
        for (int r = 0; r < 4; ++r) {
          if (a[r] != b[r] && ++diff <= 5)
            ADD_FAILURE() << "w=0x" << std::hex << w << " z_lo=" << std::dec << z_lo << " z_hi=" << z_hi << " register " << r
                          << " s=0x" << std::hex << s_lo << "/0x" << s_hi << ": old 0x" << a[r] << " new 0x" << b[r];
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(diff, 0);
  EXPECT_EQ(checked, 16L * 16 * 4 * static_cast<long>(scales.size()));
}

// With scale 1 the registers are q - z exactly (the dequantized value, not only equal bits).
TEST(PrefillDequantHost, Fp16WordGivesQMinusZ) {
  for (std::uint32_t q = 0; q < 16; ++q)
    for (std::uint32_t z = 0; z < 16; ++z) {
      const Regs r = word_new(q * 0x11111111u, z, z, 0x3c003c00u, 0x3c003c00u);
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 2; ++l)
          EXPECT_EQ(h2f(lane(r[i], l)), static_cast<float>(static_cast<int>(q) - static_cast<int>(z))) << "q=" << q << " z=" << z << " register " << i;
    }
}

// __byte_perm(x, y, sel) on the host (PTX prmt, default mode): byte i of the result is byte
// (sel >> 4 i) & 7 of the 8-byte {y, x} (x bytes 0..3, y bytes 4..7).
namespace {
std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t sel) {
  const std::uint64_t xy = (static_cast<std::uint64_t>(y) << 32) | x;
  std::uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<std::uint32_t>((xy >> (8 * ((sel >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}
}  // namespace

// uint4 zero constants: the byte-permute build (prefill_kernel.cuh dequant_raw) equals zlo_of /
// zhi_of of the two rows' zero points, for every zero byte at every byte position of the word
// (the other bytes set, so a wrong selector shows).
TEST(PrefillDequantHost, ZeroConstantsFromTheByteMatchTheDirectForm) {
  int checked = 0;
  for (std::uint32_t b = 0; b < 4; ++b)
    for (std::uint32_t zb = 0; zb < 256; ++zb) {
      const std::uint32_t zw = (0xa5c3e1f7u & ~(0xffu << (8 * b))) | (zb << (8 * b));
      const std::uint32_t rep = byte_perm(zw, 0, zero_rep_sel(b));
      const std::uint32_t z_lo = zb & 15u, z_hi = zb >> 4;
      EXPECT_EQ(zlo_of_rep(kMagicF16, rep), zlo_of(kMagicF16, z_lo)) << "b=" << b << " zb=" << zb;
      EXPECT_EQ(zhi_of_rep_f16(rep), zhi_of_f16(z_hi)) << "b=" << b << " zb=" << zb;
      EXPECT_EQ(zlo_of_rep(kMagicBf16, rep), zlo_of(kMagicBf16, z_lo)) << "b=" << b << " zb=" << zb;
      EXPECT_EQ(zlo_of_rep(kMagicBf16, rep >> 4), zlo_of(kMagicBf16, z_hi)) << "b=" << b << " zb=" << zb << ": bf16 rows gid + 8";
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 256);
}
