#pragma once
/// @file schedules.hpp
/// @brief Keras's learning-rate schedules (keras.optimizers.schedules) and LearningRate, what an
/// optimizer's `learning_rate` is: a number that callbacks may change (ReduceLROnPlateau,
/// LearningRateScheduler), or a schedule of the optimizer's step.
///
///     nn::optimizers::SGD sgd{.learning_rate = nn::schedules::ExponentialDecay{
///                                 .initial_learning_rate = 0.1, .decay_steps = 1000, .decay_rate = 0.96}};
///
/// A schedule is read when the update runs, with the updates done so far as its step (Keras's
/// `schedule(optimizer.iterations)`), so a traced step replays with each step's own rate and is
/// never traced again for it. Values are rounded to float32, as Keras computes them.

#include <algorithm>
#include <any>
#include <atomic>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"

namespace devtensor {
namespace nn {
namespace schedules {

namespace schedule_detail {
inline void require_positive_steps(std::int64_t decay_steps, const char* argument = "decay_steps") {
  if (decay_steps <= 0)
    throw InvalidArgumentError(std::string("Argument `") + argument + "` must be > 0. Received: " + argument + "=" +
                               std::to_string(decay_steps));
}
/// step / decay_steps, floored with staircase: how far ExponentialDecay and InverseTimeDecay are.
inline double progress(std::int64_t step, std::int64_t decay_steps, bool staircase) {
  const double p = static_cast<double>(step) / static_cast<double>(decay_steps);
  return staircase ? std::floor(p) : p;
}
}  // namespace schedule_detail

/// initial_learning_rate · decay_rate^(step / decay_steps) (the exponent floored with staircase).
struct ExponentialDecay {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;
  double decay_rate = 0.0;
  bool staircase = false;
  /// @throws InvalidArgumentError for decay_steps <= 0 (Keras's text).
  void validate() const { schedule_detail::require_positive_steps(decay_steps); }
  [[nodiscard]] double operator()(std::int64_t step) const {
    return initial_learning_rate * std::pow(decay_rate, schedule_detail::progress(step, decay_steps, staircase));
  }
};

/// values[0] up to and including boundaries[0], values[i] in (boundaries[i-1], boundaries[i]],
/// the last value after the last boundary.
struct PiecewiseConstantDecay {
  std::vector<std::int64_t> boundaries;
  std::vector<double> values;
  /// @throws InvalidArgumentError unless there is one value more than boundaries (Keras's text),
  /// or for boundaries that do not increase.
  void validate() const {
    if (values.size() != boundaries.size() + 1) {
      const auto list = [](const auto& xs) {
        std::string s = "[";
        for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + format_number(xs[i]);
        return s + "]";
      };
      throw InvalidArgumentError(
          "The length of boundaries should be 1 less than the length of values. Received: "
          "boundaries=" +
          list(boundaries) + " of length " + std::to_string(boundaries.size()) + ", and values=" + list(values) +
          " of length " + std::to_string(values.size()) + ".");
    }
    for (std::size_t i = 1; i < boundaries.size(); ++i)
      if (boundaries[i] <= boundaries[i - 1])
        throw InvalidArgumentError("PiecewiseConstantDecay: boundaries must increase; boundaries[" + std::to_string(i) +
                                   "]=" + std::to_string(boundaries[i]) + " follows " +
                                   std::to_string(boundaries[i - 1]));
  }
  [[nodiscard]] double operator()(std::int64_t step) const {
    const auto after = std::lower_bound(boundaries.begin(), boundaries.end(), step);  // first boundary >= step
    return values[static_cast<std::size_t>(after - boundaries.begin())];
  }

