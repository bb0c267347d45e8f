#pragma once
/// @file initializers.hpp
/// @brief Weight initializers (Keras's): GlorotUniform (Dense's kernel default), Zeros (bias
/// default), Ones, Constant, RandomUniform, RandomNormal. Seeded initializers give the same
/// values on every run and device, whatever the global seed (as Keras's); unseeded ones draw the
/// next seed of `random::set_seed`'s sequence.

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>

#include "devtensor/config.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/random.hpp"

namespace devtensor {
namespace nn {

/// Any callable from a shape to initial values.
using Initializer = std::function<Tensor<float>(const Shape&)>;

namespace initializers {

/// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)), the fans as Keras computes them.
struct GlorotUniform {
  std::optional<std::uint64_t> seed = std::nullopt;
  Tensor<float> operator()(const Shape& shape) const;
};
struct Zeros {
  Tensor<float> operator()(const Shape& shape) const;
};
struct Ones {
  Tensor<float> operator()(const Shape& shape) const;
};
struct Constant {
  float value = 0.0f;
  Tensor<float> operator()(const Shape& shape) const;
};
struct RandomUniform {
  double minval = -0.05;
  double maxval = 0.05;
  std::optional<std::uint64_t> seed = std::nullopt;
  Tensor<float> operator()(const Shape& shape) const;
};
struct RandomNormal {
  double mean = 0.0;
  double stddev = 0.05;
  std::optional<std::uint64_t> seed = std::nullopt;
  Tensor<float> operator()(const Shape& shape) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Tensor<float> GlorotUniform::operator()(const Shape& shape) const {
  // Keras's fans: a kernel's last two dimensions are its inputs and outputs, the ones before its
  // receptive field (a Conv2D kernel [kh, kw, in, out]: fan_in = kh·kw·in).
  double fan_in = 1.0, fan_out = 1.0;
  const std::size_t r = shape.rank();
  if (r == 1) fan_in = fan_out = static_cast<double>(shape[0]);
  if (r >= 2) {
    double receptive = 1.0;
    for (std::size_t d = 0; d + 2 < r; ++d) receptive *= static_cast<double>(shape[d]);
    fan_in = static_cast<double>(shape[r - 2]) * receptive;
    fan_out = static_cast<double>(shape[r - 1]) * receptive;
  }
  const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
  return random::uniform_with_seed<float>(shape, seed ? *seed : next_seed(), -limit, limit);
}

DEVTENSOR_DEFINITION Tensor<float> Zeros::operator()(const Shape& shape) const { return zeros<float>(shape); }

DEVTENSOR_DEFINITION Tensor<float> Ones::operator()(const Shape& shape) const { return ones<float>(shape); }

DEVTENSOR_DEFINITION Tensor<float> Constant::operator()(const Shape& shape) const { return fill<float>(shape, value); }

DEVTENSOR_DEFINITION Tensor<float> RandomUniform::operator()(const Shape& shape) const {
  return random::uniform_with_seed<float>(shape, seed ? *seed : next_seed(), minval, maxval);
}

DEVTENSOR_DEFINITION Tensor<float> RandomNormal::operator()(const Shape& shape) const {
  return random::normal_with_seed<float>(shape, seed ? *seed : next_seed(), mean, stddev);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace initializers

namespace utils {
/// Keras's `keras.utils.set_random_seed`: sets the global seed (`random::set_seed`), so every
/// unseeded initializer, Dropout, random op and shuffle draws the same values on every run, also
/// under strategies.
inline void set_random_seed(std::uint64_t seed) { random::set_seed(seed); }
}  // namespace utils
}  // namespace nn
}  // namespace devtensor
