// GPU tests of the tensor-core prefill kernel and the dense cache (issue 5) against the f64
// host reference (test::dequant_f64 + test::gemm_f64; sampled rows for large M), on the
// layout made by tc_prepare. Every test skips with the reason where no usable GPU exists.
// Run: build-prefill/b/gpu_prefill/prefill_gpu_test (or ctest -R prefill in the main build).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common.cuh"
#include "prefill/prefill.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {
namespace {

std::string gpu_skip_reason() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return "no CUDA device";
  }
  const int cap = device_capability();
  if (!prefill_supported(cap)) return "prefill kernel not built for capability " + std::to_string(cap);
  return {};
}
#define SKIP_WITHOUT_GPU()                             \
  do {                                                 \
    const std::string r = gpu_skip_reason();           \
    if (!r.empty()) GTEST_SKIP() << r;                 \
  } while (0)

struct DevBuf {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit DevBuf(std::size_t b) : bytes(b) { W4A16_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(b, 256))); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

struct Case {
  DType act = DType::f16;
  DType scale = DType::f16;  // checkpoint scale dtype (tc_prepare converts to act)
  ScalarType scalar = ScalarType::uint4b8;
  int g = 128;
  bool bias = false, act_order = false;
  std::int64_t n = 200, k = 768;
  std::string str() const {
    return std::string(dtype_name(act)) + "/" + std::string(dtype_name(scale)) + " " + std::string(scalar_type_name(scalar)) +
           " g=" + std::to_string(g) + (bias ? " bias" : "") + (act_order ? " act_order" : "") + " N=" + std::to_string(n) +
           " K=" + std::to_string(k);
  }
};

struct Layer {
  QuantizedLinear q;
  std::unique_ptr<TcWeights> w;
  std::vector<double> wd, b;  // f64 dequantized [N, K] original order, bias
};

Layer make_layer(const Case& c) {
  QuantSpec spec;
  spec.n = c.n;
  spec.k = c.k;
  spec.group_size = c.g;
  spec.scalar = c.scalar;
  Layer l;
  l.q = test::random_linear(spec, c.scale, c.bias, c.act_order);
  l.w = tc_prepare(l.q.view(), c.act, nullptr);
  l.wd = test::dequant_f64(l.q);
  l.b = test::bias_f64(l.q);
  return l;
}

struct RunOpts {
  std::optional<PrefillPlan> plan;  // forced plan, else the default prefill_run
  std::optional<PrefillTokenSplit> split;  // forced token split (prefill_run_token_split), else as above
  std::optional<PrefillRowSplit> row_split;  // forced row split (prefill_run_row_split), else as above
  std::int64_t x_pad = 0, y_pad = 0;  // extra elements per row (strided rows)
  std::int64_t x_nan_rows = 0;        // NaN rows after x's last row in the same allocation (must never be read)
  bool reference = true;  // false: guards and poison checked, no f64 reference (returns 0; bitwise twins)
};

// Runs one call, checks guards / padding / every written element, returns the relative error
// on the sampled rows; `out` receives y (M x y_stride) for determinism checks.
double run_check(const Case& c, Layer& l, std::int64_t m, const RunOpts& o, std::vector<std::uint16_t>* out = nullptr) {
  const std::int64_t xs = c.k + o.x_pad, ys = c.n + o.y_pad;
  const std::vector<std::uint16_t> x = test::random_act(m, c.k, c.act, xs);
  std::vector<std::uint16_t> x_dev = x;  // + x_nan_rows rows of NaN (the caller's memory past x)
  x_dev.resize(x.size() + static_cast<std::size_t>(o.x_nan_rows * xs), test::poison_bits(c.act));
  const std::int64_t guard = 512;  // poisoned elements after y's last row
  const std::size_t y_elems = static_cast<std::size_t>(m * ys + guard);
  const std::uint16_t poison = test::poison_bits(c.act);
  std::vector<std::uint16_t> y(y_elems, poison);
  DevBuf dx(x_dev.size() * 2), dy(y_elems * 2);
  W4A16_CUDA_TRY(cudaMemcpy(dx.p, x_dev.data(), x_dev.size() * 2, cudaMemcpyHostToDevice));
  W4A16_CUDA_TRY(cudaMemcpy(dy.p, y.data(), y_elems * 2, cudaMemcpyHostToDevice));
  const std::size_t ws_bytes = o.plan        ? prefill_plan_workspace_bytes(*l.w, *o.plan, m)
                                : o.row_split ? std::max(prefill_plan_workspace_bytes(*l.w, o.row_split->head_plan, m),
                                                         prefill_plan_workspace_bytes(*l.w, o.row_split->tail_plan, m))
                                              : prefill_workspace_bytes(c.n, c.k, c.g, c.act_order, m);
  DevBuf ws(ws_bytes);
  if (o.row_split)
    prefill_run_row_split(*l.w, *o.row_split, dx.p, m, xs, dy.p, ys, ws.p, ws.bytes, nullptr);
  else if (o.split)
    prefill_run_token_split(*l.w, *o.split, dx.p, m, xs, dy.p, ys, ws.p, ws.bytes, nullptr);
  else if (o.plan)
    prefill_run_plan(*l.w, *o.plan, dx.p, m, xs, dy.p, ys, ws.p, ws.bytes, nullptr);
  else
    prefill_run(*l.w, dx.p, m, xs, dy.p, ys, ws.p, ws.bytes, nullptr);
  W4A16_CUDA_TRY(cudaDeviceSynchronize());
  W4A16_CUDA_TRY(cudaMemcpy(y.data(), dy.p, y_elems * 2, cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < guard; ++i)
    if (y[static_cast<std::size_t>(m * ys + i)] != poison) {
      ADD_FAILURE() << c.str() << " M=" << m << ": guard element " << i << " after y overwritten";
      break;
    }
  std::int64_t unwritten = 0, pad_touched = 0;
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t j = 0; j < c.n; ++j) unwritten += y[static_cast<std::size_t>(r * ys + j)] == poison;
    for (std::int64_t j = c.n; j < ys; ++j) pad_touched += y[static_cast<std::size_t>(r * ys + j)] != poison;
  }
  EXPECT_EQ(unwritten, 0) << c.str() << " M=" << m << ": outputs left poisoned";
  EXPECT_EQ(pad_touched, 0) << c.str() << " M=" << m << ": row padding past N written";
  if (out) *out = y;
  if (!o.reference) return 0;

  const std::vector<std::int64_t> rows = test::sample_rows(m);  // all rows up to 128, else 48 (testutil.hpp)
  const std::int64_t rm = static_cast<std::int64_t>(rows.size());
  std::vector<double> xr(static_cast<std::size_t>(rm * c.k)), yr(static_cast<std::size_t>(rm * c.n));
  for (std::int64_t i = 0; i < rm; ++i) {
    const std::int64_t r = rows[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < c.k; ++j)
      xr[static_cast<std::size_t>(i * c.k + j)] = f16x_to_float(c.act, x[static_cast<std::size_t>(r * xs + j)]);
    for (std::int64_t j = 0; j < c.n; ++j)
      yr[static_cast<std::size_t>(i * c.n + j)] = f16x_to_float(c.act, y[static_cast<std::size_t>(r * ys + j)]);
  }
  const std::vector<double> ref = test::gemm_f64(xr, l.wd, l.b, rm, c.n, c.k);
  return test::rel_error(yr, ref);
}

// W4A16_PREFILL_SKIP_XLOAD=tma,tma_eb (x-load names, prefill_x_load_name): configs to leave out,
// so that a device run whose TMA test hung can still check the others (.carry-prefill/run.sh).
bool skipped_x_load(PrefillXLoad x) {
  const char* env = std::getenv("W4A16_PREFILL_SKIP_XLOAD");
  if (env == nullptr) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + prefill_x_load_name(x) + ",") != std::string::npos;
}

// Configs this device runs, less the measurement-only diagnostics (racy by design) and the
// x paths named in W4A16_PREFILL_SKIP_XLOAD.
std::vector<int> device_configs() {
  std::vector<int> v;
  const int cap = device_capability();
  const PrefillPlan def = prefill_plan(1024, 1024, 1024, cap, 132);
  const PrefillPath path = prefill_config(def.config).path;
  for (int i = 0; i < prefill_config_count(); ++i)
    if ((prefill_config(i).path == path || prefill_config(i).path == PrefillPath::mma) && !prefill_config(i).diagnostic() &&
        !skipped_x_load(prefill_config(i).x_load))
      v.push_back(i);
  return v;
}

bool is_tma(const PrefillConfig& c) { return c.x_load == PrefillXLoad::tma || c.x_load == PrefillXLoad::tma_eb; }
// The cp.async config of the same tile, stages, schedule and register cap as config `c`, or -1.
int cp_async_twin(int c) {
  const PrefillConfig& t = prefill_config(c);
  for (int i = 0; i < prefill_config_count(); ++i) {
    const PrefillConfig& o = prefill_config(i);
    if (o.x_load == PrefillXLoad::cp_async && o.path == t.path && o.bm == t.bm && o.wg == t.wg && o.mb == t.mb && o.stages == t.stages &&
        o.overlap == t.overlap && o.min_blocks == t.min_blocks)
      return i;
  }
  return -1;
}

