#pragma once
/// @file shape_ops.hpp
/// @brief reshape, transpose, concat, split, slice, identity and cast.

#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/dispatch.hpp"

namespace devtensor {
namespace detail {

/// The cast kernel on host memory (CPU or simulated GPU).
template <Element U, Element T>
Tensor<U> cast_on(const Tensor<T>& x, int device) {
  auto out = Tensor<U>::empty(x.shape(), device, "Cast");
  const T* src = x.data();
  U* dst = out.mutable_data();
  const std::int64_t n = x.num_elements();
  for (std::int64_t i = 0; i < n; ++i) dst[i] = arith::convert<U>(src[i]);
  return out;
}

}  // namespace detail

namespace op_detail {

inline std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

/// dst[i] = src[offset(i)] for every element of a row-major output of `dims`, the source offset
/// advancing by `strides` per output dimension (0 for a broadcast dimension): transpose and
/// broadcast_to.
template <class T>
void strided_gather(const T* src, const std::vector<std::int64_t>& strides, std::span<const std::int64_t> dims, T* dst) {
  const std::size_t rank = dims.size();
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    dst[i] = src[offset];
    for (std::size_t d = rank; d-- > 0;) {  // advance the odometer
      ++index[d];
      offset += strides[d];
      if (index[d] < dims[d]) break;
      offset -= strides[d] * index[d];
      index[d] = 0;
    }
  }
}

/// Copies an n-dimensional box: `dst` (shape `box`, contiguous) from `src` (shape `src_shape`)
/// starting at `begin`.
template <class T>
void copy_box(const T* src, const Shape& src_shape, const std::vector<std::int64_t>& begin,
              const std::vector<std::int64_t>& box, T* dst) {
  const std::size_t rank = box.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const auto strides = src_shape.strides();
  std::int64_t n = 1;
  for (auto d : box) n *= d;
  if (n == 0) return;
  const std::int64_t inner = box[rank - 1];
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t row = 0; row < n / inner; ++row) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += (begin[d] + index[d]) * strides[d];
    std::copy(src + offset, src + offset + inner, dst + row * inner);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < box[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace op_detail

/// The same elements with a new shape; one dimension may be -1 (inferred).
/// @throws InvalidArgumentError when the element counts differ.
template <Element T>
Tensor<T> reshape(const Tensor<T>& t, const std::vector<std::int64_t>& dims) {
  require_defined_inputs(ops::Reshape::name, t);
  std::vector<std::int64_t> out = dims;
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (inferred >= 0)
        throw InvalidArgumentError("Only one input size may be -1, not both " + std::to_string(inferred) +
                                   " and " + std::to_string(i) + " [Op:Reshape]");
      inferred = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw InvalidArgumentError("Size " + std::to_string(i) + " must be non-negative, not " +
                                 std::to_string(out[i]) + " [Op:Reshape]");
    } else {
      known = detail::checked_mul(known, out[i], "the element count of the requested shape", ops::Reshape::name);
    }
  }
  const std::int64_t n = t.num_elements();
  if (inferred >= 0) {
    if (known == 0 || n % known != 0)
      throw InvalidArgumentError("Input to reshape is a tensor with " + std::to_string(n) +
                                 " values, but the requested shape requires a multiple of " +
                                 std::to_string(known) + " [Op:Reshape]");
    out[static_cast<std::size_t>(inferred)] = n / known;
  } else if (known != n) {
    throw InvalidArgumentError("Input to reshape is a tensor with " + std::to_string(n) +
                               " values, but the requested shape has " + std::to_string(known) +
                               " [Op:Reshape]");
  }
  const int device = op_detail::place<ops::Reshape, T>(t);
  // Same device: the result shares the buffer (no copy), as TensorFlow's reshape does.
  const auto x = to_device(t, device, ops::Reshape::name, 0);
  Tensor<T> result(x.storage(), Shape(out, ops::Reshape::name));
  autodiff::record<ops::Reshape>(result, {}, t);
  return result;
}

