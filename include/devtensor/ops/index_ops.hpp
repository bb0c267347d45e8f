#pragma once
/// @file index_ops.hpp
/// @brief The ops whose inputs are values and integer indices: GatherV2 (tf.gather),
/// UnsortedSegmentSum (its gradient's op) and SparseSoftmaxCrossEntropyWithLogits.
///
/// An op defined as data takes inputs of one element type (ops/op_def.hpp), so these are ops of
/// whole tensors (ops::TensorLevel, run by run_op): the eager half places the op, copies its
/// inputs to the device and runs the CPU loop; the graph half adds a node that runs the same code
/// on its device; both record on tapes with the indices (or what the gradient needs) kept for the
/// gradient, as TensorFlow's _GatherV2Grad, _UnsortedSegmentSumGrad and
/// _SparseSoftmaxCrossEntropyWithLogitsGrad. CPU bodies only: on a GPU they run on the CPU under
/// soft placement.

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/cpu/selection.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::ops {

/// The integer types indices may have.
template <class I>
concept IndexElement = std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>;

namespace index_detail {

/// "[1,0]": a flat position in `shape` as TensorFlow prints an index.
inline std::string index_string(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> index(shape.rank());
  for (std::size_t d = shape.rank(); d-- > 0;) {
    index[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < index.size(); ++d) s += (d ? "," : "") + std::to_string(index[d]);
  return s + "]";
}

/// The axis resolved. @throws InvalidArgumentError as TensorFlow's GatherV2.
inline std::size_t resolve_axis(std::int64_t axis, const Shape& params, std::string_view op) {
  const auto rank = static_cast<std::int64_t>(params.rank());
  if (rank == 0) throw InvalidArgumentError("params must be at least 1 dimensional [Op:" + std::string(op) + "]");
  if (axis >= rank || axis < -rank) {
    // The rank the axis needs: axis + 1, or -axis; unsigned, so that any int64 axis is printed.
    const std::uint64_t needed =
        axis >= 0 ? static_cast<std::uint64_t>(axis) + 1 : static_cast<std::uint64_t>(-(axis + 1)) + 1;
    throw InvalidArgumentError("Shape must be at least rank " + std::to_string(needed) + " but is rank " +
                               std::to_string(rank) + " [Op:" + std::string(op) + "]");
  }
  return static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
}

/// out[o, j, i] = params[o, indices[j], i]. @throws InvalidArgumentError for an index outside
/// [0, params' axis size), before writing anything.
template <class I>
void gather(const std::byte* params, std::int64_t outer, std::int64_t axis_size, std::int64_t inner,
            std::size_t element_bytes, const I* indices, const Shape& indices_shape, std::byte* out) {
  const std::int64_t n = indices_shape.num_elements();
  for (std::int64_t j = 0; j < n; ++j)
    if (indices[j] < 0 || indices[j] >= axis_size)
      throw InvalidArgumentError("indices" + index_string(j, indices_shape) + " = " + std::to_string(indices[j]) +
                                 " is not in [0, " + std::to_string(axis_size) + ") [Op:GatherV2]");
  const auto row = static_cast<std::size_t>(inner) * element_bytes;
  if (row == 0) return;  // empty slices: nothing to copy (and empty buffers may be null)
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < n; ++j)
      std::memcpy(out + static_cast<std::size_t>(o * n + j) * row,
                  params + static_cast<std::size_t>(o * axis_size + static_cast<std::int64_t>(indices[j])) * row, row);
}

/// out[o, segments[j], i] += data[o, j, i] over a zeroed out of `num_segments` along the axis;
/// negative segments are dropped (TensorFlow's rule). @throws InvalidArgumentError for a segment
/// at or past num_segments.
template <class T, class I>
void segment_sum(const T* data, std::int64_t outer, std::int64_t inner, const I* segments, const Shape& segments_shape,
                 std::int64_t num_segments, T* out) {
  const std::int64_t n = segments_shape.num_elements();
  for (std::int64_t j = 0; j < n; ++j)
    if (segments[j] >= num_segments)
      throw InvalidArgumentError("segment_ids" + index_string(j, segments_shape) + " = " + std::to_string(segments[j]) +
                                 " is out of range [0, " + std::to_string(num_segments) + ") [Op:UnsortedSegmentSum]");
  std::fill(out, out + outer * num_segments * inner, T{0});
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < n; ++j) {
      if (segments[j] < 0) continue;
      const T* src = data + (o * n + j) * inner;
      T* dst = out + (o * num_segments + static_cast<std::int64_t>(segments[j])) * inner;
      for (std::int64_t i = 0; i < inner; ++i) dst[i] = arith::add(dst[i], src[i]);  // integers wrap, as TensorFlow's
    }
}

/// Adds Op's node over `values` and `indices` with the static `outputs`; when it runs,
/// `compute(device, values, indices)` (Op::run_on, which records on tapes) gives its outputs.
template <class Op, Element T, IndexElement I, class Compute>
std::vector<AnyTensor> add_node(graph::Graph& graph, const Tensor<T>& values, const Tensor<I>& indices,
                                std::vector<graph::OutputSpec> outputs, Compute compute) {
  require_defined_inputs(Op::name, values, indices);
  const AnyTensor inputs[2] = {AnyTensor(values), AnyTensor(indices)};
  graph::NodeSpec spec{&info_of<Op>, std::move(outputs)};
  spec.kernel = &kernel_support<Op, T>;
  spec.run = [compute](const graph::RunContext& context, graph::NodeInputs in, std::span<AnyTensor> out) {
    const auto results = compute(context.device, in[0].as<T>(), in[1].as<I>());
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = AnyTensor(results[k]);
  };
  return graph::add_op(graph, Op::name, inputs, std::move(spec));
}

}  // namespace index_detail

