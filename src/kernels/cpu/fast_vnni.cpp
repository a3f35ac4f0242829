// AVX-512 VNNI kernel of fast_gemm (layout cpu.fast.v1, fast.hpp) for few rows of x: the weights streamed once, every
// nibble multiplied by x in 16-bit integers. This translation unit alone is compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512vnni (+ AVX2 / F16C); fast.cpp calls it only after __builtin_cpu_supports says so.
//
// Shapes: x p.xf [M][K] fp32 (gathered, unscaled) and p.xsum [M][G], W [Nb][K/8][8] u32 nibble words, scales
// [Nb][G][8] f16|bf16 bits, zeros [Nb][G] packed u32, out [M][N] act dtype, strided rows. Every K % 8 == 0, every
// group size (32..256, channelwise), both scalar types, bias, act-order (x gathered by fast.cpp).
//
// Math, exact in int32 per chunk, fp32 across chunks:
//   y[n] = sum_c s[n, g(c)] xs[b(c)] sum_{k in c} q[n, k] x16[k]  -  sum_g z[n, g] s[n, g] sum_{k in g} x[k]
//   x16 = x / xs rounded to int16 (fast.cpp's x_pairs16), xs a power of two per 128 k of x (the least with
//   max |x| / xs <= 32767): x of a
//   block within 2^15 of its largest value is exact (the exact-sums test holds); smaller values keep 15 bits below
//   the block's largest, finer than float16's 11-bit significand near it. A chunk (c) is one group and one x block:
//   min(group, 128) k. Per chunk a lane sums at most 128 products of 15 x 32767: < 2^26, no overflow.
// Register tile: P pairs of blocks (16 rows of W each) x R rows of x (R <= 8). A pair's word j is one 64-byte vector
//   (block 2p's 8 rows in lanes 0-7, block 2p + 1's in lanes 8-15, two 32-byte loads); (v >> 4i) & 0x000F000F puts
//   nibbles i and i + 4 of every row's word in the two 16-bit halves of its lane, and one vpdpwssd multiplies them by
//   x's pair (x16[8j + i], x16[8j + i + 4]), broadcast from a compact [K / 2] int32 row: per 128 weights 3 shifts,
//   4 ands and 4 R vpdpwssd (the AVX2 decode: the same with vpmaddwd + vpaddd on 8 rows a register).
//   P = 4 at R <= 2 (8 weight streams per thread), 2 at R <= 4, 1 above (registers: P R int32 sums + P R fp32 outputs).
//   More than 8 rows (without AMX, or a named run) pass over a task's pairs again per 8 rows, the weights then from L2.
// Check: w4a16_test_kernels_cpu (CpuFast*, every implementation); bench: w4a16_bench_cpu --isa vnni,avx2,amx.
#include "fast_impl.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#if defined(__GNUC__) && !defined(__clang__)  // GCC 12's AVX-512 headers (a false positive, as in fast_amx.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace w4a16::kernels::cpu::impl {

namespace {

using i64 = std::int64_t;

constexpr i64 kXBlock = kX16Block;     // k per x scale (a chunk never spans two)
constexpr i64 kMaxRows = 8;           // rows of x per register tile
constexpr i64 kTaskPairs = 4;         // pairs of blocks (64 rows of W) per task
constexpr i64 kPrefetchWords = 1024;  // each stream asks for its words 4 KB ahead (as the AVX2 decode kernel)

// The 16 rows' scales of blocks b0 (lanes 0-7) and b1 (lanes 8-15), group g.
inline __m512 scales16(const FastWeights& w, i64 b0, i64 b1, i64 g, i64 G) {
  const auto* s = w.scales.data();
  const __m256i h = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(s + (b0 * G + g) * kBlockRows))),
      _mm_load_si128(reinterpret_cast<const __m128i*>(s + (b1 * G + g) * kBlockRows)), 1);
  return w.scale_dtype == DType::bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

