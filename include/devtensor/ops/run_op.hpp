#pragma once
/// @file run_op.hpp
/// @brief run_op: the one path every op defined as data takes (ops/op_def.hpp), devtensor's own
/// and users' alike:
///   1. the shape function (which also validates the attributes: errors before anything runs);
///   2. placement: the DeviceScope request, soft placement, small-integer pinning, the log line
///      (or a device chosen already: run_op_on);
///   3. inputs copied to that device under the device policy;
///   4. outputs allocated from the device's allocator (views share the input's buffer instead);
///   5. the body: the registry's GPU body on a real GPU, the CPU body on CPUs and simulated GPUs;
///   6. the record on active GradientTapes (floating-point ops), with the op's attributes.
/// While a graph is being built on the thread (ops/graph.hpp) it runs step 1 only and adds a node
/// whose kernel runs steps 3 to 6 later, on the device the graph placer chooses.
///
///     Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) { return run_op<ops::Add>({}, a, b); }

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/fusion_traits.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/kernel_context.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/registry.hpp"

namespace devtensor {

namespace autodiff {

/// Op's gradient, type-erased for the tape: the typed tensors rebuilt, the op's attributes, the
/// gradient from its definition (float or double by the output's type).
template <class Op, FloatingElement T>
std::vector<autodiff::TapeTensor> typed_gradient(const autodiff::OpRecord& r,
                                                 const std::vector<autodiff::TapeTensor>& dy) {
  std::vector<Tensor<T>> x, y, g;
  x.reserve(r.inputs.size());
  for (const auto& t : r.inputs) x.push_back(t.as<T>());
  for (const auto& t : r.outputs) y.push_back(t.as<T>());
  for (const auto& t : dy) g.push_back(t.as<T>());
  const ops::GradArgs<T, typename Op::Attrs> args{x, y, g, r.attributes<typename Op::Attrs>()};
  std::vector<autodiff::TapeTensor> out;
  for (const auto& d : Op::template gradient<T>(args))
    out.push_back(d.defined() ? autodiff::tape_tensor(d) : autodiff::TapeTensor{});
  return out;
}

}  // namespace autodiff

namespace op_detail {

/// Runs a CPU body on host copies of the inputs (elements of `input_size` bytes) and copies the
/// outputs (of `output_size` bytes) back: a real GPU whose program lacks the op's GPU body (a
/// host-compiled program's variables live in GPU memory, and work on them is not placed).
/// Correct, not fast; link devtensor::cuda. Not a template: one copy per program.
void run_staged(const ops::KernelContext& ctx, ops::Kernel* cpu_body, std::size_t input_size, std::size_t output_size);

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void run_staged(const ops::KernelContext& ctx, ops::Kernel* cpu_body, std::size_t input_size,
                                     std::size_t output_size) {
  const auto& host = host_buffer_device();
  // operator new[] aligns to __STDCPP_DEFAULT_NEW_ALIGNMENT__, enough for every element type
  std::vector<std::unique_ptr<std::byte[]>> buffers;
  std::vector<ops::KernelTensor> ins, outs;
  for (const auto& in : ctx.inputs) {
    const auto bytes = static_cast<std::size_t>(in.shape->num_elements()) * input_size;
    auto& buffer = buffers.emplace_back(new std::byte[bytes]);
    copy_bytes(buffer.get(), host, in.data, ctx.device, bytes);
    ins.push_back({buffer.get(), in.shape});
  }
  for (const auto& out : ctx.outputs) {
    auto& buffer =
        buffers.emplace_back(new std::byte[static_cast<std::size_t>(out.shape->num_elements()) * output_size]);
    outs.push_back({buffer.get(), out.shape});
  }
  cpu_body({host, ctx.attrs, ins, outs});
  for (std::size_t i = 0; i < outs.size(); ++i)
    copy_bytes(ctx.outputs[i].data, ctx.device, outs[i].data, host,
               static_cast<std::size_t>(outs[i].shape->num_elements()) * output_size);
}
#endif

/// Runs Op's body for T on ctx.device: the registered GPU body on a real GPU (the placer chooses
/// one only when the program contains the body; work that is not placed stages through the host
/// without it), the CPU body on CPUs and on simulated GPUs, whose buffers are host memory. A
/// GPU-only op on a simulated GPU runs a registered CPU body.
template <class Op, Element Out, Element T>
void run_body(const ops::KernelContext& ctx) {
  if constexpr (has_kernel_v<Op, gpu_t, T>) {
    if (!ctx.device.host_memory()) {
      if (auto* body = registered_kernel<Op, gpu_t, T>()) [[likely]] {
        const PlatformRange range(ctx.device.platform, Op::name);  // NVTX: Nsight Systems shows the op
        body(ctx);
        return;
      }
      if constexpr (has_kernel_v<Op, cpu_t, T>) {
        run_staged(ctx, &Op::template cpu<T>, sizeof(T), sizeof(Out));
        return;
      } else {
        throw InternalError(std::string(Op::name) + " has no GPU body in this program for " + ctx.device.full_name +
                            " and no CPU body to stage through the host: link devtensor::cuda");
      }
    }
  }
  if constexpr (has_kernel_v<Op, cpu_t, T>) {
    Op::template cpu<T>(ctx);
  } else {
    kernel_for<Op, T>(ctx.device)(ctx);  // a GPU-only op on a simulated GPU: its host body, or why none
  }
}

template <class Op>
std::vector<autodiff::TapeTensor> erased_gradient(const autodiff::OpRecord& r,
                                                  const std::vector<autodiff::TapeTensor>& dy) {
  return with_floating_type(r.outputs.at(0).dtype, [&]<class T>() -> std::vector<autodiff::TapeTensor> {
    if constexpr (ops::HasGradient<Op, T>)
      return autodiff::typed_gradient<Op, T>(r, dy);
    else
      throw InternalError("No gradient of " + std::string(Op::name) + " for element type " +
                          std::string(dtype_string<T>()));
  });
}

/// Op's gradient for the tape, or nullptr: its own erased form (ops whose inputs and outputs
/// differ in type, such as Cast), else the typed one from its definition.
template <class Op>
constexpr autodiff::ErasedGradient* gradient_of() noexcept {
  if constexpr (requires { &Op::erased_gradient; })
    return &Op::erased_gradient;
  else if constexpr (ops::HasGradient<Op, float> || ops::HasGradient<Op, double> || ops::HasGradient<Op, float16> ||
                     ops::HasGradient<Op, bfloat16>)
    return &erased_gradient<Op>;
  else
    return nullptr;
}

// Note [The tape keeps the copies it read]
// An op copies an input that lives on another device to its own (to_device): a host batch fed to
// a Dense layer on a GPU. The tape records that input with its identity, which gradients are
// asked for, and the buffer of the copy, which the kernel read. MatMul's gradient reads its inputs
// again on the op's device (dW = x^T dy), and would otherwise copy the host batch a second time:
// fit(run_eagerly) on a fake GPU uploaded every batch twice per step. The gradient's bits are the
// same (the same values, the same kernel). The cost: the tape holds the copy until it is dropped,
// also for an op whose gradient never reads it (a host operand of an Add), so device memory holds
// one copy of each host input for the tape's life, as a traced step's executor holds the one copy
// it makes until its last reader has run.

/// Records a run of Op on the tapes that watch one of its inputs. `read`, when given, holds the
/// tensors the kernel read: an input copied to the op's device is recorded with its own identity
/// and the copy's buffer, so a gradient that reads it again (MatMul's reads its other input) finds
/// it there and does not copy it a second time (Note [The tape keeps the copies it read]).
template <class Op, Element Out, Element T>
void record(const typename Op::Attrs& attrs, std::span<const Tensor<T>* const> inputs,
            std::span<const Tensor<Out>> outputs, std::span<const Tensor<T>* const> read = {}) {
  if constexpr (FloatingElement<Out> && ops::differentiable<Op>()) {
    if (inputs.empty() || !autodiff::tapes_active()) return;  // nothing to differentiate with respect to
    auto r = std::make_shared<autodiff::OpRecord>();
    r->op = Op::name;
    r->kind = &autodiff::op_kind<Op>;
    if constexpr (!std::derived_from<Op, ops::Builtin>) r->gradient = gradient_of<Op>();
    if constexpr (!std::is_empty_v<typename Op::Attrs>) r->attrs = std::make_shared<typename Op::Attrs>(attrs);
    r->inputs.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto& recorded = r->inputs.emplace_back(autodiff::tape_tensor(*inputs[i]));
      if (!read.empty()) recorded.storage = read[i]->storage();
    }
    for (const auto& out : outputs) r->outputs.push_back(autodiff::tape_tensor(out));
    autodiff::record_on_tapes(std::move(r));
  }
}

/// Steps 3 to 6 for inputs of one element type on `device`.
template <class Op, Element Out, Element T>
std::vector<Tensor<Out>> execute(const typename Op::Attrs& attrs, const Device& device,
                                 std::span<const Tensor<T>* const> inputs, std::span<const Shape> shapes) {
  std::vector<Tensor<T>> local;
  local.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    local.push_back(to_device(*inputs[i], device, Op::name, static_cast<int>(i)));
  std::vector<Tensor<Out>> outputs;
  outputs.reserve(shapes.size());
  for (const auto& shape : shapes) outputs.push_back(Tensor<Out>::empty(shape, device, Op::name));
  bool work = false;
  for (const auto& o : outputs) work = work || o.num_elements() > 0;
  if (work) {  // an op with only empty outputs has nothing to compute
    std::vector<ops::KernelTensor> ins, outs;
    ins.reserve(local.size());
    for (const auto& t : local) ins.push_back({t.mutable_data(), &t.shape()});
    for (const auto& t : outputs) outs.push_back({t.mutable_data(), &t.shape()});
    run_body<Op, Out, T>({outputs.front().device_info(), &attrs, ins, outs});
  }
  if (FloatingElement<Out> && ops::differentiable<Op>() && autodiff::tapes_active()) {
    std::vector<const Tensor<T>*> read;
    read.reserve(local.size());
    for (const auto& t : local) read.push_back(&t);
    record<Op, Out, T>(attrs, inputs, outputs, read);
  }
  return outputs;
}

/// The same for a fixed number of inputs and one output, without heap work beyond the output.
template <class Op, Element Out, Element T, std::size_t N>
Tensor<Out> execute_one(const typename Op::Attrs& attrs, const Device& device,
                        const std::array<const Tensor<T>*, N>& inputs, Shape shape) {
  // Inputs already on `device` are used in place (no Tensor copy: two reference counts and a
  // Shape per input on the 1-element op's path); the others are copied there.
  std::array<const Tensor<T>*, N> local = inputs;
  std::array<std::optional<Tensor<T>>, N> copies;
  if constexpr (N > 0)  // nvcc warns on `i < 0`
    for (std::size_t i = 0; i < N; ++i) {
      const Tensor<T>& in = *inputs[i];
      if (!in.defined() || in.storage()->device != &device) [[unlikely]]
        local[i] = &copies[i].emplace(to_device(in, device, Op::name, static_cast<int>(i)));
    }
  Tensor<Out> out;
  if constexpr (ops::op_traits<Op>().view) {
    static_assert(N == 1 && std::is_same_v<Out, T>, "a view has one input of the output's type");
    out = Tensor<Out>(local[0]->storage(), std::move(shape));  // the input's buffer, a new tensor value
  } else {
    out = Tensor<Out>::empty(std::move(shape), device, Op::name);
    if (out.num_elements() > 0) {
      std::array<ops::KernelTensor, N> ins;
      if constexpr (N > 0)
        for (std::size_t i = 0; i < N; ++i) ins[i] = {local[i]->mutable_data(), &local[i]->shape()};
      const ops::KernelTensor outs[1] = {{out.mutable_data(), &out.shape()}};
      run_body<Op, Out, T>({out.device_info(), &attrs, ins, outs});
    }
  }
  record<Op, Out, T>(attrs, inputs, std::span<const Tensor<Out>>(&out, 1), local);
  return out;
}

template <class Out, class T>
using output_t = std::conditional_t<std::is_void_v<Out>, T, Out>;

// --- graph mode: the node that runs the op later ----------------------------------------------------

/// Whether Op's shape function accepts unknown dimensions (a graph's partial shapes).
template <class Op>
inline constexpr bool handles_unknown_dims_v = ops::op_traits<Op>().handles_unknown_dims;

/// Op's shape function over the shapes of N typed inputs.
template <class Op, class T, std::size_t N>
Shape shape_of(const typename Op::Attrs& attrs, const std::array<const Tensor<T>*, N>& inputs) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return Shape(Op::output_shape(attrs, inputs[I]->shape()...));
  }
  (std::make_index_sequence<N>{});
}

