// The decode math's issue rate, two ways, on data in shared memory (no DRAM): the question of decode.md's "Next:
// integer mma on nibble bytes with x in 16 bits" before any layout changes.
//   fp16: the decode kernels' path: Dt<false>::dequant (Marlin's magic numbers, 9 instructions per word) + HMMA m16n8k16
//         per 8-token half, fp32 partials scaled per group (one FFMA per partial);
//   imma: w & 0x0F0F0F0F and (w >> 4) & 0x0F0F0F0F as the u8 A fragment of IMMA m16n8k32 (3 instructions per word),
//         x as int16 per 128 values split hi (s8) * 256 + lo (u8): two IMMAs per chunk and 8-token half, int32 exact;
//         per group float(hi) * 256 + float(lo), times s_row * xs_token, minus 8 s_row sum_x_token (uint4b8: z = 8).
// Each warp owns a 16-row stripe of K = 1024 (8 groups of 128) and runs over it `reps` times; 8 warps a block, `blocks`
// blocks per SM. Prints weights per second per SM for each path and token count (8 = one half, 16 = two), and checks
// the imma path's y of one block against an f64 host reference (which pins the fragment mapping below).
// Fragments (PTX ISA, mma.m16n8k32 .u8/.s8): lane l, g = l / 4, t = l % 4. A (16 x 32, row): a0 = row g, k 4t..4t+3;
// a1 = row g + 8, same k; a2 = row g, k 16 + 4t..; a3 = row g + 8, k 16 + 4t... B (32 x 8, col): b0 = k 4t..4t+3,
// column g; b1 = k 16 + 4t... C: c0, c1 = row g, columns 2t, 2t + 1; c2, c3 = row g + 8. Here a thread's word 0 of a
// chunk holds row g's 16 values (nibble 2i = k 4t + i, nibble 2i + 1 = k 16 + 4t + i), word 1 row g + 8's.
// Usage: w4a16_bench_imma_probe [reps, default 2000] [blocks per SM, default 2]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "decode/decode_device.cuh"  // Dt<false>: the decode kernels' dequantization and mma

