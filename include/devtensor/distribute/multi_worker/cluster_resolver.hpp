#pragma once
/// @file cluster_resolver.hpp
/// @brief TF_CONFIG and the cluster it describes: ClusterSpec,
/// TFConfigClusterResolver, MpiClusterResolver, and multi_worker_util's roles and validation.
///
///     // TF_CONFIG='{"cluster": {"worker": ["hostA:2222", "hostB:2222"]}, "task": {"type": "worker", "index": 1}}'
///     dt::distribute::cluster_resolver::TFConfigClusterResolver resolver;
///     resolver.task_type();   // "worker"
///     resolver.task_id();     // 1
///     dt::distribute::multi_worker_util::id_in_cluster(resolver.cluster_spec(), "worker", 1);   // 1
///
/// Part of the devtensor::cluster_resolver component: it parses JSON with nlohmann_json, which
/// the core target does not need. Nothing here talks to other processes.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/context.hpp"

#if DEVTENSOR_MPI_DEFINITIONS  // (a program linking devtensor::mpi parses none of nlohmann_json)
#include <nlohmann/json.hpp>
#endif

namespace devtensor::distribute {

/// A cluster: job name → task index → "host:port" (tf.train.ClusterSpec). Task indices may be
/// sparse ({"worker": {"1": "hostB:2222"}}); jobs are kept sorted by name, as TensorFlow does.
class ClusterSpec {
 public:
  using Tasks = std::map<int, std::string>;

  ClusterSpec() = default;
  /// Jobs with dense task lists. @throws InvalidArgumentError for an empty job name.
  explicit ClusterSpec(const std::map<std::string, std::vector<std::string>>& jobs) {
    for (const auto& [job, addresses] : jobs) {
      require_job_name(job);
      auto& tasks = jobs_[job];
      for (std::size_t i = 0; i < addresses.size(); ++i) tasks[static_cast<int>(i)] = addresses[i];
    }
  }
  /// Jobs with explicit task indices. @throws InvalidArgumentError for an empty job name or a
  /// negative index.
  [[nodiscard]] static ClusterSpec sparse(std::map<std::string, Tasks> jobs) {
    ClusterSpec spec;
    for (const auto& [job, tasks] : jobs) {
      require_job_name(job);
      for (const auto& [index, address] : tasks)
        if (index < 0)
          throw InvalidArgumentError("ClusterSpec: job '" + job + "' has a negative task index " +
                                     std::to_string(index));
    }
    spec.jobs_ = std::move(jobs);
    return spec;
  }

  /// From TF_CONFIG's "cluster" value: an object of job → list of addresses or {index: address}.
  /// @throws InvalidArgumentError with TensorFlow's key phrase for anything else.
  static ClusterSpec from_json(const nlohmann::json& cluster);

  [[nodiscard]] bool empty() const noexcept { return jobs_.empty(); }
  /// Job names, sorted.
  [[nodiscard]] std::vector<std::string> jobs() const {
    std::vector<std::string> out;
    for (const auto& [job, tasks] : jobs_) out.push_back(job);
    return out;
  }
  [[nodiscard]] bool has_job(std::string_view job) const { return jobs_.find(std::string(job)) != jobs_.end(); }
  /// The number of tasks of `job` (0 when the job is absent).
  [[nodiscard]] int num_tasks(std::string_view job) const {
    auto it = jobs_.find(std::string(job));
    return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
  }
  [[nodiscard]] std::vector<int> task_indices(std::string_view job) const {
    std::vector<int> out;
    if (auto it = jobs_.find(std::string(job)); it != jobs_.end())
      for (const auto& [index, address] : it->second) out.push_back(index);
    return out;
  }
  /// @throws InvalidArgumentError when the cluster has no such task.
  [[nodiscard]] const std::string& task_address(std::string_view job, int index) const {
    auto it = jobs_.find(std::string(job));
    if (it != jobs_.end())
      if (auto task = it->second.find(index); task != it->second.end()) return task->second;
    throw InvalidArgumentError("No task with index " + std::to_string(index) + " in job '" + std::string(job) +
                               "' of cluster_spec " + to_string());
  }
  [[nodiscard]] const std::map<std::string, Tasks>& as_map() const noexcept { return jobs_; }

