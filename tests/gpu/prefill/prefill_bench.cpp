// Stand-alone prefill benchmark (the shared sweep, bench/gpu --prefill, has the PERF.md table):
// int4 prefill vs cuBLAS fp16/bf16 vs the dense cache, in one process, with the shared timer.
// Usage: prefill_bench <out.csv> [quick|tune|full|large|tma|tune_tma|reduce_ab|sched_ab|profile]
//   tune_tma: every TMA tile in the plan's k-loop order (tune_tma_configs; W4A16_PREFILL_TUNE_CONFIGS
//   lists others) x splits 1..8 on every shape below llama70b at M = 8, 16, 32, 64, 128, 256, 1024,
//   fp16 uint4b8 g=128, cuBLAS fp16 in the same run (the prefill plan's data); W4A16_PREFILL_TUNE_MS
//   lists other token counts, W4A16_PREFILL_TUNE_SHAPES other shapes (names, llama70b.gate_up allowed, or
//   name:N:K for a layer outside the list), W4A16_PREFILL_TUNE_SPLITS the splits (default 1..8).
//   W4A16_PREFILL_ROWSPLIT_TAILS=config:split,... adds row splits (prefill_run_row_split; PrefillBenchSpec's
//   row_split_*): the head W4A16_PREFILL_ROWSPLIT_HEAD (a config; unset: the default plan's) at split 1 over its
//   full waves' rows (or W4A16_PREFILL_ROWSPLIT_ROWS rows), the rest with each tail (a measured-order config
//   such as 12 runs as its twin in the head's k-loop order, as the library's measured row splits run); with
//   W4A16_PREFILL_INTERLEAVE each row split also joins the interleaved members (rows cuda_prefill_rowsplit:*_il).
//   W4A16_PREFILL_TUNE_DTYPE=bf16 times bf16 activations (cuBLAS bf16 beside fp16) instead of fp16.
//   W4A16_PREFILL_INTERLEAVE=R adds cuBLAS fp16 / bf16 and the default plan timed side by side, R rounds of one
//   replay each (rows *_il: gpu_timer's time_graphs_interleaved), against clock and thermal drift between rows;
//   W4A16_PREFILL_INTERLEAVE_ENV="NAME=VALUE;..." adds the default plan under each setting of a launch-time knob.
//   Every int4 *_il row is checked again after its replays, on a poisoned output (its rel_err).
//   Splits are reduced as W4A16_PREFILL_SPLIT_REDUCE says (unset: in the cluster), so the run
//   with =kernel and the one without give the data of each reduce mode's split constants.
//   reduce_ab: split-K in the cluster vs the reduce kernel, x PDL on / off, in one process:
//   fp16 uint4b8 g=128 on the four Qwen2.5-0.5B shapes, llama8b.o, llama8b.down and 8192x8192 at
//   M = 32, 64, 128, 256, 1024: cuBLAS fp16, then the default plan as ab_old (reduce kernel, no
//   PDL), ab_pdl, ab_cluster, ab_both; on qwen0.5b.qkv and llama8b.o also splits 1/2/4/8 forced.
//   quick: 3 shapes fp16; tune: every forced config on those 3 shapes (M <= 256 with splits 1/2/4,
//   M = 1024 / 4096 with split 1; large: only the latter); full: all shapes, fp16 + bf16, formats.
//   tma: x by TMA vs cp.async in one process: 8192x8192, llama8b.gate_up, llama8b.qkv at
//   M = 64, 256, 1024, 4096, fp16 uint4b8 g=128: cuBLAS fp16, the default plan (TMA), the
//   cp.async plan of 2026-12-02, and on 8192x8192 only every non-cp.async config forced with its
//   own split (the llama8b rows were measured forced on 2026-12-02 run 1); then
//   8192x8192 at M = 1024 / 4096 in bf16 uint4b8 and fp16 uint4: default vs cp.async plan.
//   sched_ab: the k-loop order A/B (early issue, PrefillConfig::sched): 8192x8192, llama8b.gate_up,
//   llama8b.down, llama8b.qkv, llama70b.gate_up (in this order) at M = 256 (not llama70b), 1024, 4096;
//   per shape fp16 uint4b8, bf16 uint4b8, fp16 uint4, bf16 uint4 (g=128); per point cuBLAS fp16 (and bf16),
//   the default plan, its tile and split with SCHED 1 and 2 (and their tma_eb twins, bm256 only),
//   the default plan again, the 192 x 192 tile (3 warpgroups, SCHED 1) forced with the split rule;
//   every int4
//   row checked against the dense-cache output (rel_err). Rows are flushed per shape, so a run cut
//   by its timeout keeps what it measured.
//   profile: 8192x8192 M = 4096 fp16 uint4b8, one launch each of the cp.async plan, the default
//   plan and the bm256 tma_eb / nofence configs (for ncu -k regex:prefill_kernel); with
//   W4A16_PREFILL_PROFILE_M=<M> and / or W4A16_PREFILL_PROFILE_NK=<N>,<K> the default plan alone at
//   that M and shape.
// W4A16_PREFILL_SKIP_XLOAD=tma,tma_eb leaves configs with those x paths out of tma / profile (and
// the default plan when it is one of them): a device run whose TMA test hung still measures the rest.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common.cuh"
#include "gpu_timer.hpp"
#include "prefill/prefill.hpp"
#include "prefill_rows.hpp"
#include "tc/tc_weights.hpp"
#include "testutil.hpp"

