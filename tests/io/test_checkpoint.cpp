// Hugging Face checkpoint folders (config.json + model.safetensors or a sharded index) in AWQ
// and GPTQ format: written with this library's writers and by hand, found by tensor names,
// loaded by prefix and compared with the weights the format definition gives.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>

#include "../formats/spec_pack.hpp"
#include "io_testutil.hpp"
#include "testutil.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/io/checkpoint.hpp"

using namespace w4a16;
using test::expect_error;

namespace {
bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}
void expect_same_layer(const QuantizedLinear& got, const QuantizedLinear& want) {
  EXPECT_EQ(got.spec().describe(), want.spec().describe());
  EXPECT_TRUE(same_bytes(got.qweight(), want.qweight()));
  EXPECT_TRUE(same_bytes(got.scales(), want.scales()));
  EXPECT_EQ(got.spec().has_zeros(), want.spec().has_zeros());
  if (want.spec().has_zeros()) { EXPECT_TRUE(same_bytes(got.zeros(), want.zeros())); }
  ASSERT_EQ(got.has_bias(), want.has_bias());
  if (want.has_bias()) { EXPECT_TRUE(same_bytes(got.bias(), want.bias())); }
  ASSERT_EQ(got.act_order(), want.act_order());
  if (want.act_order()) { EXPECT_TRUE(same_bytes(got.perm(), want.perm())); }
}

std::uint32_t word(const TensorView& t, std::int64_t i) {
  std::uint32_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(t.data) + 4 * i, 4);
  return v;
}
double scale(const TensorView& t, std::int64_t i) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(t.data) + 2 * i, 2);
  return f16x_to_float(t.dtype, v);
}
int nib(std::uint32_t w, std::int64_t i) { return static_cast<int>((w >> (4 * i)) & 15u); }

// Weights [N, K] decoded by the test from a layer's AWQ tensors in the store (FORMATS.md).
std::vector<double> awq_weights_from_files(const io::TensorStore& s, const std::string& p, int g) {
  constexpr int kReverse[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  TensorView qw = s.view(p + ".qweight"), qz = s.view(p + ".qzeros"), sc = s.view(p + ".scales");
  const std::int64_t K = qw.shape[0], N = 8 * qw.shape[1], gl = g == -1 ? K : g;
  std::vector<double> w(static_cast<std::size_t>(N * K));
  for (std::int64_t k = 0; k < K; ++k)
    for (std::int64_t n = 0; n < N; ++n) {
      int q = nib(word(qw, k * (N / 8) + n / 8), kReverse[n % 8]);
      int z = nib(word(qz, (k / gl) * (N / 8) + n / 8), kReverse[n % 8]);
      w[static_cast<std::size_t>(n * K + k)] = (q - z) * scale(sc, (k / gl) * N + n);
    }
  return w;
}
// The same from GPTQ tensors: v1 reads z = (stored + 1) & 15; z = 8 when sym.
std::vector<double> gptq_weights_from_files(const io::TensorStore& s, const std::string& p, bool sym, bool v1) {
  TensorView qw = s.view(p + ".qweight"), qz = s.view(p + ".qzeros"), sc = s.view(p + ".scales"), gi = s.view(p + ".g_idx");
  const std::int64_t K = 8 * qw.shape[0], N = qw.shape[1], zc = qz.shape[1];
  std::vector<double> w(static_cast<std::size_t>(N * K));
  for (std::int64_t k = 0; k < K; ++k) {
    std::int64_t g = static_cast<std::int32_t>(word(gi, k));
    for (std::int64_t n = 0; n < N; ++n) {
      int q = nib(word(qw, (k / 8) * N + n), k % 8);
      int stored = nib(word(qz, g * zc + n / 8), n % 8);
      int z = sym ? 8 : (v1 ? (stored + 1) & 15 : stored);
      if (sym) { EXPECT_EQ(v1 ? (stored + 1) & 15 : stored, 8); }
      w[static_cast<std::size_t>(n * K + k)] = (q - z) * scale(sc, g * N + n);
    }
  }
  return w;
}

// Dense 16-bit tensors every folder carries: lm_head and a vision linear are unquantized
// linears; the embedding and the norm are not linears.
std::vector<std::pair<std::string, HostTensor>> dense_tensors(std::int64_t hidden) {
  std::vector<std::pair<std::string, HostTensor>> d;
  d.emplace_back("lm_head.weight", HostTensor(DType::f16, {16, hidden}));
  d.emplace_back("model.embed_tokens.weight", HostTensor(DType::f16, {16, hidden}));
  d.emplace_back("model.norm.weight", HostTensor(DType::f16, {hidden}));
  d.emplace_back("visual.proj.weight", HostTensor(DType::bf16, {8, hidden}));
  return d;
}

// Writes tensors as model.safetensors, or as two shards plus model.safetensors.index.json.
void write_folder(const test::TempDir& dir, const std::string& config,
                  const std::vector<std::pair<std::string, TensorView>>& tensors, bool sharded) {
  test::write_file(dir / "config.json", config);
  if (!sharded) {
    io::write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
    return;
  }
  std::vector<std::pair<std::string, TensorView>> a, b;
  std::string map;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    bool first = i < tensors.size() / 2;
    (first ? a : b).push_back(tensors[i]);
    map += std::string(map.empty() ? "" : ",") + "\"" + tensors[i].first + "\":\"model-0000" + (first ? "1" : "2") +
           "-of-00002.safetensors\"";
  }
  io::write_safetensors(dir / "model-00001-of-00002.safetensors", a);
  io::write_safetensors(dir / "model-00002-of-00002.safetensors", b);
  test::write_file(dir / "model.safetensors.index.json", R"({"metadata":{"total_size":0},"weight_map":{)" + map + "}}");
}

