// Tensor-parallel sharding on the CPU: column shards concatenate and row shards sum to the
// unsplit result for tp = 2, 4, 8; the checkpoint shard loader reads only its bytes; bad
// splits are refused with the condition named.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "kernels/cpu/reference.hpp"
#include "testutil.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/io/checkpoint.hpp"
#include "w4a16/io/safetensors.hpp"
#include "w4a16/parallel/tp.hpp"

using namespace w4a16;
using parallel::ShardSpec;
using parallel::Split;

namespace {

// y = layer(x) in f32 through the CPU reference kernel. x is f16 [M, K] (row stride given).
std::vector<float> run_ref(const CanonicalView& w, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride) {
  std::vector<float> y(static_cast<std::size_t>(m * w.spec.n), NAN);
  TensorView xv(const_cast<std::uint16_t*>(x), DType::f16, {m, w.spec.k});
  xv.stride[0] = x_stride;
  kernels::cpu::reference_gemm(w, xv, TensorView(y.data(), DType::f32, {m, w.spec.n}));
  return y;
}

struct Case {
  std::int64_t n, k;
  int g;
  ScalarType st;
  bool act_order;
};

void check_all_splits(const Case& c) {
  QuantSpec spec{c.n, c.k, c.g, c.st};
  QuantizedLinear full = test::random_linear(spec, DType::f16, /*bias=*/true, c.act_order);
  const std::int64_t m = 3;
  std::vector<std::uint16_t> x = test::random_act(m, c.k, DType::f16);
  std::vector<float> ref = run_ref(full.view(), x.data(), m, c.k);
  for (int tp : {2, 4, 8}) {
    SCOPED_TRACE("tp=" + std::to_string(tp) + " " + spec.describe() + (c.act_order ? " act-order" : ""));
    // Column split: each shard's output is a column block of y, bit for bit.
    std::vector<float> cat(ref.size(), NAN);
    for (int r = 0; r < tp; ++r) {
      parallel::Shard s = parallel::shard_canonical(full.view(), {Split::column, r, tp});
      ASSERT_EQ(s.weights.spec().n, c.n / tp);
      std::vector<float> y = run_ref(s.weights.view(), x.data(), m, c.k);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < c.n / tp; ++j) cat[i * c.n + s.n_offset + j] = y[i * (c.n / tp) + j];
    }
    EXPECT_EQ(std::memcmp(cat.data(), ref.data(), ref.size() * 4), 0);
    // Row split: the shards' outputs sum to y (bias counted once, by rank 0).
    std::vector<double> sum(ref.size(), 0.0);
    for (int r = 0; r < tp; ++r) {
      parallel::Shard s = parallel::shard_canonical(full.view(), {Split::row, r, tp});
      const std::int64_t kl = c.k / tp;
      ASSERT_EQ(s.weights.spec().k, kl);
      EXPECT_EQ(s.weights.has_bias(), r == 0);
      std::vector<std::uint16_t> xl(static_cast<std::size_t>(m * kl));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < kl; ++j) {
          std::int64_t src = c.act_order ? s.input_index.at(static_cast<std::size_t>(j)) : s.k_offset + j;
          xl[i * kl + j] = x[i * c.k + src];
        }
      std::vector<float> y = run_ref(s.weights.view(), xl.data(), m, kl);
      for (std::size_t i = 0; i < y.size(); ++i) sum[i] += y[i];
    }
    std::vector<double> r64(ref.begin(), ref.end());
    EXPECT_LT(test::rel_error(sum, r64), 1e-6);
  }
}

}  // namespace

TEST(TensorParallel, ShardsJoinToTheUnsplitResult) {
  check_all_splits({128, 2048, 128, ScalarType::uint4, false});
  check_all_splits({64, 1024, 32, ScalarType::uint4b8, false});
  check_all_splits({192, 2048, 256, ScalarType::uint4, true});
  check_all_splits({64, 512, 64, ScalarType::uint4b8, true});
}

