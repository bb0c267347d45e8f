#pragma once
/// @file ps_state.hpp
/// @brief One process's side of parameter-server training: its role in the cluster (MPI rank r
/// is the r-th task in the order chief, workers, ps), its requests to the ps tasks (a request and
/// its reply, with a deadline), and the registry of the variables it knows by id.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"
#include "devtensor/distribute/multi_worker/ps_channel.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/ops/thread_state.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::distribute {

/// A variable partitioner (TensorFlow's: shape and dtype in, the number of shards per axis out;
/// every axis but the first must be 1). See coordinator/ps_variables.hpp's partitioners.
using VariablePartitioner = std::function<std::vector<std::int64_t>(const Shape&, DType)>;

struct ParameterServerStrategyOptions {
  /// None: every variable whole on one ps task. Else variables of rank >= 1 are split along their
  /// first axis into ShardedVariables (partitioners::MinSizePartitioner, FixedShardsPartitioner).
  VariablePartitioner variable_partitioner = nullptr;
  /// How long a ps task may take to answer a request, and a worker may stay silent, before it
  /// counts as failed (UnavailableError at the chief; the worker's functions run elsewhere).
  double timeout_seconds = 10.0;
  /// Without a cluster in TF_CONFIG the MPI launch is the cluster, as for
  /// MultiWorkerMirroredStrategy: rank 0 the chief, the last `num_ps_from_launch` ranks the ps tasks,
  /// the ranks between them the workers (`mpiexec -n 4 ./app`: chief, 2 workers, 1 ps task).
  int num_ps_from_launch = 1;
};

namespace ps_detail {

/// The tasks of the cluster and this process's place among them: MPI ranks in the order chief,
/// workers, ps. @throws InvalidArgumentError (TensorFlow's checks, then MPI's).
struct Roles {
  std::string task_type;
  int task_id = 0;
  int num_workers = 0;
  int num_ps = 0;
  ClusterSpec cluster;

  [[nodiscard]] int worker_rank(int worker) const noexcept { return 1 + worker; }
  [[nodiscard]] int ps_rank(int ps) const noexcept { return 1 + num_workers + ps; }
  [[nodiscard]] int size() const noexcept { return 1 + num_workers + num_ps; }

  /// The cluster an MPI launch of `size` processes describes without TF_CONFIG (see
  /// ParameterServerStrategyOptions::num_ps_from_launch). @throws InvalidArgumentError with
  /// TensorFlow's "Cluster spec must be non-empty" when there is no launch or it is too small.
  static cluster_resolver::ClusterDescription from_launch(const std::optional<cluster_resolver::MpiLaunch>& launch,
                                                          int num_ps);

  /// The roles TF_CONFIG's cluster (or, without one, the MPI launch) gives this process.
  /// @throws FailedPreconditionError when MPI's launch does not match the cluster.
  static Roles resolve(const cluster_resolver::ClusterDescription& described, int num_ps_from_launch = 1);
};

/// The writes of the scheduled function running on this thread (worker side): one Write
/// request's body per ps task, sent when the function returns.
struct ClosureWrites {
  /// Each starts with a Write request's header: sequence, kind, closure id, count (patched).
  static constexpr std::size_t kClosureAt = 9, kCountAt = 17;
  std::vector<ps_wire::Writer> per_ps;
  std::vector<std::uint32_t> counts;
  explicit ClosureWrites(int num_ps);
};
inline ClosureWrites*& current_closure_writes() noexcept { return this_thread_state().closure_writes; }

/// What every task's remote variables share, whatever their element type.
class RemoteSlot {
 public:
  RemoteSlot(std::uint64_t id, int ps) : id_(id), ps_(ps) {}
  virtual ~RemoteSlot() = default;
  /// Replaces the local copy (a cache: const) with the value a ps task sent.
  /// @throws InvalidArgumentError when it is not this variable's dtype and shape (the tasks
  /// created different variables).
  virtual void refresh(const ps_wire::WireTensor& value) const = 0;
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] int ps() const noexcept { return ps_; }
  /// The scheduled function (State::generation) whose values the local copy holds.
  mutable std::uint64_t fresh_in = 0;

 private:
  std::uint64_t id_;
  int ps_;
};

