// Skinny W4A16 decode GEMM on the tensor-core layout "cuda.tc16x64.v1" (src/kernels/cuda/tc).
//   y[M, N] = x[:, perm] . W^T + bias     x (M, K) act dtype, row stride x_stride (elements)
//                                         y (M, N) act dtype, row stride y_stride (elements)
// Plan (per shape, host-side heuristic, decode_plan.cu) and run (launch only, decode_run.cu) are split; run
// never allocates and is safe inside CUDA-graph capture. The split-K reduction goes through the
// distributed shared memory of a thread-block cluster in a fixed order: deterministic, and no
// workspace is needed (decode_workspace_bytes returns 0; a null workspace is accepted).
// Small layers (the Qwen2.5-0.5B class) may take a second, lean kernel (decode_small.cu): one wave,
// weights in registers before the PDL wait, no ring, no cluster; decode_plan chooses (below). At 1
// token (2 where x is small) a third, the bulk kernel (decode_bulk.cu: a producer warp per block
// fills a deep shared-memory ring by cp.async.bulk, persistent grid, no cluster) goes first.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tc/tc_weights.hpp"

namespace w4a16::kernels::cuda {

// How one M-chunk (<= 16 tokens) is spread over the GPU.
struct DecodePlan {
  int warps_n = 8;     // warps of a block along N (each owns one 16-row stripe); warps_n * warps_k = 8
  int warps_k = 1;     // warps of a block along K (reduced in shared memory)
  int splits = 1;      // blocks of a cluster along K (reduced through distributed shared memory), 1..8
  int tiles_per_warp = 0;   // 64-wide k tiles each warp streams
  int row_blocks = 0;       // blocks of warps_n stripes along N
  int grid_rows = 0;        // grid extent along N: row_blocks, or the resident rows when persistent (each block loops over row blocks)
  int depth = 3;               // cp.async ring slots per warp (fixed per variant, decode.cu kRingDepth): 1..8 tokens 2 slots of
                               // 8 tiles, 9..16 tokens 3 slots of 4 tiles: 8 tiles in flight either way
  std::size_t smem_bytes = 0;  // dynamic shared memory per block
  bool xstream = false;        // x streamed per step through a small block ring (a window per K group: warps_k > 1 only at
                               // 9..16 tokens with g >= 64), not staged whole
  // > 0: the small-layer kernel (decode_small.cu) of this tile bucket (2, 4, 8, 16: registers of weights
  // per warp), one wave of row_blocks blocks covering all of K (splits 1, depth unused: 0); 0: the
  // streaming kernel above.
  int small_tiles = 0;
  // > 0: the bulk kernel (decode_bulk.cu) with a ring of this many stages; grid_rows blocks (one or
  // two per SM, bulk_blocks_per_sm) loop over row_blocks items of warps_n stripes x all of K.
  int bulk_stages = 0;
  int bulk_blocks_per_sm = 0;
  bool bulk_xstream = false;  // the bulk kernel: x streamed per stage beside the weights (the producer's copies of the
                              // stage's k range of the m token rows) instead of staged whole; W4A16_DECODE_BULK_XSTREAM
  std::string describe() const;
};

// What a decode plan needs to know of the device besides its SM count: pure data, so that plans stay host arithmetic.
// The defaults are an H200 (or H100) running this build's sm_90a code; decode_device_for gives any capability's.
struct DecodeDevice {
  bool sm90 = true;                         // the device runs sm_90a code (code_arch 90): thread-block clusters (splits
                                            // > 1) and the bulk kernel exist; otherwise neither is planned
  std::size_t smem_per_block = 227 * 1024;  // opt-in shared memory per block (sm_90: 227 KB; sm_80: 163 KB)
  std::size_t smem_per_sm = 228 * 1024;     // shared memory per SM (sm_90: 228 KB; sm_80: 164 KB)
  int threads_per_sm = 2048;                // resident threads per SM (8.6 / 8.9: 1536)
  double dram_tb_per_s = 0;                 // peak DRAM bandwidth, 2 x memory clock x bus width (H100 SXM 3.35, H200
                                            // 4.8); 0 = unknown, planned as the H200 (decode_plan.cu bulk_by_default)
};
// The DecodeDevice of a device of `capability` running this build (code_arch; shared memory and threads per the CUDA
// programming guide's table of compute capabilities: 8.0 / 8.7 163 / 164 KB, 8.6 / 8.9 99 / 100 KB and 1536 threads,
// 9.0 227 / 228 KB; dram_tb_per_s unknown). Pure.
DecodeDevice decode_device_for(int capability);
// decode_device_for the current device, with its peak DRAM bandwidth from its memory clock and bus width (read once per
// process, as decode_plan reads its SM count).
const DecodeDevice& decode_device();
// The current device's peak DRAM bandwidth (TB/s, as decode_device's), 0 where there is no device to ask: never throws
// (the hybrid's switch reads it on hosts without a GPU too). Read once per process.
double device_dram_tb_per_s();

// The plan decode_run uses for M-chunks of `m_chunk` tokens (1..16) of a layer with/without zero
// points and this group size (the cp.async ring holds their words). xstream_ok: x rows are 16-byte
// aligned without act-order perm (decode_run), so x may be streamed and the small-layer kernel
// may copy them whole; without it x is staged whole per block, which bounds K (decode_fits). W4A16_DECODE_PLAN="wn,splits[,xstream[,depth]]" overrides the heuristic and
// W4A16_DECODE_XSTREAM=0/1 never/always streams (benchmark exploration); invalid values throw
// invalid_argument.
// Small layers: where the small-layer kernel's plan (decode_small_plan_for_sms) fits one wave and the
// x rows its blocks copy, row_blocks x M x K x 2 bytes, are at most kDecodeSmallMaxXBytes, decode_plan
// returns it instead of the cost model's plan. W4A16_DECODE_SMALL=0 never takes it, =1 takes it
// wherever it fits one wave (the A/B knob); W4A16_DECODE_SMALL_T=2/4/8/16 is the smallest tile bucket
// it may use (unset: 2 up to 8 tokens, 4 from 9; decode_plan.cu). W4A16_DECODE_PLAN (a forced streaming plan) wins.
// The bulk kernel: decode_plan returns decode_bulk_plan_for_sms's plan first where it fits and
// decode_plan.cu's bulk_by_default says (W4A16_DECODE_BULK unset: 1 token everywhere; 2..8 tokens where it
// measured faster on the PERF.md shapes: blocks streaming >= 4 rounds of items, 2 tokens of x <= 20 KB,
// 3 tokens on an evenly busy grid with K <= 5120, up to 6 on layers under 8 MB (8 where x <= 20 KB); docs/benchmarks/decode.md versions 12
// and 13; on H100-class memory, below 4 TB/s, also up to 6 tokens where x <= 128 KB on layers of <= 32 MB, and 4..8
// tokens with x streamed per stage (bulk_xstream) on layers of <= 32 MB where x rows allow: version 22; on faster
// memory, the H200, that streamed x at 4..8 tokens on layers of <= 8 MB: version 23; and on H100-class memory with x
// streamed at 9..16 tokens on llama8b.down uint4: version 26),
// unless W4A16_DECODE_SMALL=1 forces the small kernel; W4A16_DECODE_BULK=1 takes it wherever
// it fits, =0 never; a forced streaming plan (W4A16_DECODE_PLAN) wins over it.
// Measured plans: on a few Llama-3-8B / 8192x8192 / Llama-70B layers at 1..16 tokens (uint4b8,
// g = 128, 132 SMs) a plan measured faster than the cost model's on the H200 replaces it (decode_plan.cu
// kMeasuredPlans, after the small-layer kernel's rule); W4A16_DECODE_TABLE=0 turns that off.
DecodePlan decode_plan(std::int64_t n, std::int64_t k, int m_chunk, bool zeros = false, int group_size = 128,
                       bool xstream_ok = false);
// decode_plan for a device of `sms` multiprocessors: pure host arithmetic, no device is queried
// (decode_plan passes the current device's count).
DecodePlan decode_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, bool xstream_ok, int sms,
                               const DecodeDevice& dev = {});
// x bytes (row_blocks x M x K x 2: every block of the small kernel copies the m rows of x) up to
// which decode_plan picks the small-layer kernel by default. Measured on the H200 (2026-12-02 night,
// docs/benchmarks/decode.md, A/B in one process against the streaming kernel): it won where those
// bytes were <= 2.1 MB (qwen0.5b.qkv / o at every M = 1..16, 1.08-1.57x; qwen0.5b.down M = 1..3 and
// gate_up M = 1, 1.26-1.50x; llama8b.o M = 1, 1.19-1.25x) and lost on most points above (gate_up
// M = 2, 2.2 MB: 0.86-0.97x; M = 16: 0.53x), with one exception left out (down M = 4, 2.2 MB: 1.22x).
constexpr std::int64_t kDecodeSmallMaxXBytes = std::int64_t{2} << 20;
// The small-layer kernel's plan for a device of `sms` multiprocessors, or a plan with row_blocks = 0
// where it takes more than one wave of blocks (or too much shared memory). Pure host arithmetic.
// For T in 2, 4, 8, 16 (from min_tiles up), the first that fits: warps_k = K_pad/64 / T rounded up
// to 1, 2, 4 or 8 (so K must be <= 8 x 16 tiles), warps_n = 8 / warps_k, tiles_per_warp =
// ceil(K_pad/64 / warps_k), row_blocks = ceil(N_pad/16 / warps_n) <= sms x resident blocks per SM
// (small_min_blocks(T) by registers, fewer where the staged x needs more shared memory). The smallest
// T that fits gives the most warps and blocks (latency-bound layers want more loads in flight).
DecodePlan decode_small_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, int sms, int min_tiles = 2, const DecodeDevice& dev = {});
// The bulk kernel's streamed x (decode_bulk.cu; span: the k tiles of a stripe per stage, warps_k x kBulkTiles): one x
// slot per weight stage, instead of x of all of K, filled by one TMA box (64 k, bulk_x_box_tiles(span) k tiles, m tokens)
// in the 128B swizzle: m rows of box tiles x 128 bytes, 1024-aligned (the swizzle's period). The box spans one tile more than the stage (span is a
// multiple of 4, the box an odd count of tiles), so that row t starts t x box tiles 128-byte lines in: the 8 tokens of an
// ldmatrix then lie in 8 different lines mod 8, i.e. 8 different 16-byte bank groups after the swizzle.
constexpr int bulk_x_box_tiles(int span) { return span + 1; }
constexpr unsigned bulk_x_slot_bytes(int m, int span) {
  return (static_cast<unsigned>(m) * static_cast<unsigned>(bulk_x_box_tiles(span)) * 128u + 1023u) / 1024u * 1024u;
}
// Where in a slot the 128B swizzle put 16-byte chunk `chunk` (k 8 chunk .. 8 chunk + 7 of a tile, 0..7) of 128-byte line
// `line` (token x box tiles + tile): chunk position chunk ^ (line % 8). For chunk + 4 the address is this one ^ 64.
constexpr unsigned bulk_x_swizzled(unsigned line, unsigned chunk) { return (line << 7) + (((chunk ^ line) & 7u) << 4); }

