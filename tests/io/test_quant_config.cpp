// parse_quantization_config: awq and gptq fields, bare files, older names, defaults, errors.
#include <gtest/gtest.h>

#include <random>

#include "io_testutil.hpp"
#include "testutil.hpp"
#include "w4a16/io/checkpoint.hpp"

using namespace w4a16;
using io::QuantMethod;
using test::expect_error;

TEST(QuantConfig, Awq) {
  auto c = io::parse_quantization_config(R"({"architectures":["X"],"hidden_size":64,"quantization_config":{
      "quant_method":"awq","bits":4,"group_size":64,"zero_point":true,"version":"GEMM",
      "modules_to_not_convert":["visual","mlp.gate"],"backend":"autoawq","unknown_field":[1,2]}})",
                                         "config.json");
  EXPECT_EQ(c.method, QuantMethod::awq);
  EXPECT_EQ(c.bits, 4);
  EXPECT_EQ(c.group_size, 64);
  EXPECT_TRUE(c.zero_point);
  EXPECT_EQ(c.version, "gemm");
  EXPECT_EQ(c.modules_to_not_convert, (std::vector<std::string>{"visual", "mlp.gate"}));
  // modules_to_not_convert null, version omitted -> gemm.
  auto d = io::parse_quantization_config(
      R"({"quantization_config":{"quant_method":"awq","bits":4,"group_size":128,"modules_to_not_convert":null}})", "c");
  EXPECT_TRUE(d.modules_to_not_convert.empty());
  EXPECT_EQ(d.version, "gemm");
  // AutoAWQ's own quant_config.json: older names, no quant_method.
  auto e = io::parse_quantization_config(R"({"zero_point":true,"q_group_size":32,"w_bit":4,"version":"GEMM"})", "quant_config.json");
  EXPECT_EQ(e.method, QuantMethod::awq);
  EXPECT_EQ(e.group_size, 32);
  EXPECT_EQ(e.bits, 4);
}

TEST(QuantConfig, Gptq) {
  auto c = io::parse_quantization_config(R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":-1,
      "sym":false,"desc_act":true,"checkpoint_format":"gptq_v2","static_groups":false,"true_sequential":true,
      "damp_percent":0.01}})",
                                         "config.json");
  EXPECT_EQ(c.method, QuantMethod::gptq);
  EXPECT_EQ(c.group_size, -1);
  EXPECT_FALSE(c.sym);
  EXPECT_TRUE(c.desc_act);
  EXPECT_EQ(c.checkpoint_format, formats::GptqVersion::v2);
  // Defaults (Hugging Face GPTQConfig): sym true, desc_act false, checkpoint_format "gptq" = v1.
  auto d = io::parse_quantization_config(R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":128}})", "c");
  EXPECT_TRUE(d.sym);
  EXPECT_FALSE(d.desc_act);
  EXPECT_EQ(d.checkpoint_format, formats::GptqVersion::v1);
  // A bare AutoGPTQ quantize_config.json.
  auto e = io::parse_quantization_config(R"({"bits":4,"group_size":128,"damp_percent":0.01,"desc_act":false,"sym":true,
      "true_sequential":true,"model_name_or_path":null,"model_file_base_name":"model"})",
                                         "quantize_config.json");
  EXPECT_EQ(e.method, QuantMethod::gptq);
  EXPECT_TRUE(e.sym);
  // No quantization_config: an unquantized model.
  EXPECT_EQ(io::parse_quantization_config(R"({"hidden_size":64})", "config.json").method, QuantMethod::none);
}

