// Benchmark rows of the prefill kernels: see prefill_rows.hpp.
#include "prefill_rows.hpp"

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common.cuh"
#include "gpu_timer.hpp"
#include "prefill/prefill.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"

namespace w4a16::bench {

namespace kc = w4a16::kernels::cuda;

namespace {

struct Dev {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit Dev(std::size_t b) : bytes(b) { W4A16_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(b, 256))); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

// Deterministic pseudo-random 16-bit floats in [-1, 1) (never zeros: PERF.md "never time on zeros").
__global__ void fill_kernel(std::uint16_t* p, std::size_t n, std::uint32_t seed, bool bf16) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float f = (static_cast<float>(h & 0xffffff) / 16777216.f) * 2.f - 1.f;
    if (bf16) {
      __nv_bfloat16 b = __float2bfloat16_rn(f);
      p[i] = *reinterpret_cast<std::uint16_t*>(&b);
    } else {
      half b = __float2half_rn(f);
      p[i] = *reinterpret_cast<std::uint16_t*>(&b);
    }
  }
}

void fill(void* p, std::size_t n, std::uint32_t seed, DType t) {
  fill_kernel<<<1024, 256>>>(static_cast<std::uint16_t*>(p), n, seed, t == DType::bf16);
  W4A16_CUDA_TRY(cudaGetLastError());
}

void cublas_try(cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(ErrorCode::cuda_error, "cuBLAS status " + std::to_string(static_cast<int>(s)));
}

