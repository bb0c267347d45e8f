#pragma once
/// @file allocator_retry.hpp
/// @brief AllocatorRetry (TensorFlow's allocator_retry): an allocation that failed waits for other
/// threads to free memory and tries again after each free, until a deadline.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace devtensor::memory {

class AllocatorRetry {
 public:
  /// Calls `attempt()` after each notify_freed() (and at least every 50 ms) until it returns
  /// memory or `timeout` has passed; nullptr then.
  template <class Attempt>
  void* retry(std::chrono::milliseconds timeout, Attempt attempt) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::mutex wait_mutex;
    std::unique_lock wait_lock(wait_mutex);
    ++waiters_;
    void* p = nullptr;
    while (p == nullptr && std::chrono::steady_clock::now() < deadline) {
      freed_.wait_until(wait_lock,
                        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
      p = attempt();
    }
    --waiters_;
    return p;
  }

  /// Memory was freed: wakes the waiting allocations (a load when none waits).
  void notify_freed() noexcept {
    if (waiters_.load() > 0) freed_.notify_all();
  }

 private:
  std::condition_variable_any freed_;
  std::atomic<int> waiters_{0};
};

}  // namespace devtensor::memory
