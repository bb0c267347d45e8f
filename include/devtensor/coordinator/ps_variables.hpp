#pragma once
/// @file ps_variables.hpp
/// @brief The variables of parameter-server training: a variable held by one ps task (with a
/// local copy), a ShardedVariable split along its first axis over several, TensorFlow's
/// partitioners that decide the split, and the strategy's variable creator.
///
/// Shards are placed like whole variables, round-robin over the ps tasks by creation order, and
/// named "<name>/part_<i>" (TensorFlow's). TensorFlow's "div" split: with n shards of a first
/// dimension d, the first d % n shards have d / n + 1 rows and the others d / n. A sharded
/// variable reads as the shards' values concatenated and writes each shard its rows; an
/// optimizer's update sends each shard its rows of the gradient.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/coordinator/parameter_server.hpp"
#include "devtensor/coordinator/ps_state.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/multi_worker/ps_wire.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::distribute {

/// TensorFlow's tf.distribute.experimental.partitioners.
namespace partitioners {

/// Shards of at least `min_shard_bytes` each, at most `max_shards`: the first axis gets
/// max(1, min(d0, max_shards, ceil(bytes / min_shard_bytes))) shards.
struct MinSizePartitioner {
  std::int64_t min_shard_bytes = 256 << 10;
  std::int64_t max_shards = 1;
  std::int64_t bytes_per_string = 16;

  /// @throws InvalidArgumentError for a non-positive size or count (TensorFlow's texts).
  MinSizePartitioner(std::int64_t min_bytes = 256 << 10, std::int64_t max_count = 1, std::int64_t string_bytes = 16)
      : min_shard_bytes(min_bytes), max_shards(max_count), bytes_per_string(string_bytes) {
    if (min_shard_bytes < 1)
      throw InvalidArgumentError("Argument `min_shard_bytes` must be positive. Received: " +
                                 std::to_string(min_shard_bytes));
    if (max_shards < 1)
      throw InvalidArgumentError("Argument `max_shards` must be positive. Received: " + std::to_string(max_shards));
    if (bytes_per_string < 1)
      throw InvalidArgumentError("Argument `bytes_per_string` must be positive. Received: " +
                                 std::to_string(bytes_per_string));
  }
  [[nodiscard]] std::vector<std::int64_t> operator()(const Shape& shape, DType dtype) const {
    std::vector<std::int64_t> out(shape.rank(), 1);
    if (out.empty()) return out;
    const double bytes = static_cast<double>(shape.num_elements()) * static_cast<double>(element_bytes(dtype));
    const auto wanted = static_cast<std::int64_t>(std::ceil(bytes / static_cast<double>(min_shard_bytes)));
    out[0] = std::max<std::int64_t>(1, std::min({shape[0], max_shards, wanted}));
    return out;
  }

 private:
  static std::size_t element_bytes(DType dtype) {
    switch (dtype) {
      case DType::DT_DOUBLE:
      case DType::DT_INT64: return 8;
      case DType::DT_BOOL: return 1;
      case DType::DT_HALF:
      case DType::DT_BFLOAT16: return 2;
      case DType::DT_FLOAT:
      case DType::DT_INT32: break;
    }
    return 4;
  }
};

/// `num_shards` shards (at most one per row) along the first axis.
struct FixedShardsPartitioner {
  std::int64_t num_shards = 1;

  explicit FixedShardsPartitioner(std::int64_t shards) : num_shards(shards) {}
  [[nodiscard]] std::vector<std::int64_t> operator()(const Shape& shape, DType) const {
    std::vector<std::int64_t> out(shape.rank(), 1);
    if (!out.empty()) out[0] = std::min(num_shards, shape[0]);
    return out;
  }
};

}  // namespace partitioners

