#pragma once
/// @file cuda_graph.hpp
/// @brief A traced function's executable replayed as a CUDA graph on its GPUs (FunctionOptions::
/// cuda_graph): the first call runs op by op (it warms up: cuBLAS handles, the allocator's regions),
/// the second captures the run into a graph and launches it, later calls copy their arguments into
/// the graph's input buffers and launch it again, with no host work per node and no allocation.
///
/// Note [CUDA-graph replay]
/// The contract is PyTorch's (torch.cuda.graphs): a graph reads and writes fixed addresses.
/// - Inputs: the capture's own buffers on the GPU; every call copies its arguments into them
///   (stream-ordered). A call whose arguments' shapes or dtypes differ from the capture's runs op by op.
/// - Private pool: every buffer allocated while capturing (values, kernels' scratch) is kept until
///   the graph dies (KeepAllocations), so no other tensor is ever given an address the
///   graph writes.
/// - Results are the graph's output buffers, overwritten by the next call: to keep one past the
///   next call, copy it (an op on it, to_vector(); identity() shares the buffer), and do not assign
///   one to a variable.
/// - Variables: the capture's run lets every value go at its last read, so that an update is made
///   in place, at the address the graph recorded. A buffer allocated while capturing that something
///   outside the graph still holds afterwards (a variable updated copy-on-write) means the graph
///   would write memory it does not own: that capture is launched once, for this call's results,
///   and the function runs op by op from then on.
/// - Several GPUs: one graph holds the work of every GPU the function runs on (a MirroredStrategy's
///   replicas, their all-reduce). The capture starts on the first GPU's stream, the others' streams
///   join it (each waits for the first: GpuPlatform::wait_for) and are joined back before it ends;
///   a launch on the first GPU's stream waits for the others' queued work (the arguments' copies),
///   and their streams wait for the launch, so what is queued on any of them next follows it.
///   Arguments on one of those GPUs are copied into buffers on the same GPU; others, on the first.
/// - Fallback: a function with a node on a CPU or a simulated GPU, that runs host code per node
///   (an eager node that is not EagerNodeOptions::capturable: a collective across processes),
///   whose capture fails (a host read inside it invalidates the capture) or allocates on a GPU
///   outside the graph, or whose platform cannot capture, runs op by op, with one WARNING saying
///   why. A function entirely on CPUs runs op by op without a word (nothing to capture). Calls
///   under a GradientTape run op by op (the tape records the ops).
/// - Host code: a replay runs none. Host work of every run (an optimizer's step count) is
///   repeated after each launch; a variable's or slot's buffer replaced between calls (assign,
///   restore) has the function captured again before it launches, and the graph updated with the
///   new addresses (cudaGraphExecUpdate) rather than instantiated again. A kernel argument that
///   changes from run to run is computed on the device instead (Adam's step size, from a step
///   count kept on the GPU: nn/optimizer_slots.hpp); host code that cannot do either makes the
///   capture fail (ops/capture.hpp). A value read from a variable and kept across a replay (`w.value()`) sees
///   the replay's in-place update, as PyTorch's parameters do; an op-by-op call leaves it as read.
/// - Calls of one function are replayed one after another (one set of buffers). Work queued on the
///   GPU's stream by other threads while a capture is in progress would join the graph: capture
///   (the second call) while the GPU is otherwise idle.
/// A platform without real graphs (the tests' fake GPUs) runs the work while "capturing" and replays
/// by running the executor again on the same input buffers, then copying into the output buffers;
/// there, a capture that fails has already run part of the call, which the op-by-op run repeats.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/graph/executor.hpp"
#include "devtensor/ops/capture.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::graph {

class DEVTENSOR_EXPORT CudaGraphReplay {
 public:
  enum class Stage { warm_up, capture, replay, op_by_op };

  /// `name`: the function's, for the fallback's log line.
  CudaGraphReplay(std::shared_ptr<const Executable> executable, std::string name)
      : executable_(std::move(executable)), name_(std::move(name)) {}
  CudaGraphReplay(const CudaGraphReplay&) = delete;
  CudaGraphReplay& operator=(const CudaGraphReplay&) = delete;
  ~CudaGraphReplay() { destroy_graph(); }

  /// One call: see Note [CUDA-graph replay].
  [[nodiscard]] std::vector<AnyTensor> run(const std::vector<AnyTensor>& args);