/// Slices of `params` along `axis` at `indices`: the output is params.shape[:axis] + indices.shape
/// + params.shape[axis + 1:] (TensorFlow's GatherV2 with batch_dims 0).
struct GatherV2 : OpTable<AllTypes, NoTypes>, TensorLevel {
  static constexpr std::string_view name = "GatherV2";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::int64_t axis = 0;
  };

  /// @throws InvalidArgumentError for a scalar params or an axis past its rank.
  static Shape output_shape(const Attrs& a, const Shape& params, const Shape& indices) {
    const std::size_t axis = index_detail::resolve_axis(a.axis, params, name);
    std::vector<std::int64_t> dims(params.dims().begin(), params.dims().begin() + static_cast<std::ptrdiff_t>(axis));
    dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
    dims.insert(dims.end(), params.dims().begin() + static_cast<std::ptrdiff_t>(axis) + 1, params.dims().end());
    return Shape::partial(dims, name);
  }

  template <Element T, IndexElement I>
  static Tensor<T> eager(const Attrs& a, const Tensor<T>& params, const Tensor<I>& indices) {
    require_defined_inputs(name, params, indices);
    const Shape shape = output_shape(a, params.shape(), indices.shape());
    return run_on(place_op(kernel_support<GatherV2, T>), a, params, indices, shape);
  }

  template <Element T, IndexElement I>
  static Tensor<T> graph(graph::Graph& graph, const Attrs& a, const Tensor<T>& params, const Tensor<I>& indices) {
    const auto compute = [a](const Device& device, const Tensor<T>& p, const Tensor<I>& i) {
      return std::array{run_on(device, a, p, i, output_shape(a, p.shape(), i.shape()))};
    };
    const Tensor<T> out =
        index_detail::add_node<GatherV2>(graph, params, indices,
                                         {{dtype_enum<T>(), output_shape(a, params.shape(), indices.shape())}}, compute)
            .front()
            .template as<T>();
    record(a, params, indices, out);  // a tape inside a trace: its gradient adds the gradient's nodes
    return out;
  }

  /// The op on `device` (the inputs copied there), recorded on active tapes.
  template <Element T, IndexElement I>
  static Tensor<T> run_on(const Device& device, const Attrs& a, const Tensor<T>& params, const Tensor<I>& indices,
                          Shape shape) {
    const auto p = to_device(params, device, name, 0);
    const auto i = to_device(indices, device, name, 1);
    auto out = Tensor<T>::empty(std::move(shape), device, name);
    const std::size_t axis = index_detail::resolve_axis(a.axis, p.shape(), name);
    const auto [outer, length, inner] = cpu::split_at_axis(p.shape(), axis);
    if (out.num_elements() > 0 || i.num_elements() > 0)
      index_detail::gather(reinterpret_cast<const std::byte*>(p.data()), outer, length, inner, sizeof(T), i.data(),
                           i.shape(), reinterpret_cast<std::byte*>(out.mutable_data()));
    record(a, params, indices, out);
    return out;
  }

  /// On the tapes that watch params: the gradient sums dy's slices back into params' shape at
  /// the gathered positions (an UnsortedSegmentSum along the axis).
  template <Element T, IndexElement I>
  static void record(const Attrs& a, const Tensor<T>& params, const Tensor<I>& indices, const Tensor<T>& out);
};

