#pragma once
/// @file shape_ops.hpp
/// @brief The shape and data-movement ops, each defined once (ops/op_def.hpp): Reshape and
/// Identity (views), Transpose, ConcatV2, SplitV, Slice, BroadcastTo, Pad and Cast; then reshape,
/// transpose, concat, split, slice, broadcast_to, pad, identity and cast. Their CPU and CUDA bodies
/// (on a GPU every one is a strided copy) are ops/cpu/shape_bodies.hpp and ops/cuda/shape_bodies.cuh.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/arith.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/gradient_helpers.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

namespace shape_detail {
inline std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
}  // namespace shape_detail

/// The same elements with a new shape; one dimension may be -1 (inferred). A view: the output
/// shares the input's buffer, as TensorFlow's reshape does.
struct Reshape : KernelTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Reshape";
  static constexpr OpTraits traits{.handles_unknown_dims = true, .view = true};
  struct Attrs {
    std::vector<std::int64_t> shape;
  };
  /// @throws InvalidArgumentError when the element counts differ.
  static Shape output_shape(const Attrs& attrs, const Shape& input);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {reshape(a.dy[0], a.x[0].shape().dims_vector())};
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Shape Reshape::output_shape(const Attrs& attrs, const Shape& input) {
  std::vector<std::int64_t> out = attrs.shape;
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (inferred >= 0)
        throw InvalidArgumentError("Only one input size may be -1, not both " + std::to_string(inferred) + " and " +
                                   std::to_string(i) + " [Op:Reshape]");
      inferred = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw InvalidArgumentError("Size " + std::to_string(i) + " must be non-negative, not " + std::to_string(out[i]) +
                                 " [Op:Reshape]");
    } else {
      known = checked_mul(known, out[i], "the element count of the requested shape", name);
    }
  }
  const std::int64_t n = input.num_elements();
  if (n < 0) {  // an unknown input dimension (a graph's static shape): the -1 stays unknown
    return Shape::partial(out, name);
  }
  if (inferred >= 0) {
    if (known == 0 || n % known != 0)
      throw InvalidArgumentError("Input to reshape is a tensor with " + std::to_string(n) +
                                 " values, but the requested shape requires a multiple of " + std::to_string(known) +
                                 " [Op:Reshape]");
    out[static_cast<std::size_t>(inferred)] = n / known;
  } else if (known != n) {
    throw InvalidArgumentError("Input to reshape is a tensor with " + std::to_string(n) +
                               " values, but the requested shape has " + std::to_string(known) + " [Op:Reshape]");
  }
  return Shape(out, name);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// The same values on the op's device: a copy under a DeviceScope naming another device, the same
/// buffer otherwise.
struct Identity : KernelTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Identity";
  static constexpr OpTraits traits{.handles_unknown_dims = true, .view = true, .pass_through = true};
  struct Attrs {};
  static const Shape& output_shape(const Attrs&, const Shape& x) noexcept { return x; }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {a.dy[0]};
  }
};

/// Permutes the dimensions; no permutation reverses them.
struct Transpose : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Transpose";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::vector<std::int64_t> perm;
  };
  /// The permutation for a tensor of `rank`. @throws InvalidArgumentError for a permutation of the
  /// wrong length or with repeats.
  static std::vector<std::int64_t> permutation(const Attrs& attrs, std::size_t rank) {
    std::vector<std::int64_t> perm = attrs.perm;
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
                                 shape_detail::dims_string(perm) + " [Op:Transpose]");
    return perm;
  }
  static Shape output_shape(const Attrs& attrs, const Shape& s) {
    std::vector<std::int64_t> dims;
    for (auto p : permutation(attrs, s.rank())) dims.push_back(s[static_cast<std::size_t>(p)]);
    return Shape::partial(dims);
  }
  /// The input's strides in the output's dimension order.
  static std::vector<std::int64_t> source_strides(const Attrs& attrs, const Shape& s) {
    const auto perm = permutation(attrs, s.rank());
    const auto strides = s.strides();
    std::vector<std::int64_t> out(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) out[i] = strides[static_cast<std::size_t>(perm[i])];
    return out;
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto perm = permutation(a.attrs, a.x[0].rank());
    std::vector<std::int64_t> inverse(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
    return {transpose(a.dy[0], inverse)};
  }
};

