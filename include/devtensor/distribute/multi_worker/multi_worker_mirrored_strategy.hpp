#pragma once
/// @file multi_worker_mirrored_strategy.hpp
/// @brief MultiWorkerMirroredStrategy: synchronous data parallelism across processes.
/// Each process is one worker of the cluster TF_CONFIG (or the MPI launch) describes; its replicas
/// are its local devices, and values cross processes through MPI (the devtensor::mpi component).
///
///     // mpiexec -n 2 ./train     (TF_CONFIG optional: the MPI launch is a cluster of workers)
///     dt::distribute::MultiWorkerMirroredStrategy strategy;
///     strategy.num_replicas_in_sync();   // local devices x workers
///     { auto guard = strategy.scope(); /* variables: initial values broadcast from the chief */ }
///     model.fit(dataset, {.epochs = 2});  // each worker trains on its share of every global batch
///
/// Everything MirroredStrategy offers (run, reduce, scope, experimental_distribute_dataset, fit)
/// works across the workers: reductions sum every worker's replicas, global replica ids are
/// id_in_cluster × local devices + local index, and each worker takes its own share of each
/// global batch (DATA auto-shard).
///
/// How values cross processes (CommunicationOptions): RING, and whatever NCCL cannot serve, goes
/// through host memory and MPI (each worker first reduces its own replicas). NCCL, and AUTO when
/// it can, joins every worker's GPUs in one NCCL communicator, bootstrapped over MPI (the chief's
/// ncclGetUniqueId, broadcast): gradients are then summed across all replicas of all workers on
/// the devices, one NCCL call per pack. NCCL needs the devtensor::nccl component, real GPUs on
/// every worker and one rank per GPU: workers that share a GPU are refused when NCCL is asked for
/// (InvalidArgumentError saying how to launch) and fall back to MPI under AUTO.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/mirrored_strategy.hpp"
#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"
#include "devtensor/distribute/multi_worker/mpi_worker_group.hpp"

namespace devtensor::distribute {

namespace multi_worker_detail {

/// What MultiWorkerMirroredStrategy accepts of a non-empty cluster: chief and worker jobs only
/// (ps and evaluator tasks are refused), a valid task of them. @throws InvalidArgumentError.
inline void validate(const cluster_resolver::ClusterDescription& cluster) {
  const auto& spec = cluster.cluster_spec;
  if (spec.empty()) return;
  if (!cluster.task_type || !cluster.task_id)
    throw InvalidArgumentError("When `cluster_spec` is given, you must also specify `task_type` and `task_id`.");
  if (!spec.has_job("worker") && !spec.has_job("chief") && !spec.has_job("evaluator"))
    throw InvalidArgumentError("No `worker`, `chief` or `evaluator` tasks can be found in `cluster_spec`: " +
                               spec.to_string());
  multi_worker_util::validate_cluster_spec(spec, cluster.task_type, cluster.task_id);
  if (cluster.task_type == "ps")
    throw InvalidArgumentError(
        "Unexpected `task_type` 'ps': MultiWorkerMirroredStrategy runs on 'chief' and 'worker' "
        "tasks (parameter servers belong to ParameterServerStrategy)");
}

/// The cluster this process belongs to: TF_CONFIG when it names one, else the MPI launch, else
/// a single worker. With both, they must agree.
inline cluster_resolver::ClusterDescription resolve(const cluster_resolver::ClusterDescription& tf_config) {
  validate(tf_config);
  const auto launch = cluster_resolver::MpiLaunch::from_environment();
  if (tf_config.cluster_spec.empty()) {
    if (launch && launch->size > 1) return cluster_resolver::MpiClusterResolver(*launch).describe();
    return tf_config;
  }
  if (launch && tf_config.task_type != "evaluator") cluster_resolver::require_consistent_with_mpi(tf_config, *launch);
  return tf_config;
}

inline std::string implementation_name(CommunicationImplementation i) {
  return "CommunicationImplementation." + std::string(to_string(i));
}

/// One worker's answer to the GPU survey: whether it can join an NCCL clique, and its GPUs.
struct GpuSurvey {
  bool can_join = false;
  std::vector<std::string> gpus;  // "<host> <PCI bus id>", one per local replica

