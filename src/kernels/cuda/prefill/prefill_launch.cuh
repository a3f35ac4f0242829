// Internal: the table of compiled prefill kernels (one entry per config x dtype x scalar type),
// filled by the explicit instantiation files prefill_inst_*.cu. Not a public header.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "prefill/prefill_kernel.cuh"

namespace w4a16::kernels::cuda::prefill_detail {

using KernelFn = void (*)(KernelParams, CUtensorMap, CUtensorMap, CUtensorMap);  // params, x map, its tail-box map, y map

struct KernelEntry {
  KernelFn fn;
  int smem_bytes;  // dynamic shared memory: smem_bytes<...>() in prefill_kernel.cuh
};

// The configurations, in the order of kConfigs (prefill_plan.cu). Keep the two in sync:
// prefill_plan.cu static_asserts the count.
// X(wgmma, BM, WG, MB, STAGES, OVERLAP, MINB, XL, SCHED). Shared memory per stage: BM * 128 bytes of x plus
// 24 (uint4b8) or 32 (uint4) bytes of W slot per thread and block; at most 227 KB per CTA.
// XL (XLoad, prefill_kernel.cuh): cp_async = HEAD's measured kernels (0-11); tma / tma_eb = x by
// TMA (12-18: the twins of the planned tiles 0, 6, 8 and of 1; not yet measured on a device);
// cp_async_nofence (19) = measurement-only diagnostic (racy by the PTX memory model).
// SCHED (prefill_kernel.cuh): 0 = the measured k-loop order; 1 / 2 = early issue (20-25, twins
// of the planned TMA tiles 12-14: the wgmma group issued before the CTA barrier and the refill;
// SCHED 2 also reads tile t+1's W words before the wgmma wait; 26-27 the same on the tma_eb
// x path of bm256, no CTA barrier in the loop). 28-30: a 192 x 192 tile of three consumer
// warpgroups (3 warps per scheduler instead of 2; m64n192k16, 168 registers at the 384-thread cap,
// no spills): slower than bm256 at M >= 1024, planned through the measured table only where
// 192-token blocks pad less (M = 129..192, 257..384, 513..768, 1025..1344 on some shapes; stop 25). 31-32: bm128_bn128 with 4 stages and two
// CTAs per SM (122-127 registers, no spills; 89 / 97 KB of shared memory): one CTA's prologue and
// epilogue run beside the other's k loop, for short K (the Qwen2.5-0.5B shapes' 14 k tiles) and
// mid M. Planned through the measured table only (prefill_plan.cu kMeasuredPrefillPlans). 33-34: 192
// rows x 128 tokens (three warpgroups of m64n128k16, 64 accumulators a thread): the tile area of
// 24576 gives other wave counts than the 32768 of bm256 / bm128_bn256 / bm192 (llama8b.qkv at M =
// 1024: 256 CTAs, 1.94 waves, against 192 CTAs, 1.45 waves, for every other tile); table only.
// 39-40 (stop 61, branch prefill-bm64-1wg): 64 tokens in CTAs of one warpgroup, 3 / 4 per SM (168 / 92-95 registers,
// no spills; 72.8 / 46.2 KB of shared memory in the ONE_GROUP kernels that g >= 64 runs; 39's per-half uint4 kernel, g = 32,
// takes 83 KB: 2 per SM), for M = 33..64 where the 2-warpgroup bm64 tile's 8 warps per SM leave the dequantize -> wgmma chain
// exposed (stop 48); table only (stop 62, an H100: 39 at split 2 3% ahead of bm64 on llama70b.gate_up M = 40..64, both
// behind the bm64 plan on 8192x8192 / llama8b.*).
#define W4A16_PREFILL_CONFIGS(X)                                                          \
  X(true, 256, 2, 1, 5, true, 1, cp_async, 0)   /* 0  large M: 128 rows x 256 tokens */        \
  X(true, 128, 2, 1, 8, true, 1, cp_async, 0)   /* 1  M <= 128 */                              \
  X(true, 64, 2, 1, 8, true, 1, cp_async, 0)    /* 2  mid M */                                 \
  X(true, 64, 1, 1, 8, true, 1, cp_async, 0)    /* 3  64 rows per CTA: more CTAs */            \
  X(false, 128, 1, 2, 4, false, 1, cp_async, 0) /* 4  mma.sync (sm_80+) */                     \
  X(false, 64, 1, 2, 4, false, 1, cp_async, 0)  /* 5  mma.sync (sm_80+) */                     \
  X(true, 128, 2, 2, 6, true, 1, cp_async, 0)   /* 6  256 rows x 128 tokens */                 \
  X(true, 64, 2, 2, 8, true, 1, cp_async, 0)    /* 7  256 rows x 64 tokens */                  \
  X(true, 64, 2, 1, 6, true, 2, cp_async, 0)    /* 8  M <= 64: 2 CTAs per SM (<= 128 regs) */  \
  X(true, 256, 2, 1, 4, false, 1, cp_async, 0)  /* 9  serial schedule (baseline) */            \
  X(true, 64, 2, 1, 5, false, 1, cp_async, 0)   /* 10 serial schedule (baseline) */            \
  X(true, 128, 2, 1, 6, true, 1, cp_async, 0)   /* 11 M <= 128, shallower ring */              \
  X(true, 256, 2, 1, 5, true, 1, tma, 0)        /* 12 TMA twin of 0 (plan, M > 128) */         \
  X(true, 128, 2, 2, 6, true, 1, tma, 0)        /* 13 TMA twin of 6 (plan, M <= 128) */       \
  X(true, 64, 2, 1, 6, true, 2, tma, 0)         /* 14 TMA twin of 8 (plan, M <= 64) */         \
  X(true, 128, 2, 1, 8, true, 1, tma, 0)        /* 15 TMA twin of 1 */                         \
  X(true, 256, 2, 1, 5, true, 1, tma_eb, 0)     /* 16 12 without the CTA barrier */            \
  X(true, 128, 2, 2, 6, true, 1, tma_eb, 0)     /* 17 13 without the CTA barrier */            \
  X(true, 64, 2, 1, 6, true, 2, tma_eb, 0)      /* 18 14 without the CTA barrier */            \
  X(true, 256, 2, 1, 5, true, 1, cp_async_nofence, 0) /* 19 0 without the proxy fence: diagnostic */ \
  X(true, 256, 2, 1, 5, true, 1, tma, 1)     /* 20 12, early issue (SCHED 1) */             \
  X(true, 256, 2, 1, 5, true, 1, tma, 2)     /* 21 12, early issue, W words read early */   \
  X(true, 128, 2, 2, 6, true, 1, tma, 1)     /* 22 13, early issue */                       \
  X(true, 64, 2, 1, 6, true, 2, tma, 1)      /* 23 14, early issue */                       \
  X(true, 128, 2, 2, 6, true, 1, tma, 2)     /* 24 13, early issue, W words read early */   \
  X(true, 64, 2, 1, 6, true, 2, tma, 2)      /* 25 14, early issue, W words read early */   \
  X(true, 256, 2, 1, 5, true, 1, tma_eb, 1)  /* 26 16 (no CTA barrier), early issue */      \
  X(true, 256, 2, 1, 5, true, 1, tma_eb, 2)  /* 27 16, early issue, W words read early */   \
  X(true, 192, 3, 1, 6, true, 1, tma, 1)     /* 28 192 rows x 192 tokens, 3 warpgroups */   \
  X(true, 192, 3, 1, 6, true, 1, tma, 2)     /* 29 28, W words read early */                \
  X(true, 192, 3, 1, 6, true, 1, tma, 0)     /* 30 28 in the measured order: planned, table only */ \
  X(true, 128, 2, 1, 4, true, 2, tma, 0)     /* 31 bm128_bn128, 4 stages, 2 CTAs per SM */ \
  X(true, 128, 2, 1, 4, true, 2, tma, 1)     /* 32 31, early issue */             \
  X(true, 128, 3, 1, 6, true, 1, tma, 0)     /* 33 192 rows x 128 tokens, 3 warpgroups */ \
  X(true, 128, 3, 1, 6, true, 1, tma, 1)     /* 34 33, early issue */             \
  X(true, 16, 1, 2, 6, true, 3, tma, 1)      /* 35 decode-sized: 128 rows (one warpgroup) x 16 tokens, 3 CTAs per SM */ \
  X(true, 16, 1, 1, 8, true, 4, tma, 1)      /* 36 decode-sized: 64 rows x 16 tokens, 4 CTAs per SM */ \
  X(true, 32, 2, 1, 8, true, 2, tma, 1)      /* 37 128 rows x 32 tokens, 2 CTAs per SM */ \
  X(true, 32, 2, 1, 6, true, 3, tma, 1)      /* 38 128 rows x 32 tokens, 3 CTAs per SM */ \
  X(true, 64, 1, 2, 5, true, 3, tma, 1)      /* 39 128 rows (one warpgroup, two m64 blocks) x 64 tokens, 3 CTAs per SM */ \
  X(true, 64, 1, 1, 4, true, 4, tma, 1)      /* 40 64 rows (one warpgroup) x 64 tokens, 4 CTAs per SM */

constexpr int kNumConfigs = 41;

// The configs as constants (the X list above), for the one-group table below.
struct ConfigParams {
  bool wgmma;
  int bm, wg, mb, stages;
  bool overlap;
  int min_blocks;
  XLoad xl;
  int sched;
};
#define W4A16_PARAMS(WGMMA, BM, WG, MB, ST, OV, MINB, XL, SC) ConfigParams{WGMMA, BM, WG, MB, ST, OV, MINB, XLoad::XL, SC},
inline constexpr ConfigParams kConfigParams[kNumConfigs] = {W4A16_PREFILL_CONFIGS(W4A16_PARAMS)};
#undef W4A16_PARAMS

// The mma.sync configs are what sm_80 code runs (code_arch 80: no wgmma, TMA or clusters): each within an A100's
// opt-in 163 KB of shared memory per block (uint4, the larger of the scalar types).
template <std::size_t... I>
constexpr bool mma_configs_fit_sm80(std::index_sequence<I...>) {
  constexpr int kA100Smem = 163 * 1024;
  return ((kConfigParams[I].wgmma || smem_bytes<kConfigParams[I].bm, kConfigParams[I].wg, kConfigParams[I].mb, kConfigParams[I].stages,
                                                 true, kConfigParams[I].xl, false>() <= kA100Smem) &&
          ...);
}
static_assert(mma_configs_fit_sm80(std::make_index_sequence<kNumConfigs>{}), "an mma.sync config above an A100's 163 KB a block");

// The configs with a ONE_GROUP variant (prefill_kernel.cuh: one scale / zero entry per k tile, for
// g >= 64 and channelwise): the early-issue (SCHED 1) twins of the planned TMA tiles that have one
// (20, 22, 23, 28, 32, 34; 15 has none) and the early-issue-only tiles 35-40, the kernels the default plan runs
// (prefill_plan.cu checks the list).
// Only these are instantiated twice (compile time); every other config runs its per-half kernel at
// any group size.
using OneGroupConfigs = std::integer_sequence<int, 20, 22, 23, 28, 32, 34, 35, 36, 37, 38, 39, 40>;

// Entries for one (dtype, scalar type): defined in prefill_inst_<dtype>_<scalar>.cu.
const KernelEntry* kernels_f16_zeros();
const KernelEntry* kernels_f16_sym();
const KernelEntry* kernels_bf16_zeros();
const KernelEntry* kernels_bf16_sym();
// The ONE_GROUP kernels, indexed by config like the tables above: {nullptr, 0} for the configs
// outside OneGroupConfigs. Defined in the same files.
const KernelEntry* kernels_f16_zeros_one_group();
const KernelEntry* kernels_f16_sym_one_group();
const KernelEntry* kernels_bf16_zeros_one_group();
const KernelEntry* kernels_bf16_sym_one_group();

template <class T, bool ZEROS>
const KernelEntry* make_entries() {
#define W4A16_ENTRY(WGMMA, BM, WG, MB, ST, OV, MINB, XL, SC)                        \
  KernelEntry{&prefill_kernel<T, BM, WG, MB, ST, WGMMA, OV, MINB, ZEROS, XLoad::XL, SC, false>, \
              smem_bytes<BM, WG, MB, ST, ZEROS, XLoad::XL, false>()},
  static const KernelEntry table[kNumConfigs] = {W4A16_PREFILL_CONFIGS(W4A16_ENTRY)};
#undef W4A16_ENTRY
  return table;
}

template <class T, bool ZEROS, int C>
KernelEntry one_group_entry() {
  constexpr ConfigParams c = kConfigParams[C];
  return KernelEntry{&prefill_kernel<T, c.bm, c.wg, c.mb, c.stages, c.wgmma, c.overlap, c.min_blocks, ZEROS, c.xl, c.sched, true>,
                     smem_bytes<c.bm, c.wg, c.mb, c.stages, ZEROS, c.xl, true>()};
}
template <class T, bool ZEROS, int... C>
const KernelEntry* make_one_group_entries(std::integer_sequence<int, C...>) {
  static const auto table = [] {
    struct Table {
      KernelEntry e[kNumConfigs] = {};
    } t;
    ((t.e[C] = one_group_entry<T, ZEROS, C>()), ...);
    return t;
  }();
  return table.e;
}

}  // namespace w4a16::kernels::cuda::prefill_detail
