// cpu.fast.v1: prepare, argument checks, activation gather and run-time ISA dispatch.
// Contract and layout in fast.hpp; the kernels are fast_amx.cpp, fast_vnni.cpp, fast_avx2.cpp and fast_scalar.cpp.
#include "fast.hpp"

#include <cstdlib>
#include <string_view>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fast_impl.hpp"
#include "reference.hpp"
#include "w4a16/core/error.hpp"
#include "w4a16/core/half.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace w4a16::kernels::cpu {

std::size_t FastWeights::bytes() const {
  return qweight.size() * sizeof(std::uint32_t) + scales.size() * sizeof(std::uint16_t) +
         zeros.size() * sizeof(std::uint32_t) + bias.size() * sizeof(float) + perm.size() * sizeof(std::int32_t);
}

bool fast_supports(DType act_dtype, const QuantSpec& spec, std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (!is_activation_dtype(act_dtype))
    return no("act_dtype " + std::string(dtype_name(act_dtype)) + " not in {float16, bfloat16}");
  try {
    spec.validate("spec");
  } catch (const Error& e) {
    return no(e.what());
  }
  if (why) why->clear();
  return true;
}

FastWeights fast_prepare(const CanonicalView& w, DType act_dtype) {
  detail::check_host_weights(w, "w");
  if (!is_activation_dtype(act_dtype))
    fail(ErrorCode::dtype_mismatch, "act_dtype", "float16 or bfloat16", std::string(dtype_name(act_dtype)));
  const QuantSpec& s = w.spec;
  const std::int64_t N = s.n, K = s.k, G = s.groups(), words = K / 8;
  FastWeights f;
  f.spec = s;
  f.act_dtype = act_dtype;
  f.scale_dtype = w.scale_dtype;
  f.blocks = (N + kBlockRows - 1) / kBlockRows;
  const auto Nb = static_cast<std::size_t>(f.blocks);
  f.qweight.assign(Nb * static_cast<std::size_t>(words) * kBlockRows, 0u);
  f.scales.assign(Nb * static_cast<std::size_t>(G) * kBlockRows, 0u);  // 0 bits = +0.0 in f16 and bf16
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int64_t b = n / kBlockRows, l = n % kBlockRows;
    const std::int32_t* src = w.qweight + n * words;
    std::uint32_t* dst = &f.qweight[static_cast<std::size_t>((b * words) * kBlockRows + l)];
    for (std::int64_t j = 0; j < words; ++j) dst[j * kBlockRows] = static_cast<std::uint32_t>(src[j]);
    for (std::int64_t g = 0; g < G; ++g)
      f.scales[static_cast<std::size_t>((b * G + g) * kBlockRows + l)] = w.scales[n * G + g];
  }
  if (s.has_zeros()) {  // N % 8 == 0 here (spec.validate), so canonical row r of zeros is block r
    f.zeros.resize(Nb * static_cast<std::size_t>(G));
    std::memcpy(f.zeros.data(), w.zeros.data(), f.zeros.size() * sizeof(std::uint32_t));
  }
  if (w.has_bias()) {
    f.bias.assign(Nb * kBlockRows, 0.f);
    for (std::int64_t n = 0; n < N; ++n) f.bias[static_cast<std::size_t>(n)] = f16x_to_float(w.scale_dtype, w.bias[n]);
  }
  if (w.act_order()) {
    f.perm.assign(w.perm, w.perm + K);
    for (std::int64_t kk = 0; kk < K; ++kk)  // a view not made by make_canonical_view could hold anything
      if (f.perm[static_cast<std::size_t>(kk)] < 0 || f.perm[static_cast<std::size_t>(kk)] >= K)
        fail(ErrorCode::invalid_argument, "w.perm", "values in 0.." + std::to_string(K - 1),
             std::to_string(f.perm[static_cast<std::size_t>(kk)]) + " at index " + std::to_string(kk));
  }
  return f;
}

