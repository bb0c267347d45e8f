#pragma once
/// @file parallel.hpp
/// @brief parallel_for over a persistent pool of worker threads, for large CPU kernels.
///
/// Waking a sleeping thread costs ~40 µs on the 2-vCPU VMs this was measured on, so work is split only
/// when each piece has at least `grain` elements, and small kernels run inline. The calling thread
/// takes a share itself. A pool busy with another caller's loop makes the next caller run inline
/// rather than queue, so concurrent ops (strategy replicas) never wait on each other here.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::backend::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { run(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// Calls body(begin, end) over [0, n) in pieces of at least `grain`; returns when all are done.
  void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& body) {
    const std::int64_t max_pieces = static_cast<std::int64_t>(threads_.size()) + 1;
    const std::int64_t pieces = std::min(max_pieces, grain > 0 ? n / grain : 1);
    std::unique_lock busy(busy_, std::try_to_lock);
    if (pieces <= 1 || !busy.owns_lock()) {
      if (n > 0) body(0, n);
      return;
    }
    {
      // Round parameters change only while no worker is inside drain() (Note in run()).
      std::unique_lock lock(mutex_);
      idle_.wait(lock, [&] { return active_ == 0; });
      body_ = &body;
      n_ = n;
      pieces_ = pieces;
      next_.store(1);  // piece 0 is the caller's
      remaining_.store(pieces);
      ++round_;
    }
    wake_.notify_all();
    run_piece(0);
    drain();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return remaining_.load() == 0; });
    body_ = nullptr;
  }

  /// The process-wide pool: configured_threads() - 1 workers beyond the caller (1: no workers,
  /// every kernel on the calling thread). Read once, at the first large kernel.
  DEVTENSOR_EXPORT static ThreadPool& global() {
    static ThreadPool pool(configured_threads() - 1);
    return pool;
  }

  /// config::threading::set_intra_op_parallelism_threads when positive (frozen before any kernel
  /// runs: the first tensor initialises the Context), else DEVTENSOR_CPU_THREADS when it holds a
  /// positive number, else one per hardware thread.
  static unsigned configured_threads() {
    if (const int configured = Context::global().parallelism_threads(Parallelism::intra_op); configured > 0)
      return static_cast<unsigned>(std::min(configured, kMaxParallelismThreads));
    const char* value = std::getenv("DEVTENSOR_CPU_THREADS");  // NOLINT(concurrency-mt-unsafe)
    if (value != nullptr) {
      char* end = nullptr;
      const long n = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && n > 0 && n <= kMaxParallelismThreads) return static_cast<unsigned>(n);
    }
    return std::max(1u, std::thread::hardware_concurrency());
  }

 private:
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::mutex busy_;  // one loop at a time
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
  std::int64_t n_ = 0;
  std::int64_t pieces_ = 0;
  std::atomic<std::int64_t> next_{0};
  std::atomic<std::int64_t> remaining_{0};
  std::uint64_t round_ = 0;
  int active_ = 0;  // workers inside drain()
  std::condition_variable idle_;
  bool stop_ = false;

  void run_piece(std::int64_t piece) {
    const std::int64_t begin = n_ * piece / pieces_;
    const std::int64_t end = n_ * (piece + 1) / pieces_;
    (*body_)(begin, end);
    if (remaining_.fetch_sub(1) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_all();
    }
  }

  void drain() {
    for (std::int64_t piece = next_.fetch_add(1); piece < pieces_; piece = next_.fetch_add(1)) run_piece(piece);
  }

  // A worker joins a round under the mutex and counts itself active until it leaves drain(); the
  // caller sets up the next round only when no worker is active, so no worker ever reads one
  // round's parameters while they are being written for the next.
  void run() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || round_ != seen; });
        if (stop_) return;
        seen = round_;
        ++active_;
      }
      drain();
      std::lock_guard lock(mutex_);
      if (--active_ == 0) idle_.notify_all();
    }
  }
};

/// parallel_for on the global pool. A loop too small to split runs inline, before any
/// std::function (which may allocate) or pool is touched: most ops take this path.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& body) {
  if (grain <= 0 || n < 2 * grain) {
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
  const std::function<void(std::int64_t, std::int64_t)> f = std::forward<F>(body);
  ThreadPool::global().parallel_for(n, grain, f);
}

}  // namespace devtensor::backend::cpu
