// (d) Layouts and arguments: weights prepared by one kernel are refused by a kernel of another
// layout, naming both; unpacked or float zero points never become a canonical view; every
// check_run_args rejection names its argument; Linear's own argument checks.
#include <gtest/gtest.h>

#include "grid.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {
namespace {

template <class F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(error_code_name(e.code()), error_code_name(code)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no w4a16::Error thrown (expected " << error_code_name(code) << ")";
  return {};
}

LinearConfig small_config(DType act = DType::f16, ScalarType s = ScalarType::uint4) {
  LinearConfig c;
  c.n = c.n_full = 32;
  c.k = c.k_full = 256;
  c.scalar = s;
  c.has_zeros = s == ScalarType::uint4;
  c.group_size = 64;
  c.act_dtype = c.out_dtype = act;
  return c;
}

TEST(Layouts, AnotherKernelsPreparedWeightsAreRefusedNamingBothLayouts) {
  LinearConfig c = small_config();
  QuantizedLinear q = test::random_weights(c, DType::f16);
  test::HostMatrix x = test::random_matrix(2, c.k, c.act_dtype, c.k, 0);
  test::HostMatrix out = test::poisoned_matrix(2, c.n, c.out_dtype, c.n, 0);
  RunArgs a;
  a.x = x.view();
  a.out = out.view();
  int pairs = 0;
  for (const KernelEntry& from : all_kernels())
    for (const KernelEntry& to : all_kernels()) {
      if (from.kernel->device() != Device::cpu || to.kernel->device() != Device::cpu) continue;  // GPU: tests/gpu/registry
      if (from.kernel->layout() == to.kernel->layout()) continue;
      std::unique_ptr<PreparedWeights> w = from.kernel->prepare(q.view(), c);
      std::string m = error_of([&] { to.kernel->run(*w, a); }, ErrorCode::layout_mismatch);
      EXPECT_NE(m.find("weights: expected layout \"" + std::string(to.kernel->layout()) + "\""), std::string::npos) << m;
      EXPECT_NE(m.find("prepared in layout \"" + std::string(from.kernel->layout()) + "\""), std::string::npos) << m;
      EXPECT_NE(m.find(std::string(to.kernel->name())), std::string::npos) << m;
      ++pairs;
    }
  EXPECT_GE(pairs, 2);
  EXPECT_EQ(out.clobbered_padding(), 0);
  for (std::int64_t i = 0; i < 2 * c.n; ++i) EXPECT_TRUE(std::isnan(out.at(i / c.n, i % c.n))) << "refused, yet written";
}

TEST(Layouts, FloatOrUnpackedZeroPointsAreNeverACanonicalView) {
  QuantSpec s{64, 256, 64, ScalarType::uint4};
  QuantizedLinear q = test::random_linear(s, DType::f16, false, false);
  CanonicalTensors t = q.tensors();
  HostTensor zf(DType::f16, {s.n, s.groups()});  // unpacked fp16 zero points [N, G]
  t.zeros = zf.view();
  std::string m = error_of([&] { make_canonical_view(t, s); }, ErrorCode::layout_mismatch);
  EXPECT_NE(m.find("zeros: expected int32 [N/8, G] packed 8 x uint4 along N"), std::string::npos) << m;
  EXPECT_NE(m.find("got float16 [64, 4]"), std::string::npos) << m;
  HostTensor zi(DType::i32, {s.n, s.groups()});  // unpacked int32 [N, G]
  t.zeros = zi.view();
  m = error_of([&] { make_canonical_view(t, s); }, ErrorCode::layout_mismatch);
  EXPECT_NE(m.find("= [8, 4], got int32 [64, 4]"), std::string::npos) << m;
  // ... and Linear (which takes only a CanonicalView) can therefore never see them.
}

TEST(Layouts, PrepareRefusesWeightsThatAreNotTheConfigsLayer) {
  LinearConfig c = small_config();
  QuantizedLinear q = test::random_weights(c, DType::f16);
  for (const KernelEntry& e : all_kernels()) {
    if (e.kernel->device() != Device::cpu) continue;
    LinearConfig other = c;
    other.has_bias = true;
    std::string m = error_of([&] { e.kernel->prepare(q.view(), other); }, ErrorCode::invalid_argument);
    EXPECT_NE(m.find("weights.bias"), std::string::npos) << m;
    other = c;
    other.n = other.n_full = 64;
    m = error_of([&] { e.kernel->prepare(q.view(), other); }, ErrorCode::invalid_argument);
    EXPECT_NE(m.find("weights.N: expected 64"), std::string::npos) << m;
    other = c;
    other.act_dtype = other.out_dtype = DType::i32;  // a config the kernel refuses
    m = error_of([&] { e.kernel->prepare(q.view(), other); }, ErrorCode::unsupported);
    EXPECT_NE(m.find(e.kernel->can_implement(other)), std::string::npos) << m;
  }
}

// A stand-in kernel with alignment and workspace requirements, so that every check_run_args
// path is reached (the CPU kernels need neither).
class StrictKernel final : public Kernel {
 public:
  std::string_view name() const override { return "strict"; }
  Device device() const override { return Device::cpu; }
  std::string can_implement(const LinearConfig& c) const override {
    return c.act_dtype == DType::f16 ? "" : "act_dtype must be float16";
  }
  std::string_view layout() const override { return "test.strict"; }
  std::unique_ptr<PreparedWeights> prepare(const CanonicalView&, const LinearConfig& c, void*) const override {
    struct P final : PreparedWeights {
      explicit P(const LinearConfig& c) : PreparedWeights(c) {}
      std::string_view layout() const override { return "test.strict"; }
      std::size_t device_bytes() const override { return 0; }
    };
    return std::make_unique<P>(c);
  }
  std::size_t workspace_bytes(const LinearConfig&, std::int64_t m) const override { return 64 * static_cast<std::size_t>(m); }
  void run(const PreparedWeights& w, const RunArgs& a) const override {
    check_run_args(*this, w, a, workspace_bytes(w.config(), a.x.shape[0]));
  }
  IoAlignment io_alignment(const LinearConfig&) const override { return {16, 16, 16}; }
};

TEST(RunArgs, EveryRejectionNamesItsArgument) {
  StrictKernel k;
  LinearConfig c = small_config();
  QuantizedLinear q = test::random_weights(c, DType::f16);
  std::unique_ptr<PreparedWeights> w = k.prepare(q.view(), c, nullptr);
  const std::int64_t M = 4;
  test::HostMatrix x = test::random_matrix(M, c.k, DType::f16, c.k + 8, 64);
  test::HostMatrix out = test::poisoned_matrix(M, c.n, DType::f16, c.n, 64);
  alignas(64) static unsigned char ws[1024];
  auto good = [&] {
    RunArgs a;
    a.x = x.view();
    a.out = out.view();
    a.workspace = ws;
    a.workspace_bytes = 64 * M;
    return a;
  };
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(x.bytes.data()) % 16, 0u) << "vector storage should be 16-byte aligned";
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(out.bytes.data()) % 16, 0u);
  k.run(*w, good());  // the baseline passes

  struct Case {
    const char* what;
    std::function<void(RunArgs&)> edit;
    ErrorCode code;
    const char* text;
  };
  HostTensor x32(DType::f32, {M, c.k});
  const std::vector<Case> cases = {
      {"x dtype", [&](RunArgs& a) { a.x = x32.view(); }, ErrorCode::dtype_mismatch, "x: expected float16 [M, K = 256]"},
      {"x missing", [&](RunArgs& a) { a.x = TensorView(); }, ErrorCode::invalid_argument, "x: expected float16 [M, K = 256], got no tensor"},
      {"x rank", [&](RunArgs& a) { a.x = TensorView(x.bytes.data(), DType::f16, {M * c.k}); }, ErrorCode::shape_mismatch, "x: expected float16 [M, K = 256] (rank 2)"},
      {"x K", [&](RunArgs& a) { a.x.shape[1] = c.k - 8; }, ErrorCode::shape_mismatch, "x: expected float16 [M, K = 256], got float16 [4, 248]"},
      {"x device", [&](RunArgs& a) { a.x.device = Device::cuda; }, ErrorCode::invalid_argument, "x: expected float16 [M, K = 256] on cpu"},
      {"x inner stride", [&](RunArgs& a) { a.x.stride[1] = 2; }, ErrorCode::layout_mismatch, "with inner stride 1"},
      {"x row stride", [&](RunArgs& a) { a.x.stride[0] = c.k - 8; }, ErrorCode::layout_mismatch, "with row stride >= 256"},
      {"x null", [&](RunArgs& a) { a.x.data = nullptr; }, ErrorCode::invalid_argument, "x: expected float16 [M, K = 256], got a null data pointer"},
      {"x misaligned", [&](RunArgs& a) { a.x.data = x.bytes.data() + 2; }, ErrorCode::alignment, "x.data: expected 16-byte aligned"},
      {"x stride misaligned", [&](RunArgs& a) { a.x.stride[0] = c.k + 4; }, ErrorCode::alignment, "x.stride[0]: expected a row stride of a multiple of 16 bytes (8 elements)"},
      {"out N", [&](RunArgs& a) { a.out.shape[1] = c.n + 8; }, ErrorCode::shape_mismatch, "out: expected float16 [M, N = 32]"},
      {"out dtype", [&](RunArgs& a) { a.out.dtype = DType::bf16; }, ErrorCode::dtype_mismatch, "out: expected float16 [M, N = 32], got bfloat16"},
      {"out misaligned", [&](RunArgs& a) { a.out.data = out.bytes.data() + 2; }, ErrorCode::alignment, "out.data: expected 16-byte aligned"},
      {"out stride misaligned", [&](RunArgs& a) { a.out.stride[0] = c.n + 1; }, ErrorCode::alignment, "out.stride[0]: expected a row stride of a multiple of 16 bytes"},
      {"out M", [&](RunArgs& a) { a.out.shape[0] = M - 1; }, ErrorCode::shape_mismatch, "out: expected M = 4 rows (the rows of x)"},
      {"out device", [&](RunArgs& a) { a.out.device = Device::cuda; }, ErrorCode::invalid_argument, "out: expected float16 [M, N = 32] on cpu"},
      {"workspace small", [&](RunArgs& a) { a.workspace_bytes = 64 * M - 1; }, ErrorCode::invalid_argument, "workspace: expected >= 256 bytes for M = 4 (kernel strict), got 255 bytes"},
      {"workspace null", [&](RunArgs& a) { a.workspace = nullptr; }, ErrorCode::invalid_argument, "workspace: expected 256 bytes, got a null pointer"},
      {"workspace misaligned", [&](RunArgs& a) { a.workspace = ws + 8; }, ErrorCode::alignment, "workspace: expected 16-byte aligned"},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.what);
    RunArgs a = good();
    cs.edit(a);
    std::string m = error_of([&] { k.run(*w, a); }, cs.code);
    EXPECT_NE(m.find(cs.text), std::string::npos) << m;
  }

  // Weights of the right layout tag but a config this kernel refuses.
  LinearConfig bf = small_config(DType::bf16);
  std::unique_ptr<PreparedWeights> wbf = k.prepare(q.view(), bf, nullptr);
  std::string m = error_of([&] { k.run(*wbf, good()); }, ErrorCode::unsupported);
  EXPECT_NE(m.find("weights: expected a config kernel strict implements"), std::string::npos) << m;
  EXPECT_NE(m.find("act_dtype must be float16"), std::string::npos) << m;
  // Weights of another layout.
  std::unique_ptr<PreparedWeights> wref = find_kernel("cpu_reference")->prepare(q.view(), c);
  m = error_of([&] { k.run(*wref, good()); }, ErrorCode::layout_mismatch);
  EXPECT_NE(m.find("weights: expected layout \"test.strict\" (the layout kernel strict prepares and runs), got weights prepared in layout \"cpu.canonical\""),
            std::string::npos) << m;
  // M = 0 needs no data pointers.
  RunArgs a = good();
  a.x.shape[0] = a.out.shape[0] = 0;
  a.x.data = a.out.data = nullptr;
  k.run(*w, a);
}