// y = x . W^T + b for fp16 x: W from the library's loaded layer vs W decoded by the test.
void expect_same_output(const QuantizedLinear& w, const std::vector<double>& w_ref) {
  const std::int64_t M = 5, N = w.spec().n, K = w.spec().k;
  std::vector<double> x = test::to_f64(test::random_act(M, K, DType::f16).data(), DType::f16, M, K, K);
  HostTensor d = formats::dequantize(w.view());
  std::vector<double> wl(d.ptr<float>(), d.ptr<float>() + N * K);
  std::vector<double> b = test::bias_f64(w);
  double err = test::rel_error(test::gemm_f64(x, wl, b, M, N, K), test::gemm_f64(x, w_ref, b, M, N, K));
  EXPECT_LT(err, 1e-3);
}

const std::vector<std::string> kProj = {"model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj",
                                        "model.layers.1.self_attn.q_proj"};
}  // namespace

TEST(HfCheckpoint, AwqFolderWrittenWithTheWriters) {
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded ? "sharded" : "single file");
    test::TempDir dir;
    const int g = 64;
    std::vector<QuantizedLinear> layers = {
        test::random_linear({40, 192, g, ScalarType::uint4}, DType::f16, true, false),
        test::random_linear({192, 320, g, ScalarType::uint4}, DType::f16, false, false),
        test::random_linear({24, 192, g, ScalarType::uint4}, DType::f16, true, false)};
    std::vector<formats::AwqHost> awq;
    for (auto& l : layers) awq.push_back(formats::canonical_to_awq(l.view()));
    std::vector<std::pair<std::string, TensorView>> tensors;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      tensors.emplace_back(kProj[i] + ".qweight", awq[i].qweight.view());
      tensors.emplace_back(kProj[i] + ".qzeros", awq[i].qzeros.view());
      tensors.emplace_back(kProj[i] + ".scales", awq[i].scales.view());
      if (layers[i].has_bias()) tensors.emplace_back(kProj[i] + ".bias", awq[i].bias.view());
    }
    auto dense = dense_tensors(192);
    for (auto& [n, t] : dense) tensors.emplace_back(n, t.view());
    write_folder(dir,
                 R"({"architectures":["LlamaForCausalLM"],"quantization_config":{"quant_method":"awq","bits":4,)"
                 R"("group_size":64,"zero_point":true,"version":"gemm","modules_to_not_convert":["visual"]}})",
                 tensors, sharded);

    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
    EXPECT_EQ(ck.quant_config().method, io::QuantMethod::awq);
    ASSERT_EQ(ck.quantized_layers().size(), 3u);
    EXPECT_EQ(ck.unquantized_linears(), (std::vector<std::string>{"lm_head", "visual.proj"}));
    for (std::size_t i = 0; i < layers.size(); ++i) {
      SCOPED_TRACE(kProj[i]);
      const io::LayerInfo& L = ck.layer(kProj[i]);
      EXPECT_EQ(L.format, io::QuantMethod::awq);
      EXPECT_EQ(L.n, layers[i].spec().n);
      EXPECT_EQ(L.k, layers[i].spec().k);
      EXPECT_EQ(L.group_size, g);
      EXPECT_EQ(L.scalar, ScalarType::uint4);
      EXPECT_EQ(L.has_bias, layers[i].has_bias());
      EXPECT_FALSE(L.act_order);
      EXPECT_EQ(L.bytes, awq[i].qweight.nbytes() + awq[i].qzeros.nbytes() + awq[i].scales.nbytes() + awq[i].bias.nbytes());
      QuantizedLinear got = ck.load_linear(kProj[i]);
      expect_same_layer(got, layers[i]);
      std::vector<double> ref = awq_weights_from_files(ck.store(), kProj[i], g);
      EXPECT_EQ(test::dequant_f64(got), ref);
      expect_same_output(got, ref);
    }
  }
}

