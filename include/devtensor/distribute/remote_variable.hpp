#pragma once
/// @file remote_variable.hpp
/// @brief Variables whose values live in another process (a parameter server's), and the one
/// thing the optimizers need of them: their update rule sent where the values are.
///
/// TensorFlow's ParameterServerStrategy places variables on ps tasks and runs an optimizer's
/// update there (ResourceApply* on the ps device). devtensor's optimizers see such a variable
/// through this interface only, so nn/ knows nothing of MPI: the parameter-server strategy
/// (coordinator/) implements it.

#include <string>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::distribute {

/// An optimizer's update rule as data: its name and hyperparameters, what a parameter server
/// needs to run the same fused update on its own copy of the variables (with its own slots).
/// SGD: {learning_rate, momentum, nesterov (0/1)}; Adam: {learning_rate, beta_1, beta_2,
/// epsilon, amsgrad (0/1)}.
struct OptimizerRule {
  std::string name;
  std::vector<double> hyperparameters;

  /// The rule's identity: rules equal but for the learning rate (the first hyperparameter, which a
  /// schedule changes every step) share one optimizer state (slots, step count) on a server.
  [[nodiscard]] std::string key() const {
    std::string out = name;
    for (std::size_t i = 1; i < hyperparameters.size(); ++i) out += " " + std::to_string(hyperparameters[i]);
    return out;
  }
};

/// Where remote variables live: applies an update rule to them there.
class RemoteVariableHost {
 public:
  virtual ~RemoteVariableHost() = default;
  virtual void apply_gradients(const OptimizerRule& rule, const std::vector<Tensor<float>>& grads,
                               const std::vector<Variable<float>>& vars) = 0;
};

/// Implemented, beside VariableImpl, by the implementation of a variable that lives elsewhere.
class RemoteVariable {
 public:
  virtual ~RemoteVariable() = default;
  [[nodiscard]] virtual RemoteVariableHost& host() const noexcept = 0;
};

/// Whether `v` lives in another process (a parameter server's).
template <class T>
[[nodiscard]] bool is_remote(const Variable<T>& v) {
  return v.defined() && dynamic_cast<const RemoteVariable*>(&v.implementation()) != nullptr;
}

/// The host of `vars` when the first is remote, else nullptr (every variable local).
/// @throws InvalidArgumentError when remote and local variables, or two hosts, are mixed.
inline RemoteVariableHost* remote_host_of(const std::vector<Variable<float>>& vars) {
  const auto host_of = [](const Variable<float>& v) -> RemoteVariableHost* {
    const auto* remote = v.defined() ? dynamic_cast<const RemoteVariable*>(&v.implementation()) : nullptr;
    return remote ? &remote->host() : nullptr;
  };
  if (vars.empty()) return nullptr;
  RemoteVariableHost* host = host_of(vars.front());
  if (!host) return nullptr;
  for (const auto& v : vars)
    if (host_of(v) != host)
      throw InvalidArgumentError("apply_gradients: " + (v.defined() ? v.name() : std::string("an empty variable")) +
                                 " was not created in the scope of the parameter-server strategy that holds " +
                                 vars.front().name() + "; one update covers the variables of one strategy");
  return host;
}

}  // namespace devtensor::distribute
