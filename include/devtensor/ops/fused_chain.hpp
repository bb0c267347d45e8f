#pragma once
/// @file fused_chain.hpp
/// @brief A fused elementwise chain on a GPU (Note [Fused chains on a GPU]): the chain as a small
/// program that one kernel interprets per element, and the slot through which the CUDA kernel
/// translation unit (or a test's fake GPU) provides the kernel that runs it.
///
/// Note [Fused chains on a GPU]
/// On a CPU a fused node runs its ops block by block over cache-resident registers
/// (graph/fused_kernel.hpp). On a GPU the same group becomes a FusedChainProgram, which the fused
/// node builds at each run and one kernel interprets: no code generation, no run-time compiler
/// (NVRTC would compile a kernel per chain, hundreds of milliseconds at a first call, and need the
/// functors as source text), and the same interpreter, compiled for the host, runs the chain on
/// the tests' fake GPU, thread by thread, so its indexing is tested without a GPU.
/// - Per thread, kLanes<T> elements (32 bytes: 8 floats, 4 doubles), a block's width apart, so
///   that every load and store of a warp is coalesced and each thread has kLanes loads in flight
///   per input: each input is loaded once per element (all of S, one value, or S's trailing
///   dimensions, whose index advances without a division per element).
/// - Each step applies its op's scalar function (the functor the op's own GPU kernel applies) to
///   all lanes at once: the op is found once per step and thread by a binary search over the op
///   codes, uniform across a warp, not once per element.
/// - The previous step's result stays in registers; a result that a later step reads again, and
///   the inputs, sit in slots (local memory, cached in L1), reused once their last reader has read
///   them (set_steps allocates them on the host). The slots are the kernel's stack, 1 KiB a
///   thread (ptxas, sm_90: 40 registers for float, 53 for double, no spills), which the driver
///   reserves for every thread the GPU can hold, ~0.3 GB on an H100/H200: inside TensorFlow's
///   reserve of device memory (what it keeps outside the memory limit), which the BFC allocator leaves alone.
/// A MatMul that only the chain reads runs first (cuBLAS), into the fused node's output, and the
/// chain then runs over it in place: each thread loads its lanes before it stores them. A Sum or Mean over trailing
/// axes that reads only the chain (`_FusedReduction`) ends it: each block adds its threads' results in double and cuts
/// the rows into chunks as the GPU reduction kernel does (ops/cuda/reduce.cuh), each thread adding the same elements in
/// the same order, so the result never goes to memory and equals the unfused graph's on the same GPU up to contraction
/// of the chain's arithmetic.
///
/// Note [GEMM epilogues]
/// When the chain after a MatMul is exactly what cuBLASLt's epilogues apply (a bias over the last
/// dimension, a Relu, or the bias then the Relu: Dense's forward pass), the MatMul and the chain
/// are one cublasLtMatmul with CUBLASLT_EPILOGUE_BIAS, _RELU or _RELU_BIAS, which add the bias and
/// clamp while the product is still in the GEMM's registers: one launch, no second pass over the
/// product (TensorFlow's _FusedMatMul and PyTorch's addmm do the same). Relu's clamp maps NaN to 0,
/// as devtensor's Relu does. The GEMM's algorithm is cuBLASLt's choice, so the product may round
/// differently from cuBLAS's sgemm in its last bits; the bias add and the clamp are exact. When
/// cuBLASLt has no algorithm for a problem (its heuristic returns none, or the bias is not 16-byte
/// aligned) the fused node runs the GEMM and the chain kernel instead.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "devtensor/config.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/op_list.hpp"
#include "devtensor/ops/row_chunks.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::ops {

