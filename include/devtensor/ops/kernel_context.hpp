#pragma once
/// @file kernel_context.hpp
/// @brief What a built-in op's body receives: the device it runs on, the op's attributes, its
/// inputs and its already allocated outputs. Every body of every op defined as data has the one
/// signature `void(const KernelContext&)` (TensorFlow's `OpKernel::Compute(OpKernelContext*)`), so
/// the registry keeps them all alike, run_op calls them for eager ops, and a graph's executor can
/// call the same bodies for its nodes.

#include <cstdint>
#include <span>

#include "devtensor/tensor/dtype.hpp"

namespace devtensor {

struct Device;
class Shape;

namespace ops {

/// A tensor as a body sees it: a buffer on the body's device and its shape (the element type is
/// the body's template argument, or the op's attribute for Cast's output).
struct KernelTensor {
  void* data = nullptr;
  const Shape* shape = nullptr;

  template <class T>
  [[nodiscard]] const T* in() const noexcept {
    return static_cast<const T*>(data);
  }
  template <class T>
  [[nodiscard]] T* out() const noexcept {
    return static_cast<T*>(data);
  }
};

/// One call of a body: the device (its CUDA ordinal and stream on a real GPU), the op's Attrs, the
/// inputs (already on that device) and the outputs (allocated from the op's shape function).
struct KernelContext {
  const Device& device;
  const void* attrs;
  std::span<const KernelTensor> inputs;
  std::span<const KernelTensor> outputs;

  template <class Attrs>
  [[nodiscard]] const Attrs& attr() const noexcept {
    return *static_cast<const Attrs*>(attrs);
  }
  template <class T>
  [[nodiscard]] const T* input(std::size_t i) const noexcept {
    return inputs[i].in<T>();
  }
  template <class T>
  [[nodiscard]] T* output(std::size_t i = 0) const noexcept {
    return outputs[i].out<T>();
  }
  [[nodiscard]] const Shape& input_shape(std::size_t i) const noexcept { return *inputs[i].shape; }
  [[nodiscard]] const Shape& output_shape(std::size_t i = 0) const noexcept { return *outputs[i].shape; }
};

/// A scalar function computed in float and rounded once, for float16 and bfloat16 elements
/// (Note [Sixteen-bit floats]): what TensorFlow's Eigen kernels do per element for most ops (Exp,
/// Tanh, Add: one rounding, where the function's own steps in 16 bits would round at each).
template <class Self>
struct InFloat {
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return T(Self{}(static_cast<float>(x)));
  }
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return T(Self{}(static_cast<float>(x), static_cast<float>(y)));
  }
};
/// The function an elementwise body applies to T's elements: for the 16-bit floats computed in
/// float, unless the op rounds each step in T as TensorFlow's kernel does (`rounds_each_step`).
template <class Self>
constexpr bool rounds_each_step() noexcept {
  if constexpr (requires { Self::rounds_each_step; })
    return Self::rounds_each_step;
  else
    return false;
}
template <class Self, class T>
using scalar_function_t =
    std::conditional_t<is_sixteen_bit_float_v<T> && !rounds_each_step<Self>(), InFloat<Self>, Self>;

/// The function type of every body of an op defined as data (`body<T>` of those ops).
using Kernel = void(const KernelContext&);

/// What a reduction computes (Sum, Mean, Max; the CPU and CUDA bodies share it).
enum class Reduction { sum, mean, max };

/// An attribute value of any element type, exact for each (Fill's value, Range's start and delta):
/// graph nodes keep attributes without knowing the element type.
class Scalar {
 public:
  Scalar() = default;
  template <Element T>
  static Scalar of(T value) noexcept {
    Scalar s;
    if constexpr (is_floating_element_v<T>)
      s.floating_ = static_cast<double>(value);
    else
      s.integer_ = static_cast<std::int64_t>(value);
    s.dtype_ = dtype_enum<T>();
    return s;
  }
  /// The value as T: the stored type's value converted as C++ converts (exact for the stored type).
  template <Element T>
  [[nodiscard]] T as() const noexcept {
    if (dtype_ == DType::DT_FLOAT || dtype_ == DType::DT_DOUBLE || dtype_ == DType::DT_HALF ||
        dtype_ == DType::DT_BFLOAT16)
      return static_cast<T>(floating_);
    return static_cast<T>(integer_);
  }
  /// The same as as<T>(), spelled `static_cast<T>(attrs.lo)`: in a template (an op's gradient
  /// over `GradArgs<T, Attrs>`), `attrs.lo.as<T>()` would need `.template`.
  template <Element T>
  [[nodiscard]] explicit operator T() const noexcept {
    return as<T>();
  }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }

 private:
  double floating_ = 0;
  std::int64_t integer_ = 0;
  DType dtype_ = DType::DT_FLOAT;
};

}  // namespace ops
}  // namespace devtensor
