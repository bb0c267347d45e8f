#pragma once
/// @file dispatch.hpp
/// @brief What every op entry point does: place, bring inputs to the device, allocate the output,
/// run the kernel; and the explicit-tag form with its static CPU fallback.

#include <string>
#include <string_view>

#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/registry.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace kernels {

/// Op's GPU body when `device` is a real GPU and the program contains the body, else nullptr.
/// For the work that is not placed (a variable's updates run where the variable lives, and a
/// host-compiled program's mirrored variables live in GPU memory without any GPU body): callers
/// stage through the host when it is missing.
template <class Op, Element T>
auto optional_gpu_body(const Device& device) -> kernel_body_t<Op, T>* {
  if constexpr (!has_kernel_v<Op, gpu_t, T>) {
    return nullptr;
  } else {
    return device.host_memory() ? nullptr : registered_kernel<Op, gpu_t, T>();
  }
}

}  // namespace kernels

/// The registered body of a user's op (one that declares `body<T>`, ops/registry.hpp) for the
/// device the placer chose: the GPU body on a real GPU, the CPU body on CPUs and simulated GPUs
/// (whose buffers are host memory: they run host bodies, also for an op that declares a GPU kernel
/// only, which the placer puts there as it would on a real GPU).
/// @throws UnimplementedError on a simulated GPU when the op has no registered CPU body (the
///         placer puts a GPU-only op there as on a real GPU); InternalError elsewhere when the
///         program lacks the body (the placer never chooses such a device).
template <class Op, Element T>
auto kernel_for(const Device& device) -> kernel_body_t<Op, T>* {
  auto* body = device.host_memory() ? registered_kernel<Op, cpu_t, T>() : registered_kernel<Op, gpu_t, T>();
  if (body != nullptr) [[likely]]
    return body;
  if (device.is_gpu && device.simulated)
    throw UnimplementedError(
        std::string(Op::name) + " with T=" + std::string(dtype_enum_name<T>()) + " was placed on " + device.full_name +
        ", a simulated GPU, but " +
        (registered_kernel<Op, gpu_t, T>() != nullptr ? "has only a CUDA body in this program"
                                                      : "has no body in this program that runs on host memory") +
        ": simulated GPUs keep buffers in host memory and run host bodies. Register one with "
        "DEVTENSOR_REGISTER_KERNEL(<op type>, devtensor::cpu_t, " +
        std::string(cpp_type_name<T>()) +
        ", body) (for an op that declares no CPU kernel, it runs on simulated GPUs only), or run on a real GPU.");
  throw InternalError(std::string(Op::name) + " has no registered body for " + device.full_name +
                      ": register one with DEVTENSOR_REGISTER_KERNEL, or place the op with "
                      "place_op(kernel_support<Op, T>) first");
}

/// Runs `fn` with the request narrowed to the device type whose kernel an explicit-tag call uses:
/// the tag's own when the op declares that kernel, the CPU otherwise (statically; the placement
/// log shows the device actually chosen, and soft placement applies when the program lacks the
/// body). Under DEVTENSOR_STRICT_PLACEMENT a missing
/// kernel is a compile error instead.
template <class Op, DeviceTag Tag, Element T, class F>
auto with_kernel_device(Tag, F&& fn) {
  require_kernel<Op, Tag, T>();
  DeviceScope scope(kernel_tag_t<Op, Tag, T>{});
  return fn();
}

}  // namespace devtensor
