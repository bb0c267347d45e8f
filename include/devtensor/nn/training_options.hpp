#pragma once
/// @file training_options.hpp
/// @brief What Keras's fit, evaluate and predict take (FitOptions, EvaluateOptions, PredictOptions)
/// and what fit returns (History).

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

namespace devtensor {
namespace nn {

struct FitOptions {
  int epochs = 1;
  /// For fit(x, y): examples per batch (a dataset is batched already).
  std::int64_t batch_size = 32;
  /// 0 silent, 1 progress bar, 2 one line per epoch.
  int verbose = 1;
  /// For fit(x, y): shuffle the examples every epoch.
  bool shuffle = true;
  std::optional<std::uint64_t> seed = std::nullopt;
  /// Steps per epoch; required for an infinitely repeating dataset.
  std::optional<std::int64_t> steps_per_epoch = std::nullopt;
  /// Where progress goes (default std::cout) and whether it is a terminal (default: detected).
  std::ostream* out = nullptr;
  std::optional<bool> interactive = std::nullopt;
};

struct EvaluateOptions {
  std::int64_t batch_size = 32;
  int verbose = 1;
  std::ostream* out = nullptr;
  std::optional<bool> interactive = std::nullopt;
};

struct PredictOptions {
  std::int64_t batch_size = 32;
};

/// What fit returns: the loss of every epoch (Keras's history.history["loss"]).
struct History {
  std::vector<int> epoch;
  std::vector<double> loss;
};

}  // namespace nn
}  // namespace devtensor
