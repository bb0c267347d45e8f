#pragma once
/// @file parameter_server_strategy.hpp
/// @brief TensorFlow's ParameterServerStrategy (v2) over MPI: variables created in its scope live
/// on the ps tasks, round-robin, and are read and updated there by the chief and the workers.
///
///     ParameterServerStrategy strategy;          // TF_CONFIG: chief, workers, ps; under mpiexec
///     ClusterCoordinator coordinator(strategy);  // coordinator/cluster_coordinator.hpp
///     { auto scope = strategy.scope(); /* the model: its variables go to the ps tasks */ }
///
/// Every task runs the same program (mpiexec starts one process per task; MPI rank r is the
/// r-th task in the order chief, workers, ps). The roles split in the constructor and in the
/// coordinator:
/// - a **ps task** serves in the constructor until the chief ends the job, then the process ends
///   (status 0), as TensorFlow's `server.join()` never returns;
/// - a **worker** runs the program on, building the same model, datasets and functions (they are
///   what the chief's closures run), until its first `schedule`, `join` or `fetch`, where it
///   serves the chief until the job ends (coordinator/cluster_coordinator.hpp);
/// - the **chief** runs the whole program: it creates the variables on the ps tasks, schedules,
///   and reads the trained values from the ps tasks.
/// Variables are matched across tasks by creation order: every task must create the same
/// variables in the same order (TensorFlow traces them once, on the coordinator).
///
/// Reads and writes. On the chief, a read fetches the value from its ps task and a write (assign,
/// assign_add, an optimizer's apply_gradients) is applied there before it returns. On a worker,
/// a scheduled function reads each variable once, fetched when first read (prefetched when earlier
/// functions read it: ps_state.hpp), and its writes are sent when it returns, one request per ps
/// task, applied once per scheduled function (parameter_server.hpp).
/// An optimizer's update rule runs on the ps task with its own slots (distribute/remote_variable.hpp).
/// With a variable_partitioner, variables are ShardedVariables (coordinator/ps_variables.hpp).

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/coordinator/parameter_server.hpp"
#include "devtensor/coordinator/ps_state.hpp"
#include "devtensor/coordinator/ps_variables.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"
#include "devtensor/distribute/multi_worker/ps_channel.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::distribute {

/// TensorFlow's tf.distribute.experimental.ParameterServerStrategy (v2), its processes joined by
/// MPI. See the file comment for the roles and where values live.
class ParameterServerStrategy {
 public:
  /// Connects this task to the cluster TF_CONFIG (or `resolver`) describes, else to the one the MPI
  /// launch describes (ParameterServerStrategyOptions::num_ps_from_launch). On a ps task, serves
  /// until the chief ends the job and then ends the process with status 0.
  /// @throws InvalidArgumentError for a cluster without ps or worker tasks, or an invalid one
  /// (TensorFlow's checks); FailedPreconditionError when MPI's launch does not match it.
  explicit ParameterServerStrategy(const cluster_resolver::TFConfigClusterResolver& resolver,
                                   ParameterServerStrategyOptions options = {});
  /// The cluster TF_CONFIG describes, else the MPI launch's.
  ParameterServerStrategy();
  ParameterServerStrategy(const ParameterServerStrategy&) = delete;
  ParameterServerStrategy& operator=(const ParameterServerStrategy&) = delete;
  /// The chief's strategy ends the job: every worker and ps task stops serving and exits.
  ~ParameterServerStrategy();

  /// RAII: variables created on this thread while the guard lives are placed on the ps tasks.
  class [[nodiscard]] Scope {
   public:
    explicit Scope(const VariableCreator* creator) : set_(current_variable_creator(), creator) {}

   private:
    ScopedSet<VariableCreator> set_;
  };
  [[nodiscard]] Scope scope() const { return Scope(creator_.get()); }

