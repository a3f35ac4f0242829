// CPU tests of the shared test helpers whose mistakes would show up only as failures (or UB)
// in the GPU suites that use them: the row sampler of the prefill GPU test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
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

TEST(TestUtil, PerturbedVariantsChangeOneThingEachAndAreZero) {
  HostTensor t(DType::f16, {4, 1});
  std::memset(t.data(), 0x5a, t.nbytes());
  const auto v = perturbed_variants(t, {DType::f16, DType::i32});
  // dim 0: 5, 8, 2; dim 1: 2, 2 (doubled), halving 1 skipped; dtype int32; [4, 1, 1]; [4].
  std::vector<std::string> what;
  for (const auto& [w, h] : v) {
    what.push_back(w);
    EXPECT_TRUE(h.dtype() != t.dtype() || h.shape() != t.shape()) << w;
    for (std::size_t i = 0; i < h.nbytes(); ++i) ASSERT_EQ(static_cast<const unsigned char*>(h.data())[i], 0) << w;
  }
  EXPECT_EQ(what, (std::vector<std::string>{"dim 0 -> 5", "dim 0 -> 8", "dim 0 -> 2", "dim 1 -> 2", "dim 1 -> 2", "dtype int32",
                                            "a dimension added", "a dimension dropped"}));
}

}  // namespace
}  // namespace w4a16::test