/// Adds Op as a node of `graph` with N inputs and one output of element type O: the shape
/// function runs now (its errors come at build time, as TensorFlow's), the kernel at run time.
template <class Op, class O, class T, std::size_t N>
DEVTENSOR_COLD Tensor<O> graph_op(graph::Graph& graph, std::string_view name, const typename Op::Attrs& attrs,
                                  const std::array<const Tensor<T>*, N>& inputs) {
  if constexpr (!handles_unknown_dims_v<Op> && N > 0)
    for (std::size_t i = 0; i < N; ++i)
      graph::require_fully_defined(Op::name, inputs[i]->shape(), "input " + std::to_string(i));
  const Shape shape = shape_of<Op, T, N>(attrs, inputs);
  if constexpr (!handles_unknown_dims_v<Op>) graph::require_fully_defined(Op::name, shape, "output");
  graph::RowReduction row_reduction;
  if constexpr (N == 1) row_reduction = row_reduction_of<Op, O, T>(attrs, inputs[0]->shape());
  std::array<AnyTensor, N> erased;
  if constexpr (N > 0)  // nvcc warns on `i < 0`
    for (std::size_t i = 0; i < N; ++i) erased[i] = AnyTensor(*inputs[i]);
  graph::NodeKernel run = [attrs](const graph::RunContext& context, graph::NodeInputs in, std::span<AnyTensor> out) {
    if constexpr (!ops::op_traits<Op>().view) {
      // A replay writes into the previous run's buffer when nobody else holds it (Note [Replays
      // reuse small buffers]); a tape around the call records fresh tensors instead.
      const Shape now = [&]<std::size_t... I>(std::index_sequence<I...>) {  // this run's shape
        return Shape(Op::output_shape(attrs, in[I].shape...));
      }
      (std::make_index_sequence<N>{});
      if (graph::reusable(out[0], dtype_enum<O>(), now, context.device) && !autodiff::tapes_active()) {
        std::array<ops::KernelTensor, N> ins;
        if constexpr (N > 0)
          for (std::size_t i = 0; i < N; ++i) ins[i] = {in[i].storage->data, &in[i].shape};
        if (!(out[0].shape == now)) out[0].shape = now;  // its id stays: a kept value never left the executor
        const ops::KernelTensor outs[1] = {{out[0].storage->data, &out[0].shape}};
        run_body<Op, O, T>({context.device, &attrs, ins, outs});
        return;
      }
    }
    std::array<Tensor<T>, N> typed;
    std::array<const Tensor<T>*, N> pointers;
    if constexpr (N > 0)
      for (std::size_t i = 0; i < N; ++i) {
        typed[i] = in[i].as<T>();
        pointers[i] = &typed[i];
      }
    out[0] = AnyTensor(execute_one<Op, O, T, N>(attrs, context.device, pointers, shape_of<Op, T, N>(attrs, pointers)));
  };
  graph::NodeSpec spec{&ops::info_of<Op>, {{dtype_enum<O>(), shape}}, std::move(run), &kernel_support<Op, T>};
  spec.fusion = {pointwise_of<Op, O, T>(attrs), row_reduction, gemm_of<Op>(attrs)};
  const Tensor<O> out =
      graph::add_op(graph, name.empty() ? ops::default_node_name<Op>() : name, erased, std::move(spec))
          .front()
          .template as<O>();
  // A tape inside a trace records the symbolic op: its gradient then adds the gradient's nodes.
  record<Op, O, T>(attrs, std::span<const Tensor<T>* const>(inputs.data(), N), std::span<const Tensor<O>>(&out, 1));
  return out;
}

