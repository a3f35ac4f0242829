// AMX kernel of fast_gemm (layout cpu.fast.v1, fast.hpp) and of amx_gemm_canonical (the canonical layout read in
// place, for the MoE experts): Intel's tile matrix unit (Sapphire Rapids and later) for the multiply, AVX-512 for the
// dequantization and the per-group scaling. This translation unit alone is compiled with -mamx-tile -mamx-bf16
// -mamx-int8 -mavx512f/bw/vl; fast.cpp calls it only after __builtin_cpu_supports says the CPU has them and
// amx_usable() has asked Linux for the tile state (arch_prctl ARCH_REQ_XCOMP_PERM).
//
// Math, exact up to fp32 summation (no weight or activation is rounded):
//   y[m, n] = sum_g s[n, g] * (C_g[m, n] - (128 + z[n, g]) * sum_{k in g} x[m, k]),
//   C_g[m, n] = sum_{k in g} x[m, k] * (128 + q[n, k])
// 128 + q is a bf16 (0x4300 | q: 128 has an ulp of 1 in bf16's 8-bit significand), so a weight word becomes two
// bf16 per 32-bit lane with a shift and one ternary-logic op. x enters as bf16: bfloat16 activations as they are;
// float16 ones as hi + lo, hi = bf16(x) rounded to nearest and lo = x - hi (exact: x has 11 significant bits, hi
// 8), two tile products per step. Each bf16 x bf16 product is exact in the fp32 accumulators of TDPBF16PS.
// C_g subtracts a term ~(128 + z) / |q - z| times larger than the result: ~5 of fp32's 24 bits, well below the
// 16-bit output's rounding.
// float16 x on the INT8 tiles instead (AMX-INT8, every AMX CPU so far; g >= 64 or channelwise; W4A16_CPU_AMX_INT8=0
// keeps the bf16 pair): x16 = x / xs rounded to int16 per token and 128 k (xs a power of two, as the VNNI kernel's x),
// split 256 hi (s8) + lo (u8); weights as bytes q (0..15). Per 64-k step TDPBSUD (hi x q) and TDPBUUD (lo x q) into
// two int32 C tiles per weight tile, exact; per span y += s (xs (256 C_hi + C_lo) - z sum x). Half the tile products
// of the bf16 pair (which needs two per 32 k); x exact where a block's values lie within 2^15 of its largest, else
// 15 bits below it (float16 has 11). One token tile at a time (its hi and lo fill the four C tiles).
//
// Tiles (8 registers of 16 rows x 64 bytes; INT8: span_products_i8): C 0..3 = 2 x 2 blocks of 16 tokens x 16 weight rows (fp32), A 4, 5 =
// x of 2 x 16 tokens x 32 k (bf16), B 6, 7 = weights of 2 x 16 rows x 32 k, in the VNNI order TDPBF16PS reads (a
// 32-bit lane = rows' k pair). The pair of a lane is (k, k + 4) within each 8-k word (nibbles i and i + 4 of the
// canonical word): the x rows are permuted the same way when they are converted, so any k order gives the same sum.
//
// Work: a task is (up to 256 tokens, up to 4 panels of 32 weight rows = 4 blocks of 8 each). Per 128-k chunk a panel is
// dequantized into an 8 KB buffer (L1, beside the chunk of x of a token pair) and reused by every 16-token tile of the
// task; per span (a group, or the chunk's piece of a longer one) the C tiles are zeroed, accumulated over the span's
// 32-k steps, stored, and scaled into the fp32 outputs of the task while the tiles multiply the next span. Decode sizes
// (M <= 16) take one token tile and one panel per task: the weights are read once, as in the AVX2 decode kernel, with
// the multiply off the vector units. The weights come through a source class (FastSource, CanonicalSource).
// Measured: docs/benchmarks/cpu.md.
// Check: w4a16_test_kernels_cpu (CpuFast*, isa=amx where the CPU has AMX); bench: w4a16_bench_cpu --isa.
#include "fast_impl.hpp"

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__linux__)
// GCC 12 reports its own AVX-512 headers' _mm512_undefined_* values as maybe uninitialized (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "w4a16/core/error.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace w4a16::kernels::cpu::impl {

namespace {

using i64 = std::int64_t;

constexpr i64 kTile = 16;          // tokens per A tile, weight rows per B tile
constexpr i64 kStepK = 32;         // k per tile product (16 bf16 pairs)
constexpr i64 kPanelRows = 32;     // weight rows per task: 2 B tiles = 4 blocks of kBlockRows
constexpr i64 kPanelBlocks = kPanelRows / kBlockRows;
constexpr i64 kChunkK = 128;       // k per dequantized chunk: 4 steps x 2 B tiles x 1 KB = 8 KB
constexpr i64 kTaskTokens = 256;   // tokens per task (16 A tiles), each chunk's weights reused by all of them
constexpr i64 kTaskPanels = 4;     // panels per task beyond one token tile (at most): each chunk of x reused by all of them (L2)
constexpr i64 kTileBytes = 1024;   // 16 rows x 64 bytes
static_assert(kChunkK % 32 == 0, "chunks of whole steps");

// The tile configuration (palette 1): every tile 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

void load_tile_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kTile;
  }
  _tile_loadconfig(&c);
}