  [[nodiscard]] Stage stage() const {
    std::lock_guard lock(mutex_);
    return stage_;
  }
  /// Why the function runs op by op (empty otherwise, and for a function entirely on CPUs).
  [[nodiscard]] std::string why_op_by_op() const {
    std::lock_guard lock(mutex_);
    return why_;
  }
  /// Calls answered by launching the graph (the capture's own call included).
  [[nodiscard]] std::int64_t launches() const {
    std::lock_guard lock(mutex_);
    return launches_;
  }
  /// Captures after the first that updated the graph in place instead of instantiating a new one.
  [[nodiscard]] std::int64_t updates() const {
    std::lock_guard lock(mutex_);
    return updates_;
  }

  /// Why `executable` cannot be captured, or nothing; `*gpus` are the GPUs its nodes run on, in
  /// the order of their first nodes (empty when every node runs on a CPU: nothing to capture, and
  /// nothing to say).
  static std::optional<std::string> obstacle(const Executable& executable, std::vector<const Device*>* gpus);

 private:
  std::shared_ptr<const Executable> executable_;
  std::string name_;
  mutable std::mutex mutex_;
  Stage stage_ = Stage::warm_up;
  std::string why_;
  std::vector<const Device*> gpus_;  // the first's stream captures and launches the graph
  void* graph_ = nullptr;
  const GpuPlatform* graph_platform_ = nullptr;       // the graph's, kept apart from the device:
  int graph_ordinal_ = -1;                            // a reset Context's devices die before functions
  std::vector<AnyTensor> inputs_;                     // the graph reads its arguments here
  std::vector<AnyTensor> outputs_;                    // and leaves its results here
  std::vector<std::shared_ptr<TensorStorage>> pool_;  // every buffer the capture allocated
  Capture host_;                // the host's part of the graph: work after each replay, addresses to check
  bool host_replayed_ = false;  // the last launch ran the host work itself (a platform without graphs)
  std::string host_replay_error_;
  std::int64_t launches_ = 0;
  std::int64_t updates_ = 0;

