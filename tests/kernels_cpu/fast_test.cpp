// fast_gemm (every implementation this CPU runs: scalar always, avx2 and amx where present) against
// reference_gemm within the named tolerance (test::tolerance), its prepared layout, and its
// rejection paths.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <cstring>

#include "cpu_test_common.hpp"
#include "fast.hpp"
#include "reference.hpp"

namespace w4a16::test {
namespace {

using namespace kernels::cpu;

std::vector<FastIsa> isas() {
  std::vector<FastIsa> v{FastIsa::scalar};
  if (fast_isa_available(FastIsa::avx2)) v.push_back(FastIsa::avx2);
  if (fast_isa_available(FastIsa::vnni)) v.push_back(FastIsa::vnni);
  if (fast_isa_available(FastIsa::amx)) v.push_back(FastIsa::amx);
  return v;
}

struct FastCase {
  QuantSpec spec;
  DType act, scale_dtype;
  bool bias, act_order;
  std::int64_t m, x_pad, out_pad;
};

std::string describe(const FastCase& c) {
  return c.spec.describe() + " act=" + std::string(dtype_name(c.act)) + " scales=" + std::string(dtype_name(c.scale_dtype)) +
         (c.bias ? " bias" : "") + (c.act_order ? " act_order" : "") + " M=" + std::to_string(c.m) +
         " x_pad=" + std::to_string(c.x_pad) + " out_pad=" + std::to_string(c.out_pad);
}

// Runs every implementation with 1 and 4 threads; checks each against the f32 reference and
// checks that the thread count does not change a single bit (each output has one owner).
void run_case(const FastCase& c) {
  SCOPED_TRACE(describe(c) + " W4A16_SEED=" + std::to_string(seed()));
  QuantizedLinear w = random_linear(c.spec, c.scale_dtype, c.bias, c.act_order);
  const std::int64_t K = c.spec.k, N = c.spec.n;
  std::vector<std::uint16_t> xs = random_act(c.m, K, c.act, K + c.x_pad);
  TensorView x = act_view(xs, c.act, c.m, K, K + c.x_pad);

  PoisonedMatrix ref(DType::f32, c.m, N, 0);
  reference_gemm(w.view(), x, ref.view());
  const std::vector<double> r = ref.values();

  FastWeights f = fast_prepare(w.view(), c.act);
  for (FastIsa isa : isas()) {
    SCOPED_TRACE(std::string("isa=") + std::string(fast_isa_name(isa)));
    PoisonedMatrix o1(c.act, c.m, N, c.out_pad), o4(c.act, c.m, N, c.out_pad);
    fast_gemm_isa(f, x, o1.view(), isa, 1);
    fast_gemm_isa(f, x, o4.view(), isa, 4);
    EXPECT_EQ(o1.unwritten(), 0) << "elements of out left poisoned";
    EXPECT_EQ(o1.pad_touched() + o4.pad_touched(), 0) << "writes outside [M, N]";
    const double err = rel_error(o1.values(), r);
    EXPECT_LE(err, tolerance(c.act)) << "relative error vs reference_gemm";
    EXPECT_EQ(std::memcmp(o1.storage.data(), o4.storage.data(), o1.storage.size() * 4), 0)
        << "1 and 4 threads differ";
  }
}

TEST(CpuFast, MatchesReferenceEveryGroupScalarDtypeAndM) {
  std::vector<std::int64_t> ms;
  for (std::int64_t m = 1; m <= 16; ++m) ms.push_back(m);
  for (std::int64_t m : {17, 33, 100}) ms.push_back(m);
  std::uniform_int_distribution<int> coin(0, 1), pad(0, 3);
  int cases = 0;
  for (std::int64_t m : ms)
    for (DType act : {DType::f16, DType::bf16})
      for (int gs : kGroupSizes)
        for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8}) {
          // Every other scale dtype mixes f16 checkpoint scales with bf16 activations, and back.
          FastCase c{random_spec(gs, st, m > 16 ? 3 : 5), act, coin(rng()) ? DType::bf16 : DType::f16, coin(rng()) == 1,
                     coin(rng()) == 1, m, 8 * pad(rng()) + 3 * pad(rng()), pad(rng())};
          run_case(c);
          ++cases;
        }
  EXPECT_EQ(cases, 19 * 2 * 5 * 2);
}

