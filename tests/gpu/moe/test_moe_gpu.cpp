// The CUDA MoE against the CPU: routing (ids bit for bit, weights to 1e-6) and alignment
// (FORMATS.md example verbatim, random cases equal to align_cpu), and the fused layer on every
// path (direct, blocks 8 / 16 / 32 / 64 / 128, chosen; 32 and 64 both as the grouped wgmma path and the
// mma.sync kernel) against an f64 oracle built here from the canonical
// bits; Qwen3-30B-A3B shapes against moe_reference; CUDA-graph replay; determinism; rejections.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>

#include "../../moe/moe_case.hpp"
#include "moe/moe_kernels.cuh"
#include "moe/ring_align.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"
#include "w4a16/moe/moe_cuda.hpp"

namespace w4a16::moe {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: the CUDA MoE kernels cannot run here"

#define CU(x) ASSERT_EQ((x), cudaSuccess) << #x

using test::ScopedEnv;  // a knob for its scope (the launchers read theirs per call), restored after

template <class T>
struct Dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit Dev(std::size_t count) : n(count) {
    if (cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) p = nullptr;
  }
  Dev(const std::vector<T>& v) : Dev(v.size()) { cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice); }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
};

TEST(MoeGpuRouting, MatchesRouteCpu) {
  REQUIRE_GPU();
  auto& g = test::rng();
  for (int E : {8, 60, 128, 1024})
    for (int k : {1, 2, 8})
      for (bool renorm : {true, false}) {
        const std::int64_t T = 77;
        std::vector<float> logits(static_cast<std::size_t>(T * E));
        std::normal_distribution<float> nd(0.f, 3.f);
        for (auto& v : logits) v = nd(g);
        std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k));
        std::vector<float> w(ids.size());
        route_cpu(logits.data(), T, E, {k, renorm}, ids.data(), w.data());
        Dev<float> dl(logits), dw(ids.size());
        Dev<std::int32_t> di(ids.size());
        route_cuda(dl.p, T, E, {k, renorm}, di.p, dw.p, nullptr);
        CU(cudaDeviceSynchronize());
        auto gi = di.get();
        auto gw = dw.get();
        for (std::size_t i = 0; i < ids.size(); ++i) {
          ASSERT_EQ(gi[i], ids[i]) << "E=" << E << " k=" << k << " i=" << i;
          // The softmax denominator is summed in another order (warp tree vs left to right), so
          // weights agree to a few ulp times log2(E), not bit for bit: 1e-5 relative covers E = 1024.
          ASSERT_NEAR(gw[i], w[i], 1e-5f * std::max(1.f, w[i])) << "E=" << E << " k=" << k << " i=" << i;
        }
      }
}