/// Joins a list of tensors along `axis`.
struct ConcatV2 : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "ConcatV2";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::int64_t axis = 0;
  };
  /// @throws InvalidArgumentError for no inputs, ranks or other dimensions that differ.
  static Shape output_shape(const Attrs& attrs, std::span<const Shape> inputs) {
    if (inputs.empty()) throw InvalidArgumentError("concat needs at least one tensor [Op:ConcatV2]");
    const Shape& first = inputs[0];
    const std::size_t ax = first.axis(attrs.axis, "ConcatOp : Expected concatenating dimensions in the range; axis");
    std::vector<std::int64_t> dims = first.dims_vector();
    dims[ax] = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Shape& s = inputs[i];
      if (s.rank() != first.rank())
        throw InvalidArgumentError(
            "ConcatOp : Ranks of all input tensors should match: shape[0] = " + first.to_string() + " vs. shape[" +
            std::to_string(i) + "] = " + s.to_string() + " [Op:ConcatV2]");
      for (std::size_t d = 0; d < s.rank(); ++d) {
        if (d != ax && s[d] != first[d] && s[d] >= 0 && first[d] >= 0)
          throw InvalidArgumentError("ConcatOp : Dimension " + std::to_string(d) +
                                     " in both shapes must be equal: shape[0] = " + first.to_string() + " vs. shape[" +
                                     std::to_string(i) + "] = " + s.to_string() + " [Op:ConcatV2]");
        if (d != ax && dims[d] < 0) dims[d] = s[d];  // unknown (a graph's static shape): filled in where known
      }
      if (dims[ax] >= 0)
        dims[ax] =
            s[ax] < 0 ? kUnknownDim : checked_add(dims[ax], s[ax], "the size of the concatenated dimension", name);
    }
    return Shape::partial(dims, name);
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const std::size_t axis = a.x[0].shape().axis(a.attrs.axis, "axis");
    std::vector<std::int64_t> sizes;
    for (const auto& x : a.x) sizes.push_back(x.shape()[axis]);
    return split(a.dy[0], sizes, static_cast<std::int64_t>(axis));
  }
};

/// Splits along `axis` into pieces of the given sizes (one may be -1: the rest).
struct Split : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "SplitV";
  struct Attrs {
    std::vector<std::int64_t> sizes;
    std::int64_t axis = 0;
  };
  /// The sizes with -1 resolved. @throws InvalidArgumentError when they do not add up.
  static std::vector<std::int64_t> resolved(const Attrs& attrs, const Shape& s) {
    const std::size_t ax = s.axis(attrs.axis, "split dimension");
    std::vector<std::int64_t> sizes = attrs.sizes;
    std::int64_t total = 0;
    int inferred = -1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && inferred < 0)
        inferred = static_cast<int>(i);
      else if (sizes[i] < 0)
        throw InvalidArgumentError("Split sizes must be >= 0 (one may be -1), got " + shape_detail::dims_string(sizes) +
                                   " [Op:SplitV]");
      else
        total = checked_add(total, sizes[i], "the sum of the split sizes", name);
    }
    if (inferred >= 0 && total <= s[ax])
      sizes[static_cast<std::size_t>(inferred)] = s[ax] - total;
    else if (inferred >= 0 || total != s[ax])
      throw InvalidArgumentError(
          "Determined shape must either match input shape along split_dim exactly "
          "if fully specified, or be less than the size of the input along split_dim "
          "if not fully specified.  Got: " +
          std::to_string(total) + " vs. " + std::to_string(s[ax]) + " [Op:SplitV]");
    return sizes;
  }
  static std::vector<Shape> output_shapes(const Attrs& attrs, const Shape& s) {
    const std::size_t ax = s.axis(attrs.axis, "split dimension");
    std::vector<Shape> out;
    for (auto size : resolved(attrs, s)) {
      std::vector<std::int64_t> box = s.dims_vector();
      box[ax] = size;
      out.emplace_back(box);
    }
    return out;
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {concat(a.dy, static_cast<std::int64_t>(a.x[0].shape().axis(a.attrs.axis, "split dimension")))};
  }
};

