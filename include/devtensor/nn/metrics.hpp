#pragma once
/// @file metrics.hpp
/// @brief LossTracker: the batch-size-weighted mean of the batches' losses that fit and evaluate
/// report (Keras's loss tracker, a keras.metrics.Mean).
///
/// A loss in host memory is read at once (a read costs nothing there); a loss on a GPU is summed on
/// the GPU, one fused launch per step (AccumulateWeighted: total += loss · n, in place), and read
/// only by result(), so a training step on a GPU never waits for the host.

#include <cstdint>

#include "devtensor/config.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn {

class LossTracker {
 public:
  /// Adds a batch's (scalar) loss, weighing it by its `n` examples.
  void add(const Tensor<float>& loss, std::int64_t n);
  /// The mean so far: one device→host read when GPU losses were added since the last call.
  [[nodiscard]] double result();

 private:
  double host_total_ = 0.0;
  Tensor<float> device_total_;
  std::int64_t examples_ = 0;

  void read_device_total();
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION void LossTracker::add(const Tensor<float>& loss, std::int64_t n) {
  examples_ += n;
  if (loss.host_memory()) {
    host_total_ += static_cast<double>(loss.item()) * static_cast<double>(n);
    return;
  }
  if (device_total_.defined() && &device_total_.device_info() != &loss.device_info()) read_device_total();
  if (!device_total_.defined())
    device_total_ = kernels::filled_on<float>(loss.device_info(), Shape{}, 0.0f, "ZerosLike");
  kernels::run_update<ops::AccumulateWeighted, float>(
      device_total_.device_info(),
      ops::WeightedAccumulateUpdate<float>{device_total_.data(), loss.data(), device_total_.mutable_data(),
                                           static_cast<float>(n)},
      1);
}

DEVTENSOR_DEFINITION double LossTracker::result() {
  read_device_total();
  return examples_ ? host_total_ / static_cast<double>(examples_) : 0.0;
}

DEVTENSOR_DEFINITION void LossTracker::read_device_total() {
  if (!device_total_.defined()) return;
  host_total_ += static_cast<double>(device_total_.item());
  device_total_ = Tensor<float>();
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
