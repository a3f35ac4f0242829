// ---- decode_run: checks every argument, then launches the planned kernel per chunk of <= 16 tokens ----
// The contract of the call is decode.hpp's; the kernels' own are at the top of decode.cu (streaming),
// decode_small.cu and decode_bulk.cu; decode_plan.cu picks the kernel and its plan. Launch only: no
// allocation, no host synchronisation, CUDA-graph safe.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "decode/decode.hpp"
#include "decode/decode_device.cuh"
#include "w4a16/core/error.hpp"

namespace w4a16::kernels::cuda {
namespace {

using namespace decode_detail;

int ilog2(int v) { int r = 0; while ((1 << (r + 1)) <= v) ++r; return r; }

// W4A16_DECODE_PDL: "0" launches without programmatic dependent launch (A/B measurement), "1" or
// unset with it.
bool pdl_enabled() {
  const char* env = std::getenv("W4A16_DECODE_PDL");
  if (!env || !*env) return true;
  if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) fail(ErrorCode::invalid_argument, "W4A16_DECODE_PDL", "0 or 1", env);
  return *env == '1';
}

// W4A16_DECODE_PDL_TRIGGER: "early" (unset: the bulk kernel lets the next kernel launch right after its own wait) or
// "late" (once its producer has issued every stage: the next kernel's blocks, where they fit beside this one's, fill
// their rings during this kernel's tail instead of competing with its stream). Read per call, as W4A16_DECODE_PDL (A/B knob).
int pdl_late() {
  const char* env = std::getenv("W4A16_DECODE_PDL_TRIGGER");
  if (!env || !*env || std::strcmp(env, "early") == 0) return 0;
  if (std::strcmp(env, "late") == 0) return 1;
  fail(ErrorCode::invalid_argument, "W4A16_DECODE_PDL_TRIGGER", "early or late", env);
}

}  // namespace