double rel_err_dev(const void* a, const void* b, std::int64_t count, DType t) {
  std::vector<std::uint16_t> ha(static_cast<std::size_t>(count)), hb(ha.size());
  W4A16_CUDA_TRY(cudaMemcpy(ha.data(), a, ha.size() * 2, cudaMemcpyDeviceToHost));
  W4A16_CUDA_TRY(cudaMemcpy(hb.data(), b, hb.size() * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ha.size(); ++i) {
    const double x = f16x_to_float(t, ha[i]), y = f16x_to_float(t, hb[i]);
    if (!std::isfinite(x)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

std::string prefill_csv_header() {
  return "kernel,shape,N,K,M,dtype,format,group,plan,us,TB/s,pct_4.4TB/s,TFLOP/s,speedup_vs_cublas_f16,rel_err";
}

std::string prefill_csv_row(const PrefillRow& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s,%s,%lld,%lld,%lld,%s,%s,%d,%s,%.2f,%.3f,%.1f,%.1f,%.3f,%.2e", r.kernel.c_str(), r.shape.c_str(),
                static_cast<long long>(r.n), static_cast<long long>(r.k), static_cast<long long>(r.m),
                std::string(dtype_name(r.act)).c_str(), r.format.c_str(), r.group, r.plan.c_str(), r.us, r.tbps, 100 * r.tbps / 4.4,
                r.tflops, r.vs_cublas_f16, r.rel_err);
  return buf;
}

std::vector<PrefillRow> prefill_rows(const PrefillBenchSpec& spec, cudaStream_t stream) {
  std::vector<PrefillRow> rows;
  const std::int64_t n = spec.n, k = spec.k;
  std::int64_t max_m = 0;
  for (auto m : spec.ms) max_m = std::max(max_m, m);

  QuantSpec qs;
  qs.n = n;
  qs.k = k;
  qs.group_size = spec.group;
  qs.scalar = spec.scalar;
  QuantizedLinear q = test::random_linear(qs, spec.act, false, false);
  std::vector<std::unique_ptr<kc::TcWeights>> ws;
  ws.push_back(kc::tc_prepare(q.view(), spec.act, stream));
  const int copies = cold_l2_copies(ws[0]->bytes);
  for (int i = 1; i < copies; ++i) ws.push_back(kc::tc_clone(*ws[0], stream));
  auto dc = kc::dense_cache_prepare(*ws[0], stream);

  Dev x(static_cast<std::size_t>(max_m * k * 2)), y(static_cast<std::size_t>(max_m * n * 2)), yref(static_cast<std::size_t>(max_m * n * 2));
  fill(x.p, static_cast<std::size_t>(max_m * k), 12345u, spec.act);
  // The reduce-kernel bound: forced plans (tuning grids, the A/B's old path) may split where the
  // default plan would reduce in the cluster; the A/B's forced splits may exceed the bound's rows.
  std::size_t ws_bytes = std::max(kc::prefill_workspace_bytes(n, k, spec.group, false, max_m, kc::PrefillSplitReduce::kernel),
                                  kc::dense_cache_workspace_bytes(max_m));
  for (int split : spec.ab_splits) ws_bytes = std::max(ws_bytes, static_cast<std::size_t>(split * max_m * n * 4));
  Dev work(ws_bytes);

  // Peers: dense weights of each dtype, rotating copies for a cold L2.
  cublasHandle_t h;
  cublas_try(cublasCreate(&h));
  cublas_try(cublasSetStream(h, stream));
  cublas_try(cublasSetWorkspace(h, work.p, work.bytes));
  const std::size_t dense_bytes = static_cast<std::size_t>(n * k * 2);
  const int dcopies = cold_l2_copies(dense_bytes);
  std::vector<std::unique_ptr<Dev>> dense16, dense_bf;
  Dev xpeer(static_cast<std::size_t>(max_m * k * 2));
  if (spec.peers) {
    for (int i = 0; i < dcopies; ++i) {
      dense16.push_back(std::make_unique<Dev>(dense_bytes));
      fill(dense16.back()->p, dense_bytes / 2, 777u + i, DType::f16);
      if (!spec.peer_bf16) continue;
      dense_bf.push_back(std::make_unique<Dev>(dense_bytes));
      fill(dense_bf.back()->p, dense_bytes / 2, 999u + i, DType::bf16);
    }
  }
  W4A16_CUDA_TRY(cudaDeviceSynchronize());

  const std::string format = spec.scalar == ScalarType::uint4 ? "uint4" : "uint4b8";
  const double gsz = spec.group == kChannelwise ? 1.0 : static_cast<double>(k) / spec.group;
  const int cap = kc::device_capability(), sms = kc::device_sm_count();
  TimerOptions opt;

  for (std::int64_t m : spec.ms) {
    const double flops = 2.0 * m * n * k;
    const double int4_bytes = n * k / 2.0 + n * gsz * 2 + (spec.scalar == ScalarType::uint4 ? n * gsz / 2 : 0) + 2.0 * m * k + 2.0 * m * n;
    const double dense_b = 2.0 * n * k + 2.0 * m * k + 2.0 * m * n;
    double cublas16_us = 0;
    auto add = [&](const std::string& kernel, const std::string& plan, double us, double bytes, double err) {
      PrefillRow r;
      r.kernel = kernel;
      r.shape = spec.shape;
      r.format = kernel.rfind("cublas", 0) == 0 ? "dense" : format;
      r.plan = plan;
      r.n = n;
      r.k = k;
      r.m = m;
      r.act = spec.act;
      r.group = spec.group;
      r.us = us;
      r.tbps = bytes / (us * 1e-6) / 1e12;
      r.tflops = flops / (us * 1e-6) / 1e12;
      r.vs_cublas_f16 = cublas16_us > 0 ? cublas16_us / us : 0;
      r.rel_err = err;
      rows.push_back(r);
      std::fprintf(stderr, "%s\n", prefill_csv_row(r).c_str());
    };
    auto gemm = [&](const void* wd, DType t, void* out) {
      const float alpha = 1.f, beta = 0.f;
      const cudaDataType_t dt = t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
      cublas_try(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, wd, dt,
                              static_cast<int>(k), x.p, dt, static_cast<int>(k), &beta, out, dt, static_cast<int>(n),
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    // The peers' calls (copy i % dcopies) and a plan's (copy i % copies; null: the default plan), timed alone and
    // interleaved below.
    auto cublas_f16_call = [&](int i, cudaStream_t) { gemm(dense16[static_cast<std::size_t>(i % dcopies)]->p, DType::f16, y.p); };
    auto cublas_bf16_call = [&](int i, cudaStream_t) { gemm(dense_bf[static_cast<std::size_t>(i % dcopies)]->p, DType::bf16, y.p); };
    auto plan_call = [&](const kc::PrefillPlan* plan) {
      return [&, plan](int i, cudaStream_t s) {
        const kc::TcWeights& w = *ws[static_cast<std::size_t>(i % copies)];
        if (plan)
          kc::prefill_run_plan(w, *plan, x.p, m, k, y.p, n, work.p, work.bytes, s);
        else
          kc::prefill_run(w, x.p, m, k, y.p, n, work.p, work.bytes, s);
      };
    };
    const auto default_call = plan_call(nullptr);
    // A row split's call (r copied: the caller's split may change after).
    auto row_split_call = [&](const kc::PrefillRowSplit& r) {
      return [&, r](int i, cudaStream_t s) {
        kc::prefill_run_row_split(*ws[static_cast<std::size_t>(i % copies)], r, x.p, m, k, y.p, n, work.p, work.bytes, s);
      };
    };
    // One call of copy 0 on a poisoned output, checked against the reference (rel_err).
    auto checked_err = [&](const std::function<void(int, cudaStream_t)>& call) {
      W4A16_CUDA_TRY(cudaMemset(y.p, 0xff, y.bytes));
      call(0, stream);
      W4A16_CUDA_TRY(cudaStreamSynchronize(stream));
      return rel_err_dev(y.p, yref.p, m * n, spec.act);
    };
    // W4A16_TIMER_CLOCK=1: the SM clock around each row's replays (gpu_timer's probe), to stderr beside the CSV.
    auto clock_note = [&](const std::string& row, const Timing& t) {
      if (t.clock_after_mhz > 0)
        std::fprintf(stderr, "clock %s M=%lld %s: before %.0f MHz, after %.0f MHz, %.2f us\n", spec.shape.c_str(),
                     static_cast<long long>(m), row.c_str(), t.clock_before_mhz, t.clock_after_mhz, t.median_us);
    };
    if (spec.peers) {
      // The peers run on the same x bits reinterpreted per dtype; values are finite in both.
      opt.copies = dcopies;
      const Timing tc = time_graph(cublas_f16_call, opt, stream);
      clock_note("cublas_f16", tc);
      cublas16_us = tc.median_us;
      add("cublas_f16", "", cublas16_us, dense_b, 0);
      if (spec.peer_bf16) add("cublas_bf16", "", time_graph(cublas_bf16_call, opt, stream).median_us, dense_b, 0);
    }
    // Reference output of these weights: the dense cache (cuBLAS on the dequantized copy).
    kc::dense_cache_run(*dc, *ws[0], x.p, m, k, yref.p, n, work.p, work.bytes, stream);
    W4A16_CUDA_TRY(cudaStreamSynchronize(stream));
    if (spec.time_dense_cache) {
      opt.copies = 1;  // the dense cache is one copy per layer (>= 3x L2 for the shapes of interest)
      const double dc_us =
          time_graph([&](int, cudaStream_t s) { kc::dense_cache_run(*dc, *ws[0], x.p, m, k, y.p, n, work.p, work.bytes, s); }, opt, stream).median_us;
      add("dense_cache", "", dc_us, dense_b, 0);
    }

    // A forced plan's text with the reduce mode its run takes: a split left automatic goes to the cluster or the reduce
    // kernel by the estimates on this device (stop 71: a tune row of 1.14x read as the cluster entry it was not).
    auto plan_text = [&](const kc::PrefillPlan& p) {
      std::string s = p.describe();
      if (p.split > 1 && p.reduce == kc::PrefillSplitReduce::automatic)
        s += kc::prefill_plan_uses_cluster(*ws[0], p, m) ? " reduce=auto:cluster" : " reduce=auto:kernel";
      return s;
    };
    auto run_int4 = [&](const std::string& name, const kc::PrefillPlan* plan) {
      const auto call = plan_call(plan);
      const double err = checked_err(call);
      opt.copies = copies;
      const Timing t = time_graph(call, opt, stream);
      clock_note(name, t);
      add(name, plan ? plan_text(*plan) : kc::prefill_default_describe(n, k, m, cap, sms), t.median_us, int4_bytes, err);
    };
    if (spec.default_plan) run_int4("cuda_prefill", nullptr);
    struct TimedRowSplit { std::string name, plan; std::function<void(int, cudaStream_t)> call; };
    std::vector<TimedRowSplit> row_splits;  // each timed row split, interleaved below too
    if (!spec.row_split_tails.empty()) {
      kc::PrefillRowSplit rs;
      rs.head_plan.config = spec.row_split_head >= 0 ? spec.row_split_head : kc::prefill_plan(n, k, m, cap, sms).config;
      rs.rows = spec.row_split_rows > 0 ? spec.row_split_rows : kc::prefill_full_wave_rows(n, m, rs.head_plan.config, sms);
      const int head_sched = kc::prefill_config(rs.head_plan.config).sched;
      for (const auto& [listed, split] : spec.row_split_tails) {
        // A tail listed in the measured order (SCHED 0) runs in the head's k-loop order where that twin is compiled, as
        // prefill_row_split takes a kMeasuredRowSplits entry (stop 53's call 7 timed config 12 itself, 1.2x slower).
        const int twin = kc::prefill_config(listed).sched == 0 ? kc::prefill_sched_twin(listed, head_sched) : -1;
        const int c = twin >= 0 ? twin : listed;
        if (rs.rows <= 0 || rs.rows >= ws[0]->n_pad || rs.rows % kc::prefill_config(c).bn() != 0) continue;
        rs.tail_plan = kc::PrefillPlan{};
        rs.tail_plan.config = c;
        rs.tail_plan.split = split;
        rs.tail_plan.k_tiles_per_split = (ws[0]->k_pad / 64 + split - 1) / split;
        if (kc::prefill_plan_workspace_bytes(*ws[0], rs.tail_plan, m) > work.bytes) continue;
        const auto call = row_split_call(rs);
        const double err = checked_err(call);
        opt.copies = copies;
        const std::string name = "cuda_prefill_rowsplit:" + kc::prefill_config(c).name() + ":s" + std::to_string(split);
        add(name, rs.describe(), time_graph(call, opt, stream).median_us, int4_bytes, err);
        row_splits.push_back({name, rs.describe(), call});
      }
    }
    if (!spec.sched_ab.empty()) {
      const kc::PrefillPlan def = kc::prefill_plan(n, k, m, cap, sms);
      for (int sched : spec.sched_ab) {
        const int twin = kc::prefill_sched_twin(def.config, sched);
        if (twin < 0) continue;  // no such twin of this tile compiled
        kc::PrefillPlan p = def;
        p.config = twin;
        run_int4("cuda_prefill_sched" + std::to_string(sched), &p);
        // The same tile and order without the CTA barrier (x path tma_eb), where compiled.
        const kc::PrefillConfig& tw = kc::prefill_config(twin);
        for (int c = 0; c < kc::prefill_config_count(); ++c) {
          const kc::PrefillConfig& o = kc::prefill_config(c);
          if (o.x_load != kc::PrefillXLoad::tma_eb || o.sched != sched || o.bm != tw.bm || o.wg != tw.wg || o.mb != tw.mb ||
              o.stages != tw.stages || o.min_blocks != tw.min_blocks)
            continue;
          p.config = c;
          run_int4("cuda_prefill_sched" + std::to_string(sched) + "_eb", &p);
        }
      }
      run_int4("cuda_prefill_again", nullptr);
    }
    if (spec.reduce_ab) {
      struct Variant { const char* name; kc::PrefillSplitReduce reduce; int pdl; };
      const Variant variants[] = {{"ab_old", kc::PrefillSplitReduce::kernel, 0},
                                  {"ab_pdl", kc::PrefillSplitReduce::kernel, 1},
                                  {"ab_cluster", kc::PrefillSplitReduce::cluster, 0},
                                  {"ab_both", kc::PrefillSplitReduce::cluster, 1}};
      const kc::PrefillPlan def = kc::prefill_plan(n, k, m, cap, sms);
      const std::int64_t k_tiles = ws[0]->k_pad / 64;
      std::vector<std::int64_t> done;  // effective forced splits already timed
      std::vector<int> splits = {0};  // 0: the plan's own split
      splits.insert(splits.end(), spec.ab_splits.begin(), spec.ab_splits.end());
      for (int split : splits) {
        kc::PrefillPlan p = def;
        std::string suffix;
        if (split > 0) {
          const std::int64_t kts = (k_tiles + split - 1) / split, eff = (k_tiles + kts - 1) / kts;
          if (std::find(done.begin(), done.end(), eff) != done.end()) continue;
          done.push_back(eff);
          p.split = static_cast<int>(eff);
          p.k_tiles_per_split = kts;
          suffix = ":s" + std::to_string(eff);
        }
        for (const Variant& v : variants) {
          p.reduce = v.reduce;
          p.pdl = v.pdl;
          if (kc::prefill_plan_workspace_bytes(*ws[0], p, m) > work.bytes) continue;
          run_int4(std::string(v.name) + suffix, &p);
        }
      }
    }
    if (spec.old_plan) {
      const kc::PrefillPlan p = kc::prefill_plan(n, k, m, cap, sms, kc::PrefillXLoad::cp_async);
      run_int4("cuda_prefill_cp_async_plan", &p);
    }
    for (int c : spec.forced) {
      if (kc::prefill_config(c).path != kc::prefill_config(kc::prefill_plan(n, k, m, cap, sms).config).path) continue;
      const kc::PrefillPlan p = kc::prefill_plan_for_config(n, k, m, c, sms);
      run_int4("cuda_prefill:" + kc::prefill_config(c).name() + ":s" + std::to_string(p.split), &p);
    }
    // The tuning grid: every config of tune_configs at each distinct effective split of tune_splits the workspace holds.
    std::vector<kc::PrefillPlan> tune_plans;
    for (int c : spec.tune_configs) {
      std::vector<std::int64_t> done;  // effective splits already listed for this config
      const std::int64_t k_tiles = ws[0]->k_pad / 64;
      for (int split : spec.tune_splits) {
        const std::int64_t kts = (k_tiles + split - 1) / split, eff = (k_tiles + kts - 1) / kts;
        if (std::find(done.begin(), done.end(), eff) != done.end()) continue;
        kc::PrefillPlan p;
        p.config = c;
        p.split = static_cast<int>(eff);
        p.k_tiles_per_split = kts;
        if (kc::prefill_plan_workspace_bytes(*ws[0], p, m) > work.bytes) continue;
        done.push_back(eff);
        tune_plans.push_back(p);
      }
    }
    auto tune_name = [](const kc::PrefillPlan& p) {
      return "cuda_prefill:" + kc::prefill_config(p.config).name() + ":s" + std::to_string(p.split);
    };
    for (const kc::PrefillPlan& p : tune_plans) run_int4(tune_name(p), &p);
    // Side by side (spec.interleave): cuBLAS, the default plan and every tune plan, replays alternating so that the
    // clock and thermal drift of a power-capped GPU falls on all alike (stop 54: sequential rows of one kernel 10% apart).
    if (spec.interleave > 0 && spec.peers) {
      std::vector<std::function<void(int, cudaStream_t)>> fns;
      std::vector<TimerOptions> opts;
      std::vector<std::pair<std::string, std::string>> names;  // row name, plan
      auto member = [&](std::function<void(int, cudaStream_t)> fn, int c, std::string name, std::string plan) {
        fns.push_back(std::move(fn));
        opts.push_back(opt);
        opts.back().copies = c;
        names.emplace_back(std::move(name), std::move(plan));
      };
      member(cublas_f16_call, dcopies, "cublas_f16_il", "");
      if (spec.peer_bf16) member(cublas_bf16_call, dcopies, "cublas_bf16_il", "");
      member(default_call, copies, "cuda_prefill_il", kc::prefill_default_describe(n, k, m, cap, sms));
      for (const std::string& kv : spec.interleave_env) {  // the default plan under a launch-time knob
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument("interleave_env: expected NAME=VALUE, got '" + kv + "'");
        const std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
        member([&, name, value](int i, cudaStream_t st) {
          const char* old = std::getenv(name.c_str());
          const std::string saved = old ? old : "";
          const bool had = old != nullptr;
          setenv(name.c_str(), value.c_str(), 1);
          default_call(i, st);
          if (had) setenv(name.c_str(), saved.c_str(), 1);
          else unsetenv(name.c_str());
        }, copies, "cuda_prefill_il:" + kv, kc::prefill_default_describe(n, k, m, cap, sms));
      }
      for (const kc::PrefillPlan& p : tune_plans)  // tune_plans outlives the timing: the members hold pointers
        member(plan_call(&p), copies, tune_name(p) + "_il", plan_text(p));
      for (const TimedRowSplit& r : row_splits) member(r.call, copies, r.name + "_il", r.plan);
      const std::vector<Timing> t = time_graphs_interleaved(fns, opts, spec.interleave, 10, stream);
      // Each int4 member checked again after all the replays, on a poisoned output: whatever state its launches leave
      // in the workspace (the split tail's arrival counts) must leave the next call right.
      std::vector<double> errs(t.size(), 0.0);
      for (std::size_t i = 0; i < t.size(); ++i)
        if (names[i].first.rfind("cublas", 0) != 0) errs[i] = checked_err(fns[i]);
      const double saved = cublas16_us;
      cublas16_us = t[0].median_us;
      for (std::size_t i = 0; i < t.size(); ++i) clock_note(names[i].first, t[i]);
      for (std::size_t i = 0; i < t.size(); ++i)
        add(names[i].first, names[i].second, t[i].median_us, names[i].first.rfind("cublas", 0) == 0 ? dense_b : int4_bytes, errs[i]);
      cublas16_us = saved;
    }
    // The tune's default plan again after the forced tiles: the first int4 row of a point read 0-9% slower than the
    // same plan forced later in the process (stop 27, call 5), so tune_best.py compares the tiles with the faster of the two.
    if (!spec.tune_configs.empty() && spec.default_plan) run_int4("cuda_prefill_again", nullptr);
    if (spec.all_configs && m <= 256) {  // M >= 1024 always takes the big tiles; keeps the sweep short
      const kc::PrefillPlan def = kc::prefill_plan(n, k, m, cap, sms);
      for (int c = 0; c < kc::prefill_config_count(); ++c) {
        if (kc::prefill_config(c).path != kc::prefill_config(def.config).path) continue;
        for (int split : {1, 2, 4}) {
          if (split > 1 && split * m > kc::kPrefillMaxSplitRows) continue;
          kc::PrefillPlan p;
          p.config = c;
          p.split = split;
          p.k_tiles_per_split = (k + 63) / 64 / split;
          run_int4("cuda_prefill:" + kc::prefill_config(c).name() + ":s" + std::to_string(split), &p);
        }
      }
    }
  }
  cublasDestroy(h);
  return rows;
}

namespace {

// prefill_run with its default plan on `copies` rotating TcWeights.
class PrefillBenchKernel : public BenchKernel {
 public:
  explicit PrefillBenchKernel(bool dense) : dense_cache_(dense) {}
  std::string name() const override { return dense_cache_ ? "dense_cache" : "cuda_prefill"; }
  void prepare(const BenchCase& c, const QuantizedLinear* q, int copies, cudaStream_t s) override {
    release();
    case_ = c;
    for (int i = 0; i < std::max(copies, 1); ++i) {
      w_.push_back(i == 0 ? kc::tc_prepare(q->view(), c.act, s) : kc::tc_clone(*w_[0], s));
      if (dense_cache_) dc_.push_back(kc::dense_cache_prepare(*w_.back(), s));
    }
    // The prefill workspace bound holds for every M (split-K partials are capped, no act-order here).
    const std::size_t bytes = dense_cache_ ? kc::dense_cache_workspace_bytes(0)
                                           : kc::prefill_workspace_bytes(c.n, c.k, c.group, q->act_order(), 1 << 16);
    work_ = std::make_unique<Dev>(bytes);
  }
  void run(int copy, const void* x, std::int64_t m, void* y, cudaStream_t s) override {
    const std::size_t i = static_cast<std::size_t>(copy) % w_.size();
    if (dense_cache_)
      kc::dense_cache_run(*dc_[i], *w_[i], x, m, case_.k, y, case_.n, work_->p, work_->bytes, s);
    else
      kc::prefill_run(*w_[i], x, m, case_.k, y, case_.n, work_->p, work_->bytes, s);
  }
  std::string plan(std::int64_t m) const override {
    if (dense_cache_) return "cublasGemmEx on a dequantized copy";
    return kc::prefill_default_describe(case_.n, case_.k, m, kc::device_capability(), kc::device_sm_count());
  }
  void release() override {
    dc_.clear();
    w_.clear();
    work_.reset();
  }

 private:
  bool dense_cache_;
  BenchCase case_;
  std::vector<std::unique_ptr<kc::TcWeights>> w_;
  std::vector<std::unique_ptr<kc::DenseCache>> dc_;
  std::unique_ptr<Dev> work_;
};

}  // namespace

std::vector<std::unique_ptr<BenchKernel>> make_prefill_bench_kernels() {
  std::vector<std::unique_ptr<BenchKernel>> v;
  v.push_back(std::make_unique<PrefillBenchKernel>(false));
  v.push_back(std::make_unique<PrefillBenchKernel>(true));
  return v;
}

}  // namespace w4a16::bench
