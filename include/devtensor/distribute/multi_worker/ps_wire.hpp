#pragma once
/// @file ps_wire.hpp
/// @brief The messages of parameter-server training: byte buffers written and read field by
/// field, tensors as (dtype, shape, bytes), statuses. ps_channel.hpp carries them between processes.
///
/// A tensor of 64 KiB or more is not copied into its message: the message announces it, and it
/// follows as a payload of its own (tag + kPayloadTagOffset), sent from the tensor's storage and
/// received into where it goes (a variable's buffer, a worker's copy, a new tensor). A megabyte
/// is then copied once, by MPI, as raw point-to-point copies it, instead of four times.
///
/// Why point-to-point and not one-sided RMA: a worker's update is an optimizer's rule (Adam's
/// moments, a momentum), not a sum, so it must run where the variable is; MPI_Accumulate can only
/// add. And RMA epochs are collective or lock a target that may be dead, while a request that is
/// never answered can be abandoned at a deadline. So every exchange is a request and its reply.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::distribute::ps_wire {

using Clock = std::chrono::steady_clock;

/// Message tags on the strategy's communicator.
enum Tag : int {
  kRequest = 1,    // anyone → a ps task: Create, Read, Write, Shutdown
  kReply = 2,      // a ps task → the requester
  kRun = 3,        // chief → worker: run a closure, or stop
  kResult = 4,     // worker → chief: a closure's outcome
  kHeartbeat = 5,  // worker → chief: still alive
};

/// What a request to a ps task asks.
enum class RequestKind : std::uint8_t { create = 1, read = 2, write = 3, shutdown = 4 };
/// One write of a Write request.
enum class WriteKind : std::uint8_t { assign = 1, add = 2, sub = 3, apply = 4 };

/// std::allocator, except that resize() leaves new bytes uninitialised: a received message's
/// buffer is written by MPI at once (zeroing a megabyte first costs as much as copying it).
template <class T>
struct UninitialisedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitialisedAllocator<U>;
  };
  UninitialisedAllocator() = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}  // NOLINT: as std::allocator
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
/// A message's bytes.
using Bytes = std::vector<std::byte, UninitialisedAllocator<std::byte>>;

/// Tensors of at least this many bytes travel as payloads (see the file's comment).
inline constexpr std::size_t kOutOfBandBytes = std::size_t{64} << 10;
/// A payload's tag: its message's tag plus this (payloads of one tag from one sender arrive in order).
inline constexpr int kPayloadTagOffset = 64;
/// Marks a length field whose bytes follow as a payload.
inline constexpr std::uint64_t kOutOfBandBit = std::uint64_t{1} << 63;
/// MPI counts are int: a payload crosses in chunks of at most this many bytes.
inline constexpr std::size_t kChunkBytes = std::size_t{1} << 30;

/// A payload to send: its bytes, where the message announces it, and what keeps the bytes alive
/// until MPI has sent them (a tensor sharing the storage, so nobody updates it in place meanwhile).
struct Payload {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  std::size_t announced_at = 0;
  std::shared_ptr<const void> keep;
};

/// A message being built: fields appended in order, and the payloads that follow it.
class Writer {
 public:
  template <class T>
  requires std::is_trivially_copyable_v<T> Writer& put(const T& value) { return put_raw(&value, sizeof(T)); }
  Writer& put_bytes(const void* data, std::size_t size) { return put<std::uint64_t>(size).put_raw(data, size); }
  Writer& put_string(std::string_view text) { return put_bytes(text.data(), text.size()); }
  /// dtype, rank, dimensions, then the values: in the message when small, else as a payload sent
  /// from the tensor's own storage (a GPU tensor's from a host copy).
  template <Element T>
  Writer& put_tensor(const Tensor<T>& t);  // compiled once with the mpi component, for every element type
  /// Announces `size` bytes at `data` as the next payload; `keep` holds them until they are sent.
  Writer& put_payload(const void* data, std::size_t size, std::shared_ptr<const void> keep);
  /// Appends `other`'s fields and payloads after this message's.
  Writer& append(Writer other);
  /// Drops everything from byte `size` on (fields and the payloads they announced).
  void truncate(std::size_t size);
  /// Overwrites `value`'s bytes at `offset` (a field reserved earlier).
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void patch(std::size_t offset, const T& value) { std::memcpy(bytes_.data() + offset, &value, sizeof(T)); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] const Bytes& bytes() const noexcept { return bytes_; }
  [[nodiscard]] const std::vector<Payload>& payloads() const noexcept { return payloads_; }

 private:
  Bytes bytes_;

  /// `size` raw bytes at `data` after the fields so far (compiled once: every field comes here).
  Writer& put_raw(const void* data, std::size_t size);
  std::vector<Payload> payloads_;
};

class Channel;

