#pragma once
/// @file mpi_runtime.hpp
/// @brief MPI for this process (the devtensor::mpi component): initialised on first use
/// (MPI_Init_thread, MPI_THREAD_MULTIPLE requested), finalised at exit when devtensor initialised
/// it, with the sends whose buffers must outlive their calls; and check(), MPI's error codes as
/// exceptions. Shared by the worker groups (mpi_worker_group.hpp) and the parameter-server
/// channel (ps_channel.hpp). Compiled once in compiled mode (Note [The mpi component's compiled part]).

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"

#if DEVTENSOR_MPI_DEFINITIONS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#endif

namespace devtensor::distribute::mpi_detail {

/// check()'s slow path: the InternalError, with MPI's text.
[[noreturn]] void throw_mpi_error(int code, std::string_view call);

/// MPI_SUCCESS, or an InternalError naming the call and MPI's explanation.
inline void check(int code, std::string_view call) {
  if (code != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(code, call);
}

/// A non-blocking send and the buffer it reads, which must stay alive until the send completes.
struct PendingSend {
  MPI_Request request = MPI_REQUEST_NULL;
  std::shared_ptr<const void> buffer;  // null: the buffer has static storage
};

/// Tests each send once; keeps those still in flight.
inline void reap(std::vector<PendingSend>& sends) noexcept {
  std::erase_if(sends, [](PendingSend& s) {
    int done = 0;
    MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

/// MPI for this process: initialised once, finalised at exit if devtensor initialised it.
class Runtime {
 public:
  /// At exit: MPI_Finalize after a clean exit. After exit(status != 0) the peers may be blocked in
  /// a collective this worker will never join, and MPI_Finalize would wait for them for ever; so
  /// MPI_Abort instead, and the launcher ends the whole job with this status. What the program
  /// wrote comes out first (MPI_Abort ends the process before exit() would flush stdio), and a
  /// process alone in its world (no mpiexec, or -n 1) has no peer to wait for: it finalises and
  /// exits with its status, without Open MPI's abort banner.
  static void finish(int status) noexcept;
  /// For jobs that outlive a dead process (mpiexec --enable-recovery): MPI_Finalize waits for
  /// every process of the job, and Open MPI 4.1 sometimes waits for ever for one that was killed
  /// (about 1 job in 6 after a SIGKILL). After `seconds` the process ends without it, with its status.
  void limit_finalize_wait(double seconds) noexcept {
    for (double now = finalize_limit_seconds_.load();
         seconds > now && !finalize_limit_seconds_.compare_exchange_weak(now, seconds);) {
    }
  }
  /// Never destroyed: it keeps the buffers of sends that MPI may still read during MPI_Finalize,
  /// which runs after static destructors may have run.
  static Runtime& get();
  [[nodiscard]] int thread_level() const noexcept { return thread_level_; }

  /// Sends a worker group could not see complete: kept, buffers and all, until MPI_Finalize.
  void keep_until_finalize(std::vector<PendingSend>&& sends);

 private:
  int thread_level_ = MPI_THREAD_SINGLE;
  std::atomic<double> finalize_limit_seconds_{0.0};  // 0: MPI_Finalize may wait for ever
  std::mutex mutex_;
  std::vector<PendingSend> kept_;

  /// Progresses the kept sends for up to a second (a peer that is itself finalising receives
  /// them); MPI_Finalize then completes or discards the rest, whose buffers stay alive.
  void finish_sends() noexcept;

  /// A watchdog for MPI_Finalize: if the process still exists in `seconds`, it ends with `status`.
  static void exit_if_finalize_hangs(double seconds, int status) noexcept;

  Runtime();
};

#if DEVTENSOR_MPI_DEFINITIONS  // Note [The mpi component's compiled part]

DEVTENSOR_MPI_DEFINITION void throw_mpi_error(int code, std::string_view call) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw InternalError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

DEVTENSOR_MPI_DEFINITION void Runtime::finish(int status) noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  int size = 1;
  if (status != 0) MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, status);
    return;
  }
  get().finish_sends();
  if (const double limit = get().finalize_limit_seconds_.load(); limit > 0) exit_if_finalize_hangs(limit, status);
  MPI_Finalize();
}

DEVTENSOR_MPI_DEFINITION Runtime& Runtime::get() {
  static Runtime* runtime = new Runtime;
  return *runtime;
}

DEVTENSOR_MPI_DEFINITION void Runtime::keep_until_finalize(std::vector<PendingSend>&& sends) {
  std::lock_guard lock(mutex_);
  for (auto& s : sends) kept_.push_back(std::move(s));
  sends.clear();
}

DEVTENSOR_MPI_DEFINITION void Runtime::finish_sends() noexcept {
  std::lock_guard lock(mutex_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!kept_.empty() && std::chrono::steady_clock::now() < until) {
    reap(kept_);
    std::this_thread::yield();
  }
}

DEVTENSOR_MPI_DEFINITION void Runtime::exit_if_finalize_hangs(double seconds, int status) noexcept {
  std::cout.flush();
  std::cerr.flush();
  try {
    std::thread([seconds, status] {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      std::fprintf(stderr,
                   "[devtensor] W MPI_Finalize has waited %g s for the other processes of the job (one of "
                   "them has probably died); this process ends without it, with status %d\n",
                   seconds, status);
      std::fflush(nullptr);
      std::_Exit(status);
    }).detach();
  } catch (...) {  // no thread: MPI_Finalize waits as it would without a limit
  }
}

DEVTENSOR_MPI_DEFINITION Runtime::Runtime() {
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

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::mpi_detail
