#pragma once
/// @file tensor.hpp
/// @brief Tensor<T>: a shape and a reference-counted buffer on one logical device.
///
/// A Tensor is a handle: copies share the buffer. The buffer comes from its Device's allocator,
/// so it is accounted to that device: a tensor on a simulated GPU keeps a
/// host buffer, but its bytes count against the GPU's memory limit and show in its stats.
/// Host access (to_vector, at, printing) copies from device memory when the device is a real GPU.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor {

// --- buffers on devices: what ops, variables and collectives build tensors from -----------------

/// What a symbolic tensor stands for: an output of a node in a graph being built (ops/graph.hpp).
/// It has no buffer; its values exist only when a Session or a traced function runs the graph.
struct SymbolicRef {
  std::uint64_t graph_id = 0;    // the graph's process-unique id (graphs may die before their tensors)
  std::size_t node = 0;          // the node's position in its graph
  std::size_t output = 0;        // which of the node's outputs
  std::string name;              // TensorFlow's tensor name, "MatMul:0"
  std::string requested_device;  // the node's requested device, as TensorFlow's Tensor.device shows it
};

/// A buffer on one logical device; freed into that device's allocator when the last tensor using
/// it goes away.
struct TensorStorage {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::shared_ptr<memory::Allocator> allocator;  // keeps the allocator alive as long as the buffer
  const Device* device = nullptr;
  std::shared_ptr<const TensorStorage> shared_from;  // an alias: the storage that owns `data`
  std::shared_ptr<const SymbolicRef> symbolic;       // a graph node's output: no buffer, no device

  TensorStorage() = default;
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;
  ~TensorStorage() {
    if (allocator) allocator->deallocate(data);
  }
};

/// While alive, every buffer this thread allocates (allocate_storage) is also kept in `pool`: a
/// CUDA graph's private pool while it is captured (graph/cuda_graph.hpp). The recorded kernels
/// write to those addresses at every replay, so none may go back to the allocator in between.
class KeepAllocations {
 public:
  explicit KeepAllocations(std::vector<std::shared_ptr<TensorStorage>>& pool) noexcept : previous_(current()) {
    current() = &pool;
  }
  KeepAllocations(const KeepAllocations&) = delete;
  KeepAllocations& operator=(const KeepAllocations&) = delete;
  ~KeepAllocations() { current() = previous_; }
  /// The pool of this thread's innermost KeepAllocations, or nullptr.
  static std::vector<std::shared_ptr<TensorStorage>>*& current() noexcept {
    static thread_local std::vector<std::shared_ptr<TensorStorage>>* pool = nullptr;
    return pool;
  }

 private:
  std::vector<std::shared_ptr<TensorStorage>>* previous_;
};

/// Allocates `bytes` on `device` for a tensor of `shape`.
/// @throws ResourceExhaustedError "OOM when allocating tensor with shape[...] and type ... on
/// <device> by allocator <name> [Op:<op>]", followed by the allocator's explanation.
std::shared_ptr<TensorStorage> allocate_storage(const Device& device, std::size_t bytes, const Shape& shape,
                                                std::string_view dtype, std::string_view op);

/// `base`'s buffer, seen as a buffer of another logical device that shares its memory (logical
/// CPUs: one address space). Tensors are immutable, so sharing is indistinguishable from copying;
/// TensorFlow's same-process rendezvous shares host tensors the same way instead of copying.
std::shared_ptr<TensorStorage> alias_storage(const std::shared_ptr<TensorStorage>& base, const Device& device);

/// A stand-in device for host buffers that belong to no tensor (to_vector's output).
const Device& host_buffer_device();

/// The stand-in device of symbolic tensors: a storage without a buffer never matches a real
/// device, so every eager use reaches copy_to_device, which says the tensor is symbolic.
const Device& symbolic_device();

/// The storage of a symbolic tensor (a graph node's output).
std::shared_ptr<TensorStorage> symbolic_storage(SymbolicRef ref);

/// @throws InvalidArgumentError: `what` needs the values of symbolic tensor `ref`.
[[noreturn]] void throw_symbolic_values(const SymbolicRef& ref, std::string_view what);

/// Copies `bytes` between two buffers on any devices (memcpy between host-memory devices, the GPU
/// platform's stream-ordered copy otherwise; a copy to the host waits for the device's stream).
void copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes);

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::shared_ptr<TensorStorage> allocate_storage(const Device& device, std::size_t bytes,
                                                                     const Shape& shape, std::string_view dtype,
                                                                     std::string_view op) {
  auto storage = std::make_shared<TensorStorage>();
  storage->allocator = device.allocator;
  storage->device = &device;
  storage->bytes = bytes;
  if (bytes == 0) return storage;
  try {
    storage->data = storage->allocator->allocate(bytes, 64, {.retry_on_failure = true, .op_name = op});
  } catch (const ResourceExhaustedError& e) {
    const std::string allocator_name(storage->allocator->name());
    storage->allocator.reset();  // nothing to give back
    throw ResourceExhaustedError("OOM when allocating tensor with shape" + shape.to_string() + " and type " +
                                 std::string(dtype) + " on " + storage->device->full_name + " by allocator " +
                                 allocator_name + " [Op:" + std::string(op) + "]. " + e.what());
  }
  if (auto* pool = KeepAllocations::current()) [[unlikely]]
    pool->push_back(storage);
  return storage;
}