/// One process's side of the strategy: the channel, the requests to ps tasks, the variables.
class State final : public RemoteVariableHost, public std::enable_shared_from_this<State> {
 public:
  /// `host_cpu`: this process's host CPU, where remote values arrive and local copies live.
  State(Roles task_roles, ParameterServerStrategyOptions task_options, const Device& host_cpu)
      : roles(std::move(task_roles)),
        options(std::move(task_options)),
        host(host_cpu),
        channel(options.timeout_seconds) {}

  const Roles roles;
  const ParameterServerStrategyOptions options;
  const Device& host;
  ps_wire::Channel channel;

  [[nodiscard]] bool chief() const noexcept { return roles.task_type == "chief"; }
  [[nodiscard]] std::string ps_name(int ps) const { return "/job:ps/replica:0/task:" + std::to_string(ps); }

  /// Sends a request to ps task `ps` (fields after the kind written by `body`) and returns its
  /// reply's payload. @throws UnavailableError when it does not answer in time (and at once
  /// afterwards); the error the ps task answered with, with its type.
  template <class Body>
  ps_wire::Reader request(int ps, ps_wire::RequestKind kind, std::string_view what, Body&& body) {
    ps_wire::Writer w;
    w.put<std::uint64_t>(0).put(static_cast<std::uint8_t>(kind));
    body(w);
    return request_message(ps, what, std::move(w));
  }
  /// The same for a message already written after a reserved sequence number (its first 8 bytes).
  ps_wire::Reader request_message(int ps, std::string_view what, ps_wire::Writer message);

  /// A new variable's id and ps task (round-robin, TensorFlow's _variable_count % num_ps).
  std::pair<std::uint64_t, int> next_variable() {
    std::lock_guard lock(variables_mutex_);
    const std::uint64_t id = next_id_++;
    return {id, static_cast<int>(id % static_cast<std::uint64_t>(roles.num_ps))};
  }
  void add(std::uint64_t id, std::weak_ptr<RemoteSlot> slot) {
    std::lock_guard lock(variables_mutex_);
    variables_[id] = std::move(slot);
  }

  /// Worker, as a scheduled function starts: the values of the variables earlier functions read,
  /// one request per ps task (a variable read for the first time is fetched when it is read:
  /// ensure_fresh). So a step pulls what it uses, not every variable of the job.
  void begin_closure();
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  /// Worker, inside a scheduled function: `slot`'s value of this function, fetched if not yet.
  void ensure_fresh(const RemoteSlot& slot);

  /// Sends one closure's writes, per ps task (closure 0: the chief's, applied at once).
  void commit(std::uint64_t closure, ClosureWrites& writes);

  /// Where this task's writes go: the running function's writes on a worker; on the chief,
  /// `now`, which the caller commits at once. @throws FailedPreconditionError on a worker outside
  /// a scheduled function.
  ClosureWrites& writes_for(std::optional<ClosureWrites>& now, std::string_view what);

  void apply_gradients(const OptimizerRule& rule, const std::vector<Tensor<float>>& grads,
                       const std::vector<Variable<float>>& vars) override;

 private:
  /// One read request for `slots` (all on ps task `ps`); each local copy takes its value.
  void fetch(int ps, const std::vector<std::shared_ptr<const RemoteSlot>>& slots);

  std::uint64_t generation_ = 0;  // worker: the scheduled functions begun
  std::set<std::uint64_t> used_;  // worker: the variables its functions read
  std::mutex request_mutex_;      // one request at a time per process: replies are matched by source
  std::uint64_t sequence_ = 0;
  std::set<int> failed_ps_;
  std::mutex variables_mutex_;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, std::weak_ptr<RemoteSlot>> variables_;

  UnavailableError unavailable(int ps, std::string_view what) const;
};

// --- definitions (Note [The mpi component's compiled part]) ---
#if DEVTENSOR_MPI_DEFINITIONS

