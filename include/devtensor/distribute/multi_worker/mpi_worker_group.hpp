#pragma once
/// @file mpi_worker_group.hpp
/// @brief The processes of a multi-worker job, connected by MPI (the devtensor::mpi component):
/// all-reduce and broadcast of host buffers, with an optional deadline.
///
/// MPI is initialised on first use (MPI_Init_thread, MPI_THREAD_MULTIPLE requested, at least
/// MPI_THREAD_SERIALIZED required: collectives are issued one at a time under a mutex) and
/// finalised at exit when devtensor initialised it; a program that calls MPI_Init itself keeps
/// that job. Every worker group works on its own duplicate of MPI_COMM_WORLD.
///
/// Timeouts (CommunicationOptions::timeout_seconds): each collective is preceded by an arrival
/// message to every peer and runs as a non-blocking MPI collective polled against the deadline.
/// When it expires, DeadlineExceededError names the operation and the ranks that never arrived;
/// the group is then aborted (later collectives fail at once, as TensorFlow's collective
/// executor does after a timeout), and the abandoned request keeps its own buffer, so MPI can
/// still complete it if a late peer arrives. Without a timeout collectives block, and a worker
/// that dies is handled by the launcher: mpiexec ends the whole job when a rank is killed or
/// aborts (an uncaught exception), and a rank that calls exit() with a non-zero status calls
/// MPI_Abort on its way out (glibc's on_exit sees the status) rather than MPI_Finalize, which
/// would wait for peers stuck in a collective. A rank that exits 0 while its peers still expect
/// it in a collective is a program error that only timeout_seconds turns into an exception.

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::distribute {

namespace mpi_detail {

/// MPI_SUCCESS, or an InternalError naming the call and MPI's explanation.
inline void check(int code, std::string_view call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw InternalError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

/// MPI for this process: initialised once, finalised at exit if devtensor initialised it.
class Runtime {
 public:
  /// At exit: MPI_Finalize after a clean exit. After exit(status != 0) the peers may be blocked in
  /// a collective this worker will never join, and MPI_Finalize would wait for them for ever; so
  /// MPI_Abort instead, and the launcher ends the whole job with this status.
  static void finish(int status) noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (status != 0)
      MPI_Abort(MPI_COMM_WORLD, status);
    else
      MPI_Finalize();
  }
  static Runtime& get() {
    static Runtime runtime;
    return runtime;
  }
  [[nodiscard]] int thread_level() const noexcept { return thread_level_; }

 private:
  int thread_level_ = MPI_THREAD_SINGLE;
  Runtime() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Query_thread(&thread_level_);
    } else {
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_), "MPI_Init_thread");
#if defined(__GLIBC__)
      on_exit([](int status, void*) { finish(status); }, nullptr);
#else
      std::atexit([] { finish(0); });
#endif
    }
    if (thread_level_ < MPI_THREAD_SERIALIZED)
      throw FailedPreconditionError(
          "MPI was initialised with thread level " + std::to_string(thread_level_) +
          "; devtensor's multi-worker collectives need at least MPI_THREAD_SERIALIZED (replicas run on threads). Call "
          "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let devtensor initialise MPI.");
  }
};

[[nodiscard]] inline MPI_Datatype datatype(devtensor::DType dtype) {
  switch (dtype) {
    case devtensor::DType::DT_FLOAT: return MPI_FLOAT;
    case devtensor::DType::DT_DOUBLE: return MPI_DOUBLE;
    case devtensor::DType::DT_INT32: return MPI_INT32_T;
    case devtensor::DType::DT_INT64: return MPI_INT64_T;
    case devtensor::DType::DT_BOOL: break;
  }
  throw InvalidArgumentError("Collective all-reduce is not supported for bool tensors; cast them to int32 first");
}
[[nodiscard]] inline std::size_t element_size(devtensor::DType dtype) {
  switch (dtype) {
    case devtensor::DType::DT_FLOAT: return 4;
    case devtensor::DType::DT_DOUBLE: return 8;
    case devtensor::DType::DT_INT32: return 4;
    case devtensor::DType::DT_INT64: return 8;
    case devtensor::DType::DT_BOOL: return 1;
  }
  return 1;
}
[[nodiscard]] inline MPI_Op reduction_op(detail::CollectiveReduction reduction) {
  switch (reduction) {
    case detail::CollectiveReduction::sum: return MPI_SUM;
    case detail::CollectiveReduction::max: return MPI_MAX;
    case detail::CollectiveReduction::min: return MPI_MIN;
  }
  return MPI_SUM;
}

/// A collective that outlived its deadline: MPI still owns its requests and buffers.
struct Abandoned {
  std::vector<MPI_Request> requests;
  std::vector<std::byte> buffer;
  std::vector<int> tokens;
};

}  // namespace mpi_detail

/// The workers of a job as MPI ranks of MPI_COMM_WORLD (rank = id_in_cluster; 0 is the chief).
class MpiWorkerGroup final : public detail::WorkerGroup {
 public:
  /// @param timeout_seconds  none: collectives wait for ever (the launcher ends a job whose rank
  ///                         died); otherwise DeadlineExceededError after this long.
  /// @throws InvalidArgumentError for a non-positive timeout; InternalError when MPI fails.
  explicit MpiWorkerGroup(std::optional<double> timeout_seconds = std::nullopt) : timeout_(timeout_seconds) {
    if (timeout_ && !(*timeout_ > 0))
      throw InvalidArgumentError("timeout_seconds must be positive, got " + std::to_string(*timeout_));
    mpi_detail::Runtime::get();
    mpi_detail::check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
    MPI_Comm_rank(node_comm_, &local_rank_);
  }
  MpiWorkerGroup(const MpiWorkerGroup&) = delete;
  MpiWorkerGroup& operator=(const MpiWorkerGroup&) = delete;
  ~MpiWorkerGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // A late peer may still complete an abandoned collective; give it a moment, then leave the
    // communicator to MPI_Finalize rather than free it under a pending request.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    bool pending = false;
    for (auto& a : abandoned_) {
      int done = 0;
      while (!done && std::chrono::steady_clock::now() < until) {
        MPI_Testall(static_cast<int>(a.requests.size()), a.requests.data(), &done, MPI_STATUSES_IGNORE);
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      pending = pending || !done;
    }
    if (!pending) {
      MPI_Comm_free(&comm_);
      MPI_Comm_free(&node_comm_);
    }
  }

  [[nodiscard]] int num_workers() const override { return size_; }
  [[nodiscard]] int worker_index() const override { return rank_; }
  /// This worker's index among the workers on its host (MPI_COMM_TYPE_SHARED).
  [[nodiscard]] int local_rank() const noexcept { return local_rank_; }
  [[nodiscard]] std::optional<double> timeout_seconds() const noexcept { return timeout_; }
  /// The name of the host this worker runs on (MPI_Get_processor_name).
  [[nodiscard]] std::string host_name() const {
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = 0;
    mpi_detail::check(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
    return std::string(name, static_cast<std::size_t>(length));
  }

  using detail::WorkerGroup::all_reduce;
  void all_reduce(devtensor::DType dtype, const void* input, void* output, std::size_t count,
                  detail::CollectiveReduction reduction, std::string_view what) override {
    const MPI_Datatype type = mpi_detail::datatype(dtype);
    const MPI_Op op = mpi_detail::reduction_op(reduction);
    const std::size_t element = mpi_detail::element_size(dtype);
    const auto* in = static_cast<const std::byte*>(input);
    auto* out = static_cast<std::byte*>(output);
    for (std::size_t done = 0; done < count || (count == 0 && done == 0);) {  // int-sized pieces
      const std::size_t piece = std::min<std::size_t>(count - done, INT_MAX);
      const std::size_t at = done * element;
      run("all-reduce of ", what, in + at, out + at, piece * element, [&](void* buffer, MPI_Request* request) {
        return MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(piece), type, op, comm_, request);
      }, [&](const void* send, void* receive) {
        // Out of place when the caller allows it: MPI reads the input where it is, no copy first.
        return MPI_Allreduce(send == receive ? MPI_IN_PLACE : send, receive, static_cast<int>(piece), type, op, comm_);
      });
      done += piece;
      if (count == 0) break;
    }
  }

  void broadcast(void* data, std::size_t bytes, std::string_view what) override {
    auto* p = static_cast<std::byte*>(data);
    for (std::size_t done = 0; done < bytes || (bytes == 0 && done == 0);) {
      const std::size_t piece = std::min<std::size_t>(bytes - done, INT_MAX);
      run("broadcast of ", what, p + done, p + done, piece, [&](void* buffer, MPI_Request* request) {
        return MPI_Ibcast(buffer, static_cast<int>(piece), MPI_BYTE, 0, comm_, request);
      }, [&](const void*, void* buffer) { return MPI_Bcast(buffer, static_cast<int>(piece), MPI_BYTE, 0, comm_); });
      done += piece;
      if (bytes == 0) break;
    }
  }

