#pragma once
/// @file gradient_tape.hpp
/// @brief GradientTape: reverse-mode differentiation of what ran on this thread while it was alive.
///
///     dt::GradientTape tape;                     // records from here to its destruction
///     auto loss = dt::reduce_sum(dt::square(dt::matmul(x, w.value()) - y));
///     auto grads = tape.gradient(loss, std::vector{w});
///
/// Tapes nest (each records independently, so an outer tape can differentiate an inner tape's
/// gradient computation), watch trainable variables when they are read, and watch other floating
/// tensors through `watch`. A non-persistent tape computes one set of gradients; a persistent one
/// any number. Each backward op runs under a DeviceScope naming the device of its forward op.

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "devtensor/autodiff/gradients.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {

/// What gradient() returns for a source the target does not depend on.
enum class UnconnectedGradients {
  NONE,  // an empty Tensor (defined() == false), TensorFlow's None
  ZERO,  // zeros of the source's shape
};

struct GradientOptions {
  UnconnectedGradients unconnected_gradients = UnconnectedGradients::NONE;
};

class GradientTape {
 public:
  struct Options {
    bool persistent = false;
    bool watch_accessed_variables = true;
  };

  /// Starts recording on the calling thread.
  GradientTape() : GradientTape(Options{}) {}
  explicit GradientTape(Options options);
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;
  GradientTape(GradientTape&&) = delete;
  GradientTape& operator=(GradientTape&&) = delete;
  /// Stops recording. Destroy a tape on the thread that created it.
  ~GradientTape();

  /// Ops that use `t` from now on are recorded. Integer and bool tensors have no gradient and are
  /// ignored, as in TensorFlow.
  template <Element T>
  void watch(const Tensor<T>& t) {
    if constexpr (FloatingElement<T>) {
      require_defined(t.defined(), "watch");
      state_.watched.insert(t.id());
    }
  }
  /// Watches a variable (needed for non-trainable ones or with watch_accessed_variables = false).
  template <Element T>
  void watch(const Variable<T>& v) {
    if constexpr (FloatingElement<T>) state_.watched.insert(v.handle_id());
  }

  /// RAII pause: ops run while the returned guard lives are not recorded by this tape.
  class [[nodiscard]] StopRecording {
   public:
    explicit StopRecording(autodiff::TapeState& state) : state_(state), was_paused_(state.paused) {
      state_.paused = true;
    }
    StopRecording(const StopRecording&) = delete;
    StopRecording& operator=(const StopRecording&) = delete;
    ~StopRecording() { state_.paused = was_paused_; }

   private:
    autodiff::TapeState& state_;
    bool was_paused_;
  };
  [[nodiscard]] StopRecording stop_recording() { return StopRecording(state_); }

  /// Forgets everything recorded and watched; the tape records afresh.
  void reset() {
    state_.records.clear();
    state_.watched.clear();
    state_.used = false;
  }

  [[nodiscard]] bool persistent() const noexcept { return state_.persistent; }
  /// Number of ops recorded (for tests and benchmarks).
  [[nodiscard]] std::size_t recorded_ops() const noexcept { return state_.records.size(); }

  /// d target / d source for each source (summed over the target's elements, as TensorFlow does).
  /// @throws FailedPreconditionError for a second call on a non-persistent tape;
  ///         InvalidArgumentError when the target was not recorded by this tape or is empty;
  ///         UnimplementedError naming an op on the path that has no gradient.
  /// (Compiled once in compiled mode for float and double: Note [Explicit instantiations].)
  template <FloatingElement T, FloatingElement U>
  [[nodiscard]] std::vector<Tensor<U>> gradient(const Tensor<T>& target, const std::vector<Tensor<U>>& sources,
                                                GradientOptions options = {});
  template <FloatingElement T, FloatingElement U>
  [[nodiscard]] std::vector<Tensor<U>> gradient(const Tensor<T>& target, const std::vector<Variable<U>>& sources,
                                                GradientOptions options = {});
  template <FloatingElement T, FloatingElement U>
  [[nodiscard]] Tensor<U> gradient(const Tensor<T>& target, const Tensor<U>& source, GradientOptions options = {}) {
    return gradient(target, std::vector<Tensor<U>>{source}, options).front();
  }
  template <FloatingElement T, FloatingElement U>
  [[nodiscard]] Tensor<U> gradient(const Tensor<T>& target, const Variable<U>& source, GradientOptions options = {}) {
    return gradient(target, std::vector<Variable<U>>{source}, options).front();
  }
  /// With the target's own gradient given (a vector-Jacobian product) instead of ones.
  /// @throws InvalidArgumentError when `output_gradient`'s shape differs from the target's.
  template <FloatingElement T, FloatingElement U>
  [[nodiscard]] std::vector<Tensor<U>> gradient(const Tensor<T>& target, const std::vector<Tensor<U>>& sources,
                                                const Tensor<T>& output_gradient, GradientOptions options = {});