namespace ps_detail {

/// A remote variable's pieces on the ps tasks, in order, with their rows along the first axis:
/// one for a whole variable, one per shard for a ShardedVariable.
class RemoteParts {
 public:
  virtual ~RemoteParts() = default;
  [[nodiscard]] virtual std::vector<std::pair<const RemoteSlot*, std::int64_t>> parts() const = 0;
};

/// `t` cut along its first axis into pieces of `rows` rows (host tensors).
template <Element T>
std::vector<Tensor<T>> split_rows(const Tensor<T>& t, const std::vector<std::int64_t>& rows) {
  const auto values = t.to_vector();
  const auto per_row = static_cast<std::size_t>(t.shape()[0] == 0 ? 0 : t.num_elements() / t.shape()[0]);
  auto dims = t.shape().dims_vector();
  std::vector<Tensor<T>> out;
  std::size_t at = 0;
  for (auto r : rows) {
    dims[0] = r;
    const std::size_t n = static_cast<std::size_t>(r) * per_row;
    out.push_back(tensor_from_host(std::vector<T>(values.begin() + static_cast<std::ptrdiff_t>(at),
                                                  values.begin() + static_cast<std::ptrdiff_t>(at + n)),
                                   Shape(dims), t.device_info(), "Split"));
    at += n;
  }
  return out;
}
/// The pieces joined along their first axis (host tensors).
template <Element T>
Tensor<T> concat_rows(const std::vector<Tensor<T>>& pieces) {
  std::vector<T> values;
  auto dims = pieces.front().shape().dims_vector();
  dims[0] = 0;
  for (const auto& p : pieces) {
    const auto v = p.to_vector();
    values.insert(values.end(), v.begin(), v.end());
    dims[0] += p.shape()[0];
  }
  return tensor_from_host(values, Shape(dims), pieces.front().device_info(), "ConcatV2");
}

/// A variable created in the strategy's scope: held by a ps task, with a local copy (the
/// worker's values of the running function; the chief's last read).
template <Element T>
class PsVariable final : public VariableImpl<T>, public RemoteVariable, public RemoteSlot, public RemoteParts {
 public:
  PsVariable(std::shared_ptr<State> state, VariableInfo info, const Tensor<T>& initial, std::uint64_t id, int ps)
      : VariableImpl<T>(info),
        RemoteSlot(id, ps),
        state_(std::move(state)),
        local_(std::move(info), initial, state_->host) {}

  [[nodiscard]] RemoteVariableHost& host() const noexcept override { return *state_; }
  [[nodiscard]] std::size_t num_components() const noexcept override { return 1; }
  /// The local copy, without a request (shape queries cost nothing; value() reads the ps task's).
  [[nodiscard]] Tensor<T> component(std::size_t i) const override {
    this->check_component(i);
    return local_.read();
  }
  [[nodiscard]] std::vector<std::pair<const RemoteSlot*, std::int64_t>> parts() const override {
    const Shape shape = local_.read().shape();  // (a copy: read() returns a temporary)
    return {{this, shape.rank() == 0 ? 1 : shape[0]}};
  }
  [[nodiscard]] std::string component_name(std::size_t i) const override {
    this->check_component(i);
    return this->info().name;
  }
  [[nodiscard]] const Device& device() const noexcept override { return local_.device(); }
  [[nodiscard]] const Device& read_device() const override { return local_.device(); }

  /// The chief reads the ps task's value; a worker its local copy.
  [[nodiscard]] Tensor<T> read() const override {
    if (current_closure_writes()) state_->ensure_fresh(*this);  // a worker's function: this step's value
    if (!state_->chief() || current_closure_writes()) return local_.read();
    auto r = state_->request(ps(), ps_wire::RequestKind::read, "read",
                             [&](ps_wire::Writer& w) { w.put<std::uint32_t>(1).put(id()); });
    (void)r.template get<std::uint32_t>();
    (void)r.template get<std::uint64_t>();
    return r.get_tensor().template to_tensor<T>(local_.device(), "read");
  }
  /// Sent to the ps task (at once on the chief; when the function returns on a worker, whose
  /// local copy takes the write now: the function reads what it wrote).
  void assign(const Tensor<T>& value) override {
    if (!send(ps_wire::WriteKind::assign, value, "assign")) return;
    local_.assign(value);
    fresh_in = state_->generation();  // this step's value now: a later read must not fetch over it
  }
  void update(VariableUpdate kind, const Tensor<T>& delta) override {
    if (current_closure_writes()) state_->ensure_fresh(*this);  // the delta applies to this step's value
    if (send(kind == VariableUpdate::add ? ps_wire::WriteKind::add : ps_wire::WriteKind::sub, delta,
             kind == VariableUpdate::add ? "assign_add" : "assign_sub"))
      local_.update(kind, delta);
  }
  /// An update kernel run here, on the current value, and its result assigned (the optimizers
  /// send their rule instead: see remote_variable.hpp).
  void apply_update(std::string_view op, typename VariableImpl<T>::UpdateKernel kernel) override {
    const Tensor<T> value = read();
    auto out = Tensor<T>::empty(value.shape(), value.device_info(), op);
    kernel(0, value, out);
    assign(out);
  }
  /// The values a ps task sent, copied once into the local copy (in place when nothing else holds it).
  void refresh(const ps_wire::WireTensor& value) const override {
    const Shape shape{std::span<const std::int64_t>(value.dims)};
    if (value.dtype != dtype_enum<T>() || shape != local_.read().shape())
      throw InvalidArgumentError(
          "The ps task's variable #" + std::to_string(id()) + " (" + shape.to_string() + ") is not this task's " +
          this->info().name + " (" + local_.read().shape().to_string() +
          "): every task must create the same variables, in the same order, in the strategy's scope");
    if constexpr (std::is_same_v<T, bool>) {
      local_.assign(value.template to_tensor<T>(local_.device(), "refresh"));
    } else {
      local_.apply_update("Recv", [&](std::size_t, const Tensor<T>&, Tensor<T>& out) { value.copy_into(out); });
    }
  }

