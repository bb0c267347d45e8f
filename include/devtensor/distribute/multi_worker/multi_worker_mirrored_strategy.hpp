#pragma once
/// @file multi_worker_mirrored_strategy.hpp
/// @brief MultiWorkerMirroredStrategy (SPEC §6.3): synchronous data parallelism across processes.
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
/// global batch (DATA auto-shard). Values go through host memory and MPI; NCCL between processes
/// is not part of this component yet (CommunicationImplementation::NCCL with GPUs warns that the
/// workers' sums go through host memory and MPI).

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/mirrored_strategy.hpp"
#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"
#include "devtensor/distribute/multi_worker/mpi_worker_group.hpp"

namespace devtensor::distribute {

namespace multi_worker_detail {

/// SPEC §6.3's rules for a non-empty cluster. @throws InvalidArgumentError.
inline void validate(const cluster_resolver::ClusterDescription& cluster) {
  const auto& spec = cluster.cluster_spec;
  if (spec.empty()) return;
  if (!cluster.task_type || !cluster.task_id)
    throw InvalidArgumentError("When `cluster_spec` is given, you must also specify `task_type` and `task_id`.");
  if (!spec.has_job("worker") && !spec.has_job("chief") && !spec.has_job("evaluator"))
    throw InvalidArgumentError("No `worker`, `chief` or `evaluator` tasks can be found in `cluster_spec`: " + spec.to_string());
  multi_worker_util::validate_cluster_spec(spec, cluster.task_type, cluster.task_id);
  if (cluster.task_type == "ps")
    throw InvalidArgumentError("Unexpected `task_type` 'ps': MultiWorkerMirroredStrategy runs on 'chief' and 'worker' "
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

}  // namespace multi_worker_detail

class MultiWorkerMirroredStrategy : public MirroredStrategy<CollectiveAllReduce> {
  using Base = MirroredStrategy<CollectiveAllReduce>;

 public:
  /// The cluster from `resolver` (default: TF_CONFIG; with no cluster there, the MPI launch).
  /// @throws InvalidArgumentError for an invalid cluster (SPEC §6.2 key phrases);
  ///         FailedPreconditionError when TF_CONFIG and the MPI launch disagree, or when several
  ///         workers are described but the process was not started by an MPI launcher.
  explicit MultiWorkerMirroredStrategy(const cluster_resolver::TFConfigClusterResolver& resolver = cluster_resolver::TFConfigClusterResolver(),
                                       CommunicationOptions communication_options = CommunicationOptions())
      : MultiWorkerMirroredStrategy(Setup::make(multi_worker_detail::resolve(resolver.describe()), communication_options)) {}
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
      const auto gpus = config::list_logical_devices("GPU");
      if (gpus.empty()) s->local_devices = {std::string(kHostCpuDeviceName)};
      for (const auto& g : gpus) s->local_devices.push_back(g.name);
      const std::string prefix = single ? std::string() : "/job:" + *cluster.task_type + "/replica:0/task:" + std::to_string(*cluster.task_id);
      for (const auto& d : s->local_devices) s->worker_devices.push_back(prefix + d.substr(d.find("/device:")));
      if (options.implementation() == CommunicationImplementation::NCCL && gpus.empty())
        log(LogSource::python_logger, LogSeverity::warning, "Enabled NCCL communication but no GPUs detected/specified.");
      if (options.implementation() == CommunicationImplementation::NCCL && !gpus.empty() && !single)
        log(LogSource::python_logger, LogSeverity::warning,
            "CommunicationImplementation.NCCL between workers is not available yet: each worker reduces its own GPUs' "
            "values, and the workers' sums cross processes through host memory and MPI (as with RING).");

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
      log(LogSource::python_logger, LogSeverity::info, "Waiting for the cluster, timeout = " +
          (options.timeout_seconds() ? std::to_string(*options.timeout_seconds()) : std::string("inf")));
      group->barrier("the start-up of MultiWorkerMirroredStrategy");
      log(LogSource::python_logger, LogSeverity::info, "Cluster is ready.");
      log(LogSource::python_logger, LogSeverity::info,
          "MultiWorkerMirroredStrategy with cluster_spec = " + spec.to_string() + ", task_type = " +
              multi_worker_util::repr(cluster.task_type) + ", task_id = " + std::to_string(*cluster.task_id) +
              ", num_workers = " + std::to_string(s->num_workers) + ", local_devices = " + devices +
              ", communication = " + impl);
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
      : Base(setup->local_devices, CollectiveAllReduce(setup->options), Workers{setup->group, setup->options}),
        setup_(std::move(setup)) {}
};

}  // namespace devtensor::distribute