// router_logits_cuda against router_logits_cpu (f64): every dtype pair, a row stride, T = 1..300, E up to 1024, H not a
// multiple of 256 (a partial last round of the lanes); poisoned logits; run twice, bit-identical; then routed on the
// device, the ids equal route_cpu's of the device's own logits (and the host logits' wherever the top k are apart).
TEST(MoeGpuRouting, RouterLogitsMatchTheHost) {
  REQUIRE_GPU();
  auto& g = test::rng();
  std::normal_distribution<float> nd(0.f, 1.f);
  struct Case {
    DType xd, rd;
    std::int64_t T, H, stride;
    int E;
  };
  for (const Case c : {Case{DType::f16, DType::f16, 1, 2048, 2048, 128}, Case{DType::bf16, DType::bf16, 7, 4096, 4104, 8},
                       Case{DType::f16, DType::bf16, 300, 264, 264, 60}, Case{DType::bf16, DType::f16, 33, 64, 72, 1024}}) {
    SCOPED_TRACE("T=" + std::to_string(c.T) + " H=" + std::to_string(c.H) + " E=" + std::to_string(c.E));
    const auto to16 = [](DType d, float v) { return d == DType::bf16 ? float_to_bf16(v) : float_to_half(v); };
    std::vector<std::uint16_t> x(static_cast<std::size_t>(c.T * c.stride)), r(static_cast<std::size_t>(c.E * c.H));
    for (auto& v : x) v = to16(c.xd, nd(g));
    for (auto& v : r) v = to16(c.rd, 0.05f * nd(g));
    std::vector<float> want(static_cast<std::size_t>(c.T * c.E));
    HostTensor xh(c.xd, {c.T, c.H});  // router_logits_cpu takes contiguous rows
    for (std::int64_t t = 0; t < c.T; ++t)
      std::copy_n(x.data() + t * c.stride, c.H, xh.ptr<std::uint16_t>() + t * c.H);
    router_logits_cpu(xh.view(), TensorView(r.data(), c.rd, {c.E, c.H}), want.data());
    Dev<std::uint16_t> dx(x), dr(r);
    Dev<float> dl(want.size());
    TensorView xv(dx.p, c.xd, {c.T, c.H}, Device::cuda);
    xv.stride[0] = c.stride;
    const TensorView rv(dr.p, c.rd, {c.E, c.H}, Device::cuda);
    std::vector<float> got[2];
    for (auto& out : got) {
      CU(cudaMemset(dl.p, 0xff, dl.n * sizeof(float)));  // NaN
      router_logits_cuda(xv, rv, dl.p, nullptr);
      CU(cudaDeviceSynchronize());
      out = dl.get();
    }
    ASSERT_EQ(std::memcmp(got[0].data(), got[1].data(), want.size() * sizeof(float)), 0) << "not run-to-run identical";
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[0][i])) << "logit " << i << " not written";
      err += (got[0][i] - want[i]) * (got[0][i] - want[i]);
      ref += want[i] * want[i];
    }
    EXPECT_LE(std::sqrt(err / ref), 1e-5);
    // Device routing of the device logits = route_cpu of the same logits (ids bit for bit).
    const int k = std::min(c.E, 8);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(c.T * k));
    std::vector<float> w(ids.size());
    route_cpu(got[0].data(), c.T, c.E, {k, true}, ids.data(), w.data());
    Dev<std::int32_t> di(ids.size());
    Dev<float> dw(ids.size());
    route_cuda(dl.p, c.T, c.E, {k, true}, di.p, dw.p, nullptr);
    CU(cudaDeviceSynchronize());
    EXPECT_EQ(di.get(), ids);
  }
  // Arguments are checked by name.
  Dev<std::uint16_t> dx(64 * 64), dr(8 * 64);
  Dev<float> dl(64 * 8);
  const TensorView xv(dx.p, DType::f16, {64, 64}, Device::cuda), rv(dr.p, DType::f16, {8, 64}, Device::cuda);
  const auto message = [&](const TensorView& x, const TensorView& r) {
    try {
      router_logits_cuda(x, r, dl.p, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(xv, rv), "no error");
  EXPECT_EQ(message(TensorView(dx.p, DType::f16, {64, 64}), rv).rfind("x:", 0), 0u);  // a host view
  EXPECT_EQ(message(xv, TensorView(dr.p, DType::f16, {8, 56}, Device::cuda)).rfind("router:", 0), 0u);  // H differs
  EXPECT_EQ(message(TensorView(dx.p, DType::f16, {64, 60}, Device::cuda), TensorView(dr.p, DType::f16, {8, 60}, Device::cuda))
                .rfind("x:", 0),
            0u);  // H % 8
  TensorView odd = xv;
  odd.stride[0] = 68;  // rows not 16-byte aligned
  EXPECT_EQ(message(odd, rv).rfind("x:", 0), 0u);
  EXPECT_EQ(message(TensorView(static_cast<std::uint16_t*>(dx.p) + 1, DType::f16, {4, 64}, Device::cuda), rv).rfind("x:", 0),
            0u);
  CU(cudaDeviceSynchronize());
}

void check_align(const std::vector<std::int32_t>& ids, std::int64_t T, int k, int E, int block) {
  const Alignment want = align_cpu(ids.data(), T, k, E, block);
  const std::int64_t cap = aligned_capacity(T, k, E, block);
  Dev<std::int32_t> di(ids), ds(static_cast<std::size_t>(cap)), db(static_cast<std::size_t>(cap / block)), dt(1);
  Dev<unsigned char> scratch(align_scratch_bytes(T, k, E));
  cudaMemset(ds.p, 0xff, ds.n * 4);  // poisoned
  cudaMemset(db.p, 0x7f, db.n * 4);
  cudaMemset(scratch.p, 0xff, scratch.n);
  align_cuda(di.p, T, k, E, block, ds.p, db.p, dt.p, scratch.p, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(dt.get()[0], want.total);
  auto s = ds.get();
  auto b = db.get();
  for (std::int64_t i = 0; i < want.total; ++i) ASSERT_EQ(s[i], want.sorted_ids[i]) << "position " << i;
  for (std::int64_t i = want.total; i < cap; ++i) ASSERT_EQ(s[i], T * k) << "past the total, position " << i;
  for (std::int64_t i = 0; i < want.total / block; ++i) ASSERT_EQ(b[i], want.block_expert[i]) << "block " << i;
  for (std::int64_t i = want.total / block; i < cap / block; ++i) ASSERT_EQ(b[i], -1) << "block " << i;
}

TEST(MoeGpuAlign, FormatsWorkedExampleVerbatim) {
  REQUIRE_GPU();
  const std::vector<std::int32_t> ids = {1, 2, 3, 0, 1, 3, 0, 2, 3, 0, 1, 2};
  Dev<std::int32_t> di(ids), ds(16), db(4), dt(1);
  Dev<unsigned char> scratch(align_scratch_bytes(4, 3, 4));
  align_cuda(di.p, 4, 3, 4, 4, ds.p, db.p, dt.p, scratch.p, nullptr);
  CU(cudaDeviceSynchronize());
  EXPECT_EQ(ds.get(), (std::vector<std::int32_t>{3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12}));
  EXPECT_EQ(db.get(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(dt.get()[0], 16);
}

// Host-side contract (no device needed): the scratch the launches pass between them is required.
TEST(MoeGpuAlign, RefusesAMissingOrMisalignedScratch) {
  std::int32_t* none = nullptr;
  EXPECT_THROW(align_cuda(none, 4, 3, 4, 4, none, none, none, nullptr, nullptr), Error);
  alignas(4) unsigned char buf[8];
  EXPECT_THROW(align_cuda(none, 4, 3, 4, 4, none, none, none, buf + 1, nullptr), Error);
  EXPECT_GE(align_scratch_bytes(4096, 8, 128), std::size_t{4} * (128 + 1));
}

TEST(MoeGpuAlign, RandomMatchesAlignCpu) {
  REQUIRE_GPU();
  auto& g = test::rng();
  // E up to 4096 (the kernel's slot ranges: min(32, 16384 / E), so 4 at E = 4096) and up to 160k slots.
  for (int trial = 0; trial < 42; ++trial) {
    const int E = std::vector<int>{4, 16, 128, 300, 1024, 4096}[trial % 6];
    const int k = std::min(E, std::vector<int>{1, 2, 8}[trial % 3]);
    const std::int64_t T = std::vector<int>{1, 7, 64, 1000, 4096, 3, 20000}[trial % 7];
    const int block = std::vector<int>{8, 32, 64, 16, 128}[trial % 5];
    std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k));
    for (auto& v : ids) {
      const double u = std::uniform_real_distribution<double>(0, 1)(g);
      v = std::min(E - 1, static_cast<int>(u * u * u * E));  // skewed: empty and crowded experts
    }
    SCOPED_TRACE("E=" + std::to_string(E) + " k=" + std::to_string(k) + " T=" + std::to_string(T) + " block=" +
                 std::to_string(block));
    check_align(ids, T, k, E, block);
  }
}

// ---- The fused layer ----------------------------------------------------------------------
struct Problem {
  MoeWeights w;
  std::vector<std::uint16_t> x;
  std::vector<std::int32_t> ids;
  std::vector<float> tw;
  std::int64_t T = 0;
  int k = 0;
  DType act = DType::f16;
};

Problem make_problem(const MoeSpec& s, DType act, std::int64_t T, int k, int only_expert = -1) {
  Problem p;
  p.w = random_moe_weights(s, act);
  p.T = T;
  p.k = k;
  p.act = act;
  p.x = test::random_act(T, s.hidden, act);
  auto& g = test::rng();
  std::vector<float> logits(static_cast<std::size_t>(T * s.experts));
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : logits) v = nd(g);
  p.ids.resize(static_cast<std::size_t>(T * k));
  p.tw.resize(p.ids.size());
  route_cpu(logits.data(), T, s.experts, {k, true}, p.ids.data(), p.tw.data());
  if (only_expert >= 0)
    for (std::int64_t t = 0; t < T; ++t) p.ids[t * k] = only_expert;  // expert in every token (may repeat: still valid)
  return p;
}

// p cut to its first T tokens (T <= p.T): one weight set serves several token counts.
void keep_first_tokens(Problem& p, std::int64_t T) {
  ASSERT_LE(T, p.T);
  p.T = T;
  p.x.resize(static_cast<std::size_t>(T * p.w.spec().hidden));
  p.ids.resize(static_cast<std::size_t>(T * p.k));
  p.tw.resize(p.ids.size());
}

// Oracle: moe_reference on the host (f64 throughout; itself checked in tests/moe).
std::vector<double> reference(const Problem& p) {
  const std::int64_t H = p.w.spec().hidden;
  std::vector<std::uint16_t> out(static_cast<std::size_t>(p.T * H), test::poison_bits(p.act));
  MoeArgs a{TensorView(const_cast<std::uint16_t*>(p.x.data()), p.act, {p.T, H}),
            TensorView(const_cast<std::int32_t*>(p.ids.data()), DType::i32, {p.T, p.k}),
            TensorView(const_cast<float*>(p.tw.data()), DType::f32, {p.T, p.k}), TensorView(out.data(), p.act, {p.T, H})};
  moe_reference(p.w, a);
  return test::to_f64(out.data(), p.act, p.T, H, H);
}

// The relative error of a layer output of p (T x H, p's dtype) against the f64 reference.
double error_of(const std::vector<std::uint16_t>& out, const Problem& p, const std::vector<double>& want) {
  const std::int64_t H = p.w.spec().hidden;
  EXPECT_EQ(out.size(), static_cast<std::size_t>(p.T * H)) << "output size";
  return test::rel_error(test::to_f64(out.data(), p.act, p.T, H, H), want);
}

// x_offset: x starts that many elements into its buffer (2 = 4-byte aligned only: the kernels'
// 4-byte copy path instead of 16-byte cp.async).
std::vector<std::uint16_t> run_gpu(const CudaMoe& m, const Problem& p, int block, bool graph = false, int x_offset = 0) {
  const std::int64_t H = p.w.spec().hidden;
  std::vector<std::uint16_t> xbuf(static_cast<std::size_t>(x_offset), 0);
  xbuf.insert(xbuf.end(), p.x.begin(), p.x.end());
  Dev<std::uint16_t> dxb(xbuf), dout(static_cast<std::size_t>(p.T * H));
  std::uint16_t* const xp = dxb.p + x_offset;
  Dev<std::int32_t> di(p.ids);
  Dev<float> dw(p.tw);
  const std::size_t wsb = m.workspace_bytes(p.T, p.k);
  Dev<unsigned char> ws(wsb);
  cudaMemset(ws.p, 0xff, wsb);  // poisoned workspace (h, y: NaN): a slot never written shows
  std::vector<std::uint16_t> poison(dout.n, test::poison_bits(p.act));
  cudaMemcpy(dout.p, poison.data(), poison.size() * 2, cudaMemcpyHostToDevice);
  MoeArgs a{TensorView(xp, p.act, {p.T, H}, Device::cuda), TensorView(di.p, DType::i32, {p.T, p.k}, Device::cuda),
            TensorView(dw.p, DType::f32, {p.T, p.k}, Device::cuda), TensorView(dout.p, p.act, {p.T, H}, Device::cuda)};
  cudaStream_t st;
  cudaStreamCreate(&st);
  if (graph) {
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    m.run(a, ws.p, wsb, st, block);
    cudaStreamEndCapture(st, &gr);
    cudaGraphInstantiate(&ge, gr, 0);
    cudaGraphLaunch(ge, st);
    cudaGraphLaunch(ge, st);  // twice: the replay must not depend on state left by the first
    cudaStreamSynchronize(st);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(gr);
  } else {
    m.run(a, ws.p, wsb, st, block);
  }
  EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess);
  cudaStreamDestroy(st);
  return dout.get();
}