  /// Waits until every worker calls it (MPI_Barrier, under the same deadline).
  void barrier(std::string_view what) override {
    run("", what, nullptr, nullptr, 0, [&](void*, MPI_Request* request) { return MPI_Ibarrier(comm_, request); },
        [&](const void*, void*) { return MPI_Barrier(comm_); });
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::optional<double> timeout_;
  std::mutex mutex_;  // one collective at a time (MPI_THREAD_SERIALIZED is enough)
  unsigned sequence_ = 0;
  std::optional<std::string> aborted_by_;
  std::vector<mpi_detail::Abandoned> abandoned_;
  std::vector<std::byte> spare_;  // private buffer of timed collectives, kept between calls

  /// One collective of `bytes` bytes from `input` to `output`: blocking without a timeout;
  /// otherwise an arrival message to every peer and the non-blocking form on a private copy,
  /// polled until done or the deadline. `kind` + `label` name it in errors (built only then: a
  /// collective's success path allocates nothing).
  template <class Start, class Blocking>
  void run(std::string_view kind, std::string_view label, const std::byte* input, std::byte* output, std::size_t bytes,
           Start start, Blocking blocking) {
    const auto name = [&] { return std::string(kind) + std::string(label); };
    std::lock_guard lock(mutex_);
    if (aborted_by_)
      throw FailedPreconditionError("Collective " + name() + " cannot run: this worker group was aborted after " +
                                    *aborted_by_ + " timed out. Restart the workers (every worker's collectives "
                                    "must complete in the same order).");
    if (size_ == 1) {
      if (bytes && input != output) std::memcpy(output, input, bytes);
      return;
    }
    if (!timeout_) {
      if (const int code = blocking(input, output); code != MPI_SUCCESS) mpi_detail::check(code, "MPI collective (" + name() + ")");
      return;
    }
    const int tag = static_cast<int>(sequence_++ % 32000u);
    mpi_detail::Abandoned op;
    op.buffer = std::move(spare_);  // the last completed collective's buffer: no fresh pages to fault in
    op.buffer.resize(bytes);
    if (bytes) std::memcpy(op.buffer.data(), input, bytes);
    op.tokens.assign(static_cast<std::size_t>(size_), -1);
    int& token = op.tokens[static_cast<std::size_t>(rank_)];  // what this worker sends; lives as long as op
    token = tag;
    std::vector<int> peers;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      peers.push_back(peer);
      MPI_Request send, receive;
      mpi_detail::check(MPI_Isend(&token, 1, MPI_INT, peer, tag, comm_, &send), "MPI_Isend");
      mpi_detail::check(MPI_Irecv(&op.tokens[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, tag, comm_, &receive), "MPI_Irecv");
      op.requests.push_back(send);
      op.requests.push_back(receive);
    }
    MPI_Request collective;
    if (const int code = start(op.buffer.empty() ? nullptr : op.buffer.data(), &collective); code != MPI_SUCCESS)
      mpi_detail::check(code, "MPI collective (" + name() + ")");
    op.requests.push_back(collective);

    const auto began = std::chrono::steady_clock::now();
    const auto deadline = began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*timeout_));
    // Poll as MPI's blocking calls do: a non-blocking collective only progresses inside MPI_Test
    // (no progress thread), so sleeping between tests would stretch every round of it.
    int done = 0;
    for (;;) {
      MPI_Testall(static_cast<int>(op.requests.size()), op.requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::yield();
    }
    if (done) {
      if (bytes) std::memcpy(output, op.buffer.data(), bytes);
      spare_ = std::move(op.buffer);
      return;
    }
    // Which peers never announced themselves: the token sends/receives alternate per peer.
    std::string missing;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      int received = 0;
      MPI_Test(&op.requests[2 * i + 1], &received, MPI_STATUS_IGNORE);
      if (!received) missing += (missing.empty() ? "" : ", ") + std::to_string(peers[i]);
    }
    aborted_by_ = "the " + name();
    abandoned_.push_back(std::move(op));
    throw DeadlineExceededError(
        "Collective " + name() + " timed out after " + std::to_string(*timeout_) + " s on worker " + std::to_string(rank_) +
        " of " + std::to_string(size_) + "; worker(s) " + (missing.empty() ? std::string("(unknown: all announced)") : missing) +
        " did not join it. Every worker must make the same collective calls in the same order; raise "
        "CommunicationOptions timeout_seconds if a worker is only slow.");
  }
};

}  // namespace devtensor::distribute