// One call of the tile kernel, whatever layout its weights are in (the Src classes below).
struct Gemm {
  i64 m = 0, n = 0, k = 0, groups = 0, group_len = 0;
  DType act = DType::f16;                  // x
  const std::uint16_t* x = nullptr;        // [m][x_stride], columns x[:, perm] where perm is not null
  i64 x_stride = 0;
  const std::int32_t* perm = nullptr;
  void* out = nullptr;                     // [m][out_stride] of out_dtype: act (16-bit) or f32
  i64 out_stride = 0;
  DType out_dtype = DType::f16;
  int threads = 1;
};

// The converted activations and the sums of x over every span, for one call.
struct AmxX {
  bool i8 = false;       // x as int16 hi (s8) + lo (u8) bytes, weights as u8 (the INT8 tiles; see convert_x_i8)
  i64 step_k = kStepK;   // k per tile product: 32 (bf16 pairs) or 64 (byte quads)
  i64 rows = 0;          // tokens padded to a multiple of 16 (padding rows are zero)
  i64 steps = 0;         // K padded to step_k, in steps
  int parts = 1;         // parts of x: 1 (bfloat16), 2 (float16: bf16 hi, lo; or int8: hi, lo)
  i64 span = 0;          // k per span (the group, or kChunkK channelwise)
  i64 spans = 0;
  AlignedVector<std::uint16_t> a;  // [rows / 16][steps][parts][16 rows][64 bytes], k permuted (see the top): A tiles of 1 KB
  AlignedVector<float> sums;       // [rows][spans] sum of x over each span
  i64 xblocks = 0;                 // i8: 128-k blocks of x
  AlignedVector<float> xs;         // i8: [rows][xblocks] the power of two x was divided by
};

// fp32 -> bf16 bits, round to nearest even, NaN kept quiet (as float_to_bf16 in core/half.hpp).
inline __m256i to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i nan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, nan));
}

// 16 bf16 bits -> fp32 (exact).
inline __m512 bf16_to_ps(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

// 16 values of x row `xrow` from column k (fewer at the end of K: the rest 0; columns through p.perm), exact in fp32.
inline __m512 load_x16(const Gemm& p, const std::uint16_t* xrow, i64 k) {
  const i64 n = std::min<i64>(16, p.k - k);
  if (n <= 0) return _mm512_setzero_ps();
  __m256i h;
  if (p.perm) {
    alignas(32) std::uint16_t g[16] = {};
    for (i64 i = 0; i < n; ++i) g[i] = xrow[p.perm[k + i]];
    h = _mm256_load_si256(reinterpret_cast<const __m256i*>(g));
  } else {
    h = _mm256_maskz_loadu_epi16(static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1u), xrow + k);
  }
  return p.act == DType::bf16 ? bf16_to_ps(h) : _mm512_cvtph_ps(h);
}