TEST(HfCheckpoint, GptqFoldersWrittenWithTheWriters) {
  struct Variant { bool sym, desc_act, sharded; };
  for (Variant v : {Variant{true, true, true}, Variant{false, false, false}, Variant{false, true, false},
                    Variant{true, false, true}}) {
    SCOPED_TRACE(std::string(v.sym ? "sym v1" : "asym v2") + (v.desc_act ? " desc_act" : "") + (v.sharded ? " sharded" : ""));
    test::TempDir dir;
    const int g = 32;
    const ScalarType st = v.sym ? ScalarType::uint4b8 : ScalarType::uint4;
    // With desc_act, layer 0 is act-order (its perm normalized within groups, as GPTQ keeps
    // only each channel's group) and layer 1 has g_idx = k / g; layer 2 has a bias.
    std::vector<QuantizedLinear> layers;
    {
      QuantizedLinear a = test::random_linear({40, 288, g, st}, DType::f16, true, v.desc_act);
      if (v.desc_act) {
        formats::GptqHost h = formats::canonical_to_gptq(a.view());
        a = formats::gptq_to_canonical({h.qweight.view(), h.qzeros.view(), h.scales.view(), h.g_idx.view(), h.bias.view()},
                                       {g, v.sym, true, h.version});
        ASSERT_TRUE(a.act_order());
      }
      layers.push_back(std::move(a));
    }
    layers.push_back(test::random_linear({96, 288, g, st}, DType::f16, false, false));
    layers.push_back(test::random_linear({16, 96, g, st}, DType::f16, true, false));
    std::vector<formats::GptqHost> gq;
    for (auto& l : layers) gq.push_back(formats::canonical_to_gptq(l.view()));
    std::vector<std::pair<std::string, TensorView>> tensors;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      tensors.emplace_back(kProj[i] + ".qweight", gq[i].qweight.view());
      tensors.emplace_back(kProj[i] + ".qzeros", gq[i].qzeros.view());
      tensors.emplace_back(kProj[i] + ".scales", gq[i].scales.view());
      tensors.emplace_back(kProj[i] + ".g_idx", gq[i].g_idx.view());
      if (layers[i].has_bias()) tensors.emplace_back(kProj[i] + ".bias", gq[i].bias.view());
    }
    auto dense = dense_tensors(288);
    for (auto& [n, t] : dense) tensors.emplace_back(n, t.view());
    std::string cfg = std::string(R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":32,"sym":)") +
                      (v.sym ? "true" : "false") + R"(,"desc_act":)" + (v.desc_act ? "true" : "false") +
                      R"(,"checkpoint_format":")" + (v.sym ? "gptq" : "gptq_v2") + R"(","damp_percent":0.01}})";
    write_folder(dir, cfg, tensors, v.sharded);

    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
    EXPECT_EQ(ck.quant_config().method, io::QuantMethod::gptq);
    ASSERT_EQ(ck.quantized_layers().size(), 3u);
    EXPECT_EQ(ck.unquantized_linears(), (std::vector<std::string>{"lm_head", "visual.proj"}));
    for (std::size_t i = 0; i < layers.size(); ++i) {
      SCOPED_TRACE(kProj[i]);
      const io::LayerInfo& L = ck.layer(kProj[i]);
      EXPECT_EQ(L.format, io::QuantMethod::gptq);
      EXPECT_EQ(L.n, layers[i].spec().n);
      EXPECT_EQ(L.k, layers[i].spec().k);
      EXPECT_EQ(L.scalar, st);
      EXPECT_EQ(L.act_order, layers[i].act_order());
      EXPECT_EQ(L.has_bias, layers[i].has_bias());
      QuantizedLinear got = ck.load_linear(kProj[i]);
      expect_same_layer(got, layers[i]);
      std::vector<double> ref = gptq_weights_from_files(ck.store(), kProj[i], v.sym, v.sym);
      EXPECT_EQ(test::dequant_f64(got), ref);
      expect_same_output(got, ref);
    }
  }
}

