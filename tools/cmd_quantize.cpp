// w4a16 quantize IN_DIR OUT_DIR: round-to-nearest AWQ or GPTQ checkpoint from a 16-bit one.
#include <cstdio>

#include "cli.hpp"
#include "model_ops.hpp"
#include "w4a16/core/canonical.hpp"

namespace w4a16::cli {
namespace {

int run_quantize(const ParsedArgs& a) {
  QuantizeCkptOptions o;
  if (!a.has("format")) usage_fail("--format", "awq or gptq", "nothing (the option is required)");
  o.format = a.get_choice("format", {"awq", "gptq"}, "awq") == "gptq" ? OutFormat::gptq : OutFormat::awq;
  o.group_size = static_cast<int>(a.get_int("group-size", 128));
  if (!is_supported_group_size(o.group_size))
    usage_fail("--group-size", "one of 32, 64, 128, 256, -1 (channelwise)", std::to_string(o.group_size));
  o.sym = a.has("sym");
  if (o.sym && o.format == OutFormat::awq)
    usage_fail("--sym", "--format gptq (AWQ is always asymmetric uint4 with zero points)", "--format awq");
  o.skip = a.get_list("skip");
  o.quiet = a.has("quiet");
  const std::int64_t shard_mb = a.get_int("shard-mb", 0);
  if (shard_mb < 0) usage_fail("--shard-mb", "MiB >= 0 (0 = one file)", std::to_string(shard_mb));
  o.shard_bytes = static_cast<std::size_t>(shard_mb) << 20;
  const std::string &in = a.positionals[0], &out = a.positionals[1];
  QuantizeReport r = quantize_checkpoint(in, out, o);
  std::printf("wrote %s: %s g=%d %s, %zu linears quantized, %zu kept in 16-bit, %s -> %s\n", out.c_str(),
              o.format == OutFormat::awq ? "awq" : "gptq", o.group_size,
              o.format == OutFormat::awq ? "uint4 (zero points)"
                                         : (o.sym ? "uint4b8 (sym, checkpoint_format gptq)" : "uint4 (asym, checkpoint_format gptq_v2)"),
              r.quantized.size(), r.kept.size(), human_bytes(r.bytes_in).c_str(), human_bytes(r.bytes_out).c_str());
  return 0;
}

}  // namespace

Command quantize_command() {
  return {{"quantize",
           "round-to-nearest quantization of a 16-bit checkpoint into an AWQ or GPTQ checkpoint",
           {"IN_DIR", "OUT_DIR"},
           {{"format", "F", "awq (uint4 with zero points, version gemm) or gptq (required)"},
            {"group-size", "G", "32, 64, 128, 256 or -1 (channelwise)", "128"},
            {"sym", "", "gptq only: symmetric uint4b8, written as checkpoint_format gptq (v1); "
                        "without it gptq is asymmetric, written as gptq_v2"},
            {"skip", "FRAGMENT", "keep linears whose name contains FRAGMENT in 16-bit (comma list allowed)", "", true},
            {"shard-mb", "MB", "write shards of at most MB MiB plus model.safetensors.index.json", "0: one model.safetensors"},
            {"quiet", "", "no progress output"}},
           "Every 2-D float \".weight\" is quantized except embeddings, norms, lm_head and --skip matches.\n"
           "Writes OUT_DIR/model.safetensors (or shards) with the format's tensor names and shapes through\n"
           "io::write_hf_checkpoint, config.json with quantization_config (and quantize_config.json for\n"
           "gptq), and copies tokenizer files.\n"
           "Biases and unquantized tensors are copied bit for bit; scales are float16.\n"
           "Progress goes to stderr: a bar on a terminal, one line per layer otherwise."},
          run_quantize};
}

}  // namespace w4a16::cli