// A parametrized case made ready: its random problem, the f64 reference, the prepared weights.
// A parametrized test reads it as `const auto& [c, p, want, m] = r;`.
struct CaseRun {
  explicit CaseRun(const MoeCase& mc)
      : c(mc), p(make_problem(MoeSpec{c.H, c.I, c.E, c.g, c.st}, c.act, c.T, c.k)), want(reference(p)), m(CudaMoe::create(p.w, c.act)) {}
  MoeCase c;
  Problem p;
  std::vector<double> want;
  CudaMoe m;
};

class MoeGpu : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeGpu, EveryPathMatchesTheReference) {
  REQUIRE_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const CaseRun r(GetParam());
  const auto& [c, p, want, m] = r;
  for (int block : {0, 1, 8, 16, 32, 64, 128}) {
    auto out = run_gpu(m, p, block);
    const double err = error_of(out, p, want);
    EXPECT_LT(err, test::tolerance(c.act)) << "block " << block << " (0 = " << CudaMoe::explain_block(c.T, c.k, c.E) << ")";
  }
  {  // blocks 32 / 64 on the mma.sync kernel (the grouped wgmma path's A/B knob; the same kernel as without sm_90a),
     // and 16, which then runs as 32
    ScopedEnv knob("W4A16_MOE_WGMMA", std::string("0"));
    for (int block : {16, 32, 64}) {
      auto out = run_gpu(m, p, block);
      EXPECT_LT(error_of(out, p, want), test::tolerance(c.act)) << "block " << block << ", mma.sync";
    }
  }
}