  /// Python's repr of as_dict(): {'worker': ['hostA:2222', 'hostB:2222']} ({index: address} for
  /// sparse jobs), as TensorFlow's logs and errors print a cluster.
  [[nodiscard]] std::string to_string() const {
    std::string s = "{";
    bool first_job = true;
    for (const auto& [job, tasks] : jobs_) {
      s += (first_job ? "'" : ", '") + job + "': ";
      first_job = false;
      const bool dense =
          tasks.empty() || (tasks.begin()->first == 0 && tasks.rbegin()->first + 1 == static_cast<int>(tasks.size()));
      s += dense ? "[" : "{";
      bool first = true;
      for (const auto& [index, address] : tasks) {
        s += first ? "" : ", ";
        first = false;
        if (!dense) s += std::to_string(index) + ": ";
        s += "'" + address + "'";
      }
      s += dense ? "]" : "}";
    }
    return s + "}";
  }
  /// TF_CONFIG's "cluster" object for this spec.
  [[nodiscard]] nlohmann::json to_json() const;

  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;

  /// "host:port" from a JSON value (a string). @throws InvalidArgumentError otherwise.
  static std::string address_of(const std::string& job, const nlohmann::json& value);
  /// A decimal task index. @throws InvalidArgumentError naming `what` otherwise.
  static int parse_index(std::string_view text, const std::string& what) {
    int value = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end)
      throw InvalidArgumentError("TF_CONFIG: the " + what + " must be an integer, got '" + std::string(text) + "'");
    return value;
  }

 private:
  std::map<std::string, Tasks> jobs_;

  static void require_job_name(const std::string& job) {
    if (job.empty()) throw InvalidArgumentError("ClusterSpec: a job name is empty");
  }
};

/// Roles and ranks of the tasks of a cluster (tensorflow/python/distribute/multi_worker_util.py).
namespace multi_worker_util {

inline constexpr std::string_view kAllowedTaskTypes = "('chief', 'worker', 'evaluator', 'ps', None)";

[[nodiscard]] inline bool is_allowed_task_type(std::string_view type) {
  return type == "chief" || type == "worker" || type == "evaluator" || type == "ps";
}
/// Python's repr of an optional task type: 'worker' or None.
[[nodiscard]] inline std::string repr(const std::optional<std::string>& task_type) {
  return task_type ? "'" + *task_type + "'" : "None";
}

/// Every rule of TensorFlow's _validate_cluster_spec. @throws InvalidArgumentError.
inline void validate_cluster_spec(const ClusterSpec& cluster, const std::optional<std::string>& task_type,
                                  std::optional<int> task_id) {
  for (const auto& job : cluster.jobs())
    if (!is_allowed_task_type(job))
      throw InvalidArgumentError("Disallowed task type found in cluster spec. Allowed types are " +
                                 std::string(kAllowedTaskTypes) + " and the cluster spec is " + cluster.to_string() +
                                 ".");
  if (task_type && !is_allowed_task_type(*task_type))
    throw InvalidArgumentError("Unrecognized task_type: " + *task_type +
                               ", valid task types are: " + std::string(kAllowedTaskTypes));
  if (task_type && !cluster.has_job(*task_type) && *task_type != "evaluator")
    throw InvalidArgumentError("`task_type` " + repr(task_type) + " not found in cluster_spec.");
  if (cluster.num_tasks("chief") > 1) throw InvalidArgumentError("There must be at most one 'chief' job.");
  if (cluster.num_tasks("evaluator") > 1) throw InvalidArgumentError("There must be at most one 'evaluator' job.");
  if (task_id && *task_id < 0)
    throw InvalidArgumentError("The `task_id` " + std::to_string(*task_id) + " must be non-negative.");
  if (task_type && task_id && cluster.has_job(*task_type)) {
    const auto indices = cluster.task_indices(*task_type);
    if (std::find(indices.begin(), indices.end(), *task_id) == indices.end())
      throw InvalidArgumentError("The `task_id` " + std::to_string(*task_id) + " exceeds the maximum id of " +
                                 *task_type + ".");
  }
}

/// The chief task; an evaluator is its own chief; without a chief job, worker 0.
[[nodiscard]] inline bool is_chief(const ClusterSpec& cluster, const std::optional<std::string>& task_type,
                                   std::optional<int> task_id) {
  validate_cluster_spec(cluster, task_type, task_id);
  if (task_type == "chief" || task_type == "evaluator") return true;
  return !cluster.has_job("chief") && task_type == "worker" && task_id.value_or(0) == 0;
}

/// The number of workers (chief included) that train together; 1 for an evaluator's own group.
/// @throws InvalidArgumentError for "ps" and invalid clusters.
[[nodiscard]] inline int worker_count(const ClusterSpec& cluster, const std::optional<std::string>& task_type) {
  validate_cluster_spec(cluster, task_type, 0);
  if (task_type != "chief" && task_type != "worker" && task_type != "evaluator")
    throw InvalidArgumentError("Unexpected `task_type` " + repr(task_type));
  if (task_type == "evaluator") return cluster.num_tasks("evaluator");
  return cluster.num_tasks("chief") + cluster.num_tasks("worker");
}

/// The global worker rank: chief 0, worker i → i + #chief, evaluator its index.
/// @throws InvalidArgumentError for "ps" and invalid clusters.
[[nodiscard]] inline int id_in_cluster(const ClusterSpec& cluster, const std::optional<std::string>& task_type,
                                       int task_id) {
  validate_cluster_spec(cluster, task_type, task_id);
  if (task_type == "chief") return 0;
  if (task_type == "worker") return task_id + cluster.num_tasks("chief");
  if (task_type == "evaluator") return task_id;
  throw InvalidArgumentError("There is no id for task_type " + repr(task_type));
}

/// "/job:chief/replica:0/task:0" with a chief, else "/job:worker/replica:0/task:0"; "" for an
/// evaluator or an empty cluster.
[[nodiscard]] inline std::string collective_leader(const ClusterSpec& cluster,
                                                   const std::optional<std::string>& task_type,
                                                   std::optional<int> task_id) {
  if (cluster.empty()) return "";
  validate_cluster_spec(cluster, task_type, task_id);
  if (task_type == "evaluator") return "";
  return cluster.has_job("chief") ? "/job:chief/replica:0/task:0" : "/job:worker/replica:0/task:0";
}
/// The coordination service's leader: the same rule as collective_leader.
[[nodiscard]] inline std::string coordination_leader(const ClusterSpec& cluster,
                                                     const std::optional<std::string>& task_type,
                                                     std::optional<int> task_id) {
  return collective_leader(cluster, task_type, task_id);
}

}  // namespace multi_worker_util