  [[nodiscard]] std::string encode() const {
    std::string out = can_join ? "1" : "0";
    for (const auto& g : gpus) out += "\n" + g;
    return out;
  }
  static GpuSurvey decode(const std::string& text) {
    GpuSurvey s;
    s.can_join = !text.empty() && text[0] == '1';
    for (std::size_t at = text.find('\n'); at != std::string::npos;) {
      const std::size_t next = text.find('\n', at + 1);
      s.gpus.push_back(text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
      at = next;
    }
    return s;
  }
};

/// The NCCL clique of every worker's GPUs, or nullptr when the workers' sums go through MPI
/// (RING; or AUTO/NCCL where NCCL cannot run). Every worker calls this at start-up with the
/// same options and decides alike from the same survey.
/// @throws InvalidArgumentError when NCCL is asked for but two ranks would share a GPU.
inline std::shared_ptr<const GpuCliqueAcrossProcesses> gpu_clique(MpiWorkerGroup& group, const Destinations& replicas,
                                                                  const CommunicationOptions& options) {
  const auto requested = options.implementation();
  if (requested == CommunicationImplementation::RING) return nullptr;
  GpuSurvey mine;
  mine.can_join = cdo_detail::NcclEngine::available_across_processes() && !replicas.empty();
  const std::string host = group.host_name();
  bool has_gpus = false;
  for (const Device* device : replicas.devices()) {
    has_gpus = has_gpus || device->is_gpu;
    mine.can_join = mine.can_join && device->real_gpu();
    if (device->real_gpu()) mine.gpus.push_back(host + " " + device->pci_bus_id);
  }
  std::vector<GpuSurvey> workers;
  for (const auto& text : group.all_gather(mine.encode(), "the GPU survey of MultiWorkerMirroredStrategy"))
    workers.push_back(GpuSurvey::decode(text));
  bool all_can = true;
  for (const auto& w : workers) all_can = all_can && w.can_join;
  if (!all_can) {
    if (requested == CommunicationImplementation::NCCL && has_gpus)
      log(LogSource::python_logger, LogSeverity::warning,
          "CommunicationImplementation.NCCL between workers needs real GPUs on every worker and the NCCL kernel "
          "in every worker's program (the devtensor::nccl component): the workers' sums cross processes through "
          "host memory and MPI (as with RING).");
    return nullptr;
  }
  // NCCL allows one rank per GPU: two workers (or two logical GPUs of one worker) on one GPU
  // cannot share a communicator.
  std::vector<std::pair<std::string, int>> owners;  // GPU, worker
  for (std::size_t w = 0; w < workers.size(); ++w)
    for (const auto& gpu : workers[w].gpus) {
      for (const auto& [seen, by] : owners) {
        if (seen != gpu) continue;
        const std::string where =
            "the GPU at PCI bus id " + gpu.substr(gpu.rfind(' ') + 1) + " on host " + gpu.substr(0, gpu.rfind(' '));
        const std::string who =
            by == static_cast<int>(w)
                ? "worker " + std::to_string(w) + " has two replicas on " + where
                : "workers " + std::to_string(by) + " and " + std::to_string(w) + " both use " + where;
        if (requested == CommunicationImplementation::NCCL)
          throw InvalidArgumentError(
              "NCCL cannot all-reduce between these workers: " + who +
              ", and NCCL allows one rank per GPU. Give each "
              "worker its own GPU (for example CUDA_VISIBLE_DEVICES=<local rank> for each process on a host) or use "
              "CommunicationImplementation.RING, which sums through host memory and MPI.");
        log(LogSource::python_logger, LogSeverity::info,
            "Not using NCCL between workers: " + who +
                " (NCCL allows one rank per GPU); the workers' sums cross "
                "processes through host memory and MPI.");
        return nullptr;
      }
      owners.emplace_back(gpu, static_cast<int>(w));
    }
  auto clique = std::make_shared<GpuCliqueAcrossProcesses>();
  for (std::size_t w = 0; w < workers.size(); ++w) {
    if (static_cast<int>(w) == group.worker_index()) clique->first_rank = clique->num_ranks;
    clique->num_ranks += static_cast<int>(workers[w].gpus.size());
  }
  clique->timeout_seconds = options.timeout_seconds();
  // The chief makes the id; a failure there is sent along with it, so no worker waits for ever.
  std::array<std::byte, GpuCliqueAcrossProcesses::unique_id_bytes + 1> message{};
  std::string chief_error;
  if (group.worker_index() == 0) {
    try {
      gpu_all_reduce_kernel()->new_unique_id(std::span(message).first<GpuCliqueAcrossProcesses::unique_id_bytes>());
      message.back() = std::byte{1};
    } catch (const std::exception& e) {
      chief_error = e.what();
    }
  }
  group.broadcast(message.data(), message.size(), "the NCCL unique id of MultiWorkerMirroredStrategy");
  if (message.back() != std::byte{1})
    throw InternalError("The chief could not create the NCCL communicator id" +
                        (chief_error.empty() ? std::string() : ": " + chief_error) +
                        ". Use CommunicationImplementation.RING to sum through host memory and MPI.");
  std::copy_n(message.begin(), clique->unique_id.size(), clique->unique_id.begin());
  return clique;
}

}  // namespace multi_worker_detail

class MultiWorkerMirroredStrategy : public MirroredStrategy<CollectiveAllReduce> {
  using Base = MirroredStrategy<CollectiveAllReduce>;

