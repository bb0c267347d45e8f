#pragma once
/// @file fused_kernel.hpp
/// @brief The kernel of a fused node (Note [Fused elementwise chains] in graph/optimizer.hpp): a
/// group of elementwise ops run block by block over registers that stay in cache, after the
/// MatMul whose product they read, when there is one, or before the Sum or Mean that reads them.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/config.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/fused_chain.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// How a fused node reads an input from outside its group.
struct FusedInput {
  enum class Kind : unsigned char { full, scalar, suffix } kind = Kind::full;
  std::int64_t period = 0;  // suffix: the input's elements, repeated along S
};

/// The descriptions of fused nodes (graph/optimizer.hpp): their members are the registry's
/// elementwise ops (and a MatMul, a reduction), whose kernels read no thread's state.
namespace fused_ops {
inline constexpr ops::OpInfo Elementwise{"_FusedElementwise", {}};
inline constexpr ops::OpInfo MatMul{"_FusedMatMul", {.gemm = true}};
inline constexpr ops::OpInfo Conv2D{"_FusedConv2D", {}};  // on CPUs: the convolution, then its chain
inline constexpr ops::OpInfo Reduction{"_FusedReduction", {}};
}  // namespace fused_ops

/// One op of a fused group: its scalar function over registers (the group's inputs first, then
/// each op's result).
struct FusedStep {
  Pointwise::Block block = nullptr;
  int arity = 0;
  std::array<int, 2> args{};
  std::int16_t code = -1;  // on a GPU: the op's code in a FusedChainProgram (ops/fused_chain.hpp)
};

/// The kernel of a fused node (Note [Fused elementwise chains]).
class FusedKernel {
 public:
  static constexpr std::int64_t kBlock = 256;       // elements a register holds
  static constexpr std::size_t kMaxRegisters = 32;  // inputs and steps of one group
  static constexpr std::size_t kLine = 64;          // a cache line

  NodeKernel producer;             // a MatMul's or Conv2D's kernel (its inputs are the node's first two), or empty
  std::vector<FusedInput> inputs;  // registers 0..: with a producer, register 0 is its product
  std::vector<FusedStep> steps;    // step j's result is register inputs.size() + j; the last is the output
  DType dtype = DType::DT_FLOAT;
  Shape shape;  // S
  std::string op;
  /// A Sum or Mean of each row of the last step's results (float or double), which are then never
  /// written: the output holds one value per row, in `reduced_shape`.
  RowReduction reduction;
  Shape reduced_shape;
  /// On a GPU, a chain that cuBLASLt applies as the producer's epilogue (Note [GEMM epilogues] in
  /// ops/fused_chain.hpp): the producer's transposes, the bias's register (-1: none), whether a
  /// Relu follows. `gemm.gemm` false: the chain runs as a chain.
  struct GemmEpilogue {
    GemmAttrs gemm;
    int bias = -1;
    bool relu = false;
  } epilogue;

  void operator()(const RunContext& context, NodeInputs in, std::span<AnyTensor> out) const;

 private:
  /// On a GPU: the group as one ops::FusedChainProgram for the registered chain kernel.
  void run_on_gpu(const RunContext& context, NodeInputs in, AnyTensor& out) const;
  /// `out` itself when a replay may write into it again (graph::reusable), else a new buffer.
  void reuse_or_allocate(AnyTensor& out, const Shape& result_shape, const Device& device) const;
  /// The producer and its epilogue as one cuBLASLt call; false when `chain` has none for them.
  bool run_gemm_epilogue(const ops::GpuFusedChain& chain, const RunContext& context, NodeInputs in,
                         AnyTensor& out) const;
  /// Elements [begin, end) of S; `output` is where element `begin`'s result goes, or with a
  /// reduction, row begin / reduction.row's (begin is a row's first element then).
  void run_blocks(const std::byte* const* sources, std::byte* output, std::int64_t begin, std::int64_t end) const;
};