/// A fused chain for the GPU kernel: passed by value as the kernel's parameter.
struct FusedChainProgram {
  static constexpr int kMaxRegisters = 32;
  static constexpr std::uint8_t kPrevious = 0xff;  // an operand: the previous step's result
  static constexpr std::uint8_t kNoSlot = 0xff;    // a result only the next step reads, or the last
  enum Kind : std::uint8_t { full = 0, scalar = 1, suffix = 2 };
  struct Step {
    std::int16_t code = -1;      // code_of's
    std::uint8_t a = kPrevious;  // operand slots (an input k is in slot k), or kPrevious
    std::uint8_t b = kPrevious;
    std::uint8_t keep = kNoSlot;  // the slot the result is kept in for a later step
  };
  DType dtype = DType::DT_FLOAT;
  std::int64_t n = 0;  // elements of S
  int inputs = 0;
  int steps = 0;
  std::array<const void*, kMaxRegisters> sources{};
  std::array<std::uint8_t, kMaxRegisters> kinds{};
  std::array<std::int64_t, kMaxRegisters> periods{};  // suffix inputs: their element count
  std::array<Step, kMaxRegisters> step{};
  void* output = nullptr;
  /// row > 0: the Sum (or Mean) of each row of `row` results is the output. Each row is cut into
  /// `chunks` chunks, one block each; with more than one, each block writes its sum (a double)
  /// to `partials`, and a second pass adds each row's partials, as the GPU reduction does.
  std::int64_t row = 0;
  std::int64_t chunks = 1;
  bool mean = false;
  void* partials = nullptr;
};

/// A GEMM with the epilogue that cuBLASLt applies as it writes the product (Note [GEMM
/// epilogues]): out[m, n] = op(a) · op(b), plus `bias` (n values) when given, then Relu when
/// asked; row-major, one matrix.
struct FusedGemm {
  DType dtype = DType::DT_FLOAT;
  bool transpose_a = false;
  bool transpose_b = false;
  bool relu = false;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;
  void* out = nullptr;
};

/// The kernels that run fused nodes on a GPU: registered by src/devtensor_cuda.cu, or by a test's
/// fake GPU kernels.
struct GpuFusedChain {
  const char* name;
  /// Queues `program` on `stream` of CUDA ordinal `ordinal`.
  void (*run)(const FusedChainProgram& program, int ordinal, void* stream);
  /// Queues `gemm` on `stream` and returns true when it has an algorithm for it; false queues
  /// nothing (the fused node then runs the GEMM and the chain). nullptr: no GEMM epilogues.
  bool (*gemm)(const FusedGemm& gemm, int ordinal, void* stream) = nullptr;
};

inline std::atomic<const GpuFusedChain*>& gpu_fused_chain_slot() noexcept {
  static std::atomic<const GpuFusedChain*> slot{nullptr};
  return slot;
}
/// The registered chain kernel, or nullptr: a program without one leaves GPU chains unfused.
[[nodiscard]] inline const GpuFusedChain* gpu_fused_chain() noexcept {
  return gpu_fused_chain_slot().load(std::memory_order_acquire);
}
/// Installs `kernel` (nullptr uninstalls); returns the one it replaced.
inline const GpuFusedChain* register_gpu_fused_chain(const GpuFusedChain* kernel) noexcept {
  return gpu_fused_chain_slot().exchange(kernel, std::memory_order_acq_rel);
}

namespace fused_chain {

/// Whether a chain may apply Op to T on a GPU: an elementwise op over one type with a GPU kernel.
template <class Op, class T>
inline constexpr bool chainable_v = (ops::op_traits<Op>().pointwise_arity > 0) && has_kernel_v<Op, gpu_t, T>;

/// The code of elementwise op `op` (its TensorFlow name) of `dtype` in chains: its position among
/// devtensor's ops; -1 when a chain cannot apply it (float and double only).
int code_of(std::string_view op, DType dtype);

/// A step of a chain as the optimizer sees it: operands as registers (the inputs first, then each
/// step's result: step j's is register inputs + j); a unary op has b == a.
struct ChainStep {
  int code = -1;
  int a = 0;
  int b = 0;
};

/// Fills `program.step` (and `program.steps`) from `steps` over `program.inputs` inputs: operands
/// become slots or kPrevious, and each result a later step reads again gets a slot, one whose value
/// has had its last reader. Throws InternalError on more than kMaxRegisters registers, no step, or
/// an operand that is not an earlier register.
void set_steps(FusedChainProgram& program, std::span<const ChainStep> steps);

/// Elements a thread of the chain kernel evaluates: 32 bytes' worth.
template <class T>
inline constexpr std::size_t kLanes = 32 / sizeof(T);

template <class T, class OpTuple, std::size_t Lo, std::size_t Hi>
constexpr bool any_chainable() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return (chainable_v<std::tuple_element_t<Lo + I, OpTuple>, T> || ...);
  }
  (std::make_index_sequence<Hi - Lo>{});
}