using namespace w4a16;
namespace kc = w4a16::kernels::cuda;

namespace {

bool skipped_x_load(kc::PrefillXLoad x) {
  const char* env = std::getenv("W4A16_PREFILL_SKIP_XLOAD");
  if (env == nullptr) return false;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + kc::prefill_x_load_name(x) + ",") != std::string::npos;
}

// One launch per config of interest (8192x8192 M = 4096 unless the knobs below say otherwise), for a
// profiler; prints what ran.
void profile_launches(cudaStream_t s) {
  // W4A16_PREFILL_PROFILE_M: another M (the default plan alone, e.g. the mid-M tiles at 64 / 128);
  // W4A16_PREFILL_PROFILE_NK="N,K": another shape (default 8192,8192).
  const char* m_env = std::getenv("W4A16_PREFILL_PROFILE_M");
  const char* nk_env = std::getenv("W4A16_PREFILL_PROFILE_NK");
  std::int64_t n = 8192, k = 8192;
  if (nk_env != nullptr && *nk_env != '\0') {
    long long nn = 0, kk = 0;
    if (std::sscanf(nk_env, "%lld,%lld", &nn, &kk) != 2 || nn < 1 || kk < 8 || kk % 8 != 0)
      throw std::invalid_argument(std::string("W4A16_PREFILL_PROFILE_NK: expected \"N,K\" (N >= 1, K a multiple of 8), got ") + nk_env);
    n = nn;
    k = kk;
  }
  const std::int64_t m = m_env != nullptr && *m_env != '\0' ? std::atoll(m_env) : 4096;
  if (m < 1) throw std::invalid_argument(std::string("W4A16_PREFILL_PROFILE_M: expected an M >= 1, got ") + m_env);
  QuantSpec qs;
  qs.n = n;
  qs.k = k;
  qs.group_size = 128;
  qs.scalar = ScalarType::uint4b8;
  QuantizedLinear q = test::random_linear(qs, DType::f16, false, false);
  auto w = kc::tc_prepare(q.view(), DType::f16, s);
  const std::vector<std::uint16_t> xh = test::random_act(m, k, DType::f16);
  void *x = nullptr, *y = nullptr, *work = nullptr;
  const std::size_t wbytes = kc::prefill_workspace_bytes(n, k, 128, false, m);
  W4A16_CUDA_TRY(cudaMalloc(&x, xh.size() * 2));
  W4A16_CUDA_TRY(cudaMalloc(&y, static_cast<std::size_t>(m * n * 2)));
  W4A16_CUDA_TRY(cudaMalloc(&work, wbytes));
  W4A16_CUDA_TRY(cudaMemcpy(x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice));
  const int cap = kc::device_capability(), sms = kc::device_sm_count();
  std::vector<kc::PrefillPlan> plans = {kc::prefill_plan(n, k, m, cap, sms)};
  const bool square = n == 8192 && k == 8192;  // the A/B launches of 2026-12-02 (8192x8192 M = 4096 only)
  if (m == 4096 && square) plans.insert(plans.begin(), kc::prefill_plan(n, k, m, cap, sms, kc::PrefillXLoad::cp_async));
  for (int c = 0; c < kc::prefill_config_count() && m == 4096 && square; ++c) {
    const kc::PrefillConfig& cfg = kc::prefill_config(c);
    if (cfg.path == kc::PrefillPath::wgmma && cfg.bm == 256 && cfg.overlap &&
        (cfg.x_load == kc::PrefillXLoad::tma_eb || cfg.x_load == kc::PrefillXLoad::cp_async_nofence))
      plans.push_back(kc::prefill_plan_for_config(n, k, m, c, sms));
  }
  for (const kc::PrefillPlan& p : plans) {
    if (skipped_x_load(kc::prefill_config(p.config).x_load)) continue;
    std::printf("profile launch: %s\n", p.describe().c_str());
    std::fflush(stdout);
    kc::prefill_run_plan(*w, p, x, m, k, y, n, work, wbytes, s);
    W4A16_CUDA_TRY(cudaStreamSynchronize(s));
  }
  cudaFree(x);
  cudaFree(y);
  cudaFree(work);
}

