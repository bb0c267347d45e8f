#pragma once
/// @file error.hpp
/// @brief The exceptions devtensor throws.
///
/// Every error derives from devtensor::Error, itself a std::runtime_error, and carries the
/// TensorFlow status code it corresponds to. Messages keep TensorFlow's key phrases so that what users
/// already know (and search for) carries over.

#include <stdexcept>
#include <string>
#include <string_view>

namespace devtensor {

/// The TensorFlow status codes devtensor uses.
enum class ErrorCode {
  invalid_argument,
  not_found,
  failed_precondition,
  resource_exhausted,
  unimplemented,
  internal,
  deadline_exceeded,
  unavailable,
  out_of_range,
  cancelled,
  data_loss,
  already_exists,
};

/// TensorFlow's spelling of a code, e.g. "INVALID_ARGUMENT".
constexpr std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "INVALID_ARGUMENT";
    case ErrorCode::not_found: return "NOT_FOUND";
    case ErrorCode::failed_precondition: return "FAILED_PRECONDITION";
    case ErrorCode::resource_exhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::unimplemented: return "UNIMPLEMENTED";
    case ErrorCode::internal: return "INTERNAL";
    case ErrorCode::deadline_exceeded: return "DEADLINE_EXCEEDED";
    case ErrorCode::unavailable: return "UNAVAILABLE";
    case ErrorCode::out_of_range: return "OUT_OF_RANGE";
    case ErrorCode::cancelled: return "CANCELLED";
    case ErrorCode::data_loss: return "DATA_LOSS";
    case ErrorCode::already_exists: return "ALREADY_EXISTS";
  }
  return "UNKNOWN";
}

/// Base of every devtensor exception.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// A bad argument: malformed device names, shape mismatches, invalid configuration values.
class InvalidArgumentError : public Error {
 public:
  explicit InvalidArgumentError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

/// A named device or allocator that does not exist.
class NotFoundError : public Error {
 public:
  explicit NotFoundError(const std::string& message) : Error(ErrorCode::not_found, message) {}
};

/// Configuration after initialisation, or a call in the wrong state.
class FailedPreconditionError : public Error {
 public:
  explicit FailedPreconditionError(const std::string& message) : Error(ErrorCode::failed_precondition, message) {}
};

/// Out of memory.
class ResourceExhaustedError : public Error {
 public:
  explicit ResourceExhaustedError(const std::string& message) : Error(ErrorCode::resource_exhausted, message) {}
};

/// A feature that this build or this hardware cannot provide.
class UnimplementedError : public Error {
 public:
  explicit UnimplementedError(const std::string& message) : Error(ErrorCode::unimplemented, message) {}
};

/// A broken invariant inside devtensor.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ErrorCode::internal, message) {}
};

/// An operation that did not complete in time: a collective whose peers did not all arrive
/// within CommunicationOptions::timeout_seconds.
class DeadlineExceededError : public Error {
 public:
  explicit DeadlineExceededError(const std::string& message) : Error(ErrorCode::deadline_exceeded, message) {}
};

/// A peer that cannot be reached: a parameter-server task that stopped answering.
class UnavailableError : public Error {
 public:
  explicit UnavailableError(const std::string& message) : Error(ErrorCode::unavailable, message) {}
};

/// The end of a sequence: an iterator with no element left (TensorFlow's "End of sequence").
class OutOfRangeError : public Error {
 public:
  explicit OutOfRangeError(const std::string& message) : Error(ErrorCode::out_of_range, message) {}
};

/// Work given up because something it depended on failed first.
class CancelledError : public Error {
 public:
  explicit CancelledError(const std::string& message) : Error(ErrorCode::cancelled, message) {}
};

/// Unrecoverable data loss or corruption: a record whose checksum does not match, a file cut short
/// (TensorFlow's DataLossError).
class DataLossError : public Error {
 public:
  explicit DataLossError(const std::string& message) : Error(ErrorCode::data_loss, message) {}
};

/// What was to be made exists already: a second profiler (TensorFlow's AlreadyExistsError).
class AlreadyExistsError : public Error {
 public:
  explicit AlreadyExistsError(const std::string& message) : Error(ErrorCode::already_exists, message) {}
};

/// Throws the exception of `code` with `message`: an error that crossed a process boundary
/// as its status code and text is raised again with its own type.
[[noreturn]] inline void throw_error(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::invalid_argument: throw InvalidArgumentError(message);
    case ErrorCode::not_found: throw NotFoundError(message);
    case ErrorCode::failed_precondition: throw FailedPreconditionError(message);
    case ErrorCode::resource_exhausted: throw ResourceExhaustedError(message);
    case ErrorCode::unimplemented: throw UnimplementedError(message);
    case ErrorCode::internal: throw InternalError(message);
    case ErrorCode::deadline_exceeded: throw DeadlineExceededError(message);
    case ErrorCode::unavailable: throw UnavailableError(message);
    case ErrorCode::out_of_range: throw OutOfRangeError(message);
    case ErrorCode::data_loss: throw DataLossError(message);
    case ErrorCode::already_exists: throw AlreadyExistsError(message);
    case ErrorCode::cancelled: throw CancelledError(message);
  }
  throw InternalError(message);
}

}  // namespace devtensor
