#pragma once
// The float32 GPU bodies of the ops a training step uses, as host functions over the fake GPU
// platform's "device memory" (host memory): registered in the kernel registry for one test, they
// let a host-compiled program run the GPU code paths (placement on a real GPU, device-resident
// variables, the optimizers' fused updates, stream-ordered copies) without a GPU. They call the
// same CPU loops and functors as the CPU kernels, so results equal a CPU run.
#include <atomic>
#include <cstdint>
#include <vector>

#include "devtensor/devtensor.hpp"

namespace devtensor::test {
namespace fake_kernels {

using kernels::Device;
using kernels::Dims;

template <class Op>
void unary(const Device&, const float* in, float* out, std::int64_t n) {
  ops::cpu::unary(in, out, n, ops::Functor<Op>{});
}
template <class Op>
void binary(const Device&, const float* a, const Shape& as, const float* b, const Shape& bs, float* out,
            const Shape& os) {
  ops::cpu::binary(a, as, b, bs, out, os, ops::Functor<Op>{});
}
inline void fill(const Device&, float* out, std::int64_t n, float value) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = value;
}
inline void add_n(const Device&, float* out, const float* const* inputs, std::size_t count, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    float s = inputs[0][i];
    for (std::size_t k = 1; k < count; ++k) s += inputs[k][i];
    out[i] = s;
  }
}
inline void matmul(const Device&, bool ta, bool tb, std::int64_t batches, std::int64_t m, std::int64_t n,
                   std::int64_t k, const float* a, const float* b, float* c) {
  for (std::int64_t i = 0; i < batches && m * n > 0; ++i)
    ops::cpu::gemm(ta, tb, m, n, k, a + i * m * k, b + i * k * n, c + i * m * n);
}
template <ops::cpu::ReduceKind Kind>
void reduce(const Device&, const float* in, const Shape& shape, const std::vector<bool>& axes, float* out) {
  ops::cpu::reduce(in, shape, axes, Kind, out);
}
inline void strided_copy(const Device&, const float* src, Dims src_strides, std::int64_t src_offset, float* dst,
                         Dims dst_strides, std::int64_t dst_offset, Dims dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t rest = i, os = src_offset, od = dst_offset;
    for (std::size_t d = dims.size(); d-- > 0;) {
      const std::int64_t c = rest % dims[d];
      rest /= dims[d];
      os += c * src_strides[d];
      od += c * dst_strides[d];
    }
    dst[od] = src[os];
  }
}
inline void assign(const Device&, float* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
/// Launches of each fused update, for tests that count them.
template <class Update>
inline std::atomic<std::int64_t> update_launches{0};
template <class Update>
void apply_update(const Device&, const Update& update, std::int64_t n) {
  ++update_launches<Update>;
  for (std::int64_t i = 0; i < n; ++i) update(i);
}

}  // namespace fake_kernels

/// Registers the bodies above as the GPU kernels for float for the lifetime of the object.
class FakeGpuKernels {
 public:
  FakeGpuKernels() {
    namespace k = fake_kernels;
    unary<ops::Neg, ops::Abs, ops::Square, ops::Sqrt, ops::Exp, ops::Log, ops::Relu, ops::Sigmoid, ops::Tanh>();
    binary<ops::Add, ops::Sub, ops::Mul, ops::RealDiv, ops::Maximum, ops::Minimum, ops::ReluGrad, ops::SigmoidGrad,
           ops::TanhGrad, ops::SqrtGrad, ops::GreaterEqual, ops::Equal>();
    add<ops::Fill>(&k::fill);
    add<ops::AddN>(&k::add_n);
    add<ops::MatMul>(&k::matmul);
    add<ops::Sum>(&k::reduce<ops::cpu::ReduceKind::sum>);
    add<ops::Mean>(&k::reduce<ops::cpu::ReduceKind::mean>);
    add<ops::Max>(&k::reduce<ops::cpu::ReduceKind::max>);
    add<ops::Transpose>(&k::strided_copy);
    add<ops::ConcatV2>(&k::strided_copy);
    add<ops::Split>(&k::strided_copy);
    add<ops::Slice>(&k::strided_copy);
    add<ops::BroadcastTo>(&k::strided_copy);
    add<ops::VarHandleOp>(&k::assign);
    add<ops::ApplyGradientDescent>(&k::apply_update<ops::GradientDescentUpdate<float>>);
    add<ops::ApplyKerasMomentum>(&k::apply_update<ops::KerasMomentumUpdate<float>>);
    add<ops::ApplyAdam>(&k::apply_update<ops::AdamUpdate<float>>);
    add<ops::AccumulateWeighted>(&k::apply_update<ops::WeightedAccumulateUpdate<float>>);
  }
  FakeGpuKernels(const FakeGpuKernels&) = delete;
  FakeGpuKernels& operator=(const FakeGpuKernels&) = delete;
  ~FakeGpuKernels() {
    for (auto& remove : removers_) remove();
  }

 private:
  std::vector<bool (*)()> removers_;

  template <class Op>
  void add(kernel_body_t<Op, float>* body) {
    if (register_kernel<Op, gpu_t, float>(body, "fake_gpu_kernels.hpp"))
      removers_.push_back(&unregister_kernel<Op, gpu_t, float>);
  }
  template <class... Ops>
  void unary() {
    (add<Ops>(&fake_kernels::unary<Ops>), ...);
  }
  template <class... Ops>
  void binary() {
    (add<Ops>(&fake_kernels::binary<Ops>), ...);
  }
};

}  // namespace devtensor::test