 private:
  std::shared_ptr<State> state_;
  /// A worker's values for the running function. On the chief only its shape and device count:
  /// the chief reads and writes the ps task's values.
  mutable LocalVariable<T> local_;  // a cache of the ps task's value

  /// The write, into the running function's writes (true: a worker's) or to the ps task at once.
  bool send(ps_wire::WriteKind kind, const Tensor<T>& value, std::string_view what) {
    std::optional<ClosureWrites> now;
    auto& writes = state_->writes_for(now, what);
    auto& w = writes.per_ps[static_cast<std::size_t>(ps())];
    w.put(static_cast<std::uint8_t>(kind)).put(id()).put_tensor(value);
    ++writes.counts[static_cast<std::size_t>(ps())];
    if (!now) return true;
    state_->commit(0, *now);
    return false;
  }
};

/// TensorFlow's ShardedVariable: the shards, each a PsVariable on its own ps task.
template <Element T>
class ShardedVariable final : public VariableImpl<T>, public RemoteVariable, public RemoteParts {
 public:
  ShardedVariable(std::shared_ptr<State> state, VariableInfo info, std::vector<std::shared_ptr<PsVariable<T>>> shards)
      : VariableImpl<T>(std::move(info)), state_(std::move(state)), shards_(std::move(shards)) {}

  [[nodiscard]] RemoteVariableHost& host() const noexcept override { return *state_; }
  [[nodiscard]] std::size_t num_components() const noexcept override { return 1; }
  [[nodiscard]] Tensor<T> component(std::size_t i) const override {
    this->check_component(i);
    std::vector<Tensor<T>> pieces;
    for (const auto& s : shards_) pieces.push_back(s->component(0));
    return concat_rows(pieces);
  }
  [[nodiscard]] std::string component_name(std::size_t i) const override {
    this->check_component(i);
    return this->info().name;
  }
  [[nodiscard]] const Device& device() const noexcept override { return shards_.front()->device(); }
  [[nodiscard]] const Device& read_device() const override { return shards_.front()->read_device(); }
  [[nodiscard]] Tensor<T> read() const override {
    std::vector<Tensor<T>> pieces;
    for (const auto& s : shards_) pieces.push_back(s->read());
    return concat_rows(pieces);
  }
  void assign(const Tensor<T>& value) override {
    const auto pieces = split_rows(value, rows());
    for (std::size_t i = 0; i < shards_.size(); ++i) shards_[i]->assign(pieces[i]);
  }
  void update(VariableUpdate kind, const Tensor<T>& delta) override {
    const auto pieces = split_rows(delta, rows());
    for (std::size_t i = 0; i < shards_.size(); ++i) shards_[i]->update(kind, pieces[i]);
  }
  void apply_update(std::string_view op, typename VariableImpl<T>::UpdateKernel kernel) override {
    const Tensor<T> value = read();
    auto out = Tensor<T>::empty(value.shape(), value.device_info(), op);
    kernel(0, value, out);
    assign(out);
  }
  [[nodiscard]] std::vector<std::pair<const RemoteSlot*, std::int64_t>> parts() const override {
    std::vector<std::pair<const RemoteSlot*, std::int64_t>> out;
    for (const auto& s : shards_) out.emplace_back(s.get(), s->component(0).shape()[0]);
    return out;
  }
  [[nodiscard]] const std::vector<std::shared_ptr<PsVariable<T>>>& shards() const noexcept { return shards_; }

 private:
  std::shared_ptr<State> state_;
  std::vector<std::shared_ptr<PsVariable<T>>> shards_;

