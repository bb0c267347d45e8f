#pragma once
/// @file op_list.hpp
/// @brief devtensor's ops, as one type list: what covers every op iterates over it (the CUDA
/// translation unit's registrations, GradientTape's gradient table, docs/op_support.md, the
/// gradient and fuzz tests). Each family file defines its ops and its list; nothing else lists
/// ops by hand.

#include <concepts>
#include <cstddef>
#include <string_view>

#include "devtensor/ops/conv.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/depthwise_conv.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/matmul.hpp"
#include "devtensor/ops/nn_ops.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/random.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/selection.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/ops/training_ops.hpp"

namespace devtensor::ops {

using BuiltinOps = Join<CreationOps, ElementwiseOps, LinalgOps, NnOps, ConvOps, DepthwiseOps, ReductionOps,
                        SelectionOps, ShapeOps, RandomOps, TrainingOps>::type;

static_assert([]<class... Ops>(TypeList<Ops...>) { return (std::derived_from<Ops, Builtin> && ...); }(BuiltinOps{}),
              "every op of the list is marked ops::Builtin (GradientTape installs their gradients from it)");
static_assert(
    []<class... Ops>(TypeList<Ops...>) {
      const std::string_view names[] = {Ops::name...};
      for (std::size_t i = 0; i < sizeof...(Ops); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (names[i] == names[j]) return false;
      return true;
    }(BuiltinOps{}),
    "op type names are unique (the kernel registry and the gradient table key on them)");

/// Calls `f.template operator()<Op>()` for every op of `List`.
template <class... Ops, class F>
constexpr void for_each_op(TypeList<Ops...>, F&& f) {
  (f.template operator()<Ops>(), ...);
}

}  // namespace devtensor::ops