// Every wgmma config forced (split 1) at M = 1024 and 4096, fp16 uint4b8 g=128, on rotating weight
// copies (cold L2); prefill_rows forces configs only up to M = 256. rel_err: vs the dense cache.
void tune_large_m(FILE* f, cudaStream_t s) {
  struct Shape { const char* name; std::int64_t n, k; };
  const Shape shapes[] = {{"llama8b.qkv", 6144, 4096}, {"llama8b.gate_up", 28672, 4096}, {"8192x8192", 8192, 8192}};
  const int cap = kc::device_capability();
  for (const Shape& sh : shapes) {
    QuantSpec qs;
    qs.n = sh.n;
    qs.k = sh.k;
    qs.group_size = 128;
    qs.scalar = ScalarType::uint4b8;
    QuantizedLinear q = test::random_linear(qs, DType::f16, false, false);
    std::vector<std::unique_ptr<kc::TcWeights>> ws;
    ws.push_back(kc::tc_prepare(q.view(), DType::f16, s));
    const int copies = bench::cold_l2_copies(ws[0]->bytes);
    for (int i = 1; i < copies; ++i) ws.push_back(kc::tc_clone(*ws[0], s));
    auto dc = kc::dense_cache_prepare(*ws[0], s);
    const std::int64_t max_m = 4096;
    const std::vector<std::uint16_t> xh = test::random_act(max_m, sh.k, DType::f16);
    void *x = nullptr, *y = nullptr, *yref = nullptr, *work = nullptr;
    const std::size_t wbytes = std::max(kc::prefill_workspace_bytes(sh.n, sh.k, 128, false, max_m), kc::dense_cache_workspace_bytes(max_m));
    W4A16_CUDA_TRY(cudaMalloc(&x, xh.size() * 2));
    W4A16_CUDA_TRY(cudaMalloc(&y, static_cast<std::size_t>(max_m * sh.n * 2)));
    W4A16_CUDA_TRY(cudaMalloc(&yref, static_cast<std::size_t>(max_m * sh.n * 2)));
    W4A16_CUDA_TRY(cudaMalloc(&work, wbytes));
    W4A16_CUDA_TRY(cudaMemcpy(x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice));
    for (std::int64_t m : {1024, 4096}) {
      kc::dense_cache_run(*dc, *ws[0], x, m, sh.k, yref, sh.n, work, wbytes, s);
      std::vector<std::uint16_t> ref(static_cast<std::size_t>(m * sh.n)), out(ref.size());
      W4A16_CUDA_TRY(cudaMemcpyAsync(ref.data(), yref, ref.size() * 2, cudaMemcpyDeviceToHost, s));
      W4A16_CUDA_TRY(cudaStreamSynchronize(s));
      for (int c = 0; c < kc::prefill_config_count(); ++c) {
        const kc::PrefillConfig& cfg = kc::prefill_config(c);
        if (cfg.path != kc::PrefillPath::wgmma || cap != 90) continue;
        kc::PrefillPlan p;
        p.config = c;
        p.split = 1;
        auto call = [&](int i, cudaStream_t st) {
          kc::prefill_run_plan(*ws[static_cast<std::size_t>(i % copies)], p, x, m, sh.k, y, sh.n, work, wbytes, st);
        };
        call(0, s);
        W4A16_CUDA_TRY(cudaMemcpyAsync(out.data(), y, out.size() * 2, cudaMemcpyDeviceToHost, s));
        W4A16_CUDA_TRY(cudaStreamSynchronize(s));
        double num = 0, den = 0;
        for (std::size_t i = 0; i < out.size(); i += 7) {
          const double a = f16x_to_float(DType::f16, out[i]), b = f16x_to_float(DType::f16, ref[i]);
          num += (a - b) * (a - b);
          den += b * b;
        }
        bench::TimerOptions opt;
        opt.copies = copies;
        bench::PrefillRow r;
        r.kernel = "cuda_prefill:" + cfg.name() + ":s1";
        r.shape = sh.name;
        r.format = "uint4b8";
        r.plan = p.describe();
        r.n = sh.n;
        r.k = sh.k;
        r.m = m;
        r.us = bench::time_graph(call, opt, s).median_us;
        r.tflops = 2.0 * m * sh.n * sh.k / (r.us * 1e-6) / 1e12;
        r.rel_err = std::isfinite(num) && den > 0 ? std::sqrt(num / den) : INFINITY;
        std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
        std::fprintf(stderr, "%s\n", bench::prefill_csv_row(r).c_str());
        std::fflush(f);
      }
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(yref);
    cudaFree(work);
  }
}

}  // namespace