namespace {

bool cpu_has_avx2() {
  if (fast_isa_cap() == FastIsa::scalar) return false;
#if defined(W4A16_CPU_HAVE_AVX2_TU) && (defined(__GNUC__) || defined(__clang__))
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

// AVX-512 F/BW/VL + VNNI (with AVX2, FMA, F16C): Ice Lake, Sapphire Rapids and later, Zen 4 and later.
bool cpu_has_vnni() {
  const FastIsa cap = fast_isa_cap();
  if ((cap != FastIsa::vnni && cap != FastIsa::amx) || !cpu_has_avx2()) return false;
#if defined(W4A16_CPU_HAVE_VNNI_TU) && (defined(__GNUC__) || defined(__clang__))
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}

// AMX-BF16 tiles plus the AVX-512 subsets fast_amx.cpp is compiled for, and the tile state granted by the OS.
bool cpu_has_amx() {
  if (fast_isa_cap() != FastIsa::amx || !cpu_has_avx2()) return false;
#if defined(W4A16_CPU_HAVE_AMX_TU) && (defined(__GNUC__) || defined(__clang__))
  static const bool ok = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
                         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && impl::amx_usable();
  return ok;
#else
  return false;
#endif
}

// best: the VNNI weight stream up to kVnniMaxM rows next to AMX (every M without AMX), then AMX from kAmxMinM rows,
// else AVX2, else scalar.
FastIsa resolve(FastIsa isa, std::int64_t m) {
  if (isa != FastIsa::best) return isa;
  const bool amx = cpu_has_amx();
  if (cpu_has_vnni() && (!amx || m <= kVnniMaxM)) return FastIsa::vnni;
  if (amx && m >= kAmxMinM) return FastIsa::amx;
  return cpu_has_avx2() ? FastIsa::avx2 : FastIsa::scalar;
}

int thread_count(int requested) {
#if defined(_OPENMP)
  return requested > 0 ? requested : omp_get_max_threads();
#else
  return 1;
#endif
}

// Per-calling-thread buffers, reused across calls (grown, never shrunk).
struct Scratch {
  AlignedVector<float> xf, xsum;
  AlignedVector<std::int32_t> xq;  // XPrep::pairs16
  AlignedVector<float> xs16;
};
Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

void gather_x(const FastWeights& w, const TensorView& x, impl::XPrep prep, Scratch& sc, int threads) {
  const std::int64_t M = x.shape[0], K = w.spec.k, G = w.spec.groups(), gl = w.spec.group_len();
  sc.xf.resize(static_cast<std::size_t>(M * K));
  if (prep.sums) sc.xsum.resize(static_cast<std::size_t>(M * G));
  const std::int32_t* perm = w.act_order() ? w.perm.data() : nullptr;
  const auto* xb = x.ptr<const std::uint16_t>();
  const std::int64_t xs = x.stride[0];
  const DType dt = x.dtype;
  float* xf = sc.xf.data();
  float* xsum = sc.xsum.data();
#pragma omp parallel for schedule(static) num_threads(threads) if (M * K >= (1 << 16))
  for (std::int64_t m = 0; m < M; ++m) {
    const std::uint16_t* row = xb + m * xs;
    float* dst = xf + m * K;
    for (std::int64_t kk = 0; kk < K; ++kk) dst[kk] = f16x_to_float(dt, row[perm ? perm[kk] : kk]);
    if (prep.sums)
      for (std::int64_t g = 0; g < G; ++g) {
        double acc = 0;  // f64 so the zero-point term adds no error of its own
        for (std::int64_t kk = g * gl; kk < (g + 1) * gl; ++kk) acc += dst[kk];
        xsum[m * G + g] = static_cast<float>(acc);
      }
  }
}

}  // namespace

bool fast_isa_available(FastIsa isa) {
  switch (isa) {
    case FastIsa::best:
    case FastIsa::scalar: return true;
    case FastIsa::avx2: return cpu_has_avx2();
    case FastIsa::vnni: return cpu_has_vnni();
    case FastIsa::amx: return cpu_has_amx();
  }
  return false;
}

FastIsa fast_isa_for(FastIsa isa, std::int64_t m) { return resolve(isa, m); }

FastIsa fast_isa_cap() {
  const char* e = std::getenv("W4A16_CPU_ISA");
  if (!e || !*e) return FastIsa::amx;
  const std::optional<FastIsa> v = fast_isa_from_name(e);
  if (!v || *v == FastIsa::best) fail(ErrorCode::invalid_argument, "W4A16_CPU_ISA", "scalar, avx2, vnni or amx", e);
  return *v;
}

std::string fast_describe_run(DType act_dtype, std::int64_t m) {
  switch (resolve(FastIsa::best, m)) {
    case FastIsa::amx:
      return std::string("amx: tiles of 16 rows x 16 weights (") +
             (act_dtype == DType::f16 ? "float16 x on the INT8 tiles as int16 hi + lo bytes where groups are >= 64, "
                                        "else on the BF16 tiles as an exact hi + lo pair"
                                      : "BF16 tiles, bfloat16 x as given") +
             "), 32-weight panels dequantized 128 k at a time, scaled per group in fp32";
    case FastIsa::vnni:
      return "vnni: weights streamed once, 16 rows x 8 k a vector, nibble pairs times x as int16 (a power-of-two scale per "
             "128 k) by vpdpwssd, scaled per group in fp32";
    case FastIsa::avx2:
      return m >= kPrefillMinM ? "avx2: 16-weight panels dequantized to fp32, 6 x 16 register tiles"
                               : "avx2: weights streamed once, nibble pairs times x as int16 (a power-of-two scale per 128 k) "
                                 "by vpmaddwd, register tiles of up to 4 rows x 16 weights, scaled per group in fp32";
    default: return "scalar: portable loops (no AVX2 on this CPU, or W4A16_CPU_ISA=scalar)";
  }
}

std::optional<FastIsa> fast_isa_from_name(std::string_view name) {
  if (name == "best") return FastIsa::best;
  if (name == "scalar") return FastIsa::scalar;
  if (name == "avx2") return FastIsa::avx2;
  if (name == "vnni") return FastIsa::vnni;
  if (name == "amx") return FastIsa::amx;
  return std::nullopt;
}

std::string_view fast_isa_name(FastIsa isa) {
  switch (resolve(isa, std::numeric_limits<std::int64_t>::max())) {
    case FastIsa::amx: return "amx";
    case FastIsa::vnni: return "vnni";
    case FastIsa::avx2: return "avx2";
    default: return "scalar";
  }
}

void fast_gemm_isa(const FastWeights& w, const TensorView& x, const TensorView& out, FastIsa isa, int num_threads) {
  if (w.blocks <= 0 || w.qweight.empty())
    fail(ErrorCode::invalid_argument, "w", "weights made by fast_prepare (layout cpu.fast.v1)", "empty FastWeights");
  const std::int64_t N = w.spec.n, K = w.spec.k;
  if (static_cast<std::int64_t>(w.qweight.size()) != w.blocks * (K / 8) * kBlockRows ||
      static_cast<std::int64_t>(w.scales.size()) != w.blocks * w.spec.groups() * kBlockRows)
    fail(ErrorCode::layout_mismatch, "w", "cpu.fast.v1 arrays sized for " + w.spec.describe(), "arrays of other sizes");
  detail::check_matrix(x, "x", "[M, K]", -1, K, {w.act_dtype});
  const std::int64_t M = x.shape[0];
  detail::check_matrix(out, "out", "[M, N]", M, N, {w.act_dtype});
  if (num_threads < 0) fail(ErrorCode::invalid_argument, "num_threads", ">= 0 (0 = all)", std::to_string(num_threads));
  const FastIsa chosen = resolve(isa, M);
  if (chosen == FastIsa::avx2 && !cpu_has_avx2())
    fail(ErrorCode::unsupported, "isa", "an implementation this CPU runs (scalar)", "avx2 (needs AVX2, FMA and F16C)");
  auto here = [] {
    return std::string("an implementation this CPU runs (") + (cpu_has_vnni() ? "vnni, " : "") +
           (cpu_has_avx2() ? "avx2, scalar)" : "scalar)");
  };
  if (chosen == FastIsa::vnni && !cpu_has_vnni()) fail(ErrorCode::unsupported, "isa", here(), "vnni (needs AVX-512 F/BW/VL and VNNI)");
  if (chosen == FastIsa::amx && !cpu_has_amx())
    fail(ErrorCode::unsupported, "isa", here(), "amx (needs AMX-BF16, AVX-512 F/BW/VL and Linux's tile state)");
  if (M == 0) return;

  impl::Problem p;
  p.w = &w;
  p.m = M;
  p.n = N;
  p.k = K;
  p.groups = w.spec.groups();
  p.group_len = w.spec.group_len();
  p.out = out.data;
  p.out_stride = out.stride[0];
  p.out_dtype = out.dtype;
  p.threads = thread_count(num_threads);
  const impl::XPrep prep = chosen == FastIsa::avx2  ? impl::avx2_xprep(M)
                           : chosen == FastIsa::amx ? impl::XPrep{.sums = false, .gather = false}
                           : chosen == FastIsa::vnni ? impl::XPrep{.sums = true, .pairs16 = true}
                                                     : impl::XPrep{.sums = true};  // scalar
  p.x = x.ptr<const std::uint16_t>();
  p.x_stride = x.stride[0];
  p.perm = w.act_order() ? w.perm.data() : nullptr;
  if (prep.gather) {
    Scratch& sc = scratch();
    gather_x(w, x, prep, sc, p.threads);
    p.xf = sc.xf.data();
    p.xsum = prep.sums ? sc.xsum.data() : nullptr;
    if (prep.pairs16) {
      p.xblocks = (K + impl::kX16Block - 1) / impl::kX16Block;
      sc.xq.resize(static_cast<std::size_t>(M * (K / 2)));
      sc.xs16.resize(static_cast<std::size_t>(M * p.xblocks));
      std::int32_t* const xq = sc.xq.data();  // the caller's buffers (a pool thread's own thread_local would be another)
      float* const xs16 = sc.xs16.data();
      const float* const xf = p.xf;
      const std::int64_t xb = p.xblocks;
#pragma omp parallel for schedule(static) num_threads(p.threads) if (M * K >= (1 << 16))
      for (std::int64_t m = 0; m < M; ++m) impl::x_pairs16(xf + m * K, K, xq + m * (K / 2), xs16 + m * xb);
      p.xq = xq;
      p.xs16 = xs16;
    }
  }
  if (chosen == FastIsa::amx)
    impl::run_amx(p);
  else if (chosen == FastIsa::vnni)
    impl::run_vnni(p);
  else if (chosen == FastIsa::avx2)
    impl::run_avx2(p);
  else
    impl::run_scalar(p);
}

void amx_gemm_canonical(const CanonicalView& w, DType act_dtype, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride,
                        float* out, std::int64_t out_stride, int num_threads) {
  detail::check_host_weights(w, "w");
  if (!is_activation_dtype(act_dtype))
    fail(ErrorCode::dtype_mismatch, "act_dtype", "float16 or bfloat16", std::string(dtype_name(act_dtype)));
  if (m < 0) fail(ErrorCode::invalid_argument, "m", ">= 0", std::to_string(m));
  if (x_stride < w.spec.k) fail(ErrorCode::invalid_argument, "x_stride", ">= K = " + std::to_string(w.spec.k), std::to_string(x_stride));
  if (out_stride < w.spec.n) fail(ErrorCode::invalid_argument, "out_stride", ">= N = " + std::to_string(w.spec.n), std::to_string(out_stride));
  if (num_threads < 0) fail(ErrorCode::invalid_argument, "num_threads", ">= 0 (0 = all)", std::to_string(num_threads));
  if (!cpu_has_amx())
    fail(ErrorCode::unsupported, "isa", "a CPU with AMX-BF16 and AVX-512 F/BW/VL (fast_isa_available(amx))", "none here");
  if (m == 0) return;
  if (!x) fail(ErrorCode::invalid_argument, "x", "a host pointer", "null");
  if (!out) fail(ErrorCode::invalid_argument, "out", "a host pointer", "null");
  impl::run_amx_canonical(w, act_dtype, x, m, x_stride, out, out_stride, thread_count(num_threads));
}

void fast_gemm(const FastWeights& w, const TensorView& x, const TensorView& out, int num_threads) {
  fast_gemm_isa(w, x, out, FastIsa::best, num_threads);
}

namespace impl {
// (fast_impl.hpp) A block holding a NaN or an infinity gets a NaN scale and zero pairs: its outputs are NaN.
void x_pairs16(const float* x, std::int64_t K, std::int32_t* q, float* xs) {
  for (std::int64_t b = 0; b * kX16Block < K; ++b) {
    const std::int64_t k0 = b * kX16Block, k1 = std::min(K, k0 + kX16Block);
    float mx = 0.f;
    bool finite = true;
    for (std::int64_t k = k0; k < k1; ++k) {
      mx = std::max(mx, std::fabs(x[k]));
      finite = finite && std::isfinite(x[k]);
    }
    if (!finite) {  // NaN scale, zero pairs (a NaN or an infinity must not reach the int conversion)
      xs[b] = std::numeric_limits<float>::quiet_NaN();
      std::fill(q + k0 / 2, q + k1 / 2, 0);
      continue;
    }
    const int e = x16_exponent(mx);
    xs[b] = std::ldexp(1.f, e);
    // x / xs rounded to nearest even: |x / xs| < 32767 < 2^22, so adding and subtracting 1.5 * 2^23 rounds it in float
    // arithmetic (no libm call: nearbyint was ~40% of a small layer's decode call). The product by 2^-e is exact in
    // float unless 2^-e overflows one (e < -126: a block of bfloat16 values below ~2^-111), done in double there.
    const bool tiny = e < -126;
    const float inv = tiny ? 0.f : std::ldexp(1.f, -e);
    const double inv_d = std::ldexp(1.0, -e);
    auto q16 = [&](std::int64_t k) {
      const float v = tiny ? static_cast<float>(static_cast<double>(x[k]) * inv_d) : x[k] * inv;
      const float r = (v + 0x1.8p23f) - 0x1.8p23f;
      return static_cast<std::int32_t>(std::clamp(r, -32767.f, 32767.f));
    };
    for (std::int64_t k = k0; k < k1; k += 8)
      for (int i = 0; i < 4; ++i)
        q[k / 2 + i] = static_cast<std::int32_t>((static_cast<std::uint32_t>(q16(k + i)) & 0xFFFFu) |
                                                 (static_cast<std::uint32_t>(q16(k + i + 4)) << 16));
  }
}

void store_row(const Problem& p, std::int64_t m, std::int64_t n0, const float* v, std::int64_t count) {
  const float* bias = p.w->has_bias() ? p.w->bias.data() + n0 : nullptr;
  auto* dst = static_cast<std::uint16_t*>(p.out) + m * p.out_stride + n0;
  for (std::int64_t i = 0; i < count; ++i) dst[i] = float_to_f16x(p.out_dtype, bias ? v[i] + bias[i] : v[i]);
}
}  // namespace impl

#if !defined(W4A16_CPU_HAVE_AVX2_TU)
namespace impl {
XPrep avx2_xprep(std::int64_t) { return {}; }
void run_avx2(const Problem&) { fail(ErrorCode::internal, "run_avx2 called in a build without the AVX2 kernels"); }
}  // namespace impl
#endif
#if !defined(W4A16_CPU_HAVE_VNNI_TU)
namespace impl {
void run_vnni(const Problem&) { fail(ErrorCode::internal, "run_vnni called in a build without the VNNI kernel"); }
}  // namespace impl
#endif
#if !defined(W4A16_CPU_HAVE_AMX_TU)
namespace impl {
bool amx_usable() { return false; }
void run_amx(const Problem&) { fail(ErrorCode::internal, "run_amx called in a build without the AMX kernel"); }
void run_amx_canonical(const CanonicalView&, DType, const std::uint16_t*, std::int64_t, std::int64_t, float*, std::int64_t, int) {
  fail(ErrorCode::internal, "run_amx_canonical called in a build without the AMX kernel");
}
}  // namespace impl
#endif

}  // namespace w4a16::kernels::cpu
