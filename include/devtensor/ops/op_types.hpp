#pragma once
/// @file op_types.hpp
/// @brief The op set as types, each with its kernel table (DESIGN.md §4).
///
/// Every op is a type with a TensorFlow name and two lists of element types: those with a CPU
/// kernel and those with a GPU kernel in a full CUDA build (`cuda_kernel<T>`, which simulated GPUs
/// follow). `has_kernel<gpu_t, T>` is true only where that GPU kernel exists in this translation
/// unit: hand-written CUDA kernels (ops/cuda/*.cuh) in nvcc TUs, library kernels (cuBLAS matmul,
/// copies, views) wherever the CUDA runtime is linked; elsewhere a GPU-tagged call falls back to
/// the CPU.
/// docs/op_support.md is generated from these tables (tests/unit/ops/op_support_doc.cpp, checked
/// by the docs.op_support test).

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::ops {
inline namespace DEVTENSOR_ABI_NS {

/// Hand-written CUDA kernels are compiled into this translation unit (an nvcc TU with the
/// devtensor::cuda component: config.hpp's DEVTENSOR_CUDA_KERNELS).
inline constexpr bool cuda_kernels_compiled = DEVTENSOR_CUDA_KERNELS;
/// GPU kernels that are library calls (cuBLAS, cudaMemcpy) exist in every TU that links the CUDA
/// runtime: the cudart flavour and the nvcc flavour.
inline constexpr bool cuda_library_kernels = DEVTENSOR_CUDA_RUNTIME;

template <class... Ts>
struct TypeList {
  template <class T>
  static constexpr bool contains = is_one_of_v<T, Ts...>;
};
using AllTypes = TypeList<float, double, std::int32_t, std::int64_t, bool>;
using NumericTypes = TypeList<float, double, std::int32_t, std::int64_t>;
using FloatTypes = TypeList<float, double>;
using IntegerTypes = TypeList<std::int32_t, std::int64_t>;
using NoTypes = TypeList<>;

/// How an op's GPU kernel is made: hand-written (needs nvcc) or a library call (cuBLAS, a copy;
/// any TU linking the CUDA runtime has it).
enum class GpuKernelKind { hand_written, library };

/// An op's kernel table: CPU kernels for `Cpu`, GPU kernels (full CUDA build) for `Gpu`.
template <class Cpu, class Gpu, GpuKernelKind Kind = GpuKernelKind::hand_written>
struct KernelTable {
  static constexpr GpuKernelKind gpu_kernel_kind = Kind;
  template <class T>
  static constexpr bool cuda_kernel = Gpu::template contains<T>;
  template <DeviceTag Tag, class T>
  static constexpr bool has_kernel =
      std::same_as<std::remove_cvref_t<Tag>, cpu_t>
          ? Cpu::template contains<T>
          : (Gpu::template contains<T> &&
             (cuda_kernels_compiled || (Kind == GpuKernelKind::library && cuda_library_kernels)));
};

#define DEVTENSOR_DEFINE_OP(Type, Name, Cpu, Gpu)            \
  struct Type : KernelTable<Cpu, Gpu> {                      \
    static constexpr std::string_view name = Name;           \
  }
#define DEVTENSOR_DEFINE_LIBRARY_OP(Type, Name, Cpu, Gpu)                 \
  struct Type : KernelTable<Cpu, Gpu, GpuKernelKind::library> {           \
    static constexpr std::string_view name = Name;                        \
  }

// Creation.
DEVTENSOR_DEFINE_LIBRARY_OP(EagerConst, "_EagerConst", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Fill, "Fill", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Range, "Range", NumericTypes, NumericTypes);
// Elementwise binary (NumPy broadcasting).
DEVTENSOR_DEFINE_OP(Add, "AddV2", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Sub, "Sub", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Mul, "Mul", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(RealDiv, "RealDiv", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(FloorDiv, "FloorDiv", IntegerTypes, IntegerTypes);
DEVTENSOR_DEFINE_OP(Maximum, "Maximum", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Minimum, "Minimum", NumericTypes, NumericTypes);
// Elementwise unary.
DEVTENSOR_DEFINE_OP(Neg, "Neg", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Abs, "Abs", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Square, "Square", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Sqrt, "Sqrt", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(Exp, "Exp", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(Log, "Log", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(Relu, "Relu", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Sigmoid, "Sigmoid", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(Tanh, "Tanh", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(AddN, "AddN", NumericTypes, NumericTypes);
// Linear algebra: cuBLAS has no integer GEMM, so integers multiply on the CPU. Library ops
// (cuBLAS, copies and views) are on the GPU in cudart TUs too.
DEVTENSOR_DEFINE_LIBRARY_OP(MatMul, "MatMul", NumericTypes, FloatTypes);
// Reductions.
DEVTENSOR_DEFINE_OP(Sum, "Sum", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Mean, "Mean", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Max, "Max", NumericTypes, NumericTypes);
// Shapes and data movement.
DEVTENSOR_DEFINE_LIBRARY_OP(Reshape, "Reshape", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Transpose, "Transpose", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(ConcatV2, "ConcatV2", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Split, "SplitV", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Slice, "Slice", AllTypes, AllTypes);
DEVTENSOR_DEFINE_LIBRARY_OP(Identity, "Identity", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(BroadcastTo, "BroadcastTo", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Pad, "Pad", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Cast, "Cast", AllTypes, AllTypes);

// Gradient kernels (GradientTape's backward pass), as TensorFlow names them.
DEVTENSOR_DEFINE_OP(ReluGrad, "ReluGrad", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(SigmoidGrad, "SigmoidGrad", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(TanhGrad, "TanhGrad", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(SqrtGrad, "SqrtGrad", FloatTypes, FloatTypes);
DEVTENSOR_DEFINE_OP(GreaterEqual, "GreaterEqual", NumericTypes, NumericTypes);
DEVTENSOR_DEFINE_OP(Equal, "Equal", NumericTypes, NumericTypes);
// Variables.
DEVTENSOR_DEFINE_OP(VarHandleOp, "VarHandleOp", AllTypes, AllTypes);

/// Random ops are on TensorFlow's list of ops never pinned to the host.
struct RandomUniform : KernelTable<FloatTypes, FloatTypes> {
  static constexpr std::string_view name = "RandomUniform";
  static constexpr bool never_pin_to_host = true;
};
struct RandomStandardNormal : KernelTable<FloatTypes, FloatTypes> {
  static constexpr std::string_view name = "RandomStandardNormal";
  static constexpr bool never_pin_to_host = true;
};

#undef DEVTENSOR_DEFINE_OP
#undef DEVTENSOR_DEFINE_LIBRARY_OP

}  // namespace DEVTENSOR_ABI_NS
}  // namespace devtensor::ops
