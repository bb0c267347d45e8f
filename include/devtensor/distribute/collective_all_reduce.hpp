#pragma once
/// @file collective_all_reduce.hpp
/// @brief CollectiveAllReduce: values packed by size and each pack all-reduced across the devices
/// by an in-process ring or NCCL (TensorFlow's CollectiveAllReduce within one process; across
/// processes, MultiWorkerMirroredStrategy gives it a clique of every worker's GPUs).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devtensor/distribute/all_reduce_family.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/cross_device_utils.hpp"
#include "devtensor/distribute/nccl_all_reduce.hpp"
#include "devtensor/distribute/reduction_to_one_device.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {

struct CollectiveLines;  // log_first_10's site

/// Below this many bytes a ring's share per device is too small to pay for waking a thread
/// (~20-50 us on these VMs): the calling thread does every share.
inline constexpr std::int64_t kParallelRingBytes = std::int64_t{1} << 20;

/// Runs share(k) for k in [0, n): shares 1.. on their own threads, share 0 on the caller.
template <class Share>
void run_shares(std::size_t n, bool parallel, Share share) {
  if (!parallel || n < 2) {
    for (std::size_t k = 0; k < n; ++k) share(k);
    return;
  }
  std::vector<std::jthread> helpers;
  helpers.reserve(n - 1);
  for (std::size_t k = 1; k < n; ++k) helpers.emplace_back([&share, k] { share(k); });
  share(0);
}

/// The in-process ring all-reduce: the flat `parts` (one per device, equal lengths)
/// are cut into one chunk per device; device k sums chunk k of every part (reduce-scatter) and the
/// chunks are then gathered on every device (all-gather). On host memory (CPUs, simulated GPUs)
/// each device's share runs on its own thread and writes straight into one result buffer, which
/// logical CPUs then share (one address space, as for every host tensor a cross-device op moves),
/// so the all-gather costs nothing for them and one copy per simulated GPU. Other devices do the
/// same with device ops: split, add_n on the chunk's owner, copies, concat.
template <Numeric T>
std::vector<Tensor<T>> ring_all_reduce(const std::vector<Tensor<T>>& parts) {
  const std::size_t n = parts.size();
  if (n == 1) return parts;
  const std::int64_t total = parts[0].num_elements();
  bool host = true;
  for (const auto& p : parts) host = host && p.host_memory();
  std::vector<std::int64_t> bounds(n + 1);
  for (std::size_t k = 0; k <= n; ++k) bounds[k] = total * static_cast<std::int64_t>(k) / static_cast<std::int64_t>(n);
  if (host) {
    auto sum = Tensor<T>::empty(parts[0].shape(), parts[0].device_info(), "CollectiveReduceV2");
    std::vector<const T*> inputs;
    for (const auto& p : parts) inputs.push_back(p.data());
    T* o = sum.mutable_data();
    const bool parallel = total * static_cast<std::int64_t>(sizeof(T)) >= kParallelRingBytes;
    run_shares(n, parallel, [&](std::size_t k) {
      for (std::int64_t i = bounds[k]; i < bounds[k + 1]; ++i) o[i] = static_cast<T>(inputs[0][i] + inputs[1][i]);
      for (std::size_t d = 2; d < n; ++d)
        for (std::int64_t i = bounds[k]; i < bounds[k + 1]; ++i) o[i] = static_cast<T>(o[i] + inputs[d][i]);
    });
    std::vector<Tensor<T>> out(n);
    // Logical CPUs alias the result (nothing to copy); simulated GPUs copy it, each on its thread.
    const bool copies = parts[0].device_info().is_gpu;
    run_shares(n, parallel && copies, [&](std::size_t d) { out[d] = copy_to(sum, parts[d].device_info()); });
    return out;
  }
  std::vector<std::int64_t> sizes;
  for (std::size_t k = 0; k < n; ++k) sizes.push_back(bounds[k + 1] - bounds[k]);
  std::vector<std::vector<Tensor<T>>> chunks(n);  // chunks[d][k]: device d's chunk k
  for (std::size_t d = 0; d < n; ++d) {
    DeviceScope scope(parts[d].device_info().spec);
    chunks[d] = split(parts[d], sizes, 0);
  }
  std::vector<Tensor<T>> reduced(n);  // reduce-scatter: chunk k summed on device k
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<Tensor<T>> column;
    for (std::size_t d = 0; d < n; ++d) column.push_back(chunks[d][k]);
    reduced[k] = sum_on(column, parts[k].device_info());
  }
  std::vector<Tensor<T>> out(n);  // all-gather
  for (std::size_t d = 0; d < n; ++d) {
    std::vector<Tensor<T>> gathered;
    for (std::size_t k = 0; k < n; ++k) gathered.push_back(copy_to(reduced[k], parts[d].device_info()));
    DeviceScope scope(parts[d].device_info().spec);
    out[d] = concat(gathered, 0);
  }
  return out;
}

}  // namespace cdo_detail