// Every accepted configuration (dtype x scalar x group x bias x act-order) through the default plan.
TEST(PrefillGpu, EveryConfigurationMatchesReference) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  int checked = 0;
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (int g : {32, 64, 128, 256, kChannelwise})
        for (int flags = 0; flags < 4; ++flags) {
          Case c;
          c.act = act;
          c.scale = act;
          c.scalar = st;
          c.g = g;
          c.bias = flags & 1;
          c.act_order = flags & 2;
          // Odd factors: N = 8 * 25, K = g * 3 (or 8 * 45 channelwise: not a multiple of 64).
          c.n = 200;
          c.k = g == kChannelwise ? 360 : 3 * g;
          Layer l = make_layer(c);
          for (std::int64_t m : {17, 100}) {
            const double e = run_check(c, l, m, {});
            EXPECT_LE(e, test::tolerance(act)) << c.str() << " M=" << m;
            ++checked;
          }
        }
  EXPECT_EQ(checked, 2 * 2 * 5 * 4 * 2);
}

// fp16 checkpoint scales with bf16 activations (tc_prepare rounds them once to bf16).
TEST(PrefillGpu, Fp16ScalesWithBf16Activations) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.act = DType::bf16;
  c.scale = DType::f16;
  c.scalar = ScalarType::uint4;
  c.n = 136;
  c.k = 1152;
  Layer l = make_layer(c);
  EXPECT_LE(run_check(c, l, 33, {}), test::tolerance(c.act)) << c.str();
}

// Every compiled tile config this device runs, forced, at every M of the brief, with splits.
TEST(PrefillGpu, EveryKernelConfigAndSplit) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  for (DType act : {DType::f16, DType::bf16}) {
    Case c;
    c.act = act;
    c.scale = act;
    c.scalar = act == DType::f16 ? ScalarType::uint4 : ScalarType::uint4b8;
    c.g = 64;
    c.bias = true;
    c.n = 392;   // 8 * 49: N_pad 448, last CTA row block partial
    c.k = 1344;  // 64 * 21: 21 k tiles, splits of 2 and 3 uneven
    Layer l = make_layer(c);
    for (int cfg : device_configs())
      for (std::int64_t m : {17, 33, 100, 1000, 4097})
        for (int split : {1, 2, 3}) {
          if (split > 1 && m > 100) continue;  // the heuristic never splits there; keeps the test short
          PrefillPlan p;
          p.config = cfg;
          p.split = split;
          RunOpts o;
          o.plan = p;
          const double e = run_check(c, l, m, o);
          EXPECT_LE(e, test::tolerance(act)) << c.str() << " " << prefill_config(cfg).name() << " split=" << split << " M=" << m;
        }
  }
}

// The configs with x by TMA that this device runs.
std::vector<int> tma_device_configs() {
  std::vector<int> tma;
  for (int cfg : device_configs())
    if (is_tma(prefill_config(cfg))) tma.push_back(cfg);
  return tma;
}

// The TMA configs where a wrong box, expect-tx count or swizzle would show: K not a multiple of
// 64 (the last box is clipped and zero-filled but still counts its full bytes), M not a multiple
// of the tile (the last m block's box holds only its M % BM rows: tmap_tail), M = 1, strided x rows,
// act-order (x gathered into the workspace), one k tile per split, splits that leave uneven tails,
// both dtypes and formats.
TEST(PrefillGpu, TmaConfigsOnTailsStridesAndActOrder) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const std::vector<int> tma = tma_device_configs();
  if (tma.empty()) GTEST_SKIP() << "no TMA config runs on capability " << device_capability();
  struct Variant {
    Case c;
    std::vector<std::int64_t> ms;
    std::vector<int> splits;
    RunOpts o;
  };
  std::vector<Variant> vs;
  {
    Variant v;  // K = 416: 7 k tiles, the last one 32 wide (k 416..447 past K)
    v.c.scalar = ScalarType::uint4;
    v.c.g = 32;
    v.c.bias = true;
    v.c.n = 136;
    v.c.k = 416;
    v.ms = {1, 63, 65, 129, 257};  // 129: rows sampled (testutil sample_rows), tile edges past M left out
    v.splits = {1, 3, 7};  // 7: one k tile per split
    vs.push_back(v);
  }
  {
    Variant v;  // bf16, channelwise, K = 360 (last tile 40 wide), act-order gather
    v.c.act = v.c.scale = DType::bf16;
    v.c.g = kChannelwise;
    v.c.act_order = true;
    v.c.n = 200;
    v.c.k = 360;
    v.ms = {17, 300};
    v.splits = {1, 2};
    vs.push_back(v);
  }
  {
    Variant v;  // strided x and y rows (x_stride = K + 8: 16-byte rows, not the tight stride)
    v.c.n = 264;
    v.c.k = 640;
    v.c.bias = true;
    v.ms = {100, 1000};
    v.splits = {1, 2};
    v.o.x_pad = 8;
    v.o.y_pad = 5;
    vs.push_back(v);
  }
  for (Variant& v : vs) {
    Layer l = make_layer(v.c);
    for (int cfg : tma)
      for (std::int64_t m : v.ms)
        for (int split : v.splits) {
          PrefillPlan p;
          p.config = cfg;
          p.split = split;
          RunOpts o = v.o;
          o.plan = p;
          // Printed before the call: where a hang (killed by the device run's timeout) happened.
          std::printf("tma check %s %s split=%d M=%lld\n", prefill_config(cfg).name().c_str(), v.c.str().c_str(), split,
                      static_cast<long long>(m));
          std::fflush(stdout);
          const double e = run_check(v.c, l, m, o);
          EXPECT_LE(e, test::tolerance(v.c.act)) << v.c.str() << " " << prefill_config(cfg).name() << " split=" << split << " M=" << m;
        }
  }
}

// The last m block of a TMA config loads only its real token rows (prefill_kernel.cuh tmap_tail); the
// stage rows past them keep what they held, which only the B columns of tokens >= M read. So: NaN rows
// right after x's last row in the same allocation, and shared memory left full of NaN x rows by a
// previous launch of the same plan (a whole m block of NaN tokens), must leave every output of the
// tokens < M finite and equal to the reference. (Added with the tail box; passes on the H200 since
// 2026-12-04, also with W4A16_PREFILL_TAIL_BOX=0, the full zero-filled box.)
TEST(PrefillGpu, TailTokensReadNothingPastM) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const std::vector<int> tma = tma_device_configs();
  if (tma.empty()) GTEST_SKIP() << "no TMA config runs on capability " << device_capability();
  for (DType act : {DType::f16, DType::bf16}) {
    Case c;
    c.act = c.scale = act;
    c.bias = true;
    c.n = 200;
    c.k = 768;
    Layer l = make_layer(c);
    for (int cfg : tma)
      for (int split : {1, 2}) {
        const std::int64_t bm = prefill_config(cfg).bm;
        PrefillPlan p;
        p.config = cfg;
        p.split = split;
        {  // a whole m block of NaN tokens through the same plan: its CTAs leave NaN rows in their stages
          const std::vector<std::uint16_t> xn(static_cast<std::size_t>(bm * c.k), test::poison_bits(act));
          DevBuf dx(xn.size() * 2), dy(static_cast<std::size_t>(bm * c.n * 2)), ws(prefill_plan_workspace_bytes(*l.w, p, bm));
          W4A16_CUDA_TRY(cudaMemcpy(dx.p, xn.data(), xn.size() * 2, cudaMemcpyHostToDevice));
          prefill_run_plan(*l.w, p, dx.p, bm, c.k, dy.p, c.n, ws.p, ws.bytes, nullptr);
          W4A16_CUDA_TRY(cudaDeviceSynchronize());
        }
        for (std::int64_t m : {bm - 5, bm + 3}) {
          RunOpts o;
          o.plan = p;
          o.x_nan_rows = bm;
          const double e = run_check(c, l, m, o);
          EXPECT_LE(e, test::tolerance(act)) << c.str() << " " << prefill_config(cfg).name() << " split=" << split << " M=" << m;
        }
      }
  }
}

// The TMA plan and its cp.async twin (same tile and split) agree bit for bit (same accumulation
// order; only the x path differs).
TEST(PrefillGpu, TmaPlanMatchesCpAsyncPlanBitwise) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  if (!is_tma(prefill_config(prefill_plan(1024, 1024, 1024, cap, sms).config))) GTEST_SKIP() << "the plan takes no TMA config here";
  if (skipped_x_load(PrefillXLoad::tma)) GTEST_SKIP() << "W4A16_PREFILL_SKIP_XLOAD names tma";
  Case c;
  c.scalar = ScalarType::uint4;
  c.g = kChannelwise;  // K = 1000 is a multiple of no group size (32..256): one group
  c.n = 520;
  c.k = 1000;  // K % 64 = 40: the last box is clipped at k = 1000
  Layer l = make_layer(c);
  for (std::int64_t m : {5, 64, 100, 200, 700}) {
    const PrefillPlan pt = prefill_plan(c.n, c.k, m, cap, sms);
    PrefillPlan pc = pt;  // the cp.async twin of the TMA plan's tile, same split
    pc.config = cp_async_twin(pt.config);
    ASSERT_GE(pc.config, 0) << pt.describe();
    RunOpts ot, oc;
    ot.plan = pt;
    oc.plan = pc;
    std::vector<std::uint16_t> yt, yc;
    test::rng().seed(42);
    const double et = run_check(c, l, m, ot, &yt);
    test::rng().seed(42);
    const double ec = run_check(c, l, m, oc, &yc);
    EXPECT_LE(et, test::tolerance(c.act));
    EXPECT_LE(ec, test::tolerance(c.act));
    EXPECT_TRUE(yt == yc) << "M=" << m << ": " << pt.describe() << " vs " << pc.describe() << " differ";
  }
}

// A real layer shape at large M with the default plan (sampled rows).
TEST(PrefillGpu, LargeMRealShape) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.n = 4096;
  c.k = 4096;
  c.scalar = ScalarType::uint4;
  Layer l = make_layer(c);
  std::printf("plan M=4097 %s\n", prefill_plan(c.n, c.k, 4097, device_capability(), device_sm_count()).describe().c_str());
  EXPECT_LE(run_check(c, l, 4097, {}), test::tolerance(c.act));
}

