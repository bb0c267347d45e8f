#pragma once
// Shared test support: a fresh Context per test, captured log lines, scoped environment variables.

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/log.hpp"
#include "devtensor/testing/reset.hpp"

namespace devtensor::test {

/// The full names of the devices tests place on, as TensorFlow prints them (one definition for
/// every test file: a test executable may be compiled as one translation unit).
inline constexpr const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
inline constexpr const char* kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
inline constexpr const char* kGpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
inline constexpr const char* kGpu1 = "/job:localhost/replica:0/task:0/device:GPU:1";
inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * 1024;

/// Collects every log line while alive.
class LogCapture {
 public:
  LogCapture()
      : sink_([this](LogSeverity severity, std::string_view line) {
          std::lock_guard lock(mutex_);
          lines_.emplace_back(severity, std::string(line));
        }) {}

  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& l : lines_) out.push_back(l.second);
    return out;
  }
  [[nodiscard]] std::vector<std::pair<LogSeverity, std::string>> entries() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  /// Number of lines containing `needle`.
  [[nodiscard]] std::size_t count(std::string_view needle) const {
    std::size_t n = 0;
    for (const auto& l : lines())
      if (l.find(needle) != std::string::npos) ++n;
    return n;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    lines_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogSeverity, std::string>> lines_;
  ScopedLogSink sink_;
};

/// Sets (or unsets, with std::nullopt) an environment variable and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) previous_ = old;
    apply(value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { apply(previous_); }

 private:
  std::string name_;
  std::optional<std::string> previous_;
  void apply(const std::optional<std::string>& value) {
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
};

/// Fixture: every test starts with a fresh Context, no simulated GPUs from the environment, and
/// captured logs; the Context is reset again afterwards.
struct FreshContext {
  ScopedEnv simulated{"DEVTENSOR_SIMULATED_GPUS", std::nullopt};
  ScopedEnv growth{"TF_FORCE_GPU_ALLOW_GROWTH", std::nullopt};
  ScopedEnv reserve{"TF_DEVICE_MIN_SYS_MEMORY_IN_MB", std::nullopt};
  LogCapture log;
  // The machine's real GPUs (a CPU test program run on a GPU machine) must not add lines to the
  // logs the tests read: the driver probe reports none unless a test fakes one.
  FreshContext() {
    devtensor::testing::reset_context();
    Context::global().set_gpu_driver_probe_for_testing([]() noexcept { return 0; });
  }
  ~FreshContext() { devtensor::testing::reset_context(); }
};

/// True when `text` contains `needle`; prints both on failure through BOOST_CHECK_MESSAGE callers.
inline bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

}  // namespace devtensor::test

/// Checks that `statement` throws `type` whose message contains `phrase`.
#define DEVTENSOR_CHECK_THROW_WITH(statement, type, phrase)                                        \
  BOOST_CHECK_EXCEPTION(statement, type, [&](const type& e_) {                                     \
    const bool ok_ = ::devtensor::test::contains(e_.what(), phrase);                               \
    if (!ok_) BOOST_TEST_MESSAGE("message was: " << e_.what() << "\nexpected phrase: " << phrase); \
    return ok_;                                                                                    \
  })
