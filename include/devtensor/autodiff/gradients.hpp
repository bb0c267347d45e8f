#pragma once
/// @file gradients.hpp
/// @brief Where GradientTape finds an op's gradient: in the op's own definition (ops/op_def.hpp),
/// by the op's type. devtensor's ops get theirs installed into their OpKind the first time a tape
/// differentiates (from the op list, so that running an op never instantiates a gradient); an op a
/// user defines as data carries its own in the record; autodiff::record_operation's backward
/// function is the record's.

#include <atomic>
#include <string_view>

#include "devtensor/ops/op_list.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor {
namespace autodiff_detail {

using GradientOps = ops::Join<ops::BuiltinOps, ops::TapeOnlyOps>::type;

/// Installs the gradient of every devtensor op into its OpKind, once per program. A template so
/// that only a translation unit which differentiates (GradientTape::gradient) instantiates the
/// gradients of every op; merely including the header does not. In compiled mode
/// (Note [Compiled mode]) src/devtensor.cpp instantiates it, once.
template <class OpList = GradientOps>
void install_gradients();

#if DEVTENSOR_HEADER_DEFINITIONS
template <class OpList>
void install_gradients() {
  static const bool installed = [] {
    [&]<class... Ops>(ops::TypeList<Ops...>) {  // not for_each_op: nvcc warns on its template lambda
      (detail::op_kind<Ops>.gradient.store(op_detail::gradient_of<Ops>(), std::memory_order_release), ...);
    }(OpList{});
    return true;
  }();
  (void)installed;
}
#endif

/// The gradient of what `record` recorded, or nullptr when its op has none.
inline detail::ErasedGradient* gradient_for(const detail::OpRecord& record) noexcept {
  if (record.gradient) return record.gradient;
  return record.kind ? record.kind->gradient.load(std::memory_order_acquire) : nullptr;
}

/// Op has a gradient (without instantiating it).
template <class Op>
constexpr bool has_gradient_v =
    requires { &Op::erased_gradient; } || ops::HasGradient<Op, float> || ops::HasGradient<Op, double>;

}  // namespace autodiff_detail

/// True when GradientTape can differentiate devtensor's op `op_name` (TensorFlow's op name, e.g.
/// "MatMul").
[[nodiscard]] bool has_gradient(std::string_view op_name) noexcept;

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION bool has_gradient(std::string_view op_name) noexcept {
  return [&]<class... Ops>(ops::TypeList<Ops...>) {
    return ((Ops::name == op_name && autodiff_detail::has_gradient_v<Ops>) || ...);
  }(autodiff_detail::GradientOps{});
}
#endif

}  // namespace devtensor
