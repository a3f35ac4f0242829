#include "w4a16/core/tensor.hpp"

#include <cstring>

#include "w4a16/core/error.hpp"

namespace w4a16 {

namespace {
void set_contiguous_strides(TensorView& t) {
  std::int64_t s = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.stride[static_cast<std::size_t>(d)] = s;
    s *= t.shape[static_cast<std::size_t>(d)];
  }
}
template <class Seq>
void init_view(TensorView& t, const Seq& shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    fail(ErrorCode::shape_mismatch, "tensor", "rank <= 4", "rank " + std::to_string(shape.size()));
  t.rank = static_cast<int>(shape.size());
  int d = 0;
  for (auto v : shape) t.shape[static_cast<std::size_t>(d++)] = v;
  set_contiguous_strides(t);
}
}  // namespace

TensorView::TensorView(void* d, DType dt, std::initializer_list<std::int64_t> s, Device dev, int idx)
    : data(d), dtype(dt), device(dev), device_index(idx) {
  init_view(*this, s);
}
TensorView::TensorView(void* d, DType dt, const std::vector<std::int64_t>& s, Device dev, int idx)
    : data(d), dtype(dt), device(dev), device_index(idx) {
  init_view(*this, s);
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[static_cast<std::size_t>(d)];
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    auto i = static_cast<std::size_t>(d);
    if (shape[i] != 1 && stride[i] != s) return false;
    s *= shape[i];
  }
  return true;
}

bool TensorView::is_row_contiguous() const {
  if (rank <= 1) return is_contiguous();
  std::int64_t s = 1;
  for (int d = rank - 1; d >= 1; --d) {
    auto i = static_cast<std::size_t>(d);
    if (shape[i] != 1 && stride[i] != s) return false;
    s *= shape[i];
  }
  return shape[0] <= 1 || stride[0] >= s;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string describe(const TensorView& t) {
  if (t.rank == 0 && t.data == nullptr) return "no tensor";
  std::string s = std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape_vec());
  if (!t.is_contiguous()) {
    std::vector<std::int64_t> st(t.stride.begin(), t.stride.begin() + t.rank);
    s += " strides " + shape_str(st);
  }
  if (t.device == Device::cuda) s += " on cuda:" + std::to_string(t.device_index);
  return s;
}

HostTensor::HostTensor(DType dtype, std::vector<std::int64_t> shape)
    : dtype_(dtype), defined_(true), shape_(std::move(shape)) {
  for (auto v : shape_)
    if (v < 0) fail(ErrorCode::shape_mismatch, "HostTensor", "non-negative extents", shape_str(shape_));
  std::size_t bytes = nbytes();
  storage_.blocks.resize((bytes + 63) / 64);
  if (!storage_.blocks.empty()) std::memset(storage_.data(), 0, storage_.blocks.size() * 64);
}

std::int64_t HostTensor::numel() const {
  if (!defined_) return 0;
  std::int64_t n = 1;
  for (auto v : shape_) n *= v;
  return n;
}

TensorView HostTensor::view() const {
  if (!defined_) return TensorView();
  return TensorView(const_cast<unsigned char*>(storage_.data()), dtype_, shape_);
}

void check_dtype(const TensorView& t, std::string_view arg, DType expected) {
  if (t.dtype != expected) fail(ErrorCode::dtype_mismatch, arg, dtype_name(expected), describe(t));
}

void check_shape(const TensorView& t, std::string_view arg, const std::vector<std::int64_t>& expected,
                 std::string_view expected_text) {
  if (t.shape_vec() != expected) {
    std::string e = std::string(dtype_name(t.dtype)) + " ";
    if (!expected_text.empty()) e += std::string(expected_text) + " = ";
    e += shape_str(expected);
    fail(ErrorCode::shape_mismatch, arg, e, describe(t));
  }
}

void check_contiguous(const TensorView& t, std::string_view arg) {
  if (!t.is_contiguous()) fail(ErrorCode::layout_mismatch, arg, "a contiguous row-major tensor", describe(t));
}

void check_device(const TensorView& t, std::string_view arg, Device expected) {
  if (t.device != expected)
    fail(ErrorCode::invalid_argument, arg, std::string("a tensor on ") + std::string(device_name(expected)),
         describe(t) + (t.device == Device::cpu ? " on cpu" : ""));
}

void check_aligned(const void* p, std::size_t alignment, std::string_view arg) {
  auto v = reinterpret_cast<std::uintptr_t>(p);
  if (v % alignment != 0)
    fail(ErrorCode::alignment, arg, std::to_string(alignment) + "-byte aligned pointer",
         "address with remainder " + std::to_string(v % alignment));
}

std::vector<const TensorView*> check_layout_views(const std::vector<LayoutView>& arrays, const std::vector<LayoutSpec>& specs,
                                                  std::string_view layout) {
  auto want = [&](const LayoutSpec& a) {
    std::string w = std::string(dtype_name(a.dtype)) + " " + shape_str(a.shape) + " on the CUDA device (layout ";
    return w.append(layout).append(")");
  };
  for (const LayoutView& v : arrays) {
    bool known = false;
    for (const LayoutSpec& a : specs) known = known || a.name == v.name;
    if (!known) fail(ErrorCode::invalid_argument, v.name, "no array of that name (layout " + std::string(layout) + ")", describe(v.view));
  }
  std::vector<const TensorView*> out;
  for (const LayoutSpec& a : specs) {  // host checks first: none of them asks a device
    const TensorView* t = nullptr;
    for (const LayoutView& v : arrays)
      if (v.name == a.name) t = &v.view;
    if (!t) fail(ErrorCode::invalid_argument, a.name, want(a), "no array");
    if (t->dtype != a.dtype) fail(ErrorCode::dtype_mismatch, a.name, want(a), describe(*t));
    if (t->shape_vec() != a.shape) fail(ErrorCode::shape_mismatch, a.name, want(a), describe(*t));
    if (!t->is_contiguous()) fail(ErrorCode::layout_mismatch, a.name, want(a) + ", contiguous", describe(*t) + " (strided)");
    if (t->data == nullptr) fail(ErrorCode::invalid_argument, a.name, want(a), "a null data pointer");
    check_aligned(t->data, 16, a.name + ".data");
    out.push_back(t);
  }
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (out[i]->device != Device::cuda)
      fail(ErrorCode::invalid_argument, specs[i].name, want(specs[i]), describe(*out[i]) + " on " + std::string(device_name(out[i]->device)));
  return out;
}

LayoutArray layout_array(const LayoutSpec& spec, const void* src) {
  std::int64_t n = 1;
  for (std::int64_t d : spec.shape) n *= d;
  LayoutArray a{spec.name, spec.dtype, spec.shape, std::vector<std::uint8_t>(static_cast<std::size_t>(n) * dtype_size(spec.dtype))};
  if (src && !a.bytes.empty()) std::memcpy(a.bytes.data(), src, a.bytes.size());
  return a;
}

}  // namespace w4a16
