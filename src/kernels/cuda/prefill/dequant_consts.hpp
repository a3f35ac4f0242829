// The bit patterns of the prefill kernel's magic-number dequantization (prefill_kernel.cuh,
// dequant_word), as plain constexpr C++ so that the host test (tests/gpu/prefill/
// test_prefill_dequant_host.cpp) checks the very constants the kernel uses.
// Each 32-bit word holds two 16-bit lanes (one per row pair element); z is a zero point in 0..15.
#pragma once
#include <cstdint>

namespace w4a16::kernels::cuda::prefill_detail {

// fp16 1024.0 = 0x6400: mantissa unit 1, so 0x6400 | q = 1024 + q and 0x6400 | (q << 4) = 1024 + 16 q exactly.
inline constexpr std::uint32_t kMagicF16 = 0x64006400u;
// bf16 128.0 = 0x4300: mantissa unit 1, so 0x4300 | q = 128 + q exactly (7 mantissa bits: no room for q << 4).
inline constexpr std::uint32_t kMagicBf16 = 0x43004300u;
// fp16 1/16 in both lanes: (1024 + 16 q) * 1/16 = 64 + q, exact.
inline constexpr std::uint32_t kSixteenthF16 = 0x2C002C00u;
// Nibble masks: "low" takes nibbles 0 and 4 of a word into the mantissa's bits 0..3, "high"
// nibbles 1 and 5 into bits 4..7 (fp16 only).
inline constexpr std::uint32_t kNibbleLo = 0x000f000fu;
inline constexpr std::uint32_t kNibbleHi = 0x00f000f0u;

// magic + z in both lanes: subtracted from a low-taken nibble, (magic + q) - (magic + z) = q - z.
constexpr std::uint32_t zlo_of(std::uint32_t magic, std::uint32_t z) { return magic | z | (z << 16); }
// fp16 -(64 + z) in both lanes: fp16 -64 = 0xD400 has mantissa unit 1/16, so -(64 + z) = 0xD400 + 16 z
// (z < 16: bits 4..7, below the exponent). Added after the 1/16 multiply of a high-taken nibble:
// fma(1024 + 16 q, 1/16, -(64 + z)) = q - z, exact.
constexpr std::uint32_t zhi_of_f16(std::uint32_t z) { return 0xD400D400u + z * 0x00100010u; }

// The zero constants of a thread's two rows from its 4-byte zero word (uint4): byte b = gid % 4 holds
// zb = z[gid] | z[gid + 8] << 4. One byte permute with zero_rep_sel(b) (made once per thread) gives
// rep = zb in bytes 0 and 2, then one lop3 per constant: rep & 0x000f000f | magic = zlo_of(magic, z[gid]),
// rep & 0x00f000f0 | 0xD400D400 = zhi_of_f16(z[gid + 8]) (0xD400's bits 0..9 are zero: | is +).
// __byte_perm(x, 0, sel): result byte i = byte (sel >> 4 i) & 7 of {x, 0}; 4 picks a zero byte.
constexpr std::uint32_t zero_rep_sel(std::uint32_t b) { return 0x4040u | b * 0x0101u; }
constexpr std::uint32_t zlo_of_rep(std::uint32_t magic, std::uint32_t rep) { return (rep & kNibbleLo) | magic; }
constexpr std::uint32_t zhi_of_rep_f16(std::uint32_t rep) { return (rep & kNibbleHi) | 0xD400D400u; }

}  // namespace w4a16::kernels::cuda::prefill_detail
