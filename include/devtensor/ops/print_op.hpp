#pragma once
/// @file print_op.hpp
/// @brief devtensor::print, TensorFlow's tf.print: strings and tensors' values on one line of
/// standard error, formatted as tf.print formats them. Eagerly it prints at once; in a graph (a
/// traced function) it is a stateful node (PrintV2) that prints at every run, where host code in
/// the callable runs only while tracing.
///
///     dt::print("loss:", loss);   // loss: 0.25
///     dt::print(x);               // [1 2.5 -3]; more than 6 elements: [0 1 2 ... 7 8 9]

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_traits.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor {

/// Where print writes (TensorFlow's output_stream: sys.stderr by default).
struct PrintOpOptions {
  std::ostream* output_stream = nullptr;  // nullptr: standard error
  int summarize = 3;                      // elements shown at each end of a longer axis
};

/// One argument of print: text, or a tensor (its values when printed).
class PrintArgument {
 public:
  PrintArgument(std::string_view text) : text_(text) {}    // NOLINT(google-explicit-constructor)
  PrintArgument(const char* text) : text_(text) {}         // NOLINT(google-explicit-constructor)
  PrintArgument(const std::string& text) : text_(text) {}  // NOLINT(google-explicit-constructor)
  template <Element T>
  PrintArgument(const Tensor<T>& t) : tensor_(t) {  // NOLINT(google-explicit-constructor)
    if (!t.defined()) throw InvalidArgumentError("print: an argument is an undefined tensor");
  }

  /// A tensor without its element type in the type (a graph's run-time value).
  static PrintArgument of(AnyTensor t) {
    PrintArgument a{std::string_view()};
    a.tensor_ = std::move(t);
    return a;
  }

  [[nodiscard]] bool is_tensor() const noexcept { return tensor_.defined(); }
  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  [[nodiscard]] const AnyTensor& tensor() const noexcept { return tensor_; }

 private:
  std::string text_;
  AnyTensor tensor_;
};

/// A tensor's values as tf.print writes them: `[1 2.5 -3]`, rows on new lines, floats with six
/// significant digits, at most 2 * summarize elements per axis (`...` between).
std::string print_format(const AnyTensor& t, int summarize = 3);

namespace ops {
/// tf.print's op (PrintV2): its text and its tensors' values on one line of its stream. A node
/// prints at every run, in program order with the other prints to its stream (the stream is the
/// state it changes: Note [Automatic control dependencies]), on the caller's thread.
struct PrintV2 : TensorLevel {
  static constexpr std::string_view name = "PrintV2";
  static constexpr OpTraits traits{.stateful = true, .differentiable = false, .any_thread = false};
  struct Attrs {
    std::vector<PrintArgument> arguments;
    PrintOpOptions options;
  };
  static void eager(const Attrs& a);
  /// Its inputs are the tensors; the text stays in the kernel.
  static void graph(graph::Graph& graph, const Attrs& a);
};
}  // namespace ops

/// Prints the arguments separated by spaces, then a newline.
/// @throws InvalidArgumentError for an undefined tensor.
void print(std::initializer_list<PrintArgument> arguments, const PrintOpOptions& options = {});

template <class... Args>
requires(sizeof...(Args) > 0 &&
         (std::is_constructible_v<PrintArgument, const Args&> && ...)) void print(const Args&... arguments) {
  print({PrintArgument(arguments)...});
}

#if DEVTENSOR_HEADER_DEFINITIONS

namespace print_detail {

DEVTENSOR_DEFINITION std::string element(const std::byte* data, DType dtype, std::int64_t i) {
  char buffer[64];
  switch (dtype) {
    case DType::DT_FLOAT: {
      float v;
      std::memcpy(&v, data + i * 4, 4);
      std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
      return buffer;
    }
    case DType::DT_DOUBLE: {
      double v;
      std::memcpy(&v, data + i * 8, 8);
      std::snprintf(buffer, sizeof buffer, "%g", v);
      return buffer;
    }
    case DType::DT_INT32: {
      std::int32_t v;
      std::memcpy(&v, data + i * 4, 4);
      return std::to_string(v);
    }
    case DType::DT_INT64: {
      std::int64_t v;
      std::memcpy(&v, data + i * 8, 8);
      return std::to_string(v);
    }
    case DType::DT_HALF:
    case DType::DT_BFLOAT16: {
      std::uint16_t bits;
      std::memcpy(&bits, data + i * 2, 2);
      const double v = dtype == DType::DT_HALF ? static_cast<double>(float16::from_bits(bits))
                                               : static_cast<double>(bfloat16::from_bits(bits));
      std::snprintf(buffer, sizeof buffer, "%g", v);
      return buffer;
    }
    default: return data[i] != std::byte{0} ? "1" : "0";
  }
}

/// The sub-array at `offset` spanning axes `axis`.. of `dims`.
DEVTENSOR_DEFINITION void format(std::string& out, const std::byte* data, DType dtype,
                                 std::span<const std::int64_t> dims, std::size_t axis, std::int64_t offset,
                                 int summarize) {
  if (axis == dims.size()) {
    out += element(data, dtype, offset);
    return;
  }
  std::int64_t stride = 1;
  for (std::size_t k = axis + 1; k < dims.size(); ++k) stride *= dims[k];
  const std::int64_t n = dims[axis];
  const bool summarized = summarize >= 0 && n > 2 * static_cast<std::int64_t>(summarize);
  const std::size_t depth_below = dims.size() - axis - 1;
  const std::string separator = depth_below == 0 ? " " : std::string(depth_below, '\n') + std::string(axis + 1, ' ');
  out += '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarized && i == summarize) {
      out += "..." + separator;
      i = n - summarize;
    }
    format(out, data, dtype, dims, axis + 1, offset + i * stride, summarize);
    if (i + 1 < n) out += separator;
  }
  out += ']';
}

}  // namespace print_detail