TEST(QuantConfig, Rejections) {
  auto parse = [](const std::string& q) {
    return io::parse_quantization_config(R"({"quantization_config":)" + q + "}", "config.json");
  };
  const ErrorCode F = ErrorCode::format_error, U = ErrorCode::unsupported;
  expect_error([&] { parse(R"({"quant_method":"gptq","group_size":128})"); }, F, {"config.json", "\"bits\"", "required"});
  expect_error([&] { parse(R"({"quant_method":"awq","bits":4})"); }, F, {"\"group_size\"", "required"});
  expect_error([&] { parse(R"({"quant_method":"gptq","bits":8,"group_size":128})"); }, U, {"\"bits\"", "8"});
  expect_error([&] { parse(R"({"quant_method":"gptq","bits":"4","group_size":128})"); }, F, {"\"bits\"", "integer"});
  expect_error([&] { parse(R"({"quant_method":"gptq","bits":4,"group_size":48})"); }, U, {"group_size", "48"});
  expect_error([&] { parse(R"({"quant_method":"gptq","bits":4,"group_size":128,"sym":"yes"})"); }, F, {"\"sym\""});
  expect_error([&] { parse(R"({"quant_method":"gptq","bits":4,"group_size":128,"checkpoint_format":"marlin"})"); }, U,
               {"checkpoint_format", "marlin"});
  expect_error([&] { parse(R"({"quant_method":"bitsandbytes","bits":4,"group_size":128})"); }, U, {"quant_method"});
  expect_error([&] { parse(R"({"quant_method":"awq","bits":4,"group_size":128,"version":"gemv"})"); }, U, {"version", "gemv"});
  expect_error([&] { parse(R"({"quant_method":"awq","bits":4,"group_size":128,"zero_point":false})"); }, U, {"zero_point"});
  expect_error([&] { parse(R"({"quant_method":"awq","bits":4,"group_size":128,"modules_to_not_convert":"visual"})"); }, F,
               {"modules_to_not_convert"});
  expect_error([&] { parse(R"(7)"); }, F, {"quantization_config"});
  expect_error([&] { io::parse_quantization_config("{not json", "config.json"); }, F, {"config.json", "JSON"});
}

// Random single- and double-character changes of real config.json texts: each either parses to a configuration the
// kernels support (4 bits, a group size of 32 / 64 / 128 / 256 or channelwise, AWQ with zero points in GEMM order or
// GPTQ v1 / v2; or no quantization where the key's name changed) or is refused with a w4a16::Error naming the source (format_error or unsupported); nothing else.
TEST(QuantConfig, MutatedTextsParseToASupportedConfigOrFailNamingTheSource) {
  const std::string texts[] = {
      R"({"architectures":["LlamaForCausalLM"],"hidden_size":4096,"quantization_config":{"quant_method":"awq","bits":4,)"
      R"("group_size":128,"zero_point":true,"version":"GEMM","modules_to_not_convert":["visual"]}})",
      R"({"quantization_config":{"quant_method":"gptq","bits":4,"group_size":-1,"sym":false,"desc_act":true,)"
      R"("checkpoint_format":"gptq_v2","damp_percent":0.01}})",
      R"({"zero_point":true,"q_group_size":64,"w_bit":4,"version":"GEMM"})"};
  const std::string alphabet = "{}[],:\"0123456789-.eE abcdefgmnpqrstuvwxyz_AGMSTV";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 1);
  int parsed = 0, refused = 0;
  for (const std::string& text : texts) {
    std::uniform_int_distribution<std::size_t> pos(0, text.size() - 1);
    for (int i = 0; i < 1500; ++i) {
      std::string t = text;
      for (int c = 0; c < 1 + (i % 2); ++c)
        t[pos(test::rng())] = coin(test::rng()) ? alphabet[pick(test::rng())] : static_cast<char>(byte(test::rng()));
      SCOPED_TRACE(t);
      try {
        const io::QuantizationConfig q = io::parse_quantization_config(t, "mutant.json");
        ++parsed;
        if (q.method == io::QuantMethod::none) continue;  // the "quantization_config" name changed: an unquantized model
        EXPECT_TRUE(q.method == io::QuantMethod::awq || q.method == io::QuantMethod::gptq);
        EXPECT_EQ(q.bits, 4);
        EXPECT_TRUE(q.group_size == -1 || q.group_size == 32 || q.group_size == 64 || q.group_size == 128 || q.group_size == 256)
            << q.group_size;
        if (q.method == io::QuantMethod::awq) {
          EXPECT_TRUE(q.zero_point);
          EXPECT_EQ(q.version, "gemm");
        }
      } catch (const Error& e) {
        ++refused;
        EXPECT_TRUE(e.code() == ErrorCode::format_error || e.code() == ErrorCode::unsupported) << e.what();
        EXPECT_NE(std::string(e.what()).find("mutant.json"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(parsed, 100);  // changes inside ignored fields or names leave valid texts
  EXPECT_GT(refused, 1000);
}
