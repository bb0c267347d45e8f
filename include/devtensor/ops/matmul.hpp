#pragma once
/// @file matmul.hpp
/// @brief matmul(a, b, transpose_a, transpose_b): rank 2, or batches of matrices with equal
/// leading dimensions. CPU: CBLAS (OpenBLAS) or the portable blocked kernel.

#include <string>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/ops/cpu/matmul.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/matmul_options.hpp"

namespace devtensor {

/// op(a) · op(b), op transposing the last two dimensions when asked.
/// @throws InvalidArgumentError "Matrix size-incompatible: In[0]: [..], In[1]: [..]" and for
/// ranks below 2 or batch dimensions that differ.
template <Numeric T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, bool transpose_a = false, bool transpose_b = false) {
  require_defined_inputs(ops::MatMul::name, a, b);
  const auto& as = a.shape();
  const auto& bs = b.shape();
  if (as.rank() < 2 || bs.rank() < 2 || as.rank() != bs.rank())
    throw InvalidArgumentError("In[0] and In[1] must be matrices of the same rank >= 2, got shapes " +
                               as.to_string() + " and " + bs.to_string() + " [Op:MatMul]");
  const std::size_t r = as.rank();
  for (std::size_t d = 0; d + 2 < r; ++d)
    if (as[d] != bs[d])
      throw InvalidArgumentError("In[0] and In[1] must have the same batch dimensions: " +
                                 as.to_string() + " vs. " + bs.to_string() + " [Op:MatMul]");
  const std::int64_t m = transpose_a ? as[r - 1] : as[r - 2];
  const std::int64_t k = transpose_a ? as[r - 2] : as[r - 1];
  const std::int64_t kb = transpose_b ? bs[r - 1] : bs[r - 2];
  const std::int64_t n = transpose_b ? bs[r - 2] : bs[r - 1];
  if (k != kb)
    throw InvalidArgumentError("Matrix size-incompatible: In[0]: " + as.to_string() + ", In[1]: " +
                               bs.to_string() + " [Op:MatMul]");
  std::vector<std::int64_t> out_dims(as.dims().begin(), as.dims().end() - 2);
  out_dims.push_back(m);
  out_dims.push_back(n);
  const Shape out_shape(out_dims, ops::MatMul::name);
  const int device = op_detail::place<ops::MatMul, T>(a, b);
  const auto x = to_device(a, device, ops::MatMul::name, 0);
  const auto y = to_device(b, device, ops::MatMul::name, 1);
  auto out = Tensor<T>::empty(out_shape, device, ops::MatMul::name);
  const std::int64_t batches = out_shape.num_elements() / std::max<std::int64_t>(1, m * n);
  if (auto* body = op_detail::gpu_body<ops::MatMul, T>(out.device_info())) {
    body(out.device_info(), transpose_a, transpose_b, batches, m, n, k, x.data(), y.data(), out.mutable_data());
    autodiff::record<ops::MatMul>(out, {.transpose_a = transpose_a, .transpose_b = transpose_b}, a, b);
    return out;
  }
  for (std::int64_t i = 0; i < batches && m * n > 0; ++i)
    ops::cpu::gemm(transpose_a, transpose_b, m, n, k, x.data() + i * m * k, y.data() + i * k * n,
                   out.mutable_data() + i * m * n);
  autodiff::record<ops::MatMul>(out, {.transpose_a = transpose_a, .transpose_b = transpose_b}, a, b);
  return out;
}

/// matmul(devtensor::gpu, a, b): the GPU kernel when the op declares one for T (the program must
/// contain it, else soft placement falls back), the CPU kernel otherwise, chosen at compile time.
template <DeviceTag Tag, Numeric T>
Tensor<T> matmul(Tag tag, const Tensor<T>& a, const Tensor<T>& b, bool transpose_a = false,
                 bool transpose_b = false) {
  return with_kernel_device<ops::MatMul, Tag, T>(tag, [&] { return matmul(a, b, transpose_a, transpose_b); });
}

}  // namespace devtensor
