// Non-owning strided tensor views and a small owning host tensor.
// Strides are in elements. Rank <= 4 covers every tensor of this library.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "w4a16/core/dtype.hpp"

namespace w4a16 {

constexpr int kMaxRank = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f16;
  int rank = 0;
  std::array<std::int64_t, kMaxRank> shape{};
  std::array<std::int64_t, kMaxRank> stride{};  // in elements
  Device device = Device::cpu;
  int device_index = 0;

  TensorView() = default;
  // Contiguous row-major view.
  TensorView(void* data, DType dtype, std::initializer_list<std::int64_t> shape, Device device = Device::cpu,
             int device_index = 0);
  TensorView(void* data, DType dtype, const std::vector<std::int64_t>& shape, Device device = Device::cpu,
             int device_index = 0);

  bool defined() const { return data != nullptr || rank > 0; }
  std::int64_t size(int d) const { return shape[static_cast<std::size_t>(d)]; }
  std::int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
  bool is_contiguous() const;
  // Row-major except that the outermost stride may be larger (rows of a matrix with padding).
  bool is_row_contiguous() const;
  std::vector<std::int64_t> shape_vec() const { return {shape.begin(), shape.begin() + rank}; }
  template <class T> T* ptr() const { return static_cast<T*>(data); }
};

// "float16 [4096, 32]"; used in every error message about a tensor.
std::string describe(const TensorView& t);
std::string shape_str(const std::vector<std::int64_t>& shape);

// An owning, contiguous host tensor (64-byte aligned storage).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<std::int64_t> shape);
  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  template <class T> T* ptr() { return reinterpret_cast<T*>(storage_.data()); }
  template <class T> const T* ptr() const { return reinterpret_cast<const T*>(storage_.data()); }
  TensorView view() const;
  bool empty() const { return !defined_; }  // default-constructed: no tensor (a 0-rank scalar is not empty)

 private:
  struct alignas(64) Block { unsigned char b[64]; };
  struct Storage {
    std::vector<Block> blocks;
    unsigned char* data() { return blocks.empty() ? nullptr : blocks.front().b; }
    const unsigned char* data() const { return blocks.empty() ? nullptr : blocks.front().b; }
  };
  DType dtype_ = DType::f16;
  bool defined_ = false;
  std::vector<std::int64_t> shape_;
  Storage storage_;
};

// Argument checks shared by every entry point; each throws a w4a16::Error naming `arg`.
void check_dtype(const TensorView& t, std::string_view arg, DType expected);
void check_shape(const TensorView& t, std::string_view arg, const std::vector<std::int64_t>& expected,
                 std::string_view expected_text = {});
void check_contiguous(const TensorView& t, std::string_view arg);
void check_device(const TensorView& t, std::string_view arg, Device expected);
void check_aligned(const void* p, std::size_t alignment, std::string_view arg);

// Prepared layouts held by the caller (Kernel::layout_host / adopt, CudaMoe::layout_host / adopt): arrays by name.
//   LayoutArray: owned host bytes (what a prepare would upload);
//   LayoutView:  a view of the caller's memory holding those bytes (run in place);
//   LayoutSpec:  what one array of a layout must be.
struct LayoutArray {
  std::string name;
  DType dtype = DType::u8;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;  // row-major, shape's element count x dtype_size(dtype)
};
struct LayoutView {
  std::string name;
  TensorView view;
};
struct LayoutSpec {
  std::string name;
  DType dtype = DType::u8;
  std::vector<std::int64_t> shape;
};

// The views of `arrays` in the order of `specs`, each checked against its spec: no name outside specs, every spec
// present, its dtype and shape, contiguous, non-null, 16-byte aligned; then each one on a CUDA device (the caller checks
// which). Throws naming the first array that differs, with `layout` in what was expected.
std::vector<const TensorView*> check_layout_views(const std::vector<LayoutView>& arrays, const std::vector<LayoutSpec>& specs,
                                                  std::string_view layout);
// A LayoutArray of `spec`: its bytes (sized by the spec) copied from `src`, or zero where src is null.
LayoutArray layout_array(const LayoutSpec& spec, const void* src);

}  // namespace w4a16
