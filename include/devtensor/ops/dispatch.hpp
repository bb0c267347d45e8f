#pragma once
/// @file dispatch.hpp
/// @brief What every op entry point does: place, bring inputs to the device, allocate the output,
/// run the kernel; and the explicit-tag form with its static CPU fallback.

#include <string>
#include <string_view>

#include "devtensor/core/error.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/op_types.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
inline namespace DEVTENSOR_ABI_NS {
// Not `detail`: a devtensor::detail inside the inline namespace would make devtensor::detail
// ambiguous everywhere.
namespace op_detail {

/// True when `device` is a real GPU (device memory): the op must run its GPU kernel there.
inline bool on_real_gpu(int device) {
  return !Context::global().logical_devices()[static_cast<std::size_t>(device)].host_memory();
}

/// Host-memory kernels only: for ops without a GPU kernel in this translation unit.
inline void require_host_memory(int device, std::string_view op) {
  if (on_real_gpu(device))
    throw InternalError(std::string(op) + " was placed on " +
                        Context::global().logical_devices()[static_cast<std::size_t>(device)].full_name +
                        " but this translation unit has no GPU kernel for it");
}

/// Does this call run Op's GPU kernel? Only where the kernel exists in this translation unit and
/// the placer chose a real GPU (simulated GPUs run the CPU kernels on host memory).
template <class Op, Element T>
bool run_gpu_kernel(int device) {
  if constexpr (has_kernel_v<Op, gpu_t, T>) return on_real_gpu(device);
  else return false;
}

/// Places an op with the given inputs (small-int pinning included) and checks the kernel can run.
template <class Op, Element T, class... Inputs>
int place(const Inputs&... inputs) {
  const int device = place_op(kernel_support<Op, T>, small_host_int_inputs(inputs...));
  if constexpr (!has_kernel_v<Op, gpu_t, T>) require_host_memory(device, Op::name);
  return device;
}

}  // namespace op_detail

/// Runs `fn` with the request narrowed to the device type whose kernel an explicit-tag call uses:
/// the tag's own when this translation unit has that kernel, the CPU otherwise (statically; the
/// placement log shows the device actually chosen). Under DEVTENSOR_STRICT_PLACEMENT a missing
/// kernel is a compile error instead.
template <class Op, DeviceTag Tag, Element T, class F>
auto with_kernel_device(Tag, F&& fn) {
  require_kernel<Op, Tag, T>();
  DeviceScope scope(kernel_tag_t<Op, Tag, T>{});
  return fn();
}

}  // namespace DEVTENSOR_ABI_NS
}  // namespace devtensor