/// The sum of `data`'s slices along `axis` into `num_segments` slices at the positions `segments`
/// gives (data.shape[:axis] + segments.shape + rest → data.shape[:axis] + [num_segments] + rest):
/// GatherV2's gradient. TensorFlow's UnsortedSegmentSum for axis 0.
struct UnsortedSegmentSum : OpTable<NumericTypes, NoTypes>, TensorLevel {
  static constexpr std::string_view name = "UnsortedSegmentSum";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    std::int64_t axis = 0;
    std::int64_t num_segments = 0;
  };

  /// @throws InvalidArgumentError when data's dimensions from `axis` do not start with the
  /// segments' shape, or for a negative num_segments.
  static Shape output_shape(const Attrs& a, const Shape& data, const Shape& segments) {
    if (a.num_segments < 0)
      throw InvalidArgumentError("num_segments must be non-negative, got " + std::to_string(a.num_segments) +
                                 " [Op:UnsortedSegmentSum]");
    const auto axis = static_cast<std::size_t>(a.axis);
    bool prefix = a.axis >= 0 && data.rank() >= axis + segments.rank();
    for (std::size_t d = 0; prefix && d < segments.rank(); ++d)
      prefix = data[axis + d] == segments[d] || data[axis + d] < 0 || segments[d] < 0;
    if (!prefix)
      throw InvalidArgumentError("data.shape = " + data.to_string() +
                                 " does not start with segment_ids.shape = " + segments.to_string() + " at axis " +
                                 std::to_string(a.axis) + " [Op:UnsortedSegmentSum]");
    std::vector<std::int64_t> dims(data.dims().begin(), data.dims().begin() + static_cast<std::ptrdiff_t>(axis));
    dims.push_back(a.num_segments);
    dims.insert(dims.end(), data.dims().begin() + static_cast<std::ptrdiff_t>(axis + segments.rank()),
                data.dims().end());
    return Shape::partial(dims, name);
  }

  template <Numeric T, IndexElement I>
  static Tensor<T> eager(const Attrs& a, const Tensor<T>& data, const Tensor<I>& segments) {
    require_defined_inputs(name, data, segments);
    const Shape shape = output_shape(a, data.shape(), segments.shape());
    return run_on(place_op(kernel_support<UnsortedSegmentSum, T>), a, data, segments, shape);
  }

  template <Numeric T, IndexElement I>
  static Tensor<T> graph(graph::Graph& graph, const Attrs& a, const Tensor<T>& data, const Tensor<I>& segments) {
    const auto compute = [a](const Device& device, const Tensor<T>& d, const Tensor<I>& s) {
      return std::array{run_on(device, a, d, s, output_shape(a, d.shape(), s.shape()))};
    };
    const Tensor<T> out =
        index_detail::add_node<UnsortedSegmentSum>(
            graph, data, segments, {{dtype_enum<T>(), output_shape(a, data.shape(), segments.shape())}}, compute)
            .front()
            .template as<T>();
    record(a, data, segments, out);
    return out;
  }

  template <Numeric T, IndexElement I>
  static Tensor<T> run_on(const Device& device, const Attrs& a, const Tensor<T>& data, const Tensor<I>& segments,
                          Shape shape) {
    const auto d = to_device(data, device, name, 0);
    const auto s = to_device(segments, device, name, 1);
    auto out = Tensor<T>::empty(std::move(shape), device, name);
    // [outer, the segments' dimensions, inner] around the axis.
    const std::int64_t outer = cpu::split_at_axis(d.shape(), static_cast<std::size_t>(a.axis)).outer;
    std::int64_t inner = 1;
    for (std::size_t k = static_cast<std::size_t>(a.axis) + s.rank(); k < d.rank(); ++k) inner *= d.shape()[k];
    index_detail::segment_sum(d.data(), outer, inner, s.data(), s.shape(), a.num_segments, out.mutable_data());
    record(a, data, segments, out);
    return out;
  }

  /// The gradient: dy gathered back at the segments (TensorFlow's _UnsortedSegmentSumGrad, whose
  /// dropped negative segments get zeros).
  template <Numeric T, IndexElement I>
  static void record(const Attrs& a, const Tensor<T>& data, const Tensor<I>& segments, const Tensor<T>& out);
};

