#pragma once
/// @file gradients.hpp
/// @brief Where GradientTape finds an op's gradient: in the op's own definition (ops/op_def.hpp),
/// by the op's type. devtensor's ops get theirs installed into their OpKind the first time a tape
/// differentiates (from the op list, so that running an op never instantiates a gradient); an op a
/// user defines as data carries its own in the record; autodiff::record_operation's backward
/// function is the record's.

#include <atomic>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/run_op.hpp"
// Every op's definition, for the gradient table. Compiled mode (Note [Compiled mode]) builds the
// table in src/devtensor.cpp: a program that only differentiates does not parse every op family.
#if DEVTENSOR_HEADER_DEFINITIONS
#include "devtensor/ops/op_list.hpp"
#endif

namespace devtensor {
namespace autodiff_detail {

#if DEVTENSOR_HEADER_DEFINITIONS
using GradientOps = ops::Join<ops::BuiltinOps, ops::TapeOnlyOps>::type;
#endif

/// Op's gradient for outputs of element type T, or nullptr when it has none: its own erased form
/// (ops whose inputs and outputs differ in type, such as Cast), else the typed one from its
/// definition.
template <class Op, class T>
constexpr autodiff::ErasedGradient* gradient_of_type() noexcept {
  if constexpr (requires { &Op::erased_gradient; })
    return &Op::erased_gradient;
  else if constexpr (ops::HasGradient<Op, T>)
    return &autodiff::typed_gradient<Op, T>;
  else
    return nullptr;
}

/// Installs the gradient of every devtensor op for outputs of element type T into its OpKind,
/// once per program and type. A template so that only a translation unit which differentiates a
/// T target (GradientTape::gradient) instantiates the gradients of every op for T; merely
/// including the header does not. In compiled mode (Note [Compiled mode]) src/devtensor.cpp
/// instantiates it for float and double, once.
template <class OpList, class T>
void install_gradients();

#if DEVTENSOR_HEADER_DEFINITIONS
template <class OpList, class T>
void install_gradients() {
  static const bool installed = [] {
    constexpr std::size_t slot = autodiff::gradient_slot(dtype_enum<T>());
    [&]<class... Ops>(ops::TypeList<Ops...>) {  // not for_each_op: nvcc warns on its template lambda
      (autodiff::op_kind<Ops>.gradient[slot].store(gradient_of_type<Ops, T>(), std::memory_order_release), ...);
    }(OpList{});
    autodiff::gradients_installed[slot].store(true, std::memory_order_release);
    return true;
  }();
  (void)installed;
}
#endif

/// Installs T's gradients of every devtensor op (install_gradients over the op list), once per
/// program. Compiled mode: src/devtensor.cpp instantiates it for float and double.
template <class T>
void install_builtin_gradients();

#if DEVTENSOR_HEADER_DEFINITIONS
template <class T>
void install_builtin_gradients() {
  install_gradients<GradientOps, T>();
}
#endif

/// The gradient of what `record` recorded, or nullptr when its op has none (or this program has
/// not installed its type's gradients: autodiff::gradients_installed).
inline autodiff::ErasedGradient* gradient_for(const autodiff::OpRecord& record) noexcept {
  if (record.gradient) return record.gradient;
  if (!record.kind || record.outputs.empty()) return nullptr;
  return record.kind->gradient[autodiff::gradient_slot(record.outputs.front().dtype)].load(std::memory_order_acquire);
}

/// Op has a gradient (without instantiating it).
template <class Op>
constexpr bool has_gradient_v = requires {
  &Op::erased_gradient;
}
|| ops::HasGradient<Op, float> || ops::HasGradient<Op, double>;

}  // namespace autodiff_detail

namespace autodiff {
/// Defines what ops/record.hpp declares: installing element type T's gradients of every op.
template <class T>
struct GradientInstaller {
  static void install() { autodiff_detail::install_builtin_gradients<T>(); }
};
}  // namespace autodiff

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
