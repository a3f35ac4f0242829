// The w4a16 command-line tool, end to end: the binary is run as a user runs it and its exit
// codes, one-line errors and written files are checked. Numbers are checked against an
// independent f64 oracle (tests/util: dequant_f64 from the packed bits, gemm_f64) and against
// the original 16-bit weights of the synthetic checkpoint (round-to-nearest error bound).
// Run: ctest -R w4a16_test_cli   (W4A16_SEED=<n> reproduces a run)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/fast.hpp"  // which implementation cpu_fast runs on this CPU
#include "../moe/moe_checkpoint.hpp"
#include "cli_runner.hpp"
#include "testutil.hpp"
#include "w4a16/core/half.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"
#include "w4a16/registry/registry.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace w4a16;

namespace {

using Result = w4a16::test::CliResult;
using w4a16::test::slurp;

class Cli : public w4a16::test::CliTest {
 protected:
  // A fresh synthetic checkpoint and its quantized form in `q_dir`.
  void make_quantized(const std::string& fp_dir, const std::string& q_dir, const std::string& quant_args,
                      const std::string& synth_args = "--layers 1 --hidden 256 --intermediate 384") {
    Result s = cli("synth " + path(fp_dir) + " " + synth_args + " --seed " + std::to_string(test::rng()() % 1000000));
    ASSERT_EQ(s.rc, 0) << s.err;
    Result q = cli("quantize " + path(fp_dir) + " " + path(q_dir) + " " + quant_args);
    ASSERT_EQ(q.rc, 0) << q.err;
  }

  // x [M, K] of random values written as the file's only tensor.
  std::vector<std::uint16_t> write_x(const std::string& rel, std::int64_t m, std::int64_t k, DType dt,
                                     const std::string& name = "hidden_states") const {
    std::vector<std::uint16_t> x = test::random_act(m, k, dt);
    io::write_safetensors(path(rel), {{name, TensorView(x.data(), dt, {m, k})}});
    return x;
  }
};

// Exactly one line on stderr, "w4a16 <sub>: ...", holding every fragment.
void expect_one_line_error(const Result& r, const std::string& sub, int rc, const std::vector<std::string>& fragments) {
  if (rc >= 0)
    EXPECT_EQ(r.rc, rc) << r.err;
  else
    EXPECT_NE(r.rc, 0) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  const std::string head = sub.empty() ? "w4a16: " : "w4a16 " + sub + ": ";
  EXPECT_EQ(r.err.rfind(head, 0), 0u) << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "missing '" << f << "' in: " << r.err;
}

std::vector<double> to_f64(const TensorView& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(t.data) + 2 * i, 2);  // mapped data need not be aligned
    v[static_cast<std::size_t>(i)] = f16x_to_float(t.dtype, bits);
  }
  return v;
}

// The weights of one layer decoded straight from the checkpoint's tensors by the rules of
// shared/FORMATS.md, independently of the library's converters: a writer and reader that
// shared a packing bug would still agree with each other, but not with this.
struct Decoded {
  std::int64_t n = 0, k = 0;
  std::vector<double> w, s;  // [N, K] dequantized weight and the scale that applies to it
};
std::uint32_t word_at(const TensorView& t, std::int64_t i) {
  std::uint32_t v;
  std::memcpy(&v, static_cast<const char*>(t.data) + 4 * i, 4);
  return v;
}
Decoded decode_layer(const io::TensorStore& st, const std::string& prefix, const std::string& format, bool gptq_v1, int group) {
  const TensorView qw = st.view(prefix + ".qweight"), qz = st.view(prefix + ".qzeros"), sc = st.view(prefix + ".scales");
  EXPECT_EQ(qw.dtype, DType::i32);
  EXPECT_EQ(qz.dtype, DType::i32);
  EXPECT_EQ(sc.dtype, DType::f16);
  Decoded d;
  const bool awq = format == "awq";
  d.k = awq ? qw.shape[0] : qw.shape[0] * 8;
  d.n = awq ? qw.shape[1] * 8 : qw.shape[1];
  const std::int64_t G = group == -1 ? 1 : d.k / group;
  EXPECT_EQ(qz.shape_vec(), (std::vector<std::int64_t>{G, d.n / 8}));
  EXPECT_EQ(sc.shape_vec(), (std::vector<std::int64_t>{G, d.n}));
  std::vector<double> scales = to_f64(sc);
  std::vector<std::int32_t> g_idx(static_cast<std::size_t>(d.k));
  for (std::int64_t k = 0; k < d.k; ++k) g_idx[k] = static_cast<std::int32_t>(group == -1 ? 0 : k / group);
  if (!awq) {
    const TensorView gi = st.view(prefix + ".g_idx");
    EXPECT_EQ(gi.shape_vec(), (std::vector<std::int64_t>{d.k}));
    for (std::int64_t k = 0; k < d.k; ++k) g_idx[k] = static_cast<std::int32_t>(word_at(gi, k));
  }
  static constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble i holds column 8j + kAwqOrder[i]
  auto zero = [&](std::int64_t g, std::int64_t n) {
    const std::uint32_t word = word_at(qz, g * (d.n / 8) + n / 8);
    for (int i = 0; i < 8; ++i)
      if ((awq ? kAwqOrder[i] : i) == n % 8) {
        const int stored = static_cast<int>((word >> (4 * i)) & 15u);
        return gptq_v1 ? (stored + 1) & 15 : stored;  // v1 stores z - 1
      }
    return -1;
  };
  d.w.resize(static_cast<std::size_t>(d.n * d.k));
  d.s.resize(d.w.size());
  for (std::int64_t k = 0; k < d.k; ++k)
    for (std::int64_t n = 0; n < d.n; ++n) {
      int q = 0;
      if (awq) {
        const std::uint32_t word = word_at(qw, k * (d.n / 8) + n / 8);
        for (int i = 0; i < 8; ++i)
          if (kAwqOrder[i] == n % 8) q = static_cast<int>((word >> (4 * i)) & 15u);
      } else {
        q = static_cast<int>((word_at(qw, (k / 8) * d.n + n) >> (4 * (k % 8))) & 15u);
      }
      const std::int64_t g = g_idx[k];
      const double s_gn = scales[g * d.n + n];
      d.w[n * d.k + k] = (q - zero(g, n)) * s_gn;
      d.s[n * d.k + k] = s_gn;
    }
  return d;
}

