// The qweight words of layout "cuda.tc16x64.v1" (docs/LAYOUT.md) from canonical packed rows: host code, header-only,
// shared by the CUDA kernels' prepare (src/kernels/cuda/tc/tc_weights.cpp) and the MoE's stacked layout
// (src/moe/tc_layout.cpp). Checked bit for bit by tests/gpu/decode/test_tc_layout.cpp (against a transcription of
// docs/LAYOUT.md) and tests/moe/test_tc_layout.cpp (unpacked the way the kernels read it).
//
// Word j of lane l = (gid = l / 4, t = l % 4) in the tile (nt, kt) holds the fragment values a0..a7 of k16 sub-tile j,
// in nibble order a0 a2 a4 a6 a1 a3 a5 a7: a0 / a1 = (row gid, k 2t / 2t + 1), a2 / a3 = (row gid + 8, the same k),
// a4..a7 the same at k + 8. With k0 = 64 kt + 16 j + 2t, the pair (k0, k0 + 1) is byte t of canonical word
// (64 kt + 16 j) / 8 of the row (K % 8 == 0, so k0 % 8 == 2t), and (k0 + 8, k0 + 9) byte t of the next word: a word of
// the layout is 4 bytes of 4 canonical words, split into their low and high nibbles.
#pragma once
#include <cstdint>

namespace w4a16::formats {

// out: [n_pad / 16][k_pad / 64][32][4] words from qweight [n][k / 8] (canonical, row-major); rows >= n and words >= k / 8
// (the padding) read as 0. n_pad and k_pad multiples of 64, k a multiple of 8.
inline void tc16x64_qweight_words(const std::int32_t* qweight, std::int64_t n, std::int64_t k, std::int64_t n_pad,
                                  std::int64_t k_pad, std::uint32_t* out) {
  const std::int64_t wpr = k / 8, kt_count = k_pad / 64;
  for (std::int64_t nt = 0; nt < n_pad / 16; ++nt)
    for (std::int64_t kt = 0; kt < kt_count; ++kt) {
      // The tile's canonical words: 16 rows x the 8 words of k 64 kt .. 64 kt + 63 (0 past n or k).
      std::uint32_t c[16][8];
      const std::int64_t in_k = wpr - kt * 8 < 8 ? wpr - kt * 8 : 8;  // words of this k tile inside K (> 0)
      for (int r = 0; r < 16; ++r) {
        const std::int64_t row = nt * 16 + r;
        for (int i = 0; i < 8; ++i) c[r][i] = 0u;
        if (row >= n) continue;
        const std::int32_t* q = qweight + row * wpr + kt * 8;
        for (int i = 0; i < in_k; ++i) c[r][i] = static_cast<std::uint32_t>(q[i]);
      }
      std::uint32_t* o = out + (nt * kt_count + kt) * 128;  // [32 lanes][4 words], written in order
      for (int lane = 0; lane < 32; ++lane) {
        const int gid = lane / 4, sh = 8 * (lane % 4);
        for (int j = 0; j < 4; ++j) {  // sub-tile j: words 2j (k 16j..16j+7) and 2j + 1 (k 16j+8..16j+15)
          const std::uint32_t a0 = (c[gid][2 * j] >> sh) & 0xffu, a8 = (c[gid + 8][2 * j] >> sh) & 0xffu;
          const std::uint32_t b0 = (c[gid][2 * j + 1] >> sh) & 0xffu, b8 = (c[gid + 8][2 * j + 1] >> sh) & 0xffu;
          *o++ = (a0 & 15u) | (a8 & 15u) << 4 | (b0 & 15u) << 8 | (b8 & 15u) << 12 |  // a0 a2 a4 a6
                 (a0 >> 4) << 16 | (a8 >> 4) << 20 | (b0 >> 4) << 24 | (b8 >> 4) << 28;  // a1 a3 a5 a7
        }
      }
    }
}

}  // namespace w4a16::formats
