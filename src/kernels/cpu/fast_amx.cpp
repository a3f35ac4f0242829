// AMX-BF16 kernel of fast_gemm (layout cpu.fast.v1, fast.hpp): Intel's tile matrix unit (Sapphire Rapids and later)
// for the multiply, AVX-512 for the dequantization and the per-group scaling. This translation unit alone is compiled
// with -mamx-tile -mamx-bf16 -mavx512f -mavx512bw; fast.cpp calls it only after __builtin_cpu_supports says the CPU
// has them and amx_usable() has asked Linux for the tile state (arch_prctl ARCH_REQ_XCOMP_PERM).
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
//
// Tiles (8 registers of 16 rows x 64 bytes): C 0..3 = 2 x 2 blocks of 16 tokens x 16 weight rows (fp32), A 4, 5 =
// x of 2 x 16 tokens x 32 k (bf16), B 6, 7 = weights of 2 x 16 rows x 32 k, in the VNNI order TDPBF16PS reads (a
// 32-bit lane = rows' k pair). The pair of a lane is (k, k + 4) within each 8-k word (nibbles i and i + 4 of the
// canonical word): the x rows are permuted the same way when they are converted, so any k order gives the same sum.
//
// Work: a task is (up to 128 tokens, a panel of 32 weight rows = 4 cpu.fast.v1 blocks). Per 512-k chunk the panel is
// dequantized into a 32 KB buffer (L1) and reused by every 16-token tile of the task; per span (a group, or 512 k
// channelwise) the C tiles are zeroed, accumulated over the span's 32-k steps, stored, and scaled into the fp32
// outputs of the task (16 KB). Decode sizes (M <= 16) take one token tile: the weights are read once, as in the AVX2
// decode kernel, with the multiply off the vector units.
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
#include <cstring>

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
constexpr i64 kChunkK = 512;       // k per dequantized chunk: 16 steps x 2 B tiles x 1 KB = 32 KB
constexpr i64 kTaskTokens = 128;   // tokens per task (8 A tiles), each chunk's weights reused by all of them
constexpr i64 kTileBytes = 1024;   // 16 rows x 64 bytes
static_assert(kChunkK % 256 == 0, "every group (32..256 k) lies inside one chunk");

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

// The converted activations and the sums of x over every span, for one call.
struct AmxX {
  i64 rows = 0;          // tokens padded to a multiple of 16 (padding rows are zero)
  i64 steps = 0;         // K padded to 32, in 32-k steps
  int parts = 1;         // bf16 parts of x: 1 (bfloat16), 2 (float16: hi, lo)
  i64 row_bytes = 0;     // steps x parts x 64
  i64 span = 0;          // k per span (the group, or kChunkK channelwise)
  i64 spans = 0;
  AlignedVector<std::uint16_t> a;  // [rows][steps][parts][32] bf16, k permuted (see the top)
  AlignedVector<float> sums;       // [rows][spans] sum of x over each span
};

