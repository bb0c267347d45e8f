#pragma once
/// @file record.hpp
/// @brief What ops tell GradientTape: the recording half of reverse-mode autodiff.
///
/// run_op records every floating-point op it runs while a tape is alive on the calling thread
/// (with none, that is one thread-local test): each active tape that watches one of the inputs
/// appends the op (its type, inputs, outputs, attributes) to its record and starts watching the
/// outputs. A record names its op by type (`OpKind`, one object per op type), and the tape finds
/// the gradient there when it differentiates (autodiff/gradient_tape.hpp), so this header knows
/// no op. Integer and bool tensors are never recorded: they have no gradient, as in TensorFlow.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/thread_state.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
// The record format: what run_op writes and GradientTape reads (public: users' ops record too).
namespace autodiff {

/// A recorded tensor: the handle without its element type, identity included.
using TapeTensor = AnyTensor;

template <Element T>
TapeTensor tape_tensor(const Tensor<T>& t) {
  return TapeTensor(t);
}

struct OpRecord;
/// A gradient: the outputs' gradients in, one gradient per input out (undefined: none).
using ErasedGradient = std::vector<TapeTensor>(const OpRecord&, const std::vector<TapeTensor>& dy);

/// An op type at run time: its TensorFlow name and, for devtensor's own ops, the gradient that
/// GradientTape installs from the op's definition the first time it differentiates (found by the
/// op's type, one load, not by its name).
struct OpKind {
  std::string_view name;
  std::atomic<ErasedGradient*> gradient[4]{};  // per floating output type: gradient_slot
};
/// Where a gradient for outputs of element type `t` is kept (float 0, double 1, float16 2,
/// bfloat16 3).
constexpr std::size_t gradient_slot(DType t) noexcept {
  switch (t) {
    case DType::DT_DOUBLE: return 1;
    case DType::DT_HALF: return 2;
    case DType::DT_BFLOAT16: return 3;
    default: return 0;
  }
}

/// Which element types' gradients this program installed. GradientTape installs a type's the
/// first time it differentiates a target of that type, so that a program which trains in float
/// never compiles the double gradients (half of the gradient table's compile time, header-only).
inline constinit std::atomic<bool> gradients_installed[4]{};
/// Installs the gradients of every devtensor op for element type T; autodiff/gradients.hpp
/// defines it. A cast between floating types under a tape installs its input type's, so that
/// the tape can cross it into the other type (ops/shape_ops.hpp, cast).
template <class T>
struct GradientInstaller;
/// The one OpKind of op type Op.
template <class Op>
inline constinit OpKind op_kind{Op::name};

/// A user-supplied backward function (autodiff::record_operation): output gradients in, one
/// gradient per input out (undefined for "no gradient").
using CustomBackward = std::function<std::vector<TapeTensor>(const std::vector<TapeTensor>&)>;

struct OpRecord {
  std::string_view op;                 // the op's name (static, or kept alive in custom_name)
  const OpKind* kind = nullptr;        // devtensor's ops: their type (GradientTape finds the gradient)
  ErasedGradient* gradient = nullptr;  // users' ops defined as data: their gradient, when they have one
  std::shared_ptr<const void> attrs;   // the op's Attrs (its gradient knows their type)
  std::vector<TapeTensor> inputs;
  std::vector<TapeTensor> outputs;
  CustomBackward backward;  // autodiff::record_operation
  std::string custom_name;
  bool has_custom_backward = false;

  template <class Attrs>
  [[nodiscard]] const Attrs& attributes() const noexcept {
    static const Attrs defaults{};
    return attrs ? *static_cast<const Attrs*>(attrs.get()) : defaults;
  }
};

/// One GradientTape's state; GradientTape owns it and the thread's stack points at it.
struct TapeState {
  std::vector<std::shared_ptr<const OpRecord>> records;
  std::unordered_set<std::uint64_t> watched;  // ids of watched tensors and variable handles
  bool persistent = false;
  bool watch_accessed_variables = true;
  bool paused = false;  // stop_recording(), or while computing its own gradient
  bool used = false;    // a non-persistent tape computed its gradient