/// Permutes the dimensions; the default reverses them.
/// @throws InvalidArgumentError for a permutation of the wrong length or with repeats.
template <Element T>
Tensor<T> transpose(const Tensor<T>& t, std::vector<std::int64_t> perm = {}) {
  require_defined_inputs(ops::Transpose::name, t);
  const Shape& s = t.shape();
  const std::size_t rank = s.rank();
  if (perm.empty())
    for (std::size_t i = rank; i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (auto p : perm) {
    if (!valid || p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)]) {
      valid = false;
      break;
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  if (!valid)
    throw InvalidArgumentError("transpose expects a vector of size " + std::to_string(rank) +
                               " that is a permutation of 0.." + std::to_string(rank) + "-1, got " +
                               op_detail::dims_string(perm) + " [Op:Transpose]");
  std::vector<std::int64_t> out_dims;
  for (auto p : perm) out_dims.push_back(s[static_cast<std::size_t>(p)]);
  const Shape out_shape(out_dims);
  const int device = op_detail::place<ops::Transpose, T>(t);
  const auto x = to_device(t, device, ops::Transpose::name, 0);
  auto out = Tensor<T>::empty(out_shape, device, ops::Transpose::name);
  const auto in_strides = s.strides();
  std::vector<std::int64_t> strides(rank);
  for (std::size_t i = 0; i < rank; ++i) strides[i] = in_strides[static_cast<std::size_t>(perm[i])];
  if (auto* body = op_detail::gpu_body<ops::Transpose, T>(out.device_info()))
    body(out.device_info(), x.data(), strides, 0, out.mutable_data(), out_shape.strides(), 0, out_shape.dims());
  else
    op_detail::strided_gather(x.data(), strides, out_shape.dims(), out.mutable_data());
  autodiff::record<ops::Transpose>(out, {.list = perm}, t);
  return out;
}

/// Joins tensors along `axis`. @throws InvalidArgumentError for no inputs, ranks or other
/// dimensions that differ.
template <Element T>
Tensor<T> concat(const std::vector<Tensor<T>>& values, std::int64_t axis) {
  if (values.empty()) throw InvalidArgumentError("concat needs at least one tensor [Op:ConcatV2]");
  require_defined_inputs(ops::ConcatV2::name, values);
  const Shape& first = values[0].shape();
  const std::size_t ax = first.axis(axis, "ConcatOp : Expected concatenating dimensions in the range; axis");
  std::vector<std::int64_t> dims = first.dims_vector();
  dims[ax] = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Shape& s = values[i].shape();
    if (s.rank() != first.rank())
      throw InvalidArgumentError("ConcatOp : Ranks of all input tensors should match: shape[0] = " +
                                 first.to_string() + " vs. shape[" + std::to_string(i) + "] = " +
                                 s.to_string() + " [Op:ConcatV2]");
    for (std::size_t d = 0; d < s.rank(); ++d)
      if (d != ax && s[d] != first[d])
        throw InvalidArgumentError("ConcatOp : Dimension " + std::to_string(d) +
                                   " in both shapes must be equal: shape[0] = " + first.to_string() +
                                   " vs. shape[" + std::to_string(i) + "] = " + s.to_string() +
                                   " [Op:ConcatV2]");
    dims[ax] = detail::checked_add(dims[ax], s[ax], "the size of the concatenated dimension",
                                   ops::ConcatV2::name);
  }
  const Shape out_shape(dims, ops::ConcatV2::name);
  bool small = true;
  for (const auto& v : values) small = small && small_host_int_inputs(v);
  const int device = place_op(kernel_support<ops::ConcatV2, T>, small);
  auto out = Tensor<T>::empty(out_shape, device, ops::ConcatV2::name);
  if (out_shape.num_elements() == 0) {
    // Nothing to copy, and the row loop below would still count `outer` rows: 2^62 of them for
    // [2^62, 0] tensors (found by the op fuzzer).
    autodiff::record_list<ops::ConcatV2>(out, {.axis = static_cast<std::int64_t>(ax)}, values);
    return out;
  }
  if (auto* body = op_detail::gpu_body<ops::ConcatV2, T>(out.device_info())) {
    const auto out_strides = out_shape.strides();
    std::int64_t along = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto x = to_device(values[i], device, ops::ConcatV2::name, static_cast<int>(i));
      body(out.device_info(), x.data(), x.shape().strides(), 0, out.mutable_data(), out_strides,
           along * out_strides[ax], x.shape().dims());
      along += x.shape()[ax];
    }
    autodiff::record_list<ops::ConcatV2>(out, {.axis = static_cast<std::int64_t>(ax)}, values);
    return out;
  }
  std::int64_t outer = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= dims[d];
  std::int64_t inner = 1;
  for (std::size_t d = ax + 1; d < dims.size(); ++d) inner *= dims[d];
  std::int64_t column = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto x = to_device(values[i], device, ops::ConcatV2::name, static_cast<int>(i));
    const std::int64_t width = x.shape()[ax] * inner;
    for (std::int64_t o = 0; o < outer; ++o)
      std::copy(x.data() + o * width, x.data() + (o + 1) * width,
                out.mutable_data() + o * dims[ax] * inner + column);
    column += width;
  }
  autodiff::record_list<ops::ConcatV2>(out, {.axis = static_cast<std::int64_t>(ax)}, values);
  return out;
}

