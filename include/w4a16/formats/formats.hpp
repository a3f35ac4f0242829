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
QuantizedLinear gptq_to_canonical(const GptqTensors& t, const GptqOptions& opt);
struct GptqHost {
  HostTensor qweight, qzeros, scales, g_idx, bias;
  GptqVersion version;  // what the writer chose: v1 for sym, v2 for asym (v1 cannot store z = 0)
};
GptqHost canonical_to_gptq(const CanonicalView& w, std::optional<GptqVersion> version = std::nullopt);

// ---- Round-to-nearest quantizer from float weights [N, K] (f16/bf16/f32, contiguous).
//   uint4:   per-group min/max, s = (max - min) / 15, z = round(-min / s) clamped to 0..15
//   uint4b8: per-group absmax, s = absmax / 7.5 ... see quantize.cpp for the exact rule
struct QuantizeOptions {
  int group_size = 128;
  ScalarType scalar = ScalarType::uint4;
  DType scale_dtype = DType::f16;
};
QuantizedLinear quantize_rtn(const TensorView& weight, const QuantizeOptions& opt, const TensorView& bias = {});

}  // namespace w4a16::formats
