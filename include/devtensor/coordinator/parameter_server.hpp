#pragma once
/// @file parameter_server.hpp
/// @brief A ps task's server: the variables placed on it, the optimizers' states that update
/// them, and the loop that answers requests until the chief ends the job.
///
/// Requests (distribute/multi_worker/ps_wire.hpp, ps_channel.hpp) come from the chief (create a variable, read
/// one, write one) and from workers (read all, write the updates of a scheduled function). A
/// worker's writes for one scheduled function arrive as one Write request tagged with the
/// function's closure id, and a closure id is applied at most once: a function rescheduled after its worker died
/// (having sent some of its writes, or all of them) updates every variable exactly once. Updates run here, with the
/// optimizer's fused kernels on this task's own variables and slots, as TensorFlow runs ResourceApply* on the ps
/// device; workers never wait for each other.

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/multi_worker/ps_channel.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::distribute::ps_detail {

/// A variable on this task, of one of the element types parameter servers hold.
using StoredVariable = std::variant<Variable<float>, Variable<double>, Variable<std::int32_t>, Variable<std::int64_t>>;

/// Calls `fn.template operator()<T>()` for the element type `dtype` names.
/// @throws UnimplementedError for bool.
template <class Fn>
decltype(auto) with_element_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::DT_FLOAT: return fn.template operator()<float>();
    case DType::DT_DOUBLE: return fn.template operator()<double>();
    case DType::DT_INT32: return fn.template operator()<std::int32_t>();
    case DType::DT_INT64: return fn.template operator()<std::int64_t>();
    case DType::DT_BOOL:
    case DType::DT_HALF:
    case DType::DT_BFLOAT16: break;
  }
  throw UnimplementedError(
      "Parameter servers hold float, double, int32 and int64 variables; a " + std::string(dtype_name(dtype)) +
      " variable cannot be placed on one (create it outside the strategy's scope, or as " +
      (dtype == DType::DT_BOOL ? "int32)" : "float32: mixed precision keeps variables in float32)"));
}

// The ps task's side: ParameterServerStrategy's constructor runs it (Note [The mpi component's
// compiled part]: a program's own translation units need none of it).
#if DEVTENSOR_MPI_DEFINITIONS

/// What a server runs for one update: the rate of this step (the rule's first hyperparameter,
/// from the sender's schedule), the gradients and the variables.
using ServerOptimizer =
    std::function<void(double, const std::vector<Tensor<float>>&, const std::vector<Variable<float>>&)>;

/// The optimizer that runs `rule`, with its own slots and step count (every worker's updates).
/// @throws UnimplementedError for a rule of another optimizer.
DEVTENSOR_MPI_DEFINITION ServerOptimizer make_optimizer(const OptimizerRule& rule) {
  const auto& h = rule.hyperparameters;
  if (rule.name == "SGD" && h.size() == 3) {
    nn::optimizers::SGD sgd{h[0], h[1], h[2] != 0.0};
    return [sgd](double rate, const auto& grads, const auto& vars) mutable {
      sgd.learning_rate = rate;
      sgd.apply_gradients(grads, vars);
    };
  }
  if (rule.name == "Adam" && h.size() == 5) {
    nn::optimizers::Adam adam{h[0], h[1], h[2], h[3], h[4] != 0.0};
    return [adam](double rate, const auto& grads, const auto& vars) mutable {
      adam.learning_rate = rate;
      adam.apply_gradients(grads, vars);
    };
  }
  throw UnimplementedError("A parameter server cannot run the update rule of optimizer '" + rule.name +
                           "' (known: SGD, Adam)");
}

class ParameterServer {
 public:
  /// `host`: this task's host CPU, where its variables and the values it receives live.
  ParameterServer(ps_wire::Channel& channel, int chief_rank, const Device& host)
      : channel_(channel), chief_(chief_rank), host_(host) {}

  /// Answers requests until the chief's Shutdown.
  void serve() {
    for (;;) {
      std::optional<ps_wire::Message> m;
      ps_wire::poll_until([&] { return (m = channel_.try_receive(MPI_ANY_SOURCE, ps_wire::kRequest)).has_value(); },
                          ps_wire::Clock::time_point::max());
      channel_.reap();  // replies sent: their hold on variables' buffers goes, and updates run in place again
      const int source = m->source;
      ps_wire::Reader in(std::move(*m), channel_);
      const auto sequence = in.get<std::uint64_t>();
      const auto kind = static_cast<ps_wire::RequestKind>(in.get<std::uint8_t>());
      if (kind == ps_wire::RequestKind::shutdown) {
        if (source == chief_) return;
        continue;  // only the chief ends the job
      }
      // The answer: its sequence number, "ok" and what the request asked for, written in place;
      // or, when it failed, the error instead of both.
      ps_wire::Writer out;
      out.put(sequence);
      const std::size_t status_at = out.size();
      ps_wire::put_status(out, nullptr);
      try {
        handle(kind, in, out);
      } catch (const Error& e) {
        out.truncate(status_at);
        ps_wire::put_status(out, &e);
      } catch (const std::exception& e) {
        out.truncate(status_at);
        const InternalError internal(e.what());
        ps_wire::put_status(out, &internal);
      }
      try {
        channel_.send(source, ps_wire::kReply, std::move(out));
      } catch (const Error&) {  // the requester died (MPI refused the send): nobody waits for this answer
      }
    }
  }

 private:
  ps_wire::Channel& channel_;
  int chief_;
  const Device& host_;
  std::map<std::uint64_t, StoredVariable> variables_;
  std::map<std::string, ServerOptimizer> optimizers_;
  std::unordered_set<std::uint64_t> applied_closures_;