inline std::uint16_t bf16_rne(float f) {  // finite inputs (x are fp16 / bf16 values)
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_value(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// x (p.xf, fp32 [m][k], exact 16-bit values) -> ax.a, ax.sums. Position 2r + h of a 32-k step holds
// k = 8 (r / 4) + r % 4 + 4 h: the k pair of the weights' lane r (dequant_chunk).
void convert_x(const Problem& p, AmxX& ax) {
  const i64 M = p.m, K = p.k;
  ax.rows = (M + kTile - 1) / kTile * kTile;
  ax.steps = (K + kStepK - 1) / kStepK;
  ax.parts = p.w->act_dtype == DType::f16 ? 2 : 1;
  ax.row_bytes = ax.steps * ax.parts * 64;
  ax.span = p.groups == 1 ? kChunkK : p.group_len;  // one scale per row: any span (a multiple of 32) will do
  ax.spans = (ax.steps * kStepK + ax.span - 1) / ax.span;
  ax.a.resize(static_cast<std::size_t>(ax.rows * ax.row_bytes / 2));
  ax.sums.resize(static_cast<std::size_t>(ax.rows * ax.spans));
  const i64 words_per_row = ax.row_bytes / 2;
#pragma omp parallel for schedule(static) num_threads(p.threads) if (M * K >= (1 << 16))
  for (i64 m = 0; m < ax.rows; ++m) {
    std::uint16_t* dst = ax.a.data() + m * words_per_row;
    float* sums = ax.sums.data() + m * ax.spans;
    if (m >= M) {
      std::fill(dst, dst + words_per_row, std::uint16_t{0});
      std::fill(sums, sums + ax.spans, 0.f);
      continue;
    }
    const float* x = p.xf + m * K;
    for (i64 s = 0; s < ax.steps; ++s) {
      std::uint16_t* d = dst + s * ax.parts * 32;
      for (int r = 0; r < 16; ++r)
        for (int h = 0; h < 2; ++h) {
          const i64 k = s * kStepK + 8 * (r / 4) + r % 4 + 4 * h;
          const float v = k < K ? x[k] : 0.f;
          const std::uint16_t hi = bf16_rne(v);
          d[2 * r + h] = hi;
          if (ax.parts == 2) d[32 + 2 * r + h] = bf16_rne(v - bf16_value(hi));  // exact
        }
    }
    for (i64 e = 0; e < ax.spans; ++e) {
      double acc = 0;  // f64, so the zero-point term adds no error of its own
      for (i64 k = e * ax.span; k < std::min(K, (e + 1) * ax.span); ++k) acc += x[k];
      sums[e] = static_cast<float>(acc);
    }
  }
}

// The panel's weights of k in [k0, k0 + kc) -> buf [kc / 32 steps][2 B tiles][16 lane rows][16 weight rows] u32,
// lane row r = 4 (word in step) + nibble pair i: bf16 pairs (128 + q[k], 128 + q[k + 4]), k = 8 word + i. Rows of
// blocks past the last and k past K hold q = 0 (multiplied by x = 0 or never stored).
void dequant_chunk(const Problem& p, i64 b0, i64 k0, i64 kc, std::uint32_t* buf) {
  const FastWeights& w = *p.w;
  const i64 words = p.k / 8;
  const __m512i mask = _mm512_set1_epi32(0x000F000F), magic = _mm512_set1_epi32(0x43004300);
  for (i64 t = 0; t < 2; ++t) {
    const i64 b = b0 + 2 * t;
    const bool lo_ok = b < w.blocks, hi_ok = b + 1 < w.blocks;
    const std::uint32_t* q0 = w.qweight.data() + b * words * kBlockRows;
    const std::uint32_t* q1 = q0 + words * kBlockRows;
    for (i64 j = k0 / 8; j < (k0 + kc) / 8; ++j) {
      __m512i v = _mm512_setzero_si512();
      if (j < words) {
        const __m256i lo = lo_ok ? _mm256_load_si256(reinterpret_cast<const __m256i*>(q0 + j * kBlockRows)) : _mm256_setzero_si256();
        const __m256i hi = hi_ok ? _mm256_load_si256(reinterpret_cast<const __m256i*>(q1 + j * kBlockRows)) : _mm256_setzero_si256();
        v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      }
      const i64 jl = j - k0 / 8;  // word in the chunk
      std::uint32_t* d = buf + ((jl / 4 * 2 + t) * 16 + 4 * (jl % 4)) * 16;
      _mm512_store_si512(d, _mm512_ternarylogic_epi32(v, mask, magic, 0xEA));  // (v & mask) | magic
      _mm512_store_si512(d + 16, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, 4), mask, magic, 0xEA));
      _mm512_store_si512(d + 32, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, 8), mask, magic, 0xEA));
      _mm512_store_si512(d + 48, _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, 12), mask, magic, 0xEA));
    }
  }
}