  std::vector<AnyTensor> capture(const std::vector<AnyTensor>& args);
  std::vector<AnyTensor> replay(const std::vector<AnyTensor>& args);
  /// Drops the graph, its pool and its host part (the next capture makes new ones).
  void forget_graph() noexcept;
  void launch();
  /// Whether the graph records work on `device`.
  [[nodiscard]] bool spans(const Device& device) const;
  /// Each other GPU's stream waits for the first's (`fork`), or the first's for theirs.
  [[nodiscard]] bool order_streams(bool fork, std::string* error) const;
  void fall_back(std::string why);
  void destroy_graph() noexcept;
  /// A platform without real graphs replays by calling this (GpuPlatform::end_capture).
  static void host_replay(void* self) noexcept;
};

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION std::optional<std::string> CudaGraphReplay::obstacle(const Executable& executable,
                                                                          std::vector<const Device*>* gpus) {
  gpus->clear();
  const auto steps = executable.placed_steps();
  for (const auto& step : steps)
    if (step.device->is_gpu && std::find(gpus->begin(), gpus->end(), step.device) == gpus->end())
      gpus->push_back(step.device);
  if (gpus->empty()) return "it runs on CPUs only";
  const auto describe = [](const Node& node) { return "node '" + node.name + "' (" + std::string(node.type()) + ")"; };
  for (const auto& step : steps) {
    if (!step.device->is_gpu)
      return describe(*step.node) + " runs on " + step.device->full_name + ", and a CUDA graph records GPU work only";
    if (step.node->traits().communication && !step.node->traits().capturable)
      return describe(*step.node) + " runs host code at every call, which a graph cannot record";
  }
  const GpuPlatform* platform = gpus->front()->platform;
  for (const Device* gpu : *gpus) {
    if (!gpu->platform) return gpu->full_name + " is a simulated GPU, which has no CUDA graphs";
    if (gpu->platform != platform)
      return gpu->full_name + " and " + gpus->front()->full_name + " are GPUs of two platforms";
  }
  if (!platform->begin_capture || !platform->end_capture || !platform->launch_graph || !platform->destroy_graph)
    return std::string("the GPU platform '") + platform->name + "' cannot capture graphs";
  if (gpus->size() > 1 && !platform->wait_for)
    return "it runs on " + std::to_string(gpus->size()) + " GPUs, and the GPU platform '" + platform->name +
           "' captures graphs of one GPU";
  return std::nullopt;
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> CudaGraphReplay::run(const std::vector<AnyTensor>& args) {
  if (autodiff::tapes_active()) return executable_->run(args);  // a tape records the ops
  std::unique_lock lock(mutex_);
  switch (stage_) {
    case Stage::warm_up:
      if (auto why = obstacle(*executable_, &gpus_)) {
        if (!gpus_.empty()) fall_back(std::move(*why));
        stage_ = Stage::op_by_op;
      } else {
        stage_ = Stage::capture;
      }
      break;
    case Stage::capture: return capture(args);
    case Stage::replay: return replay(args);
    case Stage::op_by_op: break;
  }
  lock.unlock();
  return executable_->run(args);
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> CudaGraphReplay::capture(const std::vector<AnyTensor>& args) {
  const Device& origin = *gpus_.front();
  const GpuPlatform& platform = *origin.platform;
  // The graph's input buffers: allocated before capturing (they outlive it in inputs_), on the
  // argument's GPU when the graph runs there, so that its readers find it in place.
  inputs_.clear();
  for (const auto& arg : args) {
    if (!arg.defined()) throw InvalidArgumentError("A traced function was called with an undefined tensor");
    const Device& home = spans(*arg.storage->device) ? *arg.storage->device : origin;
    const std::size_t bytes = static_cast<std::size_t>(arg.shape.num_elements()) * dtype_size(arg.dtype);
    auto storage = allocate_storage(home, bytes, arg.shape, dtype_string(arg.dtype), "_Arg");
    copy_bytes(storage->data, home, arg.storage->data, *arg.storage->device, bytes);
    inputs_.emplace_back(next_tensor_id(), arg.dtype, arg.shape, std::move(storage));
  }
  std::string error;
  if (!platform.begin_capture(origin.platform_ordinal, origin.stream, &error)) {
    forget_graph();
    fall_back("the capture could not start: " + error);
    return executable_->run(args);
  }
  std::string failure;
  std::vector<AnyTensor> outputs;
  host_ = Capture{};
  if (!order_streams(true, &error)) {
    failure = "another GPU's stream could not join it: " + error;
  } else {
    try {
      const KeepAllocations keep(pool_);
      const CaptureScope scope(host_);
      outputs = executable_->run_capturing(inputs_);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (failure.empty() && !order_streams(false, &error))
      failure = "another GPU's stream could not be joined: " + error;
  }
  bool ran = false;
  void* const previous = std::exchange(graph_, nullptr);  // a graph captured again: updated in place
  graph_ = platform.end_capture(origin.platform_ordinal, origin.stream, previous, &CudaGraphReplay::host_replay, this,
                                &ran, &error);
  if (previous && graph_ != previous) platform.destroy_graph(origin.platform_ordinal, previous);
  if (previous && graph_ == previous) ++updates_;
  graph_platform_ = &platform;
  graph_ordinal_ = origin.platform_ordinal;
  // Work queued on a GPU outside the graph ran at once instead of joining it: no replay would
  // write that buffer.
  for (const auto& buffer : pool_)
    if (failure.empty() && graph_ && buffer->device->is_gpu && !spans(*buffer->device))
      failure = "it allocated on " + buffer->device->full_name + ", a GPU outside the graph";
  if (!graph_ || !failure.empty()) {
    if (!ran)  // the recorded work never ran: neither did the step the host code counted
      for (auto it = host_.undo.rbegin(); it != host_.undo.rend(); ++it) (*it)();
    forget_graph();
    fall_back("the capture failed: " + (failure.empty() ? error : failure));
    return executable_->run(args);
  }
  outputs_ = std::move(outputs);
  // A buffer of the pool held outside the graph now (beyond the pool and the results) would be
  // overwritten by every replay.
  bool escaped = false;
  for (const auto& buffer : pool_) {
    long expected = 1;
    for (const auto& out : outputs_) expected += out.storage == buffer ? 1 : 0;
    escaped = escaped || buffer.use_count() > expected;
  }
  if (!ran) launch();  // CUDA records without running: this call's results come from the graph
  if (escaped) {
    std::string sync_error;  // the first GPU's stream has waited for the other GPUs' part
    if (!platform.synchronize(origin.platform_ordinal, origin.stream, &sync_error)) throw InternalError(sync_error);
    forget_graph();
    auto results = std::exchange(outputs_, {});
    fall_back(
        "a buffer the capture allocated is held outside the graph (a variable assigned a value it computed, "
        "or updated copy-on-write)");
    return results;
  }
  stage_ = Stage::replay;
  return outputs_;
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> CudaGraphReplay::replay(const std::vector<AnyTensor>& args) {
  bool same = args.size() == inputs_.size();
  for (std::size_t i = 0; same && i < args.size(); ++i)
    same = args[i].defined() && args[i].dtype == inputs_[i].dtype && args[i].shape == inputs_[i].shape;
  if (!same) return executable_->run(args);  // another signature's shapes: op by op
  for (const auto& valid : host_.still_valid)
    if (!valid()) {  // an address the graph uses moved: record it again, and update the graph
      pool_.clear();
      return capture(args);  // which replaces host_ (and `valid` with it)
    }
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].storage != inputs_[i].storage)
      copy_bytes(inputs_[i].storage->data, *inputs_[i].storage->device, args[i].storage->data, *args[i].storage->device,
                 inputs_[i].storage->bytes);
  launch();
  if (!host_replayed_)
    for (const auto& work : host_.each_replay) work();
  return outputs_;
}

DEVTENSOR_DEFINITION void CudaGraphReplay::launch() {
  const Device& origin = *gpus_.front();
  std::string error;
  host_replay_error_.clear();
  host_replayed_ = false;
  // The graph's work on each GPU follows what that GPU's stream has queued (the arguments' copies),
  // and what is queued there next follows the graph.
  if (!order_streams(false, &error) ||
      !origin.platform->launch_graph(origin.platform_ordinal, graph_, origin.stream, &error) ||
      !order_streams(true, &error))
    throw InternalError("Launching the CUDA graph of " + name_ + " on " + origin.full_name + " failed: " + error);
  if (!host_replay_error_.empty())
    throw InternalError("Replaying " + name_ + " on " + origin.full_name + " failed: " + host_replay_error_);
  ++launches_;
}

DEVTENSOR_DEFINITION bool CudaGraphReplay::spans(const Device& device) const {
  return std::find(gpus_.begin(), gpus_.end(), &device) != gpus_.end();
}

DEVTENSOR_DEFINITION bool CudaGraphReplay::order_streams(bool fork, std::string* error) const {
  const Device& origin = *gpus_.front();
  const auto wait_for = origin.platform->wait_for;
  for (std::size_t i = 1; i < gpus_.size(); ++i) {
    const Device& other = *gpus_[i];
    if (other.stream == origin.stream) continue;
    const bool ordered =
        fork ? wait_for(other.platform_ordinal, other.stream, origin.platform_ordinal, origin.stream, error)
             : wait_for(origin.platform_ordinal, origin.stream, other.platform_ordinal, other.stream, error);
    if (!ordered) return false;
  }
  return true;
}

DEVTENSOR_DEFINITION void CudaGraphReplay::fall_back(std::string why) {
  log(LogSeverity::warning, "Function " + name_ + " is not replayed as a CUDA graph: " + why + ". It runs op by op.");
  why_ = std::move(why);
  stage_ = Stage::op_by_op;
  inputs_.clear();
  outputs_.clear();
}

DEVTENSOR_DEFINITION void CudaGraphReplay::forget_graph() noexcept {
  destroy_graph();  // one still running finishes first (cudaGraphExecDestroy)
  pool_.clear();    // stream-ordered: later work on the stream may reuse the buffers
  host_ = Capture{};
}

DEVTENSOR_DEFINITION void CudaGraphReplay::destroy_graph() noexcept {
  if (graph_ && graph_platform_) graph_platform_->destroy_graph(graph_ordinal_, graph_);
  graph_ = nullptr;
}

DEVTENSOR_DEFINITION void CudaGraphReplay::host_replay(void* self) noexcept {
  auto& replay = *static_cast<CudaGraphReplay*>(self);
  replay.host_replayed_ = true;
  try {
    const auto results = replay.executable_->run_capturing(replay.inputs_);
    for (std::size_t k = 0; k < results.size(); ++k)
      if (results[k].storage != replay.outputs_[k].storage)
        copy_bytes(replay.outputs_[k].storage->data, *replay.outputs_[k].storage->device, results[k].storage->data,
                   *results[k].storage->device, replay.outputs_[k].storage->bytes);
  } catch (const std::exception& e) {
    replay.host_replay_error_ = e.what();
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