 private:
  autodiff::TapeState state_;
  std::vector<autodiff::TapeState*>* tapes_ = &autodiff::active_tapes();  // the creating thread's stack

  static void require_defined(bool defined, std::string_view what) {
    if (!defined)
      throw InvalidArgumentError("GradientTape::" + std::string(what) +
                                 " got an undefined tensor (default-constructed or moved from)");
  }

  template <FloatingElement U>
  static autodiff::TapeTensor variable_source(const Variable<U>& v) {
    if (!v.defined()) throw InvalidArgumentError("GradientTape::gradient got an empty Variable");
    autodiff::TapeTensor t;
    t.id = v.handle_id();
    t.dtype = dtype_enum<U>();
    t.shape = v.shape();
    return t;
  }

  /// The gradients as U's handles (an unconnected source's stays undefined).
  template <FloatingElement U>
  static std::vector<Tensor<U>> typed(const std::vector<autodiff::TapeTensor>& grads) {
    std::vector<Tensor<U>> out;
    out.reserve(grads.size());
    for (const auto& g : grads) out.push_back(g.defined() ? g.as<U>() : Tensor<U>());
    return out;
  }

  // The backward pass's helpers (compiled once in compiled mode: their bodies instantiate ops for
  // both floating types, which a program that never differentiates would otherwise pay for).
  /// Adds two gradients of the same tensor.
  static autodiff::TapeTensor accumulate(const autodiff::TapeTensor& a, const autodiff::TapeTensor& b);
  static autodiff::TapeTensor zeros_like(const autodiff::TapeTensor& t);
  static autodiff::TapeTensor ones_like(const autodiff::TapeTensor& t);
  /// `value` in the shape symbolic tensor `t` has when its graph runs.
  static autodiff::TapeTensor filled_like(const autodiff::TapeTensor& t, double value);
  /// `grads` with the unconnected sources' gradients as `options` asks: zeros of the source's
  /// shape and dtype (on the current device), or left undefined.
  static std::vector<autodiff::TapeTensor> unconnected(std::vector<autodiff::TapeTensor> grads,
                                                       const std::vector<autodiff::TapeTensor>& sources,
                                                       GradientOptions options);