DEVTENSOR_DEFINITION std::string print_format(const AnyTensor& t, int summarize) {
  if (t.storage->symbolic) throw_symbolic_values(*t.storage->symbolic, "print_format()");
  std::vector<std::byte> host(t.bytes());
  copy_bytes(host.data(), host_buffer_device(), t.storage->data, *t.storage->device, host.size());
  std::string out;
  print_detail::format(out, host.data(), t.dtype, t.shape.dims(), 0, 0, summarize);
  return out;
}

namespace print_detail {
inline void write(const std::vector<PrintArgument>& values, const PrintOpOptions& options) {
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) line += ' ';
    line += values[i].is_tensor() ? print_format(values[i].tensor(), options.summarize) : values[i].text();
  }
  line += '\n';
  std::ostream& os = options.output_stream ? *options.output_stream : std::cerr;
  os << line << std::flush;
}
}  // namespace print_detail

DEVTENSOR_DEFINITION void ops::PrintV2::eager(const Attrs& a) { print_detail::write(a.arguments, a.options); }

DEVTENSOR_DEFINITION void ops::PrintV2::graph(graph::Graph& graph, const Attrs& a) {
  std::vector<AnyTensor> inputs;
  std::vector<bool> is_tensor;
  for (const auto& arg : a.arguments) {
    is_tensor.push_back(arg.is_tensor());
    if (arg.is_tensor()) inputs.push_back(arg.tensor());
  }
  graph::NodeSpec spec{&info_of<PrintV2>, {}};
  spec.device = DeviceSpec::parse(kHostCpuDeviceName);  // TensorFlow's PrintV2 runs on the CPU
  std::ostream* stream = a.options.output_stream ? a.options.output_stream : &std::cerr;
  spec.resources = {{stream, true}};
  spec.run = [args = a.arguments, is_tensor, options = a.options](const graph::RunContext&, graph::NodeInputs in,
                                                                  std::span<AnyTensor>) {
    std::vector<PrintArgument> values = args;
    std::size_t next = 0;
    for (std::size_t i = 0; i < values.size(); ++i)
      if (is_tensor[i]) values[i] = PrintArgument::of(in[next++]);
    print_detail::write(values, options);
  };
  (void)graph::add_op(graph, name, inputs, std::move(spec));
}

DEVTENSOR_DEFINITION void print(std::initializer_list<PrintArgument> arguments, const PrintOpOptions& options) {
  run_op<ops::PrintV2>({std::vector<PrintArgument>(arguments), options});
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