TEST(TensorParallel, RefusesBadSplits) {
  auto expect_refused = [](QuantSpec s, ShardSpec sh, const char* fragment) {
    try {
      parallel::check_split(s, sh);
      ADD_FAILURE() << "accepted " << s.describe();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_refused({36, 256, 128, ScalarType::uint4b8}, {Split::column, 0, 8}, "N: expected a multiple of tp = 8");
  expect_refused({64, 256, 128, ScalarType::uint4}, {Split::column, 0, 16}, "N/tp: expected a multiple of 8");
  expect_refused({64, 256, 128, ScalarType::uint4}, {Split::row, 0, 4}, "K/tp: expected a multiple of the group size 128");
  expect_refused({64, 256, kChannelwise, ScalarType::uint4b8}, {Split::row, 0, 2}, "channelwise");
  expect_refused({64, 256, 32, ScalarType::uint4b8}, {Split::row, 2, 2}, "rank");
  EXPECT_NO_THROW(parallel::check_split({64, 256, 32, ScalarType::uint4b8}, {Split::column, 1, 8}));  // no zeros: N/tp = 8 ok
}

namespace {

namespace fs = std::filesystem;

// Writes one layer as an AWQ or GPTQ Hugging Face folder through the library's writers.
fs::path write_checkpoint(const QuantizedLinear& q, bool gptq, const std::string& prefix) {
  fs::path dir = fs::temp_directory_path() / ("w4a16_tp_" + std::to_string(test::rng()()));
  fs::create_directories(dir);
  std::vector<std::pair<std::string, TensorView>> t;
  std::string qc;
  formats::AwqHost awq;
  formats::GptqHost gq;
  if (!gptq) {
    awq = formats::canonical_to_awq(q.view());
    t = {{prefix + ".qweight", awq.qweight.view()}, {prefix + ".qzeros", awq.qzeros.view()}, {prefix + ".scales", awq.scales.view()}};
    if (!awq.bias.empty()) t.push_back({prefix + ".bias", awq.bias.view()});
    qc = R"({"quant_method":"awq","bits":4,"group_size":)" + std::to_string(q.spec().group_size) +
         R"(,"zero_point":true,"version":"gemm"})";
  } else {
    gq = formats::canonical_to_gptq(q.view());
    t = {{prefix + ".qweight", gq.qweight.view()}, {prefix + ".scales", gq.scales.view()}, {prefix + ".g_idx", gq.g_idx.view()}};
    if (!gq.qzeros.empty()) t.push_back({prefix + ".qzeros", gq.qzeros.view()});
    if (!gq.bias.empty()) t.push_back({prefix + ".bias", gq.bias.view()});
    bool sym = q.spec().scalar == ScalarType::uint4b8;
    qc = std::string(R"({"quant_method":"gptq","bits":4,"group_size":)") + std::to_string(q.spec().group_size) +
         R"(,"sym":)" + (sym ? "true" : "false") + R"(,"desc_act":)" + (q.act_order() ? "true" : "false") +
         R"(,"checkpoint_format":")" + (gq.version == formats::GptqVersion::v1 ? "gptq" : "gptq_v2") + "\"}";
  }
  io::write_safetensors((dir / "model.safetensors").string(), t);
  std::ofstream(dir / "config.json") << R"({"model_type":"llama","quantization_config":)" << qc << "}";
  return dir;
}

bool same_canonical(const QuantizedLinear& a, const QuantizedLinear& b) {
  auto eq = [](const HostTensor& x, const HostTensor& y) {
    return x.shape() == y.shape() && (x.nbytes() == 0 || std::memcmp(x.data(), y.data(), x.nbytes()) == 0);  // null data: UB
  };
  return a.spec().n == b.spec().n && a.spec().k == b.spec().k && eq(a.qweight(), b.qweight()) && eq(a.scales(), b.scales()) &&
         eq(a.zeros(), b.zeros()) && eq(a.bias(), b.bias()) && eq(a.perm(), b.perm());
}

}  // namespace

TEST(TensorParallel, ShardLoaderReadsOnlyItsSlice) {
  const std::string prefix = "model.layers.0.mlp.down_proj";
  struct C {
    bool gptq;
    ScalarType st;
  };
  for (C c : {C{false, ScalarType::uint4}, C{true, ScalarType::uint4b8}, C{true, ScalarType::uint4}}) {
    QuantSpec spec{256, 1024, 128, c.st};
    QuantizedLinear full = test::random_linear(spec, DType::f16, true, false);
    fs::path dir = write_checkpoint(full, c.gptq, prefix);
    io::HfCheckpoint ck = io::HfCheckpoint::open(dir.string());
    std::size_t layer_bytes = ck.layer(prefix).bytes;
    for (Split split : {Split::column, Split::row}) {
      const int tp = 4;
      std::size_t total = 0;
      for (int r = 0; r < tp; ++r) {
        SCOPED_TRACE(std::string(c.gptq ? "gptq " : "awq ") + std::string(parallel::split_name(split)) + " rank " + std::to_string(r));
        std::size_t bytes = 0;
        std::map<std::string, std::size_t> per_tensor;
        parallel::Shard s = parallel::load_linear_shard(ck, prefix, {split, r, tp}, [&](const std::string& name, std::size_t, std::size_t b) {
          bytes += b;
          per_tensor[name] += b;
        });
        parallel::Shard expect = parallel::shard_canonical(ck.load_linear(prefix).view(), {split, r, tp});
        EXPECT_TRUE(same_canonical(s.weights, expect.weights));
        // Its slice: about 1/tp of the layer (g_idx, bias, scales of a column split are replicated or whole rows).
        EXPECT_LE(bytes, layer_bytes / tp + 1024 * 4 + 256 * 2 + 64) << "read " << bytes << " of " << layer_bytes;
        total += bytes;
      }
      EXPECT_GE(total, layer_bytes - 256 * 2 * 3);  // together they read (nearly) every byte once
    }
    fs::remove_all(dir);
  }
}
