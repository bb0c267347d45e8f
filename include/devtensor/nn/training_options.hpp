#pragma once
/// @file training_options.hpp
/// @brief What Keras's compile, fit, evaluate and predict take (CompileOptions, FitOptions,
/// EvaluateOptions, PredictOptions) and what fit returns (History).

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

namespace devtensor {
namespace nn {

/// What compile() takes besides the loss and the optimizer.
struct CompileOptions {
  /// Run fit's, evaluate's and predict's steps op by op. By default (false, as Keras) each step is
  /// traced into a graph once per batch shape and replayed (graph/function.hpp; a program that
  /// does not include it runs them eagerly): the same results, bit for bit, from fused kernels.
  bool run_eagerly = false;
};

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
