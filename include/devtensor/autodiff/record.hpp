#pragma once
/// @file record.hpp
/// @brief What ops tell GradientTape: the recording half of reverse-mode autodiff.
///
/// Every differentiable op calls `autodiff::record<Op>(output, attrs, inputs...)` after it ran. With no
/// tape alive on the calling thread that is one thread-local test. Otherwise each active tape that
/// watches one of the inputs appends the op (name, inputs, outputs, attributes) to its record and
/// starts watching the outputs. The gradient functions are looked up by op name only when
/// GradientTape::gradient runs (autodiff/gradients.hpp), so this header knows no op.
/// Integer and bool tensors are never recorded: they have no gradient, as in TensorFlow.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace detail {

enum class DType : std::uint8_t { float32, float64, int32, int64, boolean };

template <Element T>
constexpr DType dtype_of() noexcept {
  if constexpr (std::same_as<T, float>) return DType::float32;
  else if constexpr (std::same_as<T, double>) return DType::float64;
  else if constexpr (std::same_as<T, std::int32_t>) return DType::int32;
  else if constexpr (std::same_as<T, std::int64_t>) return DType::int64;
  else return DType::boolean;
}

/// A recorded tensor without its element type: enough to rebuild the typed handle, identity
/// included.
struct TapeTensor {
  std::uint64_t id = 0;
  DType dtype = DType::float32;
  Shape shape;
  std::shared_ptr<TensorStorage> storage;

  template <Element T>
  [[nodiscard]] Tensor<T> as() const {
    return Tensor<T>(storage, shape, id);
  }
  [[nodiscard]] bool defined() const noexcept { return storage != nullptr; }
};

template <Element T>
TapeTensor tape_tensor(const Tensor<T>& t) {
  return {t.id(), dtype_of<T>(), t.shape(), t.storage()};
}

/// The attributes a gradient needs beyond inputs and outputs.
struct OpAttrs {
  std::vector<std::int64_t> list{};  // reduced axes, a permutation, slice begin, paddings
  std::int64_t axis = 0;           // concat / split axis
  bool transpose_a = false;
  bool transpose_b = false;
};

/// A user-supplied backward function (autodiff::record_operation): output gradients in, one
/// gradient per input out (undefined for "no gradient").
using CustomBackward = std::function<std::vector<TapeTensor>(const std::vector<TapeTensor>&)>;

struct OpRecord {
  std::string_view op;  // a static name (ops' `name`) or one kept alive in `custom_name`
  std::vector<TapeTensor> inputs;
  std::vector<TapeTensor> outputs;
  OpAttrs attrs;
  CustomBackward backward;
  std::string custom_name;
  bool has_custom_backward = false;
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
    return std::any_of(inputs.begin(), inputs.end(),
                       [this](const TapeTensor& t) { return watched.contains(t.id); });
  }
};

/// The tapes alive on this thread, innermost last.
inline std::vector<TapeState*>& active_tapes() noexcept {
  thread_local std::vector<TapeState*> tapes;
  return tapes;
}

/// Appends `record` to every recording tape that watches one of its inputs.
inline void record_on_tapes(std::shared_ptr<const OpRecord> record) {
  for (TapeState* tape : active_tapes()) {
    if (!tape->recording() || !tape->watches_any(record->inputs)) continue;
    for (const auto& out : record->outputs) tape->watched.insert(out.id);
    tape->records.push_back(record);
  }
}

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
  record->op = "ReadVariableOp";
  record->inputs = {handle};
  record->outputs = {value};
  record_on_tapes(std::move(record));
}

}  // namespace detail

namespace autodiff {

/// True while a tape on this thread could record (one thread-local test).
[[nodiscard]] inline bool tapes_active() noexcept { return !detail::active_tapes().empty(); }

/// Records op `Op` with its outputs and inputs on the tapes that watch an input. Only floating-point
/// ops are recorded.
template <class Op, Element T, Element... In>
void record(const std::vector<Tensor<T>>& outputs, detail::OpAttrs attrs, const Tensor<In>&... inputs) {
  if constexpr (Floating<T>) {
    if (!tapes_active()) return;
    auto r = std::make_shared<detail::OpRecord>();
    r->op = Op::name;
    r->inputs = {detail::tape_tensor(inputs)...};
    for (const auto& out : outputs) r->outputs.push_back(detail::tape_tensor(out));
    r->attrs = std::move(attrs);
    detail::record_on_tapes(std::move(r));
  }
}
template <class Op, Element T, Element... In>
void record(const Tensor<T>& output, detail::OpAttrs attrs, const Tensor<In>&... inputs) {
  if constexpr (Floating<T>) {
    if (!tapes_active()) return;
    record<Op>(std::vector<Tensor<T>>{output}, std::move(attrs), inputs...);
  }
}
/// Ops with a list of inputs (add_n, concat).
template <class Op, Element T>
void record_list(const Tensor<T>& output, detail::OpAttrs attrs, const std::vector<Tensor<T>>& inputs) {
  if constexpr (Floating<T>) {
    if (!tapes_active()) return;
    auto r = std::make_shared<detail::OpRecord>();
    r->op = Op::name;
    for (const auto& in : inputs) r->inputs.push_back(detail::tape_tensor(in));
    r->outputs = {detail::tape_tensor(output)};
    r->attrs = std::move(attrs);
    detail::record_on_tapes(std::move(r));
  }
}

/// The gradient of a user op: output gradients in, one gradient per input out (an undefined
/// Tensor for an input without one).
template <Floating T>
using BackwardFunction = std::function<std::vector<Tensor<T>>(const std::vector<Tensor<T>>& output_gradients)>;

/// Records a user-defined op (TensorFlow's `tape.record_operation`): `backward` turns the outputs'
/// gradients into the inputs'. Without `backward`, GradientTape::gradient reports that the op has no
/// gradient when the op lies on the path it differentiates.
template <Floating T>
void record_operation(std::string_view op_name, const std::vector<Tensor<T>>& inputs,
                      const std::vector<Tensor<T>>& outputs, BackwardFunction<T> backward = {}) {
  if (!tapes_active()) return;
  auto r = std::make_shared<detail::OpRecord>();
  r->custom_name = std::string(op_name);
  r->op = r->custom_name;
  for (const auto& in : inputs) r->inputs.push_back(detail::tape_tensor(in));
  for (const auto& out : outputs) r->outputs.push_back(detail::tape_tensor(out));
  if (backward) {
    r->has_custom_backward = true;
    r->backward = [fn = std::move(backward)](const std::vector<detail::TapeTensor>& dy) {
      std::vector<Tensor<T>> typed;
      for (const auto& g : dy) typed.push_back(g.as<T>());
      std::vector<detail::TapeTensor> out;
      for (const auto& g : fn(typed)) out.push_back(g.defined() ? detail::tape_tensor(g) : detail::TapeTensor{});
      return out;
    };
  }
  detail::record_on_tapes(std::move(r));
}

}  // namespace autodiff
}  // namespace devtensor