/// The same for ops over a list of inputs (AddN: `list_input`) or with several outputs (SplitV).
template <class Op, class T, bool list_input>
DEVTENSOR_COLD std::vector<Tensor<T>> graph_op_vector(graph::Graph& graph, std::string_view name,
                                                      const typename Op::Attrs& attrs,
                                                      const std::vector<const Tensor<T>*>& inputs) {
  // Captures nothing: the node's kernel keeps its own copy of the attributes.
  const auto shapes_of = [](const typename Op::Attrs& a,
                            const std::vector<const Tensor<T>*>& ins) -> std::vector<Shape> {
    if constexpr (list_input) {
      std::vector<Shape> in_shapes;
      for (const auto* t : ins) in_shapes.push_back(t->shape());
      return {Op::output_shape(a, std::span<const Shape>(in_shapes))};
    } else {
      return Op::output_shapes(a, ins.at(0)->shape());
    }
  };
  if constexpr (!handles_unknown_dims_v<Op>)
    for (std::size_t i = 0; i < inputs.size(); ++i)
      graph::require_fully_defined(Op::name, inputs[i]->shape(), "input " + std::to_string(i));
  std::vector<graph::OutputSpec> outputs;
  for (auto& shape : shapes_of(attrs, inputs)) outputs.push_back({dtype_enum<T>(), std::move(shape)});
  std::vector<AnyTensor> erased;
  for (const auto* t : inputs) erased.emplace_back(*t);
  graph::NodeKernel run = [attrs, shapes_of](const graph::RunContext& context, graph::NodeInputs in,
                                             std::span<AnyTensor> out) {
    std::vector<Tensor<T>> typed;
    typed.reserve(in.size());
    std::vector<const Tensor<T>*> pointers;
    for (const auto& t : in) pointers.push_back(&typed.emplace_back(t.as<T>()));
    const auto results = execute<Op, T, T>(attrs, context.device, pointers, shapes_of(attrs, pointers));
    for (std::size_t i = 0; i < results.size(); ++i) out[i] = AnyTensor(results[i]);
  };
  std::vector<Tensor<T>> out;
  for (const auto& t : graph::add_op(graph, name.empty() ? ops::default_node_name<Op>() : name, erased,
                                     {&ops::info_of<Op>, std::move(outputs), std::move(run), &kernel_support<Op, T>}))
    out.push_back(t.template as<T>());
  record<Op, T, T>(attrs, std::span<const Tensor<T>* const>(inputs), std::span<const Tensor<T>>(out));
  return out;
}
// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // graph_op of ops::Op over T with N inputs (Note [Explicit instantiations])
#define DEVTENSOR_GRAPH_OP(Op, T, N)                                                                               \
  DEVTENSOR_EXTERN_TEMPLATE Tensor<T> graph_op<ops::Op, T, T, N>(graph::Graph&, std::string_view, const ops::Op::Attrs&, \
                                                                 const std::array<const Tensor<T>*, N>&);