// The bulk kernel's plan (decode_bulk.cu) for a device of `sms` multiprocessors, or a plan with
// bulk_stages = 0 where it does not fit (x of all of K staged per block plus two ring stages must fit
// the shared memory of one or two blocks per SM). Pure host arithmetic. Over warps_n in 1, 2, 4, 8 and
// 1 or 2 blocks per SM: the grid is min(row_blocks, sms x blocks per SM), each block loops over
// items; the pick minimises the tiles streamed by the busiest SM plus a per-item cost, scaled up
// where the ring holds fewer than 96 KB in flight per SM; a one-round plan over more than half the SMs that does not fit
// twice per SM takes a ring cut to fit twice where that loses at most one of its stages (and keeps 3): the next call's
// blocks then start beside it. W4A16_DECODE_BULK_PLAN="warps_n,blocks_per_sm"
// forces one where it fits (malformed: invalid_argument; not fitting: the automatic choice), and with
// the kernel enabled decode_plan then takes it before the small-layer kernel's rule.
// Below sm_90 code (dev.sm90 false) it never fits.
// xstream_ok (16-byte x rows, no act-order perm, as decode_plan's): W4A16_DECODE_BULK_XSTREAM=1 then streams x per stage
// where K is a multiple of 64 (bulk_xstream), =0 never; unset: at 4..16 tokens on every layer of H100-class memory
// (decode_plan takes the plan at 9..16 where its items keep the SMs busy), at 4..8 on layers of <= 8 MB of faster
// memory, never where the device's peak bandwidth is unknown (decode_plan.cu).
DecodePlan decode_bulk_plan_for_sms(std::int64_t n, std::int64_t k, int m_chunk, bool zeros, int group_size, int sms,
                                    const DecodeDevice& dev = {}, bool xstream_ok = false);
