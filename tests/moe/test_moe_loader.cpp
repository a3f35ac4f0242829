// The MoE checkpoint loader on tiny synthetic Hugging Face folders written with the project's
// own writers (formats::canonical_to_awq / canonical_to_gptq, io::write_safetensors): every
// expert's gate/up/down must come back bit for bit, fused gate-then-up, with the router.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "moe_checkpoint.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/safetensors.hpp"
#include "w4a16/moe/moe.hpp"

namespace w4a16::moe {
namespace {

namespace fs = std::filesystem;
using testckpt::Expert;
using testckpt::write_checkpoint;

fs::path fresh_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("w4a16_moe_" + tag + "_" + std::to_string(test::seed()) + "_" +
                                            std::to_string(test::rng()()));
  fs::create_directories(d);
  return d;
}

// The message of the Error that `f` throws (a failure if it throws none or another code).
template <class F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

void expect_same(const CanonicalView& got, std::int64_t row0, const CanonicalView& want, const std::string& what) {
  for (std::int64_t n = 0; n < want.spec.n; ++n) {
    for (std::int64_t g = 0; g < want.spec.groups(); ++g) {
      ASSERT_EQ(got.scales[(row0 + n) * got.spec.groups() + g], want.scales[n * want.spec.groups() + g]) << what;
      ASSERT_EQ(got.z(row0 + n, g), want.z(n, g)) << what << " zero n=" << n;
    }
    for (std::int64_t k = 0; k < want.spec.k; ++k) ASSERT_EQ(got.q(row0 + n, k), want.q(n, k)) << what << " n=" << n;
  }
}

struct Case {
  std::string method;
  ScalarType st;
  int g;
  bool mixtral = false;  // Mixtral's tensor names
};
class MoeLoader : public ::testing::TestWithParam<Case> {};

TEST_P(MoeLoader, ExpertsComeBackBitForBit) {
  const Case c = GetParam();
  const int E = 3, layer = 2;
  const std::int64_t H = 64, I = 32;
  fs::path dir = fresh_dir(c.method);
  HostTensor router;
  std::vector<Expert> ex = write_checkpoint(dir, c.method, c.st, E, H, I, c.g, layer, router, false, c.mixtral);
  MoeLayer L = load_moe_layer(dir.string(), layer);
  const MoeSpec& s = L.weights.spec();
  EXPECT_EQ(s.experts, E);
  EXPECT_EQ(s.hidden, H);
  EXPECT_EQ(s.intermediate, I);
  EXPECT_EQ(s.group_size, c.g);
  EXPECT_EQ(s.scalar, c.st);
  for (int e = 0; e < E; ++e) {
    expect_same(L.weights.w13(e), 0, ex[e].gate.view(), "gate " + std::to_string(e));
    expect_same(L.weights.w13(e), I, ex[e].up.view(), "up " + std::to_string(e));
    expect_same(L.weights.w2(e), 0, ex[e].down.view(), "down " + std::to_string(e));
  }
  ASSERT_EQ(L.router.dtype(), DType::bf16);
  ASSERT_EQ(L.router.nbytes(), router.nbytes());
  EXPECT_EQ(std::memcmp(L.router.data(), router.data(), router.nbytes()), 0);
  // No such layer: both namings' routers are named.
  const std::string m = error_of([&] { load_moe_layer(dir.string(), layer + 1); }, ErrorCode::not_found);
  EXPECT_NE(m.find("model.layers.3.mlp.gate.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("model.layers.3.block_sparse_moe.gate.weight"), std::string::npos) << m;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Formats, MoeLoader,
                         ::testing::Values(Case{"awq", ScalarType::uint4, 32}, Case{"gptq", ScalarType::uint4b8, 32},
                                           Case{"gptq", ScalarType::uint4, kChannelwise},
                                           Case{"awq", ScalarType::uint4, 32, true},
                                           Case{"gptq", ScalarType::uint4b8, kChannelwise, true}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const Case& c = i.param;
                           return c.method + "_" + std::string(scalar_type_name(c.st)) + "_g" +
                                  (c.g == kChannelwise ? std::string("ch") : std::to_string(c.g)) +
                                  (c.mixtral ? "_mixtral" : "");
                         });

TEST(MoeLoaderReject, MissingExpertTensor) {
  fs::path dir = fresh_dir("missing");
  HostTensor router;
  write_checkpoint(dir, "gptq", ScalarType::uint4b8, 2, 64, 32, 32, 0, router, /*drop_one=*/true);
  try {
    load_moe_layer(dir.string(), 0);
    ADD_FAILURE() << "a checkpoint without experts.1.down_proj was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("experts.1.down_proj"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}


// config.json's routing fields become the layer's routing; absent, the defaults; bad, a format_error naming the field.
TEST(MoeLoaderRouting, ConfigFieldsOrDefaults) {
  fs::path dir = fresh_dir("routing");
  HostTensor router;
  write_checkpoint(dir, "gptq", ScalarType::uint4b8, 4, 64, 32, 32, 0, router);
  const std::string quant =
      R"("quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": true, "desc_act": false})";
  const auto with_config = [&](const std::string& fields) {
    std::ofstream(dir / "config.json") << "{" << fields << (fields.empty() ? "" : ", ") << quant << "}";
  };
  MoeLayer L = load_moe_layer(dir.string(), 0);  // the helper's config has no routing fields
  EXPECT_EQ(L.routing.top_k, 4);                 // min(8, E)
  EXPECT_TRUE(L.routing.renormalize);
  EXPECT_EQ(L.routing_from, "default");
  with_config(R"("model_type": "qwen2_moe", "num_experts_per_tok": 2, "norm_topk_prob": false)");
  L = load_moe_layer(dir.string(), 0);
  EXPECT_EQ(L.routing.top_k, 2);
  EXPECT_FALSE(L.routing.renormalize);
  EXPECT_EQ(L.routing_from, "config.json: num_experts_per_tok = 2, norm_topk_prob = false");
  with_config(R"("num_experts_per_tok": 5)");
  std::string m = error_of([&] { load_moe_layer(dir.string(), 0); }, ErrorCode::format_error);
  EXPECT_NE(m.find("config.json: num_experts_per_tok: expected an integer in 1..4, got 5"), std::string::npos) << m;
  with_config(R"("norm_topk_prob": "yes")");
  m = error_of([&] { load_moe_layer(dir.string(), 0); }, ErrorCode::format_error);
  EXPECT_NE(m.find("norm_topk_prob: expected true or false"), std::string::npos) << m;
  // Routing that is not softmax top-k (DeepSeek's): the experts load, the router is left out, and routing_from says why.
  with_config(R"("scoring_func": "softmax", "topk_method": "greedy", "num_experts_per_tok": 2)");
  L = load_moe_layer(dir.string(), 0);
  EXPECT_TRUE(L.has_router());
  EXPECT_EQ(L.routing.top_k, 2);
  for (const std::string bad : {R"("scoring_func": "sigmoid")", R"("topk_method": "noaux_tc")"}) {
    with_config(bad + R"(, "num_experts_per_tok": 2)");
    L = load_moe_layer(dir.string(), 0);
    EXPECT_FALSE(L.has_router()) << bad;
    EXPECT_EQ(L.weights.spec().experts, 4) << bad;
    EXPECT_NE(L.routing_from.find(bad.substr(1, bad.find('"', 1) - 1) + " = "), std::string::npos) << L.routing_from;
    EXPECT_NE(L.routing_from.find("give topk_ids and topk_weights"), std::string::npos) << L.routing_from;
  }
  fs::remove_all(dir);

  // Mixtral's names: renormalized unless config.json says otherwise.
  dir = fresh_dir("routing_mixtral");
  write_checkpoint(dir, "gptq", ScalarType::uint4b8, 4, 64, 32, 32, 0, router, false, /*mixtral=*/true);
  with_config(R"("model_type": "mixtral", "num_experts_per_tok": 2)");
  L = load_moe_layer(dir.string(), 0);
  EXPECT_EQ(L.routing.top_k, 2);
  EXPECT_TRUE(L.routing.renormalize);
  EXPECT_EQ(L.routing_from, "config.json: num_experts_per_tok = 2, renormalized (Mixtral)");
  fs::remove_all(dir);
}

// ---- Layers built from memory -----------------------------------------------------------------

void expect_same_bytes(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.empty(), want.empty()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (want.nbytes() > 0) {  // (memcmp of null: UB)
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.nbytes()), 0) << what;
  }
}

void expect_same_weights(const MoeWeights& got, const MoeWeights& want) {
  EXPECT_EQ(got.spec().describe(), want.spec().describe());
  EXPECT_EQ(got.scale_dtype(), want.scale_dtype());
  expect_same_bytes(got.w13_qweight, want.w13_qweight, "w13_qweight");
  expect_same_bytes(got.w13_scales, want.w13_scales, "w13_scales");
  expect_same_bytes(got.w13_zeros, want.w13_zeros, "w13_zeros");
  expect_same_bytes(got.w2_qweight, want.w2_qweight, "w2_qweight");
  expect_same_bytes(got.w2_scales, want.w2_scales, "w2_scales");
  expect_same_bytes(got.w2_zeros, want.w2_zeros, "w2_zeros");
}

// The per-expert views of `ex`, as an engine holding its experts one by one would pass them.
struct ExpertViews {
  std::vector<CanonicalView> gate, up, down;
};
ExpertViews views_of(const std::vector<testckpt::Expert>& ex) {
  ExpertViews v;
  for (const auto& x : ex) {
    v.gate.push_back(x.gate.view());
    v.up.push_back(x.up.view());
    v.down.push_back(x.down.view());
  }
  return v;
}

TEST_P(MoeLoader, FromExpertsAndFromStackedEqualTheLoadedLayer) {
  const Case c = GetParam();
  const int E = 3;
  const std::int64_t H = 64, I = 32;
  fs::path dir = fresh_dir("build_" + c.method);
  HostTensor router;
  const std::vector<Expert> ex = write_checkpoint(dir, c.method, c.st, E, H, I, c.g, 0, router);
  const MoeLayer loaded = load_moe_layer(dir.string(), 0);
  fs::remove_all(dir);

  const ExpertViews v = views_of(ex);
  const MoeLayer built = moe_layer_from_experts(v.gate, v.up, v.down, router.view());
  expect_same_weights(built.weights, loaded.weights);
  ASSERT_TRUE(built.has_router());
  expect_same_bytes(built.router, loaded.router, "router");

  const MoeLayer no_router = moe_layer_from_experts(v.gate, v.up, v.down, TensorView{});
  EXPECT_FALSE(no_router.has_router());
  expect_same_weights(no_router.weights, loaded.weights);

  const MoeWeights& w = loaded.weights;
  const MoeStackedView t{w.w13_qweight.view(), w.w13_scales.view(), w.w13_zeros.empty() ? TensorView{} : w.w13_zeros.view(),
                         w.w2_qweight.view(),  w.w2_scales.view(),  w.w2_zeros.empty() ? TensorView{} : w.w2_zeros.view()};
  const MoeLayer stacked = moe_layer_from_stacked(t, c.g, c.st, router.view());
  expect_same_weights(stacked.weights, w);
  expect_same_bytes(stacked.router, loaded.router, "router");
  EXPECT_FALSE(moe_layer_from_stacked(t, c.g, c.st, TensorView{}).has_router());
}

TEST(MoeBuildReject, ExpertListsNameTheArgumentAndTheExpert) {
  const std::int64_t H = 64, I = 32;
  std::vector<Expert> ex;
  for (int e = 0; e < 3; ++e)
    ex.push_back({test::random_linear({I, H, 32, ScalarType::uint4}, DType::f16, false, false),
                  test::random_linear({I, H, 32, ScalarType::uint4}, DType::f16, false, false),
                  test::random_linear({H, I, 32, ScalarType::uint4}, DType::f16, false, false)});
  ExpertViews v = views_of(ex);
  const auto build = [&](const ExpertViews& a, const TensorView& r = {}) {
    return [&a, r] { moe_layer_from_experts(a.gate, a.up, a.down, r); };
  };

  ExpertViews none;
  EXPECT_NE(error_of(build(none), ErrorCode::invalid_argument).find("gate"), std::string::npos);
  ExpertViews short_up = v;
  short_up.up.pop_back();
  std::string m = error_of(build(short_up), ErrorCode::invalid_argument);
  EXPECT_NE(m.find("up: expected 3 layers"), std::string::npos) << m;

  // Expert 2's up_proj in another group size; expert 1's down with a bias; expert 1's scales in bf16.
  const QuantizedLinear g64 = test::random_linear({I, H, 64, ScalarType::uint4}, DType::f16, false, false);
  ExpertViews bad = v;
  bad.up[2] = g64.view();
  m = error_of(build(bad), ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("expert 2"), std::string::npos) << m;
  EXPECT_NE(m.find("up_proj"), std::string::npos) << m;
  const QuantizedLinear biased = test::random_linear({H, I, 32, ScalarType::uint4}, DType::f16, true, false);
  bad = v;
  bad.down[1] = biased.view();
  m = error_of(build(bad), ErrorCode::unsupported);
  EXPECT_NE(m.find("expert 1 down_proj.bias"), std::string::npos) << m;
  const QuantizedLinear bf16 = test::random_linear({I, H, 32, ScalarType::uint4}, DType::bf16, false, false);
  bad = v;
  bad.gate[1] = bf16.view();
  m = error_of(build(bad), ErrorCode::dtype_mismatch);
  EXPECT_NE(m.find("expert 1 gate_proj.scales"), std::string::npos) << m;
  // Expert 0's down not [H, I].
  const QuantizedLinear wide = test::random_linear({H, 2 * I, 32, ScalarType::uint4}, DType::f16, false, false);
  bad = v;
  bad.down[0] = wide.view();
  m = error_of(build(bad), ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("down[0]"), std::string::npos) << m;

  // Routers of the wrong E, H or dtype.
  HostTensor r_e(DType::f16, {2, H}), r_h(DType::f16, {3, H + 8}), r_f32(DType::f32, {3, H});
  m = error_of(build(v, r_e.view()), ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("router: expected float16 or bfloat16 [E, H] on the host with E = 3"), std::string::npos) << m;
  m = error_of(build(v, r_h.view()), ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("gate[0]"), std::string::npos) << m;
  m = error_of(build(v, r_f32.view()), ErrorCode::invalid_argument);
  EXPECT_NE(m.find("router"), std::string::npos) << m;
}

TEST(MoeBuildReject, StackedTensorsNameTheTensor) {
  const int E = 2;
  const std::int64_t H = 64, I = 32;
  MoeSpec s;
  s.experts = E;
  s.hidden = H;
  s.intermediate = I;
  s.group_size = 32;
  s.scalar = ScalarType::uint4;
  const MoeWeights w(s, DType::bf16);
  const MoeStackedView ok{w.w13_qweight.view(), w.w13_scales.view(), w.w13_zeros.view(),
                          w.w2_qweight.view(),  w.w2_scales.view(),  w.w2_zeros.view()};
  expect_same_weights(moe_layer_from_stacked(ok, 32, ScalarType::uint4, TensorView{}).weights, w);
  const HostTensor r_h(DType::bf16, {E, H / 2});
  std::string m = error_of([&] { moe_layer_from_stacked(ok, 32, ScalarType::uint4, r_h.view()); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("router: expected [E, H] with H = 64"), std::string::npos) << m;

  MoeStackedView t = ok;
  t.w2_zeros = TensorView{};
  m = error_of([&] { moe_layer_from_stacked(t, 32, ScalarType::uint4, TensorView{}); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("w2_zeros: expected int32 [E, H/8, G2] = [2, 8, 1]"), std::string::npos) << m;
  m = error_of([&] { moe_layer_from_stacked(ok, 32, ScalarType::uint4b8, TensorView{}); }, ErrorCode::invalid_argument);
  EXPECT_NE(m.find("w13_zeros: expected no zero-point tensor for uint4b8"), std::string::npos) << m;
  m = error_of([&] { moe_layer_from_stacked(ok, kChannelwise, ScalarType::uint4, TensorView{}); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("w13_scales: expected bfloat16 [E, 2I, G13] = [2, 64, 1]"), std::string::npos) << m;  // G13 = 2 given
  m = error_of([&] { moe_layer_from_stacked(ok, 64, ScalarType::uint4, TensorView{}); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("w2.K: expected a multiple of the group size 64, got 32"), std::string::npos) << m;  // I = 32
  const HostTensor f16_scales(DType::f16, {E, H, I / 32});
  t = ok;
  t.w2_scales = f16_scales.view();
  m = error_of([&] { moe_layer_from_stacked(t, 32, ScalarType::uint4, TensorView{}); }, ErrorCode::dtype_mismatch);
  EXPECT_NE(m.find("w2_scales: expected bfloat16"), std::string::npos) << m;
  const HostTensor odd(DType::i32, {E, 2 * I + 1, H / 8});
  t = ok;
  t.w13_qweight = odd.view();
  m = error_of([&] { moe_layer_from_stacked(t, 32, ScalarType::uint4, TensorView{}); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("w13_qweight"), std::string::npos) << m;
  const HostTensor flat(DType::i32, {E * 2 * I, H / 8});
  t = ok;
  t.w13_qweight = flat.view();
  m = error_of([&] { moe_layer_from_stacked(t, 32, ScalarType::uint4, TensorView{}); }, ErrorCode::shape_mismatch);
  EXPECT_NE(m.find("w13_qweight: expected int32 [E, N, K/8] (rank 3)"), std::string::npos) << m;
}

// Every tensor of a written MoE layer perturbed one way at a time (test::perturbed_variants: a dimension changed, another
// dtype, the rank changed; the router's too): loading either gives the layer's spec unchanged (a change the format allows:
// bf16 scales of one expert, a float32 router) or throws a w4a16::Error naming the perturbed tensor (its full name, or
// its expert and role); nothing loads other dimensions, nothing fails without saying which tensor.
TEST(MoeLoaderReject, EveryPerturbedTensorIsNamedOrLoadsTheSameSpec) {
  fs::path dir = fresh_dir("perturb");
  HostTensor router;
  const int E = 2, layer = 0;
  const std::int64_t H = 64, I = 32;
  write_checkpoint(dir, "gptq", ScalarType::uint4, E, H, I, 32, layer, router);
  const MoeSpec want = load_moe_layer(dir.string(), layer).weights.spec();
  // The written tensors, copied (the file is rewritten below).
  std::vector<std::pair<std::string, HostTensor>> orig;
  {
    const auto f = io::SafetensorsFile::open((dir / "model.safetensors").string());
    for (const io::TensorInfo& t : f->tensors()) {
      HostTensor h(t.dtype, t.shape);
      const TensorView v = f->view(t.name);
      if (h.nbytes()) std::memcpy(h.data(), v.data, h.nbytes());
      orig.emplace_back(t.name, std::move(h));
    }
  }
  int loaded = 0, named = 0;
  for (std::size_t victim = 0; victim < orig.size(); ++victim) {
    const HostTensor& o = orig[victim].second;
    const std::string& name = orig[victim].first;
    auto variants = test::perturbed_variants(o, {DType::f16, DType::bf16, DType::f32, DType::i32, DType::u8});
    for (auto& [what, t] : variants) {
      SCOPED_TRACE(name + " " + what);
      std::vector<std::pair<std::string, TensorView>> views;
      for (std::size_t i = 0; i < orig.size(); ++i) views.emplace_back(orig[i].first, i == victim ? t.view() : orig[i].second.view());
      io::write_safetensors((dir / "model.safetensors").string(), views);
      try {
        const MoeLayer L = load_moe_layer(dir.string(), layer);
        const MoeSpec& s = L.weights.spec();
        EXPECT_EQ(s.experts, want.experts);
        EXPECT_EQ(s.hidden, want.hidden);
        EXPECT_EQ(s.intermediate, want.intermediate);
        EXPECT_EQ(s.group_size, want.group_size);
        ++loaded;
      } catch (const Error& e) {
        ++named;
        const std::string msg = e.what();
        // "model.layers.0.mlp.experts.1.up_proj.scales", or the prefix and the role ("...up_proj': scales: ...").
        const std::size_t dot = name.rfind('.');
        const std::string prefix = name.substr(0, dot), role = name.substr(dot + 1);
        EXPECT_TRUE(msg.find(name) != std::string::npos ||
                    (msg.find(prefix) != std::string::npos && msg.find(role) != std::string::npos))
            << msg;
      }
    }
  }
  EXPECT_GT(named, 60);
  EXPECT_GT(loaded, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace w4a16::moe