  template <FloatingElement T>
  std::vector<autodiff::TapeTensor> compute(const Tensor<T>& target, const std::vector<autodiff::TapeTensor>& sources,
                                            const std::optional<autodiff::TapeTensor>& output_gradient) {
    autodiff_detail::install_builtin_gradients<T>();  // T's, once per program
    return compute_erased(target.defined() ? autodiff::tape_tensor(target) : autodiff::TapeTensor{}, sources,
                          output_gradient);
  }
  /// The backward pass, on type-erased tensors: one copy per program (compiled once in compiled
  /// mode, Note [Compiled mode]).
  std::vector<autodiff::TapeTensor> compute_erased(const autodiff::TapeTensor& target,
                                                   const std::vector<autodiff::TapeTensor>& sources,
                                                   const std::optional<autodiff::TapeTensor>& output_gradient);
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
// Not inline: the library's explicit instantiations are the only copies (Note [Explicit instantiations]).
template <FloatingElement T, FloatingElement U>
std::vector<Tensor<U>> GradientTape::gradient(const Tensor<T>& target, const std::vector<Tensor<U>>& sources,
                                              GradientOptions options) {
  std::vector<autodiff::TapeTensor> ids;
  for (const auto& s : sources) {
    require_defined(s.defined(), "gradient (a source)");
    ids.push_back(autodiff::tape_tensor(s));
  }
  return typed<U>(unconnected(compute(target, ids, std::nullopt), ids, options));
}
template <FloatingElement T, FloatingElement U>
std::vector<Tensor<U>> GradientTape::gradient(const Tensor<T>& target, const std::vector<Variable<U>>& sources,
                                              GradientOptions options) {
  std::vector<autodiff::TapeTensor> ids;
  for (const auto& v : sources) ids.push_back(variable_source(v));
  return typed<U>(unconnected(compute(target, ids, std::nullopt), ids, options));
}
template <FloatingElement T, FloatingElement U>
std::vector<Tensor<U>> GradientTape::gradient(const Tensor<T>& target, const std::vector<Tensor<U>>& sources,
                                              const Tensor<T>& output_gradient, GradientOptions options) {
  require_defined(output_gradient.defined(), "gradient (output_gradient)");
  if (output_gradient.shape() != target.shape())
    throw InvalidArgumentError("Mismatch between the target's shape " + target.shape().to_string() +
                               " and output_gradient's shape " + output_gradient.shape().to_string());
  std::vector<autodiff::TapeTensor> ids;
  for (const auto& s : sources) ids.push_back(autodiff::tape_tensor(s));
  return typed<U>(unconnected(compute(target, ids, autodiff::tape_tensor(output_gradient)), ids, options));
}

DEVTENSOR_DEFINITION GradientTape::GradientTape(Options options) {
  state_.persistent = options.persistent;
  state_.watch_accessed_variables = options.watch_accessed_variables;
  tapes_->push_back(&state_);
}
DEVTENSOR_DEFINITION GradientTape::~GradientTape() {
  tapes_->erase(std::remove(tapes_->begin(), tapes_->end(), &state_), tapes_->end());
}

DEVTENSOR_DEFINITION autodiff::TapeTensor GradientTape::accumulate(const autodiff::TapeTensor& a,
                                                                   const autodiff::TapeTensor& b) {
  return with_floating_type(a.dtype, [&]<class T>() { return autodiff::tape_tensor(add(a.as<T>(), b.as<T>())); });
}
DEVTENSOR_DEFINITION autodiff::TapeTensor GradientTape::zeros_like(const autodiff::TapeTensor& t) {
  if (!t.shape.is_fully_defined()) [[unlikely]]  // a graph's unknown dimension: shaped when it runs
    return filled_like(t, 0.0);
  DeviceScope scope(t.storage->device->spec);
  return with_floating_type(t.dtype, [&]<class T>() { return autodiff::tape_tensor(zeros<T>(t.shape)); });
}
DEVTENSOR_DEFINITION autodiff::TapeTensor GradientTape::ones_like(const autodiff::TapeTensor& t) {
  if (!t.shape.is_fully_defined()) [[unlikely]]
    return filled_like(t, 1.0);
  DeviceScope scope(t.storage->device->spec);
  return with_floating_type(t.dtype, [&]<class T>() { return autodiff::tape_tensor(ones<T>(t.shape)); });
}
DEVTENSOR_DEFINITION autodiff::TapeTensor GradientTape::filled_like(const autodiff::TapeTensor& t, double value) {
  return with_floating_type(t.dtype, [&]<class T>() {
    return autodiff::tape_tensor(mul(devtensor::ones_like(t.as<T>()), scalar<T>(static_cast<T>(value))));
  });
}

DEVTENSOR_DEFINITION std::vector<autodiff::TapeTensor> GradientTape::unconnected(
    std::vector<autodiff::TapeTensor> grads, const std::vector<autodiff::TapeTensor>& sources,
    GradientOptions options) {
  if (options.unconnected_gradients != UnconnectedGradients::ZERO) return grads;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) continue;
    const Shape& shape = sources[i].shape;
    grads[i] = with_floating_type(sources[i].dtype, [&]<class T>() { return autodiff::tape_tensor(zeros<T>(shape)); });
  }
  return grads;
}

