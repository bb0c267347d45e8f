// devtensor::Error and the typed errors.
#include <boost/test/unit_test.hpp>

#include <type_traits>

#include "devtensor/core/error.hpp"

using namespace devtensor;

static_assert(std::is_base_of_v<std::runtime_error, Error>);
static_assert(std::is_base_of_v<Error, InvalidArgumentError>);
static_assert(std::is_base_of_v<Error, NotFoundError>);
static_assert(std::is_base_of_v<Error, FailedPreconditionError>);
static_assert(std::is_base_of_v<Error, ResourceExhaustedError>);
static_assert(std::is_base_of_v<Error, UnimplementedError>);
static_assert(std::is_base_of_v<Error, InternalError>);
static_assert(std::is_base_of_v<Error, DeadlineExceededError>);

BOOST_AUTO_TEST_SUITE(errors)

template <class E>
void check_error(ErrorCode code, std::string_view code_name) {
  try {
    throw E("what went wrong");
  } catch (const Error& e) {  // catchable as the base
    BOOST_TEST((e.code() == code));
    BOOST_TEST(std::string(e.what()) == "what went wrong");
    BOOST_TEST((to_string(e.code()) == code_name));
    BOOST_TEST(dynamic_cast<const E*>(&e) != nullptr);
  }
}

BOOST_AUTO_TEST_CASE(codes_and_messages) {
  check_error<InvalidArgumentError>(ErrorCode::invalid_argument, "INVALID_ARGUMENT");
  check_error<NotFoundError>(ErrorCode::not_found, "NOT_FOUND");
  check_error<FailedPreconditionError>(ErrorCode::failed_precondition, "FAILED_PRECONDITION");
  check_error<ResourceExhaustedError>(ErrorCode::resource_exhausted, "RESOURCE_EXHAUSTED");
  check_error<UnimplementedError>(ErrorCode::unimplemented, "UNIMPLEMENTED");
  check_error<InternalError>(ErrorCode::internal, "INTERNAL");
  check_error<DeadlineExceededError>(ErrorCode::deadline_exceeded, "DEADLINE_EXCEEDED");
  check_error<UnavailableError>(ErrorCode::unavailable, "UNAVAILABLE");
  check_error<OutOfRangeError>(ErrorCode::out_of_range, "OUT_OF_RANGE");
  check_error<CancelledError>(ErrorCode::cancelled, "CANCELLED");
  check_error<DataLossError>(ErrorCode::data_loss, "DATA_LOSS");
  check_error<AlreadyExistsError>(ErrorCode::already_exists, "ALREADY_EXISTS");
}

// An error that crossed a process boundary as (code, text) is raised again with its own type.
BOOST_AUTO_TEST_CASE(throw_error_raises_the_codes_own_type) {
  const auto raised = [](ErrorCode code) -> ErrorCode {
    try {
      throw_error(code, "remote");
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()) == "remote");
      return e.code();
    }
  };
  for (ErrorCode code : {ErrorCode::invalid_argument, ErrorCode::not_found, ErrorCode::failed_precondition,
                         ErrorCode::resource_exhausted, ErrorCode::unimplemented, ErrorCode::internal,
                         ErrorCode::deadline_exceeded, ErrorCode::unavailable, ErrorCode::out_of_range,
                         ErrorCode::cancelled, ErrorCode::data_loss, ErrorCode::already_exists})
    BOOST_TEST((raised(code) == code));
  BOOST_CHECK_THROW(throw_error(ErrorCode::unavailable, "ps"), UnavailableError);
}

BOOST_AUTO_TEST_CASE(catchable_as_std_runtime_error) {
  BOOST_CHECK_THROW(throw NotFoundError("x"), std::runtime_error);
  BOOST_CHECK_THROW(throw InvalidArgumentError("x"), std::exception);
}

BOOST_AUTO_TEST_SUITE_END()
