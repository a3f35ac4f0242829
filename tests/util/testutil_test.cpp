// CPU tests of the shared test helpers whose mistakes would show up only as failures (or UB)
// in the GPU suites that use them: the row sampler of the prefill GPU test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "testutil.hpp"

namespace w4a16::test {
namespace {

// Every sampled row lies in [0, M), sorted and distinct; small M checks every row; large M
// keeps the tile edges that exist and the last rows. M = 129..256 once sampled rows 255 and
// 256, read past the host copies of x and y (PrefillGpu.TmaConfigsOnTailsStridesAndActOrder
// reported rel error inf at M = 129 for every config).
TEST(TestUtil, SampleRowsStayInsideM) {
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(seed()));
  for (std::int64_t m : {0, 1, 2, 63, 64, 65, 127, 128, 129, 130, 200, 255, 256, 257, 300, 1000, 4097}) {
    const std::vector<std::int64_t> r = sample_rows(m);
    ASSERT_TRUE(std::is_sorted(r.begin(), r.end())) << "M=" << m;
    EXPECT_TRUE(std::adjacent_find(r.begin(), r.end()) == r.end()) << "M=" << m << ": repeated row";
    for (std::int64_t row : r) {
      EXPECT_GE(row, 0) << "M=" << m;
      EXPECT_LT(row, m) << "M=" << m;
    }
    if (m <= 128) {
      EXPECT_EQ(static_cast<std::int64_t>(r.size()), m) << "M <= 128: every row";
      continue;
    }
    EXPECT_EQ(r.size(), 48u) << "M=" << m;
    for (std::int64_t edge : {0, 1, 63, 64, 127, 128, 255, 256})
      if (edge < m) {
        EXPECT_TRUE(std::binary_search(r.begin(), r.end(), edge)) << "M=" << m << " edge " << edge;
      }
    EXPECT_TRUE(std::binary_search(r.begin(), r.end(), m - 1)) << "M=" << m << ": last row";
  }
}

}  // namespace
}  // namespace w4a16::test