// The 16 rows' zero points (8 for uint4b8), as scales16 places them.
inline __m512 zeros16(const FastWeights& w, i64 b0, i64 b1, i64 g, i64 G) {
  if (w.zeros.empty()) return _mm512_set1_ps(8.f);
  const auto z0 = static_cast<int>(w.zeros[static_cast<std::size_t>(b0 * G + g)]);
  const auto z1 = static_cast<int>(w.zeros[static_cast<std::size_t>(b1 * G + g)]);
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(z0)), _mm256_set1_epi32(z1), 1);
  const __m512i sh = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srlv_epi32(v, sh), _mm512_set1_epi32(15)));
}

// Pairs pair0 .. pair0 + P - 1 (blocks 2 pair and 2 pair + 1; a missing last block repeats the one before it, its
// lanes never stored) against rows m0 .. m0 + R - 1 of x.
template <int P, int R>
void tile(const Problem& p, i64 m0, i64 pair0) {
  const FastWeights& w = *p.w;
  const i64 K = p.k, G = p.groups, words = K / 8, wpg = p.group_len / 8, Nb = w.blocks;
  const i64 cw = std::min<i64>(wpg, kXBlock / 8);  // words per chunk
  const __m512i nib = _mm512_set1_epi32(0x000F000F);
  i64 blo[P], bhi[P];
  const std::uint32_t *qlo[P], *qhi[P];
  for (int i = 0; i < P; ++i) {
    blo[i] = 2 * (pair0 + i);
    bhi[i] = std::min(blo[i] + 1, Nb - 1);
    qlo[i] = w.qweight.data() + blo[i] * words * kBlockRows;
    qhi[i] = w.qweight.data() + bhi[i] * words * kBlockRows;
  }
  const std::int32_t* xq[R];
  for (int r = 0; r < R; ++r) xq[r] = p.xq + (m0 + r) * (K / 2);
  __m512 y[P][R];
  _Pragma("GCC unroll 8") for (int i = 0; i < P; ++i) _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) y[i][r] = _mm512_setzero_ps();
  for (i64 c0 = 0; c0 < words; c0 += cw) {
    const i64 c1 = std::min(words, c0 + cw), g = c0 / wpg, xb = c0 * 8 / kXBlock;
    __m512i acc[P][R];
    _Pragma("GCC unroll 8") for (int i = 0; i < P; ++i) _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_si512();
    for (i64 j = c0; j < c1; ++j) {
      _Pragma("GCC unroll 8") for (int i = 0; i < P; ++i) {
        if ((j & 1) == 0) {  // one request per 64-byte line of each stream
          _mm_prefetch(reinterpret_cast<const char*>(qlo[i] + (j + kPrefetchWords / kBlockRows) * kBlockRows), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(qhi[i] + (j + kPrefetchWords / kBlockRows) * kBlockRows), _MM_HINT_T0);
        }
        const __m512i v = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(qlo[i] + j * kBlockRows))),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(qhi[i] + j * kBlockRows)), 1);
        const __m512i n0 = _mm512_and_si512(v, nib), n1 = _mm512_and_si512(_mm512_srli_epi32(v, 4), nib),
                      n2 = _mm512_and_si512(_mm512_srli_epi32(v, 8), nib), n3 = _mm512_and_si512(_mm512_srli_epi32(v, 12), nib);
        _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
          const std::int32_t* xp = xq[r] + 4 * j;
          acc[i][r] = _mm512_dpwssd_epi32(acc[i][r], n0, _mm512_set1_epi32(xp[0]));
          acc[i][r] = _mm512_dpwssd_epi32(acc[i][r], n1, _mm512_set1_epi32(xp[1]));
          acc[i][r] = _mm512_dpwssd_epi32(acc[i][r], n2, _mm512_set1_epi32(xp[2]));
          acc[i][r] = _mm512_dpwssd_epi32(acc[i][r], n3, _mm512_set1_epi32(xp[3]));
        }
      }
    }
    const bool group_end = c1 == words || c1 % wpg == 0;
    _Pragma("GCC unroll 8") for (int i = 0; i < P; ++i) {
      const __m512 s = scales16(w, blo[i], bhi[i], g, G);
      const __m512 zs = group_end ? _mm512_mul_ps(zeros16(w, blo[i], bhi[i], g, G), s) : _mm512_setzero_ps();
      _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
        y[i][r] = _mm512_fmadd_ps(_mm512_mul_ps(s, _mm512_set1_ps(p.xs16[(m0 + r) * p.xblocks + xb])), _mm512_cvtepi32_ps(acc[i][r]), y[i][r]);
        if (group_end) y[i][r] = _mm512_fnmadd_ps(zs, _mm512_set1_ps(p.xsum[(m0 + r) * G + g]), y[i][r]);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < P; ++i) _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    alignas(64) float o[16];
    _mm512_store_ps(o, y[i][r]);
    const i64 n0 = blo[i] * kBlockRows;
    store_row(p, m0 + r, n0, o, std::min<i64>(2 * kBlockRows, p.n - n0));
  }
}