/// out = op(a, b) lane by lane, where op is the op of code `code` among OpTuple's [Lo, Hi): a
/// binary search over the codes, whose halves without a chainable op vanish at compile time.
template <class T, class OpTuple, std::size_t Lo, std::size_t Hi>
DEVTENSOR_HOST_DEVICE void apply_lanes(int code, const T (&a)[kLanes<T>], const T (&b)[kLanes<T>],
                                       T (&out)[kLanes<T>]) {
  if constexpr (Hi - Lo == 1) {
    using Op = std::tuple_element_t<Lo, OpTuple>;
    if constexpr (chainable_v<Op, T>) {
      for (std::size_t v = 0; v < kLanes<T>; ++v) {
        if constexpr (ops::op_traits<Op>().pointwise_arity == 1)
          out[v] = Op{}(a[v]);
        else
          out[v] = Op{}(a[v], b[v]);
      }
    }
  } else if constexpr (any_chainable<T, OpTuple, Lo, Hi>()) {
    constexpr std::size_t mid = Lo + (Hi - Lo) / 2;
    if (code < static_cast<int>(mid))
      apply_lanes<T, OpTuple, Lo, mid>(code, a, b, out);
    else
      apply_lanes<T, OpTuple, mid, Hi>(code, a, b, out);
  }
}

template <class... Ops>
std::tuple<Ops...> as_tuple(TypeList<Ops...>);
using ChainOps = decltype(as_tuple(BuiltinOps{}));

/// The chain's results at elements first, first + spacing, ... (`lanes` of them, at most
/// kLanes<T>; the lanes beyond read valid elements, and nobody uses their results): the inputs
/// loaded, then the steps applied to all lanes at once.
template <class T>
DEVTENSOR_HOST_DEVICE void evaluate_strip(const FusedChainProgram& p, std::int64_t first, std::int64_t spacing,
                                          std::size_t lanes, T (&result)[kLanes<T>]) {
  constexpr std::size_t L = kLanes<T>;
  T slot[FusedChainProgram::kMaxRegisters][L];
  for (int k = 0; k < p.inputs; ++k) {
    const T* source = static_cast<const T*>(p.sources[static_cast<std::size_t>(k)]);
    const auto kind = p.kinds[static_cast<std::size_t>(k)];
    if (kind == FusedChainProgram::full) {
      for (std::size_t v = 0; v < L; ++v)
        slot[k][v] = source[first + static_cast<std::int64_t>(v < lanes ? v : 0) * spacing];
    } else if (kind == FusedChainProgram::scalar) {
      const T value = source[0];
      for (std::size_t v = 0; v < L; ++v) slot[k][v] = value;
    } else {  // element i reads source[i % period]: the index advances by spacing % period per lane
      const std::int64_t period = p.periods[static_cast<std::size_t>(k)];
      const std::int64_t advance = spacing % period;
      std::int64_t at = first % period;
      for (std::size_t v = 0; v < L; ++v) {
        slot[k][v] = source[at];
        at += advance;
        if (at >= period) at -= period;
      }
    }
  }
  for (std::size_t v = 0; v < L; ++v) result[v] = T{};
  for (int j = 0; j < p.steps; ++j) {
    const FusedChainProgram::Step& s = p.step[static_cast<std::size_t>(j)];
    T a[L];
    T b[L];
    // Branches, not a pointer to either: `result` stays in registers.
    if (s.a == FusedChainProgram::kPrevious)
      for (std::size_t v = 0; v < L; ++v) a[v] = result[v];
    else
      for (std::size_t v = 0; v < L; ++v) a[v] = slot[s.a][v];
    if (s.b == FusedChainProgram::kPrevious)
      for (std::size_t v = 0; v < L; ++v) b[v] = result[v];
    else
      for (std::size_t v = 0; v < L; ++v) b[v] = slot[s.b][v];
    apply_lanes<T, ChainOps, 0, std::tuple_size_v<ChainOps>>(s.code, a, b, result);
    if (s.keep != FusedChainProgram::kNoSlot)
      for (std::size_t v = 0; v < L; ++v) slot[s.keep][v] = result[v];
  }
}