/// The cross-entropy of softmax(logits) against integer labels, per row, and its gradient
/// (softmax - one_hot), computed together as TensorFlow's kernel does: logits [batch, classes],
/// labels [batch]. Each row is shifted by its maximum and its exponentials summed in double.
struct SparseSoftmaxCrossEntropyWithLogits : OpTable<FloatTypes, NoTypes>, TensorLevel {
  static constexpr std::string_view name = "SparseSoftmaxCrossEntropyWithLogits";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {};

  /// The loss's and the backprop's shapes. @throws InvalidArgumentError for logits that are not
  /// [batch, classes] with labels [batch], or no classes (TensorFlow's text).
  static std::array<Shape, 2> output_shapes(const Shape& logits, const Shape& labels) {
    if (logits.rank() != 2 || labels.rank() != 1 || (logits[0] >= 0 && labels[0] >= 0 && logits[0] != labels[0]))
      throw InvalidArgumentError("logits and labels must be [batch, classes] and [batch]: logits " +
                                 logits.to_string() + ", labels " + labels.to_string() + " [Op:" + std::string(name) +
                                 "]");
    if (logits[1] == 0)
      throw InvalidArgumentError("Must have at least one class, but got logits shape " + logits.to_string() +
                                 " [Op:" + std::string(name) + "]");
    const std::int64_t batch = logits[0] >= 0 ? logits[0] : labels[0];
    return {Shape::partial({batch}), Shape::partial({batch, logits[1]})};
  }

  /// The loss; the backprop goes to the tape.
  template <Floating T, IndexElement I>
  static Tensor<T> eager(const Attrs&, const Tensor<T>& logits, const Tensor<I>& labels) {
    require_defined_inputs(name, logits, labels);
    const auto shapes = output_shapes(logits.shape(), labels.shape());
    return run_on(place_op(kernel_support<SparseSoftmaxCrossEntropyWithLogits, T>), logits, labels, shapes)[0];
  }

  template <Floating T, IndexElement I>
  static Tensor<T> graph(graph::Graph& graph, const Attrs&, const Tensor<T>& logits, const Tensor<I>& labels) {
    const auto shapes = output_shapes(logits.shape(), labels.shape());
    const auto compute = [](const Device& device, const Tensor<T>& x, const Tensor<I>& l) {
      return run_on(device, x, l, output_shapes(x.shape(), l.shape()));
    };
    const auto outs = index_detail::add_node<SparseSoftmaxCrossEntropyWithLogits>(
        graph, logits, labels, {{dtype_enum<T>(), shapes[0]}, {dtype_enum<T>(), shapes[1]}}, compute);
    const std::array<Tensor<T>, 2> results{outs[0].template as<T>(), outs[1].template as<T>()};
    record(logits, results);
    return results[0];
  }

  /// Loss and backprop on `device`, recorded on active tapes. @throws InvalidArgumentError for a
  /// label outside [0, classes) (TensorFlow's text, which lists the labels).
  template <Floating T, IndexElement I>
  static std::array<Tensor<T>, 2> run_on(const Device& device, const Tensor<T>& logits, const Tensor<I>& labels,
                                         const std::array<Shape, 2>& shapes) {
    const auto x = to_device(logits, device, name, 0);
    const auto l = to_device(labels, device, name, 1);
    const std::int64_t batch = x.shape()[0], classes = x.shape()[1];
    const I* label = l.data();
    for (std::int64_t b = 0; b < batch; ++b)
      if (label[b] < 0 || label[b] >= classes) {
        std::string values;
        for (std::int64_t k = 0; k < batch; ++k) values += (k ? " " : "") + std::to_string(label[k]);
        throw InvalidArgumentError("Received a label value of " + std::to_string(label[b]) +
                                   " which is outside the valid range of [0, " + std::to_string(classes) +
                                   ").  Label values: " + values + " [Op:" + std::string(name) + "]");
      }
    std::array<Tensor<T>, 2> out{Tensor<T>::empty(shapes[0], device, name), Tensor<T>::empty(shapes[1], device, name)};
    const T* in = x.data();
    T* loss = out[0].mutable_data();
    T* backprop = out[1].mutable_data();
    for (std::int64_t b = 0; b < batch; ++b) {
      const T* row = in + b * classes;
      T* grad = backprop + b * classes;
      T shift = row[0];
      for (std::int64_t c = 1; c < classes; ++c) shift = row[c] > shift ? row[c] : shift;
      double sum = 0;
      for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c] - shift));
      const double log_sum = std::log(sum);
      loss[b] = static_cast<T>(log_sum - static_cast<double>(row[label[b]] - shift));
      for (std::int64_t c = 0; c < classes; ++c)
        grad[c] =
            static_cast<T>(std::exp(static_cast<double>(row[c] - shift) - log_sum)) - (c == label[b] ? T{1} : T{0});
    }
    record(logits, out);
    return out;
  }

  /// On the tapes that watch the logits: d logits = backprop · dloss (per row). The backprop is
  /// kept as a value, so the gradient is not differentiable again (TensorFlow's is).
  template <Floating T>
  static void record(const Tensor<T>& logits, const std::array<Tensor<T>, 2>& out) {
    if (!autodiff::tapes_active()) return;
    auto r = std::make_shared<autodiff::OpRecord>();
    r->op = name;
    r->inputs = {autodiff::tape_tensor(logits)};
    r->outputs = {autodiff::tape_tensor(out[0])};
    r->has_custom_backward = true;
    r->backward = [backprop = out[1]](const std::vector<autodiff::TapeTensor>& dy) {
      const auto per_row = dy[0].as<T>();
      std::vector<std::int64_t> dims = per_row.shape().dims_vector();
      dims.push_back(1);
      return std::vector<autodiff::TapeTensor>{autodiff::tape_tensor(mul(backprop, reshape(per_row, dims)))};
    };
    autodiff::record_on_tapes(std::move(r));
  }
};

}  // namespace devtensor::ops

namespace devtensor {

/// Slices of `params` along `axis` at `indices` (tf.gather with batch_dims 0): the output's shape
/// is params.shape[:axis] + indices.shape + params.shape[axis + 1:]. Differentiable with respect to
/// params (the gradient sums rows gathered twice). @throws InvalidArgumentError for a scalar
/// params, an axis past its rank, or an index outside [0, params.shape[axis]) (TensorFlow's texts).
template <Element T, ops::IndexElement I>
Tensor<T> gather(const Tensor<T>& params, const Tensor<I>& indices, std::int64_t axis = 0) {
  return run_op<ops::GatherV2>({axis}, params, indices);
}

/// The sum of data's slices into `num_segments` slices at the positions `segment_ids` gives
/// (tf.math.unsorted_segment_sum: data's leading dimensions are segment_ids' shape); negative ids
/// are dropped. @throws InvalidArgumentError for shapes that do not pair or an id at or past
/// num_segments.
template <Numeric T, ops::IndexElement I>
Tensor<T> unsorted_segment_sum(const Tensor<T>& data, const Tensor<I>& segment_ids, std::int64_t num_segments) {
  return run_op<ops::UnsortedSegmentSum>({0, num_segments}, data, segment_ids);
}

/// The cross-entropy of softmax(logits) over the last axis against integer labels
/// (tf.nn.sparse_softmax_cross_entropy_with_logits): labels' shape is logits' without the last
/// dimension, the result has labels' shape. Differentiable with respect to logits (once).
/// @throws InvalidArgumentError for shapes that do not pair (TensorFlow's texts), no classes, or a
/// label outside [0, classes).
template <Floating T, ops::IndexElement I>
Tensor<T> sparse_softmax_cross_entropy_with_logits(const Tensor<I>& labels, const Tensor<T>& logits) {
  require_defined_inputs(ops::SparseSoftmaxCrossEntropyWithLogits::name, labels, logits);
  const Shape& x = logits.shape();
  const Shape& l = labels.shape();
  if (l.rank() + 1 != x.rank())
    throw InvalidArgumentError("`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: labels.shape=" +
                               l.to_python() + " of rank " + std::to_string(l.rank()) +
                               " and logits.shape=" + x.to_python() + " of rank " + std::to_string(x.rank()));
  for (std::size_t d = 0; d < l.rank(); ++d)
    if (l[d] != x[d] && l[d] >= 0 && x[d] >= 0)
      throw InvalidArgumentError(
          "`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
          "labels.shape=" +
          l.to_python() + " and logits.shape=" + x.to_python());
  if (x.rank() == 2) return run_op<ops::SparseSoftmaxCrossEntropyWithLogits>({}, logits, labels);
  // Any rank: as rows of the last axis, then back to the labels' shape (TensorFlow's wrapper).
  const auto rows = run_op<ops::SparseSoftmaxCrossEntropyWithLogits>({}, reshape(logits, {-1, x[x.rank() - 1]}),
                                                                     reshape(labels, {-1}));
  return reshape(rows, l.is_fully_defined() ? l.dims_vector() : std::vector<std::int64_t>{-1});
}

namespace ops {

template <Element T, IndexElement I>
void GatherV2::record(const Attrs& a, const Tensor<T>& params, const Tensor<I>& indices, const Tensor<T>& out) {
  if constexpr (Floating<T>) {
    if (!autodiff::tapes_active()) return;
    auto r = std::make_shared<autodiff::OpRecord>();
    r->op = name;
    r->inputs = {autodiff::tape_tensor(params)};
    r->outputs = {autodiff::tape_tensor(out)};
    r->has_custom_backward = true;
    r->backward = [a, indices, params_shape = params.shape()](const std::vector<autodiff::TapeTensor>& dy) {
      const std::size_t axis = index_detail::resolve_axis(a.axis, params_shape, name);
      const UnsortedSegmentSum::Attrs sum{static_cast<std::int64_t>(axis), params_shape[axis]};
      if (sum.num_segments < 0)
        throw UnimplementedError(
            "The gradient of GatherV2 along an axis of unknown size is not supported in a graph; "
            "give that dimension's size");
      return std::vector<autodiff::TapeTensor>{
          autodiff::tape_tensor(run_op<UnsortedSegmentSum>(sum, dy[0].as<T>(), indices))};
    };
    autodiff::record_on_tapes(std::move(r));
  }
}

template <Numeric T, IndexElement I>
void UnsortedSegmentSum::record(const Attrs& a, const Tensor<T>& data, const Tensor<I>& segments,
                                const Tensor<T>& out) {
  if constexpr (Floating<T>) {
    if (!autodiff::tapes_active()) return;
    auto r = std::make_shared<autodiff::OpRecord>();
    r->op = name;
    r->inputs = {autodiff::tape_tensor(data)};
    r->outputs = {autodiff::tape_tensor(out)};
    r->has_custom_backward = true;
    r->backward = [a, segments](const std::vector<autodiff::TapeTensor>& dy) {
      // Negative segments were dropped: their rows get zeros (gathered at 0, then masked).
      const auto clipped = run_op<Maximum>({}, segments, fill<I>(Shape{}, I{0}));
      auto g = run_op<GatherV2>({a.axis}, dy[0].as<T>(), clipped);
      const auto kept = cast<T>(run_op<GreaterEqual>({}, segments, fill<I>(Shape{}, I{0})));
      std::vector<std::int64_t> dims(static_cast<std::size_t>(a.axis), 1);
      for (auto d : segments.shape().dims()) dims.push_back(d);
      dims.resize(g.rank(), 1);
      return std::vector<autodiff::TapeTensor>{autodiff::tape_tensor(mul(g, reshape(kept, dims)))};
    };
    autodiff::record_on_tapes(std::move(r));
  }
}

}  // namespace ops
}  // namespace devtensor