  [[nodiscard]] std::vector<std::int64_t> rows() const {
    std::vector<std::int64_t> out;
    for (const auto& [slot, n] : parts()) out.push_back(n);
    return out;
  }
};

/// The strategy's variable creator: PsVariables, created on their ps task by the chief.
class Creator final : public VariableCreator {
 public:
  explicit Creator(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<VariableImpl<float>> create(VariableInfo i, const Tensor<float>& v,
                                              const VariableOptions& o) const override;
  std::shared_ptr<VariableImpl<double>> create(VariableInfo i, const Tensor<double>& v,
                                               const VariableOptions& o) const override;
  std::shared_ptr<VariableImpl<std::int32_t>> create(VariableInfo i, const Tensor<std::int32_t>& v,
                                                     const VariableOptions& o) const override;
  std::shared_ptr<VariableImpl<std::int64_t>> create(VariableInfo i, const Tensor<std::int64_t>& v,
                                                     const VariableOptions& o) const override;
  std::shared_ptr<VariableImpl<bool>> create(VariableInfo, const Tensor<bool>&, const VariableOptions&) const override;

 private:
  std::shared_ptr<State> state_;

  template <Element T>
  std::shared_ptr<VariableImpl<T>> make(VariableInfo info, const Tensor<T>& initial,
                                        const VariableOptions& options) const {
    if (options.synchronization == VariableSynchronization::ON_READ)
      throw UnimplementedError("ParameterServerStrategy: variable " + info.name +
                               " asks for synchronization ON_READ; variables on parameter servers have one value");
    const std::int64_t shards = num_shards(initial.shape(), dtype_enum<T>());
    if (shards == 1) return whole(std::move(info), initial);
    // TensorFlow's "div" split: the first d0 % n shards have one row more.
    const std::int64_t d0 = initial.shape()[0], base = d0 / shards, extra = d0 % shards;
    std::vector<std::int64_t> rows;
    for (std::int64_t i = 0; i < shards; ++i) rows.push_back(base + (i < extra ? 1 : 0));
    const auto pieces = split_rows(initial, rows);
    std::vector<std::shared_ptr<PsVariable<T>>> parts;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      VariableInfo part = info;
      part.base_name = info.base_name + "/part_" + std::to_string(i);
      part.name = part.base_name + ":0";
      part.handle_id = next_tensor_id();
      parts.push_back(whole(std::move(part), pieces[i]));
    }
    return std::make_shared<ShardedVariable<T>>(state_, std::move(info), std::move(parts));
  }

  /// The partitioner's shard count for the first axis (1: no partitioner, a scalar, or one shard).
  /// @throws InvalidArgumentError for an answer other than [n >= 1, 1, ...] (TensorFlow's text).
  [[nodiscard]] std::int64_t num_shards(const Shape& shape, DType dtype) const;