TEST(CpuFast, BiasActOrderAndPanelTails) {
  // N = 8 x {1, 3, 5, 7, 9} blocks covers every tail of the 4-block (M = 1) and 2-block
  // panels; K = 640 is two full 256-k prefill chunks and a half one.
  for (std::int64_t blocks : {1, 3, 5, 7, 9})
    for (std::int64_t m : {1, 2, 5, 17, 23})
      for (bool bias : {false, true}) {
        QuantSpec s{8 * blocks, 640, 128, bias ? ScalarType::uint4 : ScalarType::uint4b8};
        run_case(FastCase{s, m % 2 ? DType::f16 : DType::bf16, DType::f16, bias, !bias, m, 0, 1});
      }
}

TEST(CpuFast, ModelShapeQwenO) {
  // A real layer shape (Qwen2.5-0.5B o_proj, 896 x 896, g = 128) at decode and prefill M.
  for (std::int64_t m : {1, 4, 17})
    for (DType act : {DType::f16, DType::bf16})
      run_case(FastCase{QuantSpec{896, 896, 128, ScalarType::uint4}, act, act, true, false, m, 0, 0});
}

TEST(CpuFast, DecodeRowsOfLongKConvertedInParallel) {
  // The integer decode kernels (vnni; avx2 below 17 rows) convert x's rows on the pool threads from M x K = 2^16 on:
  // rows of K = 4608 at M = 15 / 16, each thread writing the caller's buffers.
  for (DType act : {DType::f16, DType::bf16})
    for (std::int64_t m : {15, 16})
      run_case(FastCase{QuantSpec{40, 4608, 128, ScalarType::uint4}, act, act, true, true, m, 2, 1});
}

TEST(CpuFast, ExactSumsComeOutBitExact) {
  // Where every product and every partial sum is exact in fp32, each implementation must return the exact result
  // rounded once: x of full 11-bit significands in [0.5, 1) (float16: the AMX kernel's hi + lo pair must keep every
  // bit; bf16 as hi alone would lose 3), one group of K = 32, scales 2^-3 (exact in both scale dtypes). Then
  // sum_k x (128 + q) < 2^13 at a resolution of 2^-11 fits fp32's 24 bits, as do the zero-point terms.
  for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
    for (int gs : {32, kChannelwise})
      for (DType act : {DType::f16, DType::bf16})
        for (std::int64_t m : {1, 3, 16, 21, 40}) {
          const QuantSpec spec{48, 32, gs, st};
          SCOPED_TRACE(spec.describe() + " act=" + std::string(dtype_name(act)) + " M=" + std::to_string(m) +
                       " W4A16_SEED=" + std::to_string(seed()));
          QuantizedLinear w = random_linear(spec, act, false, false);
          for (std::int64_t i = 0; i < w.scales().numel(); ++i) w.scales().ptr<std::uint16_t>()[i] = float_to_f16x(act, 0.125f);
          std::uniform_int_distribution<int> mant(0, 1023), sign(0, 1);
          std::vector<std::uint16_t> xs(static_cast<std::size_t>(m * 32));
          for (auto& v : xs) {  // (1024 + mant) / 2048: every float16 significand bit may be set; bf16 keeps 8 of them
            const float f = static_cast<float>(1024 + mant(rng())) / 2048.f * (sign(rng()) ? -1.f : 1.f);
            v = float_to_f16x(act, f);
          }
          const std::vector<double> ref = gemm_f64(to_f64(xs.data(), act, m, 32, 32), dequant_f64(w), {}, m, 48, 32);
          FastWeights f = fast_prepare(w.view(), act);
          for (FastIsa isa : isas()) {
            SCOPED_TRACE(std::string("isa=") + std::string(fast_isa_name(isa)));
            PoisonedMatrix o(act, m, 48, 0);
            fast_gemm_isa(f, TensorView(xs.data(), act, {m, 32}), o.view(), isa, 2);
            std::int64_t wrong = 0;
            for (std::int64_t i = 0; i < m * 48; ++i)
              wrong += o.bits((i / 48) * o.stride + i % 48) != float_to_f16x(act, static_cast<float>(ref[static_cast<std::size_t>(i)]));
            EXPECT_EQ(wrong, 0) << "outputs not equal to the exact sum rounded once";
          }
        }
}