DEVTENSOR_DEFINITION std::vector<autodiff::TapeTensor> GradientTape::compute_erased(
    const autodiff::TapeTensor& target, const std::vector<autodiff::TapeTensor>& sources,
    const std::optional<autodiff::TapeTensor>& output_gradient) {
  if (state_.used && !state_.persistent)
    throw FailedPreconditionError(
        "A non-persistent GradientTape can only be used to compute one set of gradients (or "
        "jacobians). Create it with GradientTape({.persistent = true}) to call gradient() again.");
  require_defined(target.defined(), "gradient (the target)");
  const std::uint64_t target_id = target.id;
  const bool produced = std::any_of(state_.records.begin(), state_.records.end(), [&](const auto& r) {
    return std::any_of(r->outputs.begin(), r->outputs.end(), [&](const auto& o) { return o.id == target_id; });
  });
  const bool is_source = std::any_of(sources.begin(), sources.end(), [&](const auto& s) { return s.id == target_id; });
  if (!produced && !is_source)
    throw InvalidArgumentError("GradientTape::gradient: the target (shape " + target.shape.to_string() +
                               ") was not recorded by this tape. Compute it while the tape is alive from trainable "
                               "variables or from tensors passed to tape.watch(); ops on integer tensors and ops run "
                               "under stop_recording() are not recorded.");
  state_.used = true;
  const bool was_paused = state_.paused;
  state_.paused = true;  // this tape does not record its own backward pass; outer tapes do
  struct Resume {
    autodiff::TapeState& s;
    bool paused;
    ~Resume() { s.paused = paused; }
  } resume{state_, was_paused};

  std::unordered_map<std::uint64_t, autodiff::TapeTensor> grads;
  grads.emplace(target_id, output_gradient ? *output_gradient : ones_like(target));
  // Records are in execution order, so walking them backwards meets every consumer of a tensor
  // before its producer.
  for (auto it = state_.records.rbegin(); it != state_.records.rend(); ++it) {
    const autodiff::OpRecord& record = **it;
    const bool reached =
        std::any_of(record.outputs.begin(), record.outputs.end(), [&](const auto& o) { return grads.contains(o.id); });
    if (!reached) continue;
    std::vector<autodiff::TapeTensor> dy;
    for (const auto& o : record.outputs) {
      auto found = grads.find(o.id);
      dy.push_back(found != grads.end() ? found->second : zeros_like(o));
    }
    std::vector<autodiff::TapeTensor> dx;
    {
      DeviceScope scope(record.outputs.front().storage->device->spec);  // parsed once, at discovery
      if (record.has_custom_backward) {
        dx = record.backward(dy);
      } else if (auto* op_gradient = autodiff_detail::gradient_for(record)) {
        dx = op_gradient(record, dy);
      } else if (const auto slot = autodiff::gradient_slot(record.outputs.front().dtype);
                 record.kind && !autodiff::gradients_installed[slot].load(std::memory_order_acquire)) {
        const std::string type(
            with_floating_type(record.outputs.front().dtype, []<class T>() { return dtype_enum_name<T>(); }));
        throw UnimplementedError(
            "The tape reached operation '" + std::string(record.op) + "' on " + type +
            " tensors, but this program has not compiled devtensor's " + type +
            " gradients: it differentiates targets of other types only, and the " + type +
            " ops came onto the tape in a file that does not include devtensor/autodiff/gradients.hpp. "
            "Include <devtensor/devtensor.hpp> in the file that casts between floating types, or "
            "build in compiled mode (the CMake target devtensor::devtensor).");
      } else {
        throw UnimplementedError("No gradient defined for operation '" + std::string(record.op) +
                                 "' (op type: " + std::string(record.op) +
                                 "). Record it with autodiff::record_operation and a backward "
                                 "function, or keep it off the path from the sources to the target.");
      }
    }
    if (dx.size() != record.inputs.size())
      throw InternalError("The gradient of " + std::string(record.op) + " returned " + std::to_string(dx.size()) +
                          " gradients for " + std::to_string(record.inputs.size()) + " inputs");
    for (std::size_t i = 0; i < dx.size(); ++i) {
      if (!dx[i].defined()) continue;
      if (dx[i].shape != record.inputs[i].shape)
        throw InternalError("The gradient of " + std::string(record.op) + " for input " + std::to_string(i) +
                            " has shape " + dx[i].shape.to_string() + ", expected " +
                            record.inputs[i].shape.to_string());
      auto [slot, inserted] = grads.try_emplace(record.inputs[i].id, dx[i]);
      if (!inserted) slot->second = accumulate(slot->second, dx[i]);
    }
  }
  std::vector<autodiff::TapeTensor> out;
  for (const auto& s : sources) {
    auto found = grads.find(s.id);
    out.push_back(found != grads.end() ? found->second : autodiff::TapeTensor{});
  }
  if (!state_.persistent) state_.records.clear();  // release what the tape kept alive
  return out;
}
#endif

}  // namespace devtensor