/// The payloads of one received message, in the order it announced them. Each is received straight
/// into where it goes; those nobody takes (a message skipped, an error half-way) are drained when
/// the message is done with, so that the sender's next message finds its own payloads first.
class Payloads {
 public:
  Payloads(Channel& channel, int source, int tag, Clock::time_point deadline)
      : channel_(channel), source_(source), tag_(tag), deadline_(deadline) {}
  Payloads(const Payloads&) = delete;
  Payloads& operator=(const Payloads&) = delete;
  ~Payloads() noexcept;

  /// The next payload's index.
  std::size_t announce(std::size_t size) {
    sizes_.push_back(size);
    return sizes_.size() - 1;
  }
  /// Payload `index` into `destination` (`keep` holds it should MPI still write there after a
  /// timeout). Payloads before it that were not taken are drained first.
  /// @throws InternalError when `index` was received already; UnavailableError when it does not come in time.
  void receive(std::size_t index, std::byte* destination, std::shared_ptr<const void> keep);

 private:
  Channel& channel_;
  int source_;
  int tag_;
  Clock::time_point deadline_;
  std::vector<std::size_t> sizes_;
  std::size_t received_ = 0;

  /// Receives the payloads not taken up to `end` (exclusive) into a scratch buffer.
  void drain(std::size_t end);
};

/// A tensor as it crossed the wire: dtype, shape, and its bytes, either a view of the message it
/// came in (valid while that message's Reader lives) or a payload still to be received.
struct WireTensor {
  DType dtype = DType::DT_FLOAT;
  std::vector<std::int64_t> dims;
  std::span<const std::byte> bytes;    // in the message
  std::shared_ptr<Payloads> payloads;  // or a payload of it: the index-th
  std::size_t payload_index = 0;
  std::size_t payload_size = 0;

  [[nodiscard]] std::size_t size_bytes() const noexcept { return payloads ? payload_size : bytes.size(); }

  /// The values into `out`, a host tensor of this dtype and shape (a payload straight into its storage).
  template <Element T>
  requires(!std::is_same_v<T, bool>) void copy_into(Tensor<T>& out) const;

  /// The values, in a new tensor of T on `host` (a host CPU device).
  /// @throws InvalidArgumentError for another dtype.
  /// (Both compiled once with the mpi component, for every element type.)
  template <Element T>
  [[nodiscard]] Tensor<T> to_tensor(const Device& host, std::string_view what) const;
};

struct Message {
  int source = -1;
  int tag = -1;
  Bytes bytes;
};

/// A received message, read field by field. @throws InternalError when it is shorter than what
/// is read (a message of another protocol).
class Reader {
 public:
  /// A message without payloads (a payload announced in it is an InternalError).
  explicit Reader(Bytes bytes) : bytes_(std::move(bytes)) {}
  /// A message and its payloads, which come from `channel` after it.
  Reader(Message message, Channel& channel);

  template <class T>
  requires std::is_trivially_copyable_v<T> T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  /// A view of the next length-prefixed field (valid while this Reader lives).
  std::span<const std::byte> get_bytes();
  std::string get_string() {
    const auto b = get_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  WireTensor get_tensor();
  [[nodiscard]] bool done() const noexcept { return at_ == bytes_.size(); }

 private:
  Bytes bytes_;
  std::size_t at_ = 0;
  Channel* channel_ = nullptr;  // where the payloads come from: the message's source and tag
  int source_ = -1;
  int tag_ = -1;
  std::shared_ptr<Payloads> payloads_;  // shared with the WireTensors read: drained when all are gone

  std::shared_ptr<Payloads> make_payloads() const;

  /// The next `n` bytes, read past. @throws InternalError when fewer are left.
  const std::byte* take(std::size_t n);
};

/// A status as it crosses the wire: ok, or an error's code and text.
void put_status(Writer& w, const Error* error);
/// Reads a status; raises the error it carries with its own type.
void get_status(Reader& r);

inline std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }
inline Clock::time_point after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds(s));
}

#if DEVTENSOR_MPI_DEFINITIONS  // Note [The mpi component's compiled part]

DEVTENSOR_MPI_DEFINITION Writer& Writer::put_raw(const void* data, std::size_t size) {
  const auto* p = static_cast<const std::byte*>(data);
  bytes_.insert(bytes_.end(), p, p + size);
  return *this;
}

DEVTENSOR_MPI_DEFINITION Writer& Writer::put_payload(const void* data, std::size_t size,
                                                     std::shared_ptr<const void> keep) {
  payloads_.push_back({static_cast<const std::byte*>(data), size, bytes_.size(), std::move(keep)});
  return put<std::uint64_t>(size | kOutOfBandBit);
}

DEVTENSOR_MPI_DEFINITION const std::byte* Reader::take(std::size_t n) {
  if (bytes_.size() - at_ < n) throw InternalError("parameter-server message: truncated");
  const std::byte* p = bytes_.data() + at_;
  at_ += n;
  return p;
}

