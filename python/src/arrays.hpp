// Array conversion between Python (numpy, or any DLPack producer through nb::ndarray) and the
// library's TensorView / HostTensor. No copies on the way in: a TensorView points at the
// caller's memory with the caller's strides; the kernels' own checks decide what they accept.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "w4a16/core/tensor.hpp"

namespace w4a16::py {

namespace nb = nanobind;

using InArray = nb::ndarray<nb::ro>;  // any dtype, device and strides, read-only access
using OutArray = nb::ndarray<>;       // written through
using NumpyArray = nb::ndarray<nb::numpy>;

// How a uint16 array is read: numpy has no bfloat16, so bf16 data arrives as its raw bits
// in a uint16 array together with dtype="bfloat16" (or "float16"). "" = uint16 is refused.
DType parse_bits16(std::string_view bits16);  // "", "float16", "bfloat16" (aliases of parse_dtype)

// "float16 [2, 4096]", "uint16 [8]", "cuda:0 float32 [3] strides [2]": for error messages
// about arrays whose dtype the library may not have.
std::string describe_array(const InArray& a);

// A view of the caller's array. Throws dtype_mismatch naming `arg` for element types the
// library has no DType for, invalid_argument for rank > 4 or an unknown device.
TensorView to_view(const InArray& a, std::string_view arg, std::string_view bits16 = "");
TensorView to_view(const OutArray& a, std::string_view arg, std::string_view bits16 = "");
std::optional<TensorView> to_view(const std::optional<InArray>& a, std::string_view arg, std::string_view bits16 = "");

// Converters and writers read host memory: refuse device arrays by name.
void require_host(const TensorView& t, std::string_view arg);

// A numpy array owning `t` (moved). bf16 comes back as uint16 bits (numpy has no bfloat16).
NumpyArray to_numpy(HostTensor&& t);
// A numpy uint8/int32 array owning `v` with the given shape.
NumpyArray to_numpy(std::vector<std::uint8_t>&& v, std::vector<std::int64_t> shape);
NumpyArray to_numpy(std::vector<std::int32_t>&& v, std::vector<std::int64_t> shape);
// A read-only numpy array viewing `t`, kept alive by `owner`.
nb::ndarray<nb::numpy, nb::ro> numpy_view(const TensorView& t, nb::handle owner);

// A contiguous host copy of any host view (honours strides); dtype kept.
HostTensor copy_to_host(const TensorView& t);

// A prepared layout's host arrays (layout_host) as {name: numpy array}, bfloat16 as uint16 bits.
nb::dict layout_numpy(std::vector<LayoutArray>&& arrays);
// {name: array} of a prepared layout (adopt_linear, adopt_moe) as views named by their keys; `held` (if not null) gets
// the arrays themselves, to keep them alive with what runs on them.
std::vector<LayoutView> layout_views(const nb::dict& arrays, std::string_view bits16, std::vector<InArray>* held);

}  // namespace w4a16::py