// acc + the 16 values of v, in f64 (the sums of x: the zero-point term then adds no error of its own).
inline __m512d add_pd16(__m512d acc, __m512 v) {
  return _mm512_add_pd(acc, _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                                          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
}

// x (g.x, act dtype, columns through g.perm) -> ax.a, ax.sums. Position 2r + h of a 32-k step holds
// k = 8 (r / 4) + r % 4 + 4 h: the k pair of the weights' lane r (dequant_chunk).
void convert_x(const Gemm& p, AmxX& ax) {
  const i64 M = p.m, K = p.k;
  ax.rows = (M + kTile - 1) / kTile * kTile;
  ax.step_k = kStepK;
  ax.steps = (K + kStepK - 1) / kStepK;
  ax.parts = p.act == DType::f16 ? 2 : 1;
  // A span never crosses a chunk or a group: a group longer than a chunk (channelwise, or g > kChunkK) is scaled per
  // chunk-sized piece (its scale is the same for each).
  ax.span = p.groups == 1 ? kChunkK : std::min(p.group_len, kChunkK);  // (one group: K may be no multiple of 32)
  ax.spans = (ax.steps * kStepK + ax.span - 1) / ax.span;
  ax.a.resize(static_cast<std::size_t>(ax.rows * ax.steps * ax.parts * 32));
  ax.sums.resize(static_cast<std::size_t>(ax.rows * ax.spans));
#pragma omp parallel for schedule(static) num_threads(p.threads) if (M * K >= (1 << 16))
  for (i64 m = 0; m < ax.rows; ++m) {
    std::uint16_t* tiles = ax.a.data() + (m / kTile) * ax.steps * ax.parts * 512 + (m % kTile) * 32;  // this row of each tile
    float* sums = ax.sums.data() + m * ax.spans;
    if (m >= M) {  // padding rows: zero
      for (i64 s = 0; s < ax.steps * ax.parts; ++s) _mm512_storeu_si512(tiles + s * 512, _mm512_setzero_si512());
      std::fill(sums, sums + ax.spans, 0.f);
      continue;
    }
    const std::uint16_t* xrow = p.x + m * p.x_stride;
    // Position d = 2 r + h of a step holds k = 8 (r / 4) + r % 4 + 4 h of the step's 32: two permutes of its two halves.
    const __m512i perm_lo = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    const __m512i perm_hi = _mm512_add_epi32(perm_lo, _mm512_set1_epi32(16));
    __m512d acc = _mm512_setzero_pd();
    const i64 steps_per_span = ax.span / kStepK;
    for (i64 s = 0; s < ax.steps; ++s) {
      const i64 k0 = s * kStepK;
      const __m512 v0 = load_x16(p, xrow, k0), v1 = load_x16(p, xrow, k0 + 16);
      acc = add_pd16(add_pd16(acc, v0), v1);
      const __m512 a = _mm512_permutex2var_ps(v0, perm_lo, v1), b = _mm512_permutex2var_ps(v0, perm_hi, v1);
      const __m256i ha = to_bf16(a), hb = to_bf16(b);
      std::uint16_t* d = tiles + s * ax.parts * 512;
      _mm512_storeu_si512(d, _mm512_inserti64x4(_mm512_castsi256_si512(ha), hb, 1));
      if (ax.parts == 2) {  // lo = x - hi, exact in bf16
        const __m512 la = _mm512_sub_ps(a, bf16_to_ps(ha)), lb = _mm512_sub_ps(b, bf16_to_ps(hb));
        _mm512_storeu_si512(d + 512, _mm512_inserti64x4(_mm512_castsi256_si512(to_bf16(la)), to_bf16(lb), 1));
      }
      if ((s + 1) % steps_per_span == 0 || s + 1 == ax.steps) {
        sums[s / steps_per_span] = static_cast<float>(_mm512_reduce_add_pd(acc));
        acc = _mm512_setzero_pd();
      }
    }
  }
}

// x (g.x, float16, columns through g.perm) -> ax as int8 parts (ax.i8): per row and 128-k block a power of two xs, the
// least with max |x| / xs <= 32767, and x16 = round(x / xs) = 256 hi + lo, hi in [-128, 127] (s8), lo in [0, 255] (u8).
// Exact where a block's values lie within 2^15 of its largest (float16's 11 bits near it; smaller values keep 15 bits
// below it, as the VNNI kernel's x). Byte p of a 64-k step holds k = 8 (p / 8) + 2 (p % 4) + (p / 4) % 2: the order of
// the weights' byte quads (dequant_chunk_i8). A block holding an infinity or a NaN gets a NaN xs and zero bytes.
void convert_x_i8(const Gemm& p, AmxX& ax) {
  const i64 M = p.m, K = p.k;
  ax.rows = (M + kTile - 1) / kTile * kTile;
  ax.step_k = 64;
  ax.steps = (K + 63) / 64;
  ax.parts = 2;
  ax.span = p.groups == 1 ? kChunkK : std::min(p.group_len, kChunkK);  // 64 or 128 (i8 needs group_len % 64 == 0)
  ax.spans = (ax.steps * 64 + ax.span - 1) / ax.span;
  ax.xblocks = (ax.steps * 64 + kChunkK - 1) / kChunkK;
  ax.a.resize(static_cast<std::size_t>(ax.rows * ax.steps * ax.parts * 32));
  ax.sums.resize(static_cast<std::size_t>(ax.rows * ax.spans));
  ax.xs.resize(static_cast<std::size_t>(ax.rows * ax.xblocks));
  const __m512i order = _mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15);
#pragma omp parallel for schedule(static) num_threads(p.threads) if (M * K >= (1 << 16))
  for (i64 m = 0; m < ax.rows; ++m) {
    auto* tiles = reinterpret_cast<std::uint8_t*>(ax.a.data() + (m / kTile) * ax.steps * ax.parts * 512) + (m % kTile) * 64;
    float* sums = ax.sums.data() + m * ax.spans;
    float* xs = ax.xs.data() + m * ax.xblocks;
    if (m >= M) {  // padding rows: zero
      for (i64 s = 0; s < ax.steps * ax.parts; ++s) _mm512_storeu_si512(tiles + s * kTileBytes, _mm512_setzero_si512());
      std::fill(sums, sums + ax.spans, 0.f);
      std::fill(xs, xs + ax.xblocks, 0.f);
      continue;
    }
    const std::uint16_t* xrow = p.x + m * p.x_stride;
    for (i64 b = 0; b < ax.xblocks; ++b) {
      alignas(64) float v[kChunkK];  // the block's x (0 past K), exact in fp32
      for (i64 i = 0; i < kChunkK; i += 16) _mm512_store_ps(v + i, load_x16(p, xrow, b * kChunkK + i));
      __m512 mx = _mm512_setzero_ps();
      __m512d acc = _mm512_setzero_pd();
      for (i64 i = 0; i < kChunkK; i += 16) {
        const __m512 x = _mm512_load_ps(v + i);
        mx = _mm512_max_ps(mx, _mm512_abs_ps(x));  // a NaN lane is caught below
        acc = add_pd16(acc, x);
        if (ax.span < kChunkK && (i + 16) % ax.span == 0) {  // spans of 64: two per block
          const i64 e = (b * kChunkK + i) / ax.span;
          if (e < ax.spans) sums[e] = static_cast<float>(_mm512_reduce_add_pd(acc));
          acc = _mm512_setzero_pd();
        }
      }
      if (ax.span == kChunkK && b < ax.spans) sums[b] = static_cast<float>(_mm512_reduce_add_pd(acc));
      const float top = _mm512_reduce_max_ps(mx);
      bool finite = std::isfinite(top);
      for (i64 i = 0; i < kChunkK && finite; ++i) finite = !std::isnan(v[i]);
      const int e = finite ? x16_exponent(top) : 0;
      xs[b] = finite ? std::ldexp(1.f, e) : std::numeric_limits<float>::quiet_NaN();
      const __m512 inv = _mm512_set1_ps(finite ? std::ldexp(1.f, -e) : 0.f);  // float16: 2^-e <= 2^39, exact
      for (i64 i = 0; i < kChunkK; i += 16) {
        const i64 s = (b * kChunkK + i) / 64;
        if (s >= ax.steps) break;
        const __m512 x = _mm512_permutexvar_ps(order, _mm512_load_ps(v + i));
        const __m512i x16 = finite ? _mm512_cvtps_epi32(_mm512_mul_ps(x, inv)) : _mm512_setzero_si512();  // nearest even
        const __m128i hi = _mm512_cvtepi32_epi8(_mm512_srai_epi32(x16, 8));
        const __m128i lo = _mm512_cvtepi32_epi8(_mm512_and_si512(x16, _mm512_set1_epi32(255)));
        std::uint8_t* d = tiles + s * ax.parts * kTileBytes + (b * kChunkK + i) % 64;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d), hi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + kTileBytes), lo);
      }
    }
  }
}