namespace cluster_resolver {

/// What a resolver reports (TensorFlow's ClusterResolver).
struct ClusterDescription {
  ClusterSpec cluster_spec;
  std::optional<std::string> task_type;
  std::optional<int> task_id;
  std::optional<std::string> rpc_layer;
};

/// Overrides for a TFConfigClusterResolver; unset fields come from TF_CONFIG.
struct TFConfigOverrides {
  std::optional<std::string> task_type = std::nullopt;
  std::optional<int> task_id = std::nullopt;
  std::optional<std::string> rpc_layer = std::nullopt;
  /// The JSON to read instead of the TF_CONFIG environment variable.
  std::optional<std::string> tf_config = std::nullopt;
};

/// Reads the cluster from the TF_CONFIG environment variable. The variable is read
/// and validated once, when the resolver is built; a missing variable reads as {}.
class TFConfigClusterResolver {
 public:
  /// @throws InvalidArgumentError naming TF_CONFIG for invalid JSON or a malformed value.
  explicit TFConfigClusterResolver(TFConfigOverrides overrides = {});

  [[nodiscard]] const std::optional<std::string>& task_type() const noexcept { return task_type_; }
  [[nodiscard]] const std::optional<int>& task_id() const noexcept { return task_id_; }
  [[nodiscard]] const std::optional<std::string>& rpc_layer() const noexcept { return rpc_layer_; }
  [[nodiscard]] const std::optional<std::string>& environment() const noexcept { return environment_; }
  void set_task_type(std::optional<std::string> type) { task_type_ = std::move(type); }
  void set_task_id(std::optional<int> id) { task_id_ = id; }
  void set_rpc_layer(std::optional<std::string> layer) { rpc_layer_ = std::move(layer); }

  [[nodiscard]] const ClusterSpec& cluster_spec() const noexcept { return cluster_spec_; }

  /// The session master: TF_CONFIG's session_master; "" for an empty or one-task cluster; else
  /// the address of the (given or own) task, with "<rpc_layer>://" when a layer is known.
  /// @throws InvalidArgumentError when the task is not in the cluster.
  [[nodiscard]] std::string master(std::optional<std::string> task_type = std::nullopt,
                                   std::optional<int> task_id = std::nullopt,
                                   std::optional<std::string> rpc_layer = std::nullopt) const {
    if (session_master_) return *session_master_;
    const auto jobs = cluster_spec_.jobs();
    if (jobs.empty() || (jobs.size() == 1 && cluster_spec_.num_tasks(jobs[0]) == 1)) return "";
    const auto type = task_type ? task_type : task_type_;
    const auto id = task_id ? task_id : task_id_;
    if (!type || !id)
      throw InvalidArgumentError(
          "master(): the task is unknown; set TF_CONFIG's \"task\" or pass task_type and task_id");
    const std::string& address = cluster_spec_.task_address(*type, *id);
    const auto layer = rpc_layer ? rpc_layer : rpc_layer_;
    return layer && !layer->empty() ? *layer + "://" + address : address;
  }