DEVTENSOR_MPI_DEFINITION cluster_resolver::ClusterDescription Roles::from_launch(
    const std::optional<cluster_resolver::MpiLaunch>& launch, int num_ps) {
  const int size = launch ? launch->size : 1;
  if (num_ps < 1)
    throw InvalidArgumentError("ParameterServerStrategyOptions::num_ps_from_launch must be at least 1, got " +
                               std::to_string(num_ps));
  if (size < num_ps + 2)
    throw InvalidArgumentError(
        "Cluster spec must be non-empty in `tf.distribute.cluster_resolver.ClusterResolver`. Set TF_CONFIG, or let "
        "the MPI launch be the cluster: rank 0 the chief, then the workers, the last " +
        std::to_string(num_ps) + " rank(s) the ps task(s), so at least " + std::to_string(num_ps + 2) +
        " processes (`mpiexec -n " + std::to_string(num_ps + 3) + " ./app`: the chief, 2 workers, " +
        std::to_string(num_ps) + " ps); " +
        (launch ? "this launch has " + std::to_string(size) + " process(es)"
                : "this process was not started by mpiexec") +
        ".");
  const int num_workers = size - 1 - num_ps;
  auto names = [](int first, int count) {
    std::vector<std::string> out;
    for (int r = first; r < first + count; ++r) out.push_back("mpi:" + std::to_string(r));
    return out;
  };
  cluster_resolver::ClusterDescription d;
  d.cluster_spec =
      ClusterSpec({{"chief", names(0, 1)}, {"worker", names(1, num_workers)}, {"ps", names(1 + num_workers, num_ps)}});
  const int rank = launch->rank;
  d.task_type = rank == 0 ? "chief" : rank <= num_workers ? "worker" : "ps";
  d.task_id = rank == 0 ? 0 : rank <= num_workers ? rank - 1 : rank - 1 - num_workers;
  d.rpc_layer = "mpi";
  return d;
}

DEVTENSOR_MPI_DEFINITION Roles Roles::resolve(const cluster_resolver::ClusterDescription& described,
                                              int num_ps_from_launch) {
  const auto d = described.cluster_spec.empty()
                     ? from_launch(cluster_resolver::MpiLaunch::from_environment(), num_ps_from_launch)
                     : described;
  multi_worker_util::validate_cluster_spec(d.cluster_spec, d.task_type, d.task_id);
  if (d.cluster_spec.num_tasks("ps") < 1) throw InvalidArgumentError("There must be at least one ps.");
  if (d.cluster_spec.num_tasks("worker") < 1) throw InvalidArgumentError("There must be at least one worker.");
  if (d.cluster_spec.num_tasks("chief") != 1 || d.cluster_spec.has_job("evaluator"))
    throw InvalidArgumentError(
        "ParameterServerStrategy runs a cluster of one 'chief' (the coordinator, MPI rank 0), "
        "'worker' and 'ps' tasks; got " +
        d.cluster_spec.to_string());
  Roles r;
  r.cluster = d.cluster_spec;
  r.num_workers = d.cluster_spec.num_tasks("worker");
  r.num_ps = d.cluster_spec.num_tasks("ps");
  const auto launch = cluster_resolver::MpiLaunch::from_environment();
  const int rank = launch ? launch->rank : 0;
  const int size = launch ? launch->size : 1;
  if (size != r.size())
    throw FailedPreconditionError("ParameterServerStrategy: the cluster has " + std::to_string(r.size()) + " tasks (" +
                                  d.cluster_spec.to_string() + ") but MPI launched " + std::to_string(size) +
                                  " process(es). Start one process per task: `mpiexec -n " + std::to_string(r.size()) +
                                  " ./app` (rank 0 the chief, then the workers, then the ps tasks).");
  const auto [type, id] = rank == 0               ? std::pair{std::string("chief"), 0}
                          : rank <= r.num_workers ? std::pair{std::string("worker"), rank - 1}
                                                  : std::pair{std::string("ps"), rank - 1 - r.num_workers};
  if ((d.task_type && *d.task_type != type) || (d.task_id && *d.task_id != id))
    throw FailedPreconditionError("TF_CONFIG describes task " + d.task_type.value_or("?") + ":" +
                                  std::to_string(d.task_id.value_or(-1)) + ", but MPI rank " + std::to_string(rank) +
                                  " is task " + type + ":" + std::to_string(id) +
                                  " (ranks go chief, workers, ps). Leave TF_CONFIG's \"task\" out under mpiexec.");
  r.task_type = type;
  r.task_id = id;
  return r;
}

DEVTENSOR_MPI_DEFINITION ClosureWrites::ClosureWrites(int num_ps)
    : per_ps(static_cast<std::size_t>(num_ps)), counts(static_cast<std::size_t>(num_ps), 0) {
  for (auto& w : per_ps)
    w.put<std::uint64_t>(0)
        .put(static_cast<std::uint8_t>(ps_wire::RequestKind::write))
        .put<std::uint64_t>(0)
        .put<std::uint32_t>(0);
}

