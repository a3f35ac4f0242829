// parse_quantization_config: awq and gptq fields, bare files, older names, defaults, errors.
#include <gtest/gtest.h>

#include "io_testutil.hpp"
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
