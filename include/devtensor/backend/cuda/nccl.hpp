#pragma once
/// @file nccl.hpp
/// @brief Checked NCCL calls, a clique of communicators over distinct GPUs of this process
/// (ncclCommInitAll), and the all-reduce kernel NcclAllReduce runs (registered by the translation
/// unit that includes this header: src/devtensor_nccl.cpp, which the devtensor::nccl component
/// compiles once per build tree). Needs that component.
///
/// NCCL refuses two ranks on one GPU, so a clique takes distinct CUDA ordinals; logical GPUs that
/// share a physical GPU use a copy-based all-reduce instead.
///
/// Across processes (MultiWorkerMirroredStrategy), NcclProcessComms holds this process's ranks of
/// a communicator every worker joins with the chief's unique id. Those communicators are
/// non-blocking (ncclConfig_t::blocking = 0), so a worker that never arrives can be given up on:
/// with a timeout, a call that has not completed in time aborts them (ncclCommAbort) and throws.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/physical.hpp"

namespace devtensor::backend::cuda {

/// Throws when an NCCL call failed: "NCCL call <what> failed: <ncclGetErrorString> (<last error>)".
inline void check_nccl(ncclResult_t result, std::string_view what) {
  if (result == ncclSuccess) return;
  std::string message = "NCCL call " + std::string(what) + " failed: " + ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(nullptr); last && *last) message += std::string(" (") + last + ")";
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: throw InvalidArgumentError(message);
    case ncclSystemError:
    case ncclUnhandledCudaError: throw InternalError(message);
    default: throw InternalError(message);
  }
}

}  // namespace devtensor::backend::cuda

#define DEVTENSOR_NCCL_CHECK(call) ::devtensor::backend::cuda::check_nccl((call), #call)

namespace devtensor::backend::cuda {

/// One communicator per GPU of a single-process clique. Move-only; destroys its communicators.
class NcclClique {
 public:
  /// @throws InvalidArgumentError for an empty list or a GPU named twice.
  explicit NcclClique(std::vector<int> ordinals) : ordinals_(std::move(ordinals)) {
    if (ordinals_.empty()) throw InvalidArgumentError("An NCCL clique needs at least one GPU");
    for (std::size_t i = 0; i < ordinals_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (ordinals_[i] == ordinals_[j])
          throw InvalidArgumentError("GPU " + std::to_string(ordinals_[i]) +
                                     " appears twice in an NCCL clique; NCCL needs distinct GPUs (use "
                                     "HierarchicalCopyAllReduce or ReductionToOneDevice for logical GPUs "
                                     "that share a physical one)");
    comms_.resize(ordinals_.size(), nullptr);
    DEVTENSOR_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(comms_.size()), ordinals_.data()));
  }
  NcclClique(const NcclClique&) = delete;
  NcclClique& operator=(const NcclClique&) = delete;
  NcclClique(NcclClique&& other) noexcept : ordinals_(std::move(other.ordinals_)), comms_(std::move(other.comms_)) {}
  NcclClique& operator=(NcclClique&&) = delete;
  ~NcclClique() {
    for (ncclComm_t comm : comms_)
      if (comm)
        if (ncclResult_t r = ncclCommDestroy(comm); r != ncclSuccess)
          log(LogSeverity::error, std::string("ncclCommDestroy failed: ") + ncclGetErrorString(r));
  }

  [[nodiscard]] std::size_t size() const noexcept { return comms_.size(); }
  [[nodiscard]] const std::vector<int>& ordinals() const noexcept { return ordinals_; }

  /// In-place or out-of-place sum (or other op) of `count` elements across the clique: rank i
  /// reads send[i] and writes recv[i] on streams[i]. One grouped launch.
  void all_reduce(std::span<const void* const> send, std::span<void* const> recv, std::size_t count,
                  ncclDataType_t type, ncclRedOp_t op, std::span<const cudaStream_t> streams) const {
    if (send.size() != size() || recv.size() != size() || streams.size() != size())
      throw InvalidArgumentError("all_reduce needs one buffer pair and one stream per GPU of the clique (" +
                                 std::to_string(size()) + ")");
    DEVTENSOR_NCCL_CHECK(ncclGroupStart());
    ncclResult_t result = ncclSuccess;
    for (std::size_t i = 0; i < size() && result == ncclSuccess; ++i)
      result = ncclAllReduce(send[i], recv[i], count, type, op, comms_[i], streams[i]);
    const ncclResult_t end = ncclGroupEnd();
    check_nccl(result, "ncclAllReduce");
    check_nccl(end, "ncclGroupEnd");
  }

