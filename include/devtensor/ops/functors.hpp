#pragma once
/// @file functors.hpp
/// @brief The elementwise ops' scalar functions, one definition for the CPU loops and the CUDA
/// kernels (src/devtensor_cuda.cu instantiates its kernels with the same functors), so CPU and GPU
/// compute the same thing by construction.

#include <cmath>
#include <cstdint>

#include "devtensor/config.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/ops/op_types.hpp"

namespace devtensor::ops {

/// `Functor<Op>{}(x)` or `(x, y)`: Op's scalar function. Integer add, sub, mul, neg, abs and
/// square wrap modulo 2^N (core/arith.hpp says why).
template <class Op>
struct Functor;

#define DEVTENSOR_UNARY_FUNCTOR(Op, expr)                      \
  template <>                                                  \
  struct Functor<Op> {                                         \
    template <class T>                                         \
    DEVTENSOR_HOST_DEVICE T operator()(T x) const { return expr; } \
  }
#define DEVTENSOR_BINARY_FUNCTOR(Op, expr)                          \
  template <>                                                       \
  struct Functor<Op> {                                              \
    template <class T>                                              \
    DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const { return expr; } \
  }

DEVTENSOR_BINARY_FUNCTOR(Add, arith::add(x, y));
DEVTENSOR_BINARY_FUNCTOR(Sub, arith::sub(x, y));
DEVTENSOR_BINARY_FUNCTOR(Mul, arith::mul(x, y));
DEVTENSOR_BINARY_FUNCTOR(RealDiv, x / y);
DEVTENSOR_BINARY_FUNCTOR(Maximum, x > y ? x : y);
DEVTENSOR_BINARY_FUNCTOR(Minimum, x < y ? x : y);
DEVTENSOR_UNARY_FUNCTOR(Neg, arith::neg(x));
DEVTENSOR_UNARY_FUNCTOR(Abs, arith::abs(x));
DEVTENSOR_UNARY_FUNCTOR(Square, arith::mul(x, x));
DEVTENSOR_UNARY_FUNCTOR(Sqrt, std::sqrt(x));
DEVTENSOR_UNARY_FUNCTOR(Exp, std::exp(x));
DEVTENSOR_UNARY_FUNCTOR(Log, std::log(x));
DEVTENSOR_UNARY_FUNCTOR(Relu, x > T{0} ? x : T{0});
DEVTENSOR_UNARY_FUNCTOR(Sigmoid, T{1} / (T{1} + std::exp(-x)));
DEVTENSOR_UNARY_FUNCTOR(Tanh, std::tanh(x));
// Gradient kernels: (dy, features) for ReluGrad, (y, dy) for the others, as TensorFlow orders them.
DEVTENSOR_BINARY_FUNCTOR(ReluGrad, y > T{0} ? x : T{0});
DEVTENSOR_BINARY_FUNCTOR(SigmoidGrad, y * x * (T{1} - x));
DEVTENSOR_BINARY_FUNCTOR(TanhGrad, y * (T{1} - x * x));
DEVTENSOR_BINARY_FUNCTOR(SqrtGrad, T{0.5} * y / x);
// Masks: 1 or 0 in the input's type.
DEVTENSOR_BINARY_FUNCTOR(GreaterEqual, x >= y ? T{1} : T{0});
DEVTENSOR_BINARY_FUNCTOR(Equal, x == y ? T{1} : T{0});

#undef DEVTENSOR_UNARY_FUNCTOR
#undef DEVTENSOR_BINARY_FUNCTOR

/// Python's floor division; a zero divisor gives 0 and raises the flag the caller reads (a host
/// flag on the CPU, device memory on a GPU; every writer stores 1, so the race is benign).
template <class Flag>
struct FloorDivFunctor {
  Flag* by_zero;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    if (y == 0) {
      *by_zero = 1;
      return T{0};
    }
    return arith::floor_div(x, y);
  }
};

/// Range's values: start + i * delta; integers step in wrapping arithmetic (i and i * delta may
/// leave the type), exact because every value of the range lies between start and limit.
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T range_value(T start, T delta, std::int64_t i) {
  return arith::add(start, arith::mul(static_cast<T>(i), delta));
}

}  // namespace devtensor::ops