// The split tests' layers: N x K g = 128 in every dtype x scalar type x act-order (bias with uint4), one at a time.
template <class F>
void for_each_format_layer(std::int64_t n, std::int64_t k, F&& f) {
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (bool act_order : {false, true}) {
        Case c;
        c.act = c.scale = act;
        c.scalar = st;
        c.act_order = act_order;
        c.bias = st == ScalarType::uint4;
        c.n = n;
        c.k = k;
        Layer l = make_layer(c);
        f(c, l);
      }
}

// Strided x and y rows (act-order gathers, so its x stride need not keep 16-byte rows).
RunOpts strided_rows(const Case& c) {
  RunOpts o;
  o.x_pad = c.act_order ? 5 : 16;
  o.y_pad = 3;
  return o;
}

// The token split (prefill.hpp prefill_token_split): two calls, tokens [0, head) and [head, M), each with
// its default plan, in one workspace sized for M. Forced on small layers for every dtype, scalar type,
// bias, act-order (each part gathers its own rows) and strided rows; then the default plan of
// llama8b.o at M = 1030, which this device splits where it has 132 SMs and TMA plans (1024 + 6 tokens).
TEST(PrefillGpu, TokenSplitMatchesReferenceOnBothParts) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  for_each_format_layer(328, 1152, [&](const Case& c, Layer& l) {
    for (const auto& [m, head] : {std::pair<std::int64_t, std::int64_t>{300, 256}, {100, 64}, {1030, 1024}}) {
      RunOpts o = strided_rows(c);
      PrefillTokenSplit ts;
      ts.head = head;
      ts.head_plan = prefill_plan(c.n, c.k, head, cap, sms);
      ts.tail_plan = prefill_plan(c.n, c.k, m - head, cap, sms);
      o.split = ts;
      EXPECT_LE(run_check(c, l, m, o), test::tolerance(c.act)) << c.str() << " M=" << m << " " << ts.describe();
    }
  });
  Case c;
  c.n = 4096;
  c.k = 4096;
  Layer l = make_layer(c);
  const PrefillTokenSplit ts = prefill_token_split(c.n, c.k, 1030, cap, sms);
  std::printf("token split M=1030 on this device: %s\n", ts.describe().c_str());
  if (sms == 132 && is_tma(prefill_config(prefill_plan(c.n, c.k, 1030, cap, sms).config))) {  // the H200's TMA plans
    EXPECT_EQ(ts.head, 1024) << ts.describe();
  }
  EXPECT_LE(run_check(c, l, 1030, {}), test::tolerance(c.act));
}

// The row split (prefill.hpp prefill_run_row_split): weight rows [0, rows) with one plan, the rest with another, over one
// x. Both parts checked against the f64 reference (every output written, none past N: run_check), for every dtype,
// scalar type, bias, act-order (one gather for both parts) and strided rows, on a layer whose last tile is partial
// (N = 712: N_pad 768); tails of other tile heights and K splits reduced in the cluster and by the reduce kernel (its
// column range). Where the plan takes no TMA config (an sm_80 build) the mma configs split the same way.
TEST(PrefillGpu, RowSplitMatchesReferenceOnBothParts) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  const bool tma = is_tma(prefill_config(prefill_plan(4096, 4096, 1024, cap, sms).config));
  struct Parts { int head, tail, split; PrefillSplitReduce reduce; };
  auto find = [](int bm, int wg, int mb, int min_blocks, bool wgmma) {
    for (int i = 0; i < prefill_config_count(); ++i) {
      const PrefillConfig& c = prefill_config(i);
      if (c.bm == bm && c.wg == wg && c.mb == mb && c.min_blocks == min_blocks && (c.path == PrefillPath::wgmma) == wgmma &&
          (!wgmma || (c.x_load == PrefillXLoad::tma && c.sched == 1)))
        return i;
    }
    return -1;
  };
  std::vector<Parts> parts;
  if (tma) {  // the early-issue TMA tiles: bm256, the 2-CTA bm128_bn128, bm64 occ2, bm128_bn256
    const int bm256 = find(256, 2, 1, 1, true), occ2 = find(128, 2, 1, 2, true), bm64 = find(64, 2, 1, 2, true),
              bn256 = find(128, 2, 2, 1, true);
    ASSERT_TRUE(bm256 >= 0 && occ2 >= 0 && bm64 >= 0 && bn256 >= 0);
    parts = {{bm256, occ2, 1, PrefillSplitReduce::automatic},
             {bm256, bm256, 2, PrefillSplitReduce::cluster},
             {bm256, bm64, 3, PrefillSplitReduce::kernel},
             {occ2, bn256, 2, PrefillSplitReduce::kernel}};
  } else {  // the mma.sync configs 128 x 128 and 64 x 128
    const int a = find(128, 1, 2, 1, false), b = find(64, 1, 2, 1, false);
    ASSERT_TRUE(a >= 0 && b >= 0);
    parts = {{a, b, 1, PrefillSplitReduce::automatic}, {b, a, 2, PrefillSplitReduce::kernel}};
  }
  for_each_format_layer(712, 1152, [&](const Case& c, Layer& l) {
    for (const Parts& pt : parts)
      for (std::int64_t m : {17, 300}) {
        PrefillRowSplit rs;
        rs.rows = 256;
        rs.head_plan.config = pt.head;
        rs.tail_plan.config = pt.tail;
        rs.tail_plan.split = pt.split;
        rs.tail_plan.k_tiles_per_split = (c.k / 64 + pt.split - 1) / pt.split;
        rs.tail_plan.reduce = pt.reduce;
        RunOpts o = strided_rows(c);
        o.row_split = rs;
        EXPECT_LE(run_check(c, l, m, o), test::tolerance(c.act)) << c.str() << " M=" << m << " " << rs.describe();
      }
  });
  // The default path where a measured row split applies (llama8b.qkv at M = 1000 on the H200's 132 SMs).
  Case c;
  c.n = 6144;
  c.k = 4096;
  Layer l = make_layer(c);
  const PrefillRowSplit rs = prefill_row_split(c.n, c.k, 1000, cap, sms);
  std::printf("row split llama8b.qkv M=1000 on this device: %s\n", rs.describe().c_str());
  if (sms == 132 && tma) {
    EXPECT_GT(rs.rows, 0) << "the measured entry did not apply";
  }
  EXPECT_LE(run_check(c, l, 1000, {}), test::tolerance(c.act));
  // The other entries' plans (Qwen2.5-7B qkv, Llama-70B qkv, Qwen2.5-7B o, Llama-70B gate_up): taken on the H200's 132 SMs.
  for (const auto& e : {std::array<std::int64_t, 3>{4608, 3584, 1000}, std::array<std::int64_t, 3>{10240, 8192, 1000},
                        std::array<std::int64_t, 3>{3584, 3584, 1536}, std::array<std::int64_t, 3>{57344, 8192, 256}}) {
    const PrefillRowSplit s = prefill_row_split(e[0], e[1], e[2], cap, sms);
    std::printf("row split %lldx%lld M=%lld on this device: %s\n", static_cast<long long>(e[0]), static_cast<long long>(e[1]),
                static_cast<long long>(e[2]), s.describe().c_str());
    if (sms == 132 && tma) {
      EXPECT_GT(s.rows, 0) << e[0] << "x" << e[1] << ": the measured entry did not apply";
    }
  }
}

TEST(PrefillGpu, StridedRowsLeavePaddingUntouched) {
  SKIP_WITHOUT_GPU();
  for (bool act_order : {false, true}) {
    Case c;
    c.act_order = act_order;
    c.bias = true;
    c.n = 120;
    c.k = 640;
    Layer l = make_layer(c);
    RunOpts o;
    o.x_pad = act_order ? 3 : 24;  // act-order gathers, so any stride works
    o.y_pad = 5;
    EXPECT_LE(run_check(c, l, 100, o), test::tolerance(c.act)) << c.str();
  }
}

TEST(PrefillGpu, DeterministicAcrossRunsWithSplitK) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.n = 264;
  c.k = 2048;
  Layer l = make_layer(c);
  PrefillPlan p = prefill_plan(c.n, c.k, 64, device_capability(), device_sm_count());
  p.split = 3;
  const std::int64_t m = 64;
  std::vector<std::uint16_t> x = test::random_act(m, c.k, c.act);
  DevBuf dx(x.size() * 2), dy(static_cast<std::size_t>(m * c.n * 2)), ws(prefill_plan_workspace_bytes(*l.w, p, m));
  W4A16_CUDA_TRY(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  std::vector<std::uint16_t> first, again(static_cast<std::size_t>(m * c.n));
  for (int rep = 0; rep < 5; ++rep) {
    W4A16_CUDA_TRY(cudaMemset(dy.p, 0xff, dy.bytes));
    prefill_run_plan(*l.w, p, dx.p, m, c.k, dy.p, c.n, ws.p, ws.bytes, nullptr);
    W4A16_CUDA_TRY(cudaMemcpy(again.data(), dy.p, dy.bytes, cudaMemcpyDeviceToHost));
    if (rep == 0)
      first = again;
    else
      EXPECT_EQ(std::memcmp(first.data(), again.data(), dy.bytes), 0) << "run " << rep << " differs bitwise";
  }
}