// Where the tile kernel reads a layer's weights. A Src gives, for blocks b, b + 1 (16 weight rows, lane l = row 8 b + l):
//   words16(b, j0, nj, v)   v[jj] = the words j0 + jj (jj < nj, and only those < K / 8; else 0) of the 16 rows
//   scales16(b, g)          their scales of group g as fp32; zeros16(b, g): 128 + z (uint4b8: 136)
//   bias16(n0, keep)        bias of rows n0 .. n0 + 15 as fp32 (0 without bias), lanes in `keep` only
//   prefetch(b0, k0, kc, g) asks for what a panel's chunk will read (g: the group length)
// Rows past N read nothing and come out 0.

// 16 fp16 / bf16 bits -> fp32 (exact).
inline __m512 half_to_ps(__m256i h, bool bf16) { return bf16 ? bf16_to_ps(h) : _mm512_cvtph_ps(h); }

// 128 + z from the packed zero words of blocks b, b + 1 (the same [N / 8][G] in both layouts).
inline __m512 zeros_of(std::uint32_t z0, std::uint32_t z1) {
  const __m512i shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  const __m512i words = _mm512_mask_set1_epi32(_mm512_set1_epi32(static_cast<int>(z0)), 0xFF00, static_cast<int>(z1));
  const __m512i z = _mm512_and_si512(_mm512_srlv_epi32(words, shifts), _mm512_set1_epi32(15));
  return _mm512_add_ps(_mm512_cvtepi32_ps(z), _mm512_set1_ps(128.f));
}

// cpu.fast.v1 (fast.hpp): word (b, j, l) = canonical word (8 b + l, j), scales [Nb][G][8], bias f32 [Nb * 8].
struct FastSource {
  const FastWeights& w;
  i64 words, G;
  explicit FastSource(const FastWeights& fw) : w(fw), words(fw.spec.k / 8), G(fw.spec.groups()) {}
  i64 blocks() const { return w.blocks; }
  void words16(i64 b, i64 j0, i64 nj, __m512i* v) const {
    const bool lo_ok = b < w.blocks, hi_ok = b + 1 < w.blocks;
    const std::uint32_t* q0 = w.qweight.data() + b * words * kBlockRows;
    const std::uint32_t* q1 = q0 + words * kBlockRows;
    for (i64 jj = 0; jj < nj; ++jj) {
      const i64 j = j0 + jj;
      if (j >= words) {
        v[jj] = _mm512_setzero_si512();
        continue;
      }
      const __m256i lo = lo_ok ? _mm256_load_si256(reinterpret_cast<const __m256i*>(q0 + j * kBlockRows)) : _mm256_setzero_si256();
      const __m256i hi = hi_ok ? _mm256_load_si256(reinterpret_cast<const __m256i*>(q1 + j * kBlockRows)) : _mm256_setzero_si256();
      v[jj] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
  }
  __m512 scales16(i64 b, i64 g) const {
    auto half = [&](i64 bb) {
      return bb < w.blocks ? _mm_load_si128(reinterpret_cast<const __m128i*>(w.scales.data() + (bb * G + g) * kBlockRows)) : _mm_setzero_si128();
    };
    return half_to_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(half(b)), half(b + 1), 1), w.scale_dtype == DType::bf16);
  }
  __m512 zeros16(i64 b, i64 g) const {
    if (w.zeros.empty()) return _mm512_set1_ps(136.f);
    return zeros_of(b < w.blocks ? w.zeros[static_cast<std::size_t>(b * G + g)] : 0u,
                    b + 1 < w.blocks ? w.zeros[static_cast<std::size_t>((b + 1) * G + g)] : 0u);
  }
  __m512 bias16(i64 n0, __mmask16 keep) const {
    return w.has_bias() ? _mm512_maskz_loadu_ps(keep, w.bias.data() + n0) : _mm512_setzero_ps();
  }
  // Into L2 while the tiles work on the chunk before: without it each chunk's 8 KB arrive at a cold stream's latency.
  void prefetch(i64 b0, i64 k0, i64 kc, i64 group_len) const {
    const i64 j0 = k0 / 8, j1 = std::min(words, (k0 + kc) / 8);
    const i64 g0 = std::min(G - 1, k0 / group_len), g1 = std::min(G - 1, (k0 + kc - 1) / group_len);
    for (i64 b = b0; b < std::min(b0 + kPanelBlocks, w.blocks); ++b) {
      const auto* q = reinterpret_cast<const char*>(w.qweight.data() + (b * words + j0) * kBlockRows);
      for (i64 off = 0; off < (j1 - j0) * kBlockRows * 4; off += 64) _mm_prefetch(q + off, _MM_HINT_T1);
      const auto* sc = reinterpret_cast<const char*>(w.scales.data() + (b * G + g0) * kBlockRows);
      for (i64 off = 0; off < (g1 - g0 + 1) * kBlockRows * 2; off += 64) _mm_prefetch(sc + off, _MM_HINT_T1);
    }
  }
};