// CudaMoe::adopt over the layout's arrays uploaded by the caller (layout_host's bytes in its own device buffers, 16 bytes
// past a 256-byte boundary): every path bit-equal to the CudaMoe that uploaded its own copy, in both scalar types and
// dtypes, at T = 1, 7, 64; then read in place (the caller zeroes w2's scales: the layer's output is 0).
TEST(MoeGpuAdopt, AdoptedArraysRunBitEqualToCreate) {
  REQUIRE_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  for (ScalarType st : {ScalarType::uint4, ScalarType::uint4b8})
    for (DType act : {DType::f16, DType::bf16}) {
      const MoeSpec s{256, 128, 6, 64, st};
      SCOPED_TRACE(s.describe() + (act == DType::bf16 ? " bf16" : " f16"));
      for (std::int64_t T : {1, 7, 64}) {
        const Problem p = make_problem(s, act, T, 2);
        const CudaMoe own = CudaMoe::create(p.w, act);
        const std::vector<LayoutArray> arrays = CudaMoe::layout_host(p.w, act);
        std::vector<std::unique_ptr<Dev<unsigned char>>> held;
        std::vector<LayoutView> views;
        for (const LayoutArray& a : arrays) {
          held.push_back(std::make_unique<Dev<unsigned char>>(a.bytes.size() + 16));
          unsigned char* d = held.back()->p + 16;
          CU(cudaMemcpy(d, a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice));
          views.push_back({a.name, TensorView(d, a.dtype, a.shape, Device::cuda, 0)});
        }
        int dev = 0;
        CU(cudaGetDevice(&dev));
        for (LayoutView& v : views) v.view.device_index = dev;
        const CudaMoe adopted = CudaMoe::adopt(s, act, views);
        EXPECT_EQ(adopted.device_bytes(), [&] { std::size_t b = 0; for (const auto& a : arrays) b += a.bytes.size(); return b; }());
        for (int block : {0, 1, 8, 16, 32, 64, 128})
          EXPECT_EQ(run_gpu(own, p, block), run_gpu(adopted, p, block)) << "T=" << T << " block " << block;
        if (T == 7) {
          const std::vector<LayoutSpec> specs = CudaMoe::layout_specs(s, act);
          for (std::size_t i = 0; i < specs.size(); ++i) {
            if (specs[i].name == "w2_scales") {
              CU(cudaMemset(views[i].view.data, 0, arrays[i].bytes.size()));
            }
          }
          for (std::uint16_t v : run_gpu(adopted, p, 0)) {
            ASSERT_EQ(v & 0x7fff, 0) << "w2 scales zeroed in place";
          }
        }
      }
    }
}

// The grouped wgmma path with each GEMM on every tile it may take (W4A16_MOE_GROUPED_CONFIGS): bm16_bn128 (35) at
// block 16; bm32 at 2 and 3 CTAs per SM (37, 38) at 32; bm64 2-CTA (23) at block 64; bm128_bn256 (22, where
// I % 128 == 0) and the 2-CTA bm128_bn128 (32) at block 128.
TEST(MoeGpuGrouped, EveryTileMatchesTheReference) {
  REQUIRE_GPU();
  for (const MoeCase& c : {MoeCase{300, 8, 16, 256, 128, 128, ScalarType::uint4, DType::f16},
                           MoeCase{513, 2, 8, 192, 256, 32, ScalarType::uint4b8, DType::bf16},
                           MoeCase{200, 8, 32, 256, 384, kChannelwise, ScalarType::uint4b8, DType::f16}}) {
    SCOPED_TRACE(moe_case_name(::testing::TestParamInfo<MoeCase>(c, 0)));
    const CaseRun r(c);
    struct Tiles {
      const char* configs;
      int block;
      bool gemm1_bn256;  // GEMM 1 on bm128_bn256: its 128 gate rows need I % 128 == 0
    };
    for (const Tiles t : {Tiles{"35,35", 16, false}, Tiles{"37,38", 32, false}, Tiles{"38,37", 32, false}, Tiles{"23,23", 64, false},
                          Tiles{"32,32", 128, false}, Tiles{"22,32", 128, true}, Tiles{"22,22", 128, true},
                          Tiles{"32,22", 128, false}}) {
      if (t.gemm1_bn256 && c.I % 128 != 0) continue;
      ScopedEnv knob("W4A16_MOE_GROUPED_CONFIGS", std::string(t.configs));
      auto out = run_gpu(r.m, r.p, t.block);
      EXPECT_LT(error_of(out, r.p, r.want), test::tolerance(c.act))
          << "configs " << t.configs << " block " << t.block;
    }
  }
}

