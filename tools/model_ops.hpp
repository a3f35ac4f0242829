// Whole-checkpoint operations shared by `synth`, `quantize` and `demo`: they walk a folder's
// tensors and call the library for every numerical or format step (formats::quantize_rtn,
// io::write_hf_checkpoint, io::write_safetensors).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "w4a16/core/dtype.hpp"

namespace w4a16::cli {

// A small synthetic Hugging Face checkpoint with the real tensor names of the architecture.
struct SynthOptions {
  std::string arch = "qwen2";
  int layers = 2;
  std::int64_t hidden = 256;
  std::int64_t intermediate = 768;
  std::int64_t vocab = 1024;
  int heads = 0;     // 0: hidden / 64 (head_dim 64, as in Qwen2)
  int kv_heads = 0;  // 0: heads / 2 when that divides, else heads (grouped-query attention)
  DType dtype = DType::f16;
  std::uint64_t seed = 1;
};
struct SynthReport {
  std::vector<std::string> linears;  // prefixes of the 2-D projection weights (not embeddings, not lm_head)
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;
};
SynthReport synth_checkpoint(const std::string& out_dir, const SynthOptions& opt);

enum class OutFormat { awq, gptq };
struct QuantizeCkptOptions {
  OutFormat format = OutFormat::awq;
  int group_size = 128;
  bool sym = false;                // gptq only: uint4b8 (v1 checkpoint) instead of uint4 (gptq_v2)
  std::vector<std::string> skip;   // name fragments kept in 16-bit (written as modules_to_not_convert)
  bool quiet = false;              // no progress output
  std::size_t shard_bytes = 0;     // > 0: shards of at most this many bytes plus an index
};
struct QuantizeReport {
  std::vector<std::string> quantized;  // prefixes
  std::vector<std::string> kept;       // 2-D weights left in 16-bit (embeddings, lm_head, skipped)
  std::uint64_t bytes_in = 0, bytes_out = 0;
  std::string checkpoint_format;       // gptq: "gptq" (v1) or "gptq_v2"
};
// Which 2-D ".weight" tensors are quantized: every one except embeddings (name contains
// "embed"), norms ("norm"), the lm_head, and those whose prefix contains a --skip fragment
// (the substring rule of AutoAWQ's modules_to_not_convert).
bool is_quantizable_linear(const std::string& prefix, const std::vector<std::string>& skip);
QuantizeReport quantize_checkpoint(const std::string& in_dir, const std::string& out_dir, const QuantizeCkptOptions& opt);

// Reads a whole text file; io_error naming the path when it cannot.
std::string read_text_file(const std::string& path);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace w4a16::cli