DEVTENSOR_MPI_DEFINITION ps_wire::Reader State::request_message(int ps, std::string_view what,
                                                                ps_wire::Writer message) {
  std::lock_guard lock(request_mutex_);
  if (failed_ps_.contains(ps)) throw unavailable(ps, what);
  const std::uint64_t sequence = ++sequence_;
  message.patch<std::uint64_t>(0, sequence);
  const auto deadline = ps_wire::after(options.timeout_seconds);
  for (bool sent = false;;) {
    std::optional<ps_wire::Message> reply;
    try {  // MPI may refuse to talk to a dead process (MPI_ERRORS_RETURN): that is no answer
      if (!std::exchange(sent, true)) channel.send(roles.ps_rank(ps), ps_wire::kRequest, std::move(message));
      reply = channel.receive(roles.ps_rank(ps), ps_wire::kReply, deadline);
    } catch (const InternalError&) {
    }
    if (!reply) {
      failed_ps_.insert(ps);
      throw unavailable(ps, what);
    }
    ps_wire::Reader r(std::move(*reply), channel);
    if (r.get<std::uint64_t>() != sequence) continue;  // the late answer to a request given up on
    ps_wire::get_status(r);
    return r;
  }
}

DEVTENSOR_MPI_DEFINITION void State::begin_closure() {
  ++generation_;
  std::vector<std::vector<std::shared_ptr<const RemoteSlot>>> wanted(static_cast<std::size_t>(roles.num_ps));
  {
    std::lock_guard lock(variables_mutex_);
    for (auto id : used_)
      if (const auto it = variables_.find(id); it != variables_.end())
        if (auto slot = it->second.lock()) wanted[static_cast<std::size_t>(slot->ps())].push_back(std::move(slot));
  }
  for (int ps = 0; ps < roles.num_ps; ++ps) fetch(ps, wanted[static_cast<std::size_t>(ps)]);
}

DEVTENSOR_MPI_DEFINITION void State::ensure_fresh(const RemoteSlot& slot) {
  if (slot.fresh_in == generation_) return;
  fetch(slot.ps(), {std::shared_ptr<const RemoteSlot>(std::shared_ptr<const RemoteSlot>(), &slot)});
  std::lock_guard lock(variables_mutex_);
  used_.insert(slot.id());
}

DEVTENSOR_MPI_DEFINITION void State::commit(std::uint64_t closure, ClosureWrites& writes) {
  for (int ps = 0; ps < roles.num_ps; ++ps) {
    const auto i = static_cast<std::size_t>(ps);
    if (writes.counts[i] == 0) continue;
    writes.per_ps[i].patch(ClosureWrites::kClosureAt, closure);
    writes.per_ps[i].patch(ClosureWrites::kCountAt, writes.counts[i]);
    request_message(ps, "write", std::move(writes.per_ps[i]));
  }
}

DEVTENSOR_MPI_DEFINITION ClosureWrites& State::writes_for(std::optional<ClosureWrites>& now, std::string_view what) {
  if (auto* writes = current_closure_writes()) return *writes;
  if (!chief())
    throw FailedPreconditionError(std::string(what) +
                                  " on a parameter-server variable outside a scheduled function: "
                                  "on a worker, variables are written by the functions the coordinator schedules");
  return now.emplace(roles.num_ps);
}

DEVTENSOR_MPI_DEFINITION void State::fetch(int ps, const std::vector<std::shared_ptr<const RemoteSlot>>& slots) {
  if (slots.empty()) return;
  auto r = request(ps, ps_wire::RequestKind::read, "read", [&](ps_wire::Writer& w) {
    w.put(static_cast<std::uint32_t>(slots.size()));
    for (const auto& slot : slots) w.put(slot->id());
  });
  (void)r.get<std::uint32_t>();
  for (const auto& slot : slots) {
    (void)r.get<std::uint64_t>();
    slot->refresh(r.get_tensor());
    slot->fresh_in = generation_;
  }
}

DEVTENSOR_MPI_DEFINITION UnavailableError State::unavailable(int ps, std::string_view what) const {
  return UnavailableError("ParameterServerFailureError: " + ps_name(ps) + " did not answer a " + std::string(what) +
                          " request within " + std::to_string(options.timeout_seconds) +
                          " s; it has probably failed, and the variables it held are lost. Restart the job (from a "
                          "checkpoint) or raise ParameterServerStrategyOptions::timeout_seconds if it is only slow.");
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace ps_detail
}  // namespace devtensor::distribute
