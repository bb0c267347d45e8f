#pragma once
/// @file variable_ops.hpp
/// @brief A variable's reads and writes as ops (TensorFlow's ReadVariableOp, AssignVariableOp,
/// AssignAddVariableOp, AssignSubVariableOp on a resource), which Variable<T> runs through
/// run_op: now, or, while a graph is built, as nodes that hold the variable (TensorFlow's capture
/// by handle) and name the state they use, so that a traced function keeps their program order
/// (Note [Automatic control dependencies] in ops/graph.hpp).

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "devtensor/device/scope.hpp"
#include "devtensor/ops/capture.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/variables/variable_impl.hpp"

namespace devtensor::ops {

/// What a variable's read or write takes: the variable's implementation (a node shares it, so the
/// variable lives as long as a graph that uses it).
template <Element T>
struct VariableAttrs {
  const std::shared_ptr<VariableImpl<T>>& variable;
};

namespace variable_detail {
/// The state `target` holds, read or written.
template <Element T>
std::vector<graph::ResourceUse> uses(const VariableImpl<T>& target, bool writes) {
  std::vector<graph::ResourceUse> out;
  for (const void* r : target.resources()) out.push_back({r, writes});
  return out;
}
}  // namespace variable_detail

/// The value a variable holds (ReadVariableOp): recorded on active tapes as a read of the variable,
/// which they watch when it is trainable. A distributed variable reads the replica's component
/// inside strategy.run; outside, a mirrored one the component on the current device scope's
/// device (else the first), a sync-on-read one its components aggregated. Its node reads the
/// variable's value at every run, the replica's component when it was traced inside
/// strategy.run, placed where the variable is read.
template <Element T>
struct ReadVariable : TensorLevel {
  static constexpr std::string_view name = "ReadVariableOp";
  // Any thread: its kernel sets the DeviceScope it reads under itself.
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = VariableAttrs<T>;

  static Tensor<T> eager(const Attrs& a) {
    Tensor<T> current = a.variable->read();
    if constexpr (FloatingElement<T>)
      if (autodiff::tapes_active()) [[unlikely]]
        return recorded_read(*a.variable, current);
    return current;
  }

  /// The node (defined below: compiled once in compiled mode, Note [Explicit instantiations]).
  static Tensor<T> graph(graph::Graph& graph, const Attrs& a);

  /// `current` (a value of `variable`) as a read returns it: recorded on active tapes as a read of
  /// `variable` (in a node's kernel, a distributed variable's read of one component).
  DEVTENSOR_COLD static Tensor<T> recorded_read(const VariableImpl<T>& variable, const Tensor<T>& current) {
    if constexpr (FloatingElement<T>) {
      if (autodiff::tapes_active()) {
        Tensor<T> read(current.storage(), current.shape());  // a new tensor value per read
        autodiff::TapeTensor handle = autodiff::tape_tensor(current);
        handle.id = variable.info().handle_id;
        autodiff::record_variable_read(handle, autodiff::tape_tensor(read), variable.info().trainable);
        return read;
      }
    }
    return current;
  }
};

/// How a write changes a variable.
enum class VariableWrite { assign, add, sub };

/// A variable's assignment (AssignVariableOp), or its addition or subtraction
/// (AssignAddVariableOp, AssignSubVariableOp). Inside strategy.run a mirrored variable's writes
/// meet in merge_call and their aggregation is written to every component; a sync-on-read
/// variable's stays with the replica's component. Traced there, the replicas' values meet at trace
/// time and one node writes them when the graph runs (VariableImpl::gather_write).
template <Element T, VariableWrite W>
struct WriteVariable : TensorLevel {
  static constexpr std::string_view name = W == VariableWrite::assign ? "AssignVariableOp"
                                           : W == VariableWrite::add  ? "AssignAddVariableOp"
                                                                      : "AssignSubVariableOp";
  // Its kernel may merge replicas' values through the strategy: on the caller's thread.
  static constexpr OpTraits traits{.handles_unknown_dims = true, .stateful = true, .any_thread = false};
  using Attrs = VariableAttrs<T>;

