// The tensor-core prefill path of the CUDA W4A16 linear (issue 5), over the shared prepared
// weight layout "cuda.tc16x64.v1" (docs/LAYOUT.md, made by tc_prepare in tc/tc_weights.hpp).
//
//   y[M, N] = x[:, perm] . W^T + bias      x (M, K) act dtype, row stride x_stride (elements)
//                                          y (M, N) act dtype, row stride y_stride (elements)
// Swap-AB: W is the A operand (64 weight rows = one wgmma m64 block), the tokens of x are the
// N side of the instruction, staged in shared memory. Two code paths, chosen by prefill_plan:
//   wgmma   (sm_90a): wgmma.mma_async m64n{64,128,256}k16, A = dequantized W in registers,
//           B = x tile from 128B-swizzled shared memory, multi-stage ring: x by TMA (default
//           plan) or by cp.async (the earlier configs, kept for comparison), W by cp.async
//   mma     (sm_80+): mma.sync.m16n8k16 on the same tiles (ldmatrix from the same smem layout)
// Split-K where the output tiles alone cannot fill the SMs, deterministic either way
// (PrefillSplitReduce): the TMA configs on sm_90 may launch the splits of a tile as one thread-block
// cluster and sum them in the kernel, in split order, through distributed shared memory; else
// (the plan's choice where its estimate is smaller, the other configs, W4A16_PREFILL_SPLIT_REDUCE=kernel)
// fp32 partials go to the workspace and a second kernel sums them in split order. Both give the same bits.
//
// prefill_run never allocates and only enqueues work on `stream`: safe to capture in a CUDA
// graph. The workspace (caller-owned, >= prefill_workspace_bytes for the largest M used)
// holds the act-order gather of x and, where splits are reduced by the second kernel, the
// split-K partials.
//
// Programmatic dependent launch (W4A16_PREFILL_PDL=0 turns it off): the prefill kernel (and the
// act-order gather / split-K reduction kernels around it) may start while the previous kernel of
// `stream` drains; the prefill kernel reads the prepared weights (w: qweight, scales, zeros) of its
// first pipeline stages before waiting for that kernel, x and bias only after it has completed,
// and writes y (and the workspace) only after it. So w must not be written by the kernel right
// before this call on the same stream (prepared weights are constant; tc_prepare's own copies are
// complete when it returns).
//
// Alignment: x must be 16-byte aligned with x_stride % 8 == 0 (cp.async 16-byte copies; the TMA
// tensor map needs a 16-byte aligned address and row stride) unless
// act_order (then x is gathered into the workspace first and may have any stride); y needs
// 2-byte alignment only; the workspace 256-byte alignment (cudaMalloc gives that).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "tc/tc_weights.hpp"
#include "w4a16/core/dtype.hpp"

namespace w4a16::kernels::cuda {

// What this build/kernel can run on: wherever code of the build runs (code_arch, common.cuh): the wgmma path where
// that code is sm_90a (capability 9.0), the mma.sync path where it is sm_80 (8.0; with W4A16_CUDA_PTX any newer GPU).
bool prefill_supported(int capability);

// How split-K partials are summed (deterministic, in split order, bias added last, either way):
//   automatic  W4A16_PREFILL_SPLIT_REDUCE ("kernel" or "cluster"; anything else throws
//              invalid_argument), read at each call; unset: the mode of the smaller estimate
//              (prefill_plan_estimate_us with the device's resident clusters; prefill_plan.cu). The
//              default plan names its mode (kernel or cluster) itself.
//   kernel     fp32 partials (split, M, N) in the workspace + reduce_kernel (the path up to 2026-12-02)
//   cluster    the TMA configs on sm_90: one cluster (1, 1, split) per output tile, reduced in the
//              kernel through distributed shared memory, no workspace; the kernel path where the
//              config is not a TMA one or the cluster cannot be scheduled (cudaOccupancyMaxActiveClusters)
enum class PrefillSplitReduce : std::uint8_t { automatic, kernel, cluster };
const char* prefill_split_reduce_name(PrefillSplitReduce r);  // "auto", "kernel", "cluster"

// Workspace for every M <= max_m of the default plan: act-order gather (max_m * K * 2 bytes) +
// split-K partials (split * M * N * 4 bytes, split * M <= kPrefillMaxSplitRows, or a measured
// kernel-reduce entry's rows for its layer: prefill_plan.cu measured_split_rows) unless the splits
// are reduced in the cluster (`reduce` resolved as above; partials counted where the device cannot
// guarantee the cluster: no device, not sm_90, a cluster of 8 not schedulable). Set
// W4A16_PREFILL_SPLIT_REDUCE before sizing workspaces.
std::size_t prefill_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m,
                                    PrefillSplitReduce reduce = PrefillSplitReduce::automatic);

