#pragma once
// The float32 GPU bodies of devtensor's ops, as host functions over the fake GPU platform's
// "device memory" (host memory): registered in the kernel registry for one test, they let a
// host-compiled program run the GPU code paths (placement on a real GPU, device-resident
// variables, the optimizers' fused updates, stream-ordered copies) without a GPU. Each op's GPU
// body is its own CPU body, so results equal a CPU run; the op list says which ops there are.
#include <atomic>
#include <cstdint>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/op_list.hpp"

namespace devtensor::test {
namespace fake_kernels {

using kernels::Device;

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
    ops::for_each_op(ops::BuiltinOps{}, [this]<class Op>() {
      if constexpr (ops::DataOp<Op> && has_kernel_v<Op, gpu_t, float> && has_kernel_v<Op, cpu_t, float>)
        add<Op>(&Op::template cpu<float>);
    });
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
};

}  // namespace devtensor::test
