#pragma once
/// @file log.hpp
/// @brief devtensor's log: one replaceable sink for placement logs, warnings and errors.
///
/// TensorFlow sends such lines to LOG(INFO/WARNING/ERROR); devtensor sends them to a sink that
/// writes to stderr by default. Tests and applications replace it with set_log_sink (a ScopedLogSink
/// restores the previous one). The sink is process-wide and may be called from any thread; calls are
/// serialised, so a sink needs no locking of its own.

#include <cstdio>
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

}  // namespace detail

/// Replaces the process-wide sink and returns the previous one (empty means "stderr").
inline LogSink set_log_sink(LogSink sink) {
  auto& state = detail::log_state();
  std::lock_guard lock(state.mutex);
  return std::exchange(state.sink, std::move(sink));
}

/// Writes one line to the current sink. Never throws: a throwing sink is reported on stderr.
inline void log(LogSeverity severity, std::string_view message) noexcept {
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