TEST(LinearApi, CreateAndRunChecks) {
  LinearConfig c = small_config();
  QuantizedLinear q = test::random_weights(c, DType::f16);
  LinearOptions lo;
  lo.max_m = 0;
  std::string m = error_of([&] { Linear::create(q.view(), lo); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("max_m: expected >= 1, got 0"), std::string::npos) << m;
  lo.max_m = 4;
  lo.backend = "nope";
  m = error_of([&] { Linear::create(q.view(), lo); }, ErrorCode::not_found);
  lo.backend = "cpu_reference";
  Linear lin = Linear::create(q.view(), lo);
  EXPECT_EQ(lin.kernel().name(), "cpu_reference");
  EXPECT_EQ(lin.decision().forced_by, "SelectOptions.backend");
  EXPECT_EQ(lin.weight_bytes(), q.nbytes());
  test::HostMatrix x = test::random_matrix(2, c.k, DType::bf16, c.k, 0);
  test::HostMatrix out = test::poisoned_matrix(2, c.n, DType::f16, c.n, 0);
  m = error_of([&] { lin.forward(x.view(), out.view()); }, ErrorCode::dtype_mismatch);
  EXPECT_NE(m.find("x: expected float16"), std::string::npos) << m;
  EXPECT_EQ(error_of([&] { Linear().forward(x.view(), out.view()); }, ErrorCode::invalid_argument).find("Linear"), 0u);
#if !W4A16_HAVE_CUDA
  lo.device = Device::cuda;
  m = error_of([&] { Linear::create(q.view(), lo); }, ErrorCode::unsupported);
  EXPECT_NE(m.find("no CUDA kernels"), std::string::npos) << m;
#endif
}

}  // namespace
}  // namespace w4a16