// y[M,N] = x[:, perm] . W^T + bias on the tensor cores. Any M >= 0. Throws w4a16::Error (unsupported for scales above
// 8 GiB or K_pad above 2^31: the kernels' 32-bit offsets). The default plan (prefill_plan), or two launches where
// prefill_row_split splits the weight rows or prefill_token_split splits M.
void prefill_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                 void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

// ---- Plan: which tile configuration, split and reduce (a function of the problem and the device: SMs, resident clusters; printable) ----
enum class PrefillPath : std::uint8_t { wgmma, mma };
// How a wgmma config brings the x tile into shared memory (prefill_kernel.cuh says why each exists):
//   cp_async          per-thread cp.async + a proxy fence per k tile (the configs measured up to 2026-12-02)
//   tma               TMA (cp.async.bulk.tensor) on an mbarrier, CTA barrier per k tile
//   tma_eb            TMA, per-stage "empty" mbarriers instead of the CTA barrier
//   cp_async_nofence  cp_async without the proxy fence: racy, measurement only (never planned, not tested)
enum class PrefillXLoad : std::uint8_t { cp_async, tma, tma_eb, cp_async_nofence };
const char* prefill_x_load_name(PrefillXLoad x);  // "cp_async", "tma", "tma_eb", "cp_async_nofence"

// One compiled tile configuration.
struct PrefillConfig {
  PrefillPath path;
  int bm;       // tokens per CTA tile (the wgmma N extent), 64 / 128 / 256
  int wg;       // warpgroups per CTA (4 warps each); consumer warps all, no producer warp
  int mb;       // 64-row weight blocks per warpgroup; CTA rows BN = 64 * wg * mb
  int stages;   // shared-memory stages (x tile + W slots) of the cp.async pipeline
  bool overlap; // wgmma schedule: one group in flight while the next tile dequantizes (see prefill_kernel.cuh)
  int min_blocks;  // __launch_bounds__ minimum CTAs per SM (register cap)
  PrefillXLoad x_load;  // how x reaches shared memory
  int sched = 0;        // k-loop order (prefill_kernel.cuh SCHED): 0 measured baseline, 1 early issue
                        // (wgmma before the CTA barrier and refill, "_ei"), 2 early issue with the
                        // next tile's W words read before the wgmma wait ("_ei2")
  int bn() const { return 64 * wg * mb; }
  int threads() const { return 128 * wg; }
  bool diagnostic() const { return x_load == PrefillXLoad::cp_async_nofence; }  // timed, never planned nor tested
  std::string name() const;  // "wgmma_bm256_bn128_s5_ov", "..._tma"
};

struct PrefillPlan {
  int config = -1;          // index into prefill_configs()
  int split = 1;            // K splits (1 = none)
  std::int64_t k_tiles_per_split = 0;  // 64-wide k tiles per split
  double est_us = 0;        // the TMA plan's estimate (prefill_plan_estimate_us); 0 for the rule-based plans
  PrefillSplitReduce reduce = PrefillSplitReduce::automatic;  // split > 1: how the splits are summed
  int pdl = -1;             // programmatic dependent launch: -1 = W4A16_PREFILL_PDL (unset = on), 0 off, 1 on
  // One scale / zero entry per k tile (the ONE_GROUP kernels, prefill_kernel.cuh) where the layer's
  // group spans every 64-wide k tile (g >= 64, channelwise) and the config has that variant:
  // -1 = W4A16_PREFILL_ONE_GROUP (unset = on), 0 off (the per-half kernel: the A/B baseline), 1 on.
  int one_group = -1;
  std::string describe() const;
};

