#pragma once
/// @file log.hpp
/// @brief devtensor's log: one replaceable sink for placement logs, warnings and errors, filtered
/// as TensorFlow filters its two logs.
///
/// TensorFlow prints from two places: its C++ runtime (LOG(INFO/WARNING/ERROR): device creation,
/// placement, allocators), filtered by the environment variable TF_CPP_MIN_LOG_LEVEL (0 all,
/// 1 no INFO, 2 no WARNING either, 3 no ERROR either), and its Python logger (strategies, Keras),
/// which shows WARNING and above until `tf.get_logger().setLevel("INFO")`. devtensor tags each line
/// with its LogSource and applies the same two switches: TF_CPP_MIN_LOG_LEVEL (or
/// logging::set_min_cpp_log_level) and logging::set_verbosity.
///
/// Lines that pass go to a sink that writes to stderr by default. Tests and applications replace it
/// with set_log_sink (a ScopedLogSink restores the previous one). The sink is process-wide and may
/// be called from any thread; calls are serialised, so a sink needs no locking of its own.

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "devtensor/config.hpp"

namespace devtensor {

enum class LogSeverity { info, warning, error };

constexpr std::string_view to_string(LogSeverity severity) noexcept {
  switch (severity) {
    case LogSeverity::info: return "I";
    case LogSeverity::warning: return "W";
    case LogSeverity::error: return "E";
  }
  return "?";
}

/// Which of TensorFlow's logs a line belongs to, and so which switch hides it.
enum class LogSource {
  cpp_runtime,    // TensorFlow's C++ LOG(): TF_CPP_MIN_LOG_LEVEL
  python_logger,  // TensorFlow's Python logger: logging::set_verbosity (WARNING by default)
};

/// Receives one complete line, without a trailing newline.
using LogSink = std::function<void(LogSeverity, std::string_view)>;

namespace detail {

struct LogState {
  std::mutex mutex;
  LogSink sink;  // empty: write to stderr
};

DEVTENSOR_EXPORT inline LogState& log_state() {
  static LogState state;
  return state;
}

/// TensorFlow's parse of TF_CPP_MIN_LOG_LEVEL (an istream >> int): the leading integer, 0 when
/// unset or unreadable, clamped to [0, INT_MAX].
inline int min_log_level_from_env() noexcept {
  const char* value = std::getenv("TF_CPP_MIN_LOG_LEVEL");
  if (!value) return 0;
  const long level = std::strtol(value, nullptr, 10);                          // 0 without digits, LONG_MIN/MAX beyond
  return level < 0 ? 0 : level > INT_MAX ? INT_MAX : static_cast<int>(level);  // below 0 shows all, as 0
}

/// The two switches, read on every log call (two relaxed loads).
struct LogLevels {
  static constexpr int from_env = -1;
  std::atomic<int> min_cpp_level{from_env};  // from_env until read or set
  std::atomic<LogSeverity> python_verbosity{LogSeverity::warning};
  std::atomic<std::uint32_t> first_n_generation{0};  // bumped by logging::reset_to_defaults
};

DEVTENSOR_EXPORT inline LogLevels& log_levels() {
  static LogLevels levels;
  return levels;
}

inline int min_cpp_log_level() noexcept {
  auto& level = log_levels().min_cpp_level;
  int current = level.load(std::memory_order_relaxed);
  if (current == LogLevels::from_env) {
    const int read = min_log_level_from_env();
    // A concurrent setter wins over the environment.
    level.compare_exchange_strong(current, read, std::memory_order_relaxed);
    current = level.load(std::memory_order_relaxed);
  }
  return current;
}

}  // namespace detail

namespace logging {

/// TensorFlow's TF_CPP_MIN_LOG_LEVEL for devtensor's runtime lines: 0 shows all, 1 hides INFO,
/// 2 hides WARNING too, 3 (or more) hides ERROR too. Read from the environment at the first log
/// line unless set here first; negative values act as 0.
inline void set_min_cpp_log_level(int level) noexcept { detail::log_levels().min_cpp_level = level < 0 ? 0 : level; }
[[nodiscard]] inline int get_min_cpp_log_level() noexcept { return detail::min_cpp_log_level(); }

/// The least severity shown from the Python-logger lines (strategy and Keras messages); WARNING
/// by default, as tf.get_logger(). `set_verbosity(LogSeverity::info)` is
/// `tf.get_logger().setLevel("INFO")`.
inline void set_verbosity(LogSeverity least_shown) noexcept { detail::log_levels().python_verbosity = least_shown; }
[[nodiscard]] inline LogSeverity get_verbosity() noexcept { return detail::log_levels().python_verbosity; }

/// Back to the defaults, as in a new process: TF_CPP_MIN_LOG_LEVEL read again at the next line,
/// verbosity WARNING, every FirstN counting from zero.
inline void reset_to_defaults() noexcept {
  auto& levels = detail::log_levels();
  levels.min_cpp_level = detail::LogLevels::from_env;
  levels.python_verbosity = LogSeverity::warning;
  levels.first_n_generation.fetch_add(1);
}

/// One call site of TensorFlow's `logging.log_first_n(level, line, n)`: next() is true for the
/// first `n` calls. Calls count whether or not the line is shown, as in TensorFlow.
class FirstN {
 public:
  explicit constexpr FirstN(std::uint32_t n) noexcept : n_(n) {}