TEST(HfCheckpoint, HandBuiltAwqAndGptqFolders) {
  // Files written byte by byte from FORMATS.md, no library writer involved. N = 8, K = 32, g = 32.
  auto bytes_of = [](const auto& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])); };
  std::vector<std::uint16_t> sc(8);
  for (int n = 0; n < 8; ++n) sc[static_cast<std::size_t>(n)] = float_to_half(0.25f * static_cast<float>(n + 1));
  {  // AWQ: every row k holds q[k, n] = n (word 0x75316420); zeros z[n] = 7 - n (interleaved too).
    test::TempDir dir;
    std::vector<std::int32_t> qw(32, 0x75316420);
    // z = 7,6,5,4,3,2,1,0 for columns 0..7; nibble i holds column ORDER[i] = 0,2,4,6,1,3,5,7,
    // i.e. nibbles low to high 7,5,3,1,6,4,2,0.
    const std::uint32_t zw = 0x02461357u;
    std::vector<std::int32_t> qz(1, static_cast<std::int32_t>(zw));
    std::string hdr = R"({"layer.qweight":{"dtype":"I32","shape":[32,1],"data_offsets":[0,128]},)"
                      R"("layer.qzeros":{"dtype":"I32","shape":[1,1],"data_offsets":[128,132]},)"
                      R"("layer.scales":{"dtype":"F16","shape":[1,8],"data_offsets":[132,148]}})";
    test::write_file(dir / "model.safetensors", test::raw_safetensors(hdr, bytes_of(qw) + bytes_of(qz) + bytes_of(sc)));
    test::write_file(dir / "config.json", R"({"quantization_config":{"quant_method":"awq","bits":4,"group_size":32}})");
    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
    QuantizedLinear w = ck.load_linear("layer");
    std::vector<double> d = test::dequant_f64(w);
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 32; ++k) ASSERT_EQ(d[static_cast<std::size_t>(n * 32 + k)], (n - (7 - n)) * 0.25 * (n + 1));
  }
  {  // GPTQ v1 symmetric: every column's rows 8r..8r+7 hold 0..7 (word 0x76543210), qzeros 0x77777777.
    test::TempDir dir;
    std::vector<std::int32_t> qw(4 * 8, 0x76543210);
    std::vector<std::int32_t> qz(1, 0x77777777);
    std::vector<std::int32_t> gi(32, 0);
    std::string hdr = R"({"layer.g_idx":{"dtype":"I32","shape":[32],"data_offsets":[0,128]},)"
                      R"("layer.qweight":{"dtype":"I32","shape":[4,8],"data_offsets":[128,256]},)"
                      R"("layer.qzeros":{"dtype":"I32","shape":[1,1],"data_offsets":[256,260]},)"
                      R"("layer.scales":{"dtype":"F16","shape":[1,8],"data_offsets":[260,276]}})";
    test::write_file(dir / "model.safetensors", test::raw_safetensors(hdr, bytes_of(gi) + bytes_of(qw) + bytes_of(qz) + bytes_of(sc)));
    test::write_file(dir / "config.json", R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":32,)"
                                          R"("sym":true,"desc_act":false}})");
    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
    ASSERT_EQ(ck.quantized_layers().size(), 1u);
    EXPECT_EQ(ck.quantized_layers()[0].scalar, ScalarType::uint4b8);
    QuantizedLinear w = ck.load_linear("layer");
    std::vector<double> d = test::dequant_f64(w);
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 32; ++k) ASSERT_EQ(d[static_cast<std::size_t>(n * 32 + k)], (k % 8 - 8) * 0.25 * (n + 1));
  }
}

