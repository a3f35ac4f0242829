// Microbench: the linear CPU decode at M = 1 on the cpu.fast.v1 block layout ([Nb][K/8][8] words), 4 blocks (32 rows)
// per tile, data in L2: the AVX2 tile (and / convert / fma per nibble, prescaled x) against an AVX-512 VNNI tile
// (nibble pairs, x as int16 pairs per 128 k).
#include <immintrin.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>
using i64 = std::int64_t;
constexpr int NV = 4;
__attribute__((noinline, target("avx2,fma"))) void avx2_tile(const std::uint32_t* w, i64 K, const float* xp, const float* xsum,
                                                             const float* sc, float* out) {
  const i64 words = K / 8, G = K / 128;
  __m256 y[NV];
  for (int v = 0; v < NV; ++v) y[v] = _mm256_setzero_ps();
  for (i64 g = 0; g < G; ++g) {
    __m256 acc[2][NV];
    for (int s = 0; s < 2; ++s) for (int v = 0; v < NV; ++v) acc[s][v] = _mm256_setzero_ps();
    for (i64 j = g * 16; j < g * 16 + 16; ++j) {
      __m256i wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w + (v * words + j) * 8));
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const __m256 xb = _mm256_broadcast_ss(xp + 8 * j + i);
        for (int v = 0; v < NV; ++v) {
          const __m256i m = i < 7 ? _mm256_and_si256(wv[v], _mm256_set1_epi32(15 << (4 * i))) : _mm256_srli_epi32(wv[v], 28);
          acc[i % 2][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), xb, acc[i % 2][v]);
        }
      }
    }
    for (int v = 0; v < NV; ++v) {
      const __m256 s = _mm256_loadu_ps(sc + (v * G + g) * 8);
      const __m256 t = _mm256_fnmadd_ps(_mm256_set1_ps(8.f), _mm256_set1_ps(xsum[g]), _mm256_add_ps(acc[0][v], acc[1][v]));
      y[v] = _mm256_fmadd_ps(s, t, y[v]);
    }
  }
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(out + 8 * v, y[v]);
}
// xq: [K/16][4][16] int32 (lanes 0-7: pair i of word 2jp, lanes 8-15: of word 2jp + 1); xs [K/128]
__attribute__((noinline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))) void vnni_tile(const std::uint32_t* w, i64 K, const std::int32_t* xq,
                                                                                        const float* xs, const float* xsum, const float* sc, float* out) {
  const i64 words = K / 8, G = K / 128;
  const __m512i nib = _mm512_set1_epi32(0x000F000F);
  __m512 y[NV];
  for (int v = 0; v < NV; ++v) y[v] = _mm512_setzero_ps();
  for (i64 g = 0; g < G; ++g) {
    __m512i acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_si512();
    for (i64 jp = g * 8; jp < g * 8 + 8; ++jp) {
      const __m512i x0 = _mm512_load_si512(xq + jp * 64), x1 = _mm512_load_si512(xq + jp * 64 + 16),
                    x2 = _mm512_load_si512(xq + jp * 64 + 32), x3 = _mm512_load_si512(xq + jp * 64 + 48);
      for (int v = 0; v < NV; ++v) {
        const __m512i wv = _mm512_load_si512(w + (v * words + 2 * jp) * 8);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(wv, nib), x0);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 4), nib), x1);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 8), nib), x2);
        acc[v] = _mm512_dpwssd_epi32(acc[v], _mm512_and_si512(_mm512_srli_epi32(wv, 12), nib), x3);
      }
    }
    for (int v = 0; v < NV; ++v) {
      const __m512 s = _mm512_broadcast_f32x8(_mm256_loadu_ps(sc + (v * G + g) * 8));
      y[v] = _mm512_fmadd_ps(_mm512_mul_ps(s, _mm512_set1_ps(xs[g])), _mm512_cvtepi32_ps(acc[v]), y[v]);
      y[v] = _mm512_fnmadd_ps(_mm512_mul_ps(s, _mm512_set1_ps(8.f * 0.5f)), _mm512_set1_ps(xsum[g]), y[v]);  // half per lane half
    }
  }
  for (int v = 0; v < NV; ++v) {
    const __m256 lo = _mm512_castps512_ps256(y[v]), hi = _mm512_extractf32x8_ps(y[v], 1);
    _mm256_storeu_ps(out + 8 * v, _mm256_add_ps(lo, hi));
  }
}
int main() {
  const i64 K = 4096, words = K / 8, G = K / 128;
  std::mt19937 r(1);
  std::vector<std::uint32_t, std::allocator<std::uint32_t>> wbuf(NV * words * 8 + 16);
  std::uint32_t* w = reinterpret_cast<std::uint32_t*>((reinterpret_cast<std::uintptr_t>(wbuf.data()) + 63) / 64 * 64);
  for (i64 i = 0; i < NV * words * 8; ++i) w[i] = r();
  std::normal_distribution<float> nd;
  std::vector<float> x(K), xp(K), xsum(G, 0.f), sc(NV * G * 8);
  for (auto& v : sc) v = 0.01f;
  for (i64 k = 0; k < K; ++k) { x[k] = nd(r); xsum[k / 128] += x[k]; xp[k] = (k % 8 < 7) ? x[k] / float(1 << (4 * (k % 8))) : x[k]; }
  std::vector<std::int32_t> xqb(K / 16 * 64 + 16);
  std::int32_t* xq = reinterpret_cast<std::int32_t*>((reinterpret_cast<std::uintptr_t>(xqb.data()) + 63) / 64 * 64);
  std::vector<float> xs(G);
  for (i64 g = 0; g < G; ++g) {
    float mx = 0; for (i64 k = g * 128; k < g * 128 + 128; ++k) mx = std::max(mx, std::fabs(x[k]));
    xs[g] = mx / 32767.f;
    for (i64 jp = g * 8; jp < g * 8 + 8; ++jp)
      for (int i = 0; i < 4; ++i)
        for (int l = 0; l < 16; ++l) {
          const i64 word = 2 * jp + l / 8;
          const int lo = (int)std::lrint(x[8 * word + i] / xs[g]), hi = (int)std::lrint(x[8 * word + i + 4] / xs[g]);
          xq[jp * 64 + i * 16 + l] = (lo & 0xFFFF) | (hi << 16);
        }
  }
  // reference
  double ref[32];
  for (int row = 0; row < 32; ++row) {
    const int v = row / 8, rr = row % 8; double a = 0;
    for (i64 k = 0; k < K; ++k) { const int q = (w[(v * words + k / 8) * 8 + rr] >> (4 * (k % 8))) & 15; a += 0.01 * (q - 8) * x[k]; }
    ref[row] = a;
  }
  float o1[32], o2[32];
  avx2_tile(w, K, xp.data(), xsum.data(), sc.data(), o1);
  vnni_tile(w, K, xq, xs.data(), xsum.data(), sc.data(), o2);
  double e1 = 0, e2 = 0, n = 0;
  for (int i = 0; i < 32; ++i) { e1 += (o1[i] - ref[i]) * (o1[i] - ref[i]); e2 += (o2[i] - ref[i]) * (o2[i] - ref[i]); n += ref[i] * ref[i]; }
  std::printf("rel err avx2 %.2e vnni %.2e\n", std::sqrt(e1 / n), std::sqrt(e2 / n));
  const int N = 20000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < N; ++i) avx2_tile(w, K, xp.data(), xsum.data(), sc.data(), o1);
  auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < N; ++i) vnni_tile(w, K, xq, xs.data(), xsum.data(), sc.data(), o2);
  auto t2 = std::chrono::steady_clock::now();
  const double a = std::chrono::duration<double>(t1 - t0).count(), b = std::chrono::duration<double>(t2 - t1).count();
  std::printf("G weights/s per core: avx2 %.1f  vnni %.1f  (%.2fx)\n", N * 32.0 * K / a / 1e9, N * 32.0 * K / b / 1e9, a / b);
}