  /// The number of GPUs this task can use (the local logical GPUs).
  [[nodiscard]] int num_accelerators() const {
    int gpus = 0;
    for (const auto& d : device_set("ClusterResolver.num_accelerators()")) gpus += d.is_gpu ? 1 : 0;
    return gpus;
  }

  [[nodiscard]] ClusterDescription describe() const { return {cluster_spec_, task_type_, task_id_, rpc_layer_}; }

 private:
  ClusterSpec cluster_spec_;
  std::optional<std::string> task_type_;
  std::optional<int> task_id_;
  std::optional<std::string> rpc_layer_;
  std::optional<std::string> session_master_;
  std::optional<std::string> environment_;

  /// A string, or a number in its decimal form (TensorFlow converts with str()).
  static std::string scalar_string(const nlohmann::json& value, std::string_view what);
};

/// What an MPI launcher (mpirun / mpiexec) tells each process, read from its environment:
/// Open MPI's OMPI_COMM_WORLD_*, MPICH's PMI_* / MPI_LOCALRANKID. Empty outside an MPI launch.
struct MpiLaunch {
  int rank = 0;
  int size = 1;
  int local_rank = 0;

  /// The launch this process is part of, if any. @throws InvalidArgumentError for malformed values.
  static std::optional<MpiLaunch> from_environment() {
    auto read = [](std::initializer_list<const char*> names) -> std::optional<int> {
      for (const char* name : names)
        if (const char* value = std::getenv(name); value && *value)
          return ClusterSpec::parse_index(value, std::string("MPI launch variable ") + name);
      return std::nullopt;
    };
    const auto rank = read({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
    const auto size = read({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
    if (!rank || !size) return std::nullopt;
    return MpiLaunch{*rank, *size, read({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}).value_or(0)};
  }
};

/// A cluster of `size` workers, this process being worker `rank`: what `mpirun -n <size> ./app`
/// describes without TF_CONFIG. Addresses are "mpi:<rank>" (MPI, not an address, connects them).
class MpiClusterResolver {
 public:
  explicit MpiClusterResolver(MpiLaunch launch) : launch_(launch) {
    if (launch.size < 1 || launch.rank < 0 || launch.rank >= launch.size)
      throw InvalidArgumentError("MpiClusterResolver: rank " + std::to_string(launch.rank) + " of " +
                                 std::to_string(launch.size) + " processes is not a valid MPI launch");
    std::vector<std::string> workers;
    for (int r = 0; r < launch.size; ++r) workers.push_back("mpi:" + std::to_string(r));
    cluster_spec_ = ClusterSpec({{"worker", workers}});
  }
  [[nodiscard]] const ClusterSpec& cluster_spec() const noexcept { return cluster_spec_; }
  [[nodiscard]] std::optional<std::string> task_type() const { return "worker"; }
  [[nodiscard]] std::optional<int> task_id() const { return launch_.rank; }
  [[nodiscard]] std::optional<std::string> rpc_layer() const { return "mpi"; }
  [[nodiscard]] const MpiLaunch& launch() const noexcept { return launch_; }
  [[nodiscard]] ClusterDescription describe() const { return {cluster_spec_, task_type(), task_id(), rpc_layer()}; }

 private:
  MpiLaunch launch_;
  ClusterSpec cluster_spec_;
};

/// With both TF_CONFIG and an MPI launch, they must describe the same process: its id_in_cluster
/// is its MPI rank and the worker count the MPI size.
/// @throws FailedPreconditionError saying how to launch otherwise.
inline void require_consistent_with_mpi(const ClusterDescription& tf_config, const MpiLaunch& mpi) {
  if (tf_config.cluster_spec.empty() || !tf_config.task_type || !tf_config.task_id) return;
  const int workers = multi_worker_util::worker_count(tf_config.cluster_spec, tf_config.task_type);
  const int id = multi_worker_util::id_in_cluster(tf_config.cluster_spec, tf_config.task_type, *tf_config.task_id);
  if (workers != mpi.size || id != mpi.rank)
    throw FailedPreconditionError(
        "TF_CONFIG describes task " + *tf_config.task_type + ":" + std::to_string(*tf_config.task_id) + " (worker " +
        std::to_string(id) + " of " + std::to_string(workers) + "), but MPI launched this process as rank " +
        std::to_string(mpi.rank) + " of " + std::to_string(mpi.size) +
        ". Launch one process per worker with `mpiexec -n " + std::to_string(workers) +
        " ./app` and give rank r the TF_CONFIG whose task has id_in_cluster r (chief first), or "
        "unset TF_CONFIG and let the MPI launch define the cluster.");
}

}  // namespace cluster_resolver

// --- definitions: the JSON parts (Note [The mpi component's compiled part]: a program linking
// devtensor::mpi gets them from its object and parses no nlohmann_json) ---
#if DEVTENSOR_MPI_DEFINITIONS

DEVTENSOR_MPI_DEFINITION ClusterSpec ClusterSpec::from_json(const nlohmann::json& cluster) {
  if (cluster.is_null()) return {};
  if (!cluster.is_object())
    throw InvalidArgumentError(
        "`cluster_spec' should be dict or a `tf.train.ClusterSpec` or a `tf.train.ClusterDef` "
        "object, got the JSON " +
        cluster.dump());
  std::map<std::string, Tasks> jobs;
  for (const auto& [job, tasks] : cluster.items()) {
    auto& out = jobs[job];
    if (tasks.is_array()) {
      for (std::size_t i = 0; i < tasks.size(); ++i) out[static_cast<int>(i)] = address_of(job, tasks[i]);
    } else if (tasks.is_object()) {
      for (const auto& [index, address] : tasks.items())
        out[parse_index(index, "task index of job '" + job + "'")] = address_of(job, address);
    } else {
      throw InvalidArgumentError("`cluster_spec' should be dict or a `tf.train.ClusterSpec`: job '" + job +
                                 "' must map to a list of \"host:port\" strings or to an {index: \"host:port\"} "
                                 "object, got " +
                                 tasks.dump());
    }
  }
  return sparse(std::move(jobs));
}

DEVTENSOR_MPI_DEFINITION nlohmann::json ClusterSpec::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [job, tasks] : jobs_) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [index, address] : tasks) list.push_back(address);
    out[job] = std::move(list);
  }
  return out;
}