TEST(HfCheckpoint, OldAutoGptqFolder) {
  // config.json without quantization_config, quantize_config.json beside it, one oddly named file.
  test::TempDir dir;
  QuantizedLinear l = test::random_linear({16, 128, 128, ScalarType::uint4b8}, DType::f16, false, false);
  formats::GptqHost h = formats::canonical_to_gptq(l.view());
  io::write_safetensors(dir / "gptq_model-4bit-128g.safetensors",
                        {{"m.qweight", h.qweight.view()}, {"m.qzeros", h.qzeros.view()}, {"m.scales", h.scales.view()},
                         {"m.g_idx", h.g_idx.view()}});
  test::write_file(dir / "config.json", R"({"hidden_size":128})");
  test::write_file(dir / "quantize_config.json", R"({"bits":4,"group_size":128,"desc_act":false,"sym":true})");
  io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
  EXPECT_EQ(ck.quant_config().method, io::QuantMethod::gptq);
  expect_same_layer(ck.load_linear("m"), l);
}

TEST(HfCheckpoint, Rejections) {
  test::TempDir dir;
  QuantizedLinear l = test::random_linear({16, 128, 32, ScalarType::uint4}, DType::f16, false, false);
  formats::GptqHost h = formats::canonical_to_gptq(l.view());
  HostTensor lm(DType::f16, {8, 128});
  const std::string cfg = R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":32,"sym":false,"checkpoint_format":"gptq_v2"}})";
  auto write = [&](const std::vector<std::pair<std::string, TensorView>>& t, const std::string& c) {
    test::write_file(dir / "config.json", c);
    io::write_safetensors(dir / "model.safetensors", t);
  };
  write({{"model.layers.0.self_attn.q_proj.qweight", h.qweight.view()},
         {"model.layers.0.self_attn.q_proj.qzeros", h.qzeros.view()},
         {"model.layers.0.self_attn.q_proj.scales", h.scales.view()},
         {"model.layers.0.self_attn.q_proj.g_idx", h.g_idx.view()},
         {"lm_head.weight", lm.view()}},
        cfg);
  io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
  // A prefix that does not exist: not_found, naming close prefixes.
  expect_error([&] { ck.load_linear("model.layers.0.self_attn.q_prj"); }, ErrorCode::not_found,
               {"q_prj", "closest", "model.layers.0.self_attn.q_proj"});
  // An unquantized linear is not loadable as a quantized one.
  expect_error([&] { ck.load_linear("lm_head"); }, ErrorCode::not_found, {"lm_head", "unquantized"});

  // A g_idx out of range in the file: the error names the layer and g_idx.
  HostTensor bad_g = h.g_idx;
  bad_g.ptr<std::int32_t>()[3] = 9;
  write({{"p.qweight", h.qweight.view()}, {"p.qzeros", h.qzeros.view()}, {"p.scales", h.scales.view()}, {"p.g_idx", bad_g.view()}},
        cfg);
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()).load_linear("p"); }, ErrorCode::invalid_argument,
               {"'p'", "g_idx[3] = 9"});
  // A layer without scales.
  write({{"p.qweight", h.qweight.view()}, {"p.qzeros", h.qzeros.view()}}, cfg);
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()); }, ErrorCode::format_error, {"p.scales"});
  // Scales whose shape does not match the config's group size.
  write({{"p.qweight", h.qweight.view()}, {"p.qzeros", h.qzeros.view()}, {"p.scales", h.scales.view()}},
        R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":64,"sym":false}})");
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()); }, ErrorCode::format_error, {"p.scales", "group_size 64"});
  // AWQ config over GPTQ tensors: the shapes disagree.
  write({{"p.qweight", h.qweight.view()}, {"p.qzeros", h.qzeros.view()}, {"p.scales", h.scales.view()}},
        R"({"quantization_config":{"quant_method":"awq","bits":4,"group_size":32}})");
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()); }, ErrorCode::format_error, {"p.scales"});
  // Quantized tensors but no quantization_config.
  write({{"p.qweight", h.qweight.view()}, {"p.qzeros", h.qzeros.view()}, {"p.scales", h.scales.view()}}, R"({"hidden_size":1})");
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()); }, ErrorCode::format_error, {"p.qweight", "quantization_config"});
  // No config at all.
  std::filesystem::remove(dir / "config.json");
  expect_error([&] { io::HfCheckpoint::open(dir.path.string()); }, ErrorCode::not_found, {"config.json"});
}