 public:
  /// The cluster from `resolver` (default: TF_CONFIG; with no cluster there, the MPI launch).
  /// @throws InvalidArgumentError for an invalid cluster (TensorFlow's multi_worker_util texts);
  ///         FailedPreconditionError when TF_CONFIG and the MPI launch disagree, or when several
  ///         workers are described but the process was not started by an MPI launcher.
  explicit MultiWorkerMirroredStrategy(
      const cluster_resolver::TFConfigClusterResolver& resolver = cluster_resolver::TFConfigClusterResolver(),
      CommunicationOptions communication_options = CommunicationOptions())
      : MultiWorkerMirroredStrategy(
            Setup::make(multi_worker_detail::resolve(resolver.describe()), communication_options)) {}
  MultiWorkerMirroredStrategy(const cluster_resolver::MpiClusterResolver& resolver,
                              CommunicationOptions communication_options = CommunicationOptions())
      : MultiWorkerMirroredStrategy(Setup::make(resolver.describe(), communication_options)) {}

  [[nodiscard]] const ClusterSpec& cluster_spec() const noexcept { return setup_->cluster.cluster_spec; }
  [[nodiscard]] const std::optional<std::string>& task_type() const noexcept { return setup_->cluster.task_type; }
  [[nodiscard]] const std::optional<int>& task_id() const noexcept { return setup_->cluster.task_id; }
  [[nodiscard]] int num_workers() const noexcept { return setup_->num_workers; }
  /// This worker's rank (id_in_cluster): 0 is the chief.
  [[nodiscard]] int worker_index() const noexcept { return setup_->id_in_cluster; }
  [[nodiscard]] bool is_chief() const noexcept { return setup_->is_chief; }
  /// This worker's devices as TensorFlow names them: /job:<type>/replica:0/task:<id>/device:CPU:0.
  [[nodiscard]] const std::vector<std::string>& worker_devices() const noexcept { return setup_->worker_devices; }
  [[nodiscard]] const CommunicationOptions& communication_options() const noexcept { return setup_->options; }
  /// The MPI group, for collectives of the user's own (every worker must call them alike).
  [[nodiscard]] MpiWorkerGroup* mpi_group() const noexcept { return setup_->group.get(); }
  /// Whether gradients cross the workers with NCCL (every worker's GPUs in one communicator)
  /// rather than through host memory and MPI.
  [[nodiscard]] bool nccl_between_workers() const noexcept { return setup_->clique != nullptr; }

 private:
  struct Setup {
    cluster_resolver::ClusterDescription cluster;
    CommunicationOptions options;
    std::vector<std::string> local_devices;   // localhost names: the replicas
    std::vector<std::string> worker_devices;  // the same as /job:<type>/replica:0/task:<id>/...
    int num_workers = 1;
    int id_in_cluster = 0;
    bool is_chief = true;
    std::shared_ptr<MpiWorkerGroup> group;
    std::shared_ptr<const GpuCliqueAcrossProcesses> clique;  // NCCL between the workers, or none