// The canonical layout (shared/FORMATS.md): qweight [N][K / 8], scales [N][G] and bias [N] in the scale dtype, zeros
// [N / 8][G]; read in place (the MoE experts: no prepared copy). A word column of 16 rows is one masked gather.
struct CanonicalSource {
  const CanonicalView& w;
  i64 n, words, G;
  explicit CanonicalSource(const CanonicalView& cv) : w(cv), n(cv.spec.n), words(cv.spec.k / 8), G(cv.spec.groups()) {}
  i64 blocks() const { return (n + kBlockRows - 1) / kBlockRows; }
  __mmask16 rows_of(i64 b) const {  // rows 8 b .. 8 b + 15 that exist
    const i64 left = n - b * kBlockRows;
    return static_cast<__mmask16>(left >= 16 ? 0xFFFF : left <= 0 ? 0 : (1u << left) - 1u);
  }
  void words16(i64 b, i64 j0, i64 nj, __m512i* v) const {
    const __mmask16 rows = rows_of(b);
    const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(static_cast<int>(words)));
    const std::int32_t* base = w.qweight + b * kBlockRows * words;
    for (i64 jj = 0; jj < nj; ++jj) {
      const i64 j = j0 + jj;
      v[jj] = j < words ? _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, offs, base + j, 4) : _mm512_setzero_si512();
    }
  }
  __m512 load16(const std::uint16_t* p, i64 stride, __mmask16 keep) const {  // p[l * stride] for lanes in keep, else 0
    alignas(32) std::uint16_t h[16] = {};
    for (int l = 0; l < 16; ++l)
      if (keep >> l & 1) h[l] = p[l * stride];
    return half_to_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)), w.scale_dtype == DType::bf16);
  }
  __m512 scales16(i64 b, i64 g) const { return load16(w.scales + b * kBlockRows * G + g, G, rows_of(b)); }
  __m512 zeros16(i64 b, i64 g) const {
    if (!w.zeros.defined()) return _mm512_set1_ps(136.f);
    const std::int32_t* z = w.zeros.data();  // uint4: N % 8 == 0, so a block exists or not as a whole
    return zeros_of(b < blocks() ? static_cast<std::uint32_t>(z[b * G + g]) : 0u,
                    b + 1 < blocks() ? static_cast<std::uint32_t>(z[(b + 1) * G + g]) : 0u);
  }
  __m512 bias16(i64 n0, __mmask16 keep) const { return w.has_bias() ? load16(w.bias + n0, 1, keep) : _mm512_setzero_ps(); }
  void prefetch(i64 b0, i64 k0, i64 kc, i64) const {
    const i64 j0 = k0 / 8, j1 = std::min(words, (k0 + kc) / 8);
    for (i64 r = b0 * kBlockRows; r < std::min(n, (b0 + kPanelBlocks) * kBlockRows); ++r)
      for (i64 off = 0; off < (j1 - j0) * 4; off += 64) _mm_prefetch(reinterpret_cast<const char*>(w.qweight + r * words + j0) + off, _MM_HINT_T1);
  }
};

// The panel's weights of k in [k0, k0 + kc) -> buf [kc / 32 steps][2 B tiles][16 lane rows][16 weight rows] u32,
// lane row r = 4 (word in step) + nibble pair i: bf16 pairs (128 + q[k], 128 + q[k + 4]), k = 8 word + i. Rows past
// N and k past K hold q = 0 (multiplied by x = 0 or never stored).
template <class Src>
void dequant_chunk(const Src& src, i64 b0, i64 k0, i64 kc, std::uint32_t* buf) {
  static_assert(kChunkK / 8 <= 16, "a chunk's words of 16 rows fit 16 registers");
  const __m512i mask = _mm512_set1_epi32(0x000F000F), magic = _mm512_set1_epi32(0x43004300);
  for (i64 t = 0; t < 2; ++t) {
    __m512i v[16];
    src.words16(b0 + 2 * t, k0 / 8, kc / 8, v);
    for (i64 jl = 0; jl < kc / 8; ++jl) {  // word in the chunk
      std::uint32_t* d = buf + ((jl / 4 * 2 + t) * 16 + 4 * (jl % 4)) * 16;
      _mm512_store_si512(d, _mm512_ternarylogic_epi32(v[jl], mask, magic, 0xEA));  // (v & mask) | magic
      _mm512_store_si512(d + 16, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v[jl], 4), mask, magic, 0xEA));
      _mm512_store_si512(d + 32, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v[jl], 8), mask, magic, 0xEA));
      _mm512_store_si512(d + 48, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v[jl], 12), mask, magic, 0xEA));
    }
  }
}

// The INT8 tiles' form of the same chunk (ax.i8): buf [kc / 64 steps][2 B tiles][16 quad rows][16 weight rows] u32,
// quad row 2 w + h of a step = the bytes q[8 word + 2 i + h], i = 0..3, of its weight rows: (v >> 4 h) & 0x0F0F0F0F.
template <class Src>
void dequant_chunk_i8(const Src& src, i64 b0, i64 k0, i64 kc, std::uint32_t* buf) {
  const __m512i mask = _mm512_set1_epi32(0x0F0F0F0F);
  for (i64 t = 0; t < 2; ++t) {
    __m512i v[16];
    src.words16(b0 + 2 * t, k0 / 8, kc / 8, v);
    for (i64 jl = 0; jl < kc / 8; ++jl) {
      std::uint32_t* d = buf + (((jl / 8) * 2 + t) * 16 + 2 * (jl % 8)) * 16;
      _mm512_store_si512(d, _mm512_and_si512(v[jl], mask));
      _mm512_store_si512(d + 16, _mm512_and_si512(_mm512_srli_epi32(v[jl], 4), mask));
    }
  }
}