namespace fused_detail {
/// A row sum in progress: the same double accumulation, in the same order, as the CPU reduction
/// kernel (ops/cpu/reduce.hpp), so the fused result has the unfused graph's bits.
struct RowSum {
  double sum = 0;
  std::int64_t count = 0;  // elements of the current row added so far
  std::byte* out = nullptr;
};
template <class T>
void add_to_rows(const void* values, std::int64_t n, const RowReduction& reduction, RowSum& row) {
  const T* v = static_cast<const T*>(values);
  for (std::int64_t i = 0; i < n; ++i) {
    row.sum = arith::add(row.sum, static_cast<double>(v[i]));
    if (++row.count < reduction.row) continue;
    const T result = static_cast<T>(reduction.mean ? arith::divide_by_count(row.sum, reduction.row) : row.sum);
    std::memcpy(row.out, &result, sizeof result);
    row.out += sizeof result;
    row.sum = 0;
    row.count = 0;
  }
}
}  // namespace fused_detail

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION void FusedKernel::operator()(const RunContext& context, NodeInputs in,
                                                  std::span<AnyTensor> out) const {
  if (!context.device.host_memory()) return run_on_gpu(context, in, out[0]);
  const std::int64_t n = shape.num_elements();
  const std::size_t width = dtype_size(dtype);
  std::array<const std::byte*, kMaxRegisters> sources{};
  const bool reduces = reduction.row > 0;
  const Shape& result_shape = reduces ? reduced_shape : shape;
  const std::int64_t results = reduces ? n / reduction.row : n;
  std::size_t first = 0;  // the node's first input that is a register
  if (producer) {
    // The product goes to the output slot (reusing the last run's buffer when nobody holds it);
    // the chain then runs over it there.
    const AnyTensor* operands[2] = {&in[0], &in[1]};
    producer(context, NodeInputs(operands, 2), out.first(1));
    first = 2;
  } else {
    reuse_or_allocate(out[0], result_shape, context.device);
  }
  if (!out[0].defined() || out[0].storage->bytes != static_cast<std::size_t>(results) * width)
    throw InternalError(op + " " + out[0].shape.to_string() + ": its output must have shape " +
                        result_shape.to_string());
  for (std::size_t k = producer ? 1 : 0; k < inputs.size(); ++k) {
    const AnyTensor& value = in[first + k - (producer ? 1 : 0)];
    const std::int64_t expected = inputs[k].kind == FusedInput::Kind::full ? n : inputs[k].period;
    if (value.shape.num_elements() != expected)
      throw InternalError(op + ": input " + value.shape.to_string() + " does not fit " + shape.to_string());
    sources[k] = static_cast<const std::byte*>(value.storage->data);
  }
  auto* output = static_cast<std::byte*>(out[0].storage->data);
  if (producer) sources[0] = output;
  if (reduces) {  // whole rows per task, as the reduction kernel splits them
    const std::int64_t row = reduction.row;
    backend::cpu::parallel_for(
        results, std::max<std::int64_t>(1, (std::int64_t{1} << 16) / row), [&](std::int64_t begin, std::int64_t end) {
          run_blocks(sources.data(), output + static_cast<std::size_t>(begin) * width, begin * row, end * row);
        });
    return;
  }
  backend::cpu::parallel_for(n, std::int64_t{1} << 18, [&](std::int64_t begin, std::int64_t end) {
    run_blocks(sources.data(), output, begin, end);
  });
}

DEVTENSOR_DEFINITION void FusedKernel::run_on_gpu(const RunContext& context, NodeInputs in, AnyTensor& out) const {
  const ops::GpuFusedChain* chain = ops::gpu_fused_chain();
  const bool reduces = reduction.row > 0;
  if (!chain || (reduces && producer) || inputs.size() + steps.size() > ops::FusedChainProgram::kMaxRegisters)
    throw InternalError(op + " on " + context.device.full_name + ": no GPU kernel runs this fused group");
  const std::int64_t n = shape.num_elements();
  const std::int64_t rows = reduces ? n / reduction.row : 0;
  const std::int64_t chunks = reduces ? ops::reduction_chunks(rows, reduction.row) : 1;
  if (rows * chunks > std::int64_t{INT32_MAX})  // a block per chunk of a row: the grid's limit
    throw UnimplementedError(op + " on a GPU reduces up to 2^31 - 1 blocks' worth of rows, got " +
                             std::to_string(rows) + " rows; reduce on the CPU or in steps");
  const Shape& result_shape = reduces ? reduced_shape : shape;
  std::size_t first = 0;  // the node's first input that is a register
  if (producer && epilogue.gemm.gemm && chain->gemm && run_gemm_epilogue(*chain, context, in, out)) return;
  if (producer) {
    // The GEMM writes the product into the output (cuBLAS on a GPU), and the chain then runs over
    // it in place: register 0 is the output itself, each element read before it is written, by
    // the same thread. No buffer for the product, and the chain is one launch.
    const AnyTensor* operands[2] = {&in[0], &in[1]};
    producer(context, NodeInputs(operands, 2), std::span<AnyTensor>(&out, 1));
    if (!out.defined() || out.dtype != dtype || out.shape.num_elements() != n)
      throw InternalError(op + " " + out.shape.to_string() + ": its product must have shape " + shape.to_string());
    first = 1;  // in[0] and in[1] are the product's operands, standing for register 0
  } else {
    reuse_or_allocate(out, result_shape, context.device);
  }
  ops::FusedChainProgram program;
  std::shared_ptr<TensorStorage> partials;  // freed stream-ordered, as the GPU reduction's
  if (reduces) {
    program.row = reduction.row;
    program.chunks = chunks;
    program.mean = reduction.mean;
    if (chunks > 1) {
      partials = allocate_storage(context.device, static_cast<std::size_t>(rows * chunks) * sizeof(double),
                                  Shape{rows, chunks}, dtype_string(dtype), op);
      program.partials = partials->data;
    }
  }
  program.dtype = dtype;
  program.n = n;
  program.inputs = static_cast<int>(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const AnyTensor& value = producer && k == 0 ? out : in[k + first];
    const std::int64_t expected = inputs[k].kind == FusedInput::Kind::full ? n : inputs[k].period;
    if (value.shape.num_elements() != expected)
      throw InternalError(op + ": input " + value.shape.to_string() + " does not fit " + shape.to_string());
    program.sources[k] = value.storage->data;
    program.kinds[k] = inputs[k].kind == FusedInput::Kind::full     ? ops::FusedChainProgram::full
                       : inputs[k].kind == FusedInput::Kind::scalar ? ops::FusedChainProgram::scalar
                                                                    : ops::FusedChainProgram::suffix;
    program.periods[k] = inputs[k].period;
  }
  std::array<ops::fused_chain::ChainStep, kMaxRegisters> chain_steps;
  for (std::size_t j = 0; j < steps.size(); ++j)
    chain_steps[j] = {steps[j].code, steps[j].args[0], steps[j].arity > 1 ? steps[j].args[1] : steps[j].args[0]};
  ops::fused_chain::set_steps(program, std::span(chain_steps.data(), steps.size()));
  program.output = out.storage->data;
  chain->run(program, context.device.platform_ordinal, context.device.stream);
}

