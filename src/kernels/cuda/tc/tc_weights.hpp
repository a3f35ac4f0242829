// The shared tensor-core weight layout "cuda.tc16x64.v1" (docs/LAYOUT.md), read by the decode
// (mma.sync) and prefill (wgmma) kernels: one copy of the weights serves both paths.
//   qweight int32 [N_pad/16][K_pad/64][32 lanes][4 words]  one 16x64 tile = one warp's 16-byte load per lane;
//                                                         word j of lane l = A fragment of k16 sub-tile j,
//                                                         nibbles [a0,a2,a4,a6,a1,a3,a5,a7]
//   scales  act dtype [G][N_pad]        pair-interleaved per 16 rows: [g][16nt + 2r + h] = s[16nt + r + 8h][g]
//   zeros   uint8 [G][N_pad/16][8]      uint4 only: byte r = z[16nt + r] | z[16nt + r + 8] << 4
//   bias    act dtype [N]               optional
//   perm    int32 [K]                   optional (act-order), the canonical perm
// N_pad = round_up(N, 64), K_pad = round_up(K, 64); padding holds q = 0, padded rows scale 0.
// Host-callable header: no device code is needed to include it.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "w4a16/core/canonical.hpp"

namespace w4a16::kernels::cuda {

inline constexpr const char* kTcLayoutTag = "cuda.tc16x64.v1";
inline constexpr int kTcTileN = 16;  // rows (n) of one tile: the M side of mma.m16n8k16
inline constexpr int kTcTileK = 64;  // columns (k) of one tile: 4 k16 sub-tiles, one 16-byte load per lane
inline constexpr int kTcPadN = 64;   // N padding: a wgmma m64 block of the prefill kernel
inline constexpr int kTcPadK = 64;   // K padding: one tile

// Device weights in layout "cuda.tc16x64.v1"; owns them (cudaFree in the destructor).
struct TcWeights {
  std::int64_t n = 0, k = 0, n_pad = 0, k_pad = 0, groups = 0;
  int group_size = 128;  // 32, 64, 128, 256 or kChannelwise (-1)
  ScalarType scalar = ScalarType::uint4b8;
  DType act_dtype = DType::f16;  // also the dtype of scales and bias
  bool has_bias = false, act_order = false;
  std::int32_t* qweight = nullptr;  // [N_pad/16][K_pad/64][32][4]
  void* scales = nullptr;           // act dtype [G][N_pad]
  std::uint8_t* zeros = nullptr;    // [G][N_pad/16][8], null for uint4b8
  void* bias = nullptr;             // act dtype [N] or null
  std::int32_t* perm = nullptr;     // [K] or null
  std::size_t bytes = 0;            // device bytes held (owned) or read in place (not owned)
  bool owned = true;                // false: the arrays are the caller's (TcKernel::adopt), never freed here
  const char* layout = kTcLayoutTag;

  // K-extent of one group (K for channelwise).
  std::int64_t group_len() const { return group_size == kChannelwise ? k : group_size; }
  // Bytes a kernel must stream per call at small M: packed weights + scales + zeros (padding included).
  std::size_t stream_bytes() const;

  TcWeights() = default;
  ~TcWeights();
  TcWeights(const TcWeights&) = delete;
  TcWeights& operator=(const TcWeights&) = delete;
};

// The host bytes of the layout: exactly what tc_prepare uploads.
struct TcHostLayout {
  std::int64_t n = 0, k = 0, n_pad = 0, k_pad = 0, groups = 0;
  std::vector<std::int32_t> qweight;  // [N_pad/16][K_pad/64][32][4]
  std::vector<std::uint16_t> scales;  // [G][N_pad] raw act-dtype bits
  std::vector<std::uint8_t> zeros;    // [G][N_pad/16][8], empty for uint4b8
  std::vector<std::uint16_t> bias;    // [N] raw act-dtype bits, empty without bias
  std::vector<std::int32_t> perm;     // [K], empty without act-order
};

// Host-side reference of the layout from a host canonical view (act_dtype f16 or bf16).
TcHostLayout tc_layout_host(const CanonicalView& w, DType act_dtype);

// Builds the layout on the host from a host or device canonical view, uploads on `stream`,
// synchronizes it. Throws w4a16::Error (invalid_argument, cuda_error).
std::unique_ptr<TcWeights> tc_prepare(const CanonicalView& w, DType act_dtype, cudaStream_t stream);

// A second device copy of prepared weights (benchmarks rotate copies to keep L2 cold).
std::unique_ptr<TcWeights> tc_clone(const TcWeights& w, cudaStream_t stream);

}  // namespace w4a16::kernels::cuda