/// tf.distribute.experimental.CollectiveAllReduce within one process: values are
/// packed by CommunicationOptions::bytes_per_pack (group_by_size, the list reversed first, as
/// TensorFlow does to overlap with backpropagation) and each pack is all-reduced across the
/// devices. RING: the in-process ring (every device does its share in parallel); NCCL: NCCL
/// across distinct real GPUs (the devtensor::nccl component); AUTO: NCCL when it can run there,
/// else the ring. int32 values go through ReductionToOneDevice, as in TensorFlow.
///
/// MultiWorkerMirroredStrategy gives it a clique of every worker's GPUs: all_reduce_across_workers
/// then sums every replica of every process in one NCCL call per pack, on the devices.
class CollectiveAllReduce {
 public:
  static constexpr std::string_view name = "CollectiveAllReduce";

  explicit CollectiveAllReduce(CommunicationOptions options = CommunicationOptions()) : options_(options) {}
  /// This process's GPUs are ranks of `clique`, which spans the workers (nullptr: none).
  CollectiveAllReduce(CommunicationOptions options, std::shared_ptr<const GpuCliqueAcrossProcesses> clique)
      : options_(options), clique_(std::move(clique)) {}

  [[nodiscard]] const CommunicationOptions& options() const noexcept { return options_; }
  /// Nothing to choose or check for a strategy's replicas.
  void prepare(const Destinations&, const DeviceSet&) const noexcept {}
  /// Whether all_reduce_across_workers can run (NCCL between the workers' GPUs).
  [[nodiscard]] bool spans_workers() const noexcept { return clique_ != nullptr; }