TEST(CpuFast, LargeMPanelsChunksAndTails) {
  // Past one AMX task in both directions: 300 rows (3 task blocks of 128, a last pair and single 16-row tile), N = 296
  // (37 blocks: 4-panel tasks and a panel of one block), K = 1288 channelwise (41 steps of 32 and a padded one; 128-k
  // chunks with a partial last) and g = 256 over K = 1280 (groups split at the 128-k chunk edges); act-order and bias.
  for (int gs : {kChannelwise, 256})
    for (DType act : {DType::f16, DType::bf16})
      run_case(FastCase{QuantSpec{296, gs == 256 ? 1280 : 1288, gs, ScalarType::uint4}, act, DType::f16, true, gs == 256, 300, 5, 3});
}

TEST(CpuFast, AmxOnTheCanonicalLayoutEqualsItsPreparedRun) {
  // amx_gemm_canonical reads the canonical arrays in place (the MoE experts); the same kernel on cpu.fast.v1 must give
  // the same sums: its fp32 output rounded to the act dtype equals fast_gemm_isa(amx) bit for bit, and is within
  // tolerance of the reference. Every group size and scalar type, N not a multiple of 8 (uint4b8), act-order, bias,
  // strided x and out.
  if (!fast_isa_available(FastIsa::amx)) GTEST_SKIP() << "no AMX here (CpuFast.AmxRunsOnThisMachineOrSaysWhyNot says why)";
  int cases = 0;
  for (int gs : kGroupSizes)
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (DType act : {DType::f16, DType::bf16})
        for (std::int64_t m : {1, 7, 33}) {
          const QuantSpec spec = random_spec(gs, st, 3);
          SCOPED_TRACE(spec.describe() + " act=" + std::string(dtype_name(act)) + " M=" + std::to_string(m) + " W4A16_SEED=" + std::to_string(seed()));
          const bool extras = (m + cases) % 2 == 0;
          QuantizedLinear w = random_linear(spec, cases % 2 ? DType::bf16 : DType::f16, extras, extras);
          const std::int64_t K = spec.k, N = spec.n;
          std::vector<std::uint16_t> xs = random_act(m, K, act, K + 5);
          PoisonedMatrix ref(DType::f32, m, N, 0), o(act, m, N, 0), c(DType::f32, m, N, 3);
          reference_gemm(w.view(), act_view(xs, act, m, K, K + 5), ref.view());
          fast_gemm_isa(fast_prepare(w.view(), act), act_view(xs, act, m, K, K + 5), o.view(), FastIsa::amx, 2);
          amx_gemm_canonical(w.view(), act, xs.data(), m, K + 5, reinterpret_cast<float*>(c.storage.data()), N + 3, 2);
          EXPECT_EQ(c.unwritten(), 0);
          EXPECT_EQ(c.pad_touched(), 0);
          std::int64_t differ = 0;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < N; ++j)
              differ += float_to_f16x(act, static_cast<float>(c.value(i, j))) != o.bits(i * o.stride + j);
          EXPECT_EQ(differ, 0) << "canonical and prepared runs of the AMX kernel differ";
          EXPECT_LE(rel_error(c.values(), ref.values()), 2e-4) << "fp32 output vs reference_gemm";
          ++cases;
        }
  EXPECT_EQ(cases, 5 * 2 * 2 * 3);
  // Its refusals: no AMX (W4A16_CPU_ISA caps it), bad strides.
  QuantizedLinear w = random_linear(QuantSpec{16, 64, 32, ScalarType::uint4}, DType::f16, false, false);
  std::vector<std::uint16_t> xs = random_act(2, 64, DType::f16);
  std::vector<float> out(2 * 16);
  expect_error([&] { amx_gemm_canonical(w.view(), DType::f16, xs.data(), 2, 32, out.data(), 16); }, ErrorCode::invalid_argument, "x_stride");
  expect_error([&] { amx_gemm_canonical(w.view(), DType::f32, xs.data(), 2, 64, out.data(), 16); }, ErrorCode::dtype_mismatch, "act_dtype");
  ScopedEnv env("W4A16_CPU_ISA", "avx2");
  expect_error([&] { amx_gemm_canonical(w.view(), DType::f16, xs.data(), 2, 64, out.data(), 16); }, ErrorCode::unsupported, "isa");
}

