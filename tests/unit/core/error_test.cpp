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
}

BOOST_AUTO_TEST_CASE(catchable_as_std_runtime_error) {
  BOOST_CHECK_THROW(throw NotFoundError("x"), std::runtime_error);
  BOOST_CHECK_THROW(throw InvalidArgumentError("x"), std::exception);
}

BOOST_AUTO_TEST_SUITE_END()