DEVTENSOR_MPI_DEFINITION std::span<const std::byte> Reader::get_bytes() {
  const auto size = static_cast<std::size_t>(get<std::uint64_t>());
  if (size & kOutOfBandBit) throw InternalError("parameter-server message: a payload where bytes were expected");
  return {take(size), size};
}

DEVTENSOR_MPI_DEFINITION Writer& Writer::append(Writer other) {
  for (auto& p : other.payloads_) {
    p.announced_at += bytes_.size();
    payloads_.push_back(std::move(p));
  }
  bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
  return *this;
}

DEVTENSOR_MPI_DEFINITION void Writer::truncate(std::size_t size) {
  bytes_.resize(size);
  std::erase_if(payloads_, [&](const Payload& p) { return p.announced_at >= size; });
}

// Not inline: src/devtensor_mpi.cpp instantiates them for every element type.
template <Element T>
Writer& Writer::put_tensor(const Tensor<T>& t) {
  put(static_cast<std::uint8_t>(dtype_enum<T>()));
  put(static_cast<std::uint8_t>(t.rank()));
  for (auto d : t.shape().dims()) put<std::int64_t>(d);
  if constexpr (std::is_same_v<T, bool>) {
    const auto values = t.to_vector();
    std::vector<unsigned char> b(values.begin(), values.end());
    return put_bytes(b.data(), b.size());
  } else {
    const auto size = static_cast<std::size_t>(t.num_elements()) * sizeof(T);
    const bool on_host = !t.device_info().real_gpu();
    if (size >= kOutOfBandBytes) {
      if (on_host) return put_payload(t.data(), size, std::make_shared<const Tensor<T>>(t));
      auto values = std::make_shared<const std::vector<T>>(t.to_vector());
      return put_payload(values->data(), size, values);
    }
    if (on_host) return put_bytes(t.data(), size);
    const auto values = t.to_vector();
    return put_bytes(values.data(), size);
  }
}
template <Element T>
requires(!std::is_same_v<T, bool>) void WireTensor::copy_into(Tensor<T>& out) const {
  auto* destination = reinterpret_cast<std::byte*>(out.mutable_data());
  if (payloads) return payloads->receive(payload_index, destination, std::make_shared<const Tensor<T>>(out));
  if (!bytes.empty()) std::memcpy(destination, bytes.data(), bytes.size());
}

template <Element T>
Tensor<T> WireTensor::to_tensor(const Device& host, std::string_view what) const {
  if (dtype != dtype_enum<T>())
    throw InvalidArgumentError(std::string(what) + ": a tensor of another dtype where a " +
                               std::string(dtype_name<T>()) +
                               " one was expected (every task must create the same variables and functions)");
  const Shape shape{std::span<const std::int64_t>(dims)};
  const auto count = static_cast<std::size_t>(shape.num_elements());
  if (size_bytes() != count * (std::is_same_v<T, bool> ? 1 : sizeof(T)))
    throw InternalError(std::string(what) + ": a tensor's bytes do not match its shape");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<T> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = bytes[i] != std::byte{0};
    return tensor_from_host(values, shape, host, "Recv");
  } else {
    auto out = Tensor<T>::empty(shape, host, "Recv");
    copy_into(out);
    return out;
  }
}

DEVTENSOR_MPI_DEFINITION WireTensor Reader::get_tensor() {
  WireTensor t;
  const auto dtype = get<std::uint8_t>();
  if (dtype > static_cast<std::uint8_t>(DType::DT_BOOL)) throw InternalError("parameter-server message: unknown dtype");
  t.dtype = static_cast<DType>(dtype);
  const auto rank = get<std::uint8_t>();
  for (std::uint8_t i = 0; i < rank; ++i) t.dims.push_back(get<std::int64_t>());
  const auto size = get<std::uint64_t>();
  if (size & kOutOfBandBit) {
    if (!channel_ || t.dtype == DType::DT_BOOL) throw InternalError("parameter-server message: an unexpected payload");
    if (!payloads_) payloads_ = make_payloads();  // most messages announce none: made on the first
    t.payloads = payloads_;
    t.payload_size = static_cast<std::size_t>(size & ~kOutOfBandBit);
    t.payload_index = payloads_->announce(t.payload_size);
  } else {
    t.bytes = std::span<const std::byte>(take(static_cast<std::size_t>(size)), static_cast<std::size_t>(size));
  }
  return t;
}

DEVTENSOR_MPI_DEFINITION void put_status(Writer& w, const Error* error) {
  w.put<std::uint8_t>(error ? 1 : 0);
  if (error) w.put(static_cast<std::int32_t>(error->code())).put_string(error->what());
}

DEVTENSOR_MPI_DEFINITION void get_status(Reader& r) {
  if (r.get<std::uint8_t>() == 0) return;
  const auto code = static_cast<ErrorCode>(r.get<std::int32_t>());
  throw_error(code, r.get_string());
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::ps_wire