/// Splits along `axis` into pieces of the given sizes (one may be -1: the rest).
/// @throws InvalidArgumentError when the sizes do not add up to the dimension.
template <Element T>
std::vector<Tensor<T>> split(const Tensor<T>& t, std::vector<std::int64_t> sizes, std::int64_t axis = 0) {
  require_defined_inputs(ops::Split::name, t);
  const Shape& s = t.shape();
  const std::size_t ax = s.axis(axis, "split dimension");
  std::int64_t total = 0;
  int inferred = -1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && inferred < 0) inferred = static_cast<int>(i);
    else if (sizes[i] < 0)
      throw InvalidArgumentError("Split sizes must be >= 0 (one may be -1), got " + op_detail::dims_string(sizes) + " [Op:SplitV]");
    else total = detail::checked_add(total, sizes[i], "the sum of the split sizes", ops::Split::name);
  }
  if (inferred >= 0 && total <= s[ax]) sizes[static_cast<std::size_t>(inferred)] = s[ax] - total;
  else if (inferred >= 0 || total != s[ax])
    throw InvalidArgumentError("Determined shape must either match input shape along split_dim exactly "
                               "if fully specified, or be less than the size of the input along split_dim "
                               "if not fully specified.  Got: " + std::to_string(total) + " vs. " +
                               std::to_string(s[ax]) + " [Op:SplitV]");
  const int device = op_detail::place<ops::Split, T>(t);
  const auto x = to_device(t, device, ops::Split::name, 0);
  std::vector<Tensor<T>> out;
  std::vector<std::int64_t> begin(s.rank(), 0);
  for (auto size : sizes) {
    std::vector<std::int64_t> box = s.dims_vector();
    box[ax] = size;
    auto piece = Tensor<T>::empty(Shape(box), device, ops::Split::name);
    if (auto* body = op_detail::gpu_body<ops::Split, T>(piece.device_info()))
      body(piece.device_info(), x.data(), s.strides(), begin[ax] * s.strides()[ax], piece.mutable_data(),
           piece.shape().strides(), 0, piece.shape().dims());
    else
      op_detail::copy_box(x.data(), s, begin, box, piece.mutable_data());
    begin[ax] += size;
    out.push_back(std::move(piece));
  }
  autodiff::record<ops::Split>(out, {.axis = static_cast<std::int64_t>(ax)}, t);
  return out;
}

/// Splits along `axis` into `num` equal pieces.
/// @throws InvalidArgumentError when `num` does not divide the dimension.
template <Element T>
std::vector<Tensor<T>> split(const Tensor<T>& t, int num, std::int64_t axis = 0) {
  require_defined_inputs(ops::Split::name, t);
  const std::size_t ax = t.shape().axis(axis, "split dimension");
  const std::int64_t dim = t.shape()[ax];
  if (num <= 0 || dim % num != 0)
    throw InvalidArgumentError("Number of ways to split should evenly divide the split dimension, but got "
                               "split_dim " + std::to_string(axis) + " (size = " + std::to_string(dim) +
                               ") and num_split " + std::to_string(num) + " [Op:Split]");
  return split(t, std::vector<std::int64_t>(static_cast<std::size_t>(num), dim / num), axis);
}