constexpr std::int64_t kPrefillMaxSplit = 8;
constexpr std::int64_t kPrefillMaxSplitRows = 512;  // split * round_up(M, bm) bound: caps partial bytes

int prefill_config_count();
const PrefillConfig& prefill_config(int i);

// The plan (documented in prefill_plan.cu). x_load = tma (default): a measured plan where one applies
// (prefill_measured_plan), else the TMA tile and split of least prefill_plan_estimate_us, a cost model
// measured on the H200; est_us holds its estimate.
// x_load = cp_async: the rule of 2026-12-02 (tile by M, the smallest split that fills the SMs),
// kept for comparison; est_us 0. The mma path (sm_80) takes that rule too.
PrefillPlan prefill_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count,
                         PrefillXLoad x_load = PrefillXLoad::tma);

// The token split of the default TMA plan: prefill_run may run its M tokens as two calls, tokens
// [0, head) and [head, M), each with its own plan, where the last m block of the one-call plan is
// mostly padding or starts another wave (M = 1030 on a 256-token tile: a fifth m block for 6 tokens),
// or where two plans fill the SMs better than one (4608 x 3584 at M = 1024: 256 + 768 tokens).
// Taken where prefill_plan has no measured plan for M (kMeasuredPrefillPlans decides those), head is
// M rounded down to a multiple b of 64, 128, 192 or 256, one b less, or M / 2 rounded down to a
// multiple of b (the candidate of least estimate), and the two plans' summed estimate is below
// kPrefillTokenSplitMargin x the one-call plan's (a margin for the model's error; measured: prefill_plan.cu). Each token's row is
// computed by one of the two calls, from its own x row: rows differ from the one-call plan's only by
// the fp32 summation order of a different K split. head = 0: one call (the wgmma path only;
// W4A16_PREFILL_TOKEN_SPLIT=0 turns it off, "1" or unset on, anything else is refused).
constexpr double kPrefillTokenSplitMargin = 0.97;
struct PrefillTokenSplit {
  std::int64_t head = 0;       // tokens of the first call; 0 = no split
  PrefillPlan head_plan, tail_plan;
  double est_us = 0;           // the two plans' estimates summed (0 without a split)
  std::string describe() const;  // "head H: <plan> + tail T: <plan>", or "none"
};
PrefillTokenSplit prefill_token_split(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count);
// What prefill_run runs at M, printable: the token split's describe() where it splits, else the plan's.
std::string prefill_default_describe(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count);

// The measured plan the TMA plan takes instead of the cost model's pick (prefill_plan.cu kMeasuredPrefillPlans:
// PERF.md shapes at token ranges where a plan timed on the H200 beat the pick by more than 3%): true and
// *plan (est_us = its estimate) where an entry applies; false for any other shape, M or device, with
// W4A16_PREFILL_TABLE=0 or W4A16_PREFILL_SPLIT_REDUCE set, or where the entry's cluster cannot be
// scheduled here (no GPU among those cases).
bool prefill_measured_plan(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count, PrefillPlan* plan);
// Whether a measured plan reducing `clusters` clusters of `split` CTAs in the cluster keeps, on a device that holds
// `active_clusters` of them at once, the waves it has where every SM holds its ctas_per_sm CTAs (sm_count x
// ctas_per_sm / split clusters at once: the packing of the device the entry was timed on). The GPCs of lent H200s
// differ: a plan of 32 clusters of 4 that fit one wave on one ran 1.56-1.60x the model's plan on another (2026-12-04
// stop 31), so prefill_measured_plan leaves an entry to the model where this is false.
bool prefill_cluster_waves_hold(std::int64_t clusters, int active_clusters, int sm_count, int ctas_per_sm, int split);

// The plan's estimate in us of a planned TMA tile config (12..15, 30, 31, 33) with `split` K splits (prefill_plan.cu); throws
// invalid_argument for other configs. The split term's constants are per reduce mode (automatic
// resolves W4A16_PREFILL_SPLIT_REDUCE; unset: the kernel's). A cluster estimate counts its waves over
// `active_clusters` resident clusters (prefill_max_active_clusters; <= 0: SMs x occupancy / split).
double prefill_plan_estimate_us(std::int64_t n, std::int64_t k, std::int64_t m, int config, int split, int sm_count,
                                PrefillSplitReduce reduce = PrefillSplitReduce::automatic, int active_clusters = 0);
