#pragma once
/// @file nccl_all_reduce.hpp
/// @brief NcclAllReduce: the all-reduce family member that sums with NCCL across real GPUs
/// (TensorFlow's tf.distribute.NcclAllReduce), also across processes for MultiWorkerMirroredStrategy.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/device/physical.hpp"
#include "devtensor/distribute/all_reduce_family.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {

/// All-reduce with NCCL across real, distinct GPUs: every rank's result is a new tensor on its own
/// GPU, the calls grouped and queued on the devices' streams. The kernel is registered at run time
/// by src/devtensor_nccl.cpp, which the devtensor::nccl component links, so
/// a program links NCCL or not as a whole.
struct NcclEngine {
  static constexpr std::string_view name = "NcclAllReduce";
  static constexpr std::string_view validation_name = "NCCL all-reduce";
  static constexpr const char* pack_prefix = "nccl";
  [[nodiscard]] static bool available() noexcept { return gpu_all_reduce_kernel() != nullptr; }
  /// Whether the registered kernel can also join a communicator that spans processes.
  [[nodiscard]] static bool available_across_processes() noexcept {
    const GpuAllReduceKernel* kernel = gpu_all_reduce_kernel();
    return kernel && kernel->new_unique_id && kernel->all_reduce_sum_across_processes;
  }

  /// @throws UnimplementedError without the kernel; InvalidArgumentError for parts that are not
  ///         on real GPUs.
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce(const std::vector<Tensor<T>>& parts, std::size_t) {
    return call(parts,
                [&](const GpuAllReduceKernel& kernel, const auto&... buffers) { kernel.all_reduce_sum(buffers...); });
  }
  /// The same across processes: `parts` are this worker's ranks of `clique`, every worker's GPUs
  /// are summed. @throws UnimplementedError when the kernel cannot cross processes.
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce_across_processes(const std::vector<Tensor<T>>& parts,
                                                            const GpuCliqueAcrossProcesses& clique,
                                                            std::string_view what) {
    return call(parts, [&](const GpuAllReduceKernel& kernel, const auto&... buffers) {
      if (!kernel.all_reduce_sum_across_processes)
        throw UnimplementedError(std::string("The all-reduce kernel '") + kernel.name + "' cannot cross processes");
      kernel.all_reduce_sum_across_processes(clique, what, buffers...);
    });
  }

 private:
  /// A new result per part on its GPU; `launch(kernel, dtype, count, send, recv, ordinals, streams)`.
  template <Numeric T, class Launch>
  static std::vector<Tensor<T>> call(const std::vector<Tensor<T>>& parts, Launch launch) {
    const GpuAllReduceKernel* kernel = gpu_all_reduce_kernel();
    if (!kernel)
      throw UnimplementedError(
          "NcclAllReduce: Nccl kernel is not found in this program. Build at least one translation unit "
          "with the devtensor::nccl component (it registers the kernel), or use HierarchicalCopyAllReduce "
          "or ReductionToOneDevice.");
    std::vector<Tensor<T>> out;
    std::vector<const void*> send;
    std::vector<void*> recv, streams;
    std::vector<int> ordinals;
    for (const auto& part : parts) {
      const auto& device = part.device_info();
      if (!device.is_gpu || device.simulated)
        throw InvalidArgumentError("NcclAllReduce needs real GPUs, but a value is on " + device.full_name +
                                   (device.simulated ? " (a simulated GPU)" : "") +
                                   ". Use HierarchicalCopyAllReduce or ReductionToOneDevice for these devices.");
      out.push_back(Tensor<T>::empty(part.shape(), device, "NcclAllReduce"));
      send.push_back(part.data());
      recv.push_back(out.back().mutable_data());
      ordinals.push_back(device.platform_ordinal);
      streams.push_back(device.stream);
    }
    if (!parts.empty() && parts[0].num_elements() > 0)
      launch(*kernel, dtype_enum_name<T>(), static_cast<std::size_t>(parts[0].num_elements()),
             std::span<const void* const>(send), std::span<void* const>(recv), std::span<const int>(ordinals),
             std::span<void* const>(streams));
    return out;
  }
};

}  // namespace cdo_detail

using NcclAllReduce = AllReduceOps<cdo_detail::NcclEngine>;

}  // namespace distribute
}  // namespace devtensor