DEVTENSOR_MPI_DEFINITION std::string ClusterSpec::address_of(const std::string& job, const nlohmann::json& value) {
  if (!value.is_string())
    throw InvalidArgumentError("`cluster_spec' should be dict or a `tf.train.ClusterSpec`: the addresses of job '" +
                               job + "' must be \"host:port\" strings, got " + value.dump());
  return value.get<std::string>();
}

DEVTENSOR_MPI_DEFINITION cluster_resolver::TFConfigClusterResolver::TFConfigClusterResolver(
    TFConfigOverrides overrides) {
  std::string text = "{}";
  if (overrides.tf_config) {
    text = *overrides.tf_config;
  } else if (const char* env = std::getenv("TF_CONFIG"); env && *env) {
    text = env;
  }
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidArgumentError("TF_CONFIG is not valid JSON (" + std::string(e.what()) +
                               "). Set it to an object such as {\"cluster\": {\"worker\": [\"hostA:2222\", "
                               "\"hostB:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}.");
  }
  if (!config.is_object()) throw InvalidArgumentError("TF_CONFIG must hold a JSON object, got " + config.dump());
  if (config.contains("cluster")) cluster_spec_ = ClusterSpec::from_json(config["cluster"]);
  if (config.contains("task")) {
    const auto& task = config["task"];
    if (!task.is_object()) throw InvalidArgumentError("TF_CONFIG: \"task\" must be an object, got " + task.dump());
    if (task.contains("type")) task_type_ = scalar_string(task["type"], "task type");
    if (task.contains("index"))
      task_id_ = ClusterSpec::parse_index(scalar_string(task["index"], "task index"), "task index");
  }
  if (config.contains("rpc_layer")) rpc_layer_ = scalar_string(config["rpc_layer"], "rpc_layer");
  if (config.contains("session_master")) session_master_ = scalar_string(config["session_master"], "session_master");
  if (config.contains("environment")) environment_ = scalar_string(config["environment"], "environment");
  if (overrides.task_type) task_type_ = overrides.task_type;
  if (overrides.task_id) task_id_ = overrides.task_id;
  if (overrides.rpc_layer) rpc_layer_ = overrides.rpc_layer;
}

DEVTENSOR_MPI_DEFINITION std::string cluster_resolver::TFConfigClusterResolver::scalar_string(
    const nlohmann::json& value, std::string_view what) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  throw InvalidArgumentError("TF_CONFIG: the " + std::string(what) + " must be a string or an integer, got " +
                             value.dump());
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute
