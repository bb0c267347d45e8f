#pragma once
/// @file fusion_traits.hpp
/// @brief What a graph's fusion pass knows of an op's node (graph/optimizer.hpp), read off the op's
/// definition when run_op adds the node: an elementwise op's scalar function, a reduction's rows,
/// a MatMul's transposes.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/kernel_context.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor {

/// Op's scalar function over n elements (graph::Pointwise::Block).
template <class Op, class T>
DEVTENSOR_VECTORIZE void pointwise_block(const void* const* inputs, void* output, std::size_t n) {
  // Never in place (a fused node stages a value it overwrites), so the loops vectorise.
  T* __restrict out = static_cast<T*>(output);
  const T* __restrict a = static_cast<const T*>(inputs[0]);
  if constexpr (ops::op_traits<Op>().pointwise_arity == 1) {
    for (std::size_t i = 0; i < n; ++i) out[i] = ops::scalar_function_t<Op, T>{}(a[i]);
  } else {
    const T* __restrict b = static_cast<const T*>(inputs[1]);
    for (std::size_t i = 0; i < n; ++i) out[i] = ops::scalar_function_t<Op, T>{}(a[i], b[i]);
  }
}
/// What a fusion pass knows of Op's node: its scalar function when it is elementwise over one type.
template <class Op, class O, class T>
constexpr graph::Pointwise pointwise_of() noexcept {
  if constexpr (std::is_same_v<O, T> && (ops::op_traits<Op>().pointwise_arity > 0))
    return {&pointwise_block<Op, T>, ops::op_traits<Op>().pointwise_arity};
  else
    return {};
}

/// out = a + b over n elements: an op that adds a row under some attributes (BiasAdd over the last
/// axis) fuses as this.
template <class T>
DEVTENSOR_VECTORIZE void add_block(const void* const* inputs, void* output, std::size_t n) {
  T* __restrict out = static_cast<T*>(output);
  const T* __restrict a = static_cast<const T*>(inputs[0]);
  const T* __restrict b = static_cast<const T*>(inputs[1]);
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

/// The same with the node's attributes: an op elementwise only under some of them says when
/// (`Op::adds_a_row(attrs)`: its second input is added to every row of its first, as the fused
/// chain broadcasts a suffix).
template <class Op, class O, class T>
graph::Pointwise pointwise_of([[maybe_unused]] const typename Op::Attrs& attrs) {
  if constexpr (requires {
                  { Op::adds_a_row(attrs) } -> std::convertible_to<bool>;
                } &&
                std::is_same_v<O, T> && std::is_floating_point_v<T>)
    return Op::adds_a_row(attrs) ? graph::Pointwise{&add_block<T>, 2} : graph::Pointwise{};
  else
    return pointwise_of<Op, O, T>();
}

/// What a fusion pass knows of a reduction's node: its rows, when it sums or averages the trailing
/// axes of a fully defined float or double input (graph::RowReduction).
template <class Op, class O, class T>
graph::RowReduction row_reduction_of([[maybe_unused]] const typename Op::Attrs& attrs,
                                     [[maybe_unused]] const Shape& input) {
  if constexpr (requires {
                  { Op::kind } -> std::convertible_to<ops::Reduction>;
                } &&
                std::is_same_v<O, T> && std::is_floating_point_v<T>) {
    if ((Op::kind != ops::Reduction::sum && Op::kind != ops::Reduction::mean) || !input.is_fully_defined() ||
        input.num_elements() <= 0)
      return {};
    const std::vector<bool> reduced = Op::reduced(attrs, input);
    std::size_t first = reduced.size();  // the trailing reduced axes start here
    while (first > 0 && reduced[first - 1]) --first;
    if (first == reduced.size() || std::find(reduced.begin(), reduced.begin() + static_cast<std::ptrdiff_t>(first),
                                             true) != reduced.begin() + static_cast<std::ptrdiff_t>(first))
      return {};
    std::int64_t row = 1;
    for (std::size_t d = first; d < reduced.size(); ++d) row *= input[d];
    return {row, Op::kind == ops::Reduction::mean};
  }
  return {};
}

/// What a fusion pass knows of a MatMul's node: its transposes (graph::GemmAttrs).
template <class Op>
graph::GemmAttrs gemm_of([[maybe_unused]] const typename Op::Attrs& attrs) {
  if constexpr (ops::op_traits<Op>().gemm) return {true, attrs.transpose_a, attrs.transpose_b};
  return {};
}

}  // namespace devtensor