TEST(PrefillGpu, GraphCaptureReplaysTheSameResult) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.act_order = true;
  c.bias = true;
  c.n = 512;
  c.k = 1024;
  Layer l = make_layer(c);
  const std::int64_t m = 48;
  std::vector<std::uint16_t> x = test::random_act(m, c.k, c.act);
  DevBuf dx(x.size() * 2), dy(static_cast<std::size_t>(m * c.n * 2)), ws(prefill_workspace_bytes(c.n, c.k, c.g, true, m));
  W4A16_CUDA_TRY(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  prefill_run(*l.w, dx.p, m, c.k, dy.p, c.n, ws.p, ws.bytes, s);
  W4A16_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<std::uint16_t> eager(static_cast<std::size_t>(m * c.n)), replay(eager.size());
  W4A16_CUDA_TRY(cudaMemcpy(eager.data(), dy.p, dy.bytes, cudaMemcpyDeviceToHost));
  W4A16_CUDA_TRY(cudaMemset(dy.p, 0xff, dy.bytes));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  W4A16_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  prefill_run(*l.w, dx.p, m, c.k, dy.p, c.n, ws.p, ws.bytes, s);
  W4A16_CUDA_TRY(cudaStreamEndCapture(s, &g));
  W4A16_CUDA_TRY(cudaGraphInstantiate(&ge, g, 0));
  W4A16_CUDA_TRY(cudaGraphLaunch(ge, s));
  W4A16_CUDA_TRY(cudaStreamSynchronize(s));
  W4A16_CUDA_TRY(cudaMemcpy(replay.data(), dy.p, dy.bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(eager.data(), replay.data(), dy.bytes), 0);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(PrefillGpu, ZeroRowsIsANoOp) {
  SKIP_WITHOUT_GPU();
  Case c;
  Layer l = make_layer(c);
  // M = 0: nothing is read or written, null x / y / workspace are fine.
  EXPECT_NO_THROW(prefill_run(*l.w, nullptr, 0, c.k, nullptr, c.n, nullptr, 0, nullptr));
}

void expect_error(ErrorCode code, const std::function<void()>& f, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << what << ": " << e.what();
  }
}

TEST(PrefillGpu, RejectsBadArguments) {
  SKIP_WITHOUT_GPU();
  Case c;
  c.n = 64;
  c.k = 256;
  Layer l = make_layer(c);
  const std::int64_t m = 16;
  DevBuf dx(static_cast<std::size_t>(m * (c.k + 8) * 2 + 64)), dy(static_cast<std::size_t>(m * c.n * 2));
  DevBuf ws(prefill_workspace_bytes(c.n, c.k, c.g, false, m));
  auto run = [&](const TcWeights& w, const void* x, std::int64_t mm, std::int64_t xs, std::int64_t ys, std::size_t wsb) {
    prefill_run(w, x, mm, xs, dy.p, ys, ws.p, wsb, nullptr);
  };
  expect_error(ErrorCode::invalid_argument, [&] { run(*l.w, dx.p, -1, c.k, c.n, ws.bytes); }, "M < 0");
  expect_error(ErrorCode::shape_mismatch, [&] { run(*l.w, dx.p, m, c.k - 8, c.n, ws.bytes); }, "x_stride < K");
  expect_error(ErrorCode::shape_mismatch, [&] { run(*l.w, dx.p, m, c.k, c.n - 1, ws.bytes); }, "y_stride < N");
  expect_error(ErrorCode::alignment, [&] { run(*l.w, static_cast<char*>(dx.p) + 2, m, c.k, c.n, ws.bytes); }, "x misaligned");
  expect_error(ErrorCode::alignment, [&] { run(*l.w, dx.p, m, c.k + 4, c.n, ws.bytes); }, "x_stride % 8");
  expect_error(ErrorCode::invalid_argument, [&] { prefill_run(*l.w, nullptr, m, c.k, dy.p, c.n, ws.p, ws.bytes, nullptr); }, "null x");
  const char* tag = l.w->layout;
  l.w->layout = "cpu.canonical";
  expect_error(ErrorCode::layout_mismatch, [&] { run(*l.w, dx.p, m, c.k, c.n, ws.bytes); }, "wrong layout tag");
  l.w->layout = tag;
  // A forced split needs its partials in the workspace.
  PrefillPlan p = prefill_plan(c.n, c.k, m, device_capability(), device_sm_count());
  p.split = 2;
  p.reduce = PrefillSplitReduce::kernel;  // the cluster reduce needs no workspace
  expect_error(ErrorCode::invalid_argument,
               [&] { prefill_run_plan(*l.w, p, dx.p, m, c.k, dy.p, c.n, ws.p, 16, nullptr); }, "workspace too small");
  expect_error(ErrorCode::invalid_argument, [&] { prefill_config(prefill_config_count()); }, "config index");
}

// The plan is a valid, printable decision for every PERF.md shape and M; report occupancy.
TEST(PrefillGpu, PlanCoversPerfShapes) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  const std::int64_t shapes[][2] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}, {6144, 4096},
                                    {4096, 4096}, {28672, 4096}, {4096, 14336}, {8192, 8192}, {57344, 8192}};
  for (auto& s : shapes)
    for (std::int64_t m : {32, 64, 128, 256, 1024, 4096}) {
      const PrefillPlan p = prefill_plan(s[0], s[1], m, cap, sms);
      ASSERT_GE(p.config, 0);
      EXPECT_GE(p.split, 1);
      // Partials through reduce_kernel: bounded rows but for a measured entry, and the kernel-reduce workspace covers
      // them (a cluster plan keeps them in shared memory: no bound).
      if (p.split > 1 && p.reduce != PrefillSplitReduce::cluster) {
        EXPECT_LE(static_cast<std::size_t>(p.split * m * s[0] * 4),
                  prefill_workspace_bytes(s[0], s[1], 128, false, m, PrefillSplitReduce::kernel));
        if (p.split * m > kPrefillMaxSplitRows) {
          EXPECT_TRUE(prefill_measured_plan(s[0], s[1], m, cap, sms, nullptr)) << s[0] << "x" << s[1] << " M " << m;
        }
      }
      std::printf("plan %6lldx%-6lld M=%-5lld %s\n", static_cast<long long>(s[0]), static_cast<long long>(s[1]),
                  static_cast<long long>(m), p.describe().c_str());
    }
}

// The 16-token entries of the measured table whose tiles outnumber the resident clusters of the H200 that timed them
// (prefill_plan.cu timed_clusters): taken on a 132-SM sm_90a device that gives at least that many, with their split
// reduced in the cluster; where it gives fewer, the plan is another (the waves rule refuses them there).
TEST(PrefillGpu, SixteenTokenEntriesTakenWhereTheirClustersFit) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  if (device_code_arch() != 90 || sms != 132) GTEST_SKIP() << "the measured table applies on 132 SMs of the sm_90a code, here " << sms;
  struct Want {
    std::int64_t n, k;
    int config, split, timed;
  };
  int taken = 0;
  for (const Want w : {Want{8192, 8192, 36, 4, 124}, Want{4096, 14336, 36, 8, 62}, Want{4096, 4096, 36, 8, 62}, Want{6144, 4096, 35, 8, 45}}) {
    const int clusters = prefill_max_active_clusters(w.config, w.split);
    for (std::int64_t m : {1, 9, 16}) {
      const PrefillPlan p = prefill_plan(w.n, w.k, m, cap, sms);
      const std::string what = std::to_string(w.n) + "x" + std::to_string(w.k) + " M=" + std::to_string(m) + " resident " +
                               std::to_string(clusters) + ": " + p.describe();
      std::printf("16-token entry %s\n", what.c_str());
      if (clusters >= w.timed) {
        EXPECT_EQ(p.config, w.config) << what;
        EXPECT_EQ(p.split, w.split) << what;
        EXPECT_EQ(p.reduce, PrefillSplitReduce::cluster) << what;
        ++taken;
      }
    }
  }
  if (taken == 0) GTEST_SKIP() << "this device holds fewer clusters than the timing device on every entry";
}

// A cluster entry without a timed count (llama8b.qkv M = 164..256 on the 192 x 128 tile at split 2, stop 31 / 71): taken,
// in its early-issue twin, where this device holds its tiles' clusters in the waves its SMs would give; elsewhere
// the plan is another (stop 71: a cluster plan in two waves ran 1.57x the model's on llama8b.down M = 193..256).
TEST(PrefillGpu, ClusterEntriesTakenWhereTheirWavesHold) {
  SKIP_WITHOUT_GPU();
  const int cap = device_capability(), sms = device_sm_count();
  if (device_code_arch() != 90 || sms != 132) GTEST_SKIP() << "the measured table applies on 132 SMs of the sm_90a code, here " << sms;
  const std::int64_t n = 6144, k = 4096;
  const int config = 33, split = 2;
  const PrefillConfig& c = prefill_config(config);
  const int clusters = prefill_max_active_clusters(config, split);
  int taken = 0;
  for (std::int64_t m : {164, 192, 256}) {
    const std::int64_t tiles = (n + c.bn() - 1) / c.bn() * ((m + c.bm - 1) / c.bm);
    const bool hold = clusters > 0 && prefill_cluster_waves_hold(tiles, clusters, sms, std::max(1, c.min_blocks), split);
    const PrefillPlan p = prefill_plan(n, k, m, cap, sms);
    const std::string what = "6144x4096 M=" + std::to_string(m) + " tiles " + std::to_string(tiles) + " resident " +
                             std::to_string(clusters) + ": " + p.describe();
    std::printf("cluster entry %s\n", what.c_str());
    const bool entry = prefill_sched_twin(p.config, 0) == config && p.split == split && p.reduce == PrefillSplitReduce::cluster;
    EXPECT_EQ(entry, hold) << what;
    if (hold) {
      EXPECT_EQ(prefill_config(p.config).sched, 1) << what;
    }
    taken += entry;
  }
  if (taken == 0) GTEST_SKIP() << "this device holds the entry's clusters in more waves than its SMs would give";
}