// Clusters (1, 1, split) of TMA config `config` resident at once on the current device
// (cudaOccupancyMaxActiveClusters, the fewer of its fp16 uint4b8 / uint4 kernels); 0 without a
// device, off sm_90a, for split < 2 or a config that cannot reduce in the cluster.
int prefill_max_active_clusters(int config, int split);
// The config with the same tile, ring and x path as `config` and k-loop order `sched` (0, 1, 2:
// PrefillConfig::sched), or -1 where none is compiled. The default plan takes the twin of its
// tile for W4A16_PREFILL_SCHED=1|2 (0: the measured order; unset: prefill_plan.cu kDefaultSched, 0).
int prefill_sched_twin(int config, int sched);
// Whether the default plan's cost model covers the config (a planned TMA tile or its early-issue
// twin): prefill_plan_estimate_us throws for the others.
bool prefill_config_planned(int config);
// Whether the cost model chooses among the config's tile at M tokens (the 2-CTA bm128_bn128 up to 128 tokens;
// the 192 x 192 tile never: the measured table alone takes it, and the 2-CTA tile above 128 tokens).
bool prefill_config_modeled(int config, std::int64_t m);
// The split rule of the cp.async plan applied to a given config (benchmarks force every config with it).
PrefillPlan prefill_plan_for_config(std::int64_t n, std::int64_t k, std::int64_t m, int config, int sm_count);
// The plan's split target: CTAs >= this factor x SMs (by the config's tile; prefill_plan.cu says why).
double prefill_fill_factor(const PrefillConfig& c);

// prefill_run with a forced plan (tests and benchmarks exercise every config). plan.split and
// k_tiles_per_split are normalized; throws if the config cannot run on this device.
void prefill_run_plan(const TcWeights& w, const PrefillPlan& plan, const void* x, std::int64_t m, std::int64_t x_stride,
                      void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);
// prefill_run with a given token split (prefill_token_split's, or one a test makes): tokens [0, s.head)
// with s.head_plan, then [s.head, M) with s.tail_plan, in stream order; 0 < s.head < M, else throws.
void prefill_run_token_split(const TcWeights& w, const PrefillTokenSplit& s, const void* x, std::int64_t m, std::int64_t x_stride,
                             void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);
// The row split: weight rows [0, rows) with head_plan, then [rows, N) with tail_plan, two launches in stream order over
// one x (gathered once where w has act order). Where one plan's grid ends in a part wave (llama8b.qkv at M = 1024: 192
// tiles of every 32768-element tile on 132 SMs), the head takes the full waves of the large tile and the tail a tile or
// K split that fills the last wave. rows: a multiple of both plans' tile rows (PrefillConfig::bn) below N_pad, else
// throws. Each output element is computed by one part, from the same x row and weight row: rows differ from the
// one-call plan's only by the fp32 summation order of a different K split. Workspace: the larger of the two plans'.
// Both launches take PDL as head_plan.pdl says.
struct PrefillRowSplit {
  std::int64_t rows = 0;  // weight rows of the head
  PrefillPlan head_plan, tail_plan;
  std::string describe() const;  // "rows R: <plan> + rest: <plan>"
};
// The weight rows that config's tiles (split 1) cover in full waves at M tokens on sm_count SMs: floor(tiles / (SMs x
// CTAs per SM)) waves of whole m-block columns, in rows of the tile (N_pad rounded up to the tile's rows where the grid
// ends in whole waves; 0 where it has no full wave). A row split's head (prefill_row_split, prefill_bench).
std::int64_t prefill_full_wave_rows(std::int64_t n, std::int64_t m, int config, int sm_count);
// The row split prefill_run takes at M (rows = 0: none): a measured entry (prefill_plan.cu kMeasuredRowSplits) on 132
// SMs of capability 9.0, under the switches of the measured plans; W4A16_PREFILL_ROW_SPLIT=0 turns it off ("1" or unset
// on, anything else refused). prefill_run asks it before the token split.
PrefillRowSplit prefill_row_split(std::int64_t n, std::int64_t k, std::int64_t m, int capability, int sm_count);
void prefill_run_row_split(const TcWeights& w, const PrefillRowSplit& s, const void* x, std::int64_t m, std::int64_t x_stride,
                           void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);