DEVTENSOR_DEFINITION std::shared_ptr<TensorStorage> alias_storage(const std::shared_ptr<TensorStorage>& base,
                                                                  const Device& device) {
  auto storage = std::make_shared<TensorStorage>();
  storage->data = base->data;
  storage->bytes = base->bytes;
  storage->device = &device;
  storage->shared_from = base->shared_from ? base->shared_from : base;  // no chains
  return storage;
}

DEVTENSOR_DEFINITION const Device& host_buffer_device() {
  static const Device host = [] {
    Device h;
    h.full_name = "host memory";
    return h;
  }();
  return host;
}

DEVTENSOR_DEFINITION const Device& symbolic_device() {
  static const Device symbolic = [] {
    Device d;
    d.full_name = "(symbolic: a graph node's output)";
    return d;
  }();
  return symbolic;
}

DEVTENSOR_DEFINITION std::shared_ptr<TensorStorage> symbolic_storage(SymbolicRef ref) {
  auto storage = std::make_shared<TensorStorage>();
  storage->device = &symbolic_device();
  storage->symbolic = std::make_shared<const SymbolicRef>(std::move(ref));
  return storage;
}

DEVTENSOR_DEFINITION void throw_symbolic_values(const SymbolicRef& ref, std::string_view what) {
  throw InvalidArgumentError("Tensor '" + ref.name +
                             "' is symbolic: it is an output of a graph node and has no values " +
                             "while the graph is being built, so " + std::string(what) +
                             " cannot read it. Fetch it with Session::run, or return it from the traced function.");
}

DEVTENSOR_DEFINITION void copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                                     std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.host_memory() && src_device.host_memory()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // Either side is a real GPU, which carries the platform that can copy.
  const auto* platform = dst_device.platform ? dst_device.platform : src_device.platform;
  std::string error;
  const bool dst_host = dst_device.host_memory();
  const bool src_host = src_device.host_memory();
  if (!platform ||
      !platform->copy(dst, dst_host ? -1 : dst_device.platform_ordinal, dst_host ? nullptr : dst_device.stream, src,
                      src_host ? -1 : src_device.platform_ordinal, src_host ? nullptr : src_device.stream, bytes,
                      &error))
    throw InternalError("Error copying tensor from " + src_device.full_name + " to " + dst_device.full_name + ": " +
                        error);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// A process-unique identity for a new tensor value, which GradientTape records. Ids are drawn
/// from a per-thread block (thread number in the top 24 bits) so that creating a tensor costs no
/// atomic operation.
inline std::uint64_t next_tensor_id() noexcept {
  static std::atomic<std::uint64_t> threads{0};
  thread_local const std::uint64_t block = (threads.fetch_add(1, std::memory_order_relaxed) + 1) << 40;
  thread_local std::uint64_t count = 0;
  return block | ++count;
}

template <Element T>
class Tensor {
 public:
  using value_type = T;

  /// An undefined tensor: an empty handle (no buffer) to assign a real tensor to. Ops reject it
  /// with InvalidArgumentError ("... is an undefined tensor"), members that need the buffer with
  /// FailedPreconditionError.
  Tensor() = default;

  /// Internal: a new tensor value over existing storage (a new identity for GradientTape).
  Tensor(std::shared_ptr<TensorStorage> storage, Shape shape)
      : storage_(std::move(storage)), shape_(std::move(shape)), id_(next_tensor_id()) {}
  /// Internal: the tensor with a known identity (the tape rebuilding what it recorded).
  Tensor(std::shared_ptr<TensorStorage> storage, Shape shape, std::uint64_t id)
      : storage_(std::move(storage)), shape_(std::move(shape)), id_(id) {}

  /// A new, uninitialised tensor on `device` (ops use this for outputs).
  /// @throws InvalidArgumentError when the byte size overflows, ResourceExhaustedError (OOM).
  static Tensor empty(const Shape& shape, const Device& device, std::string_view op) {
    return empty(Shape(shape), device, op);
  }
  /// The same, taking the shape over (an op's output shape: no copy on the eager path). Always
  /// inlined: in a TU with much else GCC stops inlining it into every op's dispatch.
  [[gnu::always_inline]] static Tensor empty(Shape&& shape, const Device& device, std::string_view op) {
    const std::size_t bytes = checked_byte_count(shape.num_elements(), sizeof(T), op);
    auto storage = allocate_storage(device, bytes, shape, dtype_string<T>(), op);
    return Tensor(std::move(storage), std::move(shape));
  }