#endif
// clang-format on

}  // namespace op_detail

namespace kernels {

/// Runs Op's body over tensors that exist already, on the output's device: work that is not
/// placed (a variable's updates run where it lives). No placement, no copies, no record.
template <class Op, Element Out, Element T>
void run_body_on(const typename Op::Attrs& attrs, std::span<const Tensor<T>> inputs, const Tensor<Out>& output) {
  std::vector<ops::KernelTensor> ins;
  ins.reserve(inputs.size());
  for (const auto& t : inputs) ins.push_back({t.mutable_data(), &t.shape()});
  const ops::KernelTensor outs[1] = {{output.mutable_data(), &output.shape()}};
  if (output.num_elements() > 0) op_detail::run_body<Op, Out, T>({output.device_info(), &attrs, ins, outs});
}

}  // namespace kernels

/// Runs op `Op` on its inputs (tensors of one element type T) and returns its one output, of
/// element type `Out` (T unless given: Cast). @throws what the shape function, the placer, the
/// allocator or the body throw (InvalidArgumentError, ResourceExhaustedError, ...).
template <class Op, class Out = void, Element T, class... Rest>
requires(!ops::TensorLevelOp<Op> && (std::same_as<Rest, Tensor<T>> && ...)) Tensor<op_detail::output_t<Out, T>> run_op(
    const typename Op::Attrs& attrs, const Tensor<T>& first, const Rest&... rest) {
  using O = op_detail::output_t<Out, T>;
  const std::array<const Tensor<T>*, 1 + sizeof...(Rest)> inputs{&first, &rest...};
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]->defined()) [[unlikely]]
      throw_undefined_input(Op::name, i);
  if (auto* graph = graph::building()) [[unlikely]]
    return op_detail::graph_op<Op, O, T>(*graph, {}, attrs, inputs);
  Shape shape = Op::output_shape(attrs, first.shape(), rest.shape()...);
  const Device& device = place_op(kernel_support<Op, T>, small_host_int_inputs(first, rest...));
  return op_detail::execute_one<Op, O, T>(attrs, device, inputs, std::move(shape));
}
/// The same with TensorFlow's `name=`, which names the node in graph mode (eager ops ignore it).
template <class Op, class Out = void, Element T, class... Rest>
requires(!ops::TensorLevelOp<Op> && (std::same_as<Rest, Tensor<T>> && ...)) Tensor<op_detail::output_t<Out, T>> run_op(
    const OpOptions& options, const typename Op::Attrs& attrs, const Tensor<T>& first, const Rest&... rest) {
  if (!options.name.empty()) [[unlikely]]
    if (auto* graph = graph::building()) {
      const std::array<const Tensor<T>*, 1 + sizeof...(Rest)> inputs{&first, &rest...};
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i]->defined()) throw_undefined_input(Op::name, i);
      return op_detail::graph_op<Op, op_detail::output_t<Out, T>, T>(*graph, options.name, attrs, inputs);
    }
  return run_op<Op, Out>(attrs, first, rest...);
}