TEST(HfCheckpoint, WriteHfCheckpointRoundTrip) {
  struct Variant { io::QuantMethod m; ScalarType st; bool act; std::size_t shard; int g; };
  for (Variant v : {Variant{io::QuantMethod::awq, ScalarType::uint4, false, 0, 128},
                    Variant{io::QuantMethod::awq, ScalarType::uint4, false, 3000, 32},
                    Variant{io::QuantMethod::gptq, ScalarType::uint4b8, true, 2000, 64},
                    Variant{io::QuantMethod::gptq, ScalarType::uint4, false, 0, -1},
                    Variant{io::QuantMethod::gptq, ScalarType::uint4, true, 0, 256}}) {
    SCOPED_TRACE(std::string(io::quant_method_name(v.m)) + " " + std::string(scalar_type_name(v.st)) +
                 (v.act ? " act" : "") + " shard " + std::to_string(v.shard) + " g " + std::to_string(v.g));
    test::TempDir dir;
    std::vector<QuantizedLinear> ls;
    ls.push_back(test::random_linear({40, 512, v.g, v.st}, DType::f16, true, false));
    ls.push_back(test::random_linear({24, 256, v.g, v.st}, DType::bf16, false, false));
    if (v.act) {  // a normalized act-order layer (see GptqFoldersWrittenWithTheWriters)
      QuantizedLinear a = test::random_linear({16, 512, v.g, v.st}, DType::f16, false, true);
      formats::GptqHost h = formats::canonical_to_gptq(a.view());
      ls.push_back(formats::gptq_to_canonical({h.qweight.view(), h.qzeros.view(), h.scales.view(), h.g_idx.view(), {}},
                                              {v.g, v.st == ScalarType::uint4b8, true, h.version}));
    }
    std::vector<std::pair<std::string, const QuantizedLinear*>> layers;
    for (std::size_t i = 0; i < ls.size(); ++i) layers.emplace_back("model.layers." + std::to_string(i) + ".mlp.up_proj", &ls[i]);
    HostTensor lm(DType::f16, {8, 512});
    io::HfWriteOptions o;
    o.method = v.m;
    o.shard_bytes = v.shard;
    o.modules_to_not_convert = {"lm_head"};
    o.config_json = R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":512})";
    io::write_hf_checkpoint(dir.path.string(), layers, {{"lm_head.weight", lm.view()}}, o);
    EXPECT_EQ(std::filesystem::exists(dir / "model.safetensors.index.json"), v.shard > 0);
    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.path.string());
    EXPECT_NE(ck.config_json().find("Qwen3ForCausalLM"), std::string::npos);
    const io::QuantizationConfig& q = ck.quant_config();
    EXPECT_EQ(q.method, v.m);
    EXPECT_EQ(q.group_size, v.g);
    EXPECT_EQ(q.modules_to_not_convert, o.modules_to_not_convert);
    if (v.m == io::QuantMethod::gptq) {
      EXPECT_EQ(q.sym, v.st == ScalarType::uint4b8);
      EXPECT_EQ(q.desc_act, v.act);
      EXPECT_EQ(q.checkpoint_format, q.sym ? formats::GptqVersion::v1 : formats::GptqVersion::v2);
    }
    EXPECT_EQ(io::parse_quantization_config(io::quantization_config_json(q), "x").group_size, v.g);
    ASSERT_EQ(ck.quantized_layers().size(), ls.size());
    EXPECT_EQ(ck.unquantized_linears(), std::vector<std::string>{"lm_head"});
    for (std::size_t i = 0; i < ls.size(); ++i) {
      SCOPED_TRACE(layers[i].first);
      expect_same_layer(ck.load_linear(layers[i].first), ls[i]);
    }
  }
  // One quantization_config: layers of different group sizes cannot share a folder.
  test::TempDir dir;
  QuantizedLinear a = test::random_linear({8, 256, 64, ScalarType::uint4}, DType::f16, false, false);
  QuantizedLinear b = test::random_linear({8, 256, 128, ScalarType::uint4}, DType::f16, false, false);
  io::HfWriteOptions o;
  expect_error([&] { io::write_hf_checkpoint(dir.path.string(), {{"a", &a}, {"b", &b}}, {}, o); },
               ErrorCode::invalid_argument, {"'b'", "group size"});
  QuantizedLinear s = test::random_linear({8, 256, 64, ScalarType::uint4b8}, DType::f16, false, false);
  o.method = io::QuantMethod::awq;
  expect_error([&] { io::write_hf_checkpoint(dir.path.string(), {{"s", &s}}, {}, o); }, ErrorCode::unsupported,
               {"'s'", "uint4"});
}