TEST(CpuFast, AmxRunsOnThisMachineOrSaysWhyNot) {
  // The other tests run every implementation this CPU has; this one says whether the AMX kernel was among them.
  if (!fast_isa_available(FastIsa::amx))
    GTEST_SKIP() << "no AMX-BF16 + AVX-512 F/BW/VL on this CPU (or no tile state from the OS, or W4A16_CPU_ISA caps it): "
                    "the amx implementation is not exercised here";
  EXPECT_EQ(fast_isa_name(FastIsa::amx), "amx");
  EXPECT_EQ(fast_isa_name(FastIsa::best), "amx");
  // Below the VNNI kernel's bound it runs (every AMX CPU has VNNI); above, the tiles.
  const FastIsa few = fast_isa_available(FastIsa::vnni) ? FastIsa::vnni : FastIsa::avx2;
  EXPECT_EQ(fast_isa_for(FastIsa::best, 1), few);
  EXPECT_EQ(fast_isa_for(FastIsa::best, kVnniMaxM), few);
  EXPECT_EQ(fast_isa_for(FastIsa::best, kVnniMaxM + 1), FastIsa::amx);
  EXPECT_EQ(fast_isa_for(FastIsa::amx, 1), FastIsa::amx);  // a named implementation runs at every M
  EXPECT_NE(fast_describe_run(DType::f16, 64).find("amx"), std::string::npos);
}

TEST(CpuFast, AmxFloat16OnBothTileKinds) {
  // float16 x runs on the INT8 tiles where the CPU has them (g >= 64, channelwise), else on the bf16 hi + lo pair;
  // W4A16_CPU_AMX_INT8=0 forces the pair, so both stay tested: every group kind, both scalar types, M across token
  // tiles and tasks, odd K, bias and act-order, and a row of x holding an infinity (NaN outputs in both).
  if (!fast_isa_available(FastIsa::amx)) GTEST_SKIP() << "no AMX here (CpuFast.AmxRunsOnThisMachineOrSaysWhyNot says why)";
  for (const char* kind : {"0", "1"}) {
    ScopedEnv env("W4A16_CPU_AMX_INT8", kind);
    SCOPED_TRACE(std::string("W4A16_CPU_AMX_INT8=") + kind);
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (int gs : {64, 128, 256, kChannelwise})
        for (std::int64_t m : {6, 17, 40}) {
          const std::int64_t K = gs == kChannelwise ? 1288 : 5 * std::max(gs, 64);
          run_case(FastCase{QuantSpec{72, K, gs, st}, DType::f16, DType::f16, m == 17, m == 40, m, 3, 1});
        }
    const QuantSpec spec{24, 384, 128, ScalarType::uint4};
    QuantizedLinear w = random_linear(spec, DType::f16, false, false);
    std::vector<std::uint16_t> xs = random_act(3, 384, DType::f16, 384);
    xs[384 + 200] = 0x7c00;  // +inf in row 1
    PoisonedMatrix o(DType::f16, 3, 24, 0);
    fast_gemm_isa(fast_prepare(w.view(), DType::f16), act_view(xs, DType::f16, 3, 384, 384), o.view(), FastIsa::amx, 1);
    for (std::int64_t n = 0; n < 24; ++n) {
      EXPECT_TRUE(std::isnan(f16x_to_float(DType::f16, o.bits(o.stride + n)))) << n;
      EXPECT_TRUE(std::isfinite(f16x_to_float(DType::f16, o.bits(n)))) << n;
    }
  }
  ScopedEnv bad("W4A16_CPU_AMX_INT8", "yes");
  const FastWeights f = fast_prepare(random_linear(QuantSpec{16, 128, 128, ScalarType::uint4b8}, DType::f16, false, false).view(), DType::f16);
  std::vector<std::uint16_t> xs = random_act(8, 128, DType::f16, 128);
  PoisonedMatrix o(DType::f16, 8, 16, 0);
  expect_error([&] { fast_gemm_isa(f, act_view(xs, DType::f16, 8, 128, 128), o.view(), FastIsa::amx, 1); },
               ErrorCode::invalid_argument, "W4A16_CPU_AMX_INT8");
}

