#pragma once
/// @file pipeline.hpp
/// @brief The steps of an input pipeline, written once for any element type E (a dataset's
/// elements, or the row numbers of a dataset of rows): take, repeat, shuffle and prefetch, each
/// turning an opener of passes into another. Only data/any_dataset.hpp's definitions use the steps,
/// so translation units of the compiled mode see just the pass types.

// Note [Prefetching]
// prefetch runs a pass's steps on a thread of its own, up to `buffer` elements ahead of the
// reader, so the pipeline's host work overlaps the reader's work instead of adding to it
// (tf.data's prefetch). The pass is opened on the reader's thread, so a shuffle's pass number, and
// with it the order, is the one an unprefetched pass would draw; the elements and any error come
// out in the order the steps made them, the error after the elements made before it. Dropping the
// pass (the reader stopped early) stops the thread after the element it is making, and waits for
// it. A pipeline that reads device memory is not prefetched: its copies would queue on the stream
// the reader's steps use, from another thread, which a CUDA graph being captured there forbids.
//
// What it costs: on a 2-vCPU VM (2026-11-28) handing an element over took 16-19 us (a pass of 8
// batches: 238 -> 378 us), a thread's start and join 47 us, and a pool of kept threads did not
// change fit's times. fit's own batching costs 2-11 us a step, so fit prefetching its batches, as
// Keras does, made an epoch 9-15 % slower: fit does not prefetch; a user's dataset can.

#include <functional>
#include <optional>

#include "devtensor/config.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // only the definitions instantiate the steps (Note [Compiled mode])
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "devtensor/ops/random.hpp"
#include "devtensor/ops/thread_state.hpp"
#endif

namespace devtensor::data::pipeline {

/// One pass: the next element, or nothing at the end.
template <class E>
using Next = std::function<std::optional<E>()>;
/// Opens a fresh pass.
template <class E>
using Open = std::function<Next<E>()>;

#if DEVTENSOR_HEADER_DEFINITIONS
// The transformations, written once for any element type E: a dataset's elements, or the row
// numbers of a dataset of rows (Note [Datasets of rows]).

/// The first `count` elements of each pass (-1: all).
template <class E>
Open<E> take(Open<E> open, std::int64_t count) {
  return [open = std::move(open), count] {
    return Next<E>([inner = open(), count, taken = std::int64_t{0}]() mutable -> std::optional<E> {
      if (count >= 0 && taken >= count) return std::nullopt;
      ++taken;
      return inner();
    });
  };
}

/// `count` passes one after the other (-1: forever); a pass without elements ends it, as
/// repeating it forever would hang.
template <class E>
Open<E> repeat(Open<E> open, std::int64_t count) {
  return [open = std::move(open), count] {
    return Next<E>(
        [open, count, done = std::int64_t{0}, current = Next<E>(), produced = false]() mutable -> std::optional<E> {
          while (count == -1 || done < count) {
            if (!current) {
              current = open();
              produced = false;
            }
            if (auto element = current()) {
              produced = true;
              return element;
            }
            current = Next<E>();
            ++done;
            if (!produced) return std::nullopt;
          }
          return std::nullopt;
        });
  };
}

/// TensorFlow's shuffle buffer: up to `buffer_size` elements; each output is drawn uniformly from
/// it and its place taken by the last. Pass p draws from splitmix64(base ^ splitmix64(p)); p counts
/// the passes opened when `reshuffle`, else stays 0.
template <class E>
Open<E> shuffle(Open<E> open, std::int64_t buffer_size, std::uint64_t base, bool reshuffle) {
  return
      [open = std::move(open), buffer_size, base, reshuffle, passes = std::make_shared<std::atomic<std::uint64_t>>(0)] {
        const std::uint64_t pass = reshuffle ? passes->fetch_add(1) : 0;
        return Next<E>([inner = open(), buffer_size, rng = std::mt19937_64(splitmix64(base ^ splitmix64(pass))),
                        buffer = std::vector<E>(), exhausted = false]() mutable -> std::optional<E> {
          while (!exhausted && static_cast<std::int64_t>(buffer.size()) < buffer_size) {
            auto element = inner();
            if (!element)
              exhausted = true;
            else
              buffer.push_back(std::move(*element));
          }
          if (buffer.empty()) return std::nullopt;
          std::uniform_int_distribution<std::size_t> pick(0, buffer.size() - 1);
          const std::size_t i = pick(rng);
          E out = std::move(buffer[i]);
          buffer[i] = std::move(buffer.back());
          buffer.pop_back();
          return out;
        });
      };
}

/// A pass computed ahead on a thread of its own (Note [Prefetching]).
template <class E>
class Prefetcher {
 public:
  Prefetcher(Next<E> inner, std::size_t buffer)
      : inner_(std::move(inner)), buffer_(buffer), reader_(ThreadState::snapshot()), thread_([this] { produce(); }) {}
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  ~Prefetcher() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    space_.notify_one();
    thread_.join();
  }

  /// The next element, waiting for it; rethrows what the steps threw, in its place.
  std::optional<E> next() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return std::nullopt;
    }
    E element = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    space_.notify_one();
    return element;
  }

 private:
  void produce() noexcept {
    std::exception_ptr error;
    try {
      const ThreadStateGuard as_reader(reader_);  // the steps run in the reader's context (scopes, strategy)
      for (;;) {
        {
          std::unique_lock lock(mutex_);
          space_.wait(lock, [this] { return stop_ || queue_.size() < buffer_; });
          if (stop_) return;
        }
        std::optional<E> element = inner_();  // unlocked: the reader takes what is ready meanwhile
        std::lock_guard lock(mutex_);
        if (element)
          queue_.push_back(std::move(*element));
        else
          done_ = true;
        ready_.notify_one();
        if (done_) return;
      }
    } catch (...) {
      error = std::current_exception();
    }
    // Published after the handler has ended, so this thread lets go of the exception before the
    // reader can see it: the reader's copy is then the last, and the exception dies on the reader's
    // thread (else ThreadSanitizer sees its destructor race the reader's what()).
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
    done_ = true;
    ready_.notify_one();
  }

  Next<E> inner_;
  const std::size_t buffer_;
  std::mutex mutex_;
  std::condition_variable ready_;  // an element, the end or an error for the reader
  std::condition_variable space_;  // room in the buffer, or stop, for the thread
  std::deque<E> queue_;
  bool done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  ThreadState reader_;  // the context the pass was opened in (Note [One thread state])
  std::thread thread_;  // last: it starts once the rest is built
};

/// Each pass computed up to `buffer` (>= 1) elements ahead of its reader (Note [Prefetching]).
template <class E>
Open<E> prefetch(Open<E> open, std::size_t buffer) {
  return [open = std::move(open), buffer] {
    return Next<E>([prefetcher = std::make_shared<Prefetcher<E>>(open(), buffer)] { return prefetcher->next(); });
  };
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::data::pipeline