/// evaluate_strip, then the results stored. Every load comes before the first store (the chain
/// may run in place over its input 0).
template <class T>
DEVTENSOR_HOST_DEVICE void run_strip(const FusedChainProgram& p, std::int64_t first, std::int64_t spacing,
                                     std::size_t lanes) {
  T result[kLanes<T>];
  evaluate_strip<T>(p, first, spacing, lanes, result);
  T* out = static_cast<T*>(p.output);
  for (std::size_t v = 0; v < kLanes<T>; ++v)
    if (v < lanes) out[first + static_cast<std::int64_t>(v) * spacing] = result[v];
}

/// What thread `thread` of block `block` of the chain kernel does, `threads` per block and
/// `blocks` in the grid: a block covers a tile of threads · kLanes<T> elements, each thread every
/// threads-th of it, and the grid strides over the tiles.
template <class T>
DEVTENSOR_HOST_DEVICE void run_thread(const FusedChainProgram& p, std::int64_t block, std::int64_t thread,
                                      std::int64_t threads, std::int64_t blocks) {
  constexpr auto lanes_per_thread = static_cast<std::int64_t>(kLanes<T>);
  const std::int64_t tile = threads * lanes_per_thread;
  for (std::int64_t first = block * tile + thread; first < p.n; first += blocks * tile) {
    const std::int64_t lanes = (p.n - first + threads - 1) / threads;
    run_strip<T>(p, first, threads, static_cast<std::size_t>(lanes < lanes_per_thread ? lanes : lanes_per_thread));
  }
}

/// Thread `thread`'s share of block `block` of a chain reduction, `threads` per block: the sum, in
/// double (the CPU's and the GPU's accumulator for float and double), of the chain's results at
/// elements begin + thread, begin + thread + threads, ... of its chunk, in that order.
template <class T>
DEVTENSOR_HOST_DEVICE double reduce_thread(const FusedChainProgram& p, std::int64_t block, std::int64_t thread,
                                           std::int64_t threads) {
  constexpr auto lanes_per_thread = static_cast<std::int64_t>(kLanes<T>);
  const std::int64_t row = block / p.chunks;
  const std::int64_t chunk = (p.row + p.chunks - 1) / p.chunks;
  const std::int64_t begin = (block % p.chunks) * chunk;
  const std::int64_t end = begin + chunk < p.row ? begin + chunk : p.row;
  double sum = 0;
  for (std::int64_t first = begin + thread; first < end; first += threads * lanes_per_thread) {
    const std::int64_t lanes = (end - first + threads - 1) / threads;
    const auto count = static_cast<std::size_t>(lanes < lanes_per_thread ? lanes : lanes_per_thread);
    T values[kLanes<T>];
    evaluate_strip<T>(p, row * p.row + first, threads, count, values);
    for (std::size_t v = 0; v < count; ++v) sum += static_cast<double>(values[v]);
  }
  return sum;
}

/// A row's result from its sum: the sum, or for a Mean the sum divided by the row's length.
template <class T>
DEVTENSOR_HOST_DEVICE T finish_row(const FusedChainProgram& p, double sum) {
  return static_cast<T>(p.mean ? arith::divide_by_count(sum, p.row) : sum);
}