  [[nodiscard]] bool recording() const noexcept { return !paused && !(used && !persistent); }
  [[nodiscard]] bool watches_any(const std::vector<TapeTensor>& inputs) const {
    return std::any_of(inputs.begin(), inputs.end(), [this](const TapeTensor& t) { return watched.contains(t.id); });
  }
};

/// The tapes alive on this thread, innermost last.
inline std::vector<TapeState*>& active_tapes() noexcept { return this_thread_state().tapes; }

/// Appends `record` to every recording tape that watches one of its inputs.
void record_on_tapes(std::shared_ptr<const OpRecord> record);

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void record_on_tapes(std::shared_ptr<const OpRecord> record) {
  for (TapeState* tape : active_tapes()) {
    if (!tape->recording() || !tape->watches_any(record->inputs)) continue;
    for (const auto& out : record->outputs) tape->watched.insert(out.id);
    tape->records.push_back(record);
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace autodiff

namespace ops {
/// A variable's read (TensorFlow's ReadVariableOp): recorded, never run as a kernel; its gradient
/// passes the read's gradient to the variable.
struct ReadVariableOp : Builtin {
  static constexpr std::string_view name = "ReadVariableOp";
  struct Attrs {};
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {a.dy[0]};
  }
};
/// The ops only tapes see.
using TapeOnlyOps = TypeList<ReadVariableOp>;
}  // namespace ops

namespace autodiff {

/// A variable was read: tapes that watch accessed variables start watching its handle when it is
/// trainable; then the read is recorded as ReadVariableOp (handle -> value).
inline void record_variable_read(const TapeTensor& handle, const TapeTensor& value, bool trainable) {
  bool any = false;
  for (TapeState* tape : active_tapes()) {
    if (!tape->recording()) continue;
    if (trainable && tape->watch_accessed_variables) tape->watched.insert(handle.id);
    any = any || tape->watched.contains(handle.id);
  }
  if (!any) return;
  auto record = std::make_shared<OpRecord>();
  record->op = ops::ReadVariableOp::name;
  record->kind = &op_kind<ops::ReadVariableOp>;
  record->inputs = {handle};
  record->outputs = {value};
  record_on_tapes(std::move(record));
}

}  // namespace autodiff

namespace autodiff {

/// True while a tape on this thread could record (one thread-local test).
[[nodiscard]] inline bool tapes_active() noexcept { return !autodiff::active_tapes().empty(); }

/// The gradient of a user op: output gradients in, one gradient per input out (an undefined
/// Tensor for an input without one).
template <FloatingElement T>
using BackwardFunction = std::function<std::vector<Tensor<T>>(const std::vector<Tensor<T>>& output_gradients)>;

/// Records a user-defined op (TensorFlow's `tape.record_operation`): `backward` turns the outputs'
/// gradients into the inputs'. Without `backward`, GradientTape::gradient reports that the op has no
/// gradient when the op lies on the path it differentiates. (An op defined as data and run with
/// run_op is recorded by run_op, with the gradient of its definition.)
template <FloatingElement T>
void record_operation(std::string_view op_name, const std::vector<Tensor<T>>& inputs,
                      const std::vector<Tensor<T>>& outputs, BackwardFunction<T> backward = {}) {
  if (!tapes_active()) return;
  auto r = std::make_shared<autodiff::OpRecord>();
  r->custom_name = std::string(op_name);
  r->op = r->custom_name;
  for (const auto& in : inputs) r->inputs.push_back(autodiff::tape_tensor(in));
  for (const auto& out : outputs) r->outputs.push_back(autodiff::tape_tensor(out));
  if (backward) {
    r->has_custom_backward = true;
    r->backward = [fn = std::move(backward)](const std::vector<autodiff::TapeTensor>& dy) {
      std::vector<Tensor<T>> typed;
      for (const auto& g : dy) typed.push_back(g.as<T>());
      std::vector<autodiff::TapeTensor> out;
      for (const auto& g : fn(typed)) out.push_back(g.defined() ? autodiff::tape_tensor(g) : autodiff::TapeTensor{});
      return out;
    };
  }
  autodiff::record_on_tapes(std::move(r));
}

}  // namespace autodiff
}  // namespace devtensor