  [[nodiscard]] bool defined() const noexcept { return storage_ != nullptr; }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] std::size_t rank() const noexcept { return shape_.rank(); }
  [[nodiscard]] std::int64_t num_elements() const noexcept { return shape_.num_elements(); }
  [[nodiscard]] static constexpr std::string_view dtype() noexcept { return dtype_name<T>(); }

  /// The canonical full name of the tensor's device, e.g.
  /// "/job:localhost/replica:0/task:0/device:GPU:0".
  /// A symbolic tensor's is its node's requested device ("" when none), as TensorFlow's.
  [[nodiscard]] const std::string& device() const {
    require_defined();
    if (storage_->symbolic) [[unlikely]]
      return storage_->symbolic->requested_device;
    return storage_->device->full_name;
  }
  /// The device's position in the DeviceSet (CPU:0 is 0).
  [[nodiscard]] int device_index() const {
    require_values("device_index()");
    return storage_->device->logical_index;
  }
  /// The Device the buffer lives on.
  [[nodiscard]] const Device& device_info() const {
    require_values("device_info()");
    return *storage_->device;
  }
  /// True when the buffer is in host memory (CPU or simulated GPU).
  [[nodiscard]] bool host_memory() const { return device_info().host_memory(); }

  /// The buffer, for kernels: host memory for CPU and simulated GPUs, device memory for real GPUs.
  [[nodiscard]] const T* data() const noexcept { return storage_ ? static_cast<const T*>(storage_->data) : nullptr; }
  [[nodiscard]] T* mutable_data() const noexcept { return storage_ ? static_cast<T*>(storage_->data) : nullptr; }
  [[nodiscard]] const std::shared_ptr<TensorStorage>& storage() const noexcept { return storage_; }
  /// The tensor's identity: copies of a handle share it; every op output gets a new one.
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  /// True for a graph node's output (built under a graph: ops/graph.hpp), which has no values.
  [[nodiscard]] bool symbolic() const noexcept { return storage_ && storage_->symbolic; }
  /// The node output a symbolic tensor stands for (nullptr for tensors with values).
  [[nodiscard]] const SymbolicRef* symbolic_ref() const noexcept {
    return storage_ ? storage_->symbolic.get() : nullptr;
  }

  /// The elements in row-major order, copied to the host.
  [[nodiscard]] std::vector<T> to_vector() const {
    require_values("to_vector()");
    const auto n = static_cast<std::size_t>(num_elements());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> raw(n);
      copy_to_host(raw.data());
      return std::vector<bool>(raw.begin(), raw.end());
    } else {
      std::vector<T> out(n);
      copy_to_host(out.data());
      return out;
    }
  }

  /// One element by its indices (negative indices are not accepted).
  /// @throws InvalidArgumentError for a wrong number of indices or an index out of range.
  [[nodiscard]] T at(std::initializer_list<std::int64_t> indices) const {
    require_values("at()");
    if (indices.size() != rank())
      throw InvalidArgumentError("at() got " + std::to_string(indices.size()) + " indices for a tensor of shape " +
                                 shape_.to_string());
    std::int64_t offset = 0;
    std::size_t axis = 0;
    const auto strides = shape_.strides();
    for (std::int64_t i : indices) {
      if (i < 0 || i >= shape_[axis])
        throw InvalidArgumentError("index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                                   " of shape " + shape_.to_string());
      offset += i * strides[axis++];
    }
    return element(offset);
  }

  /// The value of a one-element tensor. @throws InvalidArgumentError otherwise.
  [[nodiscard]] T item() const {
    require_values("item()");
    if (num_elements() != 1)
      throw InvalidArgumentError("item() needs a tensor with one element, got shape " + shape_.to_string());
    return element(0);
  }

  /// The same values as another element type (the Cast op).
  template <Element U>
  [[nodiscard]] Tensor<U> cast() const;

 private:
  std::shared_ptr<TensorStorage> storage_;
  Shape shape_;
  std::uint64_t id_ = 0;

  void require_defined() const {
    if (!storage_)
      throw FailedPreconditionError(
          "This is an undefined tensor (default-constructed or moved from): "
          "assign a tensor to it before using its values or device");
  }
  void require_values(std::string_view what) const {
    require_defined();
    if (storage_->symbolic) [[unlikely]]
      throw_symbolic_values(*storage_->symbolic, what);
  }

  void copy_to_host(void* out) const {
    copy_bytes(out, host_buffer_device(), storage_->data, *storage_->device,
               static_cast<std::size_t>(num_elements()) * sizeof(T));
  }

  T element(std::int64_t offset) const {
    T value{};
    if (storage_->device->host_memory()) return data()[offset];
    copy_bytes(&value, host_buffer_device(), data() + offset, *storage_->device, sizeof(T));
    return value;
  }
};

}  // namespace devtensor