// The comma-separated items of environment variable `name` (none where it is unset or empty).
std::vector<std::string> env_items(const char* name, char sep = ',') {
  std::vector<std::string> v;
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return v;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, sep);) v.push_back(item);
  return v;
}

// One item of env_items(name) as an integer >= lo; anything else throws naming the variable.
long long env_int(const char* name, const std::string& item, long long lo, const char* expected) {
  std::size_t used = 0;
  long long v = lo - 1;
  try {
    v = std::stoll(item, &used);
  } catch (const std::exception&) {
  }
  if (used == 0 || used != item.size() || v < lo)
    throw std::invalid_argument(std::string(name) + ": expected " + expected + " separated by commas, got '" + std::getenv(name) + "'");
  return v;
}

// The tiles tune_tma measures: every TMA config in the k-loop order the plan runs (the early-issue
// twin, SCHED 1, where the tile has one; the tile itself where it has none), or the config indices
// listed in W4A16_PREFILL_TUNE_CONFIGS (comma-separated).
std::vector<int> tune_tma_configs() {
  std::vector<int> v;
  for (const std::string& item : env_items("W4A16_PREFILL_TUNE_CONFIGS")) {
    const int c = static_cast<int>(env_int("W4A16_PREFILL_TUNE_CONFIGS", item, 0, "config indices"));
    kc::prefill_config(c);  // range check: throws naming the index
    v.push_back(c);
  }
  if (!v.empty()) return v;
  for (int c = 0; c < kc::prefill_config_count(); ++c) {
    const kc::PrefillConfig& cfg = kc::prefill_config(c);
    if (cfg.x_load != kc::PrefillXLoad::tma) continue;
    if (cfg.sched == 1 || (cfg.sched == 0 && kc::prefill_sched_twin(c, 1) < 0)) v.push_back(c);
  }
  return v;
}