  static std::optional<VariableUpdate> kind() noexcept {
    if constexpr (W == VariableWrite::add)
      return VariableUpdate::add;
    else if constexpr (W == VariableWrite::sub)
      return VariableUpdate::sub;
    else
      return std::nullopt;
  }

  static void eager(const Attrs& a, const Tensor<T>& value) {
    if (const auto k = kind())
      a.variable->update(*k, value);
    else
      a.variable->assign(value);
  }

  /// The node (defined below, as ReadVariable's).
  static void graph(graph::Graph& graph, const Attrs& a, const Tensor<T>& value);
};

template <Element T>
Tensor<T> ReadVariable<T>::graph(graph::Graph& graph, const Attrs& a) {
  VariableImpl<T>& variable = *a.variable;
  VariableImpl<T>& target = variable.read_target();  // inside strategy.run: the replica's component
  const DeviceSpec where = variable.read_device().spec;
  graph::NodeSpec spec{&info_of<ReadVariable>, {{dtype_enum<T>(), variable.component(0).shape()}}};
  spec.device = where;  // placed exactly where the variable is read
  spec.resources = variable_detail::uses(target, false);
  // A tape around the graph's run records the read as one of this variable (its handle id,
  // whatever component was read).
  spec.run = [owner = a.variable, &target, where](const graph::RunContext&, graph::NodeInputs,
                                                  std::span<AnyTensor> out) {
    DeviceScope scope(where);
    out[0] = AnyTensor(recorded_read(*owner, target.read()));
    if (auto* capture = graph::Capture::current())  // a CUDA graph reads this buffer at every replay
      capture->still_valid.push_back([owner, &target, where, at = out[0].storage->data] {
        DeviceScope again(where);
        return target.read().storage()->data == at;
      });
  };
  const Tensor<T> read = graph::add_op(graph, name, {}, std::move(spec)).front().template as<T>();
  if constexpr (FloatingElement<T>) {
    if (autodiff::tapes_active()) {  // a tape inside the trace watches the variable, as eager
      autodiff::TapeTensor handle = autodiff::tape_tensor(read);
      handle.id = variable.info().handle_id;
      autodiff::record_variable_read(handle, autodiff::tape_tensor(read), variable.info().trainable);
    }
  }
  return read;
}

template <Element T, VariableWrite W>
void WriteVariable<T, W>::graph(graph::Graph& graph, const Attrs& a, const Tensor<T>& value) {
  a.variable->gather_write(name, value, [&](const std::vector<Tensor<T>>& values) {
    VariableImpl<T>& target = a.variable->write_target();  // a sync-on-read variable's replica component
    std::vector<AnyTensor> inputs(values.begin(), values.end());
    graph::NodeSpec spec{&info_of<WriteVariable>, {}};
    spec.device = target.device().spec;
    spec.resources = variable_detail::uses(target, true);
    spec.run = [owner = a.variable, &target](const graph::RunContext&, graph::NodeInputs in, std::span<AnyTensor>) {
      std::vector<Tensor<T>> given;
      for (const auto& v : in) given.push_back(v.as<T>());
      target.write_gathered(kind(), given);
    };
    (void)graph::add_op(graph, name, inputs, std::move(spec));
  });
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // the nodes, compiled once (Note [Explicit instantiations])
#define DEVTENSOR_ALL(T)                                                \
  DEVTENSOR_EXTERN_TEMPLATE struct ReadVariable<T>;                     \
  DEVTENSOR_EXTERN_TEMPLATE struct WriteVariable<T, VariableWrite::assign>; \
  DEVTENSOR_EXTERN_TEMPLATE struct WriteVariable<T, VariableWrite::add>;    \
  DEVTENSOR_EXTERN_TEMPLATE struct WriteVariable<T, VariableWrite::sub>;
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
#endif
// clang-format on

}  // namespace devtensor::ops
