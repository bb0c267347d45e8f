#pragma once
// A host sub-allocator for tests: a capacity, a record of every call, injected failures, and a
// count of what is still outstanding (so a test can prove nothing leaked).
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string_view>
#include <vector>

namespace devtensor::test {

struct SubAllocatorLog {
  std::mutex mutex;
  std::size_t capacity = SIZE_MAX;
  std::size_t outstanding = 0;
  std::map<void*, std::size_t> live;
  std::vector<std::size_t> requests;   // every size asked for, in order
  std::vector<std::size_t> successes;  // sizes handed out, in order
  int fail_next = 0;                   // the next N calls fail
  bool fail_always = false;
  double fail_probability = 0.0;
  std::mt19937 rng{7};
};

class TestSubAllocator {
 public:
  static constexpr bool supports_coalescing = false;
  explicit TestSubAllocator(std::shared_ptr<SubAllocatorLog> log = std::make_shared<SubAllocatorLog>())
      : log_(std::move(log)) {}
  [[nodiscard]] std::string_view name() const noexcept { return "test"; }
  void* allocate(std::size_t bytes) noexcept {
    std::lock_guard lock(log_->mutex);
    log_->requests.push_back(bytes);
    if (log_->fail_always) return nullptr;
    if (log_->fail_next > 0) {
      --log_->fail_next;
      return nullptr;
    }
    if (log_->fail_probability > 0 && std::uniform_real_distribution<double>(0, 1)(log_->rng) < log_->fail_probability)
      return nullptr;
    if (bytes > log_->capacity - log_->outstanding) return nullptr;
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) return nullptr;
    log_->outstanding += bytes;
    log_->live[p] = bytes;
    log_->successes.push_back(bytes);
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept {
    std::lock_guard lock(log_->mutex);
    auto it = log_->live.find(p);
    if (it == log_->live.end() || it->second != bytes) std::abort();  // the allocator lied
    log_->live.erase(it);
    log_->outstanding -= bytes;
    std::free(p);
  }
  [[nodiscard]] const std::shared_ptr<SubAllocatorLog>& log() const { return log_; }

 private:
  std::shared_ptr<SubAllocatorLog> log_;
};

}  // namespace devtensor::test
