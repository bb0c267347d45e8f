#pragma once
/// @file op_traits.hpp
/// @brief What an op is besides its kernels (OpTraits: elementwise, a view, stateful, a
/// collective, ...) and the description graph nodes point to (OpInfo), read off each op's
/// definition (ops/op_def.hpp).

#include <concepts>
#include <string_view>
#include <type_traits>

namespace devtensor::ops {

/// What an op is, besides its kernels: one aggregate per op (`static constexpr OpTraits traits{...}`
/// in its definition, or its family's), read by run_op, the graph's passes, the executor and
/// CUDA-graph capture through the op's description (OpInfo) that every graph node points to.
struct OpTraits {
  /// Elementwise over one element type with 1 or 2 inputs: its scalar function may run inside a
  /// fused chain (graph/optimizer.hpp). 0: not elementwise.
  int pointwise_arity = 0;
  /// Its shape function accepts unknown dimensions (a graph's partial shapes).
  bool handles_unknown_dims = false;
  /// Its output shares its input's buffer (Reshape): no body, no buffer of its own.
  bool view = false;
  /// A MatMul: a fusion pass may give cuBLASLt the chain after it as its epilogue.
  bool gemm = false;
  /// It changes state (a variable, the process's output): a traced function runs it at every call
  /// even when no output needs it, after the earlier uses of that state (Note [Automatic control
  /// dependencies] in ops/graph.hpp), and graph passes never fold, merge or fuse it.
  bool stateful = false;
  /// It moves data between devices itself (a collective, a reduction across replicas, a variable
  /// update that reads gradients on every component's device): its inputs are read where they
  /// are, never copied to its device first.
  bool communication = false;
  /// Of those, one whose host code only queues device work that its inputs' shapes and addresses
  /// fix, so a CUDA graph may record it once and replay it (graph/cuda_graph.hpp). Not a
  /// collective across processes, which talks to the others at every run.
  bool capturable = true;
  /// Placed with its input (TensorFlow's pass-through ops: Identity).
  bool pass_through = false;
  /// It has a gradient by nature (comparisons do not): recorded on tapes.
  bool differentiable = true;
  /// Its kernel reads no thread's state (scopes, strategies, tapes), so any thread of a run may
  /// run it (Note [Independent parts run at once] in graph/inter_op.hpp); false: the caller's.
  bool any_thread = true;
};

/// An op's description as graph nodes point to it: its TensorFlow type and its traits. One
/// constant per op type (`info_of<Op>`); ops that exist only inside graphs (Const, Placeholder,
/// fused kernels) have their own.
struct OpInfo {
  std::string_view name;
  OpTraits traits;
};

/// Op's traits: its `traits` aggregate, or the defaults.
template <class Op>
constexpr OpTraits op_traits() noexcept {
  static_assert(
      !requires { Op::is_view; } && !requires { Op::handles_unknown_dims; } && !requires { Op::pointwise_arity; } &&
          !requires { Op::differentiable; } && !requires { Op::is_gemm; },
      "declare an op's properties in its `static constexpr ops::OpTraits traits{...}`");
  if constexpr (requires { Op::traits; }) {
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(Op::traits)>, OpTraits>,
                  "an op's `traits` is an ops::OpTraits");
    return Op::traits;
  } else {
    return {};
  }
}
/// Op's description: what its graph nodes point to.
template <class Op>
inline constexpr OpInfo info_of{Op::name, op_traits<Op>()};

/// The marker of an op whose kernel works on whole tensors rather than on buffers: a variable's
/// read or write, an optimizer's update, a reduction across replicas, a print. Defined as data as
/// well (`name`, `traits`, `Attrs`), with its two halves:
///
///     static R eager(const Attrs&, const Args&...);                       // runs it now
///     static R graph(graph::Graph&, const Attrs&, const Args&...);         // adds its node
///
/// `run_op<Op>(attrs, args...)` (ops/run_op.hpp) calls the one the thread needs; `graph` makes its
/// node with graph::add_op from the op's description, so the node's traits are the op's.
struct TensorLevel {};
template <class Op>
concept TensorLevelOp = std::derived_from<Op, TensorLevel>;

}  // namespace devtensor::ops
