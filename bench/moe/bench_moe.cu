// Fused MoE W4A16 vs a per-expert loop of cuBLAS fp16 GEMMs on the dequantized weights (what a
// user would write: gather, per expert GEMM 1, SiLU * up, per expert GEMM 2, weighted sum).
// Qwen3-30B-A3B: H 2048, E 128, I 768, top 8, g 128, uint4b8 (or uint4), fp16 (or bf16) activations.
// Cold L2: `sets` rotating routings (random top-8 per token) and activations; each call uses
// set i % sets, so a call's experts were last read many calls ago (the weights, 300 MB packed
// and 1.2 GB fp16, are far larger than 3 x L2). TB/s counts the packed bytes of the experts a
// call touches (distinct experts x expert bytes) + x + out.
// Usage: w4a16_bench_moe [csv path] [T list, e.g. 1,4,16] [f16|bf16: the fused layer's activations; the peer stays
// the cuBLAS fp16 loop on the same values] [uint4b8|uint4: the weights' scalar type, uint4 with random zero points].
// Paths "chosen" / "forced": the default
// kernels of each block (blocks 1 and 8: the persistent ring kernel, moe_ring.cuh); "old" (blocks 1
// and 8 with W4A16_MOE_RING=0), "ring_balanced" (W4A16_MOE_RING=1: the balanced grid; the default is round robin),
// "unfolded" (block 1 with W4A16_MOE_RING_FOLD=0: GEMM 2 per slot and the reduce launch),
// "ring_deep", "align_launch" (block 8 with
// W4A16_MOE_FUSED_ALIGN=0: the alignment kernel before the ring kernels), "mma64" / "mma32" (block 64 / 32 on the
// mma.sync kernel, W4A16_MOE_WGMMA=0), "tiles_c1_c2" (block 128 on other tiles, W4A16_MOE_GROUPED_CONFIGS): the A/B
// rows (see the runs list); "align_only": the alignment launch alone at the chosen block (fused_us = its time);
// "gather_only" / "reduce_only" (chosen block >= 64): the grouped path's x-row gather and its weighted reduce alone.
// W4A16_BENCH_MOE_PATHS=chosen: the chosen row only (short A/B calls); W4A16_BENCH_MOE_BLOCK=b takes block b as
// "chosen". Built with cmake -DW4A16_DIAG_MOE_STAGES=ON (timing only: the library then stops the decode paths' chain
// early where W4A16_MOE_DIAG_STAGES says), rows "stages1" (GEMM 1 alone) and "stages2" (GEMM 1 + GEMM 2, no reduce)
// follow the chosen decode path's row.
// Column same_as_block8: the row's output bit-equal to the default block-8 row's (1 / 0; "-" for
// rows of other blocks or before that row).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpu_timer.hpp"
#include "moe/fused_moe.cuh"  // the grouped path's gather and reduce kernels, timed alone (the *_only rows)
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"
#include "w4a16/moe/moe_cuda.hpp"

using namespace w4a16;
using namespace w4a16::moe;

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)
#define CB(x)                                                                  \
  do {                                                                         \
    cublasStatus_t s_ = (x);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::fprintf(stderr, "%s:%d %s: cublas %d\n", __FILE__, __LINE__, #x, int(s_)); \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

// Canonical [E, N, K/8] words + fp16 scales [E, N, G] (+ packed zeros [E, N/8, G] for uint4, else z = 8) -> fp16
// W [E, N, K] = (q - z) s.
__global__ void dequant_kernel(const std::uint32_t* q, const __half* s, const std::uint32_t* z, int N, int K, int gl, long long total,
                               __half* w) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= total) return;
  const long long row = i / K;  // e * N + n (N % 8 == 0: row / 8 is the packed zeros' row)
  const int k = static_cast<int>(i % K), G = K / gl;
  const int qv = (q[row * (K / 8) + k / 8] >> (4 * (k % 8))) & 15;
  const int zv = z ? (z[(row / 8) * G + k / gl] >> (4 * (row % 8))) & 15 : 8;
  w[i] = __float2half((qv - zv) * __half2float(s[row * G + k / gl]));
}
__global__ void gather_kernel(const __half* x, const int* src_row, int rows, int H, __half* xg) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)rows * H) return;
  xg[i] = x[(long long)src_row[i / H] * H + i % H];
}
__global__ void silu_mul_kernel(const __half* g, int rows, int I, __half* h) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)rows * I) return;
  const long long r = i / I, c = i % I;
  const float a = __half2float(g[r * 2 * I + c]), b = __half2float(g[r * 2 * I + I + c]);
  h[i] = __float2half(a / (1.f + __expf(-a)) * b);
}
__global__ void combine_kernel(const __half* y, const int* pos_of_slot, const float* tw, int T, int k, int H, __half* out) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)T * H) return;
  const long long t = i / H, n = i % H;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc += tw[t * k + j] * __half2float(y[(long long)pos_of_slot[t * k + j] * H + n]);
  out[i] = __float2half(acc);
}

