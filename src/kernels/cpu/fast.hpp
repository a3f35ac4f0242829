// The fast CPU W4A16 GEMM: y[M, N] = x[:, perm] . W^T + bias with fp32 accumulation.
//
//   fast_prepare  canonical host view -> FastWeights (layout tag "cpu.fast.v1", a host copy)
//   fast_gemm     x [M, K] act_dtype (float16 | bfloat16), out [M, N] act_dtype; both host,
//                 rows may be strided (stride[1] == 1); any M >= 0; num_threads 0 = all
//   fast_supports every spec that passes QuantSpec::validate (uint4 and uint4b8, group
//                 32/64/128/256/channelwise, any N, K % 8 == 0), act dtype f16 or bf16
//
// Layout "cpu.fast.v1" (rows of W grouped in blocks of kBlockRows = 8 = one AVX2 vector of
// fp32 accumulators, one output row per lane):
//   qweight  u32 [Nb][K/8][8]   word (b, j, l) = canonical word (8b + l, j): the 8 nibbles
//                               q[8b + l, 8j .. 8j + 7] (nibble i = k offset i), so one 32-byte
//                               load gives 8 rows x 8 k and `(v >> 4i) & 15` gives 8 lanes of
//                               rows at k = 8j + i (the AVX2 kernel uses `v & (15 << 4i)`
//                               and pre-scales x by 2^-4i instead, one op fewer)
//   scales   u16 [Nb][G][8]     s[8b + l, g], raw bits of the canonical scale dtype (no rounding)
//   zeros    u32 [Nb][G]        uint4 only: the canonical packed word, nibble l = z[8b + l, g]
//   bias     f32 [Nb * 8]       or empty
//   perm     i32 [K]            act-order or empty; x is gathered once per call
// Nb = ceil(N / 8); padded rows hold q = 0, s = 0, z = 0 and are never written to out.
// Arrays are 64-byte aligned. Scales and zero points stay 16-bit and 4-bit so the bytes a
// decode call streams are the canonical N*K/2 + N*G*2 (+ N*G/2).
//
// Paths (fast.cpp chooses; all accumulate in fp32):
//   AMX-BF16 / INT8 + AVX-512 (fast_amx.cpp), where the CPU has them (Sapphire Rapids and later) and Linux grants the
//     tile state, from kAmxMinM rows of x: 32-row panels dequantized to bf16 (128 + q, exact) 128 k at a time and
//     multiplied by x as bf16 in 16 x 16 tiles, scaled per group in fp32; float16 x on the INT8 tiles (x as int16
//     hi + lo bytes per 128 k, weights as bytes) where the groups are whole 64-k steps, else as an exact bf16 hi + lo.
//   AVX-512 VNNI (fast_vnni.cpp), where the CPU has AVX-512 F/BW/VL + VNNI, up to kVnniMaxM rows of x (every M
//     where there is no AMX): the weights streamed once, 16 rows x 8 k per vector, x as int16 per 128 k (a
//     power-of-two scale) multiplied into nibble pairs by vpdpwssd (int32, exact), scaled per group in fp32.
//   AVX2+FMA+F16C (fast_avx2.cpp), when __builtin_cpu_supports says so at run time:
//     decode   M < kPrefillMinM: reads the packed weights from memory once (a panel is reread
//              from L2 by each further 4 rows of x); x as int16 per 128 k, nibble pairs times x
//              pairs by vpmaddwd (int32 exact), s * (acc - z * sum_k x) at each group's end
//     prefill  M >= kPrefillMinM: 16-row panels dequantized to fp32 in 256-k chunks (L1),
//              reused by every row of a 96-row block of x (6 x 16 register tile)
//   scalar (fast_scalar.cpp): the same math in portable C++.
// Checked by tests/kernels_cpu (w4a16_test_kernels_cpu) against reference_gemm.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "w4a16/core/canonical.hpp"
#include "w4a16/core/tensor.hpp"

namespace w4a16::kernels::cpu {

constexpr std::int64_t kBlockRows = 8;     // rows of W per block: one 8-lane fp32 vector
constexpr std::int64_t kPrefillMinM = 17;  // M at which the dequantize-to-panel path takes over
// x[k] * kNibblePrescale[k % 8]: what a kernel multiplies a nibble masked in place (v & 15 << 4i, i < 7, worth
// q * 2^4i) by; nibble 7 is shifted down instead. Exact (powers of two). The MoE row kernels' x planes.
inline constexpr float kNibblePrescale[8] = {1.f, 0x1p-4f, 0x1p-8f, 0x1p-12f, 0x1p-16f, 0x1p-20f, 0x1p-24f, 1.f};

// M from which `best` runs the AMX kernel where the CPU has one: measured against the AVX2 decode kernel on this
// project's Sapphire-Rapids-class machine (docs/benchmarks/cpu.md): from 2 rows it wins in both dtypes (float16
// 1.08-1.25x, bfloat16 1.2-1.6x); at one row the AVX2 kernel's weight stream is 1.15-1.5x faster.
constexpr std::int64_t kAmxMinM = 2;
// Rows of x up to which `best` runs the VNNI kernel next to AMX, measured on the same machine over the 10 PERF.md
// shapes (docs/benchmarks/cpu.md, 2026-12-05 stop 41): the AMX kernel's time over VNNI's at 4 rows: float16 (INT8
// tiles) median 1.08x (1 shape of 10 faster on AMX), bfloat16 1.29x; at 5 rows float16 0.93x (7 of 10 faster on AMX),
// bfloat16 1.08-1.14x with 3-5 shapes faster on AMX. Without AMX it runs every M: against the AVX2 kernels
// (W4A16_CPU_ISA=vnni on the same machine) 1.2-2.1x at M = 1..16 and 1.2-2.7x from 17 to 256 rows.
constexpr std::int64_t kVnniMaxM = 4;

// 64-byte aligned storage, so 32-byte vector loads never split a cache line.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U> AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U> bool operator==(const AlignedAllocator<U>&) const { return true; }
};
template <class T> using AlignedVector = std::vector<T, AlignedAllocator<T>>;