  /// A variable on one ps task, the next in round-robin order; the chief creates it there.
  template <Element T>
  std::shared_ptr<PsVariable<T>> whole(VariableInfo info, const Tensor<T>& initial) const {
    // Not a structured binding: a lambda below captures `id` (clang before 16 refuses that).
    const std::pair<std::uint64_t, int> next = state_->next_variable();
    const std::uint64_t id = next.first;
    const int ps = next.second;
    if (state_->chief()) {
      if (log_enabled(LogSource::python_logger, LogSeverity::info) && std::getenv("TF_PSS_VERBOSE_VARIABLE_PLACEMENT"))
        log(LogSource::python_logger, LogSeverity::info,
            "Creating variable (name:" + info.name + ", shape:TensorShape(" + initial.shape().to_string() +
                ")) on /job:ps/task:" + std::to_string(ps) + "/device:CPU:0");
      state_->request(ps, ps_wire::RequestKind::create, "create",
                      [&](ps_wire::Writer& w) { w.put(id).put_string(info.base_name).put_tensor(initial); });
    }
    auto variable = std::make_shared<PsVariable<T>>(state_, std::move(info), initial, id, ps);
    state_->add(id, variable);
    return variable;
  }
};

// --- definitions (Note [The mpi component's compiled part]) ---
#if DEVTENSOR_MPI_DEFINITIONS

/// The rule and each variable's gradient, to the ps tasks holding them.
DEVTENSOR_MPI_DEFINITION void State::apply_gradients(const OptimizerRule& rule, const std::vector<Tensor<float>>& grads,
                                                     const std::vector<Variable<float>>& vars) {
  if (grads.size() != vars.size())
    throw InvalidArgumentError("apply_gradients: " + std::to_string(grads.size()) + " gradients for " +
                               std::to_string(vars.size()) + " variables");
  std::vector<std::vector<std::pair<std::uint64_t, Tensor<float>>>> on_ps(static_cast<std::size_t>(roles.num_ps));
  for (std::size_t k = 0; k < vars.size(); ++k) {
    if (!grads[k].defined()) continue;  // Keras skips a variable without a gradient
    if (grads[k].shape() != vars[k].shape())
      throw InvalidArgumentError("apply_gradients: the gradient for " + vars[k].name() + " has shape " +
                                 grads[k].shape().to_string() + ", the variable " + vars[k].shape().to_string());
    const auto parts = dynamic_cast<const RemoteParts&>(vars[k].implementation()).parts();
    std::vector<std::int64_t> rows;
    for (const auto& [slot, n] : parts) rows.push_back(n);
    const auto pieces = parts.size() == 1 ? std::vector{grads[k]} : split_rows(grads[k], rows);
    for (std::size_t p = 0; p < parts.size(); ++p)
      on_ps[static_cast<std::size_t>(parts[p].first->ps())].emplace_back(parts[p].first->id(), pieces[p]);
  }
  std::optional<ClosureWrites> now;
  auto& writes = writes_for(now, "apply_gradients");
  for (std::size_t ps = 0; ps < on_ps.size(); ++ps) {
    if (on_ps[ps].empty()) continue;
    auto& w = writes.per_ps[ps];
    w.put(static_cast<std::uint8_t>(ps_wire::WriteKind::apply)).put_string(rule.name);
    w.put(static_cast<std::uint32_t>(rule.hyperparameters.size()));
    for (double h : rule.hyperparameters) w.put(h);
    w.put(static_cast<std::uint32_t>(on_ps[ps].size()));
    for (const auto& [id, g] : on_ps[ps]) w.put(id).put_tensor(g);
    ++writes.counts[ps];
  }
  if (now) commit(0, *now);
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<VariableImpl<float>> Creator::create(VariableInfo i, const Tensor<float>& v,
                                                                              const VariableOptions& o) const {
  return make(std::move(i), v, o);
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<VariableImpl<double>> Creator::create(VariableInfo i, const Tensor<double>& v,
                                                                               const VariableOptions& o) const {
  return make(std::move(i), v, o);
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<VariableImpl<std::int32_t>> Creator::create(VariableInfo i,
                                                                                     const Tensor<std::int32_t>& v,
                                                                                     const VariableOptions& o) const {
  return make(std::move(i), v, o);
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<VariableImpl<std::int64_t>> Creator::create(VariableInfo i,
                                                                                     const Tensor<std::int64_t>& v,
                                                                                     const VariableOptions& o) const {
  return make(std::move(i), v, o);
}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<VariableImpl<bool>> Creator::create(VariableInfo, const Tensor<bool>&,
                                                                             const VariableOptions&) const {
  return with_element_type(DType::DT_BOOL, []<class T>() -> std::shared_ptr<VariableImpl<bool>> { return nullptr; });
}

DEVTENSOR_MPI_DEFINITION std::int64_t Creator::num_shards(const Shape& shape, DType dtype) const {
  const auto& partitioner = state_->options.variable_partitioner;
  if (!partitioner || shape.rank() == 0) return 1;
  const auto partitions = partitioner(shape, dtype);
  bool valid = !partitions.empty() && partitions[0] > 0;
  std::string listed;
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    valid = valid && (i == 0 || partitions[i] == 1);
    listed += (i ? ", " : "") + std::to_string(partitions[i]);
  }
  if (!valid)
    throw InvalidArgumentError(
        "variable_partitioner must return a list/tuple whose elements are 1 besides the first "
        "element (non-zero), got: [" +
        listed + "]");
  return std::min(partitions[0], shape[0]);
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace ps_detail
}  // namespace devtensor::distribute

namespace devtensor::distribute {

/// The shards of a variable a partitioning ParameterServerStrategy split (TensorFlow's
/// ShardedVariable.variables, each named "<name>/part_<i>:0"), or the variable alone.
template <Element T>
[[nodiscard]] std::vector<Variable<T>> shards_of(const Variable<T>& v) {
  if (const auto* sharded = dynamic_cast<const ps_detail::ShardedVariable<T>*>(&v.implementation())) {
    std::vector<Variable<T>> out;
    for (const auto& s : sharded->shards()) out.emplace_back(s);
    return out;
  }
  return {v};
}

}  // namespace devtensor::distribute
