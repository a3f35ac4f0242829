// (e) CUDA kernels through the registry, on the device: for every CUDA kernel and every grid
// configuration it accepts at this GPU's capability, several M, the output matches the f64
// oracle (test::tolerance), the weights prepared from a host copy that is scrambled before the
// runs, with poisoned outputs, strided rows and guard elements; weights of
// the shared layout run on every tc kernel; another layout is refused naming both; the hybrid
// captured in a CUDA graph at M = 1 (and on its prefill path) replays correctly on fresh inputs.
// Run: build-cuda/tests/gpu/registry/w4a16_test_gpu_registry
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "grid.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16 {
namespace {

// "" when a GPU is usable, else why not.
std::string no_gpu_reason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  return {};
}

#define SKIP_WITHOUT_GPU()                                  \
  do {                                                      \
    std::string why_ = no_gpu_reason();                     \
    if (!why_.empty()) GTEST_SKIP() << why_;                \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

int capability() {
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return 10 * major + minor;
}

struct DeviceBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    if (n && cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { if (p) cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// A host matrix mirrored on the device (the whole allocation: rows, padding and guard).
struct Mirrored {
  test::HostMatrix host;
  DeviceBuffer dev;
  explicit Mirrored(test::HostMatrix m) : host(std::move(m)), dev(host.bytes.size()) {}
  void upload() { ASSERT_EQ(cudaMemcpy(dev.p, host.bytes.data(), host.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess); }
  void download() { ASSERT_EQ(cudaMemcpy(host.bytes.data(), dev.p, host.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess); }
  TensorView view() const {
    TensorView v = host.view(Device::cuda, dev.p);
    int d = 0;
    cudaGetDevice(&d);
    v.device_index = d;
    return v;
  }
};

// This GPU's configs of the grid: the platform's grid at the device's own capability.
std::vector<LinearConfig> device_grid(bool small_only) {
  const int cap = capability();
  std::vector<LinearConfig> grid = test::config_grid(platform_of(Device::cuda, cap), {.small_shapes_only = small_only, .with_invalid = true});
  std::vector<LinearConfig> out;
  for (LinearConfig c : grid)
    if (c.capability == grid.front().capability) {
      c.capability = cap;
      out.push_back(c);
    }
  return out;
}

// The run arguments of x, out and a workspace on `stream`.
RunArgs run_args(const Mirrored& x, const Mirrored& out, const DeviceBuffer& ws, cudaStream_t stream) {
  RunArgs a;
  a.x = x.view();
  a.out = out.view();
  a.workspace = ws.p;
  a.workspace_bytes = ws.bytes;
  a.stream = stream;
  return a;
}

// Runs kernel k on prepared weights for M rows of x and checks the result against the oracle;
// false (with the failures recorded) when it does not match.
bool check_run(const Kernel& k, const PreparedWeights& w, const QuantizedLinear& q, const LinearConfig& c, std::int64_t m,
               std::int64_t x_pad, std::int64_t out_pad, cudaStream_t stream) {
  SCOPED_TRACE(std::string(k.name()) + " M=" + std::to_string(m));
  Mirrored x(test::random_matrix(m, c.k, c.act_dtype, c.k + x_pad, 64));
  Mirrored out(test::poisoned_matrix(m, c.n, c.out_dtype, c.n + out_pad, 64));
  x.upload();
  out.upload();
  DeviceBuffer ws(k.workspace_bytes(c, m));
  k.run(w, run_args(x, out, ws, stream));
  cudaError_t e = cudaStreamSynchronize(stream);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  if (e != cudaSuccess) return false;
  out.download();
  const std::vector<double> ref = test::gemm_f64(x.host.values(), test::dequant_f64(q), test::bias_f64(q), m, c.n, c.k);
  const double err = test::rel_error(out.host.values(), ref);
  const std::int64_t clobbered = out.host.clobbered_padding();
  EXPECT_LT(err, test::tolerance_for(c));
  EXPECT_EQ(clobbered, 0) << "elements outside [M, N] were written";
  return err < test::tolerance_for(c) && clobbered == 0;
}

// Every byte of a layer's tensors XORed with 0x5a: other weights, scales (some not finite) and perm entries.
void scramble(QuantizedLinear& q) {
  for (HostTensor* t : {&q.qweight(), &q.scales(), &q.zeros(), &q.bias(), &q.perm()}) {
    auto* b = static_cast<unsigned char*>(t->data());
    for (std::size_t i = 0; i < t->nbytes(); ++i) b[i] ^= 0x5a;
  }
}

TEST(GpuClaims, EveryCudaKernelMatchesTheOracleWhereverItClaims) {
  SKIP_WITHOUT_GPU();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const std::vector<LinearConfig> grid = device_grid(/*small_only=*/true);
  std::size_t kernels = 0;
  for (const KernelEntry& e : all_kernels()) {
    if (e.kernel->device() != Device::cuda) continue;
    ++kernels;
    std::size_t checked = 0;
    bool failed = false;  // after one failing config of a kernel, go on to the next kernel
    for (std::size_t i = 0; i < grid.size() && !failed; ++i) {
      const LinearConfig& c = grid[i];
      if (!test::forced_refusal(c, e.kernel->name()).empty()) continue;
      SCOPED_TRACE(std::string(e.kernel->name()) + " on " + c.describe() + " (W4A16_SEED=" + std::to_string(test::seed()) + ")");
      QuantizedLinear q = test::random_weights(c, (i % 2) ? DType::bf16 : DType::f16);
      // Prepared from a copy that is scrambled before any run: a CUDA kernel's prepared weights own every byte they
      // read (the Python binding drops the host canonical tensors on that promise: python/src/linear.cpp).
      QuantizedLinear source = q;
      std::unique_ptr<PreparedWeights> w = e.kernel->prepare(source.view(), c, stream);
      scramble(source);
      ASSERT_EQ(w->layout(), e.kernel->layout());
      EXPECT_GE(w->device_bytes(), static_cast<std::size_t>(c.n * c.k / 2));
      for (std::int64_t m : {1, 3, 16, 17, 33, 100}) {
        // 16-byte rows (what the prefill path needs without act-order); odd out strides on odd configs.
        if (!check_run(*e.kernel, *w, q, c, m, (i % 3 == 0) ? 8 : 0, (i % 2) ? 3 : 0, stream)) {
          failed = true;
          break;
        }
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u) << e.kernel->name() << " accepted nothing on this GPU's grid";
    std::printf("[gpu claims] %s: %zu (config, M) runs matched the f64 oracle\n", std::string(e.kernel->name()).c_str(), checked);
  }
  EXPECT_GT(kernels, 0u) << "a CUDA build registers CUDA kernels";
  cudaStreamDestroy(stream);
}

// Real layer shapes on the kernels chosen by default, M across both hybrid paths.
TEST(GpuClaims, ModelShapesThroughLinear) {
  SKIP_WITHOUT_GPU();
  struct Case { std::int64_t n, k; DType act; ScalarType s; int g; bool bias, act_order; };
  const Case cases[] = {
      {1152, 896, DType::f16, ScalarType::uint4, 128, true, false},
      {896, 4864, DType::bf16, ScalarType::uint4b8, 128, false, true},
      {4096, 4096, DType::f16, ScalarType::uint4b8, kChannelwise, false, false},
  };
  for (const Case& cs : cases) {
    LinearConfig c;
    c.n = c.n_full = cs.n;
    c.k = c.k_full = cs.k;
    c.act_dtype = c.out_dtype = cs.act;
    c.scalar = cs.s;
    c.has_zeros = cs.s == ScalarType::uint4;
    c.group_size = cs.g;
    c.has_bias = cs.bias;
    c.act_order = cs.act_order;
    QuantizedLinear q = test::random_weights(c, cs.act);
    LinearOptions lo;
    lo.act_dtype = cs.act;
    lo.device = Device::cuda;
    cudaGetDevice(&lo.device_index);
    lo.max_m = 256;
    Linear lin = Linear::create(q.view(), lo);
    SCOPED_TRACE(lin.decision().text());
    EXPECT_EQ(lin.kernel().name(), priority_list(platform_of(Device::cuda, capability())).front()->name());
    const std::vector<double> wref = test::dequant_f64(q), bref = test::bias_f64(q);
    for (std::int64_t m : {1, 8, 16, 17, 64, 256}) {
      SCOPED_TRACE("M=" + std::to_string(m));
      Mirrored x(test::random_matrix(m, c.k, cs.act, c.k, 32));
      Mirrored out(test::poisoned_matrix(m, c.n, cs.act, c.n, 32));
      x.upload();
      out.upload();
      lin.forward(x.view(), out.view());
      CUDA_OK(cudaDeviceSynchronize());
      out.download();
      EXPECT_LT(test::rel_error(out.host.values(), test::gemm_f64(x.host.values(), wref, bref, m, c.n, c.k)), test::tolerance(cs.act));
      EXPECT_EQ(out.host.clobbered_padding(), 0);
    }
  }
}

LinearConfig small_cuda_config() {
  LinearConfig c;
  c.n = c.n_full = 192;
  c.k = c.k_full = 512;
  c.scalar = ScalarType::uint4;
  c.has_zeros = true;
  c.group_size = 128;
  c.has_bias = true;
  c.device = Device::cuda;
  c.capability = capability();
  return c;
}

TEST(GpuLayouts, OneTcCopyServesEveryTcKernelAndOtherLayoutsAreRefused) {
  SKIP_WITHOUT_GPU();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const LinearConfig c = small_cuda_config();
  QuantizedLinear q = test::random_weights(c, DType::f16);
  std::vector<const Kernel*> cuda;
  for (const KernelEntry& e : all_kernels())
    if (e.kernel->device() == Device::cuda && e.kernel->can_implement(c).empty()) cuda.push_back(e.kernel);
  ASSERT_FALSE(cuda.empty());
  for (const Kernel* from : cuda) {
    std::unique_ptr<PreparedWeights> w = from->prepare(q.view(), c, stream);
    for (const Kernel* to : cuda) {
      SCOPED_TRACE(std::string(from->name()) + " -> " + std::string(to->name()));
      if (from->layout() == to->layout()) {
        check_run(*to, *w, q, c, 5, 0, 0, stream);
        continue;
      }
      Mirrored x(test::random_matrix(2, c.k, c.act_dtype, c.k, 0)), out(test::poisoned_matrix(2, c.n, c.out_dtype, c.n, 0));
      RunArgs a;
      a.x = x.view();
      a.out = out.view();
      try {
        to->run(*w, a);
        ADD_FAILURE() << "ran on another kernel's layout";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::layout_mismatch) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::string(to->layout())), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::string(from->layout())), std::string::npos) << e.what();
      }
    }
  }
  // Host weights of a CPU kernel never reach a CUDA kernel either.
  LinearConfig cc = c;
  cc.device = Device::cpu;
  cc.capability = 0;
  std::unique_ptr<PreparedWeights> cpu_w = find_kernel("cpu_fast")->prepare(q.view(), cc);
  RunArgs a;
  try {
    cuda.front()->run(*cpu_w, a);
    ADD_FAILURE() << "ran on CPU weights";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::layout_mismatch) << e.what();
  }
  // The dense cache reports both copies it holds.
  if (const Kernel* d = find_kernel("cuda_dense_cache"); d && d->can_implement(c).empty()) {
    std::unique_ptr<PreparedWeights> dw = d->prepare(q.view(), c, stream);
    std::unique_ptr<PreparedWeights> tw = find_kernel("cuda_decode")->prepare(q.view(), c, stream);
    EXPECT_EQ(dw->device_bytes(), tw->device_bytes() + static_cast<std::size_t>(c.n * c.k * 2));
  }
  cudaStreamDestroy(stream);
}

// Linear::adopt over the tc layout's arrays uploaded by the caller (as a framework's tensors hold them): for each dtype x
// scalar type x (bias, act-order) and M on the decode and the prefill path, bit-equal to the Linear that prepared its own
// copy (the same kernel over the same bytes) and within the oracle's tolerance; the adopted Linear reads the arrays in
// place (scales zeroed by the caller: outputs are the bias alone) and holds nothing of its own but its workspace.
TEST(GpuLayouts, AdoptedTcArraysRunBitEqualToPrepared) {
  SKIP_WITHOUT_GPU();
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
      for (bool extras : {false, true}) {
        LinearConfig c = small_cuda_config();
        c.act_dtype = c.out_dtype = act;
        c.scalar = st;
        c.has_zeros = st == ScalarType::uint4;
        c.has_bias = c.act_order = extras;
        SCOPED_TRACE(c.describe());
        QuantizedLinear q = test::random_weights(c, DType::f16);
        LinearOptions o;
        o.act_dtype = act;
        o.device = Device::cuda;
        o.device_index = dev;
        o.max_m = 300;
        const Linear own = Linear::create(q.view(), o);
        const std::vector<LayoutArray> arrays = own.kernel().layout_host(q.view(), own.config());
        std::vector<std::unique_ptr<DeviceBuffer>> held;
        std::vector<LayoutView> views;
        for (const LayoutArray& a : arrays) {
          held.push_back(std::make_unique<DeviceBuffer>(a.bytes.size()));
          CUDA_OK(cudaMemcpy(held.back()->p, a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice));
          views.push_back({a.name, TensorView(held.back()->p, a.dtype, a.shape, Device::cuda, dev)});
        }
        LinearConfig lc = LinearConfig::from(q.view(), act, Device::cuda, capability());
        LinearOptions shared = o;  // the caller's workspace for every call (one buffer a model's layers share)
        shared.own_workspace = false;
        const Linear adopted = Linear::adopt(own.kernel().layout(), views, lc, shared);
        EXPECT_EQ(adopted.kernel().name(), own.kernel().name());
        EXPECT_EQ(adopted.weight_bytes(), own.weight_bytes());
        EXPECT_EQ(adopted.workspace_bytes(), own.workspace_bytes());
        for (std::int64_t m : {1, 5, 33, 300}) {
          SCOPED_TRACE("M=" + std::to_string(m));
          Mirrored x(test::random_matrix(m, c.k, act, c.k, 0));
          Mirrored y0(test::poisoned_matrix(m, c.n, act, c.n, 64)), y1(test::poisoned_matrix(m, c.n, act, c.n, 64));
          x.upload();
          y0.upload();
          y1.upload();
          own.forward(x.view(), y0.view());
          const std::size_t need = adopted.workspace_bytes_for(m);
          EXPECT_LE(need, adopted.workspace_bytes());
          DeviceBuffer ws(need);
          if (need > 0) {  // no workspace of its own: forward() and a workspace one byte short are refused by name
            try {
              adopted.forward(x.view(), y1.view());
              ADD_FAILURE() << "ran without the workspace it needs";
            } catch (const Error& e) {
              EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
            }
            EXPECT_THROW(adopted.run(x.view(), y1.view(), ws.p, need - 1, nullptr), Error);
          }
          adopted.run(x.view(), y1.view(), ws.p, need, nullptr);
          CUDA_OK(cudaDeviceSynchronize());
          y0.download();
          y1.download();
          EXPECT_EQ(y0.host.bytes, y1.host.bytes) << "the adopted arrays ran other bits than the prepared copy";
          const std::vector<double> ref = test::gemm_f64(x.host.values(), test::dequant_f64(q), test::bias_f64(q), m, c.n, c.k);
          EXPECT_LT(test::rel_error(y1.host.values(), ref), test::tolerance_for(c));
          EXPECT_EQ(y1.host.clobbered_padding(), 0);
        }
        // In place: the caller zeroes its scales array; the adopted Linear now computes the bias alone (zero without).
        CUDA_OK(cudaMemset(held[1]->p, 0, arrays[1].bytes.size()));
        Mirrored x(test::random_matrix(3, c.k, act, c.k, 0)), y(test::poisoned_matrix(3, c.n, act, c.n, 0));
        x.upload();
        y.upload();
        DeviceBuffer ws3(adopted.workspace_bytes_for(3));
        adopted.run(x.view(), y.view(), ws3.p, ws3.bytes, nullptr);
        CUDA_OK(cudaDeviceSynchronize());
        y.download();
        const std::vector<double> b = test::bias_f64(q);
        const std::vector<double> got = y.host.values();
        for (std::int64_t i = 0; i < 3 * c.n; ++i) {
          // the bias in the activation dtype (the layout converts it once), or 0
          const double want = b.empty() ? 0.0 : f16x_to_float(act, float_to_f16x(act, static_cast<float>(b[static_cast<std::size_t>(i % c.n)])));
          ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << "element " << i;
        }
      }
}

// The hybrid under CUDA-graph capture: captured once, replayed on fresh x written into the
// same device buffer; each replay must match the oracle for the x it saw.
void graph_replay(std::int64_t m) {
  const Kernel* h = find_kernel("cuda_hybrid");
  ASSERT_NE(h, nullptr);
  LinearConfig c = small_cuda_config();
  c.n = c.n_full = 1152;
  c.k = c.k_full = 896;
  if (std::string why = h->can_implement(c); !why.empty()) GTEST_SKIP() << "cuda_hybrid on this GPU: " << why;
  QuantizedLinear q = test::random_weights(c, DType::f16);
  LinearOptions lo;
  lo.device = Device::cuda;
  cudaGetDevice(&lo.device_index);
  lo.backend = "cuda_hybrid";
  lo.max_m = m;
  Linear lin = Linear::create(q.view(), lo);
  DeviceBuffer ws(lin.workspace_bytes());
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Mirrored x(test::random_matrix(m, c.k, DType::f16, c.k, 16));
  Mirrored out(test::poisoned_matrix(m, c.n, DType::f16, c.n, 16));
  x.upload();
  out.upload();
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  lin.run(x.view(), out.view(), ws.p, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<double> wref = test::dequant_f64(q), bref = test::bias_f64(q);
  for (int replay = 0; replay < 3; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    Mirrored fresh(test::random_matrix(m, c.k, DType::f16, c.k, 16));
    std::memcpy(x.host.bytes.data(), fresh.host.bytes.data(), x.host.bytes.size());
    x.upload();
    test::HostMatrix poison = test::poisoned_matrix(m, c.n, DType::f16, c.n, 16);
    out.host.bytes = poison.bytes;
    out.upload();
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    out.download();
    EXPECT_LT(test::rel_error(out.host.values(), test::gemm_f64(x.host.values(), wref, bref, m, c.n, c.k)), test::tolerance(DType::f16));
    EXPECT_EQ(out.host.clobbered_padding(), 0);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// The hybrid's dense path (W dequantized per call into the workspace + cuBLAS; W4A16_HYBRID_DENSE_MIN_M
// forces it from 17 tokens on): on every grid config the hybrid accepts, at M = 17, 33, 100 and 1000,
// the output matches the f64 oracle (poisoned outputs, strided rows, guard elements), and the
// workspace, poisoned before the call, starts with the dense W (N, K) that the oracle dequantizes:
// the path ran and wrote exactly its copy. Act-order configs take the prefill path and match too.
TEST(GpuDense, HybridDensePathMatchesTheOracleAndWritesTheDenseWeights) {
  SKIP_WITHOUT_GPU();
  test::ScopedEnv force("W4A16_HYBRID_DENSE_MIN_M", "17");
  const Kernel* h = find_kernel("cuda_hybrid");
  ASSERT_NE(h, nullptr);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const std::vector<LinearConfig> grid = device_grid(/*small_only=*/true);
  std::size_t dense_runs = 0, other_runs = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const LinearConfig& c = grid[i];
    if (!test::forced_refusal(c, h->name()).empty()) continue;
    SCOPED_TRACE(c.describe() + " (W4A16_SEED=" + std::to_string(test::seed()) + ")");
    const DType act = (i % 2) ? DType::bf16 : DType::f16;
    QuantizedLinear q = test::random_weights(c, act);
    std::unique_ptr<PreparedWeights> w = h->prepare(q.view(), c, stream);
    const std::vector<double> wref = test::dequant_f64(q), bref = test::bias_f64(q);
    for (std::int64_t m : {17, 33, 100, 1000}) {
      SCOPED_TRACE("M=" + std::to_string(m));
      Mirrored x(test::random_matrix(m, c.k, c.act_dtype, c.k + ((i % 3 == 0) ? 8 : 0), 64));
      Mirrored out(test::poisoned_matrix(m, c.n, c.out_dtype, c.n + ((i % 2) ? 3 : 0), 64));
      x.upload();
      out.upload();
      DeviceBuffer ws(h->workspace_bytes(c, m));
      ASSERT_NE(ws.p, nullptr);
      CUDA_OK(cudaMemset(ws.p, 0xff, ws.bytes));  // NaN in fp16 and bf16
      h->run(*w, run_args(x, out, ws, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      out.download();
      EXPECT_LT(test::rel_error(out.host.values(), test::gemm_f64(x.host.values(), wref, bref, m, c.n, c.k)), test::tolerance_for(c));
      EXPECT_EQ(out.host.clobbered_padding(), 0) << "elements outside [M, N] were written";
      if (c.act_order) {
        ++other_runs;
        continue;
      }
      ASSERT_GE(ws.bytes, static_cast<std::size_t>(c.n * c.k) * 2);
      test::HostMatrix wd = test::poisoned_matrix(c.n, c.k, c.act_dtype, c.k, 0);
      ASSERT_EQ(wd.bytes.size(), static_cast<std::size_t>(c.n * c.k) * 2);
      CUDA_OK(cudaMemcpy(wd.bytes.data(), ws.p, wd.bytes.size(), cudaMemcpyDeviceToHost));
      // (q - z) * s rounded once to the act dtype: within half an ulp of the oracle's value.
      EXPECT_LT(test::rel_error(wd.values(), wref), c.act_dtype == DType::bf16 ? 4e-3 : 1e-3) << "the workspace does not hold the dense W";
      ++dense_runs;
    }
  }
  EXPECT_GT(dense_runs, 0u);
  std::printf("[gpu dense] cuda_hybrid: %zu dense-path runs and %zu act-order (prefill path) runs matched the f64 oracle\n", dense_runs,
              other_runs);
  cudaStreamDestroy(stream);
}

TEST(GpuGraph, HybridCapturedAtM1ReplaysCorrectly) {
  SKIP_WITHOUT_GPU();
  graph_replay(1);
}

TEST(GpuGraph, HybridCapturedOnItsPrefillPathReplaysCorrectly) {
  SKIP_WITHOUT_GPU();
  test::ScopedEnv off("W4A16_HYBRID_DENSE_MIN_M", "0");
  graph_replay(64);
}

// cuBLAS under capture: the handle made at prepare, its workspace the caller's.
TEST(GpuGraph, HybridCapturedOnItsDensePathReplaysCorrectly) {
  SKIP_WITHOUT_GPU();
  test::ScopedEnv force("W4A16_HYBRID_DENSE_MIN_M", "64");
  graph_replay(64);
}

}  // namespace
}  // namespace w4a16