TEST(CpuFast, VnniRunsOnThisMachineOrSaysWhyNot) {
  if (!fast_isa_available(FastIsa::vnni))
    GTEST_SKIP() << "no AVX-512 F/BW/VL + VNNI on this CPU (or W4A16_CPU_ISA caps it): the vnni implementation is not "
                    "exercised here";
  EXPECT_EQ(fast_isa_for(FastIsa::best, 1), FastIsa::vnni);
  if (fast_isa_available(FastIsa::amx)) {
    EXPECT_EQ(fast_isa_for(FastIsa::best, kVnniMaxM), FastIsa::vnni);
    EXPECT_EQ(fast_isa_for(FastIsa::best, kVnniMaxM + 1), FastIsa::amx);
  }
  EXPECT_EQ(fast_isa_for(FastIsa::vnni, 1000), FastIsa::vnni);  // named: every M (8 rows a pass)
  EXPECT_NE(fast_describe_run(DType::f16, 1).find("vnni: "), std::string::npos);
  ScopedEnv env("W4A16_CPU_ISA", "vnni");  // caps AMX off, keeps VNNI
  EXPECT_FALSE(fast_isa_available(FastIsa::amx));
  EXPECT_TRUE(fast_isa_available(FastIsa::vnni));
  EXPECT_EQ(fast_isa_for(FastIsa::best, 1000), FastIsa::vnni);  // without AMX: every M
  EXPECT_EQ(fast_isa_name(FastIsa::best), "vnni");
}

TEST(CpuFast, VnniBlocksOfTinyOrNonFiniteX) {
  // x's int16 pairs carry a power-of-two scale per 128 k: a block of bfloat16 values near the least normal needs a
  // scale below 2^-127 (its reciprocal overflows a float), and a block holding an infinity or a NaN must give NaN rows
  // rather than reach the integer conversion. Other blocks of the same row are unaffected only in the tiny case.
  if (!fast_isa_available(FastIsa::vnni)) GTEST_SKIP() << "no vnni implementation here (VnniRunsOnThisMachineOrSaysWhyNot)";
  const QuantSpec spec{24, 256, 128, ScalarType::uint4b8};
  QuantizedLinear w = random_linear(spec, DType::bf16, false, false);
  for (std::int64_t i = 0; i < w.scales().numel(); ++i)  // scales near 2^100 keep row 0's outputs normal floats
    w.scales().ptr<std::uint16_t>()[i] = float_to_f16x(DType::bf16, 0x1p100f * (1.f + static_cast<float>(i % 7) / 8.f));
  const FastWeights f = fast_prepare(w.view(), DType::bf16);
  std::vector<std::uint16_t> xs(2 * 256);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::int64_t k = 0; k < 256; ++k) {
    xs[static_cast<std::size_t>(k)] = float_to_f16x(DType::bf16, u(rng()) * 0x1p-128f);   // row 0: tiny (subnormal)
    xs[static_cast<std::size_t>(256 + k)] = float_to_f16x(DType::bf16, u(rng()));          // row 1: normal
  }
  const std::vector<double> ref = gemm_f64(to_f64(xs.data(), DType::bf16, 2, 256, 256), dequant_f64(w), {}, 2, 24, 256);
  PoisonedMatrix o(DType::bf16, 2, 24, 0);
  fast_gemm_isa(f, TensorView(xs.data(), DType::bf16, {2, 256}), o.view(), FastIsa::vnni, 1);
  for (std::int64_t m = 0; m < 2; ++m) {
    double num = 0, den = 0;
    for (std::int64_t n = 0; n < 24; ++n) {
      const double r = ref[static_cast<std::size_t>(m * 24 + n)], y = f16x_to_float(DType::bf16, o.bits(m * o.stride + n));
      num += (y - r) * (y - r);
      den += r * r;
    }
    ASSERT_GT(den, 0.0);
    EXPECT_LT(std::sqrt(num / den), 1e-2) << "row " << m;
  }
  xs[300] = 0x7f80;  // +inf in row 1's second block
  fast_gemm_isa(f, TensorView(xs.data(), DType::bf16, {2, 256}), o.view(), FastIsa::vnni, 1);
  for (std::int64_t n = 0; n < 24; ++n) EXPECT_TRUE(std::isnan(f16x_to_float(DType::bf16, o.bits(o.stride + n)))) << n;
}