DEVTENSOR_DEFINITION void FusedKernel::reuse_or_allocate(AnyTensor& out, const Shape& result_shape,
                                                         const Device& device) const {
  if (reusable(out, dtype, result_shape, device)) return;
  const auto bytes = static_cast<std::size_t>(result_shape.num_elements()) * dtype_size(dtype);
  out = AnyTensor(next_tensor_id(), dtype, result_shape,
                  allocate_storage(device, bytes, result_shape, dtype_string(dtype), op));
}

DEVTENSOR_DEFINITION bool FusedKernel::run_gemm_epilogue(const ops::GpuFusedChain& chain, const RunContext& context,
                                                         NodeInputs in, AnyTensor& out) const {
  const Shape& as = in[0].shape;
  const Shape& bs = in[1].shape;
  if (as.rank() != 2 || bs.rank() != 2) return false;  // batches of matrices: the GEMM, then the chain
  const GemmAttrs& gemm = epilogue.gemm;
  ops::FusedGemm call;
  call.dtype = dtype;
  call.transpose_a = gemm.transpose_a;
  call.transpose_b = gemm.transpose_b;
  call.relu = epilogue.relu;
  call.m = gemm.transpose_a ? as[1] : as[0];
  call.k = gemm.transpose_a ? as[0] : as[1];
  call.n = gemm.transpose_b ? bs[0] : bs[1];
  // Mismatched operands and empty products take the producer's path, which reports or handles them.
  if ((gemm.transpose_b ? bs[1] : bs[0]) != call.k || call.m * call.n != shape.num_elements() || call.m == 0 ||
      call.n == 0 || call.k == 0)
    return false;
  if (epilogue.bias >= 0) {
    const AnyTensor& bias = in[static_cast<std::size_t>(epilogue.bias) + 1];  // register k is input k + 1
    if (bias.dtype != dtype || bias.shape.num_elements() != call.n) return false;
    call.bias = bias.storage->data;
  }
  reuse_or_allocate(out, shape, context.device);
  call.a = in[0].storage->data;
  call.b = in[1].storage->data;
  call.out = out.storage->data;
  return chain.gemm(call, context.device.platform_ordinal, context.device.stream);
}

DEVTENSOR_DEFINITION void FusedKernel::run_blocks(const std::byte* const* sources, std::byte* output,
                                                  std::int64_t begin, std::int64_t end) const {
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
  fused_detail::RowSum row{0, 0, output};
  const std::int64_t first_block = std::min(kBlock, end - begin);
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].kind == FusedInput::Kind::scalar)  // the value repeated, once
      for (std::size_t i = 0; i < static_cast<std::size_t>(first_block); ++i)
        std::memcpy(reg(k) + i * width, sources[k], width);
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
        case FusedInput::Kind::scalar: at[k] = reg(k); break;
        case FusedInput::Kind::suffix: {  // the period's elements from start % period on
          const std::int64_t period = inputs[k].period;
          std::int64_t phase = start % period;
          for (std::int64_t done = 0; done < len;) {
            const std::int64_t take = std::min(period - phase, len - done);
            std::memcpy(reg(k) + static_cast<std::size_t>(done) * width,
                        sources[k] + static_cast<std::size_t>(phase) * width, static_cast<std::size_t>(take) * width);
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
      const bool to_output = j + 1 == steps.size() && reduction.row == 0;
      void* result = to_output ? static_cast<void*>(output + offset) : reg(inputs.size() + j);
      step.block(operands, result, static_cast<std::size_t>(len));
      at[inputs.size() + j] = result;
    }
    if (reduction.row == 0) continue;
    if (dtype == DType::DT_DOUBLE)
      fused_detail::add_to_rows<double>(at[registers - 1], len, reduction, row);
    else
      fused_detail::add_to_rows<float>(at[registers - 1], len, reduction, row);
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