/// Blocks of `threads` for a chain of `n` elements of T: one tile each, at most `max_blocks`.
template <class T>
constexpr std::int64_t blocks_for(std::int64_t n, std::int64_t threads, std::int64_t max_blocks) {
  const std::int64_t tile = threads * static_cast<std::int64_t>(kLanes<T>);
  const std::int64_t blocks = (n + tile - 1) / tile;
  return blocks < 1 ? 1 : blocks < max_blocks ? blocks : max_blocks;
}

}  // namespace fused_chain

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION int fused_chain::code_of(std::string_view op, DType dtype) {
  int code = -1;
  int index = 0;
  for_each_op(BuiltinOps{}, [&]<class Op>() {
    if constexpr (chainable_v<Op, float> || chainable_v<Op, double>)
      if (Op::name == op && ((dtype == DType::DT_FLOAT && chainable_v<Op, float>) ||
                             (dtype == DType::DT_DOUBLE && chainable_v<Op, double>)))
        code = index;
    ++index;
  });
  return code;
}

DEVTENSOR_DEFINITION void fused_chain::set_steps(FusedChainProgram& program, std::span<const ChainStep> steps) {
  constexpr int kMax = FusedChainProgram::kMaxRegisters;
  const int inputs = program.inputs;
  const int count = static_cast<int>(steps.size());
  if (count == 0 || inputs < 0 || inputs + count > kMax)
    throw InternalError("A fused chain of " + std::to_string(inputs) + " inputs and " + std::to_string(count) +
                        " steps does not fit the GPU kernel's " + std::to_string(kMax) + " registers");
  // The last step that reads each register.
  std::array<int, kMax> last_read;
  last_read.fill(-1);
  for (int j = 0; j < count; ++j) {
    const ChainStep& step = steps[static_cast<std::size_t>(j)];
    for (const int r : {step.a, step.b}) {
      if (r < 0 || r >= inputs + j)
        throw InternalError("Step " + std::to_string(j) + " of a fused chain reads register " + std::to_string(r) +
                            ", which is not an earlier one");
      last_read[static_cast<std::size_t>(r)] = j;
    }
  }
  std::array<int, kMax> slot_of;  // the register's slot, while it holds one
  slot_of.fill(-1);
  std::array<bool, kMax> busy{};
  for (int k = 0; k < inputs; ++k) {
    slot_of[static_cast<std::size_t>(k)] = k;
    busy[static_cast<std::size_t>(k)] = true;
  }
  const auto operand = [&](int r, int j) -> std::uint8_t {
    if (j > 0 && r == inputs + j - 1) return FusedChainProgram::kPrevious;  // still in registers
    return static_cast<std::uint8_t>(slot_of[static_cast<std::size_t>(r)]);
  };
  for (int j = 0; j < count; ++j) {
    const ChainStep& step = steps[static_cast<std::size_t>(j)];
    FusedChainProgram::Step& out = program.step[static_cast<std::size_t>(j)];
    out.code = static_cast<std::int16_t>(step.code);
    out.a = operand(step.a, j);
    out.b = operand(step.b, j);
    // The operands are read before the result is written: slots whose last reader is this step
    // take its result.
    for (const int r : {step.a, step.b})
      if (last_read[static_cast<std::size_t>(r)] == j && slot_of[static_cast<std::size_t>(r)] >= 0) {
        busy[static_cast<std::size_t>(slot_of[static_cast<std::size_t>(r)])] = false;
        slot_of[static_cast<std::size_t>(r)] = -1;
      }
    out.keep = FusedChainProgram::kNoSlot;
    const int result = inputs + j;
    if (last_read[static_cast<std::size_t>(result)] > j + 1) {  // read again after the next step
      int free = 0;
      while (busy[static_cast<std::size_t>(free)]) ++free;  // a free slot exists: registers ≤ kMax
      busy[static_cast<std::size_t>(free)] = true;
      slot_of[static_cast<std::size_t>(result)] = free;
      out.keep = static_cast<std::uint8_t>(free);
    }
  }
  program.steps = count;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::ops