  [[nodiscard]] int num_workers() const noexcept { return state_->roles.num_workers; }
  [[nodiscard]] int num_ps() const noexcept { return state_->roles.num_ps; }
  /// "chief" or "worker" (a ps task never returns from the constructor).
  [[nodiscard]] const std::string& task_type() const noexcept { return state_->roles.task_type; }
  [[nodiscard]] int task_id() const noexcept { return state_->roles.task_id; }
  [[nodiscard]] bool is_chief() const noexcept { return state_->chief(); }
  [[nodiscard]] const ClusterSpec& cluster_spec() const noexcept { return state_->roles.cluster; }

  /// Internal (the coordinator).
  [[nodiscard]] ps_detail::State& state() const noexcept { return *state_; }

 private:
  std::shared_ptr<ps_detail::State> state_;
  std::shared_ptr<ps_detail::Creator> creator_;

  /// Checks everything each task can check alone, then joins the others (MPI_Comm_dup).
  static std::shared_ptr<ps_detail::State> connect(const cluster_resolver::TFConfigClusterResolver& resolver,
                                                   ParameterServerStrategyOptions options);

  /// Every worker and ps task stops serving (each message on its own: one dead task stops no other).
  void stop_the_job();
};

// --- definitions (Note [The mpi component's compiled part]) ---
#if DEVTENSOR_MPI_DEFINITIONS

DEVTENSOR_MPI_DEFINITION ParameterServerStrategy::ParameterServerStrategy()
    : ParameterServerStrategy(cluster_resolver::TFConfigClusterResolver()) {}

DEVTENSOR_MPI_DEFINITION ParameterServerStrategy::ParameterServerStrategy(
    const cluster_resolver::TFConfigClusterResolver& resolver, ParameterServerStrategyOptions options)
    : state_(connect(resolver, std::move(options))), creator_(std::make_shared<ps_detail::Creator>(state_)) {
  if (log_enabled(LogSource::python_logger, LogSeverity::info))
    log(LogSource::python_logger, LogSeverity::info,
        "ParameterServerStrategyV2 is now connecting to cluster with cluster_spec: ClusterSpec(" +
            state_->roles.cluster.to_string() + ")");
  if (state_->roles.task_type == "ps") {
    ps_detail::ParameterServer(state_->channel, 0, state_->host).serve();
    state_->channel.flush(1.0);
    std::exit(0);  // finalises MPI (mpi_runtime.hpp)
  }
}

DEVTENSOR_MPI_DEFINITION ParameterServerStrategy::~ParameterServerStrategy() {
  if (!state_->chief()) return;
  try {
    stop_the_job();
  } catch (const std::exception& e) {  // a destructor never throws: MPI refused a dead task's message
    log(LogSeverity::warning, std::string("ParameterServerStrategy: ending the job: ") + e.what());
  }
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<ps_detail::State> ParameterServerStrategy::connect(
    const cluster_resolver::TFConfigClusterResolver& resolver, ParameterServerStrategyOptions options) {
  if (!(options.timeout_seconds > 0))
    throw InvalidArgumentError("ParameterServerStrategyOptions::timeout_seconds must be positive, got " +
                               std::to_string(options.timeout_seconds));
  auto roles = ps_detail::Roles::resolve(resolver.describe(), options.num_ps_from_launch);
  return std::make_shared<ps_detail::State>(std::move(roles), std::move(options),
                                            device_set("ParameterServerStrategy").host_cpu());
}

DEVTENSOR_MPI_DEFINITION void ParameterServerStrategy::stop_the_job() {
  const auto& roles = state_->roles;
  for (int task = 0; task < roles.num_workers + roles.num_ps; ++task) {
    ps_wire::Writer stop;
    const bool worker = task < roles.num_workers;
    if (worker)
      stop.put<std::uint64_t>(0).put<std::uint32_t>(UINT32_MAX);
    else
      stop.put<std::uint64_t>(0).put(static_cast<std::uint8_t>(ps_wire::RequestKind::shutdown));
    try {
      state_->channel.send(worker ? roles.worker_rank(task) : roles.ps_rank(task - roles.num_workers),
                           worker ? ps_wire::kRun : ps_wire::kRequest, std::move(stop));
    } catch (const Error&) {
    }
  }
  state_->channel.flush(1.0);
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute
