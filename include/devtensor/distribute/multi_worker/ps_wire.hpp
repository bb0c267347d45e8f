#pragma once
/// @file ps_wire.hpp
/// @brief The messages of parameter-server training and how they cross processes: byte buffers
/// written and read field by field, tensors as (dtype, shape, bytes), and MPI point-to-point
/// with deadlines on a communicator of the job's own.
///
/// Why point-to-point and not one-sided RMA: a worker's update is an optimizer's rule (Adam's
/// moments, a momentum), not a sum, so it must run where the variable is; MPI_Accumulate can only
/// add. And RMA epochs are collective or lock a target that may be dead, while a request that is
/// never answered can be abandoned at a deadline. So every exchange is a request and its reply.
///
/// Waiting polls (MPI_Improbe / MPI_Test): for 2 ms yielding the core between polls, then with
/// sleeps that grow to a millisecond. Open MPI's blocking calls spin a core for as long as they
/// wait, and a server spinning beside workers on a machine with more ranks than cores starves them. Sends that cannot complete (a dead peer) keep their buffers until
/// MPI_Finalize (Runtime::keep_until_finalize), as the collectives' do.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/multi_worker/mpi_worker_group.hpp"
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

/// A message being built: fields appended in order.
class Writer {
 public:
  template <class T>
    requires std::is_trivially_copyable_v<T>
  Writer& put(const T& value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  Writer& put_bytes(const void* data, std::size_t size) {
    put<std::uint64_t>(size);
    const auto* p = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return *this;
  }
  Writer& put_string(std::string_view text) { return put_bytes(text.data(), text.size()); }
  /// dtype, rank, dimensions, then the values (read from host memory as they are; copied from a
  /// GPU first).
  template <Element T>
  Writer& put_tensor(const Tensor<T>& t) {
    put(static_cast<std::uint8_t>(dtype_enum<T>()));
    put(static_cast<std::uint8_t>(t.rank()));
    for (auto d : t.shape().dims()) put<std::int64_t>(d);
    if constexpr (!std::is_same_v<T, bool>) {
      if (!t.device_info().real_gpu())
        return put_bytes(t.data(), static_cast<std::size_t>(t.num_elements()) * sizeof(T));
    }
    const auto values = t.to_vector();
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> b(values.begin(), values.end());
      return put_bytes(b.data(), b.size());
    } else {
      return put_bytes(values.data(), values.size() * sizeof(T));
    }
  }
  /// Overwrites `value`'s bytes at `offset` (a field reserved earlier).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void patch(std::size_t offset, const T& value) {
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
  }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] Bytes& bytes() noexcept { return bytes_; }
  [[nodiscard]] Bytes take() noexcept { return std::move(bytes_); }

 private:
  Bytes bytes_;
};

/// A tensor as it crossed the wire: a view of the bytes of the message it came in (valid while
/// that message's Reader lives).
struct WireTensor {
  DType dtype = DType::DT_FLOAT;
  std::vector<std::int64_t> dims;
  std::span<const std::byte> bytes;

  /// The values, copied once into a tensor of T on `host` (a host CPU device).
  /// @throws InvalidArgumentError for another dtype.
  template <Element T>
  [[nodiscard]] Tensor<T> to_tensor(const Device& host, std::string_view what) const {
    if (dtype != dtype_enum<T>())
      throw InvalidArgumentError(std::string(what) + ": a tensor of another dtype where a " + std::string(dtype_name<T>()) +
                                 " one was expected (every task must create the same variables and functions)");
    const Shape shape{std::span<const std::int64_t>(dims)};
    const auto count = static_cast<std::size_t>(shape.num_elements());
    if (bytes.size() != count * (std::is_same_v<T, bool> ? 1 : sizeof(T)))
      throw InternalError(std::string(what) + ": a tensor's bytes do not match its shape");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<T> values(count);
      for (std::size_t i = 0; i < count; ++i) values[i] = bytes[i] != std::byte{0};
      return tensor_from_host(values, shape, host, "Recv");
    } else {
      auto out = Tensor<T>::empty(shape, host, "Recv");
      if (count > 0) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
      return out;
    }
  }
};

/// A received message, read field by field. @throws InternalError when it is shorter than what
/// is read (a message of another protocol).
class Reader {
 public:
  explicit Reader(Bytes bytes) : bytes_(std::move(bytes)) {}
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  /// A view of the next length-prefixed field (valid while this Reader lives).
  std::span<const std::byte> get_bytes() {
    const auto size = static_cast<std::size_t>(get<std::uint64_t>());
    need(size);
    const std::span<const std::byte> out(bytes_.data() + at_, size);
    at_ += size;
    return out;
  }
  std::string get_string() {
    const auto b = get_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  WireTensor get_tensor() {
    WireTensor t;
    const auto dtype = get<std::uint8_t>();
    if (dtype > static_cast<std::uint8_t>(DType::DT_BOOL)) throw InternalError("parameter-server message: unknown dtype");
    t.dtype = static_cast<DType>(dtype);
    const auto rank = get<std::uint8_t>();
    for (std::uint8_t i = 0; i < rank; ++i) t.dims.push_back(get<std::int64_t>());
    t.bytes = get_bytes();
    return t;
  }
  [[nodiscard]] bool done() const noexcept { return at_ == bytes_.size(); }

 private:
  Bytes bytes_;
  std::size_t at_ = 0;

  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw InternalError("parameter-server message: truncated");
  }
};