    static std::shared_ptr<Setup> make(cluster_resolver::ClusterDescription cluster, CommunicationOptions options) {
      auto s = std::make_shared<Setup>();
      s->options = options;
      const auto& spec = cluster.cluster_spec;
      const bool single = spec.empty() || cluster.task_type == "evaluator";
      multi_worker_detail::validate(cluster);
      if (!spec.empty()) {
        s->num_workers = multi_worker_util::worker_count(spec, cluster.task_type);
        s->id_in_cluster = multi_worker_util::id_in_cluster(spec, cluster.task_type, *cluster.task_id);
        s->is_chief = multi_worker_util::is_chief(spec, cluster.task_type, cluster.task_id);
        if (single) s->num_workers = 1;
      }
      // Local devices: every logical GPU, else the CPU.
      const DeviceSet& all = device_set("constructing MultiWorkerMirroredStrategy");
      for (const auto& d : all)
        if (d.is_gpu) s->local_devices.push_back(d.full_name);
      const bool gpus = !s->local_devices.empty();
      if (!gpus) s->local_devices = {all.host_cpu().full_name};
      const std::string prefix =
          single ? std::string() : "/job:" + *cluster.task_type + "/replica:0/task:" + std::to_string(*cluster.task_id);
      for (const auto& d : s->local_devices) s->worker_devices.push_back(prefix + d.substr(d.find("/device:")));
      if (options.implementation() == CommunicationImplementation::NCCL && !gpus)
        log(LogSource::python_logger, LogSeverity::warning,
            "Enabled NCCL communication but no GPUs detected/specified.");

      const std::string devices = cdo_detail::python_tuple(s->worker_devices);
      const std::string impl = multi_worker_detail::implementation_name(options.implementation());
      if (single) {
        log(LogSource::python_logger, LogSeverity::info,
            "Single-worker MultiWorkerMirroredStrategy with local_devices = " + devices + ", communication = " + impl);
        s->cluster = std::move(cluster);
        return s;
      }
      auto group = std::make_shared<MpiWorkerGroup>(options.timeout_seconds());
      if (group->num_workers() != s->num_workers)
        throw FailedPreconditionError(
            "The cluster has " + std::to_string(s->num_workers) + " workers, but " +
            (group->num_workers() == 1 ? std::string("this process was not started by an MPI launcher")
                                       : "MPI started " + std::to_string(group->num_workers()) + " processes") +
            ". devtensor's workers connect through MPI: launch one process per worker, e.g. `mpiexec -n " +
            std::to_string(s->num_workers) + " ./app`, each with its TF_CONFIG (or none: the launch is the cluster).");
      if (group->worker_index() != s->id_in_cluster)
        throw FailedPreconditionError("This process is MPI rank " + std::to_string(group->worker_index()) +
                                      " but TF_CONFIG makes it worker " + std::to_string(s->id_in_cluster) +
                                      ". Give rank r the TF_CONFIG task whose id_in_cluster is r (chief first).");
      log(LogSource::python_logger, LogSeverity::info,
          "Enabled multi-worker collective ops with available devices: [" + list(s->worker_devices) + "]");
      log(LogSource::python_logger, LogSeverity::info,
          "Waiting for the cluster, timeout = " +
              (options.timeout_seconds() ? std::to_string(*options.timeout_seconds()) : std::string("inf")));
      group->barrier("the start-up of MultiWorkerMirroredStrategy");
      log(LogSource::python_logger, LogSeverity::info, "Cluster is ready.");
      s->clique = multi_worker_detail::gpu_clique(*group, Destinations(s->local_devices), options);
      log(LogSource::python_logger, LogSeverity::info,
          "MultiWorkerMirroredStrategy with cluster_spec = " + spec.to_string() +
              ", task_type = " + multi_worker_util::repr(cluster.task_type) +
              ", task_id = " + std::to_string(*cluster.task_id) + ", num_workers = " + std::to_string(s->num_workers) +
              ", local_devices = " + devices + ", communication = " + impl);
      s->group = std::move(group);
      s->cluster = std::move(cluster);
      return s;
    }
    static std::string list(const std::vector<std::string>& names) {
      std::string out;
      for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
      return out;
    }
  };
  std::shared_ptr<Setup> setup_;

  explicit MultiWorkerMirroredStrategy(std::shared_ptr<Setup> setup)
      : Base(setup->local_devices, CollectiveAllReduce(setup->options, setup->clique),
             setup->group ? std::make_shared<CrossWorker>(setup->group, setup->options) : nullptr),
        setup_(std::move(setup)) {}
};

}  // namespace devtensor::distribute
