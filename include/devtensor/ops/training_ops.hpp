#pragma once
/// @file training_ops.hpp
/// @brief Running the fused optimizer updates (ops/training_functors.hpp) on a variable's device,
/// as TensorFlow's ResourceApply* kernels run where the resource lives: one GPU launch per
/// variable per step on a real GPU, one pass over the CPU pool elsewhere.

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/backend/cpu/simd.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/kernel_signatures.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/training_functors.hpp"

namespace devtensor::ops {

/// A variable's buffer (TensorFlow's VarHandleOp, placed like it): a real GPU holds variables when
/// the program contains this body, the device copy of their initial value and assignments.
struct VarHandleOp : KernelTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "VarHandleOp";
  struct Attrs {};
  template <class T>
  using body = kernels::Assign<T>;
  template <class T>
  static void cuda(const kernels::Device& device, T* dst, const T* src, std::int64_t n);
};

/// A fused update (TensorFlow's training_ops), run on the variable's device: `Update<T>` is its
/// per-element functor (ops/training_functors.hpp).
template <template <class> class Update>
struct UpdateOp : KernelTable<FloatTypes, FloatTypes>, Builtin {
  struct Attrs {};
  template <class T>
  using body = void(const kernels::Device&, const Update<T>& update, std::int64_t n);
  template <class T>
  static void cuda(const kernels::Device& device, const Update<T>& update, std::int64_t n);
};
struct ApplyGradientDescent : UpdateOp<GradientDescentUpdate> {
  static constexpr std::string_view name = "ResourceApplyGradientDescent";
};
struct ApplyKerasMomentum : UpdateOp<KerasMomentumUpdate> {
  static constexpr std::string_view name = "ResourceApplyKerasMomentum";
};
struct ApplyAdam : UpdateOp<AdamUpdate> {
  static constexpr std::string_view name = "ResourceApplyAdam";
};
/// Adam's step size on a GPU (AdamStepSizeUpdate), once per device and step, before its updates.
struct AdamStepSize : UpdateOp<AdamStepSizeUpdate> {
  static constexpr std::string_view name = "AdamStepSize";
};
/// fit's and evaluate's loss tracker: total += loss · batch size on the loss's device, one launch.
struct AccumulateWeighted : UpdateOp<WeightedAccumulateUpdate> {
  static constexpr std::string_view name = "AccumulateWeighted";
};

using TrainingOps =
    TypeList<VarHandleOp, ApplyGradientDescent, ApplyKerasMomentum, ApplyAdam, AdamStepSize, AccumulateWeighted>;

}  // namespace devtensor::ops

