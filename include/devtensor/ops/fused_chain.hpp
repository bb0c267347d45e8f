#pragma once
/// @file fused_chain.hpp
/// @brief A fused elementwise chain on a GPU (Note [Fused chains on a GPU]): the chain as a small
/// program that one kernel interprets per element, and the slot through which the CUDA kernel
/// translation unit (or a test's fake GPU) provides the kernel that runs it.
///
/// Note [Fused chains on a GPU]
/// On a CPU a fused node runs its ops block by block over cache-resident registers
/// (graph/fused_kernel.hpp). On a GPU the same group becomes a FusedChainProgram, which the fused
/// node builds at each run: per element, each input is loaded once (all of S, one value, or S's
/// trailing dimensions), each step applies
/// its op's scalar function (the functor the op's own GPU kernel applies) to earlier registers,
/// and the last step's value is stored. One kernel interprets every chain: no code generation, no
/// run-time compiler (NVRTC would compile a kernel per chain, hundreds of milliseconds at a first
/// call, and need the functors as source text), and the same evaluation, compiled for the host,
/// runs the chain on the tests' fake GPU. The dispatch on the op's code is uniform across a warp.
/// The price is registers indexed at run time (local memory, cached in L1): to be measured against
/// the copy bandwidth on a GPU (benchmarks/RESULTS.md). A MatMul that only the chain reads runs
/// first (cuBLAS), into the fused node's output, and the chain then runs over it in place:
/// MatMul + BiasAdd + Relu is two launches and one buffer. Reductions are not fused on GPUs yet.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/ops/op_list.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::ops {

/// A fused chain for the GPU kernel: passed by value as the kernel's parameter.
struct FusedChainProgram {
  static constexpr int kMaxRegisters = 32;
  enum Kind : std::uint8_t { full = 0, scalar = 1, suffix = 2 };
  struct Step {
    std::int16_t code = -1;  // chain_code's
    std::uint8_t a = 0;      // argument registers
    std::uint8_t b = 0;
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
};

/// The kernel that runs FusedChainPrograms on a GPU: registered by src/devtensor_cuda.cu, or by a
/// test's fake GPU kernels.
struct GpuFusedChain {
  const char* name;
  /// Queues `program` on `stream` of CUDA ordinal `ordinal`.
  void (*run)(const FusedChainProgram& program, int ordinal, void* stream);
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
inline constexpr bool chainable_v = requires { requires Op::pointwise_arity > 0; } && has_kernel_v<Op, gpu_t, T>;

/// The code of elementwise op `op` (its TensorFlow name) of `dtype` in chains: its position among
/// devtensor's ops; -1 when a chain cannot apply it (float and double only).
int code_of(std::string_view op, DType dtype);

template <class T, class Op>
DEVTENSOR_HOST_DEVICE bool apply_if(int code, int index, T a, T b, T& out) {
  if constexpr (chainable_v<Op, T>) {
    if (code != index) return false;
    if constexpr (Op::pointwise_arity == 1) out = Op{}(a);
    else out = Op{}(a, b);
    return true;
  } else {
    return false;
  }
}
template <class T, class... Ops>
DEVTENSOR_HOST_DEVICE T apply(int code, T a, T b, TypeList<Ops...>) {
  T out{};
  int index = 0;
  (void)((apply_if<T, Ops>(code, index++, a, b, out)) || ...);
  return out;
}

/// Element `i` of the chain's result.
template <class T>
DEVTENSOR_HOST_DEVICE T evaluate(const FusedChainProgram& p, std::int64_t i) {
  T r[FusedChainProgram::kMaxRegisters];
  for (int k = 0; k < p.inputs; ++k) {
    const T* source = static_cast<const T*>(p.sources[static_cast<std::size_t>(k)]);
    const auto kind = p.kinds[static_cast<std::size_t>(k)];
    r[k] = kind == FusedChainProgram::full     ? source[i]
           : kind == FusedChainProgram::scalar ? source[0]
                                                : source[i % p.periods[static_cast<std::size_t>(k)]];
  }
  for (int j = 0; j < p.steps; ++j) {
    const auto& s = p.step[static_cast<std::size_t>(j)];
    r[p.inputs + j] = apply<T>(s.code, r[s.a], r[s.b], BuiltinOps{});
  }
  return r[p.inputs + p.steps - 1];
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

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::ops
