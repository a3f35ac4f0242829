#include "arrays.hpp"

#include <nanobind/stl/string.h>  // nb::cast<std::string>: without this caster in the TU, the cast throws std::bad_cast

#include <cstring>
#include <memory>

#include "w4a16/core/error.hpp"

namespace w4a16::py {
namespace {

namespace dl = nb::dlpack;

// DLPack device types (dlpack.h): kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3 (pinned host memory),
// kDLCUDAManaged 13 (addressable from the device, where the kernels run).
constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

std::string dl_dtype_name(dl::dtype t) {
  const char* base = "?";
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Int: base = "int"; break;
    case dl::dtype_code::UInt: base = "uint"; break;
    case dl::dtype_code::Float: base = "float"; break;
    case dl::dtype_code::Bfloat: base = "bfloat"; break;
    case dl::dtype_code::Complex: base = "complex"; break;
    case dl::dtype_code::Bool: return "bool";
    default: return "dlpack-code-" + std::to_string(t.code) + "x" + std::to_string(t.bits);
  }
  std::string s = std::string(base) + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

std::optional<DType> dtype_of(dl::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Float:
      if (t.bits == 16) return DType::f16;
      if (t.bits == 32) return DType::f32;
      if (t.bits == 64) return DType::f64;
      break;
    case dl::dtype_code::Bfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case dl::dtype_code::Int:
      if (t.bits == 8) return DType::i8;
      if (t.bits == 16) return DType::i16;
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      break;
    case dl::dtype_code::UInt:
      if (t.bits == 8) return DType::u8;
      break;
    case dl::dtype_code::Bool:
      if (t.bits == 8) return DType::bool_;
      break;
    default: break;
  }
  return std::nullopt;
}

dl::dtype dl_of(DType t) {
  switch (t) {
    case DType::f16: return {(uint8_t)dl::dtype_code::Float, 16, 1};
    case DType::bf16: return {(uint8_t)dl::dtype_code::UInt, 16, 1};  // bits; numpy has no bfloat16
    case DType::f32: return nb::dtype<float>();
    case DType::f64: return nb::dtype<double>();
    case DType::i32: return nb::dtype<std::int32_t>();
    case DType::i64: return nb::dtype<std::int64_t>();
    case DType::i16: return nb::dtype<std::int16_t>();
    case DType::i8: return nb::dtype<std::int8_t>();
    case DType::u8: return nb::dtype<std::uint8_t>();
    case DType::bool_: return nb::dtype<bool>();
  }
  fail(ErrorCode::internal, "to_numpy: unknown DType");
}

template <class A>
std::string describe_any(const A& a) {
  std::string s;
  if (a.device_type() == kDLCUDA || a.device_type() == kDLCUDAManaged) s = "cuda:" + std::to_string(a.device_id()) + " ";
  s += dl_dtype_name(a.dtype());
  std::vector<std::int64_t> shape, stride, contiguous(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<std::int64_t>(a.shape(i)));
  s += " " + shape_str(shape);
  std::int64_t expect = 1;
  bool is_contig = true;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (shape[i] != 1 && a.stride(i) != expect) is_contig = false;
    expect *= shape[i];
  }
  if (!is_contig) {
    for (size_t i = 0; i < a.ndim(); ++i) stride.push_back(a.stride(i));
    s += " strides " + shape_str(stride);
  }
  return s;
}

template <class A>
TensorView view_any(const A& a, std::string_view arg, std::string_view bits16) {
  TensorView v;
  std::optional<DType> dt = dtype_of(a.dtype());
  dl::dtype d = a.dtype();
  if (!dt && d.code == (uint8_t)dl::dtype_code::UInt && d.bits == 16 && d.lanes == 1) {
    if (bits16.empty())
      fail(ErrorCode::dtype_mismatch, arg,
           "float16 or bfloat16 (a uint16 array holds 16-bit float bits only with dtype=\"bfloat16\" or \"float16\")",
           describe_any(a));
    dt = parse_bits16(bits16);
  }
  if (!dt) fail(ErrorCode::dtype_mismatch, arg, "an element type of the library (float16, bfloat16, float32, int32, uint8, ...)", describe_any(a));
  if (a.ndim() > static_cast<size_t>(kMaxRank))
    fail(ErrorCode::invalid_argument, arg, "at most " + std::to_string(kMaxRank) + " dimensions", describe_any(a));
  switch (a.device_type()) {
    case kDLCPU: case kDLCUDAHost: v.device = Device::cpu; break;
    case kDLCUDA: case kDLCUDAManaged: v.device = Device::cuda; break;
    default:
      fail(ErrorCode::invalid_argument, arg, "a CPU or CUDA array",
           "an array on DLPack device type " + std::to_string(a.device_type()));
  }
  v.device_index = a.device_id();
  v.dtype = *dt;
  v.rank = static_cast<int>(a.ndim());
  for (int i = 0; i < v.rank; ++i) {
    v.shape[static_cast<size_t>(i)] = static_cast<std::int64_t>(a.shape(static_cast<size_t>(i)));
    v.stride[static_cast<size_t>(i)] = a.stride(static_cast<size_t>(i));
  }
  v.data = const_cast<void*>(static_cast<const void*>(a.data()));
  return v;
}

