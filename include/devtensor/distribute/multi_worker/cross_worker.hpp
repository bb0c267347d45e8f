#pragma once
/// @file cross_worker.hpp
/// @brief CrossWorker: how a MirroredStrategy's values cross processes when it spans several
/// workers (MultiWorkerMirroredStrategy installs one; a single process has none).
///
/// Two ways, as TensorFlow's CollectiveAllReduce across workers: when the cross-device ops can
/// join every worker's GPUs in one NCCL clique (CollectiveAllReduce given a clique), every replica
/// of every worker is reduced on the devices in one NCCL call per pack; otherwise each worker
/// reduces its own replicas with its cross-device ops and the local sums cross processes through
/// host memory and the worker group's collectives (MPI), packed by bytes_per_pack.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/log.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/values.hpp"

namespace devtensor::distribute {

namespace multi_worker_detail {
/// Cross-device ops that can reduce every worker's replicas at once (CollectiveAllReduce).
template <class Ops, class T>
concept ReducesAcrossWorkers = requires(const Ops& ops, ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                        const Destinations& devices) {
  { ops.spans_workers() } -> std::convertible_to<bool>;
  ops.all_reduce_across_workers(op, values, devices, std::string_view());
};
}  // namespace multi_worker_detail

class CrossWorker {
 public:
  /// `group`: every worker of the job (more than one); `options`: how values cross them.
  CrossWorker(std::shared_ptr<WorkerGroup> group, CommunicationOptions options)
      : group_(std::move(group)), options_(options) {}

  [[nodiscard]] int num_workers() const { return group_->num_workers(); }
  [[nodiscard]] int worker_index() const { return group_->worker_index(); }
  [[nodiscard]] WorkerGroup& group() const noexcept { return *group_; }

  /// `values` (this worker's replicas on `devices`) reduced over every replica of every worker;
  /// MEAN divides by `replicas_in_sync`. Each result is on every one of `devices`.
  template <class Ops, Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(const Ops& ops, ReduceOp op,
                                                const std::vector<PerReplica<Tensor<T>>>& values,
                                                const Destinations& devices, std::int64_t replicas_in_sync) {
    if constexpr (multi_worker_detail::ReducesAcrossWorkers<Ops, T> && !std::is_same_v<T, std::int32_t>) {
      bool one_per_replica = ops.spans_workers();
      for (const auto& v : values) one_per_replica = one_per_replica && v.size() == devices.size();
      if (one_per_replica) {
        // Each replica's value on its GPU (a program without GPU bodies computed it on the CPU).
        std::vector<PerReplica<Tensor<T>>> placed(values.size());
        for (std::size_t i = 0; i < values.size(); ++i)
          for (std::size_t r = 0; r < devices.size(); ++r)
            placed[i].values.push_back(cdo_detail::copy_to(values[i].values[r], devices[r]));
        // With a timeout, an MPI barrier first names a worker that does not arrive.
        if (options_.timeout_seconds()) group_->barrier("batch_reduce");
        return ops.all_reduce_across_workers(op, placed, devices, "batch_reduce");
      }
    }
    auto local = ops.batch_reduce(ReduceOp::SUM, values, devices);
    std::vector<Tensor<T>> sums;
    for (const auto& m : local) sums.push_back(m.primary());
    sums = sum(sums, "batch_reduce", static_cast<int>(devices.size()), replicas_in_sync);
    std::vector<Mirrored<Tensor<T>>> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      Tensor<T> total = op == ReduceOp::MEAN ? cdo_detail::divide(sums[i], replicas_in_sync) : sums[i];
      out[i] = ops.broadcast(total, devices);
    }
    return out;
  }

  /// Each tensor summed across the workers, on its own device: host buffers packed by
  /// bytes_per_pack, the list reversed first, one collective per pack. `local_replicas` and
  /// `replicas_in_sync` only label the log line.
  template <Numeric T>
  std::vector<Tensor<T>> sum(const std::vector<Tensor<T>>& values, std::string_view what, int local_replicas,
                             std::int64_t replicas_in_sync) {
    if (values.empty()) return values;
    std::vector<Tensor<T>> reversed(values.rbegin(), values.rend());
    const auto packs = group_by_size(reversed, options_.bytes_per_pack());
    if (log_enabled(LogSource::python_logger, LogSeverity::info))
      cdo_detail::log_first_10<CrossWorker>([&] {
        return "Collective all_reduce tensors: " + std::to_string(values.size()) +
               " all_reduces, num_devices = " + std::to_string(local_replicas) +
               ", group_size = " + std::to_string(replicas_in_sync) +
               ", implementation = CommunicationImplementation.RING, num_packs = " + std::to_string(packs.size());
      });
    std::vector<Tensor<T>> out;
    for (const auto& pack : packs) {
      // A pack of one tensor in host memory: MPI reads it where it is and writes the result.
      if (pack.size() == 1 && pack[0].host_memory()) {
        const auto& t = pack[0];
        auto result = Tensor<T>::empty(t.shape(), t.device_info(), "CollectiveReduceV2");
        const auto count = static_cast<std::size_t>(t.num_elements());
        group_->all_reduce(dtype_enum<T>(), t.data(), result.mutable_data(), count, CollectiveReduction::sum, what);
        out.push_back(std::move(result));
        continue;
      }
      // Otherwise one host buffer per pack: each tensor copied in once and out once.
      std::size_t total = 0;
      for (const auto& t : pack) total += static_cast<std::size_t>(t.num_elements());
      const auto host = std::make_unique_for_overwrite<T[]>(total);
      std::size_t at = 0;
      for (const auto& t : pack) {
        const auto count = static_cast<std::size_t>(t.num_elements());
        copy_bytes(host.get() + at, host_buffer_device(), t.data(), t.device_info(), count * sizeof(T));
        at += count;
      }
      group_->all_reduce(dtype_enum<T>(), host.get(), total, CollectiveReduction::sum, what);
      at = 0;
      for (const auto& t : pack) {
        auto result = Tensor<T>::empty(t.shape(), t.device_info(), "CollectiveReduceV2");
        const auto count = static_cast<std::size_t>(t.num_elements());
        copy_bytes(result.mutable_data(), result.device_info(), host.get() + at, host_buffer_device(),
                   count * sizeof(T));
        at += count;
        out.push_back(std::move(result));
      }
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

  /// A count summed across the workers (strategy.reduce's element count along an axis).
  [[nodiscard]] std::int64_t sum(std::int64_t count, std::string_view what) {
    group_->all_reduce(DType::DT_INT64, &count, 1, CollectiveReduction::sum, what);
    return count;
  }

 private:
  std::shared_ptr<WorkerGroup> group_;
  CommunicationOptions options_;
};

}  // namespace devtensor::distribute
