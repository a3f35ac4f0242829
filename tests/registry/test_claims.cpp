// (c) Claims are truth: every CPU kernel, on every grid configuration it accepts, for several
// M, matches the f64 oracle within the named tolerance, writes every output element, and
// leaves the row padding and the guard past the output untouched (outputs start poisoned).
#include <gtest/gtest.h>

#include "grid.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {
namespace {

const std::int64_t kMs[] = {1, 3, 16, 33};

TEST(Claims, EveryCpuKernelMatchesTheOracleWhereverItClaims) {
  std::vector<LinearConfig> grid = test::config_grid(Platform::cpu, {.small_shapes_only = true, .with_invalid = true});
  for (const KernelEntry& e : all_kernels()) {
    if (e.kernel->device() != Device::cpu) continue;
    const std::string name(e.kernel->name());
    std::size_t checked = 0;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      const LinearConfig& c = grid[i];
      if (!test::forced_refusal(c, name).empty()) continue;
      SCOPED_TRACE(name + " on " + c.describe() + " (W4A16_SEED=" + std::to_string(test::seed()) + ")");
      ASSERT_EQ(c.invalid_reason(), "");
      // Scales of either 16-bit dtype: the config does not fix it, so kernels must take both.
      const DType scale_dtype = (i % 2) ? DType::bf16 : DType::f16;
      QuantizedLinear q = test::random_weights(c, scale_dtype);
      // The kernel directly (not Linear, which derives out = act): every out dtype it claims.
      std::unique_ptr<PreparedWeights> prep = e.kernel->prepare(q.view(), c);
      ASSERT_EQ(prep->layout(), e.kernel->layout());
      EXPECT_GT(prep->device_bytes(), 0u);
      const std::vector<double> wref = test::dequant_f64(q), bref = test::bias_f64(q);
      for (std::int64_t m : kMs) {
        SCOPED_TRACE("M=" + std::to_string(m));
        // Strided rows on odd configs, dense on even ones; a guard after the last row.
        const std::int64_t xs = c.k + ((i % 3 == 0) ? 8 : 0), os = c.n + ((i % 2) ? 5 : 0);
        test::HostMatrix x = test::random_matrix(m, c.k, c.act_dtype, xs, 16);
        test::HostMatrix out = test::poisoned_matrix(m, c.n, c.out_dtype, os, 16);
        RunArgs a;
        a.x = x.view();
        a.out = out.view();
        std::vector<unsigned char> ws(e.kernel->workspace_bytes(c, m) + 1);
        a.workspace = ws.data();
        a.workspace_bytes = ws.size() - 1;
        e.kernel->run(*prep, a);
        const std::vector<double> ref = test::gemm_f64(x.values(), wref, bref, m, c.n, c.k);
        const double err = test::rel_error(out.values(), ref);  // a poisoned (unwritten) element is inf
        ASSERT_LT(err, test::tolerance_for(c));
        ASSERT_EQ(out.clobbered_padding(), 0) << "elements outside [M, N] were written";
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u) << name << " accepted nothing on the CPU grid";
    std::printf("[claims] %s: %zu (config, M) runs matched the f64 oracle\n", name.c_str(), checked);
  }
}

// Through the public API: Linear::create chooses, forward() runs with the workspace made at create.
TEST(Claims, LinearForwardMatchesTheOracle) {
  for (DType act : {DType::f16, DType::bf16})
    for (bool asym : {false, true}) {
      LinearConfig c;
      c.n = c.n_full = 48;
      c.k = c.k_full = 384;
      c.act_dtype = c.out_dtype = act;
      c.scalar = asym ? ScalarType::uint4 : ScalarType::uint4b8;
      c.has_zeros = asym;
      c.group_size = 128;
      c.has_bias = asym;
      c.act_order = !asym;
      QuantizedLinear q = test::random_weights(c, act);
      LinearOptions lo;
      lo.act_dtype = act;
      lo.max_m = 8;
      Linear lin = Linear::create(q.view(), lo);
      EXPECT_EQ(lin.kernel().name(), priority_list(Platform::cpu).front()->name());
      EXPECT_EQ(lin.config().describe(), c.describe());
      EXPECT_GT(lin.weight_bytes(), 0u);
      for (std::int64_t m : {1, 8}) {
        test::HostMatrix x = test::random_matrix(m, c.k, act, c.k, 0);
        test::HostMatrix out = test::poisoned_matrix(m, c.n, act, c.n, 8);
        lin.forward(x.view(), out.view());
        EXPECT_LT(test::rel_error(out.values(), test::gemm_f64(x.values(), test::dequant_f64(q), test::bias_f64(q), m, c.n, c.k)),
                  test::tolerance(act));
        EXPECT_EQ(out.clobbered_padding(), 0);
      }
      // M = 0 is a no-op that touches nothing.
      test::HostMatrix x0 = test::random_matrix(0, c.k, act, c.k, 4), o0 = test::poisoned_matrix(0, c.n, act, c.n, 4);
      lin.forward(x0.view(), o0.view());
      EXPECT_EQ(o0.clobbered_padding(), 0);
    }
}

}  // namespace
}  // namespace w4a16