// Every tensor of an AWQ and of a GPTQ layer (bias, g_idx included) perturbed one way at a time: another dtype, one
// dimension one more / doubled / halved, a dimension dropped or added, the tensor removed. Opening the folder and
// loading the layer either gives the layer of the unperturbed shape (a change the format allows: bf16 scales, no bias,
// no g_idx) or throws a w4a16::Error whose message names the perturbed tensor ("tensor 'p.qzeros'", "layer 'p':
// qzeros: ..."): nothing loads a layer of other dimensions, nothing fails without saying which tensor (a missing
// qweight included: its zero points are named as orphans).
TEST(HfCheckpoint, EveryPerturbedLayerTensorIsNamedOrLoadsTheSameShape) {
  const std::int64_t N = 64, K = 256;
  const int g = 64;
  QuantizedLinear l = test::random_linear({N, K, g, ScalarType::uint4}, DType::f16, true, false);
  formats::AwqHost a = formats::canonical_to_awq(l.view());
  formats::GptqHost q = formats::canonical_to_gptq(l.view());
  struct Folder {
    const char* name;
    std::string config;
    std::vector<std::pair<std::string, const HostTensor*>> tensors;
  };
  const Folder folders[] = {
      {"awq", R"({"quantization_config":{"quant_method":"awq","bits":4,"group_size":64,"zero_point":true,"version":"gemm"}})",
       {{"qweight", &a.qweight}, {"qzeros", &a.qzeros}, {"scales", &a.scales}, {"bias", &a.bias}}},
      {"gptq", R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":64,"sym":false,"checkpoint_format":"gptq_v2"}})",
       {{"qweight", &q.qweight}, {"qzeros", &q.qzeros}, {"scales", &q.scales}, {"g_idx", &q.g_idx}, {"bias", &q.bias}}}};
  const std::vector<DType> dtypes = {DType::f16, DType::bf16, DType::f32, DType::i32, DType::i64, DType::u8};
  int loaded = 0, named = 0;
  for (const Folder& f : folders) {
    for (std::size_t victim = 0; victim < f.tensors.size(); ++victim) {
      const HostTensor& orig = *f.tensors[victim].second;
      const std::string name = "p." + f.tensors[victim].first;
      // The perturbed versions of the victim: {what, tensor or none for "removed"}.
      std::vector<std::pair<std::string, std::optional<HostTensor>>> variants;
      variants.emplace_back("removed", std::nullopt);
      for (auto& [what, t] : test::perturbed_variants(orig, dtypes))
        variants.emplace_back(std::move(what), std::move(t));
      for (auto& [what, t] : variants) {
        SCOPED_TRACE(std::string(f.name) + ": " + name + " " + what);  // (zero-filled: g_idx 0, zeros 0, scales 0 in range)
        test::TempDir dir;
        std::vector<std::pair<std::string, TensorView>> views;
        for (std::size_t i = 0; i < f.tensors.size(); ++i) {
          if (i != victim) views.emplace_back("p." + f.tensors[i].first, f.tensors[i].second->view());
          else if (t) views.emplace_back(name, t->view());
        }
        test::write_file(dir / "config.json", f.config);
        io::write_safetensors(dir / "model.safetensors", views);
        try {
          QuantizedLinear got = io::HfCheckpoint::open(dir.path.string()).load_linear("p");
          EXPECT_EQ(got.spec().n, N);
          EXPECT_EQ(got.spec().k, K);
          EXPECT_EQ(got.spec().group_size, g);
          ++loaded;
        } catch (const Error& e) {
          ++named;
          // "tensor 'p.qzeros': ...", or the layer and the tensor's role: "layer 'p': qzeros: ...", "layer 'p':
          // qweight.K: ...", "layer 'p': expected 2-D qweight and scales, got qweight [256, 8, 1], ...", "tensor
          // 'p.scales': ... for qweight [512, 8] ..." (the scales checked against a perturbed qweight).
          const std::string msg = e.what(), role = f.tensors[victim].first;
          const bool layer = msg.find("'p'") != std::string::npos || msg.find("'p.") != std::string::npos;
          const bool role_named = msg.find(role + ":") != std::string::npos || msg.find(role + ".") != std::string::npos ||
                                  msg.find(role + " [") != std::string::npos;
          EXPECT_TRUE(msg.find("'" + name + "'") != std::string::npos || (layer && role_named)) << msg;
        }
      }
    }
  }
  EXPECT_GT(named, 50);
  EXPECT_GT(loaded, 2);  // bf16 / f32 scales? no bias, no g_idx
}