// C 0..3 = 0 (tile numbers are immediates: no loop).
inline void zero_c_tiles() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

// The INT8 products of one span for one token tile: C 0, 1 = hi (s8) x weight tiles 6, 7, C 2, 3 = lo (u8) x the same,
// int32, exact (per span of <= 128 k: |hi sums| <= 128 x 15 x 128, lo sums <= 255 x 15 x 128).
inline void span_products_i8(const unsigned char* a, const unsigned char* bsteps, i64 steps) {
  zero_c_tiles();
  for (i64 s = 0; s < steps; ++s) {
    const unsigned char* bt = bsteps + s * 2 * kTileBytes;
    _tile_loadd(6, bt, 64);
    _tile_loadd(7, bt + kTileBytes, 64);
    _tile_loadd(4, a + s * 2 * kTileBytes, 64);
    _tile_loadd(5, a + s * 2 * kTileBytes + kTileBytes, 64);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbuud(2, 5, 6);
    _tile_dpbuud(3, 5, 7);
  }
}

// Per-thread buffers (OpenMP pool threads persist: allocated once per thread).
struct Scratch {
  AlignedVector<std::uint32_t> b = AlignedVector<std::uint32_t>(static_cast<std::size_t>(kChunkK / kStepK * 2 * kTileBytes / 4));
  AlignedVector<float> c = AlignedVector<float>(2 * 4 * kTileBytes / 4);  // two sets of 4 C tiles
  // Per span of the chunk (<= 16) and weight tile: the 16 scales and the 16 values 128 + z, fp32.
  AlignedVector<float> sz = AlignedVector<float>(static_cast<std::size_t>(kChunkK / kStepK * 2 * 2 * 16));
  AlignedVector<float> y = AlignedVector<float>(static_cast<std::size_t>(kTaskTokens * kTaskPanels * kPanelRows));
};

