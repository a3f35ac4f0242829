// w4a16 synth OUT_DIR: a small random fp16/bf16 Qwen2 checkpoint (the input of `quantize`).
#include <cstdio>

#include "cli.hpp"
#include "model_ops.hpp"

namespace w4a16::cli {
namespace {

int run_synth(const ParsedArgs& a) {
  SynthOptions o;
  o.arch = a.get_choice("arch", {"qwen2"}, "qwen2");
  o.layers = static_cast<int>(a.get_int("layers", o.layers));
  o.hidden = a.get_int("hidden", o.hidden);
  o.intermediate = a.get_int("intermediate", o.intermediate);
  o.vocab = a.get_int("vocab", o.vocab);
  o.heads = static_cast<int>(a.get_int("heads", 0));
  o.kv_heads = static_cast<int>(a.get_int("kv-heads", 0));
  o.dtype = parse_act_dtype(a.get_or("dtype", "float16"), "--dtype");
  o.seed = static_cast<std::uint64_t>(a.get_int("seed", static_cast<std::int64_t>(o.seed)));
  const std::string& dir = a.positionals[0];
  SynthReport r = synth_checkpoint(dir, o);
  std::printf("wrote %s: %s %d layers, hidden %lld, intermediate %lld, vocab %lld, %s, %zu tensors (%s), %zu linears\n",
              dir.c_str(), o.arch.c_str(), o.layers, static_cast<long long>(o.hidden), static_cast<long long>(o.intermediate),
              static_cast<long long>(o.vocab), std::string(dtype_name(o.dtype)).c_str(), r.tensors,
              human_bytes(r.bytes).c_str(), r.linears.size());
  return 0;
}

}  // namespace

Command synth_command() {
  SynthOptions d;
  return {{"synth",
           "write a small synthetic fp16/bf16 Hugging Face checkpoint (Qwen2 tensor names, random weights)",
           {"OUT_DIR"},
           {{"arch", "NAME", "architecture whose tensor names and config.json are written", "qwen2"},
            {"layers", "L", "decoder layers", std::to_string(d.layers)},
            {"hidden", "H", "hidden size (multiple of 8; of the group size to quantize with it)", std::to_string(d.hidden)},
            {"intermediate", "I", "MLP intermediate size", std::to_string(d.intermediate)},
            {"vocab", "V", "vocabulary size (embed_tokens and lm_head rows)", std::to_string(d.vocab)},
            {"heads", "N", "attention heads", "hidden / 64"},
            {"kv-heads", "N", "key/value heads", "heads / 2"},
            {"dtype", "T", "float16 or bfloat16", "float16"},
            {"seed", "S", "random seed (same seed, same weights)", std::to_string(d.seed)}},
           "Writes OUT_DIR/model.safetensors and OUT_DIR/config.json. Tensors: model.embed_tokens,\n"
           "per layer input_layernorm, self_attn.{q,k,v,o}_proj (q/k/v with bias), post_attention_layernorm,\n"
           "mlp.{gate,up,down}_proj; model.norm; lm_head. Weights ~ N(0, 0.02), norms ~ N(1, 0.05)."},
          run_synth};
}

}  // namespace w4a16::cli