  void handle(ps_wire::RequestKind kind, ps_wire::Reader& in, ps_wire::Writer& out) {
    switch (kind) {
      case ps_wire::RequestKind::create: return create(in);
      case ps_wire::RequestKind::read: return read(in, out);
      case ps_wire::RequestKind::write: return write(in);
      case ps_wire::RequestKind::shutdown: break;
    }
    throw InternalError("parameter server: unknown request");
  }

  void create(ps_wire::Reader& in) {
    const auto id = in.get<std::uint64_t>();
    const auto name = in.get_string();
    const auto value = in.get_tensor();
    if (variables_.contains(id)) return;  // the chief's retry of a create that was answered late
    variables_.emplace(id, with_element_type(value.dtype, [&]<class T>() -> StoredVariable {
                         return Variable<T>(value.to_tensor<T>(host_, "create"), {.name = name});
                       }));
  }

  StoredVariable& find(std::uint64_t id) {
    const auto it = variables_.find(id);
    if (it == variables_.end())
      throw NotFoundError("Parameter server: no variable #" + std::to_string(id) +
                          " here. Every task must create the same variables, in the same order, under the strategy's "
                          "scope; the chief creates them on the parameter servers.");
    return it->second;
  }

  /// Ids, or none for every variable on this task; answers (id, value) pairs.
  void read(ps_wire::Reader& in, ps_wire::Writer& out) {
    const auto count = in.get<std::uint32_t>();
    std::vector<std::uint64_t> ids;
    for (std::uint32_t i = 0; i < count; ++i) ids.push_back(in.get<std::uint64_t>());
    if (ids.empty())
      for (const auto& [id, v] : variables_) ids.push_back(id);
    out.put(static_cast<std::uint32_t>(ids.size()));
    for (auto id : ids) {
      out.put(id);
      std::visit([&](const auto& v) { out.put_tensor(v.read_value()); }, find(id));
    }
  }

  /// One write request: checked whole before anything changes, then applied (once per closure).
  void write(ps_wire::Reader& in) {
    struct Step {
      ps_wire::WriteKind kind = ps_wire::WriteKind::assign;
      std::uint64_t id = 0;
      ps_wire::WireTensor value;
      OptimizerRule rule;
      std::vector<std::pair<std::uint64_t, ps_wire::WireTensor>> gradients;
    };
    const auto closure = in.get<std::uint64_t>();
    const auto count = in.get<std::uint32_t>();
    std::vector<Step> steps;
    for (std::uint32_t i = 0; i < count; ++i) {
      Step s;
      s.kind = static_cast<ps_wire::WriteKind>(in.get<std::uint8_t>());
      if (s.kind == ps_wire::WriteKind::apply) {
        s.rule.name = in.get_string();
        const auto n = in.get<std::uint32_t>();
        for (std::uint32_t k = 0; k < n; ++k) s.rule.hyperparameters.push_back(in.get<double>());
        const auto vars = in.get<std::uint32_t>();
        for (std::uint32_t k = 0; k < vars; ++k) {
          const auto id = in.get<std::uint64_t>();
          s.gradients.emplace_back(id, in.get_tensor());
        }
      } else {
        s.id = in.get<std::uint64_t>();
        s.value = in.get_tensor();
      }
      steps.push_back(std::move(s));
    }
    if (closure != 0 && applied_closures_.contains(closure)) return;  // a rescheduled function's repeat
    for (const auto& s : steps) {
      if (s.kind == ps_wire::WriteKind::apply)
        for (const auto& [id, g] : s.gradients) check(id, g, s.kind);
      else
        check(s.id, s.value, s.kind);
    }
    for (auto& s : steps) {
      if (s.kind != ps_wire::WriteKind::apply) {
        std::visit(
            [&]<class T>(const Variable<T>& v) {
              if (s.kind == ps_wire::WriteKind::assign) {  // the bytes straight into the variable's buffer
                v.apply_update("AssignVariableOp",
                               [&](std::size_t, const Tensor<T>&, Tensor<T>& out) { s.value.copy_into(out); });
                return;
              }
              const Tensor<T> value = s.value.template to_tensor<T>(host_, "write");
              if constexpr (Numeric<T>) (s.kind == ps_wire::WriteKind::add ? v.assign_add(value) : v.assign_sub(value));
            },
            find(s.id));
        continue;
      }
      auto& optimizer = optimizers_[s.rule.key()];
      if (!optimizer) optimizer = make_optimizer(s.rule);
      std::vector<Tensor<float>> grads;
      std::vector<Variable<float>> vars;
      for (const auto& [id, g] : s.gradients) {
        vars.push_back(std::get<Variable<float>>(find(id)));
        grads.push_back(g.to_tensor<float>(host_, "apply_gradients"));
      }
      optimizer(s.rule.hyperparameters.front(), grads, vars);
    }
    if (closure != 0) applied_closures_.insert(closure);
  }

  /// The variable exists, and the value has its dtype and shape (an optimizer's: float).
  void check(std::uint64_t id, const ps_wire::WireTensor& value, ps_wire::WriteKind kind) {
    std::visit(
        [&]<class T>(const Variable<T>& var) {
          if (value.dtype != dtype_enum<T>() || (kind == ps_wire::WriteKind::apply && !std::is_same_v<T, float>))
            throw InvalidArgumentError("Parameter server: a value of another dtype for " + var.name());
          const Shape shape{std::span<const std::int64_t>(value.dims)};
          if (shape != var.shape())
            throw InvalidArgumentError("Parameter server: a value of shape " + shape.to_string() + " for " +
                                       var.name() + " of shape " + var.shape().to_string());
        },
        find(id));
  }
};

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::ps_detail