 private:
  std::vector<int> ordinals_;
  std::vector<ncclComm_t> comms_;
};

/// NCCL's type for a devtensor dtype name. @throws InvalidArgumentError for bool.
inline ncclDataType_t nccl_type(std::string_view dtype) {
  if (dtype == "DT_FLOAT") return ncclFloat32;
  if (dtype == "DT_DOUBLE") return ncclFloat64;
  if (dtype == "DT_INT32") return ncclInt32;
  if (dtype == "DT_INT64") return ncclInt64;
  if (dtype == "DT_HALF") return ncclFloat16;
  if (dtype == "DT_BFLOAT16") return ncclBfloat16;
  throw InvalidArgumentError("NCCL all-reduce does not support " + std::string(dtype) +
                             "; reduce it with ReductionToOneDevice");
}

/// The registered kernel: one clique per set of GPUs, created on first use and kept for the
/// process (communicators are expensive to build, and destroying them while the CUDA runtime
/// unloads at exit is unsafe, so the cache is deliberately never destroyed). A clique's calls
/// are serialised: NCCL communicators are not thread-safe.
inline void nccl_all_reduce_sum(std::string_view dtype, std::size_t count, std::span<const void* const> send,
                                std::span<void* const> recv, std::span<const int> ordinals,
                                std::span<void* const> streams) {
  struct Entry {
    std::mutex mutex;
    NcclClique clique;
    explicit Entry(std::vector<int> gpus) : clique(std::move(gpus)) {}
  };
  static auto* const cache = new std::map<std::vector<int>, std::unique_ptr<Entry>>();
  static std::mutex cache_mutex;
  const ncclDataType_t type = nccl_type(dtype);
  std::vector<int> key(ordinals.begin(), ordinals.end());
  Entry* entry = nullptr;
  {
    std::lock_guard lock(cache_mutex);
    auto found = cache->find(key);
    if (found == cache->end())  // Entry throws for a GPU named twice: nothing is cached then
      found = cache->emplace(key, std::make_unique<Entry>(key)).first;
    entry = found->second.get();
  }
  std::vector<cudaStream_t> cuda_streams;
  for (void* s : streams) cuda_streams.push_back(static_cast<cudaStream_t>(s));
  std::lock_guard lock(entry->mutex);
  entry->clique.all_reduce(send, recv, count, type, ncclSum, cuda_streams);
}

/// This process's GPUs in a communicator that spans processes. Built collectively: every worker
/// constructs its part with the same unique id. Never destroyed while the process runs (see
/// nccl_all_reduce_sum); aborted, and unusable from then on, after a call that timed out.
class NcclProcessComms {
 public:
  /// @throws InvalidArgumentError for ranks outside the clique or a GPU named twice;
  ///         DeadlineExceededError when the other workers do not join in time.
  NcclProcessComms(const ::devtensor::GpuCliqueAcrossProcesses& clique, std::vector<int> ordinals)
      : ordinals_(std::move(ordinals)), clique_(clique) {
    const int n = static_cast<int>(ordinals_.size());
    if (n == 0 || clique.first_rank < 0 || clique.first_rank + n > clique.num_ranks)
      throw InvalidArgumentError("This process's GPUs would be ranks " + std::to_string(clique.first_rank) + ".." +
                                 std::to_string(clique.first_rank + n - 1) + " of an NCCL communicator of " +
                                 std::to_string(clique.num_ranks) + " ranks");
    for (std::size_t i = 0; i < ordinals_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (ordinals_[i] == ordinals_[j])
          throw InvalidArgumentError("GPU " + std::to_string(ordinals_[i]) +
                                     " appears twice among this worker's NCCL ranks");
    ncclUniqueId id;
    static_assert(sizeof(id.internal) == ::devtensor::GpuCliqueAcrossProcesses::unique_id_bytes);
    std::memcpy(id.internal, clique.unique_id.data(), sizeof(id.internal));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    comms_.assign(ordinals_.size(), nullptr);
    const auto deadline = deadline_after(clique.timeout_seconds);
    DEVTENSOR_NCCL_CHECK(ncclGroupStart());
    ncclResult_t result = ncclSuccess;
    for (std::size_t i = 0; i < ordinals_.size() && in_flight(result); ++i) {
      DeviceGuard guard(ordinals_[i]);  // a communicator belongs to the current device
      result =
          ncclCommInitRankConfig(&comms_[i], clique.num_ranks, id, clique.first_rank + static_cast<int>(i), &config);
    }
    const ncclResult_t end = ncclGroupEnd();
    if (!in_flight(result) || !in_flight(end)) {
      abort("");
      check_nccl(in_flight(result) ? end : result, "ncclCommInitRankConfig");
    }
    settle("the creation of the NCCL communicator", deadline);
  }
  NcclProcessComms(const NcclProcessComms&) = delete;
  NcclProcessComms& operator=(const NcclProcessComms&) = delete;

  /// Sums `count` elements across every worker's GPUs; this process's rank i reads send[i] and
  /// writes recv[i] on streams[i]. Without a timeout the call only queues the work (stream order);
  /// with one it waits for the streams, so a missing peer is noticed.
  void all_reduce(std::span<const void* const> send, std::span<void* const> recv, std::size_t count,
                  ncclDataType_t type, std::span<const cudaStream_t> streams, std::string_view what) {
    if (aborted_)
      throw FailedPreconditionError("NCCL all-reduce of " + std::string(what) +
                                    " cannot run: this worker's NCCL "
                                    "communicator was aborted after " +
                                    *aborted_ + ". Restart the workers.");
    if (send.size() != comms_.size() || recv.size() != comms_.size() || streams.size() != comms_.size())
      throw InvalidArgumentError(
          "An NCCL all-reduce across workers needs one buffer pair and one stream per local GPU (" +
          std::to_string(comms_.size()) + ")");
    const auto deadline = deadline_after(clique_.timeout_seconds);
    const std::string name = "the all-reduce of " + std::string(what);
    DEVTENSOR_NCCL_CHECK(ncclGroupStart());
    ncclResult_t result = ncclSuccess;
    for (std::size_t i = 0; i < comms_.size() && in_flight(result); ++i)
      result = ncclAllReduce(send[i], recv[i], count, type, ncclSum, comms_[i], streams[i]);
    const ncclResult_t end = ncclGroupEnd();
    if (!in_flight(result) || !in_flight(end)) {
      abort(name + " failed");
      check_nccl(in_flight(result) ? end : result, "ncclAllReduce");
    }
    settle(name, deadline);
    if (!deadline) return;
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      for (;;) {
        const cudaError_t status = cudaStreamQuery(streams[i]);
        if (status == cudaSuccess) break;
        if (status != cudaErrorNotReady) {
          (void)cudaGetLastError();
          abort(name + " failed");
          throw InternalError("The stream of GPU " + std::to_string(ordinals_[i]) + " failed during " + name + ": " +
                              cudaGetErrorString(status));
        }
        poll_errors(name);
        if (std::chrono::steady_clock::now() >= *deadline) timed_out(name);
        std::this_thread::yield();
      }
    }
  }

 private:
  std::vector<int> ordinals_;
  ::devtensor::GpuCliqueAcrossProcesses clique_;
  std::vector<ncclComm_t> comms_;
  std::optional<std::string> aborted_;

