// Host-only checks of the decode launcher's arithmetic (no GPU needed: runs in CI).
#include <gtest/gtest.h>

#include "decode/decode.hpp"

using namespace w4a16::kernels::cuda;

// decode.hpp documents the shared-memory bounds on K per token chunk; decode_fits is what the
// launcher and the registry consult.
TEST(DecodeHost, FitsTheDocumentedBoundsAndShrinksWithTokens) {
  EXPECT_TRUE(decode_fits(24576, 16, true, 32));    // the documented 16-token bound, uint4 g = 32
  EXPECT_FALSE(decode_fits(65536, 16, true, 32));
  EXPECT_TRUE(decode_fits(33792, 16, false, 128));  // uint4b8, g >= 64
  EXPECT_TRUE(decode_fits(51200, 8, true, 32));     // 8 tokens: twice the K
  EXPECT_TRUE(decode_fits(65536, 1, true, 32));     // 1 token: far beyond any layer
  EXPECT_FALSE(decode_fits(std::int64_t{1} << 24, 1, false, 128));
  // Fewer tokens never fit less K.
  for (std::int64_t k = 4096; k <= (std::int64_t{1} << 20); k += 4096)
    for (int m = 2; m <= 16; ++m)
      if (decode_fits(k, m, true, 32)) ASSERT_TRUE(decode_fits(k, m - 1, true, 32)) << "K=" << k << " m=" << m;
}