/// The box starting at `begin` with `size` elements per axis (-1: to the end).
struct Slice : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Slice";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::vector<std::int64_t> begin;
    std::vector<std::int64_t> size;
  };
  /// @throws InvalidArgumentError for lengths that differ from the rank or a box outside the tensor.
  static Shape output_shape(const Attrs& attrs, const Shape& s) {
    const auto& begin = attrs.begin;
    std::vector<std::int64_t> size = attrs.size;
    if (begin.size() != s.rank() || size.size() != s.rank())
      throw InvalidArgumentError("Expected begin and size arguments to be 1-D tensors of size " +
                                 std::to_string(s.rank()) + ", but got shapes [" + std::to_string(begin.size()) +
                                 "] and [" + std::to_string(size.size()) + "] instead. [Op:Slice]");
    for (std::size_t d = 0; d < s.rank(); ++d) {
      if (s[d] < 0 && begin[d] >= 0 && size[d] >= -1) continue;  // a graph's unknown size: checked when it runs
      // Compared without adding: begin + size may overflow int64.
      if (begin[d] < 0 || begin[d] > s[d])
        throw InvalidArgumentError("Expected begin[" + std::to_string(d) + "] in [0, " + std::to_string(s[d]) +
                                   "], but got " + std::to_string(begin[d]) + " (begin " +
                                   shape_detail::dims_string(begin) + ", shape " + s.to_string() + ") [Op:Slice]");
      if (size[d] == -1) size[d] = s[d] - begin[d];
      if (size[d] < 0 || size[d] > s[d] - begin[d])
        throw InvalidArgumentError("Expected size[" + std::to_string(d) + "] in [0, " +
                                   std::to_string(s[d] - begin[d]) + "], but got " + std::to_string(size[d]) +
                                   " (begin " + shape_detail::dims_string(begin) + ", shape " + s.to_string() +
                                   ") [Op:Slice]");
    }
    return Shape::partial(size);  // -1 where the input's size is unknown and the slice runs to its end
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  /// dy padded back to x's shape. @throws UnimplementedError for an axis of unknown size that the
  /// slice did not take to its end (the padding after it is known only when the graph runs).
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto& begin = a.attrs.begin;
    std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
    for (std::size_t d = 0; d < begin.size(); ++d) {
      const std::int64_t in = a.x[0].shape()[d], out = a.dy[0].shape()[d];
      if (in >= 0 && out >= 0)
        paddings.emplace_back(begin[d], in - begin[d] - out);
      else if (a.attrs.size[d] == -1)
        paddings.emplace_back(begin[d], 0);
      else
        throw UnimplementedError("The gradient of Slice over axis " + std::to_string(d) + " of unknown size, sliced " +
                                 "short of its end, is not supported in a graph; give that dimension's size");
    }
    return {pad(a.dy[0], paddings)};
  }
};

/// `t` repeated along the dimensions where its (left-padded) shape has 1 to reach `shape`.
struct BroadcastTo : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "BroadcastTo";
  struct Attrs {
    Shape shape;
  };
  /// @throws InvalidArgumentError when the input does not broadcast to the shape.
  static Shape output_shape(const Attrs& attrs, const Shape& input) {
    const auto broadcasts = [&] {
      try {
        return broadcast_shapes(input, attrs.shape, name) == attrs.shape;
      } catch (const InvalidArgumentError&) {
        return false;
      }
    };
    if (!broadcasts())
      throw InvalidArgumentError("Unable to broadcast tensor of shape " + input.to_string() + " to tensor of shape " +
                                 attrs.shape.to_string() + " [Op:BroadcastTo]");
    return attrs.shape;
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {unbroadcast(a.dy[0], a.x[0].shape())};
  }
};