using TileFn = void (*)(const Problem&, i64, i64);
template <int R>
constexpr i64 pairs_for() { return R <= 2 ? 4 : R <= 4 ? 2 : 1; }
template <int R>
void tile_r(const Problem& p, i64 m0, i64 pair0) { tile<pairs_for<R>(), R>(p, m0, pair0); }
constexpr TileFn kTile[kMaxRows] = {tile_r<1>, tile_r<2>, tile_r<3>, tile_r<4>, tile_r<5>, tile_r<6>, tile_r<7>, tile_r<8>};
constexpr i64 kPairs[kMaxRows] = {pairs_for<1>(), pairs_for<2>(), pairs_for<3>(), pairs_for<4>(),
                                  pairs_for<5>(), pairs_for<6>(), pairs_for<7>(), pairs_for<8>()};
static_assert(kTaskPairs % 4 == 0, "a task's pairs split into whole register tiles of every R (4, 2 or 1 pairs)");

// A task's pairs pair0 .. pair0 + n - 1 (n <= kTaskPairs) against rows m0 .. m0 + r - 1 (r <= 8), in whole tiles
// while they fit, then one pair at a time.
void task_rows(const Problem& p, i64 m0, i64 r, i64 pair0, i64 n) {
  const i64 tp = kPairs[r - 1];
  i64 i = 0;
  for (; i + tp <= n; i += tp) kTile[r - 1](p, m0, pair0 + i);
  for (; i < n; ++i) {
    switch (r) {  // the same R with one pair
      case 1: tile<1, 1>(p, m0, pair0 + i); break;
      case 2: tile<1, 2>(p, m0, pair0 + i); break;
      case 3: tile<1, 3>(p, m0, pair0 + i); break;
      case 4: tile<1, 4>(p, m0, pair0 + i); break;
      default: kTile[r - 1](p, m0, pair0 + i); break;  // R > 4 tiles are one pair already
    }
  }
}

}  // namespace

void run_vnni(const Problem& p) {
  const i64 M = p.m;
  // Tasks of kTaskPairs pairs, or of 2 or 1 where that leaves fewer than 4 tasks a thread (a small layer on many cores).
  const i64 pairs = (p.w->blocks + 1) / 2, threads = p.threads;
  const i64 task_pairs = pairs >= 4 * threads * kTaskPairs ? kTaskPairs : pairs >= 4 * threads * 2 ? 2 : 1;
  const i64 tasks = (pairs + task_pairs - 1) / task_pairs;
  // Dynamic chunks, as the AVX2 decode kernel: the cores are shared, and a static split waits for the slower one.
  const i64 chunk = std::max<i64>(1, tasks / (threads * 16));
#pragma omp parallel for schedule(dynamic, chunk) num_threads(p.threads) if (tasks > 1)
  for (i64 t = 0; t < tasks; ++t) {
    const i64 pair0 = t * task_pairs, n = std::min(task_pairs, pairs - pair0);
    for (i64 m0 = 0; m0 < M; m0 += kMaxRows) task_rows(p, m0, std::min(kMaxRows, M - m0), pair0, n);
  }
}

}  // namespace w4a16::kernels::cpu::impl

#endif