/// Calls `ready()` until it returns true or `deadline` passes (then false). For `spin` it polls
/// without sleeping, yielding the core to any other runnable thread (an answer is usually that
/// close: a request's reply, a busy server's next request); then it sleeps between polls, 20 us
/// doubling to 1 ms, so that an idle process leaves the cores to those that compute.
template <class Ready>
bool poll_until(Ready&& ready, Clock::time_point deadline,
                std::chrono::microseconds spin = std::chrono::microseconds(2000)) {
  const auto spin_until = Clock::now() + spin;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (ready()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now < spin_until) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

struct Message {
  int source = -1;
  int tag = -1;
  Bytes bytes;
};

/// The strategy's communicator (a duplicate of MPI_COMM_WORLD) and its point-to-point calls.
class Channel {
 public:
  /// Collective over MPI_COMM_WORLD: every process of the job constructs its channel.
  /// @throws FailedPreconditionError when MPI runs without MPI_THREAD_MULTIPLE.
  Channel() {
    auto& runtime = mpi_detail::Runtime::get();
    if (runtime.thread_level() < MPI_THREAD_MULTIPLE)
      throw FailedPreconditionError(
          "ParameterServerStrategy needs MPI_THREAD_MULTIPLE (a worker's heartbeat and a chief's dispatcher run on "
          "their own threads), but MPI was initialised with thread level " + std::to_string(runtime.thread_level()) +
          ". Let devtensor initialise MPI, or call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...).");
    mpi_detail::check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // a dead peer is an error code, not the job's end
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() {
    mpi_detail::Runtime::get().keep_until_finalize(std::move(sends_));  // MPI_Finalize frees the communicator
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }

  /// Starts sending `bytes`; the buffer lives until the send completes (or until MPI_Finalize).
  void send(int destination, int tag, Bytes bytes) {
    auto buffer = std::make_shared<Bytes>(std::move(bytes));
    mpi_detail::PendingSend pending;
    mpi_detail::check(MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, destination, tag, comm_,
                                &pending.request),
                      "MPI_Isend");
    pending.buffer = buffer;
    std::lock_guard lock(sends_mutex_);
    sends_.push_back(std::move(pending));
    mpi_detail::reap(sends_);
  }
  /// A message from `source` (MPI_ANY_SOURCE: anyone) with `tag`, if one has arrived.
  std::optional<Message> try_receive(int source, int tag) {
    int found = 0;
    MPI_Message handle;
    MPI_Status status;
    mpi_detail::check(MPI_Improbe(source, tag, comm_, &found, &handle, &status), "MPI_Improbe");
    if (!found) return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Message m{status.MPI_SOURCE, status.MPI_TAG, {}};
    m.bytes.resize(static_cast<std::size_t>(count));
    mpi_detail::check(MPI_Mrecv(m.bytes.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return m;
  }
  /// The next message from `source` with `tag`, or nothing at `deadline`.
  std::optional<Message> receive(int source, int tag, Clock::time_point deadline) {
    std::optional<Message> m;
    poll_until([&] { return (m = try_receive(source, tag)).has_value(); }, deadline);
    return m;
  }
  /// Waits up to `seconds` for the sends in flight (a clean shutdown's last messages).
  void flush(double seconds) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    poll_until(
        [&] {
          std::lock_guard lock(sends_mutex_);
          mpi_detail::reap(sends_);
          return sends_.empty();
        },
        until);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::mutex sends_mutex_;
  std::vector<mpi_detail::PendingSend> sends_;
};

/// A status as it crosses the wire: ok, or an error's code and text.
inline void put_status(Writer& w, const Error* error) {
  w.put<std::uint8_t>(error ? 1 : 0);
  if (error) w.put(static_cast<std::int32_t>(error->code())).put_string(error->what());
}
/// Reads a status; raises the error it carries with its own type.
inline void get_status(Reader& r) {
  if (r.get<std::uint8_t>() == 0) return;
  const auto code = static_cast<ErrorCode>(r.get<std::int32_t>());
  throw_error(code, r.get_string());
}

inline std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }
inline Clock::time_point after(double s) { return Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds(s)); }

}  // namespace devtensor::distribute::ps_wire