  using Deadline = std::optional<std::chrono::steady_clock::time_point>;
  static Deadline deadline_after(std::optional<double> seconds) {
    if (!seconds) return std::nullopt;
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*seconds));
  }
  static bool in_flight(ncclResult_t r) noexcept { return r == ncclSuccess || r == ncclInProgress; }

  /// Aborts every communicator (ncclCommAbort also frees it); later calls are refused.
  void abort(const std::string& reason) noexcept {
    for (ncclComm_t& comm : comms_)
      if (comm) {
        (void)ncclCommAbort(comm);
        comm = nullptr;
      }
    if (!aborted_) aborted_ = reason;
  }
  /// Throws (after aborting) when a communicator reports an asynchronous error; true when none is
  /// still in progress.
  bool poll_errors(const std::string& name) {
    bool settled = true;
    for (ncclComm_t comm : comms_) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t query = ncclCommGetAsyncError(comm, &state);
      if (query != ncclSuccess) state = query;
      if (state == ncclInProgress) {
        settled = false;
      } else if (state != ncclSuccess) {
        abort(name + " failed");
        check_nccl(state, "NCCL (" + name + ")");
      }
    }
    return settled;
  }
  /// Waits until no communicator has a call in progress (non-blocking NCCL calls finish queueing
  /// their work asynchronously), up to the deadline.
  void settle(const std::string& name, const Deadline& deadline) {
    while (!poll_errors(name)) {
      if (deadline && std::chrono::steady_clock::now() >= *deadline) timed_out(name);
      std::this_thread::yield();
    }
  }
  [[noreturn]] void timed_out(const std::string& name) {
    abort(name + " timed out");
    const int last = clique_.first_rank + static_cast<int>(ordinals_.size()) - 1;
    throw DeadlineExceededError(
        "NCCL: " + name + " did not complete within " + std::to_string(*clique_.timeout_seconds) +
        " s on this worker's GPU ranks " + std::to_string(clique_.first_rank) + ".." + std::to_string(last) + " of " +
        std::to_string(clique_.num_ranks) +
        "; the communicator was aborted. Every worker must make the same "
        "collective calls in the same order; raise CommunicationOptions timeout_seconds if a worker is only slow.");
  }
};

/// A new communicator id (ncclGetUniqueId), made by one worker and sent to the others.
inline void nccl_new_unique_id(std::span<std::byte, ::devtensor::GpuCliqueAcrossProcesses::unique_id_bytes> out) {
  ncclUniqueId id;
  DEVTENSOR_NCCL_CHECK(ncclGetUniqueId(&id));
  std::memcpy(out.data(), id.internal, out.size());
}

/// The registered cross-process kernel: one NcclProcessComms per (unique id, local GPUs), created
/// on first use and kept for the process, like the cliques above.
inline void nccl_all_reduce_sum_across_processes(const ::devtensor::GpuCliqueAcrossProcesses& clique,
                                                 std::string_view what, std::string_view dtype, std::size_t count,
                                                 std::span<const void* const> send, std::span<void* const> recv,
                                                 std::span<const int> ordinals, std::span<void* const> streams) {
  struct Entry {
    std::mutex mutex;
    std::unique_ptr<NcclProcessComms> comms;  // null until created, or after its creation failed
    std::optional<std::string> failed;
  };
  static auto* const cache = new std::map<std::string, std::unique_ptr<Entry>>();
  static std::mutex cache_mutex;
  const ncclDataType_t type = nccl_type(dtype);
  std::string key(reinterpret_cast<const char*>(clique.unique_id.data()), clique.unique_id.size());
  for (int o : ordinals) key += "/" + std::to_string(o);
  Entry* entry = nullptr;
  {
    std::lock_guard lock(cache_mutex);
    auto& slot = (*cache)[key];
    if (!slot) slot = std::make_unique<Entry>();
    entry = slot.get();
  }
  std::lock_guard lock(entry->mutex);
  if (entry->failed)
    throw FailedPreconditionError("NCCL all-reduce of " + std::string(what) +
                                  " cannot run: creating this worker's "
                                  "NCCL communicator failed earlier (" +
                                  *entry->failed + "). Restart the workers.");
  if (!entry->comms) {
    try {
      entry->comms = std::make_unique<NcclProcessComms>(clique, std::vector<int>(ordinals.begin(), ordinals.end()));
    } catch (const std::exception& e) {
      entry->failed = e.what();
      throw;
    }
  }
  std::vector<cudaStream_t> cuda_streams;
  for (void* s : streams) cuda_streams.push_back(static_cast<cudaStream_t>(s));
  entry->comms->all_reduce(send, recv, count, type, cuda_streams, what);
}

inline constexpr ::devtensor::GpuAllReduceKernel nccl_kernel{"NCCL", &nccl_all_reduce_sum, &nccl_new_unique_id,
                                                             &nccl_all_reduce_sum_across_processes};

/// Registers the NCCL kernel once per program, from whichever NCCL TU initialises first.
inline const bool nccl_kernel_registered = [] {
  ::devtensor::register_gpu_all_reduce_kernel(&nccl_kernel);
  return true;
}();

}  // namespace devtensor::backend::cuda
