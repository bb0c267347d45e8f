#pragma once
/// @file reset.hpp
/// @brief Test support: start from a fresh Context, as in a new process.
///
/// For tests only. Call it when no tensors, allocators or strategies created earlier are alive and
/// no other thread is using devtensor.

#include "devtensor/device/context.hpp"
#include "devtensor/ops/random.hpp"

namespace devtensor::testing {

/// Forgets configuration, device discovery and initialisation; soft placement back to true,
/// placement logging off, log levels and log_first_n counts back to their defaults, no global seed.
/// DEVTENSOR_SIMULATED_GPUS and TF_CPP_MIN_LOG_LEVEL are read again when next needed.
inline void reset_context() {
  Context::global().reset_for_testing();
  logging::reset_to_defaults();
  random::set_seed(std::nullopt);
}

}  // namespace devtensor::testing
