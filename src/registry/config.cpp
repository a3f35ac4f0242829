// LinearConfig: construction from canonical weights, the one-line description, the
// consistency rules every kernel checks first, and the weights-vs-config guard of prepare().
#include "w4a16/registry/config.hpp"

#include <string>

#include "w4a16/core/error.hpp"

namespace w4a16 {

LinearConfig LinearConfig::from(const CanonicalView& w, DType act_dtype, Device device, int capability) {
  LinearConfig c;
  c.k_full = c.k = w.spec.k;
  c.n_full = c.n = w.spec.n;
  c.scalar = w.spec.scalar;
  c.act_dtype = act_dtype;
  c.out_dtype = act_dtype;  // W4A16: y has the activations' dtype
  c.group_size = w.spec.group_size;
  c.has_zeros = w.spec.has_zeros();
  c.act_order = w.act_order();
  c.has_bias = w.has_bias();
  c.device = device;
  c.capability = device == Device::cpu ? 0 : capability;
  return c;
}

static std::string group_text(int g) { return g == kChannelwise ? std::string("channelwise") : std::to_string(g); }

std::string LinearConfig::describe() const {
  std::string s = "N=" + std::to_string(n) + " K=" + std::to_string(k);
  if (n != n_full || k != k_full) s += " (of N=" + std::to_string(n_full) + " K=" + std::to_string(k_full) + ")";
  s += " g=" + group_text(group_size) + " " + std::string(scalar_type_name(scalar));
  if (has_zeros != (scalar == ScalarType::uint4)) s += has_zeros ? " +zeros" : " -zeros";
  s += " act=" + std::string(dtype_name(act_dtype)) + " out=" + std::string(dtype_name(out_dtype));
  if (has_bias) s += " +bias";
  if (act_order) s += " +act_order";
  s += " on " + std::string(device_name(device));
  if (device == Device::cuda) s += " sm_" + std::to_string(capability);
  return s;
}

std::string LinearConfig::invalid_reason() const {
  if (!is_supported_group_size(group_size))
    return "group_size " + std::to_string(group_size) + " not in {32, 64, 128, 256, channelwise}";
  if (n <= 0 || k <= 0) return "N and K must be > 0 (N=" + std::to_string(n) + " K=" + std::to_string(k) + ")";
  if (k % 8 != 0) return "K=" + std::to_string(k) + " not a multiple of 8 (8 nibbles per int32)";
  if (group_size != kChannelwise && k % group_size != 0)
    return "K=" + std::to_string(k) + " not a multiple of group_size " + std::to_string(group_size);
  if (has_zeros != (scalar == ScalarType::uint4))
    return std::string("has_zeros=") + (has_zeros ? "true" : "false") + " contradicts scalar type " +
           std::string(scalar_type_name(scalar)) + " (zero points exist iff uint4)";
  if (has_zeros && n % 8 != 0)
    return "N=" + std::to_string(n) + " not a multiple of 8 (uint4 zero points pack 8 per int32 along N)";
  if (n_full < n || k_full < k)
    return "partition N=" + std::to_string(n) + " K=" + std::to_string(k) + " larger than the layer N=" +
           std::to_string(n_full) + " K=" + std::to_string(k_full);
  if (device == Device::cpu && capability != 0)
    return "capability " + std::to_string(capability) + " given for a CPU config (must be 0)";
  return {};
}

void check_weights_match(const CanonicalView& w, const LinearConfig& c, std::string_view arg) {
  std::string a(arg);
  auto mismatch = [&](std::string_view what, const std::string& want, const std::string& got) {
    fail(ErrorCode::invalid_argument, a + "." + std::string(what), want + " (as in the config " + c.describe() + ")",
         got);
  };
  if (w.spec.n != c.n) mismatch("N", std::to_string(c.n), std::to_string(w.spec.n));
  if (w.spec.k != c.k) mismatch("K", std::to_string(c.k), std::to_string(w.spec.k));
  if (w.spec.group_size != c.group_size)
    mismatch("group_size", group_text(c.group_size), group_text(w.spec.group_size));
  if (w.spec.scalar != c.scalar)
    mismatch("scalar", std::string(scalar_type_name(c.scalar)), std::string(scalar_type_name(w.spec.scalar)));
  if (w.zeros.defined() != c.has_zeros)
    mismatch("zeros", c.has_zeros ? "packed zero points" : "no zero points",
             w.zeros.defined() ? "packed zero points" : "none");
  if (w.has_bias() != c.has_bias) mismatch("bias", c.has_bias ? "a bias" : "no bias", w.has_bias() ? "a bias" : "none");
  if (w.act_order() != c.act_order)
    mismatch("perm", c.act_order ? "an act-order perm" : "no perm", w.act_order() ? "a perm" : "none");
}

}  // namespace w4a16