// The early-issue configs (SCHED 1 / 2) only reorder the k loop: every product is accumulated in
// the same order as by their SCHED 0 twin, so the outputs are bitwise equal; and both match the
// f64 reference. fp16 / bf16 x uint4b8 / uint4, groups 32 / 128 / channelwise, bias, act-order
// (x gathered by the launcher), K tails (K % 64 != 0), M tails 17..4097, splits with uneven tails
// (cluster reduce), strided rows.
TEST(PrefillGpu, EarlyIssueConfigsMatchTheirTwinsBitwise) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  std::vector<int> early;
  for (int cfg : device_configs())
    if (prefill_config(cfg).sched != 0) early.push_back(cfg);
  if (early.empty()) GTEST_SKIP() << "no early-issue config runs on capability " << device_capability();
  struct Variant {
    Case c;
    std::vector<std::int64_t> ms;
    std::vector<int> splits;
    std::int64_t x_pad = 0, y_pad = 0;
  };
  std::vector<Variant> vs;
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4}) {
      Variant v;  // 21 k tiles (odd: the loop's last pair is half used), N_pad 448
      v.c.act = v.c.scale = act;
      v.c.scalar = st;
      v.c.g = act == DType::f16 ? 64 : 32;  // K = 1344 = 21 x 64: a whole number of groups
      v.c.bias = st == ScalarType::uint4;
      v.c.n = 392;
      v.c.k = 1344;
      // Every M of the brief on two of the four formats, two Ms on the others (device time).
      const bool all_m = (act == DType::f16) == (st == ScalarType::uint4b8);
      v.ms = all_m ? std::vector<std::int64_t>{17, 33, 100, 1000, 4097} : std::vector<std::int64_t>{33, 1000};
      v.splits = {1, 2};
      vs.push_back(v);
    }
  {
    Variant v;  // channelwise, act-order, K = 1000 (last box clipped), splits of 1 k tile each
    v.c.scalar = ScalarType::uint4;
    v.c.g = kChannelwise;
    v.c.act_order = true;
    v.c.bias = true;
    v.c.n = 520;
    v.c.k = 1000;
    v.ms = {1, 65, 257};
    v.splits = {1, 3, 8};
    vs.push_back(v);
  }
  {
    Variant v;  // strided rows, one k tile in all (nkt = 1: the loop's first tile is its last)
    v.c.act = v.c.scale = DType::bf16;
    v.c.g = 64;
    v.c.n = 264;
    v.c.k = 64;
    v.ms = {33, 300};
    v.splits = {1};
    v.x_pad = 8;
    v.y_pad = 5;
    vs.push_back(v);
  }
  int pairs = 0;
  for (Variant& v : vs) {
    Layer l = make_layer(v.c);
    for (int cfg : early) {
      const int base = prefill_sched_twin(cfg, 0);
      if (base < 0) {  // a planned tile in early-issue order only (the 16 / 32-token and the one-warpgroup 64-token
                       // tiles): checked against the reference by EveryKernelConfigAndSplit; every other early-issue
                       // config has its twin
        ASSERT_TRUE(prefill_config_planned(cfg)) << "no SCHED 0 twin of " << prefill_config(cfg).name() << ", nor a planned tile";
        continue;
      }
      for (std::int64_t m : v.ms)
        for (int split : v.splits) {
          if (split > 1 && m > 1000) continue;
          PrefillPlan pe, pb;
          pe.config = cfg;
          pb.config = base;
          pe.split = pb.split = split;
          RunOpts oe, ob;
          oe.plan = pe;
          ob.plan = pb;
          oe.x_pad = ob.x_pad = v.x_pad;
          oe.y_pad = ob.y_pad = v.y_pad;
          ob.reference = false;  // equal bits to the early-issue run, which is checked against f64
          std::printf("early-issue check %s vs %s %s split=%d M=%lld\n", prefill_config(cfg).name().c_str(),
                      prefill_config(base).name().c_str(), v.c.str().c_str(), split, static_cast<long long>(m));
          std::fflush(stdout);
          std::vector<std::uint16_t> ye, yb;
          test::rng().seed(7);
          const double ee = run_check(v.c, l, m, oe, &ye);
          test::rng().seed(7);
          run_check(v.c, l, m, ob, &yb);
          EXPECT_LE(ee, test::tolerance(v.c.act)) << v.c.str() << " " << prefill_config(cfg).name() << " split=" << split << " M=" << m;
          EXPECT_TRUE(ye == yb) << v.c.str() << " split=" << split << " M=" << m << ": " << prefill_config(cfg).name() << " vs "
                                << prefill_config(base).name() << " differ";
          ++pairs;
        }
    }
  }
  EXPECT_GT(pairs, 0);
}

// The persistent tile loop (KernelParams::persist_items) on every config that has it: more tiles than resident CTAs,
// so that CTAs run several items, each item's k loop restarting the ring at stage 0 with the mbarrier phases carried
// over (nkt = 1, 3, 7, 21, 64: every stage used an odd or even number of times per item, and fewer k tiles than
// stages); the last m block a tail. Against the f64 reference and bitwise against the plain grid
// (W4A16_PREFILL_PERSIST=0), with the output tiles stored by TMA (the default) and by the threads' copies
// (W4A16_PREFILL_TMA_STORE=0), the next item placed early in the k loop (the default) and at the item boundary
// (W4A16_PREFILL_NEXT_INFO=0, whose invalid values are refused); with the split tail (the default where the last wave is short: K = 1344 / 4096 here)
// its tiles bitwise against the plain split plan of the same parts, the others against the plain grid; fp16 / bf16, uint4b8 / uint4, bias, group sizes of both kernel variants. The f64
// reference on each layer's first config (the plain grid's epilogue is checked against it by the tests above).
TEST(PrefillGpu, PersistentTileLoopMatchesThePlainGridBitwise) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  struct EnvGuard {
    ~EnvGuard() {
      unsetenv("W4A16_PREFILL_PERSIST");
      unsetenv("W4A16_PREFILL_TMA_STORE");
      unsetenv("W4A16_PREFILL_TAIL_SPLIT");
      unsetenv("W4A16_PREFILL_NEXT_INFO");
    }
  } guard;
  std::vector<Case> cases;
  const std::int64_t ks[] = {64, 192, 448, 576, 1344, 4096};  // 576: 9 k tiles, the tail in 2 parts (4096: 8)
  int i = 0;
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (std::int64_t k : ks) {
        Case c;
        c.act = c.scale = act;
        c.scalar = st;
        c.g = k % 128 == 0 ? 128 : 64;  // a whole number of groups; 64: the per-half kernel, 128: the one-group one
        c.bias = (i++ % 3) == 0;
        c.n = 1152;  // 9 row blocks of 128 (18 of 64): every row block inside N
        c.k = k;
        // Two formats get every K, the other two the short and the long one (device time).
        if ((act == DType::f16) != (st == ScalarType::uint4b8) && k != 64 && k != 4096) continue;
        cases.push_back(c);
      }
  const std::int64_t m = 3999;  // M % 256 = 159, % 64 = 31, % 16 = 15: the last m block a tail
  int runs = 0, tails = 0;
  for (const Case& c : cases) {
    Layer l = make_layer(c);
    bool referenced = false;
    for (int cfg : device_configs()) {
      PrefillPlan p;
      p.config = cfg;
      DevBuf probe(256);
      setenv("W4A16_PREFILL_PERSIST", "1", 1);
      const PrefillPersistent pl = prefill_plan_persistent(*l.w, p, m, probe.p, c.n);
      const PrefillConfig& pc = prefill_config(cfg);
      const bool has_loop = pc.path == PrefillPath::wgmma && pc.x_load == PrefillXLoad::tma && pc.sched != 0 && pc.bn() <= 128 &&
                            pc.min_blocks == 1;
      if (!has_loop) {
        EXPECT_EQ(pl.ctas, 0) << pc.name() << " has no persistent loop";
        continue;
      }
      const std::int64_t nx = (c.n + pc.bn() - 1) / pc.bn(), items = nx * ((m + pc.bm - 1) / pc.bm);
      ASSERT_GT(pl.ctas, 0) << pc.name() << " " << c.str() << " M=" << m << ": the persistent loop not taken";
      ASSERT_LT(pl.ctas, items) << pc.name() << ": no more items than CTAs";
      if (pl.tail_items > 0) {  // the last wave's tiles, split where they fill at most half the CTAs
        EXPECT_EQ(pl.tail_items, items % pl.ctas);
        EXPECT_LE(2 * pl.tail_items, pl.ctas);
        EXPECT_LE(pl.tail_items * pl.tail_split, pl.ctas);
        EXPECT_GE(pl.tail_split, 2);
        EXPECT_LT((pl.tail_split - 1) * pl.tail_kts, l.w->k_pad / 64) << "an empty part";
      }
      RunOpts o;
      o.plan = p;
      o.reference = !referenced;
      referenced = true;
      std::printf("persistent check %s %s M=%lld (%d CTAs, tail %d x %d parts of %lld k tiles)\n", pc.name().c_str(), c.str().c_str(),
                  static_cast<long long>(m), pl.ctas, pl.tail_items, pl.tail_split, static_cast<long long>(pl.tail_kts));
      std::fflush(stdout);
      // yt: the default (TMA store, split tail where there is one); yp: whole tiles (TMA store); yn: whole tiles, the
      // next item placed at the item boundary (W4A16_PREFILL_NEXT_INFO=0); yc: whole tiles, the threads' copies; yg:
      // the plain grid; ys: the plain grid of the split-tail_split plan.
      std::vector<std::uint16_t> yt, yp, yn, yc, yg, ys;
      test::rng().seed(11);
      const double e = run_check(c, l, m, o, &yt);
      o.reference = false;
      setenv("W4A16_PREFILL_TAIL_SPLIT", "0", 1);
      EXPECT_EQ(prefill_plan_persistent(*l.w, p, m, probe.p, c.n).tail_items, 0);
      test::rng().seed(11);
      run_check(c, l, m, o, &yp);
      setenv("W4A16_PREFILL_NEXT_INFO", "0", 1);
      test::rng().seed(11);
      run_check(c, l, m, o, &yn);
      if (runs == 0) {  // a value other than 0 / 1 names the knob
        setenv("W4A16_PREFILL_NEXT_INFO", "2", 1);
        expect_error(ErrorCode::invalid_argument, [&] { run_check(c, l, m, o); }, "W4A16_PREFILL_NEXT_INFO=2");
      }
      unsetenv("W4A16_PREFILL_NEXT_INFO");
      setenv("W4A16_PREFILL_TMA_STORE", "0", 1);  // the persistent loop, the threads' 16-byte copies
      test::rng().seed(11);
      run_check(c, l, m, o, &yc);
      unsetenv("W4A16_PREFILL_TMA_STORE");
      unsetenv("W4A16_PREFILL_TAIL_SPLIT");
      setenv("W4A16_PREFILL_PERSIST", "0", 1);
      EXPECT_EQ(prefill_plan_persistent(*l.w, p, m, probe.p, c.n).ctas, 0);
      test::rng().seed(11);
      run_check(c, l, m, o, &yg);
      EXPECT_LE(e, test::tolerance(c.act)) << c.str() << " " << pc.name() << " M=" << m;
      EXPECT_TRUE(yp == yg) << c.str() << " M=" << m << ": " << pc.name() << " persistent (TMA store) and plain grid differ";
      EXPECT_TRUE(yn == yg) << c.str() << " M=" << m << ": " << pc.name() << " persistent (next item placed at the boundary) and plain grid differ";
      EXPECT_TRUE(yc == yg) << c.str() << " M=" << m << ": " << pc.name() << " persistent (threads' copies) and plain grid differ";
      if (pl.tail_items == 0) {
        EXPECT_TRUE(yt == yg) << c.str() << " M=" << m << ": " << pc.name() << " persistent (default) and plain grid differ";
      } else {
        PrefillPlan sp = p;  // the tail tiles: the split plan's bits
        sp.split = pl.tail_split;
        sp.k_tiles_per_split = pl.tail_kts;
        RunOpts os = o;
        os.plan = sp;
        test::rng().seed(11);
        run_check(c, l, m, os, &ys);
        const std::int64_t first_tail = items - pl.tail_items;
        std::int64_t wrong_whole = 0, wrong_tail = 0, tail_values = 0;
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t j = 0; j < c.n; ++j) {
            const std::size_t at = static_cast<std::size_t>(r * c.n + j);
            if ((r / pc.bm) * nx + j / pc.bn() >= first_tail) {
              ++tail_values;
              wrong_tail += yt[at] != ys[at];
            } else {
              wrong_whole += yt[at] != yg[at];
            }
          }
        EXPECT_GT(tail_values, 0);
        EXPECT_EQ(wrong_whole, 0) << c.str() << " " << pc.name() << ": whole tiles differ from the plain grid";
        EXPECT_EQ(wrong_tail, 0) << c.str() << " " << pc.name() << ": split tail tiles differ from the split-" << pl.tail_split << " plan";
        ++tails;
      }
      ++runs;
    }
  }
  EXPECT_GT(runs, 0);
  if (runs > 0) {
    EXPECT_GT(tails, 0) << "no case took the split tail";
  }
}