void decode_run(const TcWeights& w, const void* x, std::int64_t m, std::int64_t x_stride, void* y, std::int64_t y_stride,
                void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (w.layout == nullptr || std::strcmp(w.layout, kTcLayoutTag) != 0)
    fail(ErrorCode::layout_mismatch, "weights", std::string("layout ") + kTcLayoutTag, w.layout ? w.layout : "null");
  if (!is_activation_dtype(w.act_dtype))
    fail(ErrorCode::dtype_mismatch, "weights.act_dtype", "float16 or bfloat16", std::string(dtype_name(w.act_dtype)));
  if (m < 0) fail(ErrorCode::invalid_argument, "m", ">= 0", std::to_string(m));
  if (w.n <= 0 || w.k <= 0 || w.k % 8 != 0 || w.n_pad % kTcPadN != 0 || w.k_pad % kTcPadK != 0 || w.n_pad < w.n || w.k_pad < w.k)
    fail(ErrorCode::invalid_argument, "weights", "a prepared cuda.tc16x64.v1 layer (K % 8 == 0, padded to 64)",
         "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k));
  if (w.n > (1 << 30) || w.k > (1 << 30)) fail(ErrorCode::unsupported, "weights", "N, K <= 2^30", "N=" + std::to_string(w.n) + " K=" + std::to_string(w.k));
  if (!w.qweight || !w.scales) fail(ErrorCode::invalid_argument, "weights", "device qweight and scales", "null");
  if ((w.scalar == ScalarType::uint4) != (w.zeros != nullptr))
    fail(ErrorCode::invalid_argument, "weights.zeros", w.scalar == ScalarType::uint4 ? "zeros for uint4" : "none for uint4b8",
         w.zeros ? "present" : "absent");
  if (w.act_order != (w.perm != nullptr)) fail(ErrorCode::invalid_argument, "weights.perm", "perm iff act_order", w.perm ? "present" : "absent");
  if (w.has_bias != (w.bias != nullptr)) fail(ErrorCode::invalid_argument, "weights.bias", "bias iff has_bias", w.bias ? "present" : "absent");
  const std::int64_t glen = w.group_len();
  if (!is_supported_group_size(w.group_size) || w.k % glen != 0 || w.groups != w.k / glen)
    fail(ErrorCode::invalid_argument, "weights.group_size", "32, 64, 128, 256 or channelwise dividing K", std::to_string(w.group_size));
  // The kernel addresses scale and zero words by 32-bit byte offsets.
  if (static_cast<std::uint64_t>(w.groups) * static_cast<std::uint64_t>(w.n_pad) * 2 >= (std::uint64_t{1} << 31))
    fail(ErrorCode::unsupported, "weights.scales", "below 2 GiB (groups x N_pad x 2 bytes)",
         std::to_string(w.groups) + " x " + std::to_string(w.n_pad) + " x 2 bytes");
  // ... and weight tiles by 32-bit indices of 16-byte lanes.
  if (static_cast<std::uint64_t>(w.n_pad / kTcTileN) * static_cast<std::uint64_t>(w.k_pad / kTcTileK) * 32 >= (std::uint64_t{1} << 32))
    fail(ErrorCode::unsupported, "weights.qweight", "below 64 GiB (N_pad/16 x K_pad/64 x 512 bytes)",
         "N_pad=" + std::to_string(w.n_pad) + " K_pad=" + std::to_string(w.k_pad));
  if (x_stride < w.k) fail(ErrorCode::invalid_argument, "x_stride", ">= K = " + std::to_string(w.k), std::to_string(x_stride));
  if (y_stride < w.n) fail(ErrorCode::invalid_argument, "y_stride", ">= N = " + std::to_string(w.n), std::to_string(y_stride));
  if (m == 0) return;
  if (!x) fail(ErrorCode::invalid_argument, "x", "a device pointer", "null");
  if (!y) fail(ErrorCode::invalid_argument, "y", "a device pointer", "null");
  check_aligned(x, 2, "x");
  check_aligned(y, 2, "y");

  Args a{};
  a.qweight = reinterpret_cast<const uint4*>(w.qweight);
  a.scales = static_cast<const std::uint32_t*>(w.scales);
  a.zeros = w.zeros;
  a.bias = static_cast<const std::uint16_t*>(w.bias);
  a.perm = w.perm;
  a.x_stride = x_stride;
  a.y_stride = y_stride;
  a.n = static_cast<int>(w.n);
  a.k = static_cast<int>(w.k);
  a.nt_count = static_cast<int>(w.n_pad / kTcTileN);
  a.kt_count = static_cast<int>(w.k_pad / kTcTileK);
  a.groups = static_cast<int>(w.groups);
  a.gshift = w.group_size == kChannelwise ? 30 : ilog2(w.group_size);
  a.xvec = (reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && x_stride % 8 == 0) ? 1 : 0;
  // Streaming x copies 4-byte words in layout order: contiguous 16-byte rows, no gather.
  const bool rows16 = a.xvec && !w.perm;  // what decode_plan calls xstream_ok (it applies W4A16_DECODE_XSTREAM itself)
  const bool xstream_ok = rows16 && xstream_override() != 0;
  const bool bf16 = w.act_dtype == DType::bf16, zeros = w.zeros != nullptr, g32 = w.group_size == 32;
  const bool pdl = pdl_enabled() && decode_device().sm90;  // sm_80 code has no griddepcontrol

  const std::int64_t chunk = decode_chunk(w.k, m, zeros, w.group_size, xstream_ok, decode_device());
  for (std::int64_t m0 = 0; m0 < m; m0 += chunk) {
    const int mc = static_cast<int>(std::min<std::int64_t>(chunk, m - m0));
    const DecodePlan p = decode_plan(w.n, w.k, mc, zeros, w.group_size, rows16);
    a.x = static_cast<const std::uint16_t*>(x) + m0 * x_stride;
    a.y = static_cast<std::uint16_t*>(y) + m0 * y_stride;
    a.m = mc;
    a.warps_n = p.warps_n;
    a.warps_k = p.warps_k;
    a.tiles_per_warp = p.tiles_per_warp;
    a.block_tiles = p.tiles_per_warp * p.warps_k;
    a.splits = p.splits;
    a.row_blocks = p.row_blocks;
    a.xstream = p.xstream ? 1 : 0;
    if (p.bulk_stages > 0) {  // persistent blocks with a bulk-copy ring (decode_bulk.cu)
      a.stages = p.bulk_stages;
      a.bulk_xstream = p.bulk_xstream ? 1 : 0;
      a.pdl_late = pdl_late();
      a.block_tiles = a.kt_count;
      launch_decode_bulk(a, p.grid_rows, p.smem_bytes, bf16, zeros, g32, decode_tile_pairs(p, a.kt_count, mc, zeros, w.group_size, bf16), pdl,
                         stream);
      continue;
    }
    if (p.small_tiles > 0) {  // one wave, all of K per block (decode_small.cu)
      launch_decode_small(a, p.small_tiles, p.smem_bytes, bf16, zeros, g32, pdl, stream);
      continue;
    }

    launch_decode_streaming(a, p.splits, p.grid_rows, p.smem_bytes, bf16, zeros, g32, decode_tile_pairs(p, a.kt_count, mc, zeros, w.group_size, bf16),
                            pdl, stream);
  }
}

}  // namespace w4a16::kernels::cuda