/// The box starting at `begin` with `size` elements per axis (-1: to the end).
/// @throws InvalidArgumentError for lengths that differ from the rank or a box outside the tensor.
template <Element T>
Tensor<T> slice(const Tensor<T>& t, const std::vector<std::int64_t>& begin, std::vector<std::int64_t> size) {
  require_defined_inputs(ops::Slice::name, t);
  const Shape& s = t.shape();
  if (begin.size() != s.rank() || size.size() != s.rank())
    throw InvalidArgumentError("Expected begin and size arguments to be 1-D tensors of size " +
                               std::to_string(s.rank()) + ", but got shapes [" + std::to_string(begin.size()) +
                               "] and [" + std::to_string(size.size()) + "] instead. [Op:Slice]");
  for (std::size_t d = 0; d < s.rank(); ++d) {
    // Compared without adding: begin + size may overflow int64.
    if (begin[d] < 0 || begin[d] > s[d])
      throw InvalidArgumentError("Expected begin[" + std::to_string(d) + "] in [0, " + std::to_string(s[d]) +
                                 "], but got " + std::to_string(begin[d]) + " (begin " +
                                 op_detail::dims_string(begin) + ", shape " + s.to_string() + ") [Op:Slice]");
    if (size[d] == -1) size[d] = s[d] - begin[d];
    if (size[d] < 0 || size[d] > s[d] - begin[d])
      throw InvalidArgumentError("Expected size[" + std::to_string(d) + "] in [0, " +
                                 std::to_string(s[d] - begin[d]) + "], but got " + std::to_string(size[d]) +
                                 " (begin " + op_detail::dims_string(begin) + ", shape " + s.to_string() +
                                 ") [Op:Slice]");
  }
  const int device = op_detail::place<ops::Slice, T>(t);
  const auto x = to_device(t, device, ops::Slice::name, 0);
  auto out = Tensor<T>::empty(Shape(size), device, ops::Slice::name);
  if (auto* body = op_detail::gpu_body<ops::Slice, T>(out.device_info())) {
    const auto strides = s.strides();
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < s.rank(); ++d) offset += begin[d] * strides[d];
    body(out.device_info(), x.data(), strides, offset, out.mutable_data(), out.shape().strides(), 0,
         out.shape().dims());
  } else
    op_detail::copy_box(x.data(), s, begin, size, out.mutable_data());
  autodiff::record<ops::Slice>(out, {.list = begin}, t);
  return out;
}

/// `t` repeated along the dimensions where its (left-padded) shape has 1 to reach `shape`.
/// @throws InvalidArgumentError when `t` does not broadcast to `shape`.
template <Element T>
Tensor<T> broadcast_to(const Tensor<T>& t, const Shape& shape) {
  require_defined_inputs(ops::BroadcastTo::name, t);
  const auto broadcasts = [&] {
    try {
      return broadcast_shapes(t.shape(), shape, ops::BroadcastTo::name) == shape;
    } catch (const InvalidArgumentError&) {
      return false;
    }
  };
  if (!broadcasts())
    throw InvalidArgumentError("Unable to broadcast tensor of shape " + t.shape().to_string() +
                               " to tensor of shape " + shape.to_string() + " [Op:BroadcastTo]");
  const int device = op_detail::place<ops::BroadcastTo, T>(t);
  const auto x = to_device(t, device, ops::BroadcastTo::name, 0);
  auto out = Tensor<T>::empty(shape, device, ops::BroadcastTo::name);
  const std::int64_t n = shape.num_elements();
  const T* src = x.data();
  T* dst = out.mutable_data();
  if (auto* body = op_detail::gpu_body<ops::BroadcastTo, T>(out.device_info())) {
    body(out.device_info(), src, ops::cpu::detail::broadcast_strides(x.shape(), shape.rank()), 0, dst,
         shape.strides(), 0, shape.dims());
  } else
  if (x.num_elements() == 1) {
    std::fill(dst, dst + n, n > 0 ? src[0] : T{});
  } else if (n > 0) {
    op_detail::strided_gather(src, ops::cpu::detail::broadcast_strides(x.shape(), shape.rank()), shape.dims(), dst);
  }
  autodiff::record<ops::BroadcastTo>(out, {}, t);
  return out;
}

