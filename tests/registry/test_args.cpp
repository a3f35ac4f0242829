// (d) Layouts and arguments: weights prepared by one kernel are refused by a kernel of another
// layout, naming both; unpacked or float zero points never become a canonical view; every
// check_run_args rejection names its argument; Linear's own argument checks.
#include <gtest/gtest.h>

#include <cstring>

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

// The tc layout's host arrays (what a framework keeps in its own tensors instead of the kernel's copy) and adopt's
// checks, on the host: names, dtypes and shapes per config, the scales' pair interleave (bf16 from fp16 scales, padded
// rows 0), the perm as given; arrays refused by name before any device is touched (missing, extra, wrong dtype or
// shape, host memory), a config the kernel refuses, a kernel whose layout cannot be held outside. The runs over adopted
// arrays: tests/gpu/registry (GpuLayouts.AdoptedTcArraysRunBitEqualToPrepared).
TEST(Layouts, TcLayoutHostArraysAndAdoptChecks) {
  const Kernel* k = find_kernel("cuda_hybrid");
  if (!k) GTEST_SKIP() << "this build has no CUDA kernels (cuda_hybrid is not registered)";
  LinearConfig c = small_config(DType::bf16, ScalarType::uint4);  // k 256, g 64: 4 groups
  c.n = c.n_full = 40;                                            // padded to 64 rows: 4 row tiles
  c.has_bias = c.act_order = true;
  c.device = Device::cuda;
  c.capability = cuda_archs().find("90a") != std::string::npos ? 90 : 80;  // a GPU this build has code for
  QuantizedLinear q = test::random_weights(c, DType::f16);
  const std::vector<LayoutArray> a = k->layout_host(q.view(), c);
  struct Want { const char* name; DType dtype; std::vector<std::int64_t> shape; };
  const Want want[] = {{"qweight", DType::i32, {4, 4, 32, 4}}, {"scales", DType::bf16, {4, 64}}, {"zeros", DType::u8, {4, 4, 8}},
                       {"bias", DType::bf16, {40}}, {"perm", DType::i32, {256}}};
  ASSERT_EQ(a.size(), 5u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, want[i].name);
    EXPECT_EQ(a[i].dtype, want[i].dtype) << a[i].name;
    EXPECT_EQ(a[i].shape, want[i].shape) << a[i].name;
    std::int64_t numel = 1;
    for (std::int64_t d : a[i].shape) numel *= d;
    EXPECT_EQ(a[i].bytes.size(), static_cast<std::size_t>(numel) * dtype_size(a[i].dtype)) << a[i].name;
  }
  const auto* sc = reinterpret_cast<const std::uint16_t*>(a[1].bytes.data());
  const auto* src = q.scales().ptr<std::uint16_t>();
  for (std::int64_t g = 0; g < 4; ++g)
    for (std::int64_t n = 0; n < 64; ++n) {
      const std::uint16_t expect = n < 40 ? float_to_f16x(DType::bf16, f16x_to_float(DType::f16, src[n * 4 + g])) : 0;
      ASSERT_EQ(sc[g * 64 + n / 16 * 16 + 2 * (n % 8) + n % 16 / 8], expect) << "g=" << g << " n=" << n;
    }
  EXPECT_EQ(std::memcmp(a[4].bytes.data(), q.perm().data(), 256 * 4), 0);

  auto views = [&](Device d) {
    std::vector<LayoutView> v;
    for (const LayoutArray& x : a) v.push_back({x.name, TensorView(const_cast<std::uint8_t*>(x.bytes.data()), x.dtype, x.shape, d)});
    return v;
  };
  std::vector<LayoutView> v = views(Device::cuda);
  v.erase(v.begin() + 2);
  std::string m = error_of([&] { k->adopt(v, c); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("zeros: expected uint8 [4, 4, 8] on the CUDA device (layout cuda.tc16x64.v1), got no array"), std::string::npos) << m;
  v = views(Device::cuda);
  v.push_back({"scale", v[1].view});
  m = error_of([&] { k->adopt(v, c); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("scale: expected no array of that name"), std::string::npos) << m;
  v = views(Device::cuda);
  v[1].view.dtype = DType::f16;
  m = error_of([&] { k->adopt(v, c); }, ErrorCode::dtype_mismatch);
  EXPECT_NE(m.find("scales: expected bfloat16 [4, 64]"), std::string::npos) << m;
  v = views(Device::cuda);
  v[0].view = TensorView(v[0].view.data, DType::i32, {4, 4, 32, 2}, Device::cuda);
  m = error_of([&] { k->adopt(v, c); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("qweight: expected int32 [4, 4, 32, 4]"), std::string::npos) << m;
  v = views(Device::cuda);  // a pointer 4 bytes past the array's start: not 16-byte aligned
  v[1].view = TensorView(static_cast<std::uint8_t*>(v[1].view.data) + 4, DType::bf16, {4, 64}, Device::cuda);
  m = error_of([&] { k->adopt(v, c); }, ErrorCode::alignment);
  EXPECT_NE(m.find("scales.data: expected 16-byte aligned pointer"), std::string::npos) << m;
  v = views(Device::cuda);  // rows of a wider array: strided
  v[1].view.stride[0] = 128;
  m = error_of([&] { k->adopt(v, c); }, ErrorCode::layout_mismatch);
  EXPECT_NE(m.find("scales: expected bfloat16 [4, 64] on the CUDA device (layout cuda.tc16x64.v1), contiguous"), std::string::npos) << m;
  m = error_of([&] { k->adopt(views(Device::cpu), c); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("qweight: expected int32 [4, 4, 32, 4] on the CUDA device"), std::string::npos) << m;
  EXPECT_NE(m.find("got int32 [4, 4, 32, 4] on cpu"), std::string::npos) << m;
  LinearConfig bad = c;
  bad.act_dtype = bad.out_dtype = DType::f32;
  m = error_of([&] { k->adopt(views(Device::cuda), bad); }, ErrorCode::unsupported);
  EXPECT_NE(m.find("config: expected a config cuda_hybrid implements"), std::string::npos) << m;
  const Kernel* ref = find_kernel("cpu_reference");
  LinearConfig cpu = c;
  cpu.device = Device::cpu;
  cpu.capability = 0;
  m = error_of([&] { ref->layout_host(q.view(), cpu); }, ErrorCode::unsupported);
  EXPECT_NE(m.find("got cpu_reference (layout cpu.canonical)"), std::string::npos) << m;
  m = error_of([&] { ref->adopt({}, cpu); }, ErrorCode::unsupported);
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
  // Linear::adopt refuses a config FORMATS.md does not allow, and a layout other than the chosen kernel's (here a CPU
  // kernel: no device needed to reach either check).
  {
    LinearOptions cpu;
    LinearConfig bad = c;
    bad.group_size = 48;
    m = error_of([&] { Linear::adopt("cuda.tc16x64.v1", {}, bad, cpu); }, ErrorCode::invalid_argument);
    EXPECT_NE(m.find("config: expected a layer shared/FORMATS.md allows"), std::string::npos) << m;
    m = error_of([&] { Linear::adopt("cuda.tc16x64.v1", {}, c, cpu); }, ErrorCode::layout_mismatch);
    EXPECT_NE(m.find("layout: expected the layout of the kernel chosen for"), std::string::npos) << m;
    EXPECT_NE(m.find("got cuda.tc16x64.v1"), std::string::npos) << m;
  }
  // No workspace of its own: the CPU kernels need none, so every call runs; workspace_bytes_for says so per M.
  lo.own_workspace = false;
  Linear lean = Linear::create(q.view(), lo);
  EXPECT_EQ(lean.workspace_bytes_for(2), 0u);
  test::HostMatrix xf = test::random_matrix(2, c.k, DType::f16, c.k, 0);
  lean.run(xf.view(), out.view(), nullptr, 0, nullptr);
  EXPECT_EQ(out.clobbered_padding(), 0);
  m = error_of([&] { lean.workspace_bytes_for(-1); }, ErrorCode::invalid_argument);
#if !W4A16_HAVE_CUDA
  lo.device = Device::cuda;
  m = error_of([&] { Linear::create(q.view(), lo); }, ErrorCode::unsupported);
  EXPECT_NE(m.find("no CUDA kernels"), std::string::npos) << m;
#endif
}

}  // namespace
}  // namespace w4a16
