#pragma once
/// @file fused_kernel.hpp
/// @brief The kernel of a fused node (Note [Fused elementwise chains] in graph/optimizer.hpp): a
/// group of elementwise ops run block by block over registers that stay in cache, after the
/// MatMul whose product they read, when there is one.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// How a fused node reads an input from outside its group.
struct FusedInput {
  enum class Kind : unsigned char { full, scalar, suffix } kind = Kind::full;
  std::int64_t period = 0;  // suffix: the input's elements, repeated along S
};

/// One op of a fused group: its scalar function over registers (the group's inputs first, then
/// each op's result).
struct FusedStep {
  Pointwise::Block block = nullptr;
  int arity = 0;
  std::array<int, 2> args{};
};

/// The kernel of a fused node (Note [Fused elementwise chains]).
class FusedKernel {
 public:
  static constexpr std::int64_t kBlock = 256;       // elements a register holds
  static constexpr std::size_t kMaxRegisters = 32;  // inputs and steps of one group
  static constexpr std::size_t kLine = 64;            // a cache line

  NodeKernel producer;               // a MatMul's kernel (its inputs are the node's first two), or empty
  std::vector<FusedInput> inputs;    // registers 0..: with a producer, register 0 is its product
  std::vector<FusedStep> steps;      // step j's result is register inputs.size() + j; the last is the output
  DType dtype = DType::DT_FLOAT;
  Shape shape;                       // S
  std::string op;

  void operator()(const RunContext& context, NodeInputs in, std::span<AnyTensor> out) const;

 private:
  void run_blocks(const std::byte* const* sources, std::byte* output, std::int64_t begin, std::int64_t end) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION void FusedKernel::operator()(const RunContext& context, NodeInputs in,
                                                  std::span<AnyTensor> out) const {
  const std::int64_t n = shape.num_elements();
  const std::size_t width = dtype_size(dtype);
  std::array<const std::byte*, kMaxRegisters> sources{};
  std::size_t first = 0;  // the node's first input that is a register
  if (producer) {
    // The product goes to the output slot (reusing the last run's buffer when nobody holds it);
    // the chain then runs over it there.
    const AnyTensor* operands[2] = {&in[0], &in[1]};
    producer(context, NodeInputs(operands, 2), out.first(1));
    first = 2;
  } else if (!reusable(out[0], dtype, shape, context.device)) {
    out[0] = AnyTensor(next_tensor_id(), dtype, shape,
                       allocate_storage(context.device, static_cast<std::size_t>(n) * width, shape, dtype_string(dtype), op));
  }
  if (!out[0].defined() || out[0].storage->bytes != static_cast<std::size_t>(n) * width)
    throw InternalError(op + " " + out[0].shape.to_string() + ": its output must have shape " + shape.to_string());
  for (std::size_t k = producer ? 1 : 0; k < inputs.size(); ++k) {
    const AnyTensor& value = in[first + k - (producer ? 1 : 0)];
    const std::int64_t expected = inputs[k].kind == FusedInput::Kind::full ? n : inputs[k].period;
    if (value.shape.num_elements() != expected)
      throw InternalError(op + ": input " + value.shape.to_string() + " does not fit " + shape.to_string());
    sources[k] = static_cast<const std::byte*>(value.storage->data);
  }
  auto* output = static_cast<std::byte*>(out[0].storage->data);
  if (producer) sources[0] = output;
  backend::cpu::parallel_for(n, std::int64_t{1} << 18, [&](std::int64_t begin, std::int64_t end) {
    run_blocks(sources.data(), output, begin, end);
  });
}

DEVTENSOR_DEFINITION void FusedKernel::run_blocks(const std::byte* const* sources, std::byte* output, std::int64_t begin,
                                                  std::int64_t end) const {
  const std::size_t width = dtype_size(dtype);
  const std::size_t registers = inputs.size() + steps.size();
  // Registers start on cache lines, and a line apart from a multiple of 4 KiB: a load whose
  // address matches an earlier store's modulo 4 KiB waits for it (4K aliasing), and each op
  // reads registers the previous one just wrote.
  const std::size_t register_bytes = static_cast<std::size_t>(kBlock) * width + kLine;
  thread_local std::vector<std::byte> scratch;  // the registers, kept per thread
  if (scratch.size() < registers * register_bytes + kLine) scratch.resize(registers * register_bytes + kLine);
  std::byte* const base = scratch.data() + (kLine - reinterpret_cast<std::uintptr_t>(scratch.data()) % kLine) % kLine;
  const auto reg = [&](std::size_t r) { return base + r * register_bytes; };
  std::array<const void*, kMaxRegisters> at{};
  const std::int64_t first_block = std::min(kBlock, end - begin);
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].kind == FusedInput::Kind::scalar)  // the value repeated, once
      for (std::size_t i = 0; i < static_cast<std::size_t>(first_block); ++i) std::memcpy(reg(k) + i * width, sources[k], width);
  for (std::int64_t start = begin; start < end; start += kBlock) {
    const std::int64_t len = std::min(kBlock, end - start);
    const std::size_t offset = static_cast<std::size_t>(start) * width;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      switch (inputs[k].kind) {
        case FusedInput::Kind::full:
          // The product is staged: the last step writes where it reads.
          if (k == 0 && producer) {
            std::memcpy(reg(0), sources[0] + offset, static_cast<std::size_t>(len) * width);
            at[0] = reg(0);
          } else {
            at[k] = sources[k] + offset;
          }
          break;
        case FusedInput::Kind::scalar:
          at[k] = reg(k);
          break;
        case FusedInput::Kind::suffix: {  // the period's elements from start % period on
          const std::int64_t period = inputs[k].period;
          std::int64_t phase = start % period;
          for (std::int64_t done = 0; done < len;) {
            const std::int64_t take = std::min(period - phase, len - done);
            std::memcpy(reg(k) + static_cast<std::size_t>(done) * width, sources[k] + static_cast<std::size_t>(phase) * width,
                        static_cast<std::size_t>(take) * width);
            done += take;
            phase = 0;
          }
          at[k] = reg(k);
          break;
        }
      }
    }
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const FusedStep& step = steps[j];
      const void* operands[2] = {at[static_cast<std::size_t>(step.args[0])],
                                 step.arity > 1 ? at[static_cast<std::size_t>(step.args[1])] : nullptr};
      void* result = j + 1 == steps.size() ? static_cast<void*>(output + offset) : reg(inputs.size() + j);
      step.block(operands, result, static_cast<std::size_t>(len));
      at[inputs.size() + j] = result;
    }
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