// 16 scales of blocks b, b + 1 (group g) as fp32; zero past the last block.
inline __m512 load_scales16(const FastWeights& w, i64 b, i64 g, i64 G) {
  const bool bf16 = w.scale_dtype == DType::bf16;
  auto half = [&](i64 bb) {
    return bb < w.blocks ? _mm_load_si128(reinterpret_cast<const __m128i*>(w.scales.data() + (bb * G + g) * kBlockRows)) : _mm_setzero_si128();
  };
  const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(half(b)), half(b + 1), 1);
  if (bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// 128 + z of rows of blocks b, b + 1 (group g) as fp32 (uint4b8: 136).
inline __m512 load_zeros16(const FastWeights& w, i64 b, i64 g, i64 G) {
  if (w.zeros.empty()) return _mm512_set1_ps(136.f);
  const std::uint32_t z0 = b < w.blocks ? w.zeros[static_cast<std::size_t>(b * G + g)] : 0u;
  const std::uint32_t z1 = b + 1 < w.blocks ? w.zeros[static_cast<std::size_t>((b + 1) * G + g)] : 0u;
  const __m512i shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  const __m512i words = _mm512_mask_set1_epi32(_mm512_set1_epi32(static_cast<int>(z0)), 0xFF00, static_cast<int>(z1));
  const __m512i z = _mm512_and_si512(_mm512_srlv_epi32(words, shifts), _mm512_set1_epi32(15));
  return _mm512_add_ps(_mm512_cvtepi32_ps(z), _mm512_set1_ps(128.f));
}

// fp32 -> bf16 bits, round to nearest even, NaN kept quiet (as float_to_bf16 in core/half.hpp).
inline __m256i to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i nan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, nan));
}

// Per-thread buffers (OpenMP pool threads persist: allocated once per thread).
struct Scratch {
  AlignedVector<std::uint32_t> b = AlignedVector<std::uint32_t>(static_cast<std::size_t>(kChunkK / kStepK * 2 * kTileBytes / 4));
  AlignedVector<float> c = AlignedVector<float>(4 * kTileBytes / 4);
  AlignedVector<float> y = AlignedVector<float>(static_cast<std::size_t>(kTaskTokens * kPanelRows));
};

