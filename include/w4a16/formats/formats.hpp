// Checkpoint formats <-> the canonical layout (shared/FORMATS.md), all exact, host only.
// Formats know no kernel and no CUDA.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "w4a16/core/canonical.hpp"

namespace w4a16::formats {

// ---- Unpacked form: one byte per 4-bit value, the readable truth for tests and writers.
struct Unpacked {
  QuantSpec spec;
  std::vector<std::uint8_t> q;  // [N, K] in canonical (perm-applied) K order, values 0..15
  std::vector<std::uint8_t> z;  // [N, G] values 0..15; empty for uint4b8
  HostTensor scales;            // f16|bf16 [N, G]
  HostTensor bias;              // [N] or empty
  std::vector<std::int32_t> perm;  // [K] or empty
};
Unpacked unpack(const CanonicalView& w);       // host views only
QuantizedLinear pack(const Unpacked& u);       // validates values and shapes

// Dequantized fp32 weights [N, K] in the ORIGINAL input-channel order
// (w_orig[n, perm[k']] = w_canonical(n, k')), so y = x . w_orig^T + b.
HostTensor dequantize(const CanonicalView& w);

// ---- AWQ (AutoAWQ GEMM): qweight int32 [K, N/8] interleaved, qzeros int32 [G, N/8], scales f16 [G, N].
struct AwqTensors {
  TensorView qweight, qzeros, scales, bias;  // bias optional
};
// qweight, qzeros int32; scales f16 or bf16 (kept); bias f16/bf16/f32 [N], stored in the scales'
// dtype (copied bit for bit when it already is, else rounded once). Tensors may be unaligned
// (straight from a mapped safetensors file). Errors name the tensor (qweight, qzeros, ...).
QuantizedLinear awq_to_canonical(const AwqTensors& t, int group_size);
struct AwqHost {
  HostTensor qweight, qzeros, scales, bias;
};
AwqHost canonical_to_awq(const CanonicalView& w);  // uint4 without perm only (AWQ has neither sym nor act-order)

// ---- GPTQ (AutoGPTQ / GPTQModel): qweight int32 [K/8, N], qzeros int32 [G, N/8], scales [G, N], g_idx int32 [K].
enum class GptqVersion { v1, v2 };  // v1 stores z - 1 (checkpoint_format "gptq"); v2 stores z ("gptq_v2")
struct GptqOptions {
  int group_size = 128;
  bool sym = true;
  bool desc_act = false;
  GptqVersion version = GptqVersion::v1;
};
struct GptqTensors {
  TensorView qweight, qzeros, scales, g_idx, bias;  // g_idx, bias optional
};
// N = qweight.shape[1], K = 8 * qweight.shape[0]. qzeros [G, ceil(N/8)] is required for
// sym = false and optional for sym = true, where every zero read must be 8 (else format_error:
// the layer is not symmetric or the version is wrong). g_idx (optional unless desc_act):
// values must lie in 0..G-1; a g_idx equal to k / g gives no perm; any other g_idx needs
// desc_act = true and exactly g channels per group, and gives perm = stable argsort(g_idx),
// qweight rows reordered to canonical order (scales keep their group index). GPTQ stores only
// each channel's group, so canonical -> GPTQ -> canonical returns a perm listing each group's
// channels in increasing order: bit-exact when the perm already was so, else the same weights.
QuantizedLinear gptq_to_canonical(const GptqTensors& t, const GptqOptions& opt);
struct GptqHost {
  HostTensor qweight, qzeros, scales, g_idx, bias;
  GptqVersion version;  // what the writer chose: v1 for sym, v2 for asym (v1 cannot store z = 0)
};
// Default version: v1 for uint4b8 (stores 7 = 0x77777777 words), v2 for uint4 (v1 cannot store
// z = 0); an explicit v1 for uint4 is honoured unless some z is 0 (then: unsupported). Always
// writes qzeros [G, ceil(N/8)] (padding columns hold z = 8) and g_idx; with a perm, qweight rows
// are in ORIGINAL channel order and g_idx[perm[k']] = k' / g.
GptqHost canonical_to_gptq(const CanonicalView& w, std::optional<GptqVersion> version = std::nullopt);

// ---- Round-to-nearest quantizer from float weights [N, K] (f16/bf16/f32, contiguous, host).
// Per (row n, group g) over the group's values x:
//   uint4:   mn = min(min x, 0), mx = max(max x, 0) (the range always holds 0),
//            s = (mx - mn) / 15,  z = clamp(round(-mn / s), 0, 15)
//   uint4b8: GPTQ's symmetric rule: s = 2 * max|x| / 15, z = 8
//   q = clamp(round(x / s) + z, 0, 15);  round = half to even (as torch.round).
//   s = 0 (an all-zero group) becomes s = 1 so that scales stay finite (q = z gives 0 exactly).
//   s is stored in scale_dtype rounded UP to the next representable value, and z and q are
//   computed with that stored s, so every element satisfies |x - (q - z) * s| <= s / 2
//   (up to fp32 rounding of x / s). Weights that are exactly (q - z) * s with s representable
//   and every group holding q = 0 and q = 15 (uint4) are reproduced bit for bit.
// Rejects non-finite weights and a group whose scale overflows scale_dtype. bias (optional,
// f16/bf16/f32 [N]) is rounded once to scale_dtype.
struct QuantizeOptions {
  int group_size = 128;
  ScalarType scalar = ScalarType::uint4;
  DType scale_dtype = DType::f16;
};
QuantizedLinear quantize_rtn(const TensorView& weight, const QuantizeOptions& opt, const TensorView& bias = {});

}  // namespace w4a16::formats
