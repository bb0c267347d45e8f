#pragma once
/// @file training_functors.hpp
/// @brief The fused optimizer updates (TensorFlow's training_ops: ResourceApplyGradientDescent,
/// ResourceApplyKerasMomentum, ResourceApplyAdam) as per-element functors, one definition for the
/// CPU loop and the CUDA kernel (src/devtensor_cuda.cu), so both compute the same thing.
///
/// Each update reads the variable's buffer (`var`) and writes the new value to `out`; `out` may be
/// `var` itself (an in-place update when nothing else holds the variable's buffer,
/// Variable::apply_update). Slots (velocity, moments) belong to the optimizer and are updated in
/// place. The expressions follow Keras's optimizers operation by operation, in the variable's type,
/// so a fused step equals the same step composed of ops.

#include <cmath>
#include <cstdint>

#include "devtensor/config.hpp"

namespace devtensor::ops {

/// out = var − grad · lr (SGD without momentum).
template <class T>
struct GradientDescentUpdate {
  const T* var;
  const T* grad;
  T* out;
  T lr;
  DEVTENSOR_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = var[i] - grad[i] * lr; }
  /// f(buffer, written) for every buffer (staging through the host, ops/training_ops.hpp).
  template <class F>
  void visit_buffers(F&& f) {
    f(var, false);
    f(grad, false);
    f(out, true);
  }
};

/// Keras's SGD momentum: velocity = velocity · momentum − grad · lr; out = var + velocity, or with
/// Nesterov out = var + (velocity · momentum − grad · lr). A new velocity slot starts at zero.
template <class T>
struct KerasMomentumUpdate {
  const T* var;
  const T* grad;
  T* velocity;
  T* out;
  T lr;
  T momentum;
  bool nesterov;
  DEVTENSOR_HOST_DEVICE void operator()(std::int64_t i) const {
    const T step = grad[i] * lr;
    const T v = velocity[i] * momentum - step;
    velocity[i] = v;
    out[i] = var[i] + (nesterov ? v * momentum - step : v);
  }
  template <class F>
  void visit_buffers(F&& f) {
    f(var, false);
    f(grad, false);
    f(velocity, true);
    f(out, true);
  }
};

/// Keras's Adam, step t (1-based), with alpha = lr · sqrt(1 − beta_2^t) / (1 − beta_1^t) computed
/// once per step, on the host or, for GPUs, on the device (AdamStepSizeUpdate, read at `alpha_at`):
///   m += (g − m)(1 − beta_1);  v += (g² − v)(1 − beta_2)
///   amsgrad: v_hat = max(v_hat, v), and v_hat replaces v below
///   out = var − (m · alpha) / (sqrt(v) + epsilon)
/// `v_hat` is null without amsgrad.
template <class T>
struct AdamUpdate {
  const T* var;
  const T* grad;
  T* m;
  T* v;
  T* v_hat;
  T* out;
  T alpha;
  T one_minus_beta_1;
  T one_minus_beta_2;
  T epsilon;
  /// Where the step size is in device memory, read instead of `alpha` (null: `alpha`): a CUDA
  /// graph replays its kernels' arguments unchanged, and the step size changes at every step.
  const T* alpha_at = nullptr;
  DEVTENSOR_HOST_DEVICE void operator()(std::int64_t i) const {
    const T step = alpha_at != nullptr ? *alpha_at : alpha;
    const T g = grad[i];
    const T m_next = m[i] + (g - m[i]) * one_minus_beta_1;
    T v_next = v[i] + (g * g - v[i]) * one_minus_beta_2;
    m[i] = m_next;
    v[i] = v_next;
    if (v_hat != nullptr) {
      v_next = v_hat[i] > v_next ? v_hat[i] : v_next;
      v_hat[i] = v_next;
    }
    out[i] = var[i] - (m_next * step) / (std::sqrt(v_next) + epsilon);
  }
  template <class F>
  void visit_buffers(F&& f) {
    f(var, false);
    f(grad, false);
    f(m, true);
    f(v, true);
    if (v_hat != nullptr) f(v_hat, true);
    f(out, true);
    if (alpha_at != nullptr) f(alpha_at, false, 1);
  }
};

/// Adam's step size computed on the device whose variables it updates, from the step count kept
/// there: the count advances by one (to t) and *alpha = lr · sqrt(1 − beta_2^t) / (1 − beta_1^t),
/// in double then rounded to T, as the host computes it. One element (n = 1). A CUDA graph that
/// replays this kernel and the updates reading `alpha` takes each step with its own step size.
template <class T>
struct AdamStepSizeUpdate {
  std::int64_t* steps;
  T* alpha;
  double learning_rate;
  double beta_1;
  double beta_2;
  DEVTENSOR_HOST_DEVICE void operator()(std::int64_t) const {
    const double t = static_cast<double>(++*steps);
    *alpha = static_cast<T>(learning_rate * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t)));
  }
  template <class F>
  void visit_buffers(F&& f) {
    f(steps, true, 1);
    f(alpha, true, 1);
  }
};

/// out = total + value · weight: a running weighted sum in one pass (fit's loss tracker; Keras's
/// Mean metric runs Mul, Sum and AssignAddVariableOp for the same update).
template <class T>
struct WeightedAccumulateUpdate {
  const T* total;
  const T* value;
  T* out;
  T weight;
  DEVTENSOR_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = total[i] + value[i] * weight; }
  template <class F>
  void visit_buffers(F&& f) {
    f(total, false);
    f(value, false);
    f(out, true);
  }
};

}  // namespace devtensor::ops
