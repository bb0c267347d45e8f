#pragma once
/// @file graph_node.hpp
/// @brief A graph's node (graph::Node): TensorFlow's NodeDef (its op's description, inputs,
/// requested device, outputs), how it runs (a type-erased kernel over the executor's values), the
/// state it uses and what fusion passes know of it; and the descriptions of the nodes that only
/// graphs have (Const, Placeholder, a function's results).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "devtensor/device/spec.hpp"
#include "devtensor/ops/op_traits.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::graph {

/// Where a node's input comes from: output `output` of node `node`.
struct Edge {
  std::size_t node = 0;
  std::size_t output = 0;
  friend bool operator==(const Edge&, const Edge&) = default;
};

/// The variables of a graph's run (TF1: a session's resource container): values by the variable's
/// shared name. Thread-safe.
class ResourceStore {
 public:
  [[nodiscard]] std::optional<AnyTensor> find(const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  void assign(const std::string& name, AnyTensor value) {
    std::lock_guard lock(mutex_);
    values_[name] = std::move(value);
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, AnyTensor> values_;
};

/// What a node's kernel runs with: the node's device and the run's variables.
struct RunContext {
  const Device& device;
  ResourceStore* resources = nullptr;
};

/// A node's inputs for its kernel: the values where the executor keeps them (no copies).
class NodeInputs {
 public:
  NodeInputs(const AnyTensor* const* values, std::size_t size) noexcept : values_(values), size_(size) {}
  [[nodiscard]] const AnyTensor& operator[](std::size_t i) const noexcept { return *values_[i]; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  struct Iterator {
    const AnyTensor* const* at;
    const AnyTensor& operator*() const noexcept { return **at; }
    Iterator& operator++() noexcept {
      ++at;
      return *this;
    }
    friend bool operator==(const Iterator&, const Iterator&) = default;
  };
  [[nodiscard]] Iterator begin() const noexcept { return {values_}; }
  [[nodiscard]] Iterator end() const noexcept { return {values_ + size_}; }

 private:
  const AnyTensor* const* values_;
  std::size_t size_;
};

/// Runs a node once: its inputs (already on the context's device) in, its outputs written to
/// `outputs` (one slot per output; the executor owns them, so a run allocates no vectors per node).
/// A slot may hold the previous run's value: a kernel may write into its buffer when nobody else
/// holds it (graph::reusable; Note [Replays reuse small buffers] in graph/executor.hpp).
using NodeKernel = std::function<void(const RunContext& context, NodeInputs inputs, std::span<AnyTensor> outputs)>;

/// Whether `storage` alone holds its buffer: nothing else shares it and it is not a view of
/// another's. Only then may a run write into it again (Note [Replays reuse small buffers]).
inline bool exclusively_held(const std::shared_ptr<TensorStorage>& storage) noexcept {
  return storage != nullptr && storage.use_count() == 1 && !storage->shared_from;
}

/// Whether `slot` (a node output's previous value) can take a new value of `dtype` and `shape` on
/// `device` in place: exclusively held, on that device, of that size.
inline bool reusable(const AnyTensor& slot, DType dtype, const Shape& shape, const Device& device) noexcept {
  const auto& s = slot.storage;
  return exclusively_held(s) && slot.dtype == dtype && s->device == &device &&
         s->bytes == static_cast<std::size_t>(shape.num_elements()) * dtype_size(dtype) && s->bytes > 0;
}

enum class NodeKind : unsigned char {
  op,           // an op defined as data, run through its kernel
  constant,     // Const: values kept in the node
  placeholder,  // fed by the caller (Session::run's feeds, a traced function's arguments)
};

/// An elementwise node's scalar function over `n` elements of equal-length buffers (inputs and
/// output of its one element type; the output may be an input): what a fused node runs per block
/// (graph/optimizer.hpp). `arity` 0: not elementwise.
struct Pointwise {
  using Block = void (*)(const void* const* inputs, void* output, std::size_t n);
  Block block = nullptr;
  int arity = 0;
};

/// A Sum or Mean over each run of `row` consecutive elements of its input: a reduction over the
/// trailing axes of a float or double input of fully defined shape, which a fused node can run
/// over the blocks of the chain that produces its input (graph/optimizer.hpp). `row` 0: not one.
struct RowReduction {
  std::int64_t row = 0;
  bool mean = false;
};

/// A MatMul's transposes, which a fusion pass hands to cuBLASLt with the product's epilogue
/// (graph/optimizer.hpp, Note [GEMM epilogues]). `gemm` false: the node is not a MatMul.
struct GemmAttrs {
  bool gemm = false;
  bool transpose_a = false;
  bool transpose_b = false;
};

/// A piece of state a node reads or changes (TensorFlow's resource input): a variable's component,
/// a session's variable, an optimizer's slots, the process's standard streams. `resource` names
/// it by the address of the object that holds it; nullptr stands for all state (a node whose
/// effects are unknown). Nodes that use one resource keep the order they were made in (Note
/// [Automatic control dependencies]).
struct ResourceUse {
  const void* resource = nullptr;
  bool writes = false;
  friend bool operator==(const ResourceUse&, const ResourceUse&) = default;
};

/// One output's type and (static) shape.
struct OutputSpec {
  DType dtype = DType::DT_FLOAT;
  Shape shape;
};

/// What fusion passes know of an op's node (graph/optimizer.hpp), read off its definition when
/// run_op adds it (ops/fusion_traits.hpp).
struct FusionFacts {
  Pointwise pointwise;         // elementwise ops of one element type: their scalar function
  RowReduction row_reduction;  // a Sum or Mean over trailing axes
  GemmAttrs gemm;              // a MatMul
};

/// A node: what TensorFlow's NodeDef holds, plus how to run it. What it is (stateful, a collective,
/// pass-through, ...) is its op's: `traits()`, never flags of its own.
struct Node {
  std::string name;                 // unique in its graph, "MatMul_1", "foo/add/y"
  const ops::OpInfo* op = nullptr;  // its op's description: TensorFlow's type and the op's traits
  NodeKind kind = NodeKind::op;
  std::vector<Edge> inputs;
  std::vector<std::size_t> control_inputs;  // nodes that run first (an initializer's assignments)
  std::vector<ResourceUse> resources;       // the state it reads or changes
  /// Automatic control dependencies (Graph::add fills them from `resources`): when this node and
  /// one of these run in the same run, that one runs first. Unlike control inputs they pull
  /// nothing into a run (a v1 Session prunes to its fetches, as TensorFlow 1 does).
  std::vector<std::size_t> after;
  std::optional<std::size_t> colocated_with;  // a variable's handle node: placed with it (a colocation group)
  DeviceSpec requested;                       // the DeviceScope stack's request when the node was made
  const KernelSupport* kernel = nullptr;      // which device types run it
  std::vector<OutputSpec> outputs;
  NodeKernel run;  // nullptr for placeholders
  FusionFacts fusion;
  /// A Const's host values as the graph was given them (one value: a splat): equal constants
  /// are one (graph/optimizer.hpp). Null for captured tensors, which are kept by identity.
  std::shared_ptr<const std::vector<std::byte>> literal;

  /// TensorFlow's op type: "MatMul", "Const", "Placeholder".
  [[nodiscard]] std::string_view type() const noexcept { return op->name; }
  [[nodiscard]] const ops::OpTraits& traits() const noexcept { return op->traits; }
  /// TensorFlow's generator: no inputs and one output (a constant): placed with its consumers.
  /// A function's arguments (_Arg) are placed first, as TensorFlow's.
  [[nodiscard]] bool generator() const noexcept {
    return inputs.empty() && control_inputs.empty() && outputs.size() == 1 && !colocated_with && type() != "_Arg";
  }
  [[nodiscard]] std::string output_name(std::size_t i) const { return name + ":" + std::to_string(i); }
};

/// The descriptions of the nodes that only graphs have (TensorFlow's graph-construction ops). Their
/// kernels (where they have one) read no thread's state unless said otherwise.
namespace graph_ops {
inline constexpr ops::OpInfo Const{"Const", {.handles_unknown_dims = true}};
inline constexpr ops::OpInfo Placeholder{"Placeholder", {.handles_unknown_dims = true}};
inline constexpr ops::OpInfo Arg{"_Arg", {.handles_unknown_dims = true}};
/// A traced function's result passes through an Identity, then a _Retval names it: run on the
/// caller's thread, where its value is read.
inline constexpr ops::OpInfo OutputIdentity{"Identity",
                                            {.handles_unknown_dims = true, .pass_through = true, .any_thread = false}};
inline constexpr ops::OpInfo Retval{"_Retval",
                                    {.handles_unknown_dims = true, .pass_through = true, .any_thread = false}};
inline constexpr ops::OpInfo NoOp{"NoOp", {.stateful = true, .any_thread = false}};
}  // namespace graph_ops

}  // namespace devtensor::graph