// Workspace a given plan needs at M = m (partials only where its splits go through reduce_kernel).
std::size_t prefill_plan_workspace_bytes(const TcWeights& w, const PrefillPlan& plan, std::int64_t m);
// Whether prefill_run_plan reduces this plan's splits at M = m in the cluster on the current device
// (plan.reduce resolved, the config a TMA one, the cluster schedulable). False for split 1.
bool prefill_plan_uses_cluster(const TcWeights& w, const PrefillPlan& plan, std::int64_t m);
// The persistent tile loop of prefill_run_plan's launch for this plan at M = m into y (row stride y_stride) on the
// current device (W4A16_PREFILL_PERSIST / _EPI16 / _TAIL_SPLIT resolved): ctas = 0 where it runs the plain grid, else
// the CTAs launched; tail_items > 0: the grid's last tail_items tiles (in row-block-fastest order) run as tail_split
// k parts of tail_kts k tiles each, summed in part order (the bits of the split-tail_split plan on those tiles).
struct PrefillPersistent {
  int ctas = 0;
  int tail_items = 0, tail_split = 1;
  std::int64_t tail_kts = 0;
};
PrefillPersistent prefill_plan_persistent(const TcWeights& w, const PrefillPlan& plan, std::int64_t m, const void* y, std::int64_t y_stride);
// The split tail of `items` tiles on `resident` persistent CTAs over k_tiles k tiles (host only; ctas left 0): where the
// last wave holds R <= resident / 2 tiles, R = tail_items, each as tail_split = ceil(k_tiles / tail_kts) parts,
// tail_kts = ceil(k_tiles / min(resident / R, 8, k_tiles / 4)); else tail_items = 0.
PrefillPersistent prefill_tail_split(std::int64_t items, int resident, std::int64_t k_tiles);
// Whether prefill_run_plan runs this plan's config for w with its ONE_GROUP kernel (one scale / zero
// entry per k tile): g >= 64 or channelwise, a config with that variant (the default plan's early-issue
// twins of the planned tiles), plan.one_group resolved. Host only (no device needed).
bool prefill_plan_uses_one_group(const TcWeights& w, const PrefillPlan& plan);

// ---- Grouped mode: one GEMM over a stack of equal layers (the MoE experts), m block b of BM token rows
// multiplied by layer block_expert[b] (the MoE alignment's output, block size = the config's BM) ----
//   x         (rows, K) act dtype, contiguous, 16-byte aligned: the token rows in expert-sorted order, rows a
//             multiple of 64 (the alignment's capacity in blocks); rows of a block with block_expert -1 are not read.
//             The m blocks: b * BM (rows a multiple of BM), or a list (block_row: the MoE's 128-row blocks and 64-row tails)
//   silu_inter > 0 (GEMM 1 of the MoE: N = 2 I, gate rows then up rows): y (rows, I) act dtype gets
//             silu(gate) * up, rounded once; else (GEMM 2) token row i goes (act dtype, rounded once) to
//             rows_out[row_map[i] * N ...], skipped where row_map[i] >= row_map_limit.
// The kernel reads block_expert after griddepcontrol.wait (PDL: the previous kernel may write it), so no
// weight is requested before the wait. One launch, split 1, no workspace, no bias, no act-order;
// capture-safe. Configs: the early-issue TMA tiles with an even number of 64-row blocks (prefill_grouped_config_ok).
struct PrefillGrouped {
  const void* qweight = nullptr;          // expert 0's [N_pad/16][K_pad/64][32][4] int32
  const void* scales = nullptr;           // expert 0's [G][N_pad] act dtype
  const std::uint8_t* zeros = nullptr;    // expert 0's [G][N_pad/16][8] (uint4 only)
  std::size_t expert_qweight_bytes = 0, expert_scales_bytes = 0, expert_zeros_bytes = 0;  // strides between experts
  std::int64_t n = 0, k = 0;              // one expert's layer: multiples of 64 (no padding)
  int group_size = 128;                   // 32..256 or kChannelwise
  DType act_dtype = DType::f16;
  bool zeros_present = false;             // uint4 (zero points) or uint4b8
  const void* x = nullptr;
  std::int64_t rows = 0;                  // rows of x: blocks * BM
  const std::int32_t* block_expert = nullptr;  // [blocks]: expert of m block b, -1 = none
  const std::int32_t* block_row = nullptr;     // [blocks]: first row of m block b (a multiple of 64, + BM <= rows), or null:
                                               // b * BM
  int blocks = 0;                              // m blocks (the grid's y); 0: rows / BM
  std::int64_t silu_inter = 0;
  void* y = nullptr;                      // silu_inter > 0: (rows, silu_inter) act dtype
  const std::int32_t* row_map = nullptr;  // silu_inter == 0: [rows]
  void* rows_out = nullptr;               // silu_inter == 0: (row_map_limit, N) act dtype
  int row_map_limit = 0;
  int config = -1;                        // a prefill config (prefill_grouped_config_ok)
  bool pdl = true;                        // programmatic dependent launch on a non-default stream
};
// "" where config can run the grouped mode for a layer with these N (rows per expert) and silu_inter, else why not.
std::string prefill_grouped_refusal(int config, std::int64_t n, std::int64_t silu_inter);
// Whether the grouped mode runs on a device of this capability in this build (where it runs sm_90a code).
bool prefill_grouped_supported(int capability);
void prefill_run_grouped(const PrefillGrouped& g, cudaStream_t stream);

