// The MoE checkpoint loader on tiny synthetic Hugging Face folders written with the project's
// own writers (formats::canonical_to_awq / canonical_to_gptq, io::write_safetensors): every
// expert's gate/up/down must come back bit for bit, fused gate-then-up, with the router.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "moe_checkpoint.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/safetensors.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {
namespace {

namespace fs = std::filesystem;
using testckpt::Expert;
using testckpt::write_checkpoint;

fs::path fresh_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("w4a16_moe_" + tag + "_" + std::to_string(test::seed()) + "_" +
                                            std::to_string(test::rng()()));
  fs::create_directories(d);
  return d;
}

void expect_same(const CanonicalView& got, std::int64_t row0, const CanonicalView& want, const std::string& what) {
  for (std::int64_t n = 0; n < want.spec.n; ++n) {
    for (std::int64_t g = 0; g < want.spec.groups(); ++g) {
      ASSERT_EQ(got.scales[(row0 + n) * got.spec.groups() + g], want.scales[n * want.spec.groups() + g]) << what;
      ASSERT_EQ(got.z(row0 + n, g), want.z(n, g)) << what << " zero n=" << n;
    }
    for (std::int64_t k = 0; k < want.spec.k; ++k) ASSERT_EQ(got.q(row0 + n, k), want.q(n, k)) << what << " n=" << n;
  }
}

struct Case {
  std::string method;
  ScalarType st;
  int g;
};
class MoeLoader : public ::testing::TestWithParam<Case> {};

TEST_P(MoeLoader, ExpertsComeBackBitForBit) {
  const Case c = GetParam();
  const int E = 3, layer = 2;
  const std::int64_t H = 64, I = 32;
  fs::path dir = fresh_dir(c.method);
  HostTensor router;
  std::vector<Expert> ex = write_checkpoint(dir, c.method, c.st, E, H, I, c.g, layer, router);
  MoeLayer L = load_moe_layer(dir.string(), layer);
  const MoeSpec& s = L.weights.spec();
  EXPECT_EQ(s.experts, E);
  EXPECT_EQ(s.hidden, H);
  EXPECT_EQ(s.intermediate, I);
  EXPECT_EQ(s.group_size, c.g);
  EXPECT_EQ(s.scalar, c.st);
  for (int e = 0; e < E; ++e) {
    expect_same(L.weights.w13(e), 0, ex[e].gate.view(), "gate " + std::to_string(e));
    expect_same(L.weights.w13(e), I, ex[e].up.view(), "up " + std::to_string(e));
    expect_same(L.weights.w2(e), 0, ex[e].down.view(), "down " + std::to_string(e));
  }
  ASSERT_EQ(L.router.dtype(), DType::bf16);
  ASSERT_EQ(L.router.nbytes(), router.nbytes());
  EXPECT_EQ(std::memcmp(L.router.data(), router.data(), router.nbytes()), 0);
  EXPECT_THROW(load_moe_layer(dir.string(), layer + 1), Error);  // no such layer
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Formats, MoeLoader,
                         ::testing::Values(Case{"awq", ScalarType::uint4, 32}, Case{"gptq", ScalarType::uint4b8, 32},
                                           Case{"gptq", ScalarType::uint4, kChannelwise}));

TEST(MoeLoaderReject, MissingExpertTensor) {
  fs::path dir = fresh_dir("missing");
  HostTensor router;
  write_checkpoint(dir, "gptq", ScalarType::uint4b8, 2, 64, 32, 32, 0, router, /*drop_one=*/true);
  try {
    load_moe_layer(dir.string(), 0);
    ADD_FAILURE() << "a checkpoint without experts.1.down_proj was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("experts.1.down_proj"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace w4a16::moe