template <class T>
NumpyArray vector_to_numpy(std::vector<T>&& v, std::vector<std::int64_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> sh(shape.begin(), shape.end());
  return NumpyArray(heap->data(), sh.size(), sh.data(), owner, nullptr, nb::dtype<T>());
}

}  // namespace

DType parse_bits16(std::string_view bits16) {
  std::optional<DType> d = parse_dtype(bits16);
  if (!d || (*d != DType::f16 && *d != DType::bf16))
    fail(ErrorCode::invalid_argument, "dtype", "\"float16\" or \"bfloat16\" (how to read uint16 bits)",
         "\"" + std::string(bits16) + "\"");
  return *d;
}

std::string describe_array(const InArray& a) { return describe_any(a); }

TensorView to_view(const InArray& a, std::string_view arg, std::string_view bits16) { return view_any(a, arg, bits16); }
TensorView to_view(const OutArray& a, std::string_view arg, std::string_view bits16) { return view_any(a, arg, bits16); }
std::optional<TensorView> to_view(const std::optional<InArray>& a, std::string_view arg, std::string_view bits16) {
  if (!a) return std::nullopt;
  return view_any(*a, arg, bits16);
}

void require_host(const TensorView& t, std::string_view arg) {
  if (t.device != Device::cpu)
    fail(ErrorCode::invalid_argument, arg, "a CPU (host) array: checkpoint converters run on the host",
         "cuda:" + std::to_string(t.device_index) + " " + describe(t));
}

NumpyArray to_numpy(HostTensor&& t) {
  auto* heap = new HostTensor(std::move(t));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
  std::vector<size_t> sh(heap->shape().begin(), heap->shape().end());
  return NumpyArray(heap->data(), sh.size(), sh.data(), owner, nullptr, dl_of(heap->dtype()));
}

NumpyArray to_numpy(std::vector<std::uint8_t>&& v, std::vector<std::int64_t> shape) {
  return vector_to_numpy(std::move(v), std::move(shape));
}
NumpyArray to_numpy(std::vector<std::int32_t>&& v, std::vector<std::int64_t> shape) {
  return vector_to_numpy(std::move(v), std::move(shape));
}

nb::dict layout_numpy(std::vector<LayoutArray>&& arrays) {
  nb::dict out;
  for (LayoutArray& a : arrays) {
    auto* heap = new std::vector<std::uint8_t>(std::move(a.bytes));  // owned by the array: no copy
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
    std::vector<size_t> sh(a.shape.begin(), a.shape.end());
    out[a.name.c_str()] = NumpyArray(heap->data(), sh.size(), sh.data(), owner, nullptr, dl_of(a.dtype));
  }
  return out;
}

std::vector<LayoutView> layout_views(const nb::dict& arrays, std::string_view bits16, std::vector<InArray>* held) {
  std::vector<LayoutView> views;
  for (auto [key, value] : arrays) {
    if (!nb::isinstance<nb::str>(key))
      fail(ErrorCode::invalid_argument, "arrays", "a dict keyed by the layout's array names (str)",
           "a key of type " + std::string(nb::type_name(key.type()).c_str()));
    const std::string name = nb::cast<std::string>(key);
    InArray arr;
    if (!nb::try_cast(value, arr))
      fail(ErrorCode::invalid_argument, name, "an array (numpy, a DLPack capsule not yet consumed, or an object with __dlpack__)",
           "an object of type " + std::string(nb::type_name(value.type()).c_str()));
    views.push_back({name, to_view(arr, name, bits16)});
    if (held) held->push_back(std::move(arr));
  }
  return views;
}

nb::ndarray<nb::numpy, nb::ro> numpy_view(const TensorView& t, nb::handle owner) {
  std::vector<size_t> sh(t.shape.begin(), t.shape.begin() + t.rank);
  return nb::ndarray<nb::numpy, nb::ro>(t.data, sh.size(), sh.data(), owner, t.stride.data(), dl_of(t.dtype));
}

HostTensor copy_to_host(const TensorView& t) {
  require_host(t, "tensor");
  HostTensor h(t.dtype, t.shape_vec());
  const std::size_t es = dtype_size(t.dtype);
  auto* dst = static_cast<unsigned char*>(h.data());
  const auto* src = static_cast<const unsigned char*>(t.data);
  const std::int64_t n = t.numel();
  if (n == 0) return h;
  if (t.is_contiguous()) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * es);
    return h;
  }
  // Generic strided walk; only for small tensors (scales, bias) and non-contiguous inputs.
  std::array<std::int64_t, kMaxRank> idx{};
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = 0;
    for (int d = 0; d < t.rank; ++d) off += idx[static_cast<size_t>(d)] * t.stride[static_cast<size_t>(d)];
    std::memcpy(dst + static_cast<std::size_t>(i) * es, src + off * static_cast<std::int64_t>(es), es);
    for (int d = t.rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < t.shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return h;
}

}  // namespace w4a16::py