/// An op without tensor inputs (Fill, Range, the random ops): the element type is given.
template <class Op, Element T>
Tensor<T> run_op(const typename Op::Attrs& attrs) {
  if (auto* graph = graph::building()) [[unlikely]]
    return op_detail::graph_op<Op, T, T, 0>(*graph, {}, attrs, {});
  Shape shape = Op::output_shape(attrs);
  const Device& device = place_op(kernel_support<Op, T>);
  return op_detail::execute_one<Op, T, T, 0>(attrs, device, {}, std::move(shape));
}
template <class Op, Element T>
Tensor<T> run_op(const OpOptions& options, const typename Op::Attrs& attrs) {
  if (auto* graph = graph::building()) [[unlikely]]
    return op_detail::graph_op<Op, T, T, 0>(*graph, options.name, attrs, {});
  initialize_at(kernel_support<Op, T>, options.where);
  return run_op<Op, T>(attrs);
}

/// An op over a list of inputs (AddN, ConcatV2): the shape function gets their shapes.
template <class Op, Element T>
Tensor<T> run_op_list(const typename Op::Attrs& attrs, const std::vector<Tensor<T>>& values,
                      const OpOptions& options = {}) {
  require_defined_inputs(Op::name, values);
  if (auto* graph = graph::building()) [[unlikely]] {
    std::vector<const Tensor<T>*> inputs;
    for (const auto& v : values) inputs.push_back(&v);
    return op_detail::graph_op_vector<Op, T, true>(*graph, options.name, attrs, inputs).front();
  }
  std::vector<Shape> shapes;
  shapes.reserve(values.size());
  bool small = !values.empty();
  for (const auto& v : values) {
    shapes.push_back(v.shape());
    small = small && small_host_int_inputs(v);
  }
  const Shape shape = Op::output_shape(attrs, std::span<const Shape>(shapes));
  const Device& device = place_op(kernel_support<Op, T>, small);
  std::vector<const Tensor<T>*> inputs;
  inputs.reserve(values.size());
  for (const auto& v : values) inputs.push_back(&v);
  return op_detail::execute<Op, T, T>(attrs, device, inputs, std::span<const Shape>(&shape, 1)).front();
}