/// Zero padding: `paddings[d] = {before, after}` elements added around axis d.
/// @throws InvalidArgumentError for a paddings list of the wrong length or negative paddings.
template <Element T>
Tensor<T> pad(const Tensor<T>& t, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings) {
  require_defined_inputs(ops::Pad::name, t);
  const Shape& s = t.shape();
  if (paddings.size() != s.rank())
    throw InvalidArgumentError("The first dimension of paddings must be the rank of inputs: [" +
                               std::to_string(paddings.size()) + ",2] vs. " + s.to_string() + " [Op:Pad]");
  std::vector<std::int64_t> dims = s.dims_vector();
  std::vector<std::int64_t> begin(s.rank());
  detail::OpAttrs attrs;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const auto [before, after] = paddings[d];
    if (before < 0 || after < 0)
      throw InvalidArgumentError("Paddings must be non-negative: " + std::to_string(before) + " " +
                                 std::to_string(after) + " [Op:Pad]");
    dims[d] = detail::checked_add(detail::checked_add(dims[d], before, "the padded size of a dimension", ops::Pad::name),
                                  after, "the padded size of a dimension", ops::Pad::name);
    begin[d] = before;
    attrs.list.push_back(before);
    attrs.list.push_back(after);
  }
  const int device = op_detail::place<ops::Pad, T>(t);
  const auto x = to_device(t, device, ops::Pad::name, 0);
  const Shape out_shape(dims, ops::Pad::name);
  auto out = Tensor<T>::empty(out_shape, device, ops::Pad::name);
  T* o = out.mutable_data();
  if (auto* body = op_detail::gpu_body<ops::Pad, T>(out.device_info())) {
    const auto out_strides = out_shape.strides();
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < s.rank(); ++d) offset += begin[d] * out_strides[d];
    body(out.device_info(), x.data(), s.strides(), o, out_shape.num_elements(), out_strides, offset, s.dims());
    autodiff::record<ops::Pad>(out, std::move(attrs), t);
    return out;
  }
  std::fill(o, o + out_shape.num_elements(), T{});
  // Scatter the input rows into the box at `begin` (copy_box's inverse).
  const std::size_t rank = s.rank();
  const std::int64_t n = s.num_elements();
  if (rank == 0) {
    if (n) o[0] = x.data()[0];
  } else if (n > 0) {
    const auto strides = out_shape.strides();
    const std::int64_t inner = s[rank - 1];
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t row = 0; row < n / inner; ++row) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < rank; ++d) offset += (begin[d] + index[d]) * strides[d];
      std::copy(x.data() + row * inner, x.data() + (row + 1) * inner, o + offset);
      for (std::size_t d = rank - 1; d-- > 0;) {
        if (++index[d] < s[d]) break;
        index[d] = 0;
      }
    }
  }
  autodiff::record<ops::Pad>(out, std::move(attrs), t);
  return out;
}

/// The same values on the op's device: a copy under a DeviceScope naming another device, the same
/// buffer otherwise.
template <Element T>
Tensor<T> identity(const Tensor<T>& t) {
  require_defined_inputs(ops::Identity::name, t);
  const int device = op_detail::place<ops::Identity, T>(t);
  const auto x = to_device(t, device, ops::Identity::name, 0);
  Tensor<T> out(x.storage(), x.shape());  // a new tensor value, even when no copy was needed
  autodiff::record<ops::Identity>(out, {}, t);
  return out;
}

/// Converts the elements to U (TensorFlow's Cast): float -> int truncates toward zero and
/// saturates, NaN -> 0 (arith::convert: the GPU's result, defined on every device); nonzero ->
/// true for bool; int64 -> int32 wraps.
template <Element U, Element T>
Tensor<U> cast(const Tensor<T>& t) {
  require_defined_inputs(ops::Cast::name, t);
  const int device = op_detail::place<ops::Cast, T>(t);
  const auto x = to_device(t, device, ops::Cast::name, 0);
  if (auto* body = op_detail::gpu_body<ops::Cast, T>(x.device_info())) {
    auto out = Tensor<U>::empty(x.shape(), device, ops::Cast::name);
    body(x.device_info(), x.data(), out.mutable_data(), dtype_enum<U>(), x.num_elements());
    if constexpr (Floating<T>) autodiff::record<ops::Cast>(out, {}, t);
    return out;
  }
  auto out = detail::cast_on<U>(x, device);
  if constexpr (Floating<T>) autodiff::record<ops::Cast>(out, {}, t);  // float <-> double only
  return out;
}



template <Element T>
template <Element U>
Tensor<U> Tensor<T>::cast() const {
  return devtensor::cast<U>(*this);
}

}  // namespace devtensor