// Shapes both parametrized suites run: T 1..300, top-k 1/2/8, E 4..32, every group kind, both
// scalar types and dtypes; H % 128 == 64 (the last GEMM 2 row block / CTA has idle warps) and K = 5
// k64 tiles (partial steps) in the last two.
const std::vector<MoeCase> kSharedCases = {
    MoeCase{1, 8, 16, 256, 128, 128, ScalarType::uint4b8, DType::f16},  MoeCase{1, 1, 4, 128, 64, 32, ScalarType::uint4, DType::bf16},
    MoeCase{2, 2, 8, 256, 128, 64, ScalarType::uint4, DType::f16},      MoeCase{7, 8, 16, 128, 64, 32, ScalarType::uint4b8, DType::bf16},
    MoeCase{7, 2, 8, 512, 256, 256, ScalarType::uint4, DType::bf16},    MoeCase{64, 8, 16, 256, 128, kChannelwise, ScalarType::uint4b8, DType::f16},
    MoeCase{64, 1, 8, 128, 192, 64, ScalarType::uint4, DType::f16},     MoeCase{300, 2, 8, 320, 64, 64, ScalarType::uint4, DType::f16},
    MoeCase{40, 8, 8, 320, 320, 32, ScalarType::uint4b8, DType::bf16}};
std::vector<MoeCase> shared_cases_and(std::initializer_list<MoeCase> more) {
  std::vector<MoeCase> v = kSharedCases;
  v.insert(v.end(), more);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeGpu,
                         ::testing::ValuesIn(shared_cases_and({MoeCase{1000, 8, 16, 128, 128, 128, ScalarType::uint4, DType::bf16},
                                                               MoeCase{1000, 2, 32, 256, 128, 32, ScalarType::uint4b8, DType::f16}})),
                         moe_case_name);

TEST(MoeGpuEdge, Qwen3Shapes) {
  REQUIRE_GPU();
  MoeSpec s{2048, 768, 128, 128, ScalarType::uint4b8};
  for (DType act : {DType::bf16, DType::f16}) {
    Problem p = make_problem(s, act, 3, 8);
    const std::vector<double> want = reference(p);
    CudaMoe m = CudaMoe::create(p.w, act);
    for (int block : {1, 8, 16, 32, 64, 128}) {
      auto out = run_gpu(m, p, block);
      EXPECT_LT(error_of(out, p, want), test::tolerance(act)) << block;
    }
  }
}

TEST(MoeGpuEdge, AllTokensOnOneExpertAndEmptyExperts) {
  REQUIRE_GPU();
  MoeSpec s{128, 64, 32, 64, ScalarType::uint4};
  for (DType act : {DType::f16, DType::bf16}) {
    Problem p = make_problem(s, act, 200, 1, /*only_expert=*/5);  // k = 1: all 200 tokens on expert 5, 31 empty
    const std::vector<double> want = reference(p);
    CudaMoe m = CudaMoe::create(p.w, act);
    for (const char* ring : {"1", "0"}) {  // the ring kernel (default) and moe_decode_kernel on the decode paths
      ScopedEnv knob("W4A16_MOE_RING", std::string(ring));
      for (int block : {0, 1, 8, 16, 32, 64, 128}) {
        auto out = run_gpu(m, p, block);
        EXPECT_LT(error_of(out, p, want), test::tolerance(act))
            << "block " << block << " W4A16_MOE_RING=" << ring;
      }
    }
  }
}

TEST(MoeGpuEdge, ActivationsAlignedToFourBytesOnly) {
  REQUIRE_GPU();
  MoeSpec s{256, 128, 16, 64, ScalarType::uint4};
  Problem p = make_problem(s, DType::f16, 70, 8);
  const std::vector<double> want = reference(p);
  CudaMoe m = CudaMoe::create(p.w, DType::f16);
  for (int block : {1, 8, 16, 32, 64, 128}) {
    auto out = run_gpu(m, p, block, false, /*x_offset=*/2);
    EXPECT_LT(error_of(out, p, want), test::tolerance(DType::f16))
        << block;
  }
}

TEST(MoeGpuEdge, GraphReplayAndDeterminism) {
  REQUIRE_GPU();
  MoeSpec s{256, 128, 16, 128, ScalarType::uint4b8};
  Problem p = make_problem(s, DType::bf16, 300, 8);
  CudaMoe m = CudaMoe::create(p.w, DType::bf16);
  for (int block : {1, 8, 64, 128}) {
    auto a = run_gpu(m, p, block), b = run_gpu(m, p, block), c = run_gpu(m, p, block, /*graph=*/true);
    EXPECT_EQ(a, b) << "block " << block << ": two runs differ";
    EXPECT_EQ(a, c) << "block " << block << ": graph replay differs";
  }
}

// ---- The persistent ring kernel of the decode paths, block 8 and direct (W4A16_MOE_RING, moe_ring.cuh) ----
// Sets the knobs for its scope (the launcher reads them per call): W4A16_MOE_RING, and W4A16_MOE_RING_DEEP where given
// (unset otherwise); what they were comes back after.
struct RingKnob {
  explicit RingKnob(const char* v, const char* deep = nullptr)
      : ring("W4A16_MOE_RING", std::string(v)), depth("W4A16_MOE_RING_DEEP", deep ? std::optional<std::string>(deep) : std::nullopt) {}
  ScopedEnv ring, depth;
};