// ---- cuBLAS for the dense paths below: one handle per prepared layer, made where weights are prepared
// (cublasCreate allocates: not in run); every GEMM on it binds stream and workspace under `mu`.
struct CublasHandle {
  void* h = nullptr;  // cublasHandle_t
  mutable std::mutex mu;  // one stream / workspace binding of the handle at a time (runs from several threads)
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle();
};
std::unique_ptr<CublasHandle> cublas_handle_create();

// ---- Opt-in dequantized prefill cache: an fp16/bf16 copy of W + cuBLAS ----
struct DenseCache {
  void* w = nullptr;        // device (N, K) act dtype, original channel order (perm undone)
  std::int64_t n = 0, k = 0;
  DType dtype = DType::f16;
  std::size_t bytes = 0;    // memory cost of the cache (the dense copy)
  std::unique_ptr<CublasHandle> cublas;  // created at prepare
  DenseCache() = default;
  DenseCache(const DenseCache&) = delete;
  DenseCache& operator=(const DenseCache&) = delete;
  ~DenseCache();
};

std::unique_ptr<DenseCache> dense_cache_prepare(const TcWeights& w, cudaStream_t stream);  // dequantize on the GPU
std::size_t dense_cache_workspace_bytes(std::int64_t max_m);
void dense_cache_run(const DenseCache& c, const TcWeights& w /*bias*/, const void* x, std::int64_t m, std::int64_t x_stride,
                     void* y, std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

// ---- The transient dense path: W dequantized per call into the caller's workspace, then cuBLAS ----
// What an inference engine does for AWQ at large M on small layers (vLLM's awq_dequantize + matmul
// from 256 tokens): no memory beyond the workspace, the int4 weights stay the only copy. The fp16 /
// bf16 W (N, K) is written at the workspace's start (coalesced 16-byte rows, the same rounding as the
// cache: (q - z) * s rounded once), the cuBLAS workspace follows it. No act-order (dense_transient_refusal).
// The handle: cublas_handle_create, at prepare.
// "" when the transient path can run w's configuration, else why not (act-order: x would need the gather).
std::string dense_transient_refusal(bool act_order);
// Workspace of one call: the dense W (N * K * 2 bytes, rounded up to 256) + cuBLAS's workspace.
std::size_t dense_transient_workspace_bytes(std::int64_t n, std::int64_t k);
void dense_transient_run(const TcWeights& w, const CublasHandle& h, const void* x, std::int64_t m, std::int64_t x_stride, void* y,
                         std::int64_t y_stride, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda
