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
/// Timeouts (CommunicationOptions::timeout_seconds). An MPI collective cannot be cancelled: once
/// a worker has started one, MPI may write into its buffer until every peer joins, however late.
/// So a timed collective starts only when every worker is committed to it, and the deadline
/// applies to the admission before it, which uses only messages that can be cancelled:
///   1. the chief (rank 0), on arriving, sends "here" to every peer and waits, until its deadline,
///      for each peer's answer: "ready" (the peer saw "here") or "gave up";
///   2. a peer waits, until its own deadline, for the chief's "here", answers "ready" and then
///      waits for the verdict; at its deadline it cancels the receive and answers "gave up";
///   3. the chief's verdict, one state per worker, goes to every peer that did not give up: "go"
///      when all are ready, and then every worker runs the blocking MPI collective (all of them
///      are in it; it completes unless a process dies, which mpiexec turns into the job's end);
///      otherwise every worker throws DeadlineExceededError naming the late workers.
/// A late worker finds the chief's "here" and verdict waiting and fails at once. After a timeout
/// the group is aborted: later collectives throw FailedPreconditionError without touching MPI
/// (TensorFlow's collective executor does the same). So no receive outlives the call that posted
/// it (each is completed, or cancelled and completed, before its buffer goes), no collective is
/// ever abandoned, and MPI_Finalize never runs while MPI can write into this process's memory; a
/// send that has not completed keeps its buffer (process lifetime) until MPI_Finalize.
///
/// Without a timeout collectives block, and a worker that dies is handled by the launcher:
/// mpiexec ends the whole job when a rank is killed or aborts (an uncaught exception), and a rank
/// that calls exit() with a non-zero status calls MPI_Abort on its way out (glibc's on_exit sees
/// the status) rather than MPI_Finalize, which would wait for peers stuck in a collective. A rank
/// that exits 0 while its peers still expect it in a collective is a program error that only
/// timeout_seconds turns into an exception.

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/multi_worker/mpi_runtime.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::distribute {

namespace mpi_detail {

/// Posted receives of `count` ints each, one per source, and the ints they write. No receive
/// outlives this object: whatever ends its scope, including an exception, the destructor
/// cancels the receives still pending and waits for each to finish before the buffer goes.
class Receives {
 public:
  Receives(MPI_Comm comm, int tag, std::span<const int> sources, int count)
      : count_(count),
        values_(sources.size() * static_cast<std::size_t>(count), 0),
        requests_(sources.size(), MPI_REQUEST_NULL),
        received_(sources.size(), false) {
    try {
      for (std::size_t i = 0; i < sources.size(); ++i)
        check(MPI_Irecv(values_.data() + i * static_cast<std::size_t>(count), count, MPI_INT, sources[i], tag, comm,
                        &requests_[i]),
              "MPI_Irecv");
    } catch (...) {
      cancel_pending();  // the destructor does not run for a half-built object
      throw;
    }
  }
  Receives(const Receives&) = delete;
  Receives& operator=(const Receives&) = delete;
  ~Receives() { cancel_pending(); }

  /// Tests every pending receive once; true when all have arrived.
  bool test() noexcept {
    bool all = true;
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (received_[i]) continue;
      int done = 0;
      MPI_Test(&requests_[i], &done, MPI_STATUS_IGNORE);
      received_[i] = done != 0;
      all = all && received_[i];
    }
    return all;
  }
  /// Cancels what has not arrived and waits for each cancellation; a message that won the race
  /// counts as received.
  void cancel_pending() noexcept {
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (received_[i] || requests_[i] == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&requests_[i]);
      MPI_Status status;
      MPI_Wait(&requests_[i], &status);
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      received_[i] = cancelled == 0;
    }
  }
  [[nodiscard]] bool received(std::size_t i) const noexcept { return received_[i]; }
  [[nodiscard]] std::span<const int> value(std::size_t i) const noexcept {
    return {values_.data() + i * static_cast<std::size_t>(count_), static_cast<std::size_t>(count_)};
  }

 private:
  int count_;
  std::vector<int> values_;
  std::vector<MPI_Request> requests_;
  std::vector<bool> received_;
};

[[nodiscard]] inline MPI_Datatype datatype(devtensor::DType dtype) {
  switch (dtype) {
    case devtensor::DType::DT_FLOAT: return MPI_FLOAT;
    case devtensor::DType::DT_DOUBLE: return MPI_DOUBLE;
    case devtensor::DType::DT_INT32: return MPI_INT32_T;
    case devtensor::DType::DT_INT64: return MPI_INT64_T;
    case devtensor::DType::DT_BOOL: break;
    case devtensor::DType::DT_HALF:
    case devtensor::DType::DT_BFLOAT16:
      throw UnimplementedError("Collective all-reduce over MPI is not supported for " + std::string(dtype_name(dtype)) +
                               " tensors (MPI has no such type); all-reduce float32 gradients, as mixed precision "
                               "keeps its variables in float32");
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
    case devtensor::DType::DT_HALF:
    case devtensor::DType::DT_BFLOAT16: return 2;
  }
  return 1;
}
[[nodiscard]] inline MPI_Op reduction_op(CollectiveReduction reduction) {
  switch (reduction) {
    case CollectiveReduction::sum: return MPI_SUM;
    case CollectiveReduction::max: return MPI_MAX;
    case CollectiveReduction::min: return MPI_MIN;
  }
  return MPI_SUM;
}

}  // namespace mpi_detail