// Whether the launch of plan `p` runs the tile-pair variant of its kernel (tiles 2j, 2j + 1 share one scale / zero
// entry, copied and read once, and one fp32 partial; docs/benchmarks/decode.md versions 15 and 17): groups of two tiles
// or more (g >= 128, channelwise) and an even K_pad / 64 = kt_count, so that every step holds whole pairs; the bulk
// kernel for both scalar types and dtypes (uint4 1.05-1.135x on the H200; uint4b8, with two accumulator chains per
// partial, 1.017-1.057x at M = 1 and 0.985-1.029x at 2..8, stop 38); the streaming kernel where its warps' tile ranges
// are even too (tiles_per_warp, and so tiles_per_warp x warps_k per block) for uint4 in fp16 (0.997-1.098x; bf16
// measured 0.959-1.053x and keeps per-tile entries) and for uint4b8 in both dtypes at m_chunk <= 8 (two chains:
// 1.004-1.043x, stop 39; at 9..16 tokens 0.979-1.015x, per-tile entries kept); never the small-layer kernel. Pure host
// arithmetic; decode_run passes it to the launchers.
bool decode_tile_pairs(const DecodePlan& p, int kt_count, int m_chunk, bool zeros, int group_size, bool bf16);
// Whether some plan stages an m_chunk-token x chunk of this K in shared memory (what decode_plan
// needs not to throw unsupported). Pure host arithmetic: no device is queried.
bool decode_fits(std::int64_t k, int m_chunk, bool zeros, int group_size, const DecodeDevice& dev = {});
// The tokens per launch decode_run takes for M tokens: 16, halved while the chunk's x (staged: !xstream_ok) does not fit
// (decode_fits; decode_plan throws if even one token does not). Pure host arithmetic.
int decode_chunk(std::int64_t k, std::int64_t m, bool zeros, int group_size, bool xstream_ok, const DecodeDevice& dev = {});

// Workspace decode_run needs: 0 (the reduction lives in shared memory); kept for the registry API.
std::size_t decode_workspace_bytes(std::int64_t n, std::int64_t k, int group_size, bool act_order, std::int64_t max_m);

// y[M,N] = x[:, perm] . W^T + bias. Any M >= 0 (chunks of 16 tokens, one launch each; M = 0 is a
// no-op). Requirements (checked, w4a16::Error otherwise): w in layout cuda.tc16x64.v1 (tag checked);
// x, y device pointers, 2-byte aligned; x_stride >= K, y_stride >= N; scales below 2 GiB. x rows
// that are 16-byte aligned (x and x_stride % 8) without act-order may be streamed through a small
// per-block ring, step by step (any K); otherwise each block stages its K range of x in shared
// memory (vector loads for aligned rows, a scalar path for others; same results; at most 8 blocks
// split K), so K is bounded: at 9..16 tokens K <= 33280 (uint4, g = 32) .. 35840 (uint4b8, g >= 64);
// at 8 tokens 58880 .. 65024; at 1 token far beyond any layer. Staged, decode_run takes 16-token
// chunks where they fit and halves the chunk (8, 4, 2, 1 tokens) where they do not; only a K that
// does not fit at 1 token throws ErrorCode::unsupported (decode_fits(k, 1, ...) tells ahead of time).
// workspace may be null.
// Deterministic: the same inputs give the same bits on every call.
// Programmatic dependent launch (W4A16_DECODE_PDL=0 turns it off): the launch may start while the
// previous kernel of `stream` drains and reads the prepared weights (w) before waiting for it; x is
// read and y written only after it has completed. So w must not be written by the kernel right
// before this call on the same stream (prepared weights are constant; tc_prepare's own copies are
// complete when it returns).
void decode_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda
