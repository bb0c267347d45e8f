#pragma once
/// @file matmul.hpp
/// @brief MatMul, defined once (ops/op_def.hpp): matmul(a, b, transpose_a, transpose_b) of rank-2
/// tensors or batches of matrices with equal leading dimensions. CPU: CBLAS (OpenBLAS) or the
/// portable blocked kernel; GPU: cuBLAS, which has no integer GEMM, so integers multiply on the CPU.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/matmul_options.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

struct MatMul : OpTable<NumericTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "MatMul";
  // gemm: its epilogue may fuse into cuBLASLt (graph::GemmAttrs).
  static constexpr OpTraits traits{.handles_unknown_dims = true, .gemm = true};
  struct Attrs {
    bool transpose_a = false;
    bool transpose_b = false;
  };
  /// The product's dimensions: batch..., m, n (and k, for the bodies).
  struct Dims {
    std::int64_t batches, m, n, k;
  };
  static Dims dims(const Attrs& attrs, const Shape& as, const Shape& bs) {
    const std::size_t r = as.rank();
    const std::int64_t m = attrs.transpose_a ? as[r - 1] : as[r - 2];
    const std::int64_t n = attrs.transpose_b ? bs[r - 2] : bs[r - 1];
    std::int64_t batches = 1;
    for (std::size_t d = 0; d + 2 < r; ++d) batches *= as[d];
    return {batches, m, n, attrs.transpose_a ? as[r - 2] : as[r - 1]};
  }
  /// @throws InvalidArgumentError "Matrix size-incompatible: In[0]: [..], In[1]: [..]", and for
  /// ranks below 2 or batch dimensions that differ.
  static Shape output_shape(const Attrs& attrs, const Shape& as, const Shape& bs);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto& x = a.x[0];
    const auto& w = a.x[1];
    const auto& g = a.dy[0];
    const bool ta = a.attrs.transpose_a;
    const bool tb = a.attrs.transpose_b;
    if (!ta && !tb) return {matmul(g, w, false, true), matmul(x, g, true, false)};
    if (ta && !tb) return {matmul(w, g, false, true), matmul(x, g)};
    if (!ta && tb) return {matmul(g, w), matmul(g, x, true, false)};
    return {matmul(w, g, true, true), matmul(g, x, true, true)};
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Shape MatMul::output_shape(const Attrs& attrs, const Shape& as, const Shape& bs) {
  if (as.rank() < 2 || bs.rank() < 2 || as.rank() != bs.rank())
    throw InvalidArgumentError("In[0] and In[1] must be matrices of the same rank >= 2, got shapes " + as.to_string() +
                               " and " + bs.to_string() + " [Op:MatMul]");
  const std::size_t r = as.rank();
  // An unknown dimension (a graph's static shape) matches any: the kernel checks at run time.
  const auto differ = [](std::int64_t a, std::int64_t b) { return a != b && a >= 0 && b >= 0; };
  for (std::size_t d = 0; d + 2 < r; ++d)
    if (differ(as[d], bs[d]))
      throw InvalidArgumentError("In[0] and In[1] must have the same batch dimensions: " + as.to_string() + " vs. " +
                                 bs.to_string() + " [Op:MatMul]");
  const std::int64_t kb = attrs.transpose_b ? bs[r - 1] : bs[r - 2];
  const Dims d = dims(attrs, as, bs);
  if (differ(d.k, kb))
    throw InvalidArgumentError("Matrix size-incompatible: In[0]: " + as.to_string() + ", In[1]: " + bs.to_string() +
                               " [Op:MatMul]");
  std::vector<std::int64_t> out(as.dims().begin(), as.dims().end() - 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0) out[i] = bs[i];
  out.push_back(d.m);
  out.push_back(d.n);
  return Shape::partial(out, name);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

using LinalgOps = TypeList<MatMul>;

}  // namespace devtensor::ops

namespace devtensor {

/// op(a) · op(b), op transposing the last two dimensions when asked.
/// @throws InvalidArgumentError "Matrix size-incompatible: In[0]: [..], In[1]: [..]" and for
/// ranks below 2 or batch dimensions that differ.
template <Numeric T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, bool transpose_a = false, bool transpose_b = false,
                 const OpOptions& options = {}) {
  return run_op<ops::MatMul>(options, {transpose_a, transpose_b}, a, b);
}

/// matmul(devtensor::gpu, a, b): the GPU kernel when the op declares one for T (the program must
/// contain it, else soft placement falls back), the CPU kernel otherwise, chosen at compile time.
template <DeviceTag Tag, Numeric T>
Tensor<T> matmul(Tag tag, const Tensor<T>& a, const Tensor<T>& b, bool transpose_a = false, bool transpose_b = false) {
  return with_kernel_device<ops::MatMul, Tag, T>(tag, [&] { return matmul(a, b, transpose_a, transpose_b); });
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
namespace op_detail {
#define DEVTENSOR_ALL(T) DEVTENSOR_GRAPH_OP(MatMul, T, 2)
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
}  // namespace op_detail
#endif
// clang-format on

}  // namespace devtensor

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/matmul.hpp"

namespace devtensor::ops {
template <class T>
void MatMul::cpu(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const Dims d = dims(attrs, ctx.input_shape(0), ctx.input_shape(1));
  const T* a = ctx.input<T>(0);
  const T* b = ctx.input<T>(1);
  T* c = ctx.output<T>();
  for (std::int64_t i = 0; i < d.batches; ++i)
    cpu::gemm(attrs.transpose_a, attrs.transpose_b, d.m, d.n, d.k, a + i * d.m * d.k, b + i * d.k * d.n,
              c + i * d.m * d.n);
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/matmul.hpp"

namespace devtensor::ops {
template <class T>
void MatMul::cuda(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const Dims d = dims(attrs, ctx.input_shape(0), ctx.input_shape(1));
  cuda::gemm(ctx.device, attrs.transpose_a, attrs.transpose_b, d.batches, d.m, d.n, d.k, ctx.input<T>(0),
             ctx.input<T>(1), ctx.output<T>());
}
}  // namespace devtensor::ops
#endif