// The tile products of one span (k in [e0, e1), whole 32-k steps) for the token tile(s) at a0 (and a1 when pair),
// into C 0..3 (zeroed first): token tiles 0, 1 x weight tiles 6, 7, four independent chains. One token tile: C 0, 1
// only (four chains, its lo parts or every other step in C 2, 3, measured 5-20% slower at M = 2..16: twice the tile
// stores, in a loop bound by the weights' stream, not by the chains). bsteps: the chunk's weight tiles of the span's
// first step.
inline void span_products(const unsigned char* a0, const unsigned char* a1, const unsigned char* bsteps, i64 steps, i64 step_bytes,
                          bool pair, bool split) {
  zero_c_tiles();
  for (i64 s = 0; s < steps; ++s) {
    const unsigned char* bt = bsteps + s * 2 * kTileBytes;
    const i64 aoff = s * step_bytes;
    _tile_loadd(6, bt, 64);
    _tile_loadd(7, bt + kTileBytes, 64);
    if (pair) {
      _tile_loadd(4, a0 + aoff, 64);
      _tile_loadd(5, a1 + aoff, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
      if (split) {
        _tile_loadd(4, a0 + aoff + kTileBytes, 64);
        _tile_loadd(5, a1 + aoff + kTileBytes, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
    } else {  // one token tile: two chains (C 0, 1); float16's lo part accumulates into the same ones
      _tile_loadd(4, a0 + aoff, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      if (split) {
        _tile_loadd(5, a0 + aoff + kTileBytes, 64);
        _tile_dpbf16ps(0, 5, 6);
        _tile_dpbf16ps(1, 5, 7);
      }
    }
  }
}

// A span's C tiles, stored, waiting to be scaled into y.
struct StoredSpan {
  bool valid = false, pair = false;
  i64 t0 = 0, ei = 0, e = 0;  // first token of the task's tile pair, span of the chunk, span of K
  float* c = nullptr;         // 4 tiles of 16 x 16 fp32
};

// One task: tokens [m0, m0 + tokens) (a multiple of 16, padding included) x `panels` panels from block b0.
// Software-pipelined: a span's C tiles are stored and its products for the next span issued before it is scaled into
// y, so that the vector units scale one span while the tile unit multiplies the next.
template <class Src>
void run_task(const Gemm& p, const Src& src, const AmxX& ax, i64 m0, i64 tokens, i64 b0, i64 panels, Scratch& sc) {
  const i64 kp = ax.steps * ax.step_k, yw = panels * kPanelRows;  // y row width
  const bool split = ax.parts == 2;
  float* y = sc.y.data();
  std::fill(y, y + tokens * yw, 0.f);
  const auto* abase = reinterpret_cast<const unsigned char*>(ax.a.data());
  const auto* bbuf = reinterpret_cast<const unsigned char*>(sc.b.data());
  const i64 step_bytes = ax.parts * kTileBytes, tile_bytes = ax.steps * step_bytes;  // per step, per token tile

  // y += s * (C - (128 + z) * sum x) for the stored span, real tokens only; panel pi.
  auto scale_into_y = [&](const StoredSpan& st, i64 pi) {
    for (int h = 0; h < 2; ++h) {
      const __m512 sv = _mm512_load_ps(sc.sz.data() + ((st.ei * 2 + h) * 2) * 16);
      const __m512 zv = _mm512_load_ps(sc.sz.data() + ((st.ei * 2 + h) * 2 + 1) * 16);
      for (int tt = 0; tt < (st.pair ? 2 : 1); ++tt) {
        const i64 row0 = st.t0 + tt * kTile, real = std::min<i64>(kTile, p.m - m0 - row0);
        const float* ct = st.c + (2 * tt + h) * 256;
        const float* xs = ax.sums.data() + (m0 + row0) * ax.spans + st.e;
        float* yt = y + row0 * yw + pi * kPanelRows + h * kTile;
        for (i64 r = 0; r < real; ++r) {
          const __m512 d = _mm512_fnmadd_ps(zv, _mm512_set1_ps(xs[r * ax.spans]), _mm512_load_ps(ct + r * 16));
          _mm512_store_ps(yt + r * yw, _mm512_fmadd_ps(sv, d, _mm512_load_ps(yt + r * yw)));
        }
      }
    }
  };
  // The same for the INT8 tiles (one token tile): y += s * (xs C - z sum x), C = 256 C_hi + C_lo (int32, exact).
  auto scale_into_y_i8 = [&](const StoredSpan& st, i64 pi) {
    const i64 row0 = st.t0, real = std::min<i64>(kTile, p.m - m0 - row0);
    const float* xsum = ax.sums.data() + (m0 + row0) * ax.spans + st.e;
    const float* xsc = ax.xs.data() + (m0 + row0) * ax.xblocks + st.e * ax.span / kChunkK;
    for (int h = 0; h < 2; ++h) {
      const __m512 sv = _mm512_load_ps(sc.sz.data() + ((st.ei * 2 + h) * 2) * 16);
      const __m512 z = _mm512_sub_ps(_mm512_load_ps(sc.sz.data() + ((st.ei * 2 + h) * 2 + 1) * 16), _mm512_set1_ps(128.f));
      const auto* chi = reinterpret_cast<const std::int32_t*>(st.c) + h * 256;
      const std::int32_t* clo = chi + 512;
      float* yt = y + row0 * yw + pi * kPanelRows + h * kTile;
      for (i64 r = 0; r < real; ++r) {
        const __m512i c = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(chi + r * 16), 8), _mm512_load_si512(clo + r * 16));
        const __m512 d = _mm512_fmsub_ps(_mm512_set1_ps(xsc[r * ax.xblocks]), _mm512_cvtepi32_ps(c),
                                         _mm512_mul_ps(z, _mm512_set1_ps(xsum[r * ax.spans])));
        _mm512_store_ps(yt + r * yw, _mm512_fmadd_ps(sv, d, _mm512_load_ps(yt + r * yw)));
      }
    }
  };

  for (i64 k0 = 0; k0 < kp; k0 += kChunkK) {
    const i64 kc = std::min(kChunkK, kp - k0);
    for (i64 pi = 0; pi < panels; ++pi) {
      const i64 bp = b0 + pi * kPanelBlocks;
      if (bp >= src.blocks()) break;
      if (ax.i8)
        dequant_chunk_i8(src, bp, k0, kc, sc.b.data());
      else
        dequant_chunk(src, bp, k0, kc, sc.b.data());
      for (i64 e0 = k0, i = 0; e0 < k0 + kc; e0 += ax.span, ++i) {
        const i64 g = e0 / p.group_len;
        for (int h = 0; h < 2; ++h) {
          _mm512_store_ps(sc.sz.data() + ((i * 2 + h) * 2) * 16, src.scales16(bp + 2 * h, g));
          _mm512_store_ps(sc.sz.data() + ((i * 2 + h) * 2 + 1) * 16, src.zeros16(bp + 2 * h, g));
        }
      }
      // The chunk after this one: the next panel of the task at this k, or the first at the next k.
      if (pi + 1 < panels && bp + kPanelBlocks < src.blocks())
        src.prefetch(bp + kPanelBlocks, k0, kc, p.group_len);
      else if (k0 + kChunkK < kp)
        src.prefetch(b0, k0 + kChunkK, std::min(kChunkK, kp - k0 - kChunkK), p.group_len);
      StoredSpan prev;
      int cbuf = 0;  // C tiles alternate between two buffers: a span is stored while the one before is read
      for (i64 t0 = 0; t0 < tokens; t0 += (ax.i8 ? 1 : 2) * kTile) {
        const bool pair = !ax.i8 && t0 + kTile < tokens;  // two token tiles (else one; INT8: its hi and lo take C 2, 3)
        const unsigned char* a0 = abase + (m0 + t0) / kTile * tile_bytes;
        for (i64 e0 = k0; e0 < k0 + kc; e0 += ax.span) {
          const i64 e1 = std::min(e0 + ax.span, k0 + kc);
          if (ax.i8)  // steps of 64 k (constant divisors: these run once a span)
            span_products_i8(a0 + e0 / 64 * step_bytes, bbuf + (e0 - k0) / 64 * 2 * kTileBytes, (e1 - e0) / 64);
          else
            span_products(a0 + e0 / kStepK * step_bytes, a0 + tile_bytes + e0 / kStepK * step_bytes,
                          bbuf + (e0 - k0) / kStepK * 2 * kTileBytes, (e1 - e0) / kStepK, step_bytes, pair, split);
          if (prev.valid) ax.i8 ? scale_into_y_i8(prev, pi) : scale_into_y(prev, pi);
          float* c = sc.c.data() + cbuf * 1024;
          _tile_stored(0, c, 64);
          _tile_stored(1, c + 256, 64);
          if (pair || ax.i8) {
            _tile_stored(2, c + 512, 64);
            _tile_stored(3, c + 768, 64);
          }
          prev = StoredSpan{true, pair, t0, (e0 - k0) / ax.span, e0 / ax.span, c};
          cbuf ^= 1;
        }
      }
      if (prev.valid) ax.i8 ? scale_into_y_i8(prev, pi) : scale_into_y(prev, pi);
    }
  }
  // Store the task's real tokens and rows (+ bias): act dtype, or fp32.
  const i64 n0 = b0 * kBlockRows, ncols = std::min(yw, p.n - n0), mend = std::min(tokens, p.m - m0);
  for (i64 r = 0; r < mend; ++r) {
    const float* yr = y + r * yw;
    for (i64 c0 = 0; c0 < ncols; c0 += kTile) {
      const i64 cols = std::min(kTile, ncols - c0);
      const auto keep = static_cast<__mmask16>((1u << cols) - 1u);
      const __m512 v = _mm512_add_ps(_mm512_load_ps(yr + c0), src.bias16(n0 + c0, keep));
      if (p.out_dtype == DType::f32) {
        _mm512_mask_storeu_ps(static_cast<float*>(p.out) + (m0 + r) * p.out_stride + n0 + c0, keep, v);
        continue;
      }
      const __m256i o = p.out_dtype == DType::bf16 ? to_bf16(v) : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_mask_storeu_epi16(static_cast<std::uint16_t*>(p.out) + (m0 + r) * p.out_stride + n0 + c0, keep, o);
    }
  }
}

// float16 x on the INT8 tiles (half the tile products of its bf16 hi + lo pair) where the CPU has them and every span
// is whole 64-k steps (g = 64, 128, 256, channelwise). W4A16_CPU_AMX_INT8=0 keeps the bf16 pair (A/B measurement).
bool int8_fits(const Gemm& p) {
  static const bool cpu = __builtin_cpu_supports("amx-int8");
  const char* e = std::getenv("W4A16_CPU_AMX_INT8");
  if (e && *e && std::string_view(e) != "0" && std::string_view(e) != "1")
    fail(ErrorCode::invalid_argument, "W4A16_CPU_AMX_INT8", "0 or 1", e);
  const bool off = e && std::string_view(e) == "0";
  return cpu && !off && p.act == DType::f16 && (p.groups == 1 || p.group_len % 64 == 0);
}

template <class Src>
void amx_run(const Gemm& p, const Src& src) {
  static thread_local AmxX ax;  // the caller's thread converts x; the pool threads read it
  ax.i8 = int8_fits(p);
  if (ax.i8)
    convert_x_i8(p, ax);
  else
    convert_x(p, ax);
  // One token tile: a task per panel (the chunk of x is tiny); more: kTaskPanels panels per task share it.
  // Fewer where that would leave fewer than 4 tasks per thread (narrow layers: Qwen2.5-0.5B's 896 rows are 28 panels).
  const i64 panels = (src.blocks() + kPanelBlocks - 1) / kPanelBlocks;
  const i64 mblocks = (ax.rows + kTaskTokens - 1) / kTaskTokens;
  i64 task_panels = ax.rows > kTile ? kTaskPanels : 1;
  while (task_panels > 1 && (panels + task_panels - 1) / task_panels * mblocks < 4 * p.threads) task_panels /= 2;
  const i64 ntasks_n = (panels + task_panels - 1) / task_panels;
  const i64 tasks = ntasks_n * mblocks;
  const AmxX& cx = ax;
#pragma omp parallel num_threads(p.threads)
  {
    static thread_local Scratch sc;
    load_tile_config();
    // Tasks m-block major, handed out one at a time: the threads share a block of x while walking the panels.
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tasks; ++t) {
      const i64 m0 = (t / ntasks_n) * kTaskTokens;
      run_task(p, src, cx, m0, std::min(kTaskTokens, cx.rows - m0), (t % ntasks_n) * task_panels * kPanelBlocks, task_panels, sc);
    }
    _tile_release();
  }
}

}  // namespace

bool amx_usable() {
  // Linux hands out the 8 KB tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): once
  // per process, for every thread.
  static const bool ok = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return ok;
}

void run_amx(const Problem& p) {
  amx_run(Gemm{.m = p.m, .n = p.n, .k = p.k, .groups = p.groups, .group_len = p.group_len, .act = p.w->act_dtype, .x = p.x,
               .x_stride = p.x_stride, .perm = p.perm, .out = p.out, .out_stride = p.out_stride, .out_dtype = p.out_dtype,
               .threads = p.threads},
          FastSource(*p.w));
}

void run_amx_canonical(const CanonicalView& w, DType act, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride, float* out,
                       std::int64_t out_stride, int threads) {
  amx_run(Gemm{.m = m, .n = w.spec.n, .k = w.spec.k, .groups = w.spec.groups(), .group_len = w.spec.group_len(), .act = act,
               .x = x, .x_stride = x_stride, .perm = w.perm, .out = out, .out_stride = out_stride, .out_dtype = DType::f32,
               .threads = threads},
          CanonicalSource(w));
}

}  // namespace w4a16::kernels::cpu::impl

#endif
