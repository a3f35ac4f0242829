// w4a16_bench_moe_cpu: the CPU MoE fast path (moe::moe_cpu) on Qwen3-30B-A3B shapes (H 2048, I 768,
// E 128, top 8, fp16 uint4b8 g 128, random weights and routing), T tokens: median ms per call, the
// touched experts' bytes (w13 + w2 + scales of the distinct experts routed to) and their GB/s.
// Cold caches, as the linear sweep times: a sample is one call on each of C copies of the layer's weights in turn
// (C copies >= 3x the last-level cache; the same routing, so the same experts' bytes at other addresses), per call.
//   usage: w4a16_bench_moe_cpu [threads (default: all)] [T list, default 1,4,16,64] [repeats, default 7] [copies, default: 3x LLC]
// W4A16_CPU_ISA=scalar times the portable row kernels. docs/benchmarks/cpu.md has the numbers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu_sweep.hpp"  // llc_bytes
#include "w4a16/moe/moe.hpp"

using namespace w4a16;
using namespace w4a16::moe;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> ts;
  {
    std::stringstream ss(argc > 2 ? argv[2] : "1,4,16,64");
    for (std::string t; std::getline(ss, t, ',');) ts.push_back(std::atoi(t.c_str()));
  }
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 7;
  int copies = argc > 4 ? std::atoi(argv[4]) : 0;
  if (threads < 1 || repeats < 1 || ts.empty() || *std::min_element(ts.begin(), ts.end()) < 1 || copies < 0) {
    std::fprintf(stderr, "usage: %s [threads >= 1] [T,T,... >= 1] [repeats >= 1] [copies >= 1, 0 = 3x LLC]\n", argv[0]);
    return 2;
  }
  MoeSpec s;
  s.hidden = 2048;
  s.intermediate = 768;
  s.experts = 128;
  s.group_size = 128;
  s.scalar = ScalarType::uint4b8;
  MoeWeights w(s, DType::f16);
  std::mt19937 rng(1);
  for (HostTensor* t : {&w.w13_qweight, &w.w2_qweight}) {
    auto* p = static_cast<unsigned char*>(t->data());
    for (std::size_t i = 0; i < t->nbytes(); ++i) p[i] = static_cast<unsigned char>(rng());
  }
  for (HostTensor* t : {&w.w13_scales, &w.w2_scales}) {  // fp16 in [2^-11, 2^-10): small, finite
    auto* p = static_cast<std::uint16_t*>(t->data());
    for (std::size_t i = 0; i < t->nbytes() / 2; ++i) p[i] = static_cast<std::uint16_t>(0x1000 + (rng() & 0x3ff));
  }
  if (copies == 0)
    copies = static_cast<int>(std::clamp<std::int64_t>(
        (3 * bench::llc_bytes() + static_cast<std::int64_t>(w.nbytes()) - 1) / static_cast<std::int64_t>(w.nbytes()), 1, 16));
  std::vector<MoeWeights> ws_copies(static_cast<std::size_t>(copies - 1), w);  // the same bytes at other addresses
  auto copy_of = [&](int c) -> const MoeWeights& { return c == 0 ? w : ws_copies[static_cast<std::size_t>(c - 1)]; };
  const int k = 8;
  std::printf("moe_cpu, %s, top %d, fp16 uint4b8 g128, %d threads, %d weight copies (%.0f MB each, LLC %lld MiB)\n",
              s.describe().c_str(), k, threads, copies, w.nbytes() / 1e6, static_cast<long long>(bench::llc_bytes() >> 20));
  for (int T : ts) {
    std::vector<std::uint16_t> x(static_cast<std::size_t>(T) * s.hidden), out(x.size());
    for (auto& v : x) v = static_cast<std::uint16_t>(0x3000 + (rng() & 0x3ff));  // fp16 in [0.125, 0.25)
    std::vector<std::int32_t> ids(static_cast<std::size_t>(T) * k);
    std::vector<float> tw(ids.size(), 1.f / k);
    std::vector<int> order(s.experts);
    for (int t = 0; t < T; ++t) {
      for (int e = 0; e < s.experts; ++e) order[e] = e;
      std::shuffle(order.begin(), order.end(), rng);
      for (int j = 0; j < k; ++j) ids[static_cast<std::size_t>(t) * k + j] = order[j];
    }
    MoeArgs a;
    a.x = TensorView(x.data(), DType::f16, {T, s.hidden});
    a.topk_ids = TensorView(ids.data(), DType::i32, {T, k});
    a.topk_weights = TensorView(tw.data(), DType::f32, {T, k});
    a.out = TensorView(out.data(), DType::f16, {T, s.hidden});
    std::vector<unsigned char> ws(moe_cpu_workspace_bytes(s, T, k, threads));
    for (int c = 0; c < copies; ++c) moe_cpu(copy_of(c), a, ws.data(), ws.size(), threads);  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < copies; ++c) moe_cpu(copy_of(c), a, ws.data(), ws.size(), threads);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / copies);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<char> used(static_cast<std::size_t>(s.experts), 0);
    for (int e : ids) used[static_cast<std::size_t>(e)] = 1;
    const int touched = static_cast<int>(std::count(used.begin(), used.end(), 1));
    const double mb = touched * static_cast<double>(w.expert_bytes()) / 1e6, med = ms[ms.size() / 2];
    std::printf("T=%-4d median %8.3f ms   experts touched %3d   %6.1f MB   %5.2f GB/s\n", T, med, touched, mb, mb / med);
  }
  return 0;
}
