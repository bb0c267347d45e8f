// devtensor's GPU backend: compiled once per program, by nvcc, in the consumer's build tree
// (DESIGN.md §2, Note [One registry per program] in ops/registry.hpp).
//
// Linking the devtensor::cuda CMake component adds this file's object to the program; without
// CMake compile it once and link it with the CUDA runtime and cuBLAS:
//   nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -I<prefix>/include \
//        -c <prefix>/share/devtensor/src/devtensor_cuda.cu -o devtensor_cuda.o
//   g++ -std=c++20 ... your.o devtensor_cuda.o -lcudart -lcublas
// During static initialisation it registers the CUDA platform (real GPUs appear in the Context)
// and the GPU body of every op that declares one; every translation unit of the program then
// reaches them through the registry, whichever compiler built it. It must be linked as an object
// file (an archive member that nobody references is dropped by the linker): the CMake component
// does that, also for consumers whose own code is a static library.
//
// Like TensorFlow's *_gpu.cu.cc files, this file only instantiates: the bodies are the CUDA
// launchers in ops/cuda/ applied to the same functors the CPU loops use (ops/functors.hpp).

#include <cstdint>
#include <type_traits>
#include <vector>

#include "devtensor/backend/cuda/platform.hpp"  // registers the CUDA platform
#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cuda/kernels.cuh"
#include "devtensor/ops/cuda/matmul.hpp"
#include "devtensor/ops/cuda/reduce.cuh"
#include "devtensor/ops/training_functors.hpp"

namespace devtensor::cuda_backend {
namespace {

constexpr const char* kProvider = "devtensor::cuda (src/devtensor_cuda.cu)";
using kernels::Device;
using kernels::Dims;

template <class Op, class T>
void unary(const Device& d, const T* in, T* out, std::int64_t n) {
  ops::cuda::map(d, in, out, n, ops::Functor<Op>{});
}

template <class Op, class T>
void binary(const Device& d, const T* a, const Shape& as, const T* b, const Shape& bs, T* out, const Shape& os) {
  ops::cuda::zip(d, a, as, b, bs, out, os, Op::name, ops::Functor<Op>{});
}

template <class T>
void floor_div(const Device& d, const T* a, const Shape& as, const T* b, const Shape& bs, T* out, const Shape& os,
               int* device_flag) {
  ops::cuda::zip(d, a, as, b, bs, out, os, ops::FloorDiv::name, ops::FloorDivFunctor<int>{device_flag});
}

template <class T>
void fill(const Device& d, T* out, std::int64_t n, T value) {
  ops::cuda::fill(d, out, n, value);
}

template <class T>
struct RangeValue {
  T start;
  T delta;
  __device__ T operator()(std::int64_t i) const { return ops::range_value(start, delta, i); }
};
template <class T>
void range(const Device& d, T* out, std::int64_t n, T start, T delta) {
  ops::cuda::generate(d, out, n, RangeValue<T>{start, delta});
}

template <class T>
void random_uniform(const Device& d, T* out, std::int64_t n, std::uint64_t seed, double minval, double maxval) {
  ops::cuda::generate(d, out, n, detail::UniformValue<T>{seed, minval, maxval});
}
template <class T>
void random_normal(const Device& d, T* out, std::int64_t n, std::uint64_t seed, double mean, double stddev) {
  ops::cuda::generate(d, out, n, detail::NormalValue<T>{seed, mean, stddev});
}

template <class T>
void add_n(const Device& d, T* out, const T* const* inputs, std::size_t count, std::int64_t n) {
  ops::cuda::sum_into(d, out, inputs, count, n);
}

template <class T>
void matmul(const Device& d, bool transpose_a, bool transpose_b, std::int64_t batches, std::int64_t m,
            std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  if constexpr (std::is_floating_point_v<T>) ops::cuda::gemm(d, transpose_a, transpose_b, batches, m, n, k, a, b, c);
}

template <class Op, ops::cpu::ReduceKind Kind, class T>
void reduce(const Device& d, const T* in, const Shape& shape, const std::vector<bool>& axes, T* out) {
  ops::cuda::reduce(d, in, shape, axes, Kind, out, Op::name);
}

template <class Op, class T>
void strided_copy(const Device& d, const T* src, Dims src_strides, std::int64_t src_offset, T* dst, Dims dst_strides,
                  std::int64_t dst_offset, Dims dims) {
  ops::cuda::strided_copy(d, src, src_strides, src_offset, dst, dst_strides, dst_offset, dims, Op::name);
}

template <class T>
void pad(const Device& d, const T* src, Dims src_strides, T* dst, std::int64_t dst_size, Dims dst_strides,
         std::int64_t dst_offset, Dims dims) {
  ops::cuda::fill(d, dst, dst_size, T{});
  ops::cuda::strided_copy(d, src, src_strides, 0, dst, dst_strides, dst_offset, dims, ops::Pad::name);
}

template <class U>
struct ConvertTo {
  template <class T>
  __device__ U operator()(T v) const { return arith::convert<U>(v); }
};
template <class T>
void cast(const Device& d, const T* in, void* out, DType to, std::int64_t n) {
  switch (to) {
    case DType::DT_FLOAT: return ops::cuda::map(d, in, static_cast<float*>(out), n, ConvertTo<float>{});
    case DType::DT_DOUBLE: return ops::cuda::map(d, in, static_cast<double*>(out), n, ConvertTo<double>{});
    case DType::DT_INT32: return ops::cuda::map(d, in, static_cast<std::int32_t*>(out), n, ConvertTo<std::int32_t>{});
    case DType::DT_INT64: return ops::cuda::map(d, in, static_cast<std::int64_t*>(out), n, ConvertTo<std::int64_t>{});
    case DType::DT_BOOL: return ops::cuda::map(d, in, static_cast<bool*>(out), n, ConvertTo<bool>{});
  }
}

template <class T>
void assign(const Device& d, T* dst, const T* src, std::int64_t n) {
  ops::cuda::copy(d, dst, src, n);
}

/// A fused optimizer update: one launch of the functor the CPU loop runs (ops/training_functors.hpp).
template <class Update>
void apply_update(const Device& d, const Update& update, std::int64_t n) {
  ops::cuda::for_each_index(d, n, update);
}

/// Registers `body_for(type_identity<T>)` for every element type Op declares a GPU kernel for.
template <class Op, class BodyFor>
void register_op(BodyFor body_for) {
  [&]<class... Ts>(ops::TypeList<Ts...>) {
    (
        [&] {
          if constexpr (has_kernel_v<Op, gpu_t, Ts>)
            register_kernel<Op, gpu_t, Ts>(body_for(std::type_identity<Ts>{}), kProvider);
        }(),
        ...);
  }(ops::AllTypes{});
}

template <class Op>
void register_unary_op() {
  register_op<Op>([]<class T>(std::type_identity<T>) { return &unary<Op, T>; });
}
template <class... Ops>
void register_unary() {
  (register_unary_op<Ops>(), ...);
}
template <class Op>
void register_binary_op() {
  register_op<Op>([]<class T>(std::type_identity<T>) { return &binary<Op, T>; });
}
template <class... Ops>
void register_binary() {
  (register_binary_op<Ops>(), ...);
}
template <class Op>
void register_strided_copy_op() {
  register_op<Op>([]<class T>(std::type_identity<T>) { return &strided_copy<Op, T>; });
}
template <class... Ops>
void register_strided_copy() {
  (register_strided_copy_op<Ops>(), ...);
}

bool register_all() {
  register_unary<ops::Neg, ops::Abs, ops::Square, ops::Sqrt, ops::Exp, ops::Log, ops::Relu, ops::Sigmoid,
                 ops::Tanh>();
  register_binary<ops::Add, ops::Sub, ops::Mul, ops::RealDiv, ops::Maximum, ops::Minimum, ops::ReluGrad,
                  ops::SigmoidGrad, ops::TanhGrad, ops::SqrtGrad, ops::GreaterEqual, ops::Equal>();
  register_op<ops::FloorDiv>([]<class T>(std::type_identity<T>) { return &floor_div<T>; });
  register_op<ops::Fill>([]<class T>(std::type_identity<T>) { return &fill<T>; });
  register_op<ops::Range>([]<class T>(std::type_identity<T>) { return &range<T>; });
  register_op<ops::RandomUniform>([]<class T>(std::type_identity<T>) { return &random_uniform<T>; });
  register_op<ops::RandomStandardNormal>([]<class T>(std::type_identity<T>) { return &random_normal<T>; });
  register_op<ops::AddN>([]<class T>(std::type_identity<T>) { return &add_n<T>; });
  register_op<ops::MatMul>([]<class T>(std::type_identity<T>) { return &matmul<T>; });
  register_op<ops::Sum>([]<class T>(std::type_identity<T>) { return &reduce<ops::Sum, ops::cpu::ReduceKind::sum, T>; });
  register_op<ops::Mean>(
      []<class T>(std::type_identity<T>) { return &reduce<ops::Mean, ops::cpu::ReduceKind::mean, T>; });
  register_op<ops::Max>([]<class T>(std::type_identity<T>) { return &reduce<ops::Max, ops::cpu::ReduceKind::max, T>; });
  register_strided_copy<ops::Transpose, ops::ConcatV2, ops::Split, ops::Slice, ops::BroadcastTo>();
  register_op<ops::Pad>([]<class T>(std::type_identity<T>) { return &pad<T>; });
  register_op<ops::Cast>([]<class T>(std::type_identity<T>) { return &cast<T>; });
  register_op<ops::VarHandleOp>([]<class T>(std::type_identity<T>) { return &assign<T>; });
  register_op<ops::ApplyGradientDescent>(
      []<class T>(std::type_identity<T>) { return &apply_update<ops::GradientDescentUpdate<T>>; });
  register_op<ops::ApplyKerasMomentum>(
      []<class T>(std::type_identity<T>) { return &apply_update<ops::KerasMomentumUpdate<T>>; });
  register_op<ops::ApplyAdam>([]<class T>(std::type_identity<T>) { return &apply_update<ops::AdamUpdate<T>>; });
  register_op<ops::AccumulateWeighted>(
      []<class T>(std::type_identity<T>) { return &apply_update<ops::WeightedAccumulateUpdate<T>>; });
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
}  // namespace devtensor::cuda_backend