/// The workers of a job as MPI ranks of MPI_COMM_WORLD (rank = id_in_cluster; 0 is the chief).
class MpiWorkerGroup final : public WorkerGroup {
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
  /// No receive or collective is pending outside a call (see the file comment); sends that have
  /// not completed go to the runtime with their buffers, and the communicators are freed.
  ~MpiWorkerGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    mpi_detail::reap(sends_);
    if (!sends_.empty()) {
      try {
        mpi_detail::Runtime::get().keep_until_finalize(std::move(sends_));
      } catch (...) {  // out of memory: leak the buffers rather than free them under MPI
        new std::vector<mpi_detail::PendingSend>(std::move(sends_));
      }
    }
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&node_comm_);
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

  using WorkerGroup::all_reduce;
  void all_reduce(devtensor::DType dtype, const void* input, void* output, std::size_t count,
                  CollectiveReduction reduction, std::string_view what) override {
    const MPI_Datatype type = mpi_detail::datatype(dtype);
    const MPI_Op op = mpi_detail::reduction_op(reduction);
    const std::size_t element = mpi_detail::element_size(dtype);
    const auto* in = static_cast<const std::byte*>(input);
    auto* out = static_cast<std::byte*>(output);
    for (std::size_t done = 0; done < count || (count == 0 && done == 0);) {  // int-sized pieces
      const std::size_t piece = std::min<std::size_t>(count - done, INT_MAX);
      const std::size_t at = done * element;
      run("all-reduce of ", what, in + at, out + at, piece * element, [&](const void* send, void* receive) {
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
      run("broadcast of ", what, p + done, p + done, piece,
          [&](const void*, void* buffer) { return MPI_Bcast(buffer, static_cast<int>(piece), MPI_BYTE, 0, comm_); });
      done += piece;
      if (bytes == 0) break;
    }
  }

  /// Waits until every worker calls it (MPI_Barrier; with a timeout, the admission is the barrier).
  void barrier(std::string_view what) override {
    run("", what, nullptr, nullptr, 0, [&](const void*, void*) { return timeout_ ? MPI_SUCCESS : MPI_Barrier(comm_); });
  }

 private:
  // The admission's messages (file comment). Static: a send that outlives its call still reads
  // valid memory.
  static constexpr int kHere = 0, kReady = 1, kGaveUp = 2;
  // A worker's state in the chief's verdict.
  static constexpr int kOnTime = 1, kLate = 3;  // and kGaveUp
  static constexpr int kChief = 0;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::optional<double> timeout_;
  std::mutex mutex_;  // one collective at a time (MPI_THREAD_SERIALIZED is enough)
  unsigned sequence_ = 0;
  std::optional<std::string> aborted_by_;
  std::vector<mpi_detail::PendingSend> sends_;  // the admission's sends not yet seen complete

  /// One collective: `collective(input, output)` is the blocking MPI call. Without a timeout it
  /// runs at once; with one, only after the chief's admission says every worker is in it.
  /// `kind` + `label` name it in errors (built only then: an untimed collective's success path
  /// allocates nothing).
  template <class Collective>
  void run(std::string_view kind, std::string_view label, const std::byte* input, std::byte* output, std::size_t bytes,
           Collective collective) {
    const auto name = [&] { return std::string(kind) + std::string(label); };
    std::lock_guard lock(mutex_);
    if (aborted_by_)
      throw FailedPreconditionError("Collective " + name() + " cannot run: this worker group was aborted after " +
                                    *aborted_by_ +
                                    " timed out. Restart the workers (every worker's collectives "
                                    "must complete in the same order).");
    if (size_ == 1) {
      if (bytes && input != output) std::memcpy(output, input, bytes);
      return;
    }
    if (timeout_) {
      const auto deadline =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*timeout_));
      const int tag = static_cast<int>(sequence_++ % 32000u);  // MPI guarantees tags up to 32767
      mpi_detail::reap(sends_);
      const std::vector<int> verdict =
          rank_ == kChief ? lead_admission(tag, deadline) : follow_admission(tag, deadline);
      if (std::any_of(verdict.begin(), verdict.end(), [](int state) { return state != kOnTime; })) {
        aborted_by_ = "the " + name();
        throw timed_out(name(), verdict);
      }
    }
    if (const int code = collective(input, output); code != MPI_SUCCESS)
      mpi_detail::check(code, "MPI collective (" + name() + ")");
  }

  /// Polls as MPI's blocking calls do (a receive progresses only inside MPI: sleeping between
  /// tests would stretch every message), until `arrived()` or the deadline.
  template <class Arrived>
  static void poll(Arrived arrived, std::optional<std::chrono::steady_clock::time_point> deadline) {
    while (!arrived() && !(deadline && std::chrono::steady_clock::now() >= *deadline)) std::this_thread::yield();
  }

  /// Starts a send of `count` ints; `buffer` keeps `data` alive until it completes (none: static).
  void send(const int* data, int count, int to, int tag, std::shared_ptr<const void> buffer = nullptr) {
    sends_.reserve(sends_.size() + 1);  // no allocation between MPI_Isend and keeping its request
    mpi_detail::PendingSend s{MPI_REQUEST_NULL, std::move(buffer)};
    mpi_detail::check(MPI_Isend(data, count, MPI_INT, to, tag, comm_, &s.request), "MPI_Isend");
    sends_.push_back(std::move(s));
  }

  /// The chief's side: "here" to every peer, their answers until the deadline (or the first
  /// "gave up"), then the verdict to every peer still waiting for one. Returns the verdict.
  std::vector<int> lead_admission(int tag, std::chrono::steady_clock::time_point deadline) {
    std::vector<int> peers;
    for (int peer = 0; peer < size_; ++peer)
      if (peer != kChief) peers.push_back(peer);
    for (int peer : peers) send(&kHere, 1, peer, tag);
    mpi_detail::Receives answers(comm_, tag, peers, 1);
    const auto someone_gave_up = [&] {
      for (std::size_t i = 0; i < peers.size(); ++i)
        if (answers.received(i) && answers.value(i)[0] == kGaveUp) return true;
      return false;
    };
    poll([&] { return answers.test() || someone_gave_up(); }, deadline);
    answers.cancel_pending();
    auto verdict = std::make_shared<std::vector<int>>(static_cast<std::size_t>(size_), kOnTime);
    for (std::size_t i = 0; i < peers.size(); ++i)
      (*verdict)[static_cast<std::size_t>(peers[i])] = !answers.received(i)             ? kLate
                                                       : answers.value(i)[0] == kGaveUp ? kGaveUp
                                                                                        : kOnTime;
    for (int peer : peers)
      if ((*verdict)[static_cast<std::size_t>(peer)] != kGaveUp) send(verdict->data(), size_, peer, tag, verdict);
    return *verdict;
  }

  /// A peer's side: the chief's "here" until the deadline, then "ready" and the verdict (the chief
  /// has arrived and decides within its own deadline); or, at the deadline, "gave up".
  std::vector<int> follow_admission(int tag, std::chrono::steady_clock::time_point deadline) {
    const int chief[] = {kChief};
    {
      mpi_detail::Receives here(comm_, tag, chief, 1);
      poll([&] { return here.test(); }, deadline);
      here.cancel_pending();
      if (!here.received(0)) {
        send(&kGaveUp, 1, kChief, tag);
        std::vector<int> verdict(static_cast<std::size_t>(size_), kOnTime);
        verdict[kChief] = kLate;
        return verdict;
      }
    }
    mpi_detail::Receives verdict(comm_, tag, chief, size_);
    send(&kReady, 1, kChief, tag);
    poll([&] { return verdict.test(); }, std::nullopt);
    return {verdict.value(0).begin(), verdict.value(0).end()};
  }

  /// The error for a failed admission, the same on every worker: the late workers are those the
  /// chief did not hear from, or the chief when a peer gave up waiting for it.
  [[nodiscard]] DeadlineExceededError timed_out(const std::string& name, const std::vector<int>& verdict) const {
    const auto ranks_in = [&](int state) {
      std::string out;
      for (std::size_t w = 0; w < verdict.size(); ++w)
        if (verdict[w] == state) out += (out.empty() ? "" : ", ") + std::to_string(w);
      return out;
    };
    const std::string gave_up = ranks_in(kGaveUp);
    const std::string late = gave_up.empty() ? ranks_in(kLate) : std::to_string(kChief);
    const bool this_one_late =
        verdict[static_cast<std::size_t>(rank_)] == kLate || (!gave_up.empty() && rank_ == kChief);
    std::string why;
    if (!gave_up.empty()) why = " (worker(s) " + gave_up + " gave up waiting for the chief)";
    if (this_one_late) why += "; this worker arrived after the others had given up on it";
    return DeadlineExceededError("Collective " + name + " timed out after " + std::to_string(*timeout_) +
                                 " s on worker " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                 "; worker(s) " + late + " did not join it" + why +
                                 ". Every worker must make the same collective calls in the same order; raise "
                                 "CommunicationOptions timeout_seconds if a worker is only slow.");
  }
};

}  // namespace devtensor::distribute