// One task: tokens [m0, m0 + tokens) (a multiple of 16, padding included) x the panel of blocks b0 .. b0 + 3.
void run_task(const Problem& p, const AmxX& ax, i64 m0, i64 tokens, i64 b0, Scratch& sc) {
  const FastWeights& w = *p.w;
  const i64 G = p.groups, kp = ax.steps * kStepK;
  const bool split = ax.parts == 2, one_group = p.groups == 1;
  float* y = sc.y.data();
  std::fill(y, y + tokens * kPanelRows, 0.f);
  const auto* abase = reinterpret_cast<const unsigned char*>(ax.a.data());
  const auto* bbuf = reinterpret_cast<const unsigned char*>(sc.b.data());
  for (i64 k0 = 0; k0 < kp; k0 += kChunkK) {
    const i64 kc = std::min(kChunkK, kp - k0);
    dequant_chunk(p, b0, k0, kc, sc.b.data());
    for (i64 t0 = 0; t0 < tokens; t0 += 2 * kTile) {
      const bool pair = t0 + kTile < tokens;  // two token tiles (else one)
      const unsigned char* arow = abase + (m0 + t0) * ax.row_bytes;
      const unsigned char* arow1 = arow + kTile * ax.row_bytes;
      for (i64 e0 = k0; e0 < k0 + kc; e0 += ax.span) {
        const i64 e1 = std::min(e0 + ax.span, k0 + kc);
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (i64 s = e0 / kStepK; s < e1 / kStepK; ++s) {
          const unsigned char* bt = bbuf + (s - k0 / kStepK) * 2 * kTileBytes;
          _tile_loadd(6, bt, 64);
          _tile_loadd(7, bt + kTileBytes, 64);
          const i64 aoff = s * ax.parts * 64;
          _tile_loadd(4, arow + aoff, ax.row_bytes);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          if (pair) {
            _tile_loadd(5, arow1 + aoff, ax.row_bytes);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
          if (split) {
            _tile_loadd(4, arow + aoff + 64, ax.row_bytes);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            if (pair) {
              _tile_loadd(5, arow1 + aoff + 64, ax.row_bytes);
              _tile_dpbf16ps(2, 5, 6);
              _tile_dpbf16ps(3, 5, 7);
            }
          }
        }
        float* c = sc.c.data();
        _tile_stored(0, c, 64);
        _tile_stored(1, c + 256, 64);
        if (pair) {
          _tile_stored(2, c + 512, 64);
          _tile_stored(3, c + 768, 64);
        }
        // y += s * (C - (128 + z) * sum x), per weight-row tile h and token tile tt.
        const i64 e = e0 / ax.span, g = one_group ? 0 : e;
        for (int h = 0; h < 2; ++h) {
          const __m512 sv = load_scales16(w, b0 + 2 * h, g, G), zv = load_zeros16(w, b0 + 2 * h, g, G);
          for (int tt = 0; tt < (pair ? 2 : 1); ++tt) {
            const float* ct = c + (2 * tt + h) * 256;
            const float* xs = ax.sums.data() + (m0 + t0 + tt * kTile) * ax.spans + e;
            float* yt = y + (t0 + tt * kTile) * kPanelRows + h * kTile;
            for (int r = 0; r < kTile; ++r) {
              const __m512 d = _mm512_fnmadd_ps(zv, _mm512_set1_ps(xs[r * ax.spans]), _mm512_load_ps(ct + r * 16));
              _mm512_store_ps(yt + r * kPanelRows, _mm512_fmadd_ps(sv, d, _mm512_load_ps(yt + r * kPanelRows)));
            }
          }
        }
      }
    }
  }
  // Store the task's real tokens and rows (+ bias).
  const i64 n0 = b0 * kBlockRows, ncols = std::min(kPanelRows, p.n - n0), mend = std::min(tokens, p.m - m0);
  for (i64 r = 0; r < mend; ++r) {
    const float* yr = y + r * kPanelRows;
    auto* dst = static_cast<std::uint16_t*>(p.out) + (m0 + r) * p.out_stride + n0;
    for (i64 h = 0; h < 2 && h * kTile < ncols; ++h) {
      const i64 cols = std::min(kTile, ncols - h * kTile);
      __m512 v = _mm512_load_ps(yr + h * kTile);
      const auto keep = static_cast<__mmask16>((1u << cols) - 1u);
      if (p.w->has_bias()) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(keep, p.w->bias.data() + n0 + h * kTile));
      const __m256i o = p.out_dtype == DType::bf16 ? to_bf16(v) : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_mask_storeu_epi16(dst + h * kTile, keep, o);
    }
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
  static thread_local AmxX ax;  // the caller's thread converts x; the pool threads read it
  convert_x(p, ax);
  const i64 panels = (p.w->blocks + kPanelBlocks - 1) / kPanelBlocks;
  const i64 mblocks = (ax.rows + kTaskTokens - 1) / kTaskTokens;
  const i64 tasks = panels * mblocks;
  const AmxX& cx = ax;
#pragma omp parallel num_threads(p.threads)
  {
    static thread_local Scratch sc;
    load_tile_config();
    // Tasks m-block major, handed out one at a time: the threads share a block of x while walking the panels.
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tasks; ++t) {
      const i64 m0 = (t / panels) * kTaskTokens;
      run_task(p, cx, m0, std::min(kTaskTokens, cx.rows - m0), (t % panels) * kPanelBlocks, sc);
    }
    _tile_release();
  }
}

}  // namespace w4a16::kernels::cpu::impl

#endif
