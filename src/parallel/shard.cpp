// Sharding of canonical layers and of AWQ/GPTQ checkpoint tensors (include/w4a16/parallel/tp.hpp).
#include <cstring>

#include "w4a16/core/error.hpp"
#include "w4a16/formats/formats.hpp"
#include "w4a16/parallel/tp.hpp"

namespace w4a16::parallel {

std::string_view split_name(Split s) { return s == Split::column ? "column" : "row"; }

void check_split(const QuantSpec& full, const ShardSpec& s) {
  if (s.world < 1) fail(ErrorCode::invalid_argument, "world", "world size >= 1", std::to_string(s.world));
  if (s.rank < 0 || s.rank >= s.world)
    fail(ErrorCode::invalid_argument, "rank", "0 <= rank < " + std::to_string(s.world), std::to_string(s.rank));
  const std::string tp = std::to_string(s.world);
  if (s.split == Split::column) {
    if (full.n % s.world != 0)
      fail(ErrorCode::shape_mismatch, "N", "a multiple of tp = " + tp + " for a column split", std::to_string(full.n));
    if (full.has_zeros() && (full.n / s.world) % 8 != 0)
      fail(ErrorCode::shape_mismatch, "N/tp",
           "a multiple of 8 for a column split of uint4 weights (zero points pack 8 per int32 along N)",
           std::to_string(full.n / s.world) + " (N = " + std::to_string(full.n) + ", tp = " + tp + ")");
    return;
  }
  if (s.world > 1 && full.group_size == kChannelwise)
    fail(ErrorCode::unsupported, "group_size", "grouped weights for a row split (each rank needs whole groups)",
         "channelwise (one group spans all of K)");
  if (full.k % s.world != 0)
    fail(ErrorCode::shape_mismatch, "K", "a multiple of tp = " + tp + " for a row split", std::to_string(full.k));
  const std::int64_t kl = full.k / s.world;
  if (full.group_size != kChannelwise && kl % full.group_size != 0)
    fail(ErrorCode::shape_mismatch, "K/tp", "a multiple of the group size " + std::to_string(full.group_size) + " for a row split",
         std::to_string(kl) + " (K = " + std::to_string(full.k) + ", tp = " + tp + ")");
  if (kl % 8 != 0) fail(ErrorCode::shape_mismatch, "K/tp", "a multiple of 8 for a row split", std::to_string(kl));
}

namespace {

// Copies rows [r0, r0+nr) x byte columns [c0, c0+nc) of a row-major matrix with `row_bytes` per row.
void copy_block(const void* src, std::size_t row_bytes, std::int64_t r0, std::int64_t nr, std::size_t c0, std::size_t nc,
                void* dst, const std::string& name, const ReadObserver& observe) {
  auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  if (c0 == 0 && nc == row_bytes) {  // one contiguous run
    std::memcpy(d, s + static_cast<std::size_t>(r0) * row_bytes, static_cast<std::size_t>(nr) * nc);
    if (observe) observe(name, static_cast<std::size_t>(r0) * row_bytes, static_cast<std::size_t>(nr) * nc);
    return;
  }
  for (std::int64_t r = 0; r < nr; ++r) {
    std::size_t off = static_cast<std::size_t>(r0 + r) * row_bytes + c0;
    std::memcpy(d + static_cast<std::size_t>(r) * nc, s + off, nc);
    if (observe) observe(name, off, nc);
  }
}

HostTensor slice2d(const TensorView& t, const std::string& name, std::int64_t r0, std::int64_t nr, std::int64_t c0,
                   std::int64_t nc, const ReadObserver& observe) {
  HostTensor out(t.dtype, {nr, nc});
  std::size_t es = dtype_size(t.dtype);
  copy_block(t.data, static_cast<std::size_t>(t.shape[1]) * es, r0, nr, static_cast<std::size_t>(c0) * es,
             static_cast<std::size_t>(nc) * es, out.data(), name, observe);
  return out;
}

HostTensor slice1d(const TensorView& t, const std::string& name, std::int64_t b, std::int64_t n, const ReadObserver& observe) {
  HostTensor out(t.dtype, {n});
  std::size_t es = dtype_size(t.dtype);
  copy_block(t.data, static_cast<std::size_t>(t.shape[0]) * es, 0, 1, static_cast<std::size_t>(b) * es,
             static_cast<std::size_t>(n) * es, out.data(), name, observe);
  return out;
}

}  // namespace

Shard shard_canonical(const CanonicalView& full, const ShardSpec& s) {
  if (full.device != Device::cpu) fail(ErrorCode::invalid_argument, "weights", "host canonical weights", "device weights");
  check_split(full.spec, s);
  const QuantSpec& fs = full.spec;
  const std::int64_t G = fs.groups();
  Shard out;
  out.n_full = fs.n;
  out.k_full = fs.k;
  CanonicalTensors t;
  QuantSpec ps = fs;
  std::vector<HostTensor> keep;
  const TensorView qw(const_cast<std::int32_t*>(full.qweight), DType::i32, {fs.n, fs.k / 8});
  const TensorView sc(const_cast<std::uint16_t*>(full.scales), full.scale_dtype, {fs.n, G});
  const TensorView zp = full.zeros.defined() ? TensorView(const_cast<std::int32_t*>(full.zeros.data()), DType::i32, {fs.n / 8, G})
                                             : TensorView();
  const TensorView bias = full.bias ? TensorView(const_cast<std::uint16_t*>(full.bias), full.scale_dtype, {fs.n}) : TensorView();
  if (s.split == Split::column) {
    const std::int64_t nl = fs.n / s.world, n0 = s.rank * nl;
    ps.n = nl;
    out.n_offset = n0;
    keep.push_back(slice2d(qw, "qweight", n0, nl, 0, fs.k / 8, {}));
    keep.push_back(slice2d(sc, "scales", n0, nl, 0, G, {}));
    t.qweight = keep[0].view();
    t.scales = keep[1].view();
    if (zp.data) {
      keep.push_back(slice2d(zp, "zeros", n0 / 8, nl / 8, 0, G, {}));
      t.zeros = keep.back().view();
    }
    if (bias.data) {
      keep.push_back(slice1d(bias, "bias", n0, nl, {}));
      t.bias = keep.back().view();
    }
    if (full.perm) t.perm = TensorView(const_cast<std::int32_t*>(full.perm), DType::i32, {fs.k});
  } else {
    const std::int64_t kl = fs.k / s.world, k0 = s.rank * kl;
    const std::int64_t gl = fs.group_size == kChannelwise ? 1 : kl / fs.group_size;
    const std::int64_t g0 = fs.group_size == kChannelwise ? 0 : k0 / fs.group_size;
    ps.k = kl;
    out.k_offset = k0;
    keep.push_back(slice2d(qw, "qweight", 0, fs.n, k0 / 8, kl / 8, {}));
    keep.push_back(slice2d(sc, "scales", 0, fs.n, g0, gl, {}));
    t.qweight = keep[0].view();
    t.scales = keep[1].view();
    if (zp.data) {
      keep.push_back(slice2d(zp, "zeros", 0, fs.n / 8, g0, gl, {}));
      t.zeros = keep.back().view();
    }
    if (bias.data && s.rank == 0) {
      keep.push_back(slice1d(bias, "bias", 0, fs.n, {}));
      t.bias = keep.back().view();
    }
    if (full.perm) out.input_index.assign(full.perm + k0, full.perm + k0 + kl);
  }
  out.weights = QuantizedLinear::from_tensors(t, ps);
  return out;
}

Shard load_linear_shard(const io::HfCheckpoint& ckpt, const std::string& prefix, const ShardSpec& s,
                        const ReadObserver& observe) {
  const io::LayerInfo& L = ckpt.layer(prefix);
  const io::QuantizationConfig& qc = ckpt.quant_config();
  QuantSpec full{L.n, L.k, L.group_size, L.scalar};
  check_split(full, s);
  const io::TensorStore& st = ckpt.store();
  auto view = [&](const char* suffix) { return st.view(prefix + suffix); };
  auto name = [&](const char* suffix) { return prefix + suffix; };
  const std::int64_t N = L.n, K = L.k, G = full.groups();
  Shard out;
  out.n_full = N;
  out.k_full = K;
  const bool col = s.split == Split::column;
  const std::int64_t nl = col ? N / s.world : N, n0 = col ? s.rank * nl : 0;
  const std::int64_t kl = col ? K : K / s.world, k0 = col ? 0 : s.rank * kl;
  const std::int64_t gl = col || L.group_size == kChannelwise ? G : kl / L.group_size;
  const std::int64_t g0 = col || L.group_size == kChannelwise ? 0 : k0 / L.group_size;
  out.n_offset = n0;
  out.k_offset = k0;

  if (L.act_order && !col) {
    // Sorted-group order is known only from the whole g_idx: load the layer, then shard.
    QuantizedLinear whole = ckpt.load_linear(prefix);
    if (observe)
      for (const char* sfx : {".qweight", ".qzeros", ".scales", ".g_idx", ".bias"})
        if (st.contains(name(sfx))) observe(name(sfx), 0, st.view(name(sfx)).nbytes());
    return shard_canonical(whole.view(), s);
  }

  HostTensor bias;
  if (L.has_bias && (col || s.rank == 0)) bias = slice1d(view(".bias"), name(".bias"), n0, nl, observe);

  if (L.format == io::QuantMethod::awq) {
    // qweight int32 [K, N/8], qzeros int32 [G, N/8], scales [G, N]
    HostTensor qw = slice2d(view(".qweight"), name(".qweight"), k0, kl, n0 / 8, nl / 8, observe);
    HostTensor qz = slice2d(view(".qzeros"), name(".qzeros"), g0, gl, n0 / 8, nl / 8, observe);
    HostTensor sc = slice2d(view(".scales"), name(".scales"), g0, gl, n0, nl, observe);
    formats::AwqTensors t{qw.view(), qz.view(), sc.view(), bias.empty() ? TensorView() : bias.view()};
    out.weights = formats::awq_to_canonical(t, L.group_size);
  } else if (L.format == io::QuantMethod::gptq) {
    // qweight int32 [K/8, N], qzeros int32 [G, N/8], scales [G, N], g_idx int32 [K]
    HostTensor qw = slice2d(view(".qweight"), name(".qweight"), k0 / 8, kl / 8, n0, nl, observe);
    HostTensor sc = slice2d(view(".scales"), name(".scales"), g0, gl, n0, nl, observe);
    HostTensor qz;
    if (st.contains(name(".qzeros"))) qz = slice2d(view(".qzeros"), name(".qzeros"), g0, gl, n0 / 8, nl / 8, observe);
    HostTensor gi;
    if (st.contains(name(".g_idx"))) {
      gi = slice1d(view(".g_idx"), name(".g_idx"), k0, kl, observe);
      for (std::int64_t i = 0; i < kl; ++i) gi.ptr<std::int32_t>()[i] -= static_cast<std::int32_t>(g0);  // local groups
    }
    formats::GptqOptions o;
    o.group_size = L.group_size;
    o.sym = qc.sym;
    o.desc_act = L.act_order;
    o.version = qc.checkpoint_format;
    formats::GptqTensors t{qw.view(), qz.empty() ? TensorView() : qz.view(), sc.view(), gi.empty() ? TensorView() : gi.view(),
                           bias.empty() ? TensorView() : bias.view()};
    out.weights = formats::gptq_to_canonical(t, o);
  } else {
    fail(ErrorCode::format_error, prefix, "an AWQ or GPTQ quantized linear", "an unquantized layer");
  }
  return out;
}

}  // namespace w4a16::parallel