TEST(CpuFast, MZeroWritesNothing) {
  QuantizedLinear w = random_linear(QuantSpec{16, 64, 32, ScalarType::uint4}, DType::f16, true, true);
  FastWeights f = fast_prepare(w.view(), DType::f16);
  PoisonedMatrix out(DType::f16, 1, 16, 0);
  TensorView ov = out.view();
  ov.shape[0] = 0;
  for (FastIsa isa : isas()) EXPECT_NO_THROW(fast_gemm_isa(f, TensorView(nullptr, DType::f16, {0, 64}), ov, isa));
  EXPECT_EQ(out.unwritten(), 16);
}

TEST(CpuFast, PreparedLayout) {
  // cpu.fast.v1: word (b, j, l) = canonical word (8b + l, j); padded rows are zero.
  QuantSpec s{20, 64, 32, ScalarType::uint4b8};
  QuantizedLinear w = random_linear(s, DType::bf16, true, false);
  FastWeights f = fast_prepare(w.view(), DType::f16);
  EXPECT_EQ(f.layout(), "cpu.fast.v1");
  ASSERT_EQ(f.blocks, 3);
  ASSERT_EQ(f.qweight.size(), 3u * 8 * 8);
  for (std::int64_t n = 0; n < 24; ++n)
    for (std::int64_t j = 0; j < 8; ++j) {
      const std::uint32_t want = n < 20 ? static_cast<std::uint32_t>(w.qweight().ptr<std::int32_t>()[n * 8 + j]) : 0u;
      ASSERT_EQ(f.qweight[static_cast<std::size_t>(((n / 8) * 8 + j) * 8 + n % 8)], want) << "n=" << n << " j=" << j;
    }
  EXPECT_TRUE(f.zeros.empty());
  EXPECT_EQ(f.bytes(), 3u * 8 * 8 * 4 + 3u * 2 * 8 * 2 + 24u * 4);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f.qweight.data()) % 64, 0u);
}

TEST(CpuFast, SupportsClaims) {
  std::string why;
  EXPECT_TRUE(fast_supports(DType::f16, QuantSpec{4096, 4096, 128, ScalarType::uint4}, &why)) << why;
  EXPECT_TRUE(fast_supports(DType::bf16, QuantSpec{20, 72, kChannelwise, ScalarType::uint4b8}, &why)) << why;
  EXPECT_FALSE(fast_supports(DType::f32, QuantSpec{64, 64, 32, ScalarType::uint4}, &why));
  EXPECT_NE(why.find("act_dtype"), std::string::npos) << why;
  EXPECT_FALSE(fast_supports(DType::f16, QuantSpec{64, 64, 48, ScalarType::uint4}, &why));
  EXPECT_NE(why.find("group_size"), std::string::npos) << why;
  EXPECT_FALSE(fast_supports(DType::f16, QuantSpec{20, 64, 32, ScalarType::uint4}, &why));  // zeros need N % 8 == 0
  EXPECT_NE(why.find("N"), std::string::npos) << why;
  EXPECT_TRUE(fast_supports(DType::f16, QuantSpec{64, 64, 32, ScalarType::uint4}, nullptr));
}

class CpuFastRejects : public ::testing::Test {
 protected:
  QuantSpec s{16, 64, 32, ScalarType::uint4};
  QuantizedLinear w = random_linear(s, DType::f16, false, false);
  FastWeights f = fast_prepare(w.view(), DType::f16);
  std::vector<std::uint16_t> xs = random_act(3, 64, DType::f16);
  std::vector<std::uint16_t> os = std::vector<std::uint16_t>(3 * 16 * 2);
  TensorView x() { return TensorView(xs.data(), DType::f16, {3, 64}); }
  TensorView out() { return TensorView(os.data(), DType::f16, {3, 16}); }
};