// The ONE_GROUP kernels (one scale / zero entry per k tile, picked by the launcher for g >= 64 and
// channelwise on the default plan's early-issue twins of the planned tiles) against the f64 reference
// and bitwise against the per-half kernel of the same config (plan.one_group = 0): the same scale and
// zero values reach the same arithmetic. fp16 / bf16 x uint4b8 / uint4 x g = 32 (the per-half kernel
// either way: a control), 64, 128, 256, channelwise (K = 1000: the last k tile clipped), M tails,
// splits (cluster reduce), bias on the uint4 layers.
TEST(PrefillGpu, OneGroupKernelsMatchReferenceAndPerHalfKernelsBitwise) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  std::vector<int> cfgs;  // the kDefaultSched (1) twins of the planned tiles: the configs with a ONE_GROUP kernel
  for (int cfg : device_configs())
    if (prefill_config(cfg).sched == 1 && prefill_config_planned(cfg)) cfgs.push_back(cfg);
  if (cfgs.empty()) GTEST_SKIP() << "no early-issue twin of a planned tile runs on capability " << device_capability();
  int pairs = 0;
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (int g : {32, 64, 128, 256, kChannelwise}) {
        Case c;
        c.act = c.scale = act;
        c.scalar = st;
        c.g = g;
        c.bias = st == ScalarType::uint4;
        c.n = 392;  // N_pad 448: the last 64-row block of a bn128 / bn256 CTA is dead
        // 21 / 18 / 20 k tiles (odd, even), a whole number of groups; channelwise K = 1000 (a tail).
        c.k = g == 32 || g == 64 ? 1344 : (g == 128 ? 1152 : (g == 256 ? 1280 : 1000));
        Layer l = make_layer(c);
        for (int cfg : cfgs)
          for (std::int64_t m : {33, 1000})
            for (int split : {1, 2}) {
              if (split > 1 && m > 100) continue;
              PrefillPlan p1, p0;
              p1.config = p0.config = cfg;
              p1.split = p0.split = split;
              p1.one_group = 1;
              p0.one_group = 0;
              RunOpts o1, o0;
              o1.plan = p1;
              o0.plan = p0;
              o0.reference = false;  // equal bits to the one-group run, which is checked against f64
              const std::string what = c.str() + " " + prefill_config(cfg).name() + " split=" + std::to_string(split) + " M=" + std::to_string(m);
              std::printf("one-group check %s\n", what.c_str());  // before the call: where a hang happened
              std::fflush(stdout);
              std::vector<std::uint16_t> y1, y0;
              test::rng().seed(11);
              const double e = run_check(c, l, m, o1, &y1);
              test::rng().seed(11);
              run_check(c, l, m, o0, &y0);
              EXPECT_LE(e, test::tolerance(act)) << what;
              EXPECT_TRUE(y1 == y0) << what << ": the one-group kernel and the per-half kernel differ";
              ++pairs;
            }
      }
  EXPECT_EQ(pairs, 2 * 2 * 5 * static_cast<int>(cfgs.size()) * 3);
}

// One prefill_run_plan call on device buffers, y poisoned first; returns y (M x ys) on the host.
std::vector<std::uint16_t> run_bits(const Case& c, Layer& l, const PrefillPlan& p, const DevBuf& dx, std::int64_t m, std::int64_t ys,
                                    DevBuf& dy) {
  const std::size_t need = prefill_plan_workspace_bytes(*l.w, p, m);
  DevBuf ws(need);
  W4A16_CUDA_TRY(cudaMemset(dy.p, 0xff, dy.bytes));  // 0xffff: NaN in fp16 and bf16
  prefill_run_plan(*l.w, p, dx.p, m, c.k, dy.p, ys, ws.p, need, nullptr);
  W4A16_CUDA_TRY(cudaDeviceSynchronize());
  std::vector<std::uint16_t> y(dy.bytes / 2);
  W4A16_CUDA_TRY(cudaMemcpy(y.data(), dy.p, dy.bytes, cudaMemcpyDeviceToHost));
  return y;
}

