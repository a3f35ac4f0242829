// Host-only checks of the decode launcher's arithmetic (no GPU needed: runs in CI).
#include <gtest/gtest.h>

#include <string>

#include "decode/decode.hpp"
#include "w4a16/core/error.hpp"

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

// The plan for the H200 (132 SMs) on every PERF.md shape and token count: it fits shared memory,
// its ring is at least as deep as version 4's, and only plans of more than one wave of blocks at
// 1..8 tokens get a persistent grid (fewer rows of blocks than row blocks), sized to what is resident.
TEST(DecodeHost, PlansFitAndPersistOnlyBeyondOneWave) {
  struct S { std::int64_t n, k; };
  const S shapes[] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096}, {4096, 4096},
                      {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}};
  int persistent = 0;
  for (const S& s : shapes)
    for (int m = 1; m <= 16; ++m)
      for (bool zeros : {false, true})
        for (int g : {32, 128}) {
          const DecodePlan p = decode_plan_for_sms(s.n, s.k, m, zeros, g, true, 132);
          SCOPED_TRACE(std::to_string(s.n) + "x" + std::to_string(s.k) + " m=" + std::to_string(m) + " " + p.describe());
          EXPECT_LE(p.smem_bytes, 200u * 1024);
          EXPECT_GE(p.depth, 3);
          EXPECT_LE(p.depth, 6);
          EXPECT_EQ(p.warps_n * p.warps_k, 8);
          EXPECT_GE(static_cast<std::int64_t>(p.tiles_per_warp) * p.warps_k * p.splits, (s.k + 63) / 64);  // K covered
          EXPECT_GE(static_cast<std::int64_t>(p.row_blocks) * p.warps_n * 16, s.n);                       // N covered
          const int bps = p.smem_bytes + 1024 <= 227 * 1024 / 2 ? 2 : 1;
          if (p.grid_rows < p.row_blocks) {
            ++persistent;
            EXPECT_LE(m, 8);
            EXPECT_EQ(p.grid_rows, 132 * bps / p.splits);
          } else {
            EXPECT_EQ(p.grid_rows, p.row_blocks);
          }
        }
  EXPECT_GT(persistent, 0);  // llama70b.gate_up at 1..8 tokens takes several waves
  const DecodePlan p = decode_plan_for_sms(57344, 8192, 1, false, 128, true, 132);
  EXPECT_LT(p.grid_rows, p.row_blocks) << p.describe();
}

// decode_run refuses weights whose packed tiles it cannot index with 32-bit lane indices (>= 64 GiB)
// before it touches the device; the pointers below are never dereferenced.
TEST(DecodeHost, RefusesQweightOf64GiB) {
  TcWeights w;
  w.n = w.n_pad = std::int64_t{1} << 20;
  w.k = w.k_pad = std::int64_t{1} << 17;  // N * K / 2 = 64 GiB of int4
  w.group_size = w4a16::kChannelwise;
  w.groups = 1;                           // scales: 2 MiB, under their own 2 GiB bound
  char dummy[16];
  w.qweight = reinterpret_cast<std::int32_t*>(dummy);
  w.scales = dummy;
  try {
    decode_run(w, dummy, 1, w.k, dummy, w.n, nullptr, 0, nullptr);
    ADD_FAILURE() << "accepted a 64 GiB qweight";
  } catch (const w4a16::Error& e) {
    EXPECT_EQ(e.code(), w4a16::ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("weights.qweight"), std::string::npos) << e.what();
  }
  w.qweight = nullptr;  // not ours to free
  w.scales = nullptr;
}