TEST_F(CpuFastRejects, PrepareActDtype) {
  expect_error([&] { fast_prepare(w.view(), DType::f32); }, ErrorCode::dtype_mismatch, "act_dtype");
}
TEST_F(CpuFastRejects, PrepareDeviceWeights) {
  CanonicalView v = w.view();
  v.device = Device::cuda;
  expect_error([&] { fast_prepare(v, DType::f16); }, ErrorCode::invalid_argument, "w");
}
TEST_F(CpuFastRejects, XDtypeOtherThanActDtype) {
  expect_error([&] { fast_gemm(f, TensorView(xs.data(), DType::bf16, {3, 64}), out()); }, ErrorCode::dtype_mismatch, "x");
}
TEST_F(CpuFastRejects, XKMismatch) {
  expect_error([&] { fast_gemm(f, TensorView(xs.data(), DType::f16, {3, 32}), out()); }, ErrorCode::shape_mismatch, "x");
}
TEST_F(CpuFastRejects, XNonUnitInnerStride) {
  TensorView v(xs.data(), DType::f16, {1, 64});
  v.stride[1] = 2;
  expect_error([&] { fast_gemm(f, v, TensorView(os.data(), DType::f16, {1, 16})); }, ErrorCode::layout_mismatch, "x");
}
TEST_F(CpuFastRejects, OutShapeAndDtype) {
  expect_error([&] { fast_gemm(f, x(), TensorView(os.data(), DType::f16, {3, 8})); }, ErrorCode::shape_mismatch, "out");
  expect_error([&] { fast_gemm(f, x(), TensorView(os.data(), DType::bf16, {3, 16})); }, ErrorCode::dtype_mismatch, "out");
  TensorView o = out();
  o.stride[1] = 2;
  o.stride[0] = 32;
  expect_error([&] { fast_gemm(f, x(), o); }, ErrorCode::layout_mismatch, "out");
}
TEST_F(CpuFastRejects, EmptyWeights) {
  expect_error([&] { fast_gemm(FastWeights{}, x(), out()); }, ErrorCode::invalid_argument, "w");
}
TEST_F(CpuFastRejects, NegativeThreads) {
  expect_error([&] { fast_gemm(f, x(), out(), -1); }, ErrorCode::invalid_argument, "num_threads");
}
TEST_F(CpuFastRejects, UnavailableIsa) {
  // W4A16_CPU_ISA=scalar makes AVX2 and AMX unavailable on any machine, =avx2 AMX, so the refusals are reachable here.
  {
    ScopedEnv env("W4A16_CPU_ISA", "scalar");
    EXPECT_FALSE(fast_isa_available(FastIsa::avx2));
    EXPECT_FALSE(fast_isa_available(FastIsa::amx));
    EXPECT_EQ(fast_isa_name(FastIsa::best), "scalar");
    expect_error([&] { fast_gemm_isa(f, x(), out(), FastIsa::avx2); }, ErrorCode::unsupported, "isa");
    expect_error([&] { fast_gemm_isa(f, x(), out(), FastIsa::amx); }, ErrorCode::unsupported, "isa");
  }
  {
    ScopedEnv env("W4A16_CPU_ISA", "avx2");
    EXPECT_FALSE(fast_isa_available(FastIsa::amx));
    EXPECT_NE(fast_isa_name(FastIsa::best), "amx");
    EXPECT_NE(fast_isa_for(FastIsa::best, 1000), FastIsa::amx);
    EXPECT_FALSE(fast_isa_available(FastIsa::vnni));
    expect_error([&] { fast_gemm_isa(f, x(), out(), FastIsa::vnni); }, ErrorCode::unsupported, "isa");
    expect_error([&] { fast_gemm_isa(f, x(), out(), FastIsa::amx); }, ErrorCode::unsupported, "isa");
  }
  {
    ScopedEnv env("W4A16_CPU_ISA", "avx512");
    expect_error([&] { fast_gemm(f, x(), out()); }, ErrorCode::invalid_argument, "W4A16_CPU_ISA");
  }
  EXPECT_EQ(fast_isa_from_name("amx"), FastIsa::amx);
  EXPECT_EQ(fast_isa_from_name("vnni"), FastIsa::vnni);
  EXPECT_EQ(fast_isa_from_name("best"), FastIsa::best);
  EXPECT_FALSE(fast_isa_from_name("AMX").has_value());
}

}  // namespace
}  // namespace w4a16::test