// The automatic reduce (W4A16_PREFILL_SPLIT_REDUCE unset, plan.reduce automatic) takes the mode of the
// smaller estimate, the cluster's waves counted over the clusters resident at once; forcing "cluster"
// takes the cluster wherever it is schedulable, "kernel" never. Prints the resident clusters of every
// TMA config and split (the numbers bench/gpu/fit_prefill_plan.py fits the cluster waves with).
TEST(PrefillGpu, AutomaticReduceTakesTheModeOfTheSmallerEstimate) {
  SKIP_WITHOUT_GPU();
  if (device_code_arch() != 90) GTEST_SKIP() << "the cluster reduce runs on the sm_90a TMA configs only";
  const char* old = std::getenv("W4A16_PREFILL_SPLIT_REDUCE");
  const std::string saved = old ? old : "";
  unsetenv("W4A16_PREFILL_SPLIT_REDUCE");
  const int sms = device_sm_count();
  for (int cfg : tma_device_configs()) {
    std::string line = "resident clusters " + prefill_config(cfg).name() + ":";
    for (int split = 2; split <= kPrefillMaxSplit; ++split) {
      const int clusters = prefill_max_active_clusters(cfg, split);
      line += " s" + std::to_string(split) + "=" + std::to_string(clusters);
      // Whole clusters on the SMs: never more CTAs than SMs x CTAs per SM; pairs always fit.
      EXPECT_LE(clusters * split, sms * std::max(1, prefill_config(cfg).min_blocks)) << line;
      if (split == 2) {
        EXPECT_GE(clusters, 1) << line;
      }
    }
    std::printf("%s\n", line.c_str());
  }
  Case c;
  c.n = 4096;
  c.k = 4096;  // llama8b.o
  Layer l = make_layer(c);
  int agree = 0;
  for (int cfg : {14, 12})  // bm64_bn128 occ2 TMA (32 n tiles), bm256_bn128 TMA
    for (int split : {2, 3, 4, 8})
      for (std::int64_t m : {32, 256}) {
        PrefillPlan p;
        p.config = cfg;
        p.split = split;
        ASSERT_TRUE(is_tma(prefill_config(p.config))) << prefill_config(p.config).name();
        const int clusters = prefill_max_active_clusters(cfg, split);
        const bool cheaper = clusters > 0 && prefill_plan_estimate_us(c.n, c.k, m, cfg, split, sms, PrefillSplitReduce::cluster, clusters) <
                                                 prefill_plan_estimate_us(c.n, c.k, m, cfg, split, sms, PrefillSplitReduce::kernel);
        const std::string what = prefill_config(cfg).name() + " split " + std::to_string(split) + " M " + std::to_string(m);
        EXPECT_EQ(prefill_plan_uses_cluster(*l.w, p, m), cheaper) << what;
        EXPECT_EQ(prefill_plan_workspace_bytes(*l.w, p, m) > 0, !cheaper) << what;
        agree += cheaper ? 1 : 0;
        p.reduce = PrefillSplitReduce::cluster;
        EXPECT_EQ(prefill_plan_uses_cluster(*l.w, p, m), clusters > 0) << what;
        p.reduce = PrefillSplitReduce::kernel;
        EXPECT_FALSE(prefill_plan_uses_cluster(*l.w, p, m)) << what;
      }
  EXPECT_GT(agree, 0);  // some of these plans reduce in the cluster (2 splits always measured faster)
  // Every other TMA config has an automatic mode too (a forced plan of any config must run): a twin
  // of a planned tile (tma_eb x load, early-issue order) decides as that tile; a tile without an
  // estimate (bm192) takes the cluster where it fits, so it needs no workspace.
  for (int cfg : tma_device_configs())
    for (int split : {2, 4}) {
      PrefillPlan p;
      p.config = cfg;
      p.split = split;
      const PrefillConfig& o = prefill_config(cfg);
      bool uses = false;
      ASSERT_NO_THROW(uses = prefill_plan_uses_cluster(*l.w, p, 256)) << o.name();
      PrefillPlan twin = p;
      for (int base = 0; base < prefill_config_count(); ++base) {
        const PrefillConfig& b = prefill_config(base);
        if (!prefill_config_planned(base) || b.sched != 0 || b.x_load != PrefillXLoad::tma) continue;
        if (b.bm == o.bm && b.wg == o.wg && b.mb == o.mb && b.stages == o.stages && b.min_blocks == o.min_blocks) twin.config = base;
      }
      if (twin.config != cfg) {
        EXPECT_EQ(uses, prefill_plan_uses_cluster(*l.w, twin, 256)) << o.name() << " against " << prefill_config(twin.config).name();
      } else if (!prefill_config_planned(cfg)) {
        EXPECT_EQ(uses, prefill_max_active_clusters(cfg, split) > 0) << o.name() << " (no estimate)";
      }
    }
  if (!saved.empty()) setenv("W4A16_PREFILL_SPLIT_REDUCE", saved.c_str(), 1);
}

// Split-K reduced in the thread-block cluster: every TMA config x splits 2..8, fp16 / bf16 x
// uint4b8 / uint4, a bias, odd N (uint4b8) and K % 64 != 0, M not a multiple of the tile, strided
// y over poison. Each result against the f64 reference, bitwise equal to a second cluster run and
// to the reduce_kernel path of the same plan: both sum the same fp32 partials (the same k ranges,
// the same accumulation inside a split) in split order starting from 0, then add the bias in fp32
// and round once, so the summation order is the same and the bits must be.
TEST(PrefillGpu, ClusterSplitReduceMatchesReferenceAndReduceKernelBitwise) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  const std::vector<int> tma = tma_device_configs();
  if (tma.empty()) GTEST_SKIP() << "no TMA config runs on capability " << device_capability();
  int clustered = 0;
  for (DType act : {DType::f16, DType::bf16})
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4}) {
      Case c;
      c.act = c.scale = act;
      c.scalar = st;
      c.bias = true;
      c.n = st == ScalarType::uint4 ? 200 : 197;  // uint4 zeros need N % 8 == 0
      c.k = st == ScalarType::uint4 ? 1344 : 1352;  // 21 / 22 k tiles (1352: the last one 8 wide)
      c.g = st == ScalarType::uint4 ? 64 : kChannelwise;
      Layer l = make_layer(c);
      // The cluster path needs no split workspace on this device.
      EXPECT_EQ(prefill_workspace_bytes(c.n, c.k, c.g, false, 300, PrefillSplitReduce::cluster), 0u) << c.str();
      for (std::int64_t m : {17, 100, 300}) {
        const std::int64_t ys = c.n + 3;
        const std::vector<std::uint16_t> x = test::random_act(m, c.k, act);
        const std::int64_t guard = 512;  // poisoned elements after y's last row
        DevBuf dx(x.size() * 2), dy(static_cast<std::size_t>((m * ys + guard) * 2));
        W4A16_CUDA_TRY(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
        const std::vector<std::int64_t> rows = test::sample_rows(m);
        const std::int64_t rm = static_cast<std::int64_t>(rows.size());
        std::vector<double> xr(static_cast<std::size_t>(rm * c.k));
        for (std::int64_t i = 0; i < rm; ++i)
          for (std::int64_t j = 0; j < c.k; ++j)
            xr[static_cast<std::size_t>(i * c.k + j)] = f16x_to_float(act, x[static_cast<std::size_t>(rows[static_cast<std::size_t>(i)] * c.k + j)]);
        const std::vector<double> ref = test::gemm_f64(xr, l.wd, l.b, rm, c.n, c.k);
        for (int cfg : tma)
          for (int split = 2; split <= 8; ++split) {
            PrefillPlan p;
            p.config = cfg;
            p.split = split;
            p.reduce = PrefillSplitReduce::cluster;
            const std::string what = c.str() + " " + prefill_config(cfg).name() + " split=" + std::to_string(split) + " M=" + std::to_string(m);
            std::printf("cluster check %s\n", what.c_str());  // before the call: where a hang happened
            std::fflush(stdout);
            ASSERT_TRUE(prefill_plan_uses_cluster(*l.w, p, m)) << what << ": the cluster of " << split << " is not schedulable";
            EXPECT_EQ(prefill_plan_workspace_bytes(*l.w, p, m), 0u) << what;
            const std::vector<std::uint16_t> yc = run_bits(c, l, p, dx, m, ys, dy);
            const std::vector<std::uint16_t> yc2 = run_bits(c, l, p, dx, m, ys, dy);
            PrefillPlan pk = p;
            pk.reduce = PrefillSplitReduce::kernel;
            ASSERT_FALSE(prefill_plan_uses_cluster(*l.w, pk, m));
            const std::vector<std::uint16_t> yk = run_bits(c, l, pk, dx, m, ys, dy);
            ++clustered;
            std::int64_t unwritten = 0, pad_touched = 0;
            for (std::int64_t i = 0; i < guard; ++i) pad_touched += yc[static_cast<std::size_t>(m * ys + i)] != 0xffff;
            std::vector<double> yr(static_cast<std::size_t>(rm * c.n));
            for (std::int64_t r = 0; r < m; ++r) {
              for (std::int64_t j = 0; j < c.n; ++j) unwritten += yc[static_cast<std::size_t>(r * ys + j)] == 0xffff;
              for (std::int64_t j = c.n; j < ys; ++j) pad_touched += yc[static_cast<std::size_t>(r * ys + j)] != 0xffff;
            }
            for (std::int64_t i = 0; i < rm; ++i)
              for (std::int64_t j = 0; j < c.n; ++j)
                yr[static_cast<std::size_t>(i * c.n + j)] = f16x_to_float(act, yc[static_cast<std::size_t>(rows[static_cast<std::size_t>(i)] * ys + j)]);
            EXPECT_EQ(unwritten, 0) << what << ": outputs left poisoned";
            EXPECT_EQ(pad_touched, 0) << what << ": row padding past N or guard past y written";
            EXPECT_LE(test::rel_error(yr, ref), test::tolerance(act)) << what;
            EXPECT_TRUE(yc == yc2) << what << ": two cluster runs differ bitwise";
            EXPECT_TRUE(yc == yk) << what << ": cluster and reduce_kernel paths differ bitwise";
          }
      }
    }
  EXPECT_EQ(clustered, 4 * 3 * static_cast<int>(tma.size()) * 7);
}