// ---- the round trip of issue 3: synth -> quantize -> inspect -> run-layer --check ---------

struct Case {
  std::string format;  // awq | gptq
  bool sym;
  int group;
  DType dtype;         // of the synthetic checkpoint and of x
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.format << (c.sym ? " sym" : " asym") << " g=" << c.group << " " << dtype_name(c.dtype);
}
std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return i.param.format + (i.param.sym ? "_sym" : "_asym") + "_g" + std::to_string(i.param.group) + "_" +
         std::string(dtype_name(i.param.dtype));
}

class RoundTrip : public Cli, public ::testing::WithParamInterface<Case> {};

TEST_P(RoundTrip, QuantizeInspectRunLayerMatchReference) {
  const Case c = GetParam();
  const std::int64_t H = 256, I = 384, KV = 128;  // head_dim 64, 4 heads, 2 kv heads; I = 3 groups of 128
  const std::string dt = std::string(dtype_name(c.dtype));
  std::string qargs = "--format " + c.format + " --group-size " + std::to_string(c.group) + (c.sym ? " --sym" : "");
  Result s = cli("synth " + path("fp") + " --layers 2 --hidden 256 --intermediate 384 --dtype " + dt + " --seed " +
                 std::to_string(test::rng()() % 1000000));
  ASSERT_EQ(s.rc, 0) << s.err;
  Result q = cli("quantize " + path("fp") + " " + path("q") + " " + qargs);
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_NE(q.err.find("[1/14]"), std::string::npos) << q.err;  // plain progress lines off a terminal
  EXPECT_NE(q.err.find("[14/14]"), std::string::npos) << q.err;

  // config.json says what the format's own loaders need.
  json qc = json::parse(slurp(path("q/config.json")))["quantization_config"];
  EXPECT_EQ(qc["quant_method"], c.format);
  EXPECT_EQ(qc["bits"], 4);
  EXPECT_EQ(qc["group_size"], c.group);
  if (c.format == "awq") {
    EXPECT_EQ(qc["zero_point"], true);
    EXPECT_EQ(qc["version"], "gemm");
    EXPECT_TRUE(qc.contains("modules_to_not_convert"));
  } else {
    EXPECT_EQ(qc["sym"], c.sym);
    EXPECT_EQ(qc["desc_act"], false);
    EXPECT_EQ(qc["checkpoint_format"], c.sym ? "gptq" : "gptq_v2");  // v1 cannot store an asymmetric zero of 0
    EXPECT_TRUE(fs::exists(path("q/quantize_config.json")));
  }
  EXPECT_EQ(json::parse(slurp(path("q/config.json")))["model_type"], "qwen2");

  // inspect --json lists every projection with its shape; lm_head stays 16-bit.
  Result in = cli("inspect " + path("q") + " --json");
  ASSERT_EQ(in.rc, 0) << in.err;
  json ij = json::parse(in.out);
  EXPECT_EQ(ij["quantization_config"]["quant_method"], c.format);
  struct Expect {
    std::string name;
    std::int64_t n, k;
    bool bias;
  };
  const std::vector<Expect> projections = {{"self_attn.q_proj", H, H, true},  {"self_attn.k_proj", KV, H, true},
                                           {"self_attn.v_proj", KV, H, true}, {"self_attn.o_proj", H, H, false},
                                           {"mlp.gate_proj", I, H, false},    {"mlp.up_proj", I, H, false},
                                           {"mlp.down_proj", H, I, false}};
  ASSERT_EQ(ij["quantized_layers"].size(), 2 * projections.size());
  for (int l = 0; l < 2; ++l)
    for (const auto& e : projections) {
      const std::string prefix = "model.layers." + std::to_string(l) + "." + e.name;
      SCOPED_TRACE(prefix);
      const json* found = nullptr;
      for (const auto& j : ij["quantized_layers"])
        if (j["prefix"] == prefix) found = &j;
      ASSERT_NE(found, nullptr);
      EXPECT_EQ((*found)["format"], c.format);
      EXPECT_EQ((*found)["n"], e.n);
      EXPECT_EQ((*found)["k"], e.k);
      EXPECT_EQ((*found)["group_size"], c.group);
      EXPECT_EQ((*found)["scalar"], c.sym ? "uint4b8" : "uint4");
      EXPECT_EQ((*found)["bias"], e.bias);
      EXPECT_EQ((*found)["act_order"], false);
      EXPECT_GT((*found)["bytes"].get<std::uint64_t>(), static_cast<std::uint64_t>(e.n * e.k / 2));  // packed weights + scales
    }
  bool lm_head_dense = false;
  for (const auto& d : ij["unquantized_linears"]) lm_head_dense = lm_head_dense || d == "lm_head";
  EXPECT_TRUE(lm_head_dense) << ij["unquantized_linears"].dump();
  Result text = cli("inspect " + path("q"));
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("model.layers.1.mlp.down_proj"), std::string::npos);
  EXPECT_NE(text.out.find("lm_head"), std::string::npos);

  // Every layer, decoded from the file by the format's own rules, holds the original weights to
  // within round-to-nearest error: |w - dequant| <= s/2 where the group range sits on the grid
  // (symmetric), <= s where the rounded zero point can push the top of a group one step out.
  auto fp = io::SafetensorsFile::open(path("fp/model.safetensors"));
  {
    io::TensorStore st = io::TensorStore::open_dir(path("q"));
    const double step = c.sym ? 0.5 : 1.0;
    for (const auto& l : ij["quantized_layers"]) {
      const std::string prefix = l["prefix"];
      SCOPED_TRACE("decoded from the file: " + prefix);
      Decoded d = decode_layer(st, prefix, c.format, c.format == "gptq" && c.sym, c.group);
      ASSERT_EQ(d.n, l["n"].get<std::int64_t>());
      ASSERT_EQ(d.k, l["k"].get<std::int64_t>());
      std::vector<double> orig = to_f64(fp->view(prefix + ".weight"));
      double worst = 0;  // in units of the group's scale
      for (std::size_t i = 0; i < orig.size(); ++i) worst = std::max(worst, std::fabs(orig[i] - d.w[i]) / d.s[i]);
      EXPECT_LE(worst, step * (1 + 1e-3));
      EXPECT_GT(worst, 0.0);  // 4 bits cannot hold random 16-bit weights exactly: the data is real
    }
  }

  // run-layer on three layers: with a bias, with N != K, with K = 3 groups (down_proj).
  io::HfCheckpoint ck = io::HfCheckpoint::open(path("q"));
  for (const std::string prefix : {"model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.k_proj", "model.layers.0.mlp.down_proj"}) {
    SCOPED_TRACE(prefix);
    const std::int64_t m = 5;
    QuantizedLinear w = ck.load_linear(prefix);
    const std::int64_t n = w.spec().n, k = w.spec().k;
    std::vector<std::uint16_t> x = write_x("x.safetensors", m, k, c.dtype);
    fs::remove(path("y.safetensors"));
    Result r = cli("run-layer " + path("q") + " --prefix " + prefix + " --input " + path("x.safetensors") + " --output " +
                   path("y.safetensors") + " --check");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("check: relative error"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;

    // The written y against the f64 oracle of the loaded layer.
    auto yf = io::SafetensorsFile::open(path("y.safetensors"));
    TensorView y = yf->view("y");
    ASSERT_EQ(y.dtype, c.dtype);
    ASSERT_EQ(y.shape_vec(), (std::vector<std::int64_t>{m, n}));
    std::vector<double> xd = test::to_f64(x.data(), c.dtype, m, k, k);
    std::vector<double> ref = test::gemm_f64(xd, test::dequant_f64(w), test::bias_f64(w), m, n, k);
    EXPECT_LE(test::rel_error(to_f64(y), ref), test::tolerance(c.dtype));

    // The loaded layer is the one in the file (the library's converter agrees with the spec decode).
    Decoded d = decode_layer(io::TensorStore::open_dir(path("q")), prefix, c.format, c.format == "gptq" && c.sym, c.group);
    std::vector<double> deq = test::dequant_f64(w);
    ASSERT_EQ(deq.size(), d.w.size());
    for (std::size_t i = 0; i < deq.size(); ++i) ASSERT_EQ(deq[i], d.w[i]) << "element " << i;
    if (w.has_bias()) {  // biases are copied; the loader rounds them once to the scales' dtype
      std::vector<double> b0 = to_f64(fp->view(prefix + ".bias")), b1 = test::bias_f64(w);
      for (std::size_t i = 0; i < b0.size(); ++i) EXPECT_NEAR(b1[i], b0[i], std::fabs(b0[i]) * 1e-2 + 1e-7) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(Case{"awq", false, 128, DType::f16}, Case{"awq", false, 64, DType::bf16},
                                           Case{"gptq", true, 128, DType::f16}, Case{"gptq", false, 32, DType::f16},
                                           Case{"gptq", true, 64, DType::bf16}),
                         case_name);

TEST_F(Cli, QuantizeSkipKeepsModulesIn16Bit) {
  make_quantized("fp", "q", "--format awq --skip mlp --quiet");
  json qc = json::parse(slurp(path("q/config.json")))["quantization_config"];
  EXPECT_EQ(qc["modules_to_not_convert"], json::array({"mlp"}));
  Result in = cli("inspect " + path("q") + " --json");
  ASSERT_EQ(in.rc, 0) << in.err;
  json ij = json::parse(in.out);
  EXPECT_EQ(ij["quantized_layers"].size(), 4u);  // q, k, v, o of the one layer
  for (const auto& l : ij["quantized_layers"]) EXPECT_EQ(l["prefix"].get<std::string>().find("mlp"), std::string::npos);
  std::string dense = ij["unquantized_linears"].dump();
  for (const char* p : {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj", "lm_head"})
    EXPECT_NE(dense.find(p), std::string::npos) << dense;
  // The skipped weights are the original bits.
  auto a = io::SafetensorsFile::open(path("fp/model.safetensors")), b = io::SafetensorsFile::open(path("q/model.safetensors"));
  TensorView va = a->view("model.layers.0.mlp.up_proj.weight"), vb = b->view("model.layers.0.mlp.up_proj.weight");
  ASSERT_EQ(va.nbytes(), vb.nbytes());
  EXPECT_EQ(std::memcmp(va.data, vb.data, va.nbytes()), 0);
}

TEST_F(Cli, QuantizeShardedOutputLoads) {
  make_quantized("fp", "q", "--format gptq --group-size 64 --shard-mb 1 --quiet", "--layers 2 --hidden 256 --intermediate 768");
  ASSERT_TRUE(fs::exists(path("q/model.safetensors.index.json")));
  EXPECT_FALSE(fs::exists(path("q/model.safetensors")));
  int shards = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/q"))
    shards += e.path().filename().string().rfind("model-0000", 0) == 0 ? 1 : 0;
  EXPECT_GE(shards, 2);
  for (const auto& e : fs::directory_iterator(dir_ + "/q"))  // no shard above the limit unless one tensor is
    if (e.path().extension() == ".safetensors") {
      EXPECT_LE(fs::file_size(e.path()), (1u << 20) + 65536) << e.path();  // + the header
    }
  Result in = cli("inspect " + path("q") + " --json");
  ASSERT_EQ(in.rc, 0) << in.err;
  EXPECT_EQ(json::parse(in.out)["quantized_layers"].size(), 14u);
  std::vector<std::uint16_t> x = write_x("x.safetensors", 2, 768, DType::f16);
  Result r = cli("run-layer " + path("q") + " --prefix model.layers.1.mlp.down_proj --input " + path("x.safetensors") +
                 " --output " + path("y.safetensors") + " --check");
  ASSERT_EQ(r.rc, 0) << r.err;
  io::HfCheckpoint ck = io::HfCheckpoint::open(path("q"));
  QuantizedLinear w = ck.load_linear("model.layers.1.mlp.down_proj");
  auto y = io::SafetensorsFile::open(path("y.safetensors"));
  std::vector<double> ref = test::gemm_f64(test::to_f64(x.data(), DType::f16, 2, 768, 768), test::dequant_f64(w),
                                           test::bias_f64(w), 2, 256, 768);
  EXPECT_LE(test::rel_error(to_f64(y->view("y")), ref), test::kTolF16);
}

TEST_F(Cli, RunLayerInputNameAndForcedBackend) {
  make_quantized("fp", "q", "--format gptq --sym --quiet");
  std::vector<std::uint16_t> x = test::random_act(3, 256, DType::f16), other = test::random_act(2, 8, DType::f16);
  io::write_safetensors(path("x.safetensors"),
                        {{"a", TensorView(other.data(), DType::f16, {2, 8})}, {"b", TensorView(x.data(), DType::f16, {3, 256})}});
  for (const auto& e : all_kernels()) {
    if (e.kernel->device() != Device::cpu) continue;
    const std::string name(e.kernel->name());
    SCOPED_TRACE(name);
    Result r = cli("run-layer " + path("q") + " --prefix model.layers.0.self_attn.o_proj --input " + path("x.safetensors") +
                   " --input-name b --output " + path("y.safetensors") + " --output-name out --backend " + name + " --check");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("with " + name + " on cpu"), std::string::npos) << r.out;
    auto y = io::SafetensorsFile::open(path("y.safetensors"));
    EXPECT_EQ(y->view("out").shape_vec(), (std::vector<std::int64_t>{3, 256}));
  }
}

// ---- moe ---------------------------------------------------------------------------------

// An AWQ and a GPTQ MoE layer (tests/moe/moe_checkpoint.hpp), routed by their routers and run on the CPU fast path:
// the tool's own check against moe_reference passes, in both dtypes, with and without renormalized weights.
TEST_F(Cli, MoeLayerOfACheckpointMatchesTheReference) {
  struct Case {
    const char* method;
    ScalarType st;
    int g;
  };
  for (const Case c : {Case{"awq", ScalarType::uint4, 64}, Case{"gptq", ScalarType::uint4b8, 32}}) {
    SCOPED_TRACE(c.method);
    const fs::path d = fs::path(path(std::string("moe_") + c.method));
    fs::create_directories(d);
    HostTensor router;
    moe::testckpt::write_checkpoint(d, c.method, c.st, /*E=*/6, /*H=*/128, /*I=*/64, c.g, /*layer=*/1, router);
    for (const std::string extra : {"--dtype float16", "--dtype bfloat16 --no-renormalize --repeat 2"}) {
      Result r = cli("moe " + d.string() + " --layer 1 --tokens 9 --top-k 2 --check 9 " + extra);
      ASSERT_EQ(r.rc, 0) << r.out << r.err;
      if (extra.find("--repeat") != std::string::npos) {
        EXPECT_NE(r.out.find("ms per call (median of 2)"), std::string::npos) << r.out;
      }
      EXPECT_NE(r.out.find("6 experts"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("ran on the CPU fast path"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("over 9 tokens"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;
    }
    // Without --top-k / --no-renormalize the layer's routing: the defaults (top min(8, E), renormalized), then what
    // config.json says once it says it.
    Result def = cli("moe " + d.string() + " --layer 1 --tokens 3");
    ASSERT_EQ(def.rc, 0) << def.out << def.err;
    EXPECT_NE(def.out.find("routing: top-6, renormalized (default)"), std::string::npos) << def.out;
    std::string cfg;
    {
      std::ifstream in(d / "config.json");
      cfg.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::ofstream(d / "config.json") << "{\"num_experts_per_tok\": 3, \"norm_topk_prob\": false, " << cfg.substr(1);
    Result conf = cli("moe " + d.string() + " --layer 1 --tokens 3");
    ASSERT_EQ(conf.rc, 0) << conf.out << conf.err;
    EXPECT_NE(conf.out.find("routing: top-3, softmax weights kept (config.json: num_experts_per_tok = 3, norm_topk_prob = false)"),
              std::string::npos)
        << conf.out;
    EXPECT_NE(conf.out.find("top-3 (softmax weights kept)"), std::string::npos) << conf.out;
    // A model routed otherwise (DeepSeek's sigmoid scores): refused, saying why, not routed by softmax.
    std::ofstream(d / "config.json") << "{\"scoring_func\": \"sigmoid\", " << cfg.substr(1);
    Result sig = cli("moe " + d.string() + " --layer 1 --tokens 3");
    EXPECT_EQ(sig.rc, 1) << sig.out;
    EXPECT_NE(sig.err.find("scoring_func = \"sigmoid\""), std::string::npos) << sig.err;
    std::ofstream(d / "config.json") << cfg;
    // Bad requests name the option: more experts per token than the layer has, a missing layer.
    Result k = cli("moe " + d.string() + " --layer 1 --top-k 7");
    EXPECT_EQ(k.rc, 1) << k.out;
    EXPECT_NE(k.err.find("top_k"), std::string::npos) << k.err;
    Result l = cli("moe " + d.string() + " --layer 3");
    EXPECT_EQ(l.rc, 1) << l.out;
    EXPECT_NE(l.err.find("model.layers.3"), std::string::npos) << l.err;
    // Usage errors (exit 2) name their option.
    for (const std::string bad : {"--tokens 0", "--layer -1", "--top-k 0", "--check -1", "--repeat -2", "--block 8", "--dtype int8"}) {
      Result u = cli("moe " + d.string() + " --layer 1 " + bad);
      EXPECT_EQ(u.rc, 2) << bad << ": " << u.out << u.err;
      EXPECT_NE(u.err.find(bad.substr(0, bad.find(' '))), std::string::npos) << bad << ": " << u.err;
    }
  }
}

// ---- demo --------------------------------------------------------------------------------

TEST_F(Cli, DemoPassesOnTheCpu) {
  Result r = cli("demo --device cpu --dir " + path("demo"));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  for (const char* f : {"[1/5] synth", "[2/5] quantize", "[3/5] inspect", "[4/5] load", "[5/5] run", "relative error", "demo passed"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f << " in:\n" << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  // 4-bit RTN of N(0, 0.02) weights in groups of 128 costs about 10% relative weight error
  // ((max - min) / 15 steps over about 5 sigma): far from 0 (nothing was quantized) and from 1.
  const std::string tag = "4-bit weights vs the 16-bit ones: relative error ";
  const auto at = r.out.find(tag);
  ASSERT_NE(at, std::string::npos) << r.out;
  const double werr = std::atof(r.out.c_str() + at + tag.size());
  EXPECT_GT(werr, 0.03);
  EXPECT_LT(werr, 0.2);
  EXPECT_TRUE(fs::exists(path("demo/qwen2-awq-g128/model.safetensors")));  // --dir keeps the work
  // ... and the printed run-layer suggestion works on it.
  Result again = cli("run-layer " + path("demo/qwen2-awq-g128") + " --prefix model.layers.0.mlp.down_proj --input " +
                     path("demo/x_m16.safetensors") + " --output " + path("demo/y.safetensors") + " --check");
  EXPECT_EQ(again.rc, 0) << again.err;
  Result bf = cli("demo --device cpu --dtype bfloat16 --backend cpu_reference --repeat 1");
  ASSERT_EQ(bf.rc, 0) << bf.out << bf.err;
  EXPECT_NE(bf.out.find("kernel cpu_reference"), std::string::npos) << bf.out;
}

// ---- bench: the CPU sweep through the tool ----------------------------------------------

TEST_F(Cli, BenchCpuWritesCheckedCsvRows) {
  Result r = cli("bench --device cpu --shapes 256x512 --m 1,3 --scalar uint4b8,uint4 --repeats 1 --bw-mb 16 --csv " + path("b.csv"));
  if (r.rc != 0 && r.err.find("a build with the CPU sweep") != std::string::npos) GTEST_SKIP() << "built without bench/ (W4A16_BUILD_BENCH=OFF)";
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream csv(slurp(path("b.csv")));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line.rfind("kernel,shape,n,k,M,", 0), 0u) << line;
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_NE(line.find(",256x512,256,512,"), std::string::npos) << line;
    EXPECT_EQ(line.substr(line.size() - 3), ",ok") << line;  // checked against reference_gemm in the same run
  }
  EXPECT_EQ(rows, 4);  // 2 M values x 2 scalar types
  // --plots: PNGs where python3 has matplotlib, else a note on stderr and still success.
  Result p = cli("bench --device cpu --shapes 256x512 --m 1 --scalar uint4b8 --repeats 1 --bw-mb 16 --csv " + path("p.csv") +
                 " --plots " + path("plots"));
  ASSERT_EQ(p.rc, 0) << p.err;
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0)
    EXPECT_TRUE(std::filesystem::exists(path("plots") + "/256x512.png")) << p.err;
  else
    EXPECT_NE(p.err.find("no plots: python3 with matplotlib not found"), std::string::npos) << p.err;
  Result bad = cli("bench --device cpu --shapes 12xfoo");
  expect_one_line_error(bad, "bench", 1, {"--shapes", "12xfoo"});
  // --isa: one row per implementation, its isa column naming what ran (best: the one fast_gemm takes at that M).
  Result i = cli("bench --device cpu --shapes 256x512 --m 2 --scalar uint4b8 --repeats 1 --bw-mb 16 --isa scalar,best --csv " + path("i.csv"));
  ASSERT_EQ(i.rc, 0) << i.err;
  std::istringstream icsv(slurp(path("i.csv")));
  std::vector<std::string> isas;
  for (std::getline(icsv, line); std::getline(icsv, line);) {
    std::vector<std::string> f;
    for (std::size_t a = 0, b; a <= line.size(); a = b + 1) f.push_back(line.substr(a, (b = std::min(line.find(',', a), line.size())) - a));
    ASSERT_GE(f.size(), 17u) << line;
    isas.push_back(f[14]);
    EXPECT_EQ(f[16], "ok") << line;
  }
  using namespace kernels::cpu;
  EXPECT_EQ(isas, (std::vector<std::string>{"scalar", std::string(fast_isa_name(fast_isa_for(FastIsa::best, 2)))}));
  Result badisa = cli("bench --device cpu --isa sse");
  expect_one_line_error(badisa, "bench", 2, {"--isa", "sse"});
}

// ---- explain prints the registry's decision ---------------------------------------------

TEST_F(Cli, ExplainPrintsTheRegistryDecision) {
  struct Q {
    std::string args;
    LinearConfig c;
    std::string backend;
  };
  auto cfg = [](std::int64_t n, std::int64_t k, int g, ScalarType s, DType d, bool bias, bool act_order) {
    LinearConfig c;
    c.n = c.n_full = n;
    c.k = c.k_full = k;
    c.group_size = g;
    c.scalar = s;
    c.has_zeros = s == ScalarType::uint4;
    c.act_dtype = c.out_dtype = d;
    c.has_bias = bias;
    c.act_order = act_order;
    c.device = Device::cpu;
    return c;
  };
  const std::vector<Q> qs = {
      {"--n 4096 --k 4096 --group-size 128 --scalar uint4 --dtype float16", cfg(4096, 4096, 128, ScalarType::uint4, DType::f16, false, false), ""},
      {"--n 1152 --k 896 --group-size 64 --scalar uint4b8 --dtype bfloat16 --bias", cfg(1152, 896, 64, ScalarType::uint4b8, DType::bf16, true, false), ""},
      {"--n 896 --k 4864 --group-size -1 --scalar uint4b8 --act-order", cfg(896, 4864, -1, ScalarType::uint4b8, DType::f16, false, true), ""},
      {"--n 256 --k 256 --group-size 32 --scalar uint4 --backend cpu_reference", cfg(256, 256, 32, ScalarType::uint4, DType::f16, false, false), "cpu_reference"},
  };
  for (const auto& q : qs) {
    SCOPED_TRACE(q.args);
    Result r = cli("explain --device cpu " + q.args);
    ASSERT_EQ(r.rc, 0) << r.err;
    SelectOptions so;
    so.backend = q.backend;
    Decision d = choose(q.c, so);
    ASSERT_NE(d.chosen, nullptr);
    std::string expected = d.text();
    if (!expected.empty() && expected.back() != '\n') expected += '\n';
    EXPECT_EQ(r.out, expected);
    EXPECT_NE(r.out.find(std::string(d.chosen->name())), std::string::npos);
  }
  Result list = cli("explain --list");
  ASSERT_EQ(list.rc, 0) << list.err;
  for (const auto& e : all_kernels()) EXPECT_NE(list.out.find(std::string(e.kernel->name())), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("CUDA code in this build: " + (cuda_archs().empty() ? std::string("none") : cuda_archs())), std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("CPU implementation of cpu_fast here: " + cpu_isa() + "\n"), std::string::npos) << list.out;
  // Nothing fits: exit 1 and one line naming every kernel with its reason.
  Result none = cli("explain --device cpu --n 4096 --k 4080 --group-size 48");
  expect_one_line_error(none, "explain", 1, {"group_size 48"});
  for (const auto& e : all_kernels())
    if (e.kernel->device() == Device::cpu) {
      EXPECT_NE(none.err.find(std::string(e.kernel->name())), std::string::npos) << none.err;
    }
}

// explain --m: after the decision, one line per token count with the chosen kernel's describe_run (the hybrid's path
// and plan on CUDA configurations, in any build that registers the CUDA kernels; cpu_fast the implementation it runs).
TEST_F(Cli, ExplainWithTokenCountsPrintsHowTheChosenKernelRunsThem) {
  Result cpu = cli("explain --device cpu --n 896 --k 896 --m 1,64");
  ASSERT_EQ(cpu.rc, 0) << cpu.err;
  for (std::int64_t m : {1, 64}) {  // cpu_fast: the implementation this CPU runs at that M (the child process sees the same)
    using namespace kernels::cpu;
    const std::string isa(fast_isa_name(fast_isa_for(FastIsa::best, m)));
    EXPECT_NE(cpu.out.find("  M=" + std::to_string(m) + ": " + isa + ": "), std::string::npos) << cpu.out;
  }
  LinearConfig c;
  c.n = c.n_full = 4096;
  c.k = c.k_full = 4096;
  c.device = Device::cuda;
  c.capability = 90;
  const Decision d = cuda_archs().empty() ? Decision{} : choose(c, SelectOptions{});  // no CUDA kernels: choose throws
  if (d.chosen != nullptr && d.chosen->name() == "cuda_hybrid") {
    Result r = cli("explain --device cuda --capability 90 --n 4096 --k 4096 --m 1,4096");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("how cuda_hybrid runs M tokens"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  M=1: " + d.chosen->describe_run(c, 1) + "\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  M=4096: " + d.chosen->describe_run(c, 4096) + "\n"), std::string::npos) << r.out;
    EXPECT_EQ(d.chosen->describe_run(c, 1).rfind("decode: ", 0), 0u);
    EXPECT_EQ(d.chosen->describe_run(c, 4096).rfind("prefill: ", 0), 0u);
  }
  Result bad = cli("explain --device cpu --n 896 --k 896 --m 0");
  expect_one_line_error(bad, "explain", 2, {"--m", "0"});
}

// ---- --help ------------------------------------------------------------------------------

TEST_F(Cli, EverySubcommandHasHelp) {
  Result top = cli("--help");
  ASSERT_EQ(top.rc, 0);
  for (const char* sub : {"inspect", "synth", "quantize", "run-layer", "bench", "explain", "demo"}) {
    SCOPED_TRACE(sub);
    EXPECT_NE(top.out.find(std::string("  ") + sub + " "), std::string::npos) << top.out;
    Result h = cli(std::string(sub) + " --help");
    EXPECT_EQ(h.rc, 0);
    EXPECT_EQ(h.out.rfind(std::string("usage: w4a16 ") + sub, 0), 0u) << h.out;
    EXPECT_NE(h.out.find("--help"), std::string::npos);
  }
  Result bare = cli("");
  EXPECT_EQ(bare.rc, 2);
  EXPECT_NE(bare.err.find("usage: w4a16"), std::string::npos);
}

// ---- bad inputs: exit code and one line naming the culprit ------------------------------

TEST_F(Cli, BadInputsGiveOneLineNamingTheCulprit) {
  make_quantized("fp", "q", "--format awq --quiet");
  const std::string q = path("q"), fp = path("fp");
  const std::string layer = " --prefix model.layers.0.self_attn.q_proj";
  write_x("x.safetensors", 4, 256, DType::f16);
  write_x("x_k128.safetensors", 4, 128, DType::f16);
  std::vector<std::int32_t> ints(4 * 256, 3);
  io::write_safetensors(path("x_int.safetensors"), {{"x", TensorView(ints.data(), DType::i32, {4, 256})}});
  { std::ofstream(path("junk.safetensors")) << "this is not a safetensors file at all"; }
  fs::create_directories(path("empty"));
  fs::create_directories(path("badjson"));
  { std::ofstream(path("badjson/config.json")) << "{ not json"; }
  fs::create_directories(path("broken"));
  fs::copy_file(path("q/config.json"), path("broken/config.json"));
  fs::copy_file(path("junk.safetensors"), path("broken/model.safetensors"));
  // K = 192 does not divide into groups of 128: a bad shape for quantize.
  ASSERT_EQ(cli("synth " + path("fp192") + " --layers 1 --hidden 256 --intermediate 192").rc, 0);
  const std::string x = " --input " + path("x.safetensors"), y = " --output " + path("y.safetensors");

  struct Bad {
    std::string sub, args;
    int rc;  // 2 usage, 1 other
    std::vector<std::string> fragments;
  };
  const std::vector<Bad> cases = {
      // inspect
      {"inspect", path("missing"), 1, {path("missing")}},
      {"inspect", path("x.safetensors"), 1, {"x.safetensors"}},
      {"inspect", path("empty"), 1, {"empty", "config.json"}},
      {"inspect", path("broken"), 1, {"model.safetensors"}},
      {"inspect", q + " --frob", 2, {"--frob"}},
      {"inspect", "", 2, {"DIR"}},
      // synth
      {"synth", path("s") + " --dtype int32", 2, {"--dtype", "int32"}},
      {"synth", path("s") + " --hidden 100", 1, {"--hidden", "100"}},
      {"synth", path("s") + " --layers two", 2, {"--layers", "two"}},
      {"synth", path("s") + " --arch llama", 2, {"--arch", "llama"}},
      // quantize
      {"quantize", path("missing") + " " + path("o") + " --format awq", 1, {path("missing")}},
      {"quantize", fp + " " + path("o") + " --format foo", 2, {"--format", "foo"}},
      {"quantize", fp + " " + path("o"), 2, {"--format"}},
      {"quantize", fp + " " + path("o") + " --format awq --group-size 48", 2, {"--group-size", "48"}},
      {"quantize", fp + " " + path("o") + " --format awq --sym", 2, {"--sym"}},
      {"quantize", q + " " + path("o") + " --format gptq", 1, {"config.json", "quantization_config"}},
      {"quantize", path("badjson") + " " + path("o") + " --format awq", 1, {"config.json", "JSON"}},
      {"quantize", path("fp192") + " " + path("o") + " --format awq --quiet", 1, {"model.layers.0.mlp.down_proj.weight"}},
      {"quantize", fp + " " + path("o") + " --format awq --frob", 2, {"--frob"}},
      // run-layer
      {"run-layer", q + layer + " --input " + path("nofile.safetensors") + y, 1, {"nofile.safetensors"}},
      {"run-layer", q + layer + " --input " + path("junk.safetensors") + y, 1, {"junk.safetensors"}},
      {"run-layer", q + layer + " --input " + path("x_int.safetensors") + y, 1, {"x_int.safetensors", "int32"}},
      {"run-layer", q + layer + " --input " + path("x_k128.safetensors") + y, 1, {"x_k128.safetensors", "256", "[4, 128]"}},
      {"run-layer", q + " --prefix model.layers.0.self_attn.qq_proj" + x + y, 1, {"model.layers.0.self_attn.qq_proj"}},
      {"run-layer", q + layer + x + y + " --backend nosuch", 1, {"--backend", "nosuch"}},
      {"run-layer", q + layer + x + y + " --input-name nosuch", 1, {"nosuch"}},
      {"run-layer", path("missing") + layer + x + y, 1, {path("missing")}},
      {"run-layer", fp + layer + x + y, 1, {"model.layers.0.self_attn.q_proj"}},
      {"run-layer", q + x + y, 2, {"--prefix"}},
      {"run-layer", q + layer + x + y + " --frob", 2, {"--frob"}},
      {"run-layer", q + layer + x + y + " --device tpu", 2, {"--device", "tpu"}},
      // explain
      {"explain", "--n 64 --k 64 --scalar int4", 2, {"--scalar", "int4"}},
      {"explain", "--n 64", 2, {"--k"}},
      {"explain", "--n 64 --k 64 --dtype float32", 2, {"--dtype", "float32"}},
      {"explain", "--n 64 --k 128 --device cpu --backend nosuch", 1, {"--backend", "nosuch"}},
      {"explain", "--n 64 --k 128 --frob", 2, {"--frob"}},
      // demo and bench
      {"demo", "--device tpu", 2, {"--device", "tpu"}},
      {"demo", "--dtype int8", 2, {"--dtype", "int8"}},
      {"demo", "--frob", 2, {"--frob"}},
      {"bench", "--frob", 2, {"--frob"}},
      {"bench", "--device tpu", 2, {"--device", "tpu"}},
      {"bench", "--device cpu --plots /tmp/never", 2, {"--plots", "--csv"}},
      {"", "frobnicate", 2, {"frobnicate"}},
  };
  for (const auto& b : cases) {
    SCOPED_TRACE("w4a16 " + b.sub + " " + b.args);
    Result r = cli(b.sub + " " + b.args);
    expect_one_line_error(r, b.sub, b.rc, b.fragments);
  }
  EXPECT_FALSE(fs::exists(path("y.safetensors")));  // no failing run wrote an output
}

}  // namespace