/// An op with several outputs (SplitV): the shape function returns their shapes.
template <class Op, Element T>
std::vector<Tensor<T>> run_op_outputs(const typename Op::Attrs& attrs, const Tensor<T>& input,
                                      const OpOptions& options = {}) {
  require_defined_inputs(Op::name, input);
  if (auto* graph = graph::building()) [[unlikely]]
    return op_detail::graph_op_vector<Op, T, false>(*graph, options.name, attrs, {&input});
  const std::vector<Shape> shapes = Op::output_shapes(attrs, input.shape());
  const Device& device = place_op(kernel_support<Op, T>, small_host_int_inputs(input));
  const Tensor<T>* inputs[1] = {&input};
  return op_detail::execute<Op, T, T>(attrs, device, inputs, shapes);
}

/// Runs an op whose kernel works on whole tensors (ops::TensorLevel: a variable's read or write, an
/// optimizer's update, a reduction across replicas): now, or, while a graph is being built on the
/// thread, as a node of that graph that runs it at every run of the graph.
template <ops::TensorLevelOp Op, class... Args>
decltype(auto) run_op(const typename Op::Attrs& attrs, const Args&... args) {
  if (auto* graph = graph::building()) [[unlikely]]
    return Op::graph(*graph, attrs, args...);
  return Op::eager(attrs, args...);
}