 private:
  static std::string format_number(std::int64_t v) { return std::to_string(v); }
  static std::string format_number(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
    return s;
  }
};

/// Cosine decay from initial_learning_rate (or, with warmup_target, a linear warmup from
/// initial_learning_rate to warmup_target over warmup_steps, then cosine decay from it) to
/// alpha × that rate after decay_steps (SGDR without restarts).
struct CosineDecay {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;
  double alpha = 0.0;
  std::optional<double> warmup_target = std::nullopt;
  std::int64_t warmup_steps = 0;
  void validate() const { schedule_detail::require_positive_steps(decay_steps); }
  [[nodiscard]] double operator()(std::int64_t step) const {
    const auto decay = [&](double s, double from) {
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * s / static_cast<double>(decay_steps)));
      return from * ((1 - alpha) * cosine + alpha);
    };
    const auto decays = static_cast<double>(decay_steps);
    if (!warmup_target) return decay(std::min(static_cast<double>(step), decays), initial_learning_rate);
    const auto warmups = static_cast<double>(warmup_steps);
    const double s = std::min(static_cast<double>(step), decays + warmups);
    if (s < warmups) return (*warmup_target - initial_learning_rate) * (s / warmups) + initial_learning_rate;
    return decay(s - warmups, *warmup_target);
  }
};

/// initial_learning_rate / (1 + decay_rate · step / decay_steps) (the ratio floored with staircase).
struct InverseTimeDecay {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;
  double decay_rate = 0.0;
  bool staircase = false;
  void validate() const { schedule_detail::require_positive_steps(decay_steps); }
  [[nodiscard]] double operator()(std::int64_t step) const {
    return initial_learning_rate / (1 + decay_rate * schedule_detail::progress(step, decay_steps, staircase));
  }
};

/// (initial − end) · (1 − step / decay_steps)^power + end, the step held at decay_steps; with
/// cycle, decay_steps grows to the first multiple of itself at or above the step instead.
struct PolynomialDecay {
  double initial_learning_rate = 0.0;
  std::int64_t decay_steps = 0;
  double end_learning_rate = 0.0001;
  double power = 1.0;
  bool cycle = false;
  void validate() const { schedule_detail::require_positive_steps(decay_steps); }
  [[nodiscard]] double operator()(std::int64_t step) const {
    auto s = static_cast<double>(step);
    auto steps = static_cast<double>(decay_steps);
    if (cycle)
      steps *= step == 0 ? 1.0 : std::ceil(s / steps);
    else
      s = std::min(s, steps);
    return (initial_learning_rate - end_learning_rate) * std::pow(1 - s / steps, power) + end_learning_rate;
  }
};

}  // namespace schedules

/// What a learning-rate schedule is: a function of the updates done so far (Keras's
/// LearningRateSchedule.__call__(step)); a `validate()` it has runs when the optimizer takes it.
template <class S>
concept LearningRateSchedule =
    !std::is_arithmetic_v<S> && std::copy_constructible<S> && requires(const S& schedule, std::int64_t step) {
  { schedule(step) } -> std::convertible_to<double>;
};

/// An optimizer's learning rate: a number, settable (Keras's learning-rate variable), or a
/// schedule. Copies share it, as copies of an optimizer share its slots, so a callback's change
/// reaches the optimizer a traced step holds.
class LearningRate {
 public:
  LearningRate(double value) : state_(std::make_shared<State>()) { state_->constant = value; }  // NOLINT: implicit
  template <class S>
  requires(!std::same_as<S, LearningRate> && LearningRateSchedule<S>)  // not a copy (clang checks the copy first)
      LearningRate(S schedule)
      : state_(std::make_shared<State>()) {  // NOLINT: implicit, as Keras's argument
    if constexpr (requires { schedule.validate(); }) schedule.validate();
    state_->object = schedule;
    state_->schedule = [schedule = std::move(schedule)](std::int64_t step) {
      return static_cast<double>(schedule(step));
    };
  }

  /// The rate of the update after `step` updates: the schedule's value at that step, rounded to
  /// float32 as Keras's, or the number.
  [[nodiscard]] double at(std::int64_t step) const {
    if (state_->schedule) return static_cast<double>(static_cast<float>(state_->schedule(step)));
    return state_->constant.load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool is_schedule() const noexcept { return static_cast<bool>(state_->schedule); }
  /// The schedule as given, when it is an `S` (what a saved compile config describes); else null.
  template <class S>
  [[nodiscard]] const S* schedule_as() const noexcept {
    return std::any_cast<S>(&std::as_const(state_->object));
  }
  /// Sets the number (Keras's `optimizer.learning_rate = x`).
  /// @throws InvalidArgumentError for a learning rate that is a schedule (Keras's TypeError).
  void set(double value) const {
    if (is_schedule())
      throw InvalidArgumentError(
          "This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` constructor "
          "argument, hence its learning rate is not settable. If you need the learning rate to be settable, you "
          "should instantiate the optimizer with a float `learning_rate` argument.");
    state_->constant.store(value, std::memory_order_relaxed);
  }
  /// Whether `other` is this learning rate or a copy of it.
  [[nodiscard]] bool shares(const LearningRate& other) const noexcept { return state_ == other.state_; }
  /// The shared state's address: what a CUDA-graph capture checks has not changed.
  [[nodiscard]] const void* identity() const noexcept { return state_.get(); }

 private:
  struct State {
    std::atomic<double> constant{0.0};
    std::function<double(std::int64_t)> schedule;
    std::any object;  // the schedule itself, for schedule_as
  };
  std::shared_ptr<State> state_;
};

}  // namespace nn
}  // namespace devtensor