struct FastWeights {
  static constexpr std::string_view kLayout = "cpu.fast.v1";
  std::string_view layout() const { return kLayout; }

  QuantSpec spec;                     // N, K, group size, scalar type (of this layer)
  DType act_dtype = DType::f16;       // x and out
  DType scale_dtype = DType::f16;     // dtype of the stored scale bits
  std::int64_t blocks = 0;            // Nb = ceil(N / 8)
  AlignedVector<std::uint32_t> qweight;  // [Nb][K/8][8]
  AlignedVector<std::uint16_t> scales;   // [Nb][G][8]
  AlignedVector<std::uint32_t> zeros;    // [Nb][G] (uint4) or empty
  AlignedVector<float> bias;             // [Nb * 8] or empty
  std::vector<std::int32_t> perm;        // [K] or empty

  bool has_bias() const { return !bias.empty(); }
  bool act_order() const { return !perm.empty(); }
  std::size_t bytes() const;  // host memory held by the arrays above
};

// `w` must be a host view; act_dtype float16 or bfloat16. Throws naming the argument.
FastWeights fast_prepare(const CanonicalView& w, DType act_dtype);
// out = x[:, perm] . W^T + bias. Throws naming the argument on any mismatch.
void fast_gemm(const FastWeights& w, const TensorView& x, const TensorView& out, int num_threads = 0);
// True iff fast_prepare/fast_gemm implement this configuration; otherwise *why says which
// condition failed (why may be null).
bool fast_supports(DType act_dtype, const QuantSpec& spec, std::string* why);

// The implementations behind fast_gemm. `best` is what fast_gemm runs: vnni up to kVnniMaxM rows (every M without
// AMX) where this CPU has AVX-512 F/BW/VL + VNNI, amx above (from kAmxMinM) where it has AMX-BF16 and
// AVX-512 F/BW/VL (and Linux grants the tile state), else avx2 where it has AVX2, FMA and F16C (and the library was
// built for x86-64), else scalar. W4A16_CPU_ISA=scalar / avx2 / vnni caps the choice (invalid values throw).
// Tests run every one available.
enum class FastIsa { best, scalar, avx2, vnni, amx };
bool fast_isa_available(FastIsa isa);
std::string_view fast_isa_name(FastIsa isa);  // "amx" / "vnni" / "avx2" / "scalar"; best: what this CPU runs at large M
FastIsa fast_isa_for(FastIsa isa, std::int64_t m);  // the implementation fast_gemm_isa(isa) runs for M = m
// How fast_gemm runs M = m rows of this dtype on this CPU (the implementation and its path), for `explain`.
std::string fast_describe_run(DType act_dtype, std::int64_t m);
std::optional<FastIsa> fast_isa_from_name(std::string_view name);  // "best", "scalar", "avx2", "vnni", "amx"; else nullopt
// The cap W4A16_CPU_ISA sets (read on every call): scalar, avx2, vnni or amx (unset or "amx": no cap), in that order;
// any other value throws invalid_argument naming W4A16_CPU_ISA. The MoE row kernels take the same cap (avx2: nothing
// wider than AVX2; vnni: their AVX-512 kernels but no AMX).
FastIsa fast_isa_cap();
// The AMX kernel straight on a canonical host layer, with no prepared copy (the MoE experts' GEMMs, which keep their
// weights canonical): out fp32 [M, N] (row stride out_stride) = x[:, perm] . W^T + bias, x act_dtype [M, K] (row
// stride x_stride elements). Needs fast_isa_available(FastIsa::amx), else throws `unsupported` naming "isa"; the
// arguments are checked as fast_gemm checks its own.
void amx_gemm_canonical(const CanonicalView& w, DType act_dtype, const std::uint16_t* x, std::int64_t m, std::int64_t x_stride,
                        float* out, std::int64_t out_stride, int num_threads = 0);
// fast_gemm on a named implementation; throws `unsupported` naming `isa` if it is not available.
void fast_gemm_isa(const FastWeights& w, const TensorView& x, const TensorView& out, FastIsa isa, int num_threads = 0);

}  // namespace w4a16::kernels::cpu