// kernels::: running bodies over buffers and tensors that exist already — work that is not placed
// (a variable's updates run where it lives, an optimizer's slots are made beside their variable).
namespace devtensor::kernels {

/// Runs `update(i)` for i in [0, n) over host copies of its buffers (n elements each, unless the
/// functor gives a count), and copies the written ones back: a real GPU whose program lacks the
/// GPU body (a host-compiled program's mirrored variables live in GPU memory). Correct, not fast.
template <class Update>
void run_update_staged(const Device& device, Update update, std::int64_t n) {
  struct Staged {
    std::vector<std::byte> host;  // operator new's alignment: enough for every element type
    void* on_device;
    bool written;
  };
  std::vector<Staged> staged;
  staged.reserve(8);  // no reallocation: `update` points into the vectors
  update.visit_buffers([&](auto*& buffer, bool written, std::int64_t count = -1) {
    using Pointer = std::remove_reference_t<decltype(buffer)>;
    const auto bytes = static_cast<std::size_t>(count < 0 ? n : count) * sizeof(*buffer);
    auto& s = staged.emplace_back(
        Staged{std::vector<std::byte>(bytes), const_cast<void*>(static_cast<const void*>(buffer)), written});
    copy_bytes(s.host.data(), host_buffer_device(), buffer, device, bytes);
    buffer = reinterpret_cast<Pointer>(s.host.data());
  });
  for (std::int64_t i = 0; i < n; ++i) update(i);
  for (const auto& s : staged)
    if (s.written) copy_bytes(s.on_device, device, s.host.data(), host_buffer_device(), s.host.size());
}

/// The CPU loop of a fused update over [begin, end): `update(i)` element by element.
template <class Update>
void cpu_update(const Update& update, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) update(i);
}
// The optimizers' updates a SIMD pack at a time (backend/cpu/simd.hpp: GCC at -O2 leaves these
// loops scalar, Adam's for its square root's errno path; 4x on Adam at 65 536 floats), the tail
// with the functor. Each lane computes the functor's expression, operation by operation.
template <Floating T>
void cpu_update(const ops::GradientDescentUpdate<T>& u, std::int64_t begin, std::int64_t end) {
  namespace simd = backend::cpu::simd;
  std::int64_t i = begin;
  for (; i + simd::lanes<T> <= end; i += simd::lanes<T>)
    simd::store(u.out + i, simd::load(u.var + i) - simd::load(u.grad + i) * u.lr);
  for (; i < end; ++i) u(i);
}
template <Floating T>
void cpu_update(const ops::KerasMomentumUpdate<T>& u, std::int64_t begin, std::int64_t end) {
  namespace simd = backend::cpu::simd;
  std::int64_t i = begin;
  for (; i + simd::lanes<T> <= end; i += simd::lanes<T>) {
    const simd::Vec<T> step = simd::load(u.grad + i) * u.lr;
    const simd::Vec<T> v = simd::load(u.velocity + i) * u.momentum - step;
    simd::store(u.velocity + i, v);
    simd::store(u.out + i, simd::load(u.var + i) + (u.nesterov ? v * u.momentum - step : v));
  }
  for (; i < end; ++i) u(i);
}
template <Floating T>
void cpu_update(const ops::AdamUpdate<T>& u, std::int64_t begin, std::int64_t end) {
  namespace simd = backend::cpu::simd;
  std::int64_t i = begin;
  const T alpha = u.alpha_at != nullptr ? *u.alpha_at : u.alpha;
  if (u.v_hat == nullptr) {  // amsgrad (a running max) stays with the functor
    for (; i + simd::lanes<T> <= end; i += simd::lanes<T>) {
      const simd::Vec<T> g = simd::load(u.grad + i);
      const simd::Vec<T> m = simd::load(u.m + i);
      const simd::Vec<T> v = simd::load(u.v + i);
      const simd::Vec<T> m_next = m + (g - m) * u.one_minus_beta_1;
      const simd::Vec<T> v_next = v + (g * g - v) * u.one_minus_beta_2;
      simd::store(u.m + i, m_next);
      simd::store(u.v + i, v_next);
      simd::store(u.out + i, simd::load(u.var + i) - (m_next * alpha) / (simd::sqrt<T>(v_next) + u.epsilon));
    }
  }
  for (; i < end; ++i) u(i);
}

/// Runs `update(i)` for i in [0, n) on `device`: Op's registered GPU body on a real GPU, the CPU
/// loop on CPUs and simulated GPUs, host staging on a real GPU without the body.
template <class Op, Floating T, class Update>
void run_update(const Device& device, const Update& update, std::int64_t n) {
  log_placement_of(Op::name, device);
  if (n == 0) return;
  if (!device.host_memory()) {
    if (auto* body = registered_kernel<Op, gpu_t, T>())
      body(device, update, n);
    else
      run_update_staged(device, update, n);
    return;
  }
  backend::cpu::parallel_for(n, ops::cpu::kParallelGrain,
                             [&update](std::int64_t begin, std::int64_t end) { cpu_update(update, begin, end); });
}

/// A tensor of `shape` on `device`, every element `value` (an optimizer's slot):
/// Fill's body there, without placement or a placement log line.
template <Element T>
Tensor<T> filled_on(const Device& device, const Shape& shape, T value, std::string_view op) {
  auto out = Tensor<T>::empty(shape, device, op);
  const ops::Fill::Attrs attrs{shape, ops::Scalar::of(value)};
  run_body_on<ops::Fill, T, T>(attrs, {}, out);
  return out;
}

}  // namespace devtensor::kernels

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops {
template <class T>
void VarHandleOp::cuda(const kernels::Device& device, T* dst, const T* src, std::int64_t n) {
  cuda::copy(device, dst, src, n);
}
template <template <class> class Update>
template <class T>
void UpdateOp<Update>::cuda(const kernels::Device& device, const Update<T>& update, std::int64_t n) {
  cuda::for_each_index(device, n, update);  // one launch of the functor the CPU loop runs
}
}  // namespace devtensor::ops
#endif
