#pragma once
/// @file ps_channel.hpp
/// @brief Parameter-server messages crossing processes: MPI point-to-point with deadlines on a
/// communicator of the job's own, a message's payloads after it, and waiting without spinning.
///
/// Waiting polls (MPI_Improbe / MPI_Test): for 2 ms yielding the core between polls, then with
/// sleeps that grow to a millisecond. Open MPI's blocking calls spin a core for as long as they
/// wait, and a server spinning beside workers on a machine with more ranks than cores starves
/// them. Sends that cannot complete (a dead peer) keep their buffers until MPI_Finalize
/// (Runtime::keep_until_finalize), as the collectives' do.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/multi_worker/mpi_runtime.hpp"
#include "devtensor/distribute/multi_worker/ps_wire.hpp"

namespace devtensor::distribute::ps_wire {

/// How long poll_until polls without giving up the core: a 1 MiB push/pull's reply takes ~130 us.
/// A yield there can hand the core to another process for a whole time slice (8 alternated jobs
/// each, 2 vCPUs: the push/pull's median 410 us without this phase, 319 us with it; raw MPI ~270).
inline constexpr std::chrono::microseconds kBusyPoll{300};

/// Calls `ready()` until it returns true or `deadline` passes (then false). For `spin` it polls
/// without sleeping (an answer is usually that close: a request's reply, a busy server's next
/// request): for the first kBusyPoll of it without yielding, then yielding the core to any other
/// runnable thread; then it sleeps between polls, 20 us doubling to 1 ms, so that an idle process
/// leaves the cores to those that compute.
template <class Ready>
bool poll_until(Ready&& ready, Clock::time_point deadline,
                std::chrono::microseconds spin = std::chrono::microseconds(2000)) {
  const auto start = Clock::now();
  const auto spin_until = start + spin;
  const auto busy_until = start + std::min(spin, kBusyPoll);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (ready()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now < busy_until) continue;
    if (now < spin_until) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

/// The strategy's communicator (a duplicate of MPI_COMM_WORLD) and its point-to-point calls.
class Channel {
 public:
  /// Collective over MPI_COMM_WORLD: every process of the job constructs its channel.
  /// `timeout_seconds`: how long a message's payloads may take after it.
  /// @throws FailedPreconditionError when MPI runs without MPI_THREAD_MULTIPLE.
  explicit Channel(double timeout_seconds);
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel();

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }

  [[nodiscard]] double timeout_seconds() const noexcept { return timeout_seconds_; }

  /// Starts sending `message`, then its payloads (one thread's message and payloads are posted
  /// together: a receiver finds a sender's payloads in the order of its messages). The buffers
  /// live until the sends complete (or until MPI_Finalize).
  void send(int destination, int tag, Writer message);
  /// Forgets the sends that completed (and so releases the tensors they read).
  void reap();
  /// Receives `size` bytes of a payload from `source`, sent after a message with `tag`, into
  /// `destination`. @throws UnavailableError when they have not come at `deadline` (a receive
  /// MPI cannot cancel keeps `keep`, the destination's owner, until MPI_Finalize).
  void receive_payload(int source, int tag, std::byte* destination, std::size_t size, Clock::time_point deadline,
                       const std::shared_ptr<const void>& keep);
  /// A message from `source` (MPI_ANY_SOURCE: anyone) with `tag`, if one has arrived.
  std::optional<Message> try_receive(int source, int tag);
  /// The next message from `source` with `tag`, or nothing at `deadline`.
  std::optional<Message> receive(int source, int tag, Clock::time_point deadline);
  /// Waits up to `seconds` for the sends in flight (a clean shutdown's last messages).
  void flush(double seconds);

 private:
  double timeout_seconds_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::mutex sends_mutex_;
  std::vector<mpi_detail::PendingSend> sends_;

  /// One MPI_Isend of `size` bytes at `data`, `keep` holding them; under sends_mutex_.
  void post(const void* data, std::size_t size, int destination, int tag, std::shared_ptr<const void> keep);
};

#if DEVTENSOR_MPI_DEFINITIONS  // Note [The mpi component's compiled part]

DEVTENSOR_MPI_DEFINITION Channel::Channel(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
  auto& runtime = mpi_detail::Runtime::get();
  if (runtime.thread_level() < MPI_THREAD_MULTIPLE)
    throw FailedPreconditionError(
        "ParameterServerStrategy needs MPI_THREAD_MULTIPLE (a worker's heartbeat and a chief's dispatcher run on "
        "their own threads), but MPI was initialised with thread level " +
        std::to_string(runtime.thread_level()) +
        ". Let devtensor initialise MPI, or call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...).");
  mpi_detail::check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // a dead peer is an error code, not the job's end
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  runtime.limit_finalize_wait(std::max(timeout_seconds, 1.0));  // a peer may die: do not wait for it at exit
}

DEVTENSOR_MPI_DEFINITION Channel::~Channel() {
  mpi_detail::Runtime::get().keep_until_finalize(std::move(sends_));  // MPI_Finalize frees the communicator
}

DEVTENSOR_MPI_DEFINITION void Channel::send(int destination, int tag, Writer message) {
  auto header = std::make_shared<const Writer>(std::move(message));
  std::lock_guard lock(sends_mutex_);
  post(header->bytes().data(), header->bytes().size(), destination, tag, header);
  for (const auto& p : header->payloads())
    for (std::size_t offset = 0; offset < p.size; offset += kChunkBytes)
      post(p.data + offset, std::min(kChunkBytes, p.size - offset), destination, tag + kPayloadTagOffset, p.keep);
  mpi_detail::reap(sends_);
}

DEVTENSOR_MPI_DEFINITION void Channel::reap() {
  std::lock_guard lock(sends_mutex_);
  mpi_detail::reap(sends_);
}

DEVTENSOR_MPI_DEFINITION void Channel::receive_payload(int source, int tag, std::byte* destination, std::size_t size,
                                                       Clock::time_point deadline,
                                                       const std::shared_ptr<const void>& keep) {
  for (std::size_t offset = 0; offset < size; offset += kChunkBytes) {
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_detail::check(MPI_Irecv(destination + offset, static_cast<int>(std::min(kChunkBytes, size - offset)), MPI_BYTE,
                                source, tag + kPayloadTagOffset, comm_, &request),
                      "MPI_Irecv");
    // It was sent right after its message: spin as MPI_Wait would (a yield can hand the core
    // to another process for a whole time slice), then poll with sleeps up to the deadline.
    int done = 0;
    for (const auto spin_until = Clock::now() + std::chrono::milliseconds(5); !done && Clock::now() < spin_until;)
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    const bool arrived = done || poll_until(
                                     [&] {
                                       if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                                         return true;  // a dead sender: done == 0
                                       return done != 0;
                                     },
                                     deadline);
    if (arrived && done) continue;
    if (!done) {
      MPI_Cancel(&request);
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (!done) {
      std::vector<mpi_detail::PendingSend> pending(1);
      pending[0] = {request, keep};
      mpi_detail::Runtime::get().keep_until_finalize(std::move(pending));
    }
    throw UnavailableError("The " + std::to_string(size) + "-byte payload of a parameter-server message from rank " +
                           std::to_string(source) + " did not arrive within " + std::to_string(timeout_seconds_) +
                           " s: that process has probably failed");
  }
}

DEVTENSOR_MPI_DEFINITION std::optional<Message> Channel::try_receive(int source, int tag) {
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

DEVTENSOR_MPI_DEFINITION std::optional<Message> Channel::receive(int source, int tag, Clock::time_point deadline) {
  std::optional<Message> m;
  poll_until([&] { return (m = try_receive(source, tag)).has_value(); }, deadline);
  return m;
}

DEVTENSOR_MPI_DEFINITION void Channel::flush(double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  poll_until(
      [&] {
        std::lock_guard lock(sends_mutex_);
        mpi_detail::reap(sends_);
        return sends_.empty();
      },
      until);
}

DEVTENSOR_MPI_DEFINITION void Channel::post(const void* data, std::size_t size, int destination, int tag,
                                            std::shared_ptr<const void> keep) {
  mpi_detail::PendingSend pending;
  mpi_detail::check(MPI_Isend(data, static_cast<int>(size), MPI_BYTE, destination, tag, comm_, &pending.request),
                    "MPI_Isend");
  pending.buffer = std::move(keep);
  sends_.push_back(std::move(pending));
}

DEVTENSOR_MPI_DEFINITION Reader::Reader(Message message, Channel& channel)
    : bytes_(std::move(message.bytes)), channel_(&channel), source_(message.source), tag_(message.tag) {}

DEVTENSOR_MPI_DEFINITION std::shared_ptr<Payloads> Reader::make_payloads() const {
  return std::make_shared<Payloads>(*channel_, source_, tag_, after(channel_->timeout_seconds()));
}

DEVTENSOR_MPI_DEFINITION void Payloads::drain(std::size_t end) {
  if (received_ >= end) return;
  auto scratch = std::make_shared<Bytes>(*std::max_element(sizes_.begin() + static_cast<std::ptrdiff_t>(received_),
                                                           sizes_.begin() + static_cast<std::ptrdiff_t>(end)));
  for (; received_ < end; ++received_)
    channel_.receive_payload(source_, tag_, scratch->data(), sizes_[received_], deadline_, scratch);
}

DEVTENSOR_MPI_DEFINITION void Payloads::receive(std::size_t index, std::byte* destination,
                                                std::shared_ptr<const void> keep) {
  if (index < received_ || index >= sizes_.size())
    throw InternalError("parameter-server message: a payload read twice");
  drain(index);  // those before it that nobody took
  channel_.receive_payload(source_, tag_, destination, sizes_[index], deadline_, keep);
  ++received_;
}

DEVTENSOR_MPI_DEFINITION Payloads::~Payloads() noexcept {
  try {
    drain(sizes_.size());
  } catch (...) {  // the sender died: nothing more will come from it
  }
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::ps_wire