struct Set {  // one rotating input set
  int32_t* ids;
  float* tw;
  __half* x;
  std::uint16_t* xa;  // x in the fused layer's act dtype (x itself for fp16; the same values rounded to bf16)
  int* src_row;      // cuBLAS loop: token of each expert-sorted row
  int* pos_of_slot;  // cuBLAS loop: sorted row of each slot
  std::vector<std::pair<int, int>> runs;  // (expert, rows), in expert order
  std::size_t touched = 0;
  int distinct = 0;
};

int main(int argc, char** argv) {
  const char* csv_path = argc > 1 ? argv[1] : nullptr;
  // Activation dtype of the fused layer (3rd argument, default f16). The peer stays the cuBLAS fp16 loop on the same
  // values (x rounded to bf16 for the fused layer), so bf16 rows compare kernels of two dtypes: rel_err is against fp16.
  const std::string act_arg = argc > 3 ? argv[3] : "f16";
  if (act_arg != "f16" && act_arg != "bf16") {
    std::fprintf(stderr, "usage: w4a16_bench_moe [csv] [T list] [f16|bf16]\n");
    return 2;
  }
  const DType act = act_arg == "bf16" ? DType::bf16 : DType::f16;
  // Scalar type of the weights (4th argument, default uint4b8; uint4 = AWQ-style zero points, random per group).
  const std::string scalar_arg = argc > 4 ? argv[4] : "uint4b8";
  if (scalar_arg != "uint4b8" && scalar_arg != "uint4") {
    std::fprintf(stderr, "usage: w4a16_bench_moe [csv] [T list] [f16|bf16] [uint4b8|uint4]\n");
    return 2;
  }
  const ScalarType scalar = scalar_arg == "uint4" ? ScalarType::uint4 : ScalarType::uint4b8;
  std::vector<int> Ts = {1, 4, 16, 64, 256, 1024, 4096};
  if (argc > 2) {
    Ts.clear();
    std::string s = argv[2];
    for (std::size_t p = 0; p < s.size();) {
      std::size_t q = s.find(',', p);
      Ts.push_back(std::stoi(s.substr(p, q - p)));
      p = q == std::string::npos ? s.size() : q + 1;
    }
  }
  const int E = 128, K8 = 8;
  const std::int64_t H = 2048, I = 768;
  MoeSpec spec{H, I, E, 128, scalar};
  MoeWeights w(spec, DType::f16);
  std::mt19937_64 g(12345);
  auto* q13 = w.w13_qweight.ptr<std::uint32_t>();
  for (std::int64_t i = 0; i < w.w13_qweight.numel(); ++i) q13[i] = static_cast<std::uint32_t>(g());
  auto* q2 = w.w2_qweight.ptr<std::uint32_t>();
  for (std::int64_t i = 0; i < w.w2_qweight.numel(); ++i) q2[i] = static_cast<std::uint32_t>(g());
  std::uniform_real_distribution<float> su(0.5f, 1.5f);
  for (std::int64_t i = 0; i < w.w13_scales.numel(); ++i) w.w13_scales.ptr<std::uint16_t>()[i] = float_to_half(su(g) * 0.45f / 45.25f);
  for (std::int64_t i = 0; i < w.w2_scales.numel(); ++i) w.w2_scales.ptr<std::uint16_t>()[i] = float_to_half(su(g) * 0.45f / 27.7f);
  if (scalar == ScalarType::uint4)
    for (HostTensor* zt : {&w.w13_zeros, &w.w2_zeros})
      for (std::int64_t i = 0; i < zt->numel(); ++i) zt->ptr<std::uint32_t>()[i] = static_cast<std::uint32_t>(g());

  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  CudaMoe moe = CudaMoe::create(w, act, st);
  const std::size_t expert_bytes = w.expert_bytes();

  // Dequantized fp16 weights for the cuBLAS loop, from the same canonical bits.
  __half *W13, *W2;
  CK(cudaMalloc(&W13, sizeof(__half) * E * 2 * I * H));
  CK(cudaMalloc(&W2, sizeof(__half) * E * H * I));
  {
    void *dq, *ds;
    CK(cudaMalloc(&dq, w.w13_qweight.nbytes()));
    CK(cudaMalloc(&ds, w.w13_scales.nbytes()));
    CK(cudaMemcpy(dq, w.w13_qweight.data(), w.w13_qweight.nbytes(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, w.w13_scales.data(), w.w13_scales.nbytes(), cudaMemcpyHostToDevice));
    void* dz = nullptr;  // packed zeros (uint4) or null (z = 8)
    if (scalar == ScalarType::uint4) {
      CK(cudaMalloc(&dz, w.w13_zeros.nbytes()));
      CK(cudaMemcpy(dz, w.w13_zeros.data(), w.w13_zeros.nbytes(), cudaMemcpyHostToDevice));
    }
    long long tot = (long long)E * 2 * I * H;
    dequant_kernel<<<(tot + 255) / 256, 256>>>((const std::uint32_t*)dq, (const __half*)ds, (const std::uint32_t*)dz, 2 * I, H, 128, tot,
                                               W13);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(dq));
    CK(cudaFree(ds));
    CK(cudaFree(dz));
    CK(cudaMalloc(&dq, w.w2_qweight.nbytes()));
    CK(cudaMalloc(&ds, w.w2_scales.nbytes()));
    CK(cudaMemcpy(dq, w.w2_qweight.data(), w.w2_qweight.nbytes(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, w.w2_scales.data(), w.w2_scales.nbytes(), cudaMemcpyHostToDevice));
    dz = nullptr;
    if (scalar == ScalarType::uint4) {
      CK(cudaMalloc(&dz, w.w2_zeros.nbytes()));
      CK(cudaMemcpy(dz, w.w2_zeros.data(), w.w2_zeros.nbytes(), cudaMemcpyHostToDevice));
    }
    tot = (long long)E * H * I;
    dequant_kernel<<<(tot + 255) / 256, 256>>>((const std::uint32_t*)dq, (const __half*)ds, (const std::uint32_t*)dz, H, I, 128, tot, W2);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(dq));
    CK(cudaFree(ds));
    CK(cudaFree(dz));
  }
  cublasHandle_t cb;
  CB(cublasCreate(&cb));
  CB(cublasSetStream(cb, st));
  void* cbws;
  CK(cudaMalloc(&cbws, 64 << 20));
  CB(cublasSetWorkspace(cb, cbws, 64 << 20));

  FILE* csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  const char* header =
      "T,block,path,experts_touched,touched_MB,fused_us,fused_TBps,fused_pct_4.4,cublas_loop_us,speedup,rel_err_vs_cublas,"
      "same_as_block8\n";
  std::printf("%s", header);
  if (csv) std::fprintf(csv, "%s", header);

  for (int T : Ts) {
    const int S = T * K8, sets = T <= 64 ? 16 : 4;
    std::vector<Set> sv(static_cast<std::size_t>(sets));
    for (auto& s : sv) {
      std::vector<int32_t> ids(static_cast<std::size_t>(S));
      std::vector<float> tw(static_cast<std::size_t>(S));
      std::vector<int> perm(E);
      for (int t = 0; t < T; ++t) {
        std::iota(perm.begin(), perm.end(), 0);
        for (int j = 0; j < K8; ++j) std::swap(perm[j], perm[j + g() % (E - j)]);  // partial Fisher-Yates
        float sum = 0;
        for (int j = 0; j < K8; ++j) ids[t * K8 + j] = perm[j], sum += (tw[t * K8 + j] = su(g));
        for (int j = 0; j < K8; ++j) tw[t * K8 + j] /= sum;
      }
      std::vector<std::uint16_t> x(static_cast<std::size_t>(T * H));
      std::normal_distribution<float> nd(0.f, 1.f);
      for (auto& v : x) v = float_to_half(nd(g));
      std::vector<std::uint16_t> xa(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) xa[i] = act == DType::bf16 ? float_to_bf16(half_to_float(x[i])) : x[i];
      Alignment al = align_cpu(ids.data(), T, K8, E, 1);  // block 1: the plain expert-sorted order
      std::vector<int> src(S), pos(S);
      for (int p = 0; p < S; ++p) src[p] = al.sorted_ids[p] / K8, pos[al.sorted_ids[p]] = p;
      for (int e = 0; e < E; ++e) {
        int c = static_cast<int>(std::count(ids.begin(), ids.end(), e));
        if (c) s.runs.push_back({e, c});
      }
      s.distinct = static_cast<int>(s.runs.size());
      s.touched = s.runs.size() * expert_bytes + 2 * 2 * static_cast<std::size_t>(T * H);
      CK(cudaMalloc(&s.ids, 4 * S));
      CK(cudaMalloc(&s.tw, 4 * S));
      CK(cudaMalloc(&s.x, 2 * T * H));
      CK(cudaMalloc(&s.src_row, 4 * S));
      CK(cudaMalloc(&s.pos_of_slot, 4 * S));
      CK(cudaMemcpy(s.ids, ids.data(), 4 * S, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(s.tw, tw.data(), 4 * S, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(s.x, x.data(), 2 * T * H, cudaMemcpyHostToDevice));
      CK(cudaMalloc(&s.xa, 2 * T * H));
      CK(cudaMemcpy(s.xa, xa.data(), 2 * T * H, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(s.src_row, src.data(), 4 * S, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(s.pos_of_slot, pos.data(), 4 * S, cudaMemcpyHostToDevice));
    }
    const std::size_t wsb = moe.workspace_bytes(T, K8);
    void* ws;
    CK(cudaMalloc(&ws, wsb));
    __half *out, *out_cb, *Xg, *G1, *Hh, *Y;
    CK(cudaMalloc(&out, 2 * T * H));
    CK(cudaMalloc(&out_cb, 2 * T * H));
    CK(cudaMalloc(&Xg, 2ull * S * H));
    CK(cudaMalloc(&G1, 2ull * S * 2 * I));
    CK(cudaMalloc(&Hh, 2ull * S * I));
    CK(cudaMalloc(&Y, 2ull * S * H));

    auto fused = [&](int block) {
      return [&, block](int i, cudaStream_t s) {
        const Set& z = sv[i % sets];
        MoeArgs a{TensorView(z.xa, act, {T, H}, Device::cuda), TensorView(z.ids, DType::i32, {T, K8}, Device::cuda),
                  TensorView(z.tw, DType::f32, {T, K8}, Device::cuda), TensorView(out, act, {T, H}, Device::cuda)};
        moe.run(a, ws, wsb, s, block);
      };
    };
    auto cublas_loop = [&](int i, cudaStream_t s) {
      const Set& z = sv[i % sets];
      const float one = 1.f, zero = 0.f;
      gather_kernel<<<(S * H + 255) / 256, 256, 0, s>>>(z.x, z.src_row, S, H, Xg);
      int off = 0;
      for (auto [e, m] : z.runs) {  // G1[rows, 2I] = Xg[rows, H] . W13_e^T  (column-major: W13_e^T(2I x H) . Xg^T)
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, 2 * I, m, H, &one, W13 + (size_t)e * 2 * I * H, CUDA_R_16F, H,
                        Xg + (size_t)off * H, CUDA_R_16F, H, &zero, G1 + (size_t)off * 2 * I, CUDA_R_16F, 2 * I,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        off += m;
      }
      silu_mul_kernel<<<(S * I + 255) / 256, 256, 0, s>>>(G1, S, I, Hh);
      off = 0;
      for (auto [e, m] : z.runs) {
        CB(cublasGemmEx(cb, CUBLAS_OP_T, CUBLAS_OP_N, H, m, I, &one, W2 + (size_t)e * H * I, CUDA_R_16F, I,
                        Hh + (size_t)off * I, CUDA_R_16F, I, &zero, Y + (size_t)off * H, CUDA_R_16F, H,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        off += m;
      }
      combine_kernel<<<(T * H + 255) / 256, 256, 0, s>>>(Y, z.pos_of_slot, z.tw, T, K8, H, out_cb);
    };

    // Correctness of what is timed: set 0 through both, relative L2 difference.
    // W4A16_BENCH_MOE_BLOCK=b: block b as the "chosen" row (the first, timed in a process of its own: a path A/B of whole
    // processes, as the in-process rows after the first read faster).
    const char* block_env = std::getenv("W4A16_BENCH_MOE_BLOCK");
    const int chosen = block_env && *block_env ? std::atoi(block_env) : CudaMoe::choose_block(T, K8, E);
    std::vector<int> blocks = {chosen};
    for (int b : {1, 8, 16, 32, 64, 128})
      if (b != chosen && (b > 1 || S <= 256) && (b != 8 || T <= 1024) && (b != 16 || (T >= 64 && T <= 1024)) && (b != 128 || T >= 64))
        blocks.push_back(b);  // the other paths, for the record
    bench::TimerOptions opt;
    opt.copies = sets;
    opt.calls = sets;
    opt.replays = 7;
    opt.warmup = 2;
    cublas_loop(0, st);
    CK(cudaStreamSynchronize(st));
    std::vector<std::uint16_t> ref(static_cast<std::size_t>(T * H)), got(ref.size());
    CK(cudaMemcpy(ref.data(), out_cb, 2 * T * H, cudaMemcpyDeviceToHost));
    const bench::Timing tc = bench::time_graph(cublas_loop, opt, st);
    double avg_touched = 0, avg_distinct = 0;
    for (auto& s : sv) avg_touched += double(s.touched) / sets, avg_distinct += double(s.distinct) / sets;
    // The decode paths (blocks 1 and 8) run the ring kernel (moe_ring.cuh) by default; the old
    // kernel (moe_decode_kernel, W4A16_MOE_RING=0) and the ring's variants are more rows, same sets
    // and timer: the A/B in one process. The knobs are read per launch, so the graph captured by
    // time_graph holds the variant: "old" W4A16_MOE_RING=0, "ring_balanced" =1 (the balanced grid),
    // "ring_deep" W4A16_MOE_RING_DEEP=1 (one block per SM, T*k <= 32), "align_launch"
    // W4A16_MOE_FUSED_ALIGN=0 (block 8, right after the default block-8 row).
    struct Run {
      int block;
      const char* ring;  // W4A16_MOE_RING, or null: the default (the ring kernel)
      const char* deep;  // W4A16_MOE_RING_DEEP, or null: the default (shallow)
      const char* path;
      const char* fused_align = nullptr;  // W4A16_MOE_FUSED_ALIGN, or null: the default (fused where it fits)
      const char* wgmma = nullptr;        // W4A16_MOE_WGMMA ("0": block 64 on the mma.sync kernel), or null
      const char* configs = nullptr;      // W4A16_MOE_GROUPED_CONFIGS (the grouped path's tiles), or null
      const char* stages = nullptr;       // W4A16_MOE_DIAG_STAGES (the timing-only diagnostic build), or null
      const char* fold = nullptr;         // W4A16_MOE_RING_FOLD ("0": the direct path's GEMM 2 per slot + the reduce), or null
    };
    std::vector<Run> runs;
    // W4A16_BENCH_MOE_PATHS=chosen: the chosen row only (and, in the diagnostic build, its stage rows): short A/B calls.
    const char* paths_env = std::getenv("W4A16_BENCH_MOE_PATHS");
    const bool chosen_only = paths_env && std::string(paths_env) == "chosen";
    if (chosen_only) blocks = {chosen};
    for (int b : blocks) {
      runs.push_back({b, nullptr, nullptr, b == chosen ? "chosen" : "forced"});
      if (b == 8 && T <= 1024) runs.push_back({8, nullptr, nullptr, "align_launch", "0"});
    }
#if defined(W4A16_DIAG_MOE_STAGES)
    // The diagnostic build (fused_moe_launch.cuh diag_stages): the chosen decode path's GEMM 1 alone, GEMM 1 + 2 (timing only).
    if (chosen <= 8)
      for (const char* n : {"1", "2"}) {
        Run r{chosen, nullptr, nullptr, *n == '1' ? "stages1" : "stages2"};
        r.stages = n;
        runs.push_back(r);
      }
#endif
    // The chosen decode path on the ring kernel's balanced grid (W4A16_MOE_RING=1; the default is round robin).
    if (chosen <= 8) runs.push_back({chosen, "1", nullptr, "ring_balanced"});
    if (chosen == 1) {  // the direct path's GEMM 2 per slot and the reduce launch (W4A16_MOE_RING_FOLD=0)
      Run r{1, nullptr, nullptr, "unfolded"};
      r.fold = "0";
      runs.push_back(r);
    }
    if (!chosen_only) {
      if (T <= 1024) runs.push_back({8, "0", nullptr, "old"});
      if (T <= 1024 && chosen != 8) runs.push_back({8, "1", nullptr, "ring_balanced"});
      if (S <= 256) runs.push_back({1, "0", nullptr, "old"});
      if (S <= 32) runs.push_back({8, "2", "1", "ring_deep"}), runs.push_back({1, "2", "1", "ring_deep"});
    }
    // The grouped wgmma path (blocks 16..128 on sm_90a) against the mma.sync kernel at blocks 64 / 32, and its
    // other tiles at block 128 (W4A16_MOE_GROUPED_CONFIGS; the default "22,32"): "mma64", "mma32", "tiles_c1_c2".
    if (T >= 64 && !chosen_only) {
      runs.push_back({64, nullptr, nullptr, "mma64", nullptr, "0"});
      runs.push_back({32, nullptr, nullptr, "mma32", nullptr, "0"});
      runs.push_back({128, nullptr, nullptr, "tiles_32_32", nullptr, nullptr, "32,32"});
      runs.push_back({128, nullptr, nullptr, "tiles_22_22", nullptr, nullptr, "22,22"});
      runs.push_back({128, nullptr, nullptr, "tiles_32_22", nullptr, nullptr, "32,22"});
    }
    std::vector<std::uint16_t> block8;  // the default block-8 row's output
    for (const Run& run : runs) {
      const int b = run.block;
      // A row's knobs for its scope; the process's own values (an A/B of whole runs) come back after it.
      std::vector<std::pair<const char*, std::optional<std::string>>> saved;  // nullopt: was unset
      auto knob = [&saved](const char* var, const char* value) {
        if (!value) return;
        const char* old = std::getenv(var);
        saved.push_back({var, old ? std::optional<std::string>(old) : std::nullopt});
        setenv(var, value, 1);
      };
      knob("W4A16_MOE_RING", run.ring);
      knob("W4A16_MOE_RING_DEEP", run.deep);
      knob("W4A16_MOE_FUSED_ALIGN", run.fused_align);
      knob("W4A16_MOE_WGMMA", run.wgmma);
      knob("W4A16_MOE_GROUPED_CONFIGS", run.configs);
      knob("W4A16_MOE_DIAG_STAGES", run.stages);
      knob("W4A16_MOE_RING_FOLD", run.fold);
      fused(b)(0, st);
      CK(cudaStreamSynchronize(st));
      CK(cudaMemcpy(got.data(), out, 2 * T * H, cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const float gv = act == DType::bf16 ? bf16_to_float(got[i]) : half_to_float(got[i]);
        const double d = gv - half_to_float(ref[i]);
        num += d * d;
        den += double(half_to_float(ref[i])) * half_to_float(ref[i]);
      }
      const double err = std::isfinite(num) ? std::sqrt(num / std::max(den, 1e-30)) : INFINITY;
      const bool default8 = b == 8 && !run.ring && !run.deep && !run.fused_align && !run.wgmma && !run.configs && !run.stages && !run.fold;
      if (default8) block8 = got;
      const char* same = b != 8 || block8.empty() ? "-" : got == block8 ? "1" : "0";
      const bench::Timing tf = bench::time_graph(fused(b), opt, st);
      for (const auto& [var, old] : saved) {
        if (old) setenv(var, old->c_str(), 1);
        else unsetenv(var);
      }
      const double tbps = avg_touched / (tf.median_us * 1e-6) / 1e12;
      char line[512];
      std::snprintf(line, sizeof line, "%d,%d,%s,%.1f,%.2f,%.2f,%.3f,%.1f,%.2f,%.2f,%.2e,%s\n", T, b,
                    run.path, avg_distinct, avg_touched / 1e6, tf.median_us, tbps,
                    100.0 * tbps / 4.4, tc.median_us, tc.median_us / tf.median_us, err, same);
      std::printf("%s", line);
      if (csv) std::fprintf(csv, "%s", line), std::fflush(csv);  // rows so far survive a timeout
      std::fflush(stdout);
    }
    if (chosen > 1 && !chosen_only) {  // the alignment launch alone, at the chosen block: its share of the aligned paths' time
      const std::int64_t cap = aligned_capacity(T, K8, E, chosen);
      std::int32_t *sorted = nullptr, *bexp = nullptr, *tot = nullptr;
      void* scratch = nullptr;
      CK(cudaMalloc(&scratch, align_scratch_bytes(T, K8, E)));
      CK(cudaMalloc(&sorted, 4 * cap));
      CK(cudaMalloc(&bexp, 4 * (cap / chosen + 1)));
      CK(cudaMalloc(&tot, 4));
      auto align_only = [&](int i, cudaStream_t s) { align_cuda(sv[i % sets].ids, T, K8, E, chosen, sorted, bexp, tot, scratch, s); };
      const bench::Timing ta = bench::time_graph(align_only, opt, st);
      char line[512];
      std::snprintf(line, sizeof line, "%d,%d,align_only,%.1f,%.2f,%.2f,-,-,%.2f,-,-,-\n", T, chosen, avg_distinct, avg_touched / 1e6,
                    ta.median_us, tc.median_us);
      std::printf("%s", line);
      if (csv) std::fprintf(csv, "%s", line), std::fflush(csv);
      if (chosen >= 64) {  // the grouped path's two memory-bound kernels alone (fused_moe.cuh): where its time goes
        align_cuda(sv[0].ids, T, K8, E, chosen, sorted, bexp, tot, scratch, st);  // set 0's order, reused by every call
        void* xg = nullptr;
        CK(cudaMalloc(&xg, 2ull * cap * H));
        namespace kc = w4a16::kernels::cuda::moe;
        auto gather_only = [&](int i, cudaStream_t s) {
          const dim3 g(static_cast<unsigned>(std::min<std::int64_t>((cap + 7) / 8, 132 * 16))), b(256);  // as launch_grouped
          kc::moe_gather_rows_kernel<uint4><<<g, b, 0, s>>>(static_cast<const uint4*>(static_cast<const void*>(sv[i % sets].x)), H / 8, K8,
                                                           sorted, tot, S, static_cast<uint4*>(xg), static_cast<int>(cap));
        };
        auto reduce_only = [&](int i, cudaStream_t s) {  // act-dtype rows by slot (the cuBLAS loop's Y buffer) -> out
          kc::moe_reduce8_kernel<__half><<<(T * H / 8 + 255) / 256, 256, 0, s>>>(Y, sv[i % sets].tw, T, K8, H, out);
        };
        for (auto [name, fn] : {std::pair<const char*, std::function<void(int, cudaStream_t)>>{"gather_only", gather_only},
                                std::pair<const char*, std::function<void(int, cudaStream_t)>>{"reduce_only", reduce_only}}) {
          const bench::Timing tp = bench::time_graph(fn, opt, st);
          std::snprintf(line, sizeof line, "%d,%d,%s,%.1f,%.2f,%.2f,-,-,%.2f,-,-,-\n", T, chosen, name, avg_distinct, avg_touched / 1e6,
                        tp.median_us, tc.median_us);
          std::printf("%s", line);
          if (csv) std::fprintf(csv, "%s", line), std::fflush(csv);
        }
        cudaFree(xg);
      }
      cudaFree(sorted);
      cudaFree(scratch);
      cudaFree(bexp);
      cudaFree(tot);
    }
    for (auto& s : sv) {
      cudaFree(s.ids);
      cudaFree(s.tw);
      cudaFree(s.x);
      cudaFree(s.xa);
      cudaFree(s.src_row);
      cudaFree(s.pos_of_slot);
    }
    cudaFree(ws);
    cudaFree(out);
    cudaFree(out_cb);
    cudaFree(Xg);
    cudaFree(G1);
    cudaFree(Hh);
    cudaFree(Y);
  }
  if (csv) std::fclose(csv);
  return 0;
}