// Three layers back to back on one stream (and replayed from a CUDA graph): x0 -> L0 -> x1 -> L1 ->
// y1 -> L2 (act-order: gather kernel) -> y2, x1 / y1 / y2 poisoned (NaN) on the stream first. With
// PDL each layer's kernels start while the previous one drains; a read of x before
// griddepcontrol.wait would see NaN or a partial tile. Every output against the f64 reference of
// its actual input, and all four variants (reduce kernel / cluster x PDL off / on) bitwise equal.
TEST(PrefillGpu, ChainedLayersWithPdlReadOnlyCompleteInputs) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("W4A16_SEED=" + std::to_string(test::seed()));
  Case c0, c1, c2;
  c0.n = 4096, c0.k = 4096;             // the slow predecessor
  c1.n = 1152, c1.k = 4096, c1.bias = true;  // small N: the plan splits K
  c2.n = 896, c2.k = 1152, c2.act_order = true, c2.scalar = ScalarType::uint4, c2.g = 64;
  Layer l0 = make_layer(c0), l1 = make_layer(c1), l2 = make_layer(c2);
  const std::int64_t m = 64;
  const int cap = device_capability(), sms = device_sm_count();
  const std::vector<std::uint16_t> x0 = test::random_act(m, c0.k, c0.act);
  DevBuf dx0(x0.size() * 2), dx1(static_cast<std::size_t>(m * c0.n * 2)), dy1(static_cast<std::size_t>(m * c1.n * 2)),
      dy2(static_cast<std::size_t>(m * c2.n * 2));
  W4A16_CUDA_TRY(cudaMemcpy(dx0.p, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
  PrefillPlan p0 = prefill_plan(c0.n, c0.k, m, cap, sms), p1 = prefill_plan(c1.n, c1.k, m, cap, sms), p2 = prefill_plan(c2.n, c2.k, m, cap, sms);
  std::printf("chain plans: %s | %s | %s\n", p0.describe().c_str(), p1.describe().c_str(), p2.describe().c_str());
  EXPECT_GT(p1.split, 1) << "the middle layer should exercise split-K";
  std::size_t wsb = 0;
  for (auto red : {PrefillSplitReduce::kernel, PrefillSplitReduce::cluster})
    for (const PrefillPlan* p : {&p0, &p1, &p2}) {
      PrefillPlan q = *p;
      q.reduce = red;
      const Layer& l = p == &p0 ? l0 : (p == &p1 ? l1 : l2);
      wsb = std::max(wsb, prefill_plan_workspace_bytes(*l.w, q, m));
    }
  DevBuf ws(wsb);
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  auto chain = [&](PrefillSplitReduce red, int pdl) {
    PrefillPlan q0 = p0, q1 = p1, q2 = p2;
    for (PrefillPlan* q : {&q0, &q1, &q2}) {
      q->reduce = red;
      q->pdl = pdl;
    }
    W4A16_CUDA_TRY(cudaMemsetAsync(dx1.p, 0xff, dx1.bytes, s));
    W4A16_CUDA_TRY(cudaMemsetAsync(dy1.p, 0xff, dy1.bytes, s));
    W4A16_CUDA_TRY(cudaMemsetAsync(dy2.p, 0xff, dy2.bytes, s));
    prefill_run_plan(*l0.w, q0, dx0.p, m, c0.k, dx1.p, c0.n, ws.p, ws.bytes, s);
    prefill_run_plan(*l1.w, q1, dx1.p, m, c1.k, dy1.p, c1.n, ws.p, ws.bytes, s);
    prefill_run_plan(*l2.w, q2, dy1.p, m, c2.k, dy2.p, c2.n, ws.p, ws.bytes, s);
  };
  auto fetch = [&](const DevBuf& b) {
    std::vector<std::uint16_t> h(b.bytes / 2);
    W4A16_CUDA_TRY(cudaMemcpy(h.data(), b.p, b.bytes, cudaMemcpyDeviceToHost));
    return h;
  };
  auto check_layer = [&](const Case& c, const Layer& l, const std::vector<std::uint16_t>& in, const std::vector<std::uint16_t>& out,
                         const std::string& what) {
    std::vector<double> yd = test::to_f64(out.data(), c.act, m, c.n, c.n);
    std::vector<double> ref = test::gemm_f64(test::to_f64(in.data(), c.act, m, c.k, c.k), l.wd, l.b, m, c.n, c.k);
    EXPECT_LE(test::rel_error(yd, ref), test::tolerance(c.act)) << what;
  };
  std::vector<std::uint16_t> first[3];
  int variant = 0;
  for (auto red : {PrefillSplitReduce::kernel, PrefillSplitReduce::cluster})
    for (int pdl : {0, 1}) {
      const std::string what = std::string("reduce=") + prefill_split_reduce_name(red) + " pdl=" + std::to_string(pdl);
      chain(red, pdl);
      W4A16_CUDA_TRY(cudaStreamSynchronize(s));
      const std::vector<std::uint16_t> x1 = fetch(dx1), y1 = fetch(dy1), y2 = fetch(dy2);
      check_layer(c0, l0, x0, x1, what + " layer 0");
      check_layer(c1, l1, x1, y1, what + " layer 1");
      check_layer(c2, l2, y1, y2, what + " layer 2 (act-order)");
      if (variant++ == 0) {
        first[0] = x1, first[1] = y1, first[2] = y2;
      } else {
        EXPECT_TRUE(x1 == first[0] && y1 == first[1] && y2 == first[2]) << what << ": differs bitwise from reduce=kernel pdl=0";
      }
    }
  // The same chain captured in a graph (programmatic edges kept), replayed twice.
  for (auto red : {PrefillSplitReduce::kernel, PrefillSplitReduce::cluster}) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    W4A16_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    chain(red, 1);
    W4A16_CUDA_TRY(cudaStreamEndCapture(s, &g));
    W4A16_CUDA_TRY(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 2; ++rep) {
      W4A16_CUDA_TRY(cudaGraphLaunch(ge, s));
      W4A16_CUDA_TRY(cudaStreamSynchronize(s));
      EXPECT_TRUE(fetch(dx1) == first[0] && fetch(dy1) == first[1] && fetch(dy2) == first[2])
          << "graph replay " << rep << " reduce=" << prefill_split_reduce_name(red) << " differs bitwise";
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  // W4A16_PREFILL_PDL: invalid values name the knob.
  setenv("W4A16_PREFILL_PDL", "2", 1);
  expect_error(ErrorCode::invalid_argument, [&] { prefill_run_plan(*l1.w, p1, dx1.p, m, c1.k, dy1.p, c1.n, ws.p, ws.bytes, s); }, "W4A16_PREFILL_PDL=2");
  unsetenv("W4A16_PREFILL_PDL");
  setenv("W4A16_PREFILL_TAIL_BOX", "yes", 1);  // W4A16_PREFILL_TAIL_BOX likewise
  expect_error(ErrorCode::invalid_argument, [&] { prefill_run_plan(*l1.w, p1, dx1.p, m, c1.k, dy1.p, c1.n, ws.p, ws.bytes, s); }, "W4A16_PREFILL_TAIL_BOX=yes");
  unsetenv("W4A16_PREFILL_TAIL_BOX");
  // W4A16_PREFILL_SPLIT_REDUCE is read where the mode is still open: by the plan, and by a run of a
  // plan whose reduce is automatic (a plan that names its mode does not read it).
  setenv("W4A16_PREFILL_SPLIT_REDUCE", "fast", 1);
  expect_error(ErrorCode::invalid_argument, [&] { prefill_plan(c1.n, c1.k, m, cap, sms); }, "W4A16_PREFILL_SPLIT_REDUCE=fast (plan)");
  PrefillPlan open_mode = p1;
  open_mode.split = 2;
  open_mode.reduce = PrefillSplitReduce::automatic;
  expect_error(ErrorCode::invalid_argument,
               [&] { prefill_run_plan(*l1.w, open_mode, dx1.p, m, c1.k, dy1.p, c1.n, ws.p, ws.bytes, s); },
               "W4A16_PREFILL_SPLIT_REDUCE=fast (automatic reduce)");
  unsetenv("W4A16_PREFILL_SPLIT_REDUCE");
  W4A16_CUDA_TRY(cudaStreamSynchronize(s));
  cudaStreamDestroy(s);
}

// ---- dense cache ----
TEST(DenseCacheGpu, MatchesReferenceAndReportsBytes) {
  SKIP_WITHOUT_GPU();
  for (DType act : {DType::f16, DType::bf16})
    for (bool act_order : {false, true}) {
      Case c;
      c.act = act;
      c.scale = act;
      c.scalar = act_order ? ScalarType::uint4 : ScalarType::uint4b8;
      c.g = act_order ? 32 : kChannelwise;
      c.bias = true;
      c.act_order = act_order;
      c.n = 200;
      c.k = act_order ? 224 : 360;
      Layer l = make_layer(c);
      auto dc = dense_cache_prepare(*l.w, nullptr);
      EXPECT_EQ(dc->bytes, static_cast<std::size_t>(c.n * c.k * 2));
      const std::int64_t m = 33, ys = c.n + 3;
      std::vector<std::uint16_t> x = test::random_act(m, c.k, act);
      DevBuf dx(x.size() * 2), dy(static_cast<std::size_t>(m * ys * 2)), ws(dense_cache_workspace_bytes(m));
      std::vector<std::uint16_t> y(static_cast<std::size_t>(m * ys), test::poison_bits(act));
      W4A16_CUDA_TRY(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
      W4A16_CUDA_TRY(cudaMemcpy(dy.p, y.data(), dy.bytes, cudaMemcpyHostToDevice));
      dense_cache_run(*dc, *l.w, dx.p, m, c.k, dy.p, ys, ws.p, ws.bytes, nullptr);
      W4A16_CUDA_TRY(cudaDeviceSynchronize());
      W4A16_CUDA_TRY(cudaMemcpy(y.data(), dy.p, dy.bytes, cudaMemcpyDeviceToHost));
      std::vector<double> yd = test::to_f64(y.data(), act, m, c.n, ys);
      std::vector<double> ref = test::gemm_f64(test::to_f64(x.data(), act, m, c.k, c.k), l.wd, l.b, m, c.n, c.k);
      EXPECT_LE(test::rel_error(yd, ref), test::tolerance(act)) << c.str();
      std::int64_t pad_touched = 0;
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t j = c.n; j < ys; ++j) pad_touched += y[static_cast<std::size_t>(r * ys + j)] != test::poison_bits(act);
      EXPECT_EQ(pad_touched, 0);
      expect_error(ErrorCode::invalid_argument,
                   [&] { dense_cache_run(*dc, *l.w, dx.p, m, c.k, dy.p, ys, ws.p, 1024, nullptr); }, "dense workspace");
    }
}

}  // namespace
}  // namespace w4a16::kernels::cuda