// W4A16_PREFILL_TUNE_MS: the token counts tune_tma times instead of its own (comma-separated, each
// >= 1; e.g. points between the measured ones, to check the plan where it was not fitted). Empty: unset.
std::vector<std::int64_t> tune_ms() {
  std::vector<std::int64_t> v;
  for (const std::string& item : env_items("W4A16_PREFILL_TUNE_MS"))
    v.push_back(env_int("W4A16_PREFILL_TUNE_MS", item, 1, "token counts >= 1"));
  return v;
}

// A shape at M = 32..1024 (tune_tma adds 8 and 16), int4 rows only (no bf16 peer, no dense cache): the tuning and A/B modes.
template <class Shape>
bench::PrefillBenchSpec mid_m_spec(const Shape& sh) {
  bench::PrefillBenchSpec spec;
  spec.shape = sh.name;
  spec.n = sh.n;
  spec.k = sh.k;
  spec.ms = {32, 64, 128, 256, 1024};
  spec.peer_bf16 = false;
  spec.time_dense_cache = false;
  return spec;
}

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : "prefill_bench.csv";
  const std::string mode = argc > 2 ? argv[2] : "full";
  FILE* f = std::fopen(out, "w");
  if (!f) return 2;
  std::fprintf(f, "%s\n", bench::prefill_csv_header().c_str());
  cudaStream_t s;
  W4A16_CUDA_TRY(cudaStreamCreate(&s));
  struct Shape { const char* name; std::int64_t n, k; bool tune; };
  const Shape shapes[] = {{"qwen0.5b.qkv", 1152, 896, false},   {"qwen0.5b.o", 896, 896, false},
                          {"qwen0.5b.gate_up", 9728, 896, false}, {"qwen0.5b.down", 896, 4864, false},
                          {"llama8b.qkv", 6144, 4096, true},    {"llama8b.o", 4096, 4096, false},
                          {"llama8b.gate_up", 28672, 4096, true}, {"llama8b.down", 4096, 14336, false},
                          {"8192x8192", 8192, 8192, true},      {"llama70b.gate_up", 57344, 8192, false}};
  if (mode == "tune" || mode == "large") tune_large_m(f, s);
  if (mode == "profile") {
    profile_launches(s);
    std::fclose(f);
    return 0;
  }
  if (mode == "tune_tma") {  // the TMA tiles of the plan x splits on every shape below llama70b (plan tuning)
    // W4A16_PREFILL_TUNE_SHAPES: the shapes to time instead of these (names below, llama70b.gate_up allowed).
    // An item name:N:K times a layer outside the list (e.g. q7b.qkv:4608:3584), after the listed shapes.
    const std::vector<std::string> only = env_items("W4A16_PREFILL_TUNE_SHAPES");
    std::vector<std::string> custom_names;
    std::vector<Shape> todo;
    for (const std::string& name : only) {
      if (const std::size_t c1 = name.find(':'); c1 != std::string::npos) {
        const std::size_t c2 = name.find(':', c1 + 1);
        if (c2 == std::string::npos) throw std::invalid_argument("W4A16_PREFILL_TUNE_SHAPES: expected name:N:K, got '" + name + "'");
        custom_names.push_back(name.substr(0, c1));
        todo.push_back({nullptr, std::stoll(name.substr(c1 + 1, c2 - c1 - 1)), std::stoll(name.substr(c2 + 1)), false});
        continue;
      }
      if (std::none_of(std::begin(shapes), std::end(shapes), [&](const Shape& sh) { return name == sh.name; }))
        throw std::invalid_argument("W4A16_PREFILL_TUNE_SHAPES: no shape named '" + name + "'");
    }
    for (std::size_t i = 0; i < todo.size(); ++i) todo[i].name = custom_names[i].c_str();
    std::vector<Shape> listed;
    for (const Shape& sh : shapes) {
      if (only.empty() ? sh.n == 57344 : std::find(only.begin(), only.end(), sh.name) == only.end()) continue;
      listed.push_back(sh);
    }
    listed.insert(listed.end(), todo.begin(), todo.end());
    for (const Shape& sh : listed) {
      bench::PrefillBenchSpec spec = mid_m_spec(sh);
      spec.ms.insert(spec.ms.begin(), {8, 16});  // where the hybrid runs the prefill path on small layers (stop 22)
      if (const std::vector<std::int64_t> ms = tune_ms(); !ms.empty()) spec.ms = ms;
      spec.tune_configs = tune_tma_configs();
      spec.tune_splits = {1, 2, 3, 4, 5, 6, 7, 8};  // every split the plan may pick (5 / 7 since stop 22)
      if (const std::vector<std::string> sp = env_items("W4A16_PREFILL_TUNE_SPLITS"); !sp.empty()) {  // fewer, to save time
        spec.tune_splits.clear();
        for (const std::string& item : sp) spec.tune_splits.push_back(static_cast<int>(env_int("W4A16_PREFILL_TUNE_SPLITS", item, 1, "splits 1..8")));
      }
      for (const std::string& item : env_items("W4A16_PREFILL_ROWSPLIT_TAILS")) {  // row splits: tail config:split
        const std::size_t c = item.find(':');
        if (c == std::string::npos) throw std::invalid_argument("W4A16_PREFILL_ROWSPLIT_TAILS: expected config:split, got '" + item + "'");
        const int cfg = static_cast<int>(env_int("W4A16_PREFILL_ROWSPLIT_TAILS", item.substr(0, c), 0, "config indices"));
        kc::prefill_config(cfg);  // range check
        spec.row_split_tails.emplace_back(cfg, static_cast<int>(env_int("W4A16_PREFILL_ROWSPLIT_TAILS", item.substr(c + 1), 1, "splits")));
      }
      for (const std::string& item : env_items("W4A16_PREFILL_TUNE_DTYPE")) {  // bf16: bf16 activations, cuBLAS bf16 beside fp16
        if (item != "bf16" && item != "f16") throw std::invalid_argument("W4A16_PREFILL_TUNE_DTYPE: expected f16 or bf16, got '" + item + "'");
        spec.act = item == "bf16" ? DType::bf16 : DType::f16;
        spec.peer_bf16 = spec.act == DType::bf16;
      }
      for (const std::string& item : env_items("W4A16_PREFILL_INTERLEAVE"))
        spec.interleave = static_cast<int>(env_int("W4A16_PREFILL_INTERLEAVE", item, 7, "rounds (>= 7)"));
      for (const std::string& item : env_items("W4A16_PREFILL_INTERLEAVE_ENV", ';')) spec.interleave_env.push_back(item);
      for (const std::string& item : env_items("W4A16_PREFILL_ROWSPLIT_HEAD"))
        spec.row_split_head = static_cast<int>(env_int("W4A16_PREFILL_ROWSPLIT_HEAD", item, 0, "a config index"));
      for (const std::string& item : env_items("W4A16_PREFILL_ROWSPLIT_ROWS"))
        spec.row_split_rows = env_int("W4A16_PREFILL_ROWSPLIT_ROWS", item, 1, "weight rows");
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
    std::fclose(f);
    return 0;
  }
  if (mode == "sched_ab") {
    const char* const names[] = {"8192x8192", "llama8b.gate_up", "llama8b.down", "llama8b.qkv", "llama70b.gate_up"};
    struct Format { DType act; ScalarType scalar; };
    const Format formats[] = {{DType::f16, ScalarType::uint4b8}, {DType::bf16, ScalarType::uint4b8},
                              {DType::f16, ScalarType::uint4}, {DType::bf16, ScalarType::uint4}};
    for (const char* name : names)  // shape-major: a run cut by its timeout loses llama70b first
      for (const Format& fm : formats)
        for (const Shape& sh : shapes) {
          if (std::string(sh.name) != name) continue;
          bench::PrefillBenchSpec spec;
          spec.shape = sh.name;
          spec.n = sh.n;
          spec.k = sh.k;
          spec.ms = {256, 1024, 4096};
          if (sh.n == 57344) spec.ms = {1024, 4096};  // the largest shape: M >= 1024 only (device time)
          spec.act = fm.act;
          spec.scalar = fm.scalar;
          spec.peer_bf16 = fm.act == DType::bf16;
          spec.time_dense_cache = false;
          spec.sched_ab = {1, 2};
          for (int c = 0; c < kc::prefill_config_count(); ++c)  // the 192 x 192 tile, early issue (split rule)
            if (kc::prefill_config(c).bm == 192 && kc::prefill_config(c).sched == 1) spec.forced.push_back(c);
          for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
          std::fflush(f);
        }
    std::fclose(f);
    return 0;
  }
  if (mode == "reduce_ab") {
    for (const Shape& sh : shapes) {
      const std::string name = sh.name;
      if (name.rfind("qwen", 0) != 0 && name != "llama8b.o" && name != "llama8b.down" && name != "8192x8192") continue;
      bench::PrefillBenchSpec spec = mid_m_spec(sh);
      spec.default_plan = false;  // ab_both is the default plan under the default knobs
      spec.reduce_ab = true;
      if (name == "qwen0.5b.qkv" || name == "llama8b.o") spec.ab_splits = {1, 2, 4, 8};
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
    std::fclose(f);
    return 0;
  }
  if (mode == "tma") {
    std::vector<int> forced;
    for (int c = 0; c < kc::prefill_config_count(); ++c)
      if (kc::prefill_config(c).x_load != kc::PrefillXLoad::cp_async && !skipped_x_load(kc::prefill_config(c).x_load)) forced.push_back(c);
    const bool default_plan = !skipped_x_load(kc::PrefillXLoad::tma);  // the default plan is a tma config
    for (const Shape& sh : shapes) {
      if (!sh.tune) continue;
      bench::PrefillBenchSpec spec;
      spec.shape = sh.name;
      spec.n = sh.n;
      spec.k = sh.k;
      spec.ms = {64, 256, 1024, 4096};
      spec.peer_bf16 = false;
      spec.time_dense_cache = false;
      spec.old_plan = true;
      spec.default_plan = default_plan;
      spec.forced = sh.n == 8192 && sh.k == 8192 ? forced : std::vector<int>{};  // forced table: 8192x8192 only (device time)
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
    for (int variant = 0; variant < 2; ++variant) {
      bench::PrefillBenchSpec spec;
      spec.shape = "8192x8192";
      spec.n = spec.k = 8192;
      spec.ms = {1024, 4096};
      spec.act = variant == 0 ? DType::bf16 : DType::f16;
      spec.scalar = variant == 0 ? ScalarType::uint4b8 : ScalarType::uint4;
      spec.peer_bf16 = variant == 0;
      spec.time_dense_cache = false;
      spec.old_plan = true;
      spec.default_plan = default_plan;
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
    std::fclose(f);
    return 0;
  }
  for (const Shape& sh : shapes) {
    if (mode == "large") break;
    if ((mode == "quick" || mode == "tune") && !sh.tune) continue;
    for (DType act : {DType::f16, DType::bf16}) {
      if (act == DType::bf16 && (mode == "quick" || mode == "tune")) continue;
      bench::PrefillBenchSpec spec;
      spec.shape = sh.name;
      spec.n = sh.n;
      spec.k = sh.k;
      spec.ms = {32, 64, 128, 256, 1024, 4096};
      spec.act = act;
      spec.all_configs = sh.tune && mode != "full" && act == DType::f16;
      for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      std::fflush(f);
    }
  }
  // Formats / groups on 8192x8192 (PERF.md: sym + asym, g = 32, 64, 128, channelwise).
  if (mode == "full")
    for (ScalarType st : {ScalarType::uint4b8, ScalarType::uint4})
      for (int g : {32, 64, 128, -1}) {
        bench::PrefillBenchSpec spec;
        spec.shape = "8192x8192";
        spec.n = spec.k = 8192;
        spec.ms = {64, 1024};
        spec.scalar = st;
        spec.group = g;
        spec.peers = false;
        for (const auto& r : bench::prefill_rows(spec, s)) std::fprintf(f, "%s\n", bench::prefill_csv_row(r).c_str());
      }
  std::fclose(f);
  return 0;
}