  /// Every worker's replicas reduced with NCCL across the processes: `values` are this worker's
  /// replicas on `devices` (its GPUs, ranks of the clique), and MEAN divides by every rank.
  /// @throws FailedPreconditionError without a clique (spans_workers() is false).
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> all_reduce_across_workers(ReduceOp op,
                                                             const std::vector<PerReplica<Tensor<T>>>& values,
                                                             const Destinations& devices, std::string_view what) const {
    if (!clique_)
      throw FailedPreconditionError(
          "This CollectiveAllReduce has no NCCL clique across workers; "
          "MultiWorkerMirroredStrategy makes one when every worker has its own GPUs");
    cdo_detail::require_destinations(devices);
    if (values.empty()) return {};
    for (const auto& v : values) {
      cdo_detail::require_components(v);
      if (cdo_detail::devices_of(v) != devices)
        throw InvalidArgumentError("An all-reduce across workers needs each replica's value on its own device");
    }
    return all_reduce(op, values, devices, options_, what);
  }
  /// What the values on `devices` would use: NCCL or RING (AUTO resolved).
  [[nodiscard]] CommunicationImplementation implementation_for(const Destinations& devices) const {
    const auto requested = options_.implementation();
    if (requested == CommunicationImplementation::RING) return requested;
    bool real_gpus = !devices.empty();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const auto& d = devices[i];
      real_gpus = real_gpus && d.is_gpu && !d.simulated;
      for (std::size_t j = 0; j < i; ++j)  // logical GPUs sharing a physical GPU cannot form an NCCL clique
        real_gpus = real_gpus && devices[j].physical_index != d.physical_index;
    }
    return real_gpus && NcclAllReduce::available() ? CommunicationImplementation::NCCL
                                                   : CommunicationImplementation::RING;
  }

  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const Destinations& destinations,
                                                CommunicationOptions options = CommunicationOptions()) const {
    cdo_detail::require_destinations(destinations);
    if (values.empty()) return {};
    for (const auto& v : values) cdo_detail::require_components(v);
    if (auto same = cdo_detail::batch_already_reduced(values, destinations)) return std::move(*same);
    if constexpr (std::is_same_v<T, std::int32_t>) {
      return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
    } else {
      const auto devices = cdo_detail::devices_of(values[0]);
      for (const auto& v : values)
        if (cdo_detail::devices_of(v) != devices) return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
      const auto reduced = all_reduce(op, values, devices, options_.merge(options), {});
      if (devices == destinations) return reduced;
      // Other destinations: each takes the component on its device, else a copy of the primary.
      std::vector<Mirrored<Tensor<T>>> out(reduced.size());
      for (std::size_t i = 0; i < reduced.size(); ++i)
        for (const Device* d : destinations.devices()) {
          const auto& have = devices.devices();
          const auto at = std::find(have.begin(), have.end(), d);
          out[i].values.push_back(at != have.end() ? reduced[i].values[static_cast<std::size_t>(at - have.begin())]
                                                   : cdo_detail::copy_to(reduced[i].primary(), *d));
        }
      return out;
    }
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const Destinations& destinations) const {
    return cdo_detail::reduce_as_batch_of_one(*this, op, value, destinations);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const Destinations& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }

 private:
  CommunicationOptions options_;
  std::shared_ptr<const GpuCliqueAcrossProcesses> clique_;

  /// Packs, all-reduces each pack and unpacks. `across` (non-empty: the operation's name): NCCL
  /// over the clique of every worker's GPUs; otherwise this process's devices only.
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> all_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                              const Destinations& devices, const CommunicationOptions& options,
                                              std::string_view across) const {
    const std::size_t n = devices.size();
    const bool spans = !across.empty();
    const auto implementation = spans ? CommunicationImplementation::NCCL : implementation_for(devices);
    const std::size_t group_size = spans ? static_cast<std::size_t>(clique_->num_ranks) : n;
    // Reversed, then packed by size: the last gradients (computed first) go first.
    std::vector<std::size_t> order(values.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
    std::vector<Tensor<T>> first_replica;
    for (auto i : order) first_replica.push_back(values[i].values[0]);
    std::vector<std::vector<std::size_t>> packs;  // indices into values
    {
      std::size_t next = 0;
      for (const auto& pack : group_by_size(first_replica, options.bytes_per_pack())) {
        packs.emplace_back();
        for (std::size_t j = 0; j < pack.size(); ++j) packs.back().push_back(order[next++]);
      }
    }
    cdo_detail::log_first_10<cdo_detail::CollectiveLines>([&] {
      return "Collective all_reduce tensors: " + std::to_string(values.size()) +
             " all_reduces, num_devices = " + std::to_string(n) + ", group_size = " + std::to_string(group_size) +
             ", implementation = CommunicationImplementation." + std::string(to_string(implementation)) +
             ", num_packs = " + std::to_string(packs.size());
    });
    std::vector<Mirrored<Tensor<T>>> out(values.size());
    for (auto& o : out) o.values.resize(n);
    for (const auto& pack : packs) {
      std::vector<Shape> shapes;
      for (auto i : pack) shapes.push_back(values[i].values[0].shape());
      std::vector<Tensor<T>> flat(n);
      for (std::size_t d = 0; d < n; ++d) {
        std::vector<Tensor<T>> mine;
        for (auto i : pack) mine.push_back(values[i].values[d]);
        DeviceScope scope(devices[d].spec);
        flat[d] = cdo_detail::copy_to(cdo_detail::pack(mine, 1)[0], devices[d]);
      }
      auto summed = spans ? cdo_detail::NcclEngine::all_reduce_across_processes(flat, *clique_, across)
                    : implementation == CommunicationImplementation::NCCL ? cdo_detail::NcclEngine::all_reduce(flat, 0)
                                                                          : cdo_detail::ring_all_reduce(flat);
      for (std::size_t d = 0; d < n; ++d) {
        DeviceScope scope(devices[d].spec);
        auto pieces = cdo_detail::unpack(std::vector{summed[d]}, shapes);
        for (std::size_t j = 0; j < pack.size(); ++j) {
          auto piece =
              op == ReduceOp::MEAN ? cdo_detail::divide(pieces[j], static_cast<std::int64_t>(group_size)) : pieces[j];
          out[pack[j]].values[d] = cdo_detail::copy_to(piece, devices[d]);
        }
      }
    }
    return out;
  }
};

}  // namespace distribute
}  // namespace devtensor
