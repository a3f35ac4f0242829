// The w4a16 command on the GPU (ctest label gpu: left out where there is no GPU, run by scripts/gpu-check and on the
// device with W4A16_CLI naming the carried binary): `w4a16 moe --device cuda` on a synthetic MoE checkpoint, every
// block of the CUDA layer, checked by the tool against moe_reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../moe/moe_checkpoint.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;
using namespace w4a16;

namespace {

class CliGpu : public test::CliTest {};

// The same layer on the CUDA path, every block the layer's token counts reach (direct, 8, 32, 64 / 128: the grouped
// wgmma path on sm_90a); skipped with the reason on a machine without a GPU or a build without CUDA.
TEST_F(CliGpu, MoeLayerOnCudaMatchesTheReference) {
  const fs::path d = fs::path(path("moe_cuda"));
  fs::create_directories(d);
  HostTensor router;
  moe::testckpt::write_checkpoint(d, "awq", ScalarType::uint4, /*E=*/8, /*H=*/256, /*I=*/128, 128, /*layer=*/0, router);
  test::CliResult probe = cli("moe " + d.string() + " --tokens 1 --top-k 2 --device cuda");
  if (probe.rc != 0 && probe.err.find("no CUDA") != std::string::npos) GTEST_SKIP() << "no CUDA device or build: " << probe.err;
  ASSERT_EQ(probe.rc, 0) << probe.out << probe.err;
  for (const std::string run : {"--tokens 3 --top-k 2", "--tokens 40 --top-k 8 --block 8", "--tokens 300 --top-k 8 --block 32",
                                "--tokens 300 --top-k 8 --block 64", "--tokens 300 --top-k 8 --block 128 --dtype bfloat16",
                                "--tokens 1000 --top-k 8"}) {
    SCOPED_TRACE(run);
    test::CliResult r = cli("moe " + d.string() + " --device cuda --check 1000 " + run);
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("ran on CUDA"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;
  }
}

}  // namespace