/// Zero padding: `paddings[d] = {before, after}` elements around axis d.
struct Pad : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Pad";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  };
  /// @throws InvalidArgumentError for a paddings list of the wrong length or negative paddings.
  static Shape output_shape(const Attrs& attrs, const Shape& s) {
    if (attrs.paddings.size() != s.rank())
      throw InvalidArgumentError("The first dimension of paddings must be the rank of inputs: [" +
                                 std::to_string(attrs.paddings.size()) + ",2] vs. " + s.to_string() + " [Op:Pad]");
    std::vector<std::int64_t> dims = s.dims_vector();
    for (std::size_t d = 0; d < s.rank(); ++d) {
      const auto [before, after] = attrs.paddings[d];
      if (before < 0 || after < 0)
        throw InvalidArgumentError("Paddings must be non-negative: " + std::to_string(before) + " " +
                                   std::to_string(after) + " [Op:Pad]");
      if (dims[d] < 0) continue;  // a graph's unknown size stays unknown
      dims[d] = checked_add(checked_add(dims[d], before, "the padded size of a dimension", name), after,
                            "the padded size of a dimension", name);
    }
    return Shape::partial(dims, name);
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    std::vector<std::int64_t> begin;
    std::vector<std::int64_t> size = a.x[0].shape().dims_vector();
    for (std::size_t d = 0; d < size.size(); ++d) {
      const auto [before, after] = a.attrs.paddings[d];
      begin.push_back(before);
      // An unknown size: to the end of dy when nothing was padded after it.
      if (size[d] < 0 && after != 0)
        throw UnimplementedError("The gradient of Pad over axis " + std::to_string(d) + " of unknown size, padded " +
                                 "after it, is not supported in a graph; give that dimension's size");
    }
    return {slice(a.dy[0], begin, std::move(size))};
  }
};

/// Converts the elements to another type (TensorFlow's Cast): float -> int truncates toward zero
/// and saturates, NaN -> 0 (arith::convert: the GPU's result, defined on every device); nonzero ->
/// true for bool; int64 -> int32 wraps.
struct Cast : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Cast";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    DType to = DType::DT_FLOAT;
  };
  static const Shape& output_shape(const Attrs&, const Shape& x) noexcept { return x; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  /// The output gradient cast back to the input's type (float <-> double).
  static std::vector<autodiff::TapeTensor> erased_gradient(const autodiff::OpRecord& r,
                                                           const std::vector<autodiff::TapeTensor>& dy);
};

using ShapeOps = TypeList<Reshape, Identity, Transpose, ConcatV2, Split, Slice, BroadcastTo, Pad, Cast>;

}  // namespace devtensor::ops

// --- the public functions -----------------------------------------------------------------------

