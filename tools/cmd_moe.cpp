// w4a16 moe DIR --layer L: one mixture-of-experts layer of a checkpoint (AWQ or GPTQ experts, the
// unquantized router) on seeded random tokens: routed by the layer's own router, run on the CPU fast
// path or the CUDA layer, checked against the f64 reference, optionally timed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "device.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/moe/moe.hpp"
#if defined(W4A16_TOOL_HAVE_CUDA)
#include "w4a16/moe/moe_cuda.hpp"
#endif

namespace w4a16::cli {
namespace {

using moe::MoeArgs;

// One layer call on the chosen device (into a NaN-poisoned output), timed as median_call_ms does.
struct MoeRun {
  HostTensor out;
  std::string path;  // what ran: "the CPU fast path (N threads)" or the CUDA block choice
  double median_ms = 0;
};

MoeRun run_cpu(const moe::MoeWeights& w, const HostTensor& x, const std::vector<std::int32_t>& ids, const std::vector<float>& tw,
               int k, int repeats) {
  const std::int64_t T = x.shape()[0], H = x.shape()[1];
  MoeRun r;
  r.out = poisoned_output(T, H, x.dtype());
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<unsigned char> ws(moe::moe_cpu_workspace_bytes(w.spec(), T, k, threads));
  MoeArgs a{x.view(), TensorView(const_cast<std::int32_t*>(ids.data()), DType::i32, {T, k}),
            TensorView(const_cast<float*>(tw.data()), DType::f32, {T, k}), r.out.view()};
  r.median_ms = median_call_ms(repeats, [&] { moe::moe_cpu(w, a, ws.data(), ws.size(), threads); });
  r.path = "the CPU fast path (" + std::to_string(threads) + " threads)";
  return r;
}

#if defined(W4A16_TOOL_HAVE_CUDA)
MoeRun run_cuda(const moe::MoeWeights& w, const HostTensor& x, const std::vector<std::int32_t>& ids, const std::vector<float>& tw,
                int k, int repeats, int block) {
  const std::int64_t T = x.shape()[0], H = x.shape()[1];
  MoeRun r;
  r.out = poisoned_output(T, H, x.dtype());
  moe::CudaMoe m = moe::CudaMoe::create(w, x.dtype());
  DeviceBuffer dx(x.nbytes()), dids(ids.size() * 4), dtw(tw.size() * 4), dout(r.out.nbytes());
  dx.upload(x.data(), x.nbytes());
  dids.upload(ids.data(), ids.size() * 4);
  dtw.upload(tw.data(), tw.size() * 4);
  dout.upload(r.out.data(), r.out.nbytes());
  const std::size_t wsb = m.workspace_bytes(T, k);
  DeviceBuffer ws(wsb);
  MoeArgs a{TensorView(dx.data(), x.dtype(), {T, H}, Device::cuda), TensorView(dids.data(), DType::i32, {T, k}, Device::cuda),
            TensorView(dtw.data(), DType::f32, {T, k}, Device::cuda), TensorView(dout.data(), x.dtype(), {T, H}, Device::cuda)};
  r.median_ms = median_call_ms(repeats, [&] {
    m.run(a, ws.data(), wsb, nullptr, block);
    cuda_synchronize();
  });
  dout.download(r.out.data(), r.out.nbytes());
  r.path = "CUDA, " + (block == 0 ? moe::CudaMoe::explain_block(T, k, static_cast<int>(w.spec().experts))
                                  : "block " + std::to_string(block) + " (forced)");
  return r;
}
#endif

int run_moe(const ParsedArgs& a) {
  const std::string dir = a.positionals[0];
  const std::int64_t layer = a.get_int("layer", 0);
  if (layer < 0) usage_fail("--layer", "a layer index >= 0", std::to_string(layer));
  const std::int64_t T = a.get_int("tokens", 16);
  if (T < 1 || T > (std::int64_t{1} << 20)) usage_fail("--tokens", "1..1048576", std::to_string(T));
  const std::int64_t k_arg = a.get_int("top-k", 0);  // 0: the layer's (config.json)
  if (a.has("top-k") && (k_arg < 1 || k_arg > 32)) usage_fail("--top-k", "1..32 (and at most the experts)", std::to_string(k_arg));
  const std::int64_t check = a.get_int("check", 16);
  if (check < 0) usage_fail("--check", "a token count >= 0 (0: no check)", std::to_string(check));
  const std::int64_t repeats = a.get_int("repeat", 0);
  if (repeats < 0) usage_fail("--repeat", "a count >= 0", std::to_string(repeats));
  const std::int64_t block = a.get_int("block", 0);
  const DType act = parse_act_dtype(a.get_or("dtype", "float16"), "--dtype");
  const Device device = parse_device(a.get_or("device", "cpu"), "--device");
  if (block != 0 && device != Device::cuda) usage_fail("--block", "0 on the CPU (the slot blocks are the CUDA layer's)", std::to_string(block));
  if (device == Device::cuda && !cuda_device_present()) fail(ErrorCode::unsupported, "--device", "a CUDA device", "cuda, but no CUDA device is visible");
  const auto seed = static_cast<std::uint64_t>(a.get_int("seed", 1));

  moe::MoeLayer L;
  with_context(dir, [&] { L = moe::load_moe_layer(dir, static_cast<int>(layer)); });
  const moe::MoeSpec& s = L.weights.spec();
  std::printf("%s layer %lld: %lld experts (%s), router %s, %s of packed experts\n", dir.c_str(), static_cast<long long>(layer),
              static_cast<long long>(s.experts), s.describe().c_str(), describe(L.router.view()).c_str(),
              human_bytes(L.weights.nbytes()).c_str());
  if (!L.has_router()) fail(ErrorCode::unsupported, dir, "a layer this tool can route (softmax top-k)", L.routing_from);
  if (!L.shared_expert.empty())
    std::printf("note: %s (a shared expert beside the routed ones) is not part of this layer: its output is not included\n",
                L.shared_expert.c_str());
  const std::int64_t k = a.has("top-k") ? k_arg : L.routing.top_k;
  const bool renormalize = a.has("no-renormalize") ? false : L.routing.renormalize;
  std::printf("routing: top-%lld, %s (%s)\n", static_cast<long long>(k), renormalize ? "renormalized" : "softmax weights kept",
              a.has("top-k") || a.has("no-renormalize") ? "command line" : L.routing_from.c_str());

  // Tokens ~ N(0, 1) in the activation dtype, routed by the layer's router (fp32 logits, top-k softmax).
  HostTensor x(act, {T, s.hidden});
  std::mt19937_64 g(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.ptr<std::uint16_t>()[i] = act == DType::bf16 ? float_to_bf16(nd(g)) : float_to_half(nd(g));
  std::vector<float> logits(static_cast<std::size_t>(T * s.experts));
  moe::router_logits_cpu(x.view(), L.router.view(), logits.data());
  std::vector<std::int32_t> ids(static_cast<std::size_t>(T * k));
  std::vector<float> tw(ids.size());
  moe::route_cpu(logits.data(), T, static_cast<int>(s.experts), {static_cast<int>(k), renormalize}, ids.data(), tw.data());

  MoeRun r;
  if (device == Device::cpu) {
    r = run_cpu(L.weights, x, ids, tw, static_cast<int>(k), static_cast<int>(repeats));
  } else {
#if defined(W4A16_TOOL_HAVE_CUDA)
    r = run_cuda(L.weights, x, ids, tw, static_cast<int>(k), static_cast<int>(repeats), static_cast<int>(block));
#endif
  }
  std::printf("%lld tokens, top-%lld%s, %s: ran on %s", static_cast<long long>(T), static_cast<long long>(k),
              renormalize ? "" : " (softmax weights kept)", std::string(dtype_name(act)).c_str(), r.path.c_str());
  if (repeats > 0) std::printf(", %.3f ms per call (median of %lld)", r.median_ms, static_cast<long long>(repeats));
  std::printf("\n");

  if (check > 0) {  // the f64 reference on the first `check` tokens
    const std::int64_t n = std::min(check, T), H = s.hidden;
    HostTensor ref(act, {n, H});
    moe::moe_reference(L.weights, MoeArgs{TensorView(x.data(), act, {n, H}), TensorView(ids.data(), DType::i32, {n, k}),
                                           TensorView(tw.data(), DType::f32, {n, k}), ref.view()});
    const double err = rel_error_16(r.out.ptr<std::uint16_t>(), ref.ptr<std::uint16_t>(), n * H, act);
    const double tol = tolerance(act);
    std::printf("check: relative error %.3e vs the f64 reference over %lld tokens (tolerance %.0e): %s\n", err,
                static_cast<long long>(n), tol, err <= tol ? "ok" : "FAILED");
    if (!(err <= tol)) {
      char got[64];
      std::snprintf(got, sizeof got, "%.3e", err);
      fail(ErrorCode::internal, "--check", "relative error <= " + std::to_string(tol) + " against moe_reference", got);
    }
  }
  return 0;
}

}  // namespace

Command moe_command() {
  return {{"moe",
           "run one mixture-of-experts layer of a checkpoint on random tokens, checked against the f64 reference",
           {"DIR"},
           {{"layer", "L", "decoder layer whose mlp.experts.* and mlp.gate.weight (Mixtral: block_sparse_moe.*) are loaded", "0"},
            {"tokens", "T", "tokens (rows of x ~ N(0, 1), seeded)", "16"},
            {"top-k", "K", "experts per token", "config.json's num_experts_per_tok, else min(8, experts)"},
            {"no-renormalize", "", "keep the softmax probabilities of the top k (default: config.json's norm_topk_prob; renormalized over the k where absent, and for Mixtral)"},
            {"dtype", "T", "float16 or bfloat16 activations", "float16"},
            {"device", "D", "cpu (the fast path, all hardware threads) or cuda (the CUDA layer)", "cpu"},
            {"block", "B", "CUDA: force the slots per block (1, 8, 16, 32, 64, 128)", "0: chosen by T"},
            {"check", "N", "compare the first N tokens with moe_reference (f64); 0 skips it", "16"},
            {"repeat", "R", "time R calls after a warm-up and print the median", "0: one call"},
            {"seed", "S", "random seed of x", "1"}},
           "Loads model.layers.L.mlp.experts.E.{gate,up,down}_proj (AWQ or GPTQ, as config.json says) and\n"
           "model.layers.L.mlp.gate.weight (or Mixtral's block_sparse_moe.experts.E.{w1,w3,w2} and\n"
           "block_sparse_moe.gate.weight), routes the tokens with the router, runs the layer\n"
           "(out = sum over the top k of weight x down(silu(gate(x)) * up(x))) and checks it. Tolerances\n"
           "(relative L2 error vs the reference): float16 2e-3, bfloat16 1e-2. Exit code 1 if above."},
          run_moe};
}

}  // namespace w4a16::cli
