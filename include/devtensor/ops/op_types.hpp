#pragma once
/// @file op_types.hpp
/// @brief The op set as types, each with its kernel table (DESIGN.md §4).
///
/// Every op is a type with a TensorFlow name, two lists of element types (those with a CPU kernel,
/// those with a GPU kernel) and the function type of its GPU body (`body<T>`,
/// ops/kernel_signatures.hpp). CPU bodies are inline templates, present in every program; GPU
/// bodies live in src/devtensor_cuda.cu and are found through the registry (ops/registry.hpp), so
/// the placer puts an op on a real GPU only when the program contains its body. Simulated GPUs
/// follow the declaration and run the CPU body. Ops that only copy or view (constants, reshape,
/// identity) have no body: the GPU platform's copies serve them.
/// docs/op_support.md is generated from these tables (tests/unit/ops/op_support_doc.cpp, checked
/// by the docs.op_support test).

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/ops/kernel_signatures.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::ops {

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

/// An op's kernel table: CPU kernels for the types in `Cpu`, GPU kernels for those in `Gpu`.
/// The CPU kernels of built-in ops are inline templates (never registered).
template <class Cpu, class Gpu>
struct KernelTable {
  static constexpr bool inline_cpu_kernel = true;
  template <DeviceTag Tag, class T>
  static constexpr bool has_kernel =
      std::same_as<std::remove_cvref_t<Tag>, cpu_t> ? Cpu::template contains<T> : Gpu::template contains<T>;
};

#define DEVTENSOR_DEFINE_OP(Type, Name, Cpu, Gpu, Body) \
  struct Type : KernelTable<Cpu, Gpu> {                  \
    static constexpr std::string_view name = Name;       \
    template <class T>                                   \
    using body = kernels::Body<T>;                       \
  }
/// Copies and views: no body, the GPU platform's copies serve them.
#define DEVTENSOR_DEFINE_COPY_OP(Type, Name, Cpu, Gpu) \
  struct Type : KernelTable<Cpu, Gpu> {                 \
    static constexpr std::string_view name = Name;      \
  }

// Creation.
DEVTENSOR_DEFINE_COPY_OP(EagerConst, "_EagerConst", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Fill, "Fill", AllTypes, AllTypes, Fill);
DEVTENSOR_DEFINE_OP(Range, "Range", NumericTypes, NumericTypes, Range);
// Elementwise binary (NumPy broadcasting).
DEVTENSOR_DEFINE_OP(Add, "AddV2", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(Sub, "Sub", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(Mul, "Mul", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(RealDiv, "RealDiv", FloatTypes, FloatTypes, Binary);
DEVTENSOR_DEFINE_OP(FloorDiv, "FloorDiv", IntegerTypes, IntegerTypes, FloorDiv);
DEVTENSOR_DEFINE_OP(Maximum, "Maximum", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(Minimum, "Minimum", NumericTypes, NumericTypes, Binary);
// Elementwise unary.
DEVTENSOR_DEFINE_OP(Neg, "Neg", NumericTypes, NumericTypes, Unary);
DEVTENSOR_DEFINE_OP(Abs, "Abs", NumericTypes, NumericTypes, Unary);
DEVTENSOR_DEFINE_OP(Square, "Square", NumericTypes, NumericTypes, Unary);
DEVTENSOR_DEFINE_OP(Sqrt, "Sqrt", FloatTypes, FloatTypes, Unary);
DEVTENSOR_DEFINE_OP(Exp, "Exp", FloatTypes, FloatTypes, Unary);
DEVTENSOR_DEFINE_OP(Log, "Log", FloatTypes, FloatTypes, Unary);
DEVTENSOR_DEFINE_OP(Relu, "Relu", NumericTypes, NumericTypes, Unary);
DEVTENSOR_DEFINE_OP(Sigmoid, "Sigmoid", FloatTypes, FloatTypes, Unary);
DEVTENSOR_DEFINE_OP(Tanh, "Tanh", FloatTypes, FloatTypes, Unary);
DEVTENSOR_DEFINE_OP(AddN, "AddN", NumericTypes, NumericTypes, AddN);
// Linear algebra: cuBLAS has no integer GEMM, so integers multiply on the CPU.
DEVTENSOR_DEFINE_OP(MatMul, "MatMul", NumericTypes, FloatTypes, MatMul);
// Reductions.
DEVTENSOR_DEFINE_OP(Sum, "Sum", NumericTypes, NumericTypes, Reduce);
DEVTENSOR_DEFINE_OP(Mean, "Mean", NumericTypes, NumericTypes, Reduce);
DEVTENSOR_DEFINE_OP(Max, "Max", NumericTypes, NumericTypes, Reduce);
// Shapes and data movement.
DEVTENSOR_DEFINE_COPY_OP(Reshape, "Reshape", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(Transpose, "Transpose", AllTypes, AllTypes, StridedCopy);
DEVTENSOR_DEFINE_OP(ConcatV2, "ConcatV2", AllTypes, AllTypes, StridedCopy);
DEVTENSOR_DEFINE_OP(Split, "SplitV", AllTypes, AllTypes, StridedCopy);
DEVTENSOR_DEFINE_OP(Slice, "Slice", AllTypes, AllTypes, StridedCopy);
DEVTENSOR_DEFINE_COPY_OP(Identity, "Identity", AllTypes, AllTypes);
DEVTENSOR_DEFINE_OP(BroadcastTo, "BroadcastTo", AllTypes, AllTypes, StridedCopy);
DEVTENSOR_DEFINE_OP(Pad, "Pad", AllTypes, AllTypes, Pad);
DEVTENSOR_DEFINE_OP(Cast, "Cast", AllTypes, AllTypes, Cast);

// Gradient kernels (GradientTape's backward pass), as TensorFlow names them.
DEVTENSOR_DEFINE_OP(ReluGrad, "ReluGrad", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(SigmoidGrad, "SigmoidGrad", FloatTypes, FloatTypes, Binary);
DEVTENSOR_DEFINE_OP(TanhGrad, "TanhGrad", FloatTypes, FloatTypes, Binary);
DEVTENSOR_DEFINE_OP(SqrtGrad, "SqrtGrad", FloatTypes, FloatTypes, Binary);
DEVTENSOR_DEFINE_OP(GreaterEqual, "GreaterEqual", NumericTypes, NumericTypes, Binary);
DEVTENSOR_DEFINE_OP(Equal, "Equal", NumericTypes, NumericTypes, Binary);
// Variables: placed like TensorFlow's VarHandleOp; a real GPU holds them when the program contains
// the GPU body (the device copy of their initial value and assignments).
DEVTENSOR_DEFINE_OP(VarHandleOp, "VarHandleOp", AllTypes, AllTypes, Assign);
// Fused optimizer updates (TensorFlow's training_ops), run on the variable's device.
DEVTENSOR_DEFINE_OP(ApplyGradientDescent, "ResourceApplyGradientDescent", FloatTypes, FloatTypes,
                    ApplyGradientDescent);
DEVTENSOR_DEFINE_OP(ApplyKerasMomentum, "ResourceApplyKerasMomentum", FloatTypes, FloatTypes, ApplyKerasMomentum);
DEVTENSOR_DEFINE_OP(ApplyAdam, "ResourceApplyAdam", FloatTypes, FloatTypes, ApplyAdam);
// fit's and evaluate's loss tracker: total += loss · batch size on the loss's device, one launch.
DEVTENSOR_DEFINE_OP(AccumulateWeighted, "AccumulateWeighted", FloatTypes, FloatTypes, AccumulateWeighted);

/// Random ops are on TensorFlow's list of ops never pinned to the host.
struct RandomUniform : KernelTable<FloatTypes, FloatTypes> {
  static constexpr std::string_view name = "RandomUniform";
  template <class T>
  using body = kernels::Random<T>;
  static constexpr bool never_pin_to_host = true;
};
struct RandomStandardNormal : KernelTable<FloatTypes, FloatTypes> {
  static constexpr std::string_view name = "RandomStandardNormal";
  template <class T>
  using body = kernels::Random<T>;
  static constexpr bool never_pin_to_host = true;
};

#undef DEVTENSOR_DEFINE_OP
#undef DEVTENSOR_DEFINE_COPY_OP

}  // namespace devtensor::ops