  [[nodiscard]] bool next() noexcept {
    const std::uint64_t generation = detail::log_levels().first_n_generation.load(std::memory_order_relaxed);
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    while (true) {  // state: generation in the high half, calls in the low half
      const std::uint64_t calls = (state >> 32) == generation ? (state & 0xffffffffu) : 0;
      if (calls >= n_) return false;
      if (state_.compare_exchange_weak(state, (generation << 32) | (calls + 1), std::memory_order_relaxed)) return true;
    }
  }

 private:
  std::uint32_t n_;
  std::atomic<std::uint64_t> state_{0};
};

}  // namespace logging

/// Whether a line of this source and severity would reach the sink: callers test it before they
/// build an expensive line.
[[nodiscard]] inline bool log_enabled(LogSource source, LogSeverity severity) noexcept {
  if (source == LogSource::python_logger)
    return static_cast<int>(severity) >= static_cast<int>(logging::get_verbosity());
  return static_cast<int>(severity) >= detail::min_cpp_log_level();
}

/// Replaces the process-wide sink and returns the previous one (empty means "stderr").
LogSink set_log_sink(LogSink sink);

/// Writes one line to the current sink unless its source's switch hides it. Never throws: a
/// throwing sink is reported on stderr.
void log(LogSource source, LogSeverity severity, std::string_view message) noexcept;

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION LogSink set_log_sink(LogSink sink) {
  auto& state = detail::log_state();
  std::lock_guard lock(state.mutex);
  return std::exchange(state.sink, std::move(sink));
}

DEVTENSOR_DEFINITION void log(LogSource source, LogSeverity severity, std::string_view message) noexcept {
  if (!log_enabled(source, severity)) return;
  auto& state = detail::log_state();
  std::lock_guard lock(state.mutex);
  if (state.sink) {
    try {
      state.sink(severity, message);
      return;
    } catch (...) {
      std::fputs("[devtensor] E the log sink threw; writing to stderr instead\n", stderr);
    }
  }
  std::fprintf(stderr, "[devtensor] %.*s %.*s\n", static_cast<int>(to_string(severity).size()),
               to_string(severity).data(), static_cast<int>(message.size()), message.data());
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// A runtime line (TensorFlow's C++ LOG()), hidden by TF_CPP_MIN_LOG_LEVEL.
inline void log(LogSeverity severity, std::string_view message) noexcept {
  log(LogSource::cpp_runtime, severity, message);
}

/// RAII: installs a sink for the lifetime of the object, then restores the previous one.
class [[nodiscard]] ScopedLogSink {
 public:
  explicit ScopedLogSink(LogSink sink) : previous_(set_log_sink(std::move(sink))) {}
  ScopedLogSink(const ScopedLogSink&) = delete;
  ScopedLogSink& operator=(const ScopedLogSink&) = delete;
  ~ScopedLogSink() { set_log_sink(std::move(previous_)); }

 private:
  LogSink previous_;
};

}  // namespace devtensor
