// Shared test helpers: fresh random data, an independent f64 GEMM, named tolerances.
// Every test draws new random inputs per run (seeded from the clock unless W4A16_SEED is
// set; the seed is printed on failure via SCOPED_TRACE in the callers).
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "w4a16/core/canonical.hpp"

namespace w4a16::test {

// Named tolerances: ||out - ref|| / ||ref|| bounds, written once (shared/STYLE.md 6).
constexpr double kTolF16 = 2e-3;   // fp16 activations/outputs
constexpr double kTolBF16 = 1e-2;  // bf16 activations/outputs
inline double tolerance(DType t) { return t == DType::bf16 ? kTolBF16 : kTolF16; }

std::uint64_t seed();            // W4A16_SEED or a fresh clock-derived seed, printed once
std::mt19937_64& rng();          // process-wide generator seeded with seed()

// A random canonical layer: q, z uniform 0..15, scales in [0.5, 1.5] * scale_mag (positive),
// bias ~ N(0, 1) if requested, a random permutation if act_order.
QuantizedLinear random_linear(const QuantSpec& spec, DType scale_dtype, bool bias, bool act_order,
                              float scale_mag = 0.02f);

// Random activations [M, K] of dtype f16/bf16 (values N(0,1) rounded to the dtype), with a
// row stride >= K (elements); returned as raw 16-bit storage of M * row_stride elements.
std::vector<std::uint16_t> random_act(std::int64_t m, std::int64_t k, DType dtype, std::int64_t row_stride = 0);

// y = x . w^T + b in f64; x [M, K] (float values), w [N, K] row-major, b [N] or empty.
std::vector<double> gemm_f64(const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, std::int64_t m, std::int64_t n, std::int64_t k);

// Dequantized weights [N, K] in original channel order, computed straight from the packed
// canonical bits and the FORMATS.md definition (independent of library code).
std::vector<double> dequant_f64(const QuantizedLinear& w);
std::vector<double> bias_f64(const QuantizedLinear& w);

// The same layer with scales and bias rounded to `dtype`: what a kernel that converts them to the
// activation dtype at prepare time (docs/LAYOUT.md, cuda.tc16x64.v1) is specified to compute.
QuantizedLinear with_scale_dtype(const QuantizedLinear& w, DType dtype);

// 16-bit float storage -> doubles ([M, K] with row stride).
std::vector<double> to_f64(const std::uint16_t* p, DType dtype, std::int64_t m, std::int64_t k,
                           std::int64_t row_stride);

double rel_error(const std::vector<double>& out, const std::vector<double>& ref);  // NaN-safe: NaN -> inf

// Rows of an M-row output to check against the f64 reference: every row when M <= 128, else
// the tile edges {0, 1, 63, 64, 127, 128, 255, 256} that exist, M/2, M-2, M-1 and random rows
// (rng()) up to 48 in all. Always sorted, distinct and inside [0, M): a row >= M would read
// past the host copies of x and y (the prefill GPU test once did for 128 < M <= 256).
std::vector<std::int64_t> sample_rows(std::int64_t m);

// Sets (or unsets, value == nullopt) an environment variable for the guard's lifetime; the value
// it had before (or its absence) comes back at the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

inline std::uint16_t poison_bits(DType t) { return t == DType::bf16 ? 0x7fc1 : 0x7e01; }  // quiet NaNs

// One-change variants of a tensor for the loaders' rejection tests, zero-filled, each with what changed: every dimension
// one more, doubled and halved (at least 1), each dtype of `dtypes` but its own, a trailing dimension of 1 added and,
// from rank 2, the dimensions flattened into one.
std::vector<std::pair<std::string, HostTensor>> perturbed_variants(const HostTensor& t, const std::vector<DType>& dtypes);

}  // namespace w4a16::test
