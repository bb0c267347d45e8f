#pragma once
/// @file progress.hpp
/// @brief Keras's progress output for fit/evaluate.
///
/// verbose = 1 on a terminal: a bar redrawn in place ("\r") at most every 50 ms (Keras's interval),
/// with ETA while running, and the final line once, with time per step:
///   `10/10 [==============================] - 0s 2ms/step - loss: 0.1234`.
/// verbose = 1 elsewhere (a file, a pipe, CI logs): only the final line of each epoch.
/// verbose = 2: one line per epoch, Keras 3's: `10/10 - 0s - 2ms/step - loss: 0.1234`.
/// Metrics join the loss in the order of their names, as Keras 3 prints them:
/// `- accuracy: 0.9500 - loss: 0.1234`.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "devtensor/config.hpp"

namespace devtensor {
namespace nn {

/// What a progress line reports (Keras's logs): (name, value) pairs, the loss among them.
using Logs = std::vector<std::pair<std::string, double>>;

namespace progress_detail {
inline std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, fmt, value);
  return buffer;
}
/// "%.4f", or "%.4e" for tiny magnitudes, as Keras prints metric values.
inline std::string metric(double v) { return format(std::abs(v) > 1e-3 ? "%.4f" : "%.4e", v); }
inline std::string per_step(double seconds) {
  if (seconds >= 1 || seconds == 0) return format("%.0fs/step", seconds);  // Keras's "0s/step" for none
  if (seconds >= 1e-3) return format("%.0fms/step", seconds * 1e3);
  return format("%.0fus/step", seconds * 1e6);
}
/// " - accuracy: 0.9500 - loss: 0.1234": sorted by name.
inline std::string logs(Logs values) {
  std::sort(values.begin(), values.end());
  std::string s;
  for (const auto& [name, value] : values) s += " - " + name + ": " + metric(value);
  return s;
}
inline std::string eta(double seconds) {
  const auto s = static_cast<long>(seconds);
  char buffer[32];
  if (s > 3600)
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
  else if (s > 60)
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%lds", s);
  return buffer;
}
}  // namespace progress_detail

class ProgressBar {
 public:
  /// `target`: steps in the epoch (0 when unknown). `out` defaults to std::cout; `interactive`
  /// defaults to whether that is a terminal. `interval_seconds`: the least time between redraws.
  ProgressBar(std::int64_t target, int verbose, std::ostream* out = nullptr,
              std::optional<bool> interactive = std::nullopt, double interval_seconds = 0.05)
      : target_(target),
        verbose_(verbose),
        out_(out ? out : &std::cout),
        interactive_(interactive.value_or(out_ == &std::cout && ::isatty(STDOUT_FILENO) == 1)),
        interval_(interval_seconds),
        start_(std::chrono::steady_clock::now()) {}

  /// Whether update(current, ...) would draw now: fit and evaluate read a loss that lives on a
  /// GPU only then (Keras reads its metrics once per display update, not once per step).
  [[nodiscard]] bool will_draw(std::int64_t current) const {
    if (verbose_ != 1 || !interactive_) return false;
    if (target_ > 0 && current >= target_) return false;
    return last_width_ == 0 || seconds() - last_draw_ >= interval_;
  }

  /// After step `current` (1-based) with the running mean loss. The last step of a known target
  /// draws nothing: finish() writes the final line, once.
  void update(std::int64_t current, double loss) { update(current, Logs{{"loss", loss}}); }
  /// The same with the running metrics too.
  void update(std::int64_t current, const Logs& values) {
    if (verbose_ != 1 || !interactive_) return;
    if (target_ > 0 && current >= target_) return;
    const double elapsed = seconds();
    if (last_width_ > 0 && elapsed - last_draw_ < interval_) return;  // the first step always draws
    last_draw_ = elapsed;
    std::string line = bar(current) + " - ";
    if (target_ > 0 && current < target_)
      line += "ETA: " +
              progress_detail::eta(elapsed / static_cast<double>(current) * static_cast<double>(target_ - current));
    else
      line += progress_detail::format("%.0fs ", elapsed) +
              progress_detail::per_step(elapsed / static_cast<double>(current));
    line += progress_detail::logs(values);
    const std::size_t width = line.size();
    if (width < last_width_) line += std::string(last_width_ - width, ' ');
    last_width_ = width;
    *out_ << '\r' << line << std::flush;
  }

  /// The end of the epoch after `steps` steps.
  void finish(std::int64_t steps, double loss) { finish(steps, Logs{{"loss", loss}}); }
  void finish(std::int64_t steps, const Logs& values) {
    if (verbose_ == 0) return;
    const double elapsed = seconds();
    const double step_time = steps > 0 ? elapsed / static_cast<double>(steps) : 0.0;
    // An unknown size is the steps seen (Keras 3 prints no verbose = 2 line then).
    if (target_ <= 0) target_ = steps;
    if (verbose_ == 2) {
      *out_ << count(steps) << " - " << progress_detail::format("%.0fs", elapsed) << " - "
            << progress_detail::per_step(step_time) << progress_detail::logs(values) << "\n";
      return;
    }
    std::string line = bar(steps) + " - " + progress_detail::format("%.0fs ", elapsed) +
                       progress_detail::per_step(step_time) + progress_detail::logs(values);
    if (interactive_ && line.size() < last_width_) line += std::string(last_width_ - line.size(), ' ');
    *out_ << (interactive_ ? "\r" : "") << line << "\n" << std::flush;
  }

  [[nodiscard]] bool interactive() const noexcept { return interactive_; }

 private:
  std::int64_t target_;
  int verbose_;
  std::ostream* out_;
  bool interactive_;
  double interval_;
  std::chrono::steady_clock::time_point start_;
  double last_draw_ = 0;        // seconds since start_ at the last redraw
  std::size_t last_width_ = 0;  // 0 until the first redraw

  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  /// " 3/10": the steps, as wide as the target.
  [[nodiscard]] std::string count(std::int64_t current) const {
    const auto digits = std::to_string(target_).size();
    const std::string s = std::to_string(current);
    return std::string(digits > s.size() ? digits - s.size() : 0, ' ') + s + "/" + std::to_string(target_);
  }
  /// "3/10 [========>.....................]" (Keras's Progbar, width 30).
  [[nodiscard]] std::string bar(std::int64_t current) const {
    constexpr int width = 30;
    if (target_ <= 0) return std::to_string(current) + "/Unknown";
    std::string s = count(current) + " [";
    const int filled = static_cast<int>(width * static_cast<double>(current) / static_cast<double>(target_));
    if (filled > 0) {
      s += std::string(static_cast<std::size_t>(filled - 1), '=');
      s += current < target_ ? '>' : '=';
    }
    s += std::string(static_cast<std::size_t>(std::max(0, width - filled)), '.') + "]";
    return s;
  }
};

}  // namespace nn
}  // namespace devtensor