namespace devtensor {

/// The same elements with a new shape; one dimension may be -1 (inferred). Shares the buffer.
/// @throws InvalidArgumentError when the element counts differ.
template <Element T>
Tensor<T> reshape(const Tensor<T>& t, const std::vector<std::int64_t>& dims, const OpOptions& options = {}) {
  return run_op<ops::Reshape>(options, {dims}, t);
}

/// Permutes the dimensions; the default reverses them.
/// @throws InvalidArgumentError for a permutation of the wrong length or with repeats.
template <Element T>
Tensor<T> transpose(const Tensor<T>& t, std::vector<std::int64_t> perm = {}, const OpOptions& options = {}) {
  return run_op<ops::Transpose>(options, {std::move(perm)}, t);
}

/// Joins tensors along `axis`. @throws InvalidArgumentError for no inputs, ranks or other
/// dimensions that differ.
template <Element T>
Tensor<T> concat(const std::vector<Tensor<T>>& values, std::int64_t axis, const OpOptions& options = {}) {
  return run_op_list<ops::ConcatV2>({axis}, values, options);
}

/// Splits along `axis` into pieces of the given sizes (one may be -1: the rest).
/// @throws InvalidArgumentError when the sizes do not add up to the dimension.
template <Element T>
std::vector<Tensor<T>> split(const Tensor<T>& t, std::vector<std::int64_t> sizes, std::int64_t axis = 0,
                             const OpOptions& options = {}) {
  return run_op_outputs<ops::Split>({std::move(sizes), axis}, t, options);
}

/// Splits along `axis` into `num` equal pieces.
/// @throws InvalidArgumentError when `num` does not divide the dimension.
template <Element T>
std::vector<Tensor<T>> split(const Tensor<T>& t, int num, std::int64_t axis = 0, const OpOptions& options = {}) {
  require_defined_inputs(ops::Split::name, t);
  const std::size_t ax = t.shape().axis(axis, "split dimension");
  const std::int64_t dim = t.shape()[ax];
  if (num <= 0 || dim % num != 0)
    throw InvalidArgumentError(
        "Number of ways to split should evenly divide the split dimension, but got "
        "split_dim " +
        std::to_string(axis) + " (size = " + std::to_string(dim) + ") and num_split " + std::to_string(num) +
        " [Op:Split]");
  return split(t, std::vector<std::int64_t>(static_cast<std::size_t>(num), dim / num), axis, options);
}

/// The box starting at `begin` with `size` elements per axis (-1: to the end).
/// @throws InvalidArgumentError for lengths that differ from the rank or a box outside the tensor.
template <Element T>
Tensor<T> slice(const Tensor<T>& t, const std::vector<std::int64_t>& begin, std::vector<std::int64_t> size,
                const OpOptions& options = {}) {
  return run_op<ops::Slice>(options, {begin, std::move(size)}, t);
}

/// `t` repeated along the dimensions where its (left-padded) shape has 1 to reach `shape`.
/// @throws InvalidArgumentError when `t` does not broadcast to `shape`.
template <Element T>
Tensor<T> broadcast_to(const Tensor<T>& t, const Shape& shape, const OpOptions& options = {}) {
  return run_op<ops::BroadcastTo>(options, {shape}, t);
}

/// Zero padding: `paddings[d] = {before, after}` elements added around axis d.
/// @throws InvalidArgumentError for a paddings list of the wrong length or negative paddings.
template <Element T>
Tensor<T> pad(const Tensor<T>& t, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings,
              const OpOptions& options = {}) {
  return run_op<ops::Pad>(options, {paddings}, t);
}

/// The same values on the op's device: a copy under a DeviceScope naming another device, the same
/// buffer otherwise.
template <Element T>
Tensor<T> identity(const Tensor<T>& t, const OpOptions& options = {}) {
  return run_op<ops::Identity>(options, {}, t);
}

/// Converts the elements to U (TensorFlow's Cast): float -> int truncates toward zero and
/// saturates, NaN -> 0 (arith::convert: the GPU's result, defined on every device); nonzero ->
/// true for bool; int64 -> int32 wraps.
template <Element U, Element T>
Tensor<U> cast(const Tensor<T>& t, const OpOptions& options = {}) {
  // A tape may cross this cast back into T: T's gradients must be in the program even when it
  // only differentiates U targets (autodiff::GradientInstaller, defined by autodiff/gradients.hpp;
  // without that header in this file, a tape that crosses it says so).
  if constexpr (FloatingElement<T> && FloatingElement<U> && !std::is_same_v<T, U>) {
    if constexpr (requires { autodiff::GradientInstaller<T>::install(); })
      if (autodiff::tapes_active()) autodiff::GradientInstaller<T>::install();
  }
  return run_op<ops::Cast, U>(options, {dtype_enum<U>()}, t);
}

template <Element T>
template <Element U>
Tensor<U> Tensor<T>::cast() const {
  return devtensor::cast<U>(*this);
}

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::vector<autodiff::TapeTensor> ops::Cast::erased_gradient(
    const autodiff::OpRecord& r, const std::vector<autodiff::TapeTensor>& dy) {
  const auto& g = dy.at(0);
  if (g.dtype == r.inputs.at(0).dtype) return {g};
  // run_op, not cast(): the cast that recorded r installed its input type's gradients already, and
  // cast() here would make every gradient table instantiate the other types'
  const DType to = r.inputs[0].dtype;
  return with_floating_type(to, [&]<class U>() {
    return with_floating_type(g.dtype, [&]<class T>() {
      return std::vector<autodiff::TapeTensor>{autodiff::tape_tensor(run_op<Cast, U>({to}, g.as<T>()))};
    });
  });
}
#endif

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
namespace op_detail {
#define DEVTENSOR_ALL(T)                                                                                          \
  DEVTENSOR_GRAPH_OP(Reshape, T, 1) DEVTENSOR_GRAPH_OP(Transpose, T, 1) DEVTENSOR_GRAPH_OP(Identity, T, 1)        \
  DEVTENSOR_GRAPH_OP(BroadcastTo, T, 1)
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
}  // namespace op_detail
#endif
// clang-format on

}  // namespace devtensor

// The bodies, in files of their own: devtensor/ops/cpu/shape_bodies.hpp (CPU),
// devtensor/ops/cuda/shape_bodies.cuh (CUDA).
#include "devtensor/ops/cpu/shape_bodies.hpp"
#include "devtensor/ops/cuda/shape_bodies.cuh"