/// Runs Op on a device already chosen (a variable's device, a graph node's assignment): no
/// placement and no log line; inputs are copied there under the device policy.
template <class Op, class Out = void, Element T, class... Rest>
requires(std::same_as<Rest, Tensor<T>>&&...) Tensor<op_detail::output_t<Out, T>> run_op_on(
    const Device& device, const typename Op::Attrs& attrs, const Tensor<T>& first, const Rest&... rest) {
  using O = op_detail::output_t<Out, T>;
  const std::array<const Tensor<T>*, 1 + sizeof...(Rest)> inputs{&first, &rest...};
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]->defined()) [[unlikely]]
      throw_undefined_input(Op::name, i);
  return op_detail::execute_one<Op, O, T>(attrs, device, inputs,
                                          Op::output_shape(attrs, first.shape(), rest.shape()...));
}
template <class Op, Element T>
Tensor<T> run_op_on(const Device& device, const typename Op::Attrs& attrs) {
  return op_detail::execute_one<Op, T, T, 0>(attrs, device, {}, Op::output_shape(attrs));
}
template <class Op, Element T>
Tensor<T> run_op_list_on(const Device& device, const typename Op::Attrs& attrs, const std::vector<Tensor<T>>& values) {
  require_defined_inputs(Op::name, values);
  std::vector<Shape> shapes;
  for (const auto& v : values) shapes.push_back(v.shape());
  const Shape shape = Op::output_shape(attrs, std::span<const Shape>(shapes));
  std::vector<const Tensor<T>*> inputs;
  for (const auto& v : values) inputs.push_back(&v);
  return op_detail::execute<Op, T, T>(attrs, device, inputs, std::span<const Shape>(&shape, 1)).front();
}

}  // namespace devtensor
