// Test-side packers and dequantizers written straight from shared/FORMATS.md, independent of
// src/formats: the AWQ and GPTQ tensors of a layer given as plain values in ORIGINAL channel
// order, and the weights the format definition gives for them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "testutil.hpp"
#include "w4a16/core/half.hpp"

namespace w4a16::test::spec {

// A layer in the formats' own terms: q[k][n], z[grp][n], s[grp][n] (scale bits), g_idx[k].
struct Layer {
  std::int64_t n = 0, k = 0, groups = 0, glen = 0;
  DType sdt = DType::f16;
  std::vector<std::uint8_t> q;        // [K, N]
  std::vector<std::uint8_t> z;        // [G, N]
  std::vector<std::uint16_t> s;       // [G, N]
  std::vector<std::int32_t> g_idx;    // [K]
  std::vector<std::uint16_t> bias;    // [N] or empty
  int qv(std::int64_t kk, std::int64_t nn) const { return q[static_cast<std::size_t>(kk * n + nn)]; }
  int zv(std::int64_t g, std::int64_t nn) const { return z[static_cast<std::size_t>(g * n + nn)]; }
  double sv(std::int64_t g, std::int64_t nn) const { return f16x_to_float(sdt, s[static_cast<std::size_t>(g * n + nn)]); }
  // w[n, k] = (q[k, n] - z[g_idx[k], n]) * s[g_idx[k], n], returned [N, K] row-major.
  std::vector<double> weights() const {
    std::vector<double> w(static_cast<std::size_t>(n * k));
    for (std::int64_t nn = 0; nn < n; ++nn)
      for (std::int64_t kk = 0; kk < k; ++kk) {
        std::int64_t g = g_idx[static_cast<std::size_t>(kk)];
        w[static_cast<std::size_t>(nn * k + kk)] = (qv(kk, nn) - zv(g, nn)) * sv(g, nn);
      }
    return w;
  }
};

// Random values; z = 8 everywhere when sym; g_idx = k / g, or a random act-order assignment
// with exactly g channels per group when act_order.
inline Layer random_layer(std::int64_t n, std::int64_t k, int group_size, bool sym, bool act_order, DType sdt,
                          bool bias = false) {
  Layer L;
  L.n = n;
  L.k = k;
  L.glen = group_size == -1 ? k : group_size;
  L.groups = k / L.glen;
  L.sdt = sdt;
  auto& g = rng();
  std::uniform_int_distribution<int> nib(0, 15);
  std::uniform_real_distribution<float> su(0.005f, 0.03f);
  L.q.resize(static_cast<std::size_t>(k * n));
  for (auto& v : L.q) v = static_cast<std::uint8_t>(nib(g));
  L.z.resize(static_cast<std::size_t>(L.groups * n));
  for (auto& v : L.z) v = static_cast<std::uint8_t>(sym ? 8 : nib(g));
  L.s.resize(static_cast<std::size_t>(L.groups * n));
  for (auto& v : L.s) v = float_to_f16x(sdt, su(g));
  L.g_idx.resize(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < k; ++i) L.g_idx[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i / L.glen);
  if (act_order) std::shuffle(L.g_idx.begin(), L.g_idx.end(), g);
  if (bias) {
    std::normal_distribution<float> nd(0.f, 1.f);
    for (std::int64_t i = 0; i < n; ++i) L.bias.push_back(float_to_f16x(sdt, nd(g)));
  }
  return L;
}

// ---- AWQ GEMM: qweight [K, N/8], nibble i of word (k, j) = q[k, 8j + ORDER[i]].
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
inline std::vector<std::int32_t> awq_qweight(const Layer& L) {
  std::vector<std::int32_t> w(static_cast<std::size_t>(L.k * (L.n / 8)));
  for (std::int64_t kk = 0; kk < L.k; ++kk)
    for (std::int64_t j = 0; j < L.n / 8; ++j) {
      std::uint32_t v = 0;
      for (int i = 0; i < 8; ++i) v |= static_cast<std::uint32_t>(L.qv(kk, 8 * j + kAwqOrder[i])) << (4 * i);
      w[static_cast<std::size_t>(kk * (L.n / 8) + j)] = static_cast<std::int32_t>(v);
    }
  return w;
}
inline std::vector<std::int32_t> awq_qzeros(const Layer& L) {
  std::vector<std::int32_t> w(static_cast<std::size_t>(L.groups * (L.n / 8)));
  for (std::int64_t g = 0; g < L.groups; ++g)
    for (std::int64_t j = 0; j < L.n / 8; ++j) {
      std::uint32_t v = 0;
      for (int i = 0; i < 8; ++i) v |= static_cast<std::uint32_t>(L.zv(g, 8 * j + kAwqOrder[i])) << (4 * i);
      w[static_cast<std::size_t>(g * (L.n / 8) + j)] = static_cast<std::int32_t>(v);
    }
  return w;
}

// ---- GPTQ: qweight [K/8, N], nibble i of word (r, n) = q[8r + i, n]; qzeros [G, ceil(N/8)],
// nibble i of word (g, j) = stored zero of column 8j + i (v1: z - 1 mod 16; padding: z = 8).
inline std::vector<std::int32_t> gptq_qweight(const Layer& L) {
  std::vector<std::int32_t> w(static_cast<std::size_t>((L.k / 8) * L.n));
  for (std::int64_t r = 0; r < L.k / 8; ++r)
    for (std::int64_t nn = 0; nn < L.n; ++nn) {
      std::uint32_t v = 0;
      for (int i = 0; i < 8; ++i) v |= static_cast<std::uint32_t>(L.qv(8 * r + i, nn)) << (4 * i);
      w[static_cast<std::size_t>(r * L.n + nn)] = static_cast<std::int32_t>(v);
    }
  return w;
}
inline std::vector<std::int32_t> gptq_qzeros(const Layer& L, bool v1) {
  const std::int64_t cols = (L.n + 7) / 8;
  std::vector<std::int32_t> w(static_cast<std::size_t>(L.groups * cols));
  for (std::int64_t g = 0; g < L.groups; ++g)
    for (std::int64_t j = 0; j < cols; ++j) {
      std::uint32_t v = 0;
      for (int i = 0; i < 8; ++i) {
        int z = 8 * j + i < L.n ? L.zv(g, 8 * j + i) : 8;
        int stored = v1 ? (z - 1) & 15 : z;
        v |= static_cast<std::uint32_t>(stored) << (4 * i);
      }
      w[static_cast<std::size_t>(g * cols + j)] = static_cast<std::int32_t>(v);
    }
  return w;
}

// Shapes with odd factors for every group size (K a multiple of g, N a multiple of 8).
struct Shape { std::int64_t n, k; int g; };
inline std::vector<Shape> odd_shapes() {
  return {{40, 288, 32}, {24, 96, 32}, {56, 192, 64}, {8, 320, 64}, {40, 384, 128}, {24, 128, 128},
          {24, 768, 256}, {72, 256, 256}, {40, 264, -1}, {8, 8, -1}};
}

}  // namespace w4a16::test::spec