namespace {

using w4a16::kernels::cuda::decode_detail::Dt;

constexpr int kK = 1024, kGroup = 128, kGroups = kK / kGroup, kChunks = kK / 32, kWarps = 8;

#define CU(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// Shared-memory image of one warp's data (every warp of the grid reads the same global copy into its block).
struct Image {
  std::uint32_t w[kChunks][32][2];           // weights: chunk, lane, (row g, row g + 8)
  std::uint32_t xb[2][kChunks][2][32][2];    // imma x: half, chunk, (hi, lo), lane, (b0, b1)
  std::uint32_t xh[2][kK / 16][32][2];       // fp16 x B fragments: half, k16, lane, (b0, b1)
  float s[kGroups][32][2];                   // scales of rows g, g + 8 per group and lane
  float xs[2][kGroups][32][2];               // x scale per half, group, lane, (column 2t, 2t + 1)
  float sx[2][kGroups][32][2];               // sum of x per half, group, lane, (col 2t, 2t + 1)
};

template <bool kImma, int kHalves>
__global__ void __launch_bounds__(kWarps * 32) probe(const Image* __restrict__ img, int reps, float* __restrict__ y) {
  extern __shared__ unsigned char smem_raw[];
  Image& sm = *reinterpret_cast<Image*>(smem_raw);
  {
    const uint4* src = reinterpret_cast<const uint4*>(img);
    uint4* dst = reinterpret_cast<uint4*>(&sm);
    for (unsigned i = threadIdx.x; i < sizeof(Image) / 16; i += blockDim.x) dst[i] = src[i];
  }
  __syncthreads();
  const int lane = threadIdx.x % 32;
  float total[kHalves][4] = {};
  for (int rep = 0; rep < reps; ++rep) {
    for (int g = 0; g < kGroups; ++g) {
      if constexpr (kImma) {
        int hi[kHalves][4] = {}, lo[kHalves][4] = {};
#pragma unroll
        for (int c = g * 4; c < g * 4 + 4; ++c) {
          const std::uint32_t w0 = sm.w[c][lane][0], w1 = sm.w[c][lane][1];
          const std::uint32_t a0 = w0 & 0x0F0F0F0Fu, a2 = (w0 >> 4) & 0x0F0F0F0Fu, a1 = w1 & 0x0F0F0F0Fu, a3 = (w1 >> 4) & 0x0F0F0F0Fu;
#pragma unroll
          for (int h = 0; h < kHalves; ++h) {
            asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+r"(hi[h][0]), "+r"(hi[h][1]), "+r"(hi[h][2]), "+r"(hi[h][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(sm.xb[h][c][0][lane][0]), "r"(sm.xb[h][c][0][lane][1]));
            asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                         : "+r"(lo[h][0]), "+r"(lo[h][1]), "+r"(lo[h][2]), "+r"(lo[h][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(sm.xb[h][c][1][lane][0]), "r"(sm.xb[h][c][1][lane][1]));
          }
        }
        const float s0 = sm.s[g][lane][0], s1 = sm.s[g][lane][1];
#pragma unroll
        for (int h = 0; h < kHalves; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float acc = fmaf(static_cast<float>(hi[h][e]), 256.f, static_cast<float>(lo[h][e]));
            const float s = e < 2 ? s0 : s1, xs = sm.xs[h][g][lane][e % 2], sx = sm.sx[h][g][lane][e % 2];
            total[h][e] = fmaf(-8.f * s, sx, fmaf(s * xs, acc, total[h][e]));
          }
      } else {
        float part[kHalves][4] = {};
        const std::uint32_t zlo = Dt<false>::zlo_of(8), zhi = Dt<false>::zhi_of(8);
#pragma unroll
        for (int k16 = g * 8; k16 < g * 8 + 8; ++k16) {
          std::uint32_t af[4];
          Dt<false>::dequant(sm.w[k16 / 2][lane][k16 % 2], zlo, zhi, af);  // one word per k16 sub-tile
#pragma unroll
          for (int h = 0; h < kHalves; ++h) Dt<false>::mma(part[h], af, sm.xh[h][k16][lane][0], sm.xh[h][k16][lane][1]);
        }
        const float s0 = sm.s[g][lane][0], s1 = sm.s[g][lane][1];
#pragma unroll
        for (int h = 0; h < kHalves; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) total[h][e] = fmaf(e < 2 ? s0 : s1, part[h][e], total[h][e]);
      }
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < 32)  // warp 0 of block 0: its stripe's y (the others computed the same)
    for (int h = 0; h < kHalves; ++h)
      for (int e = 0; e < 4; ++e) y[(h * 32 + lane) * 4 + e] = total[h][e];
  else if (total[0][0] == 12345.f)  // keeps the work of the other warps
    y[0] = total[0][0];
}

// Host: the image and the f64 reference of the imma path's mapping (uint4b8, z = 8), for one rep.
struct Host {
  Image img{};
  std::vector<double> q;   // [16][kK]
  std::vector<double> x;   // [16 tokens][kK] (the int16 values' x: xs * x16)
  std::vector<double> s;   // [16][kGroups]
};

Host make_host() {
  Host h;
  std::mt19937 rng(1);
  h.q.assign(16 * kK, 0);
  h.x.assign(16 * kK, 0);
  h.s.assign(16 * kGroups, 0);
  for (int c = 0; c < kChunks; ++c)
    for (int l = 0; l < 32; ++l)
      for (int r = 0; r < 2; ++r) {
        const std::uint32_t w = static_cast<std::uint32_t>(rng());
        h.img.w[c][l][r] = w;
        const int row = l / 4 + 8 * r, t = l % 4;
        for (int i = 0; i < 4; ++i) {
          h.q[row * kK + c * 32 + 4 * t + i] = (w >> (8 * i)) & 0xF;            // nibble 2i: k 4t + i
          h.q[row * kK + c * 32 + 16 + 4 * t + i] = (w >> (8 * i + 4)) & 0xF;   // nibble 2i + 1: k 16 + 4t + i
        }
      }
  std::uniform_real_distribution<float> u(0.5f, 1.5f), xv(-2.f, 2.f);
  for (int row = 0; row < 16; ++row)
    for (int g = 0; g < kGroups; ++g) h.s[row * kGroups + g] = 0.01 * u(rng);
  for (int g = 0; g < kGroups; ++g)
    for (int l = 0; l < 32; ++l)
      for (int r = 0; r < 2; ++r) h.img.s[g][l][r] = static_cast<float>(h.s[(l / 4 + 8 * r) * kGroups + g]);
  // x: per token and group of 128, int16 values with a scale; hi / lo bytes into the B fragments.
  std::vector<int> x16(16 * kK);
  std::vector<float> xs(16 * kGroups), sx(16 * kGroups);
  for (int tok = 0; tok < 16; ++tok)
    for (int g = 0; g < kGroups; ++g) {
      float mx = 0;
      std::vector<float> v(kGroup);
      for (auto& a : v) a = xv(rng), mx = std::max(mx, std::fabs(a));
      xs[tok * kGroups + g] = mx / 32767.f;
      double sum = 0;
      for (int i = 0; i < kGroup; ++i) {
        const int q = static_cast<int>(std::lrint(v[i] / xs[tok * kGroups + g]));
        x16[tok * kK + g * kGroup + i] = q;
        h.x[tok * kK + g * kGroup + i] = static_cast<double>(q) * xs[tok * kGroups + g];
        sum += h.x[tok * kK + g * kGroup + i];
      }
      sx[tok * kGroups + g] = static_cast<float>(sum);
    }
  for (int half = 0; half < 2; ++half)
    for (int c = 0; c < kChunks; ++c)
      for (int l = 0; l < 32; ++l)
        for (int b = 0; b < 2; ++b) {
          const int tok = half * 8 + l / 4, k0 = c * 32 + 16 * b + 4 * (l % 4);
          std::uint32_t hiw = 0, low = 0;
          for (int i = 0; i < 4; ++i) {
            const int v = x16[tok * kK + k0 + i];
            const int hi = (v - (v & 0xFF)) / 256, lo = v & 0xFF;  // v = hi * 256 + lo, lo in 0..255
            hiw |= static_cast<std::uint32_t>(hi & 0xFF) << (8 * i);
            low |= static_cast<std::uint32_t>(lo) << (8 * i);
          }
          h.img.xb[half][c][0][l][b] = hiw;
          h.img.xb[half][c][1][l][b] = low;
        }
  for (int half = 0; half < 2; ++half)
    for (int g = 0; g < kGroups; ++g)
      for (int l = 0; l < 32; ++l)
        for (int e = 0; e < 2; ++e) {
          const int tok = half * 8 + 2 * (l % 4) + e;
          h.img.xs[half][g][l][e] = xs[tok * kGroups + g];
          h.img.sx[half][g][l][e] = sx[tok * kGroups + g];
        }
  for (int half = 0; half < 2; ++half)  // fp16 path: any finite halves (throughput only)
    for (int k16 = 0; k16 < kK / 16; ++k16)
      for (int l = 0; l < 32; ++l)
        for (int b = 0; b < 2; ++b) h.img.xh[half][k16][l][b] = 0x3C003C00u;  // (1.0, 1.0)
  return h;
}

// The IMMA path emulated on the host with the fragment mapping of the header (bytes of the A and B registers placed at
// their documented (row, k) / (k, column)): y [16 rows][16 tokens]. Matching f64 here and not on the device would mean
// the mapping, not the packing, is wrong.
std::vector<double> emulate(const Image& im) {
  std::vector<double> y(16 * 16, 0.0);
  for (int half = 0; half < 2; ++half)
    for (int g = 0; g < kGroups; ++g) {
      long long acc[2][16][8] = {};  // (hi, lo), row, column
      for (int c = g * 4; c < g * 4 + 4; ++c) {
        int A[16][32] = {}, B[2][32][8] = {};
        for (int l = 0; l < 32; ++l) {
          const int gid = l / 4, t = l % 4;
          const std::uint32_t w0 = im.w[c][l][0], w1 = im.w[c][l][1];
          const std::uint32_t a[4] = {w0 & 0x0F0F0F0Fu, w1 & 0x0F0F0F0Fu, (w0 >> 4) & 0x0F0F0F0Fu, (w1 >> 4) & 0x0F0F0F0Fu};
          for (int i = 0; i < 4; ++i) {
            A[gid][4 * t + i] = (a[0] >> (8 * i)) & 0xFF;
            A[gid + 8][4 * t + i] = (a[1] >> (8 * i)) & 0xFF;
            A[gid][16 + 4 * t + i] = (a[2] >> (8 * i)) & 0xFF;
            A[gid + 8][16 + 4 * t + i] = (a[3] >> (8 * i)) & 0xFF;
            for (int p = 0; p < 2; ++p) {
              const std::uint32_t b0 = im.xb[half][c][p][l][0], b1 = im.xb[half][c][p][l][1];
              const int v0 = (b0 >> (8 * i)) & 0xFF, v1 = (b1 >> (8 * i)) & 0xFF;
              B[p][4 * t + i][gid] = p == 0 ? static_cast<std::int8_t>(v0) : v0;
              B[p][16 + 4 * t + i][gid] = p == 0 ? static_cast<std::int8_t>(v1) : v1;
            }
          }
        }
        for (int p = 0; p < 2; ++p)
          for (int r = 0; r < 16; ++r)
            for (int n = 0; n < 8; ++n)
              for (int k = 0; k < 32; ++k) acc[p][r][n] += static_cast<long long>(A[r][k]) * B[p][k][n];
      }
      for (int l = 0; l < 32; ++l)
        for (int e = 0; e < 4; ++e) {
          const int r = l / 4 + (e < 2 ? 0 : 8), n = 2 * (l % 4) + e % 2;
          const double a = static_cast<double>(acc[0][r][n]) * 256 + static_cast<double>(acc[1][r][n]);
          const double s = im.s[g][l][e < 2 ? 0 : 1], xs = im.xs[half][g][l][e % 2], sx = im.sx[half][g][l][e % 2];
          y[r * 16 + half * 8 + n] += s * xs * a - 8 * s * sx;
        }
    }
  return y;
}

template <bool kImma, int kHalves>
double run(const Image* d_img, float* d_y, int reps, int blocks, int sms) {
  const size_t smem = sizeof(Image);
  CU(cudaFuncSetAttribute(probe<kImma, kHalves>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  probe<kImma, kHalves><<<sms * blocks, kWarps * 32, smem>>>(d_img, 1, d_y);  // warm-up
  CU(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CU(cudaEventCreate(&a));
  CU(cudaEventCreate(&b));
  float best = 1e30f;
  for (int i = 0; i < 5; ++i) {
    CU(cudaEventRecord(a));
    probe<kImma, kHalves><<<sms * blocks, kWarps * 32, smem>>>(d_img, reps, d_y);
    CU(cudaEventRecord(b));
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  const double weights = static_cast<double>(sms) * blocks * kWarps * 16.0 * kK * reps;  // per launch
  return weights / (best * 1e-3) / sms;  // weights per second per SM
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 2000, blocks = argc > 2 ? std::atoi(argv[2]) : 2;
  const Host h = make_host();
  {  // the packing against f64 on the host (no device needed)
    const std::vector<double> e = emulate(h.img);
    double err = 0, ref2 = 0;
    for (int row = 0; row < 16; ++row)
      for (int tok = 0; tok < 16; ++tok) {
        double want = 0;
        for (int k = 0; k < kK; ++k) want += (h.q[row * kK + k] - 8) * h.s[row * kGroups + k / kGroup] * h.x[tok * kK + k];
        err += (e[row * 16 + tok] - want) * (e[row * 16 + tok] - want);
        ref2 += want * want;
      }
    std::printf("host emulation of the imma path vs f64: relative error %.3e (%s)\n", std::sqrt(err / ref2),
                std::sqrt(err / ref2) < 1e-5 ? "ok" : "MISMATCH: the packing");
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("skipped the device part: no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop{};
  CU(cudaGetDeviceProperties(&prop, 0));
  Image* d_img = nullptr;
  float* d_y = nullptr;
  CU(cudaMalloc(&d_img, sizeof(Image)));
  CU(cudaMalloc(&d_y, 2 * 32 * 4 * sizeof(float)));
  CU(cudaMemcpy(d_img, &h.img, sizeof(Image), cudaMemcpyHostToDevice));
  // Correctness of the imma path (one rep, 16 tokens) against f64.
  CU(cudaFuncSetAttribute(probe<true, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sizeof(Image))));
  probe<true, 2><<<1, kWarps * 32, sizeof(Image)>>>(d_img, 1, d_y);
  CU(cudaDeviceSynchronize());
  std::vector<float> y(2 * 32 * 4);
  CU(cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double err = 0, ref2 = 0;
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 32; ++l)
      for (int e = 0; e < 4; ++e) {
        const int row = l / 4 + (e < 2 ? 0 : 8), tok = half * 8 + 2 * (l % 4) + e % 2;
        double want = 0;
        for (int k = 0; k < kK; ++k) want += (h.q[row * kK + k] - 8) * h.s[row * kGroups + k / kGroup] * h.x[tok * kK + k];
        const double got = y[(half * 32 + l) * 4 + e];
        err += (got - want) * (got - want);
        ref2 += want * want;
      }
  std::printf("%s, %d SMs; imma path vs f64 (16 rows x 16 tokens, K = %d): relative error %.3e (%s)\n", prop.name,
              prop.multiProcessorCount, kK, std::sqrt(err / ref2), std::sqrt(err / ref2) < 1e-5 ? "ok" : "MISMATCH: the fragment mapping");
  const int sms = prop.multiProcessorCount;
  std::printf("weights per second per SM (data in shared memory, %d reps, %d blocks of 8 warps per SM):\n", reps, blocks);
  const double f1 = run<false, 1>(d_img, d_y, reps, blocks, sms), i1 = run<true, 1>(d_img, d_y, reps, blocks, sms);
  const double f2 = run<false, 2>(d_img, d_y, reps, blocks, sms), i2 = run<true, 2>(d_img, d_y, reps, blocks, sms);
  std::printf("  8 tokens:  fp16 %.3e  imma %.3e  imma / fp16 %.2fx\n", f1, i1, i1 / f1);
  std::printf("  16 tokens: fp16 %.3e  imma %.3e  imma / fp16 %.2fx\n", f2, i2, i2 / f2);
  std::printf("  (4.4 TB/s over 132 SMs = %.3e weights per second per SM at 0.5 byte each)\n", 4.4e12 / 132 / 0.5);
  CU(cudaFree(d_img));
  CU(cudaFree(d_y));
  return 0;
}