class MoeGpuRing : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeGpuRing, Block8AndDirectMatchTheReference) {
  REQUIRE_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const CaseRun r(GetParam());
  const auto& [c, p, want, m] = r;
  for (int block : {8, 1}) {  // aligned blocks of 8; direct (one slot per item, no alignment)
    SCOPED_TRACE("block " + std::to_string(block));
    std::vector<std::uint16_t> ring, ring2, ring_graph, ring_rr, ring_deep, ring_shallow, old;
    {
      RingKnob on("1");
      ring = run_gpu(m, p, block);
      ring2 = run_gpu(m, p, block);
      ring_graph = run_gpu(m, p, block, /*graph=*/true);
    }
    {
      RingKnob rr("2");  // every resident block, round robin: other blocks, the same sums
      ring_rr = run_gpu(m, p, block);
    }
    {
      RingKnob deep("1", "1");  // one block per SM, deeper ring: other depth, the same sums
      ring_deep = run_gpu(m, p, block);
    }
    {
      RingKnob shallow("1", "0");
      ring_shallow = run_gpu(m, p, block);
    }
    {
      RingKnob off("0");  // moe_decode_kernel, the path before the ring
      old = run_gpu(m, p, block);
    }
    const double err = error_of(ring, p, want);
    const double err_old = error_of(old, p, want);
    EXPECT_LT(err, test::tolerance(c.act)) << "ring kernel (old kernel: " << err_old << ")";
    EXPECT_LT(err_old, test::tolerance(c.act)) << "moe_decode_kernel (W4A16_MOE_RING=0)";
    EXPECT_EQ(ring, ring2) << "ring kernel: two runs differ";
    EXPECT_EQ(ring, ring_graph) << "ring kernel: graph replay differs";
    EXPECT_EQ(ring, ring_rr) << "ring kernel: balanced and round-robin grids differ (each output is one warp's sum)";
    EXPECT_EQ(ring_deep, ring_shallow) << "ring kernel: deep and shallow rings differ";
    EXPECT_EQ(ring, ring_shallow) << "ring kernel: default and shallow rings differ";
    if (block == 1) {  // GEMM 2 folded with the weighted sum (4 <= k <= 8) against GEMM 2 per slot + the reduce launch
      std::vector<std::uint16_t> unfolded, unfolded_rr, default_run;
      {
        ScopedEnv fold("W4A16_MOE_RING_FOLD", std::string("0"));
        unfolded = run_gpu(m, p, block);
        RingKnob rr("2");
        unfolded_rr = run_gpu(m, p, block);
      }
      default_run = run_gpu(m, p, block, /*graph=*/true);  // every knob unset: round robin, folded where it applies
      EXPECT_EQ(ring, unfolded) << "direct path: folded and unfolded GEMM 2 differ (k = " << c.k << ")";
      EXPECT_EQ(ring, unfolded_rr) << "direct path: unfolded round-robin run differs";
      EXPECT_EQ(ring, default_run) << "direct path: the default (graph) differs";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeGpuRing,
                         ::testing::ValuesIn(shared_cases_and({MoeCase{16, 8, 32, 256, 192, 64, ScalarType::uint4, DType::f16},
                                                               MoeCase{5, 4, 16, 256, 128, 64, ScalarType::uint4, DType::bf16},
                                                               MoeCase{3, 6, 16, 128, 192, 32, ScalarType::uint4b8, DType::f16},
                                                               MoeCase{16, 1, 8, 512, 128, 64, ScalarType::uint4b8, DType::bf16},
                                                               MoeCase{64, 2, 32, 256, 128, 32, ScalarType::uint4b8, DType::bf16},
                                                               // odd tile counts (K = 320, 192) on the tile-pair kernels
                                                               MoeCase{7, 8, 16, 320, 192, kChannelwise, ScalarType::uint4, DType::bf16},
                                                               MoeCase{7, 8, 16, 320, 192, kChannelwise, ScalarType::uint4b8, DType::f16}})),
                         moe_case_name);

TEST(MoeGpuRingEdge, Qwen3Shapes) {
  REQUIRE_GPU();
  MoeSpec s{2048, 768, 128, 128, ScalarType::uint4b8};
  for (DType act : {DType::bf16, DType::f16}) {
    Problem p = make_problem(s, act, 16, 8);  // one weight set; T = 4 and 1 are its first tokens
    CudaMoe m = CudaMoe::create(p.w, act);
    for (std::int64_t T : {16, 4, 1}) {
      keep_first_tokens(p, T);
      const std::vector<double> want = reference(p);
      RingKnob on("1");
      for (int block : {8, 1}) {
        auto out = run_gpu(m, p, block);
        EXPECT_LT(error_of(out, p, want), test::tolerance(act))
            << "T=" << T << (act == DType::bf16 ? " bf16" : " f16") << " block " << block;
      }
    }
  }
}

// A bad value of a per-call knob is refused by run() (w4a16::Error naming it), nothing launched.
void expect_knob_rejected(const char* var, const char* value, int block = 8) {
  MoeSpec s{128, 64, 8, 64, ScalarType::uint4b8};
  Problem p = make_problem(s, DType::f16, 4, 2);
  CudaMoe m = CudaMoe::create(p.w, DType::f16);
  ScopedEnv knob(var, std::string(value));
  const std::size_t wsb = m.workspace_bytes(p.T, p.k);
  Dev<unsigned char> ws(wsb);
  Dev<std::uint16_t> dx(p.x), dout(static_cast<std::size_t>(p.T * 128));
  Dev<std::int32_t> di(p.ids);
  Dev<float> dw(p.tw);
  MoeArgs a{TensorView(dx.p, DType::f16, {p.T, 128}, Device::cuda), TensorView(di.p, DType::i32, {p.T, p.k}, Device::cuda),
            TensorView(dw.p, DType::f32, {p.T, p.k}, Device::cuda), TensorView(dout.p, DType::f16, {p.T, 128}, Device::cuda)};
  try {
    m.run(a, ws.p, wsb, nullptr, block);
    ADD_FAILURE() << var << "=" << value << " accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(var), std::string::npos) << err.what();
  }
  CU(cudaDeviceSynchronize());
}

TEST(MoeGpuRingEdge, BadKnobIsRejected) {
  REQUIRE_GPU();
  expect_knob_rejected("W4A16_MOE_RING", "yes");
  expect_knob_rejected("W4A16_MOE_RING_FOLD", "on", 1);
}

// The grouped path's knobs (blocks 16..128, sm_90a), read before anything is launched.
TEST(MoeGpuGrouped, BadKnobIsRejected) {
  REQUIRE_GPU();
  if (!w4a16::kernels::cuda::moe::grouped_supported()) GTEST_SKIP() << "no grouped wgmma path here (capability 90 + sm_90a build)";
  expect_knob_rejected("W4A16_MOE_WGMMA", "yes", 64);
  expect_knob_rejected("W4A16_MOE_GROUPED_CONFIGS", "12,12", 128);
  expect_knob_rejected("W4A16_MOE_GROUPED_CONFIGS", "23,23", 16);  // a 64-token tile at block 16
}

// ---- Fused alignment (W4A16_MOE_FUSED_ALIGN=1 or unset: the ring kernels align in shared memory; =0 the launch) ----
struct FusedKnob : ScopedEnv {
  explicit FusedKnob(const char* v) : ScopedEnv("W4A16_MOE_FUSED_ALIGN", std::string(v)) {}
};

// Host arithmetic of the bound (no GPU): layout bytes and where the fused path applies. Ring bytes
// of the shallow GEMM 1 variants: 88320 (uint4b8, one entry per tile) .. 100608 (uint4, per half
// tile); cap 113 KB = 115712 (2 blocks per SM).
TEST(RingAlignBound, LayoutAndFit) {
  namespace kc = w4a16::kernels::cuda::moe;
  constexpr kc::RingAlignLayout q16 = kc::ring_align_layout(128, 128);  // Qwen3 T = 16, k = 8
  static_assert(q16.cap == 128 + 7 * 128 && q16.nb == 128);
  EXPECT_EQ(q16.off, 4096);
  EXPECT_EQ(q16.misc, 4096 + 512);
  EXPECT_EQ(q16.bexp, 4096 + 512 + 64);
  EXPECT_EQ(q16.sorted, 4672 + 4 * 128);
  EXPECT_EQ(q16.bytes, 5184 + 2 * 1024);
  const kc::RingAlignLayout few = kc::ring_align_layout(3, 128);  // fewer slots than experts: cap S + 7 S
  EXPECT_EQ(few.cap, 24);
  EXPECT_EQ(few.nb, 3);
  EXPECT_EQ(few.bytes % 16, 0);
  for (int slots : {1, 7, 128, 300, 512, 2400}) {
    for (int E : {1, 8, 32, 128, 1000}) {  // the padded total of any routing fits cap: S + 7 min(E, S)
      const kc::RingAlignLayout l = kc::ring_align_layout(slots, E);
      EXPECT_GE(l.cap, slots + 7 * std::min(E, slots)) << slots << " " << E;
      EXPECT_EQ(l.cap % 8 == 0 ? l.cap / 8 : l.cap / 8 + 1, l.nb);
      EXPECT_GE(l.bytes, 36 * E + 64 + 4 * l.nb + 2 * l.cap);
    }
  }
  const int cap = 113 * 1024;
  EXPECT_TRUE(kc::ring_align_fits(16, 8, 128, 100608, cap));
  EXPECT_TRUE(kc::ring_align_fits(64, 8, 128, 100608, cap));
  EXPECT_TRUE(kc::ring_align_fits(256, 8, 128, 100608, cap));
  EXPECT_FALSE(kc::ring_align_fits(1024, 8, 128, 100608, cap));  // 27.4 KB beside 98.3 KB: over 113 KB
  EXPECT_TRUE(kc::ring_align_fits(1024, 8, 128, 0, cap));
  EXPECT_FALSE(kc::ring_align_fits(1025, 1, 8, 0, cap));        // prefill sizes: the alignment launch
  EXPECT_FALSE(kc::ring_align_fits(1024, 64, 128, 0, 1 << 30)); // S = 65536: not a uint16 slot
  EXPECT_FALSE(kc::ring_align_fits(1, 8, 4096, 88320, cap));    // E = 4096: 147 KB of counts
  EXPECT_FALSE(kc::ring_align_fits(0, 8, 128, 0, cap));
}

// The fused alignment against the alignment launch: bit for bit (the same positions, the same
// warps' sums), and against the reference; twice, graph replay, deep ring, round robin.
TEST_P(MoeGpuRing, FusedAlignIsBitEqualToTheAlignmentLaunch) {
  REQUIRE_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const CaseRun r(GetParam());
  const auto& [c, p, want, m] = r;
  std::vector<std::uint16_t> unfused, fused, fused2, fused_graph, fused_deep, fused_rr;
  {
    RingKnob on("1");
    {
      FusedKnob off("0");  // the alignment launch
      unfused = run_gpu(m, p, 8);
    }
    FusedKnob f("1");
    fused = run_gpu(m, p, 8);
    fused2 = run_gpu(m, p, 8);
    fused_graph = run_gpu(m, p, 8, /*graph=*/true);
  }
  {
    RingKnob deep("1", "1");
    FusedKnob f("1");
    fused_deep = run_gpu(m, p, 8);
  }
  {
    RingKnob rr("2");
    FusedKnob f("1");
    fused_rr = run_gpu(m, p, 8);
  }
  const double err = error_of(fused, p, want);
  EXPECT_LT(err, test::tolerance(c.act)) << "fused alignment vs the reference";
  EXPECT_EQ(fused, unfused) << "fused alignment differs from the alignment launch";
  EXPECT_EQ(fused, fused2) << "fused alignment: two runs differ";
  EXPECT_EQ(fused, fused_graph) << "fused alignment: graph replay differs";
  EXPECT_EQ(fused, fused_deep) << "fused alignment: deep ring differs";
  EXPECT_EQ(fused, fused_rr) << "fused alignment: round-robin grid differs";
}

TEST(MoeGpuFusedAlign, Qwen3Shapes) {
  REQUIRE_GPU();
  MoeSpec s{2048, 768, 128, 128, ScalarType::uint4b8};
  for (DType act : {DType::f16}) {  // bf16: the small shapes (one Qwen3 weight set keeps the test short)
    Problem p = make_problem(s, act, 64, 8);  // one weight set; T = 16 and 1 are its first tokens
    CudaMoe m = CudaMoe::create(p.w, act);
    for (std::int64_t T : {64, 16, 1}) {
      keep_first_tokens(p, T);
      const std::vector<double> want = reference(p);
      RingKnob on("1");
      std::vector<std::uint16_t> unfused;
      {
        FusedKnob off("0");  // the alignment launch
        unfused = run_gpu(m, p, 8);
      }
      FusedKnob f("1");
      const auto fused = run_gpu(m, p, 8), fused_graph = run_gpu(m, p, 8, /*graph=*/true);
      const std::string what = "T=" + std::to_string(T) + (act == DType::bf16 ? " bf16" : " f16");
      EXPECT_LT(error_of(fused, p, want), test::tolerance(act)) << what;
      EXPECT_EQ(fused, unfused) << what << ": fused alignment differs from the alignment launch";
      EXPECT_EQ(fused, fused_graph) << what << ": graph replay differs";
    }
  }
}

TEST(MoeGpuFusedAlign, AllTokensOnOneExpertAndFallbacks) {
  REQUIRE_GPU();
  MoeSpec s{128, 64, 32, 64, ScalarType::uint4};
  // k = 1, all tokens on expert 5 (31 empty); T = 1100 > 1024: the alignment launch, same results.
  for (std::int64_t T : {200, 1100}) {
    for (DType act : {DType::f16, DType::bf16}) {
      Problem p = make_problem(s, act, T, 1, /*only_expert=*/5);
      const std::vector<double> want = reference(p);
      CudaMoe m = CudaMoe::create(p.w, act);
      RingKnob on("1");
      std::vector<std::uint16_t> unfused;
      {
        FusedKnob off("0");  // the alignment launch
        unfused = run_gpu(m, p, 8);
      }
      FusedKnob f("1");
      const auto fused = run_gpu(m, p, 8);
      EXPECT_LT(error_of(fused, p, want), test::tolerance(act)) << T;
      EXPECT_EQ(fused, unfused) << "T=" << T;
    }
  }
  // x only 4-byte aligned: no ring, so no fused alignment (moe_decode_kernel after the launch).
  Problem p = make_problem(MoeSpec{256, 128, 16, 64, ScalarType::uint4}, DType::f16, 70, 8);
  const std::vector<double> want = reference(p);
  CudaMoe m = CudaMoe::create(p.w, DType::f16);
  RingKnob on("1");
  FusedKnob f("1");
  auto out = run_gpu(m, p, 8, false, /*x_offset=*/2);
  EXPECT_LT(error_of(out, p, want), test::tolerance(DType::f16));
}

TEST(MoeGpuFusedAlign, BadKnobIsRejected) {
  REQUIRE_GPU();
  expect_knob_rejected("W4A16_MOE_FUSED_ALIGN", "on");
}

TEST(MoeGpuEdge, Rejections) {
  REQUIRE_GPU();
  MoeSpec bad{96, 64, 4, 32, ScalarType::uint4b8};  // H % 64 != 0
  MoeWeights wb(bad, DType::f16);
  EXPECT_THROW(CudaMoe::create(wb, DType::f16), Error);
  MoeSpec s{128, 64, 4, 64, ScalarType::uint4b8};
  Problem p = make_problem(s, DType::f16, 4, 2);
  EXPECT_THROW(CudaMoe::create(p.w, DType::f32), Error);
  CudaMoe m = CudaMoe::create(p.w, DType::f16);
  Dev<std::uint16_t> dx(p.x), dout(4 * 128);
  Dev<std::int32_t> di(p.ids);
  Dev<float> dw(p.tw);
  Dev<unsigned char> ws(m.workspace_bytes(4, 2));
  MoeArgs a{TensorView(dx.p, DType::f16, {4, 128}, Device::cuda), TensorView(di.p, DType::i32, {4, 2}, Device::cuda),
            TensorView(dw.p, DType::f32, {4, 2}, Device::cuda), TensorView(dout.p, DType::f16, {4, 128}, Device::cuda)};
  EXPECT_NO_THROW(m.run(a, ws.p, ws.n, nullptr));
  EXPECT_THROW(m.run(a, ws.p, 16, nullptr), Error);  // workspace too small
  EXPECT_THROW(m.run(a, ws.p, ws.n, nullptr, 24), Error);  // block 24 not instantiated
  MoeArgs b = a;
  b.x.dtype = DType::bf16;
  EXPECT_THROW(m.run(b, ws.p, ws.n, nullptr), Error);
  b = a;
  b.x.device = Device::cpu;
  EXPECT_THROW(m.run(b, ws.p, ws.n, nullptr), Error);
  b = a;
  b.out = TensorView(dout.p, DType::f16, {4, 64}, Device::cuda);
  EXPECT_THROW(m.run(b, ws.p, ws.n, nullptr), Error);
  std::vector<float> l(4 * 2000);
  EXPECT_THROW(route_cuda(dw.p, 4, 2000, {8, true}, di.p, dw.p, nullptr), Error);  // E > 1024
  EXPECT_THROW(route_cuda(dw.p, 4, 64, {40, true}, di.p, dw.p, nullptr), Error);  // k > 32
  CU(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace w4a16::moe
