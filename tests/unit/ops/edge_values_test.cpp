// Inputs at the edges of int64 and float (issue 13): checked shape arithmetic, defined integer and
// cast results, range's arguments, undefined tensors, and requests that can never fit. Each class
// runs on the CPU and, where the op runs there, on a simulated GPU.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
using dt::InvalidArgumentError;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kMin32 = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t k2p32 = std::int64_t{1} << 32;
constexpr std::int64_t k2p40 = std::int64_t{1} << 40;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using IntegerTypes = std::tuple<std::int32_t, std::int64_t>;
using NumericTypes = std::tuple<float, double, std::int32_t, std::int64_t>;

/// Runs `body` on the CPU and then with a simulated GPU as the default device.
template <class F>
void on_cpu_and_simulated_gpu(F body) {
  body("CPU");
  dt::testing::reset_context();
  dt::config::set_simulated_gpus(1, dt::kGiB);
  body("GPU");
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(edge_values, dt::test::FreshContext)

// --- 1. checked arithmetic -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(checked_helpers_name_the_values_and_the_op) {
  BOOST_TEST(dt::checked_add(kMax - 1, 1, "x") == kMax);
  BOOST_TEST(dt::checked_mul(k2p32, k2p32 / 4, "x") == std::int64_t{1} << 62);
  DEVTENSOR_CHECK_THROW_WITH((void)dt::checked_add(kMax, 1, "the size", "Pad"), InvalidArgumentError,
                             "Encountered overflow when adding 9223372036854775807 and 1 computing the size: "
                             "the result does not fit in int64 (max 9223372036854775807) [Op:Pad]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::checked_mul(k2p32, k2p32, "the count"), InvalidArgumentError,
                             "multiplying 4294967296 and 4294967296 computing the count");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::checked_add(kMin, -1, "the size"), InvalidArgumentError,
                             "adding -9223372036854775808 and -1");
  BOOST_TEST(dt::checked_byte_count(kMax / 8, 8) == static_cast<std::size_t>(kMax / 8 * 8));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::checked_byte_count(kMax / 4, 8, "Fill"), InvalidArgumentError,
                             "A tensor of 2305843009213693951 elements of 8 bytes has a byte size that does "
                             "not fit in int64 [Op:Fill]");
  BOOST_TEST(dt::number_string(0.1) == "0.1");
  BOOST_TEST(dt::number_string(1e300) == "1e+300");
  BOOST_TEST(dt::number_string(-kInf) == "-inf");
}

BOOST_AUTO_TEST_CASE(shapes_whose_element_count_overflows_are_rejected_in_any_order) {
  DEVTENSOR_CHECK_THROW_WITH((dt::Shape{k2p40, k2p40}), InvalidArgumentError,
                             "Shape [1099511627776,1099511627776] would have more than 2**63 - 1 elements");
  // A zero dimension does not make the others' product fit: strides would still overflow.
  BOOST_CHECK_THROW((dt::Shape{0, k2p40, k2p40}), InvalidArgumentError);
  BOOST_CHECK_THROW((dt::Shape{k2p40, k2p40, 0}), InvalidArgumentError);
  BOOST_CHECK_THROW((dt::Shape{2, 2, 2, 2, 2, 2, 2, kMax / 64}), InvalidArgumentError);  // heap-stored rank
  BOOST_TEST((dt::Shape{kMax}).num_elements() == kMax);
  BOOST_TEST((dt::Shape{0, kMax}).num_elements() == 0);
  BOOST_TEST((dt::Shape{2, kMax / 2}).strides()[0] == kMax / 2);
  DEVTENSOR_CHECK_THROW_WITH((dt::Shape{2, kMin}), InvalidArgumentError, "Dimension -9223372036854775808 must be >= 0");
  DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({k2p40, k2p40}), InvalidArgumentError, "would have more than 2**63 - 1");
  // Broadcast output shapes name the op.
  DEVTENSOR_CHECK_THROW_WITH(
      dt::broadcast_shapes(dt::Shape{k2p40, 1, 0}, dt::Shape{1, k2p40, 1}, "AddV2"), InvalidArgumentError,
      "Shape [1099511627776,1099511627776,0] would have more than 2**63 - 1 elements [Op:AddV2]");
}

BOOST_AUTO_TEST_CASE(byte_counts_that_overflow_are_invalid_before_any_allocation) {
  on_cpu_and_simulated_gpu([](const char*) {
    DEVTENSOR_CHECK_THROW_WITH(dt::zeros<double>({std::int64_t{1} << 62}), InvalidArgumentError,
                               "A tensor of 4611686018427387904 elements of 8 bytes has a byte size that does "
                               "not fit in int64 [Op:Fill]");
    BOOST_CHECK_THROW(dt::zeros<std::int32_t>({kMax / 2, 1}), InvalidArgumentError);
  });
}

BOOST_AUTO_TEST_CASE(slice_bounds_are_checked_without_overflowing) {
  on_cpu_and_simulated_gpu([](const char*) {
    const auto t = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    DEVTENSOR_CHECK_THROW_WITH(dt::slice(t, {1, 2}, {1, kMax}), InvalidArgumentError,
                               "Expected size[1] in [0, 1], but got 9223372036854775807 (begin [1,2], shape "
                               "[2,3]) [Op:Slice]");
    DEVTENSOR_CHECK_THROW_WITH(dt::slice(t, {kMax, 0}, {-1, 1}), InvalidArgumentError,
                               "Expected begin[0] in [0, 2], but got 9223372036854775807");
    DEVTENSOR_CHECK_THROW_WITH(dt::slice(t, {kMin, 0}, {1, 1}), InvalidArgumentError, "Expected begin[0] in [0, 2]");
    DEVTENSOR_CHECK_THROW_WITH(dt::slice(t, {0, 0}, {kMin, 1}), InvalidArgumentError, "Expected size[0] in [0, 2]");
    // The edges that are valid still work: an empty slice at the end, -1 to the end.
    BOOST_TEST(dt::slice(t, {2, 3}, {0, 0}).num_elements() == 0);
    BOOST_TEST(dt::slice(t, {1, 1}, {-1, -1}).to_vector() == (std::vector<float>{5, 6}),
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(pad_reshape_split_concat_check_their_sizes) {
  on_cpu_and_simulated_gpu([](const char*) {
    const auto t = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    DEVTENSOR_CHECK_THROW_WITH(dt::pad(t, {{kMax - 1, 3}, {0, 0}}), InvalidArgumentError,
                               "Encountered overflow when adding 2 and 9223372036854775806 computing the padded "
                               "size of a dimension");
    DEVTENSOR_CHECK_THROW_WITH(dt::pad(t, {{1, 1}, {kMax - 3, 1}}), InvalidArgumentError, "[Op:Pad]");
    DEVTENSOR_CHECK_THROW_WITH(dt::pad(t, {{k2p40, 0}, {k2p40, 0}}), InvalidArgumentError,
                               "Shape [1099511627778,1099511627779] would have more than 2**63 - 1 elements [Op:Pad]");
    DEVTENSOR_CHECK_THROW_WITH(dt::reshape(dt::zeros<float>({0}), {k2p32, k2p32}), InvalidArgumentError,
                               "Encountered overflow when multiplying 4294967296 and 4294967296 computing the "
                               "element count of the requested shape");
    DEVTENSOR_CHECK_THROW_WITH(dt::reshape(dt::zeros<float>({0}), {k2p32, -1, k2p32}), InvalidArgumentError,
                               "[Op:Reshape]");
    BOOST_TEST(dt::reshape(dt::zeros<float>({0}), {kMax, 0}).shape() == (dt::Shape{kMax, 0}));
    DEVTENSOR_CHECK_THROW_WITH(
        dt::split(t, std::vector<std::int64_t>{kMax, kMax, -1}, 1), InvalidArgumentError,
        "Encountered overflow when adding 9223372036854775807 and 9223372036854775807 "
        "computing the sum of the split sizes: the result does not fit in int64 (max 9223372036854775807) [Op:SplitV]");
    BOOST_CHECK_THROW(dt::split(t, std::vector<std::int64_t>{kMax, 1}, 1), InvalidArgumentError);
    // concat of empty tensors whose joined dimension overflows.
    const auto wide = dt::zeros<float>({0, std::int64_t{1} << 62});
    DEVTENSOR_CHECK_THROW_WITH(dt::concat(std::vector{wide, wide}, 1), InvalidArgumentError,
                               "computing the size of the concatenated dimension: the result does not fit in int64 "
                               "(max 9223372036854775807) [Op:ConcatV2]");
    BOOST_TEST(dt::concat(std::vector{wide, wide}, 0).shape() == (dt::Shape{0, std::int64_t{1} << 62}));
    // Empty outputs whose leading dimensions are huge return at once (the op fuzzer found concat
    // counting 2^62 empty rows).
    const auto tall = dt::zeros<float>({std::int64_t{1} << 62, 0});
    BOOST_TEST(dt::concat(std::vector{tall, tall}, 1).shape() == (dt::Shape{std::int64_t{1} << 62, 0}));
    BOOST_TEST(dt::transpose(tall).shape() == (dt::Shape{0, std::int64_t{1} << 62}));
    BOOST_TEST(dt::pad(tall, {{0, 0}, {0, 0}}).num_elements() == 0);
    BOOST_TEST(dt::reduce_sum(dt::zeros<float>({0, std::int64_t{1} << 62}), 1).shape() == (dt::Shape{0}));
    BOOST_TEST(dt::split(tall, 2, 1).size() == 2u);
    BOOST_TEST((tall + tall).num_elements() == 0);
    // Reductions over an empty axis with more kept columns than one accumulator block (512):
    // the input buffer is null (found by the op fuzzer: pointer arithmetic on it).
    const auto no_rows = dt::zeros<float>({2, 0, 600});
    BOOST_TEST(dt::reduce_sum(no_rows, 1).to_vector() == std::vector<float>(1200, 0.0f),
               boost::test_tools::per_element());
    BOOST_TEST(dt::reduce_max(no_rows, 1).to_vector() == std::vector<float>(1200, -kInf),
               boost::test_tools::per_element());
    BOOST_TEST(dt::reduce_max(dt::zeros<std::int32_t>({0, 3}), 0).to_vector() == std::vector<std::int32_t>(3, kMin32),
               boost::test_tools::per_element());
  });
}

// --- 2. defined results at the edges -------------------------------------------------------------

// The mean of nothing is 0 / 0, as TensorFlow 2.21 and NumPy give it: NaN for floating types, 0
// for integers; over every axis, over one empty axis (each output is empty), with keepdims, and
// with more kept columns than one accumulator block.
BOOST_AUTO_TEST_CASE_TEMPLATE(the_mean_of_nothing_is_nan_for_floats_and_zero_for_integers, T, NumericTypes) {
  on_cpu_and_simulated_gpu([](const char* where) {
    BOOST_TEST_CONTEXT(where) {
      const auto expect_empty_means = [](const dt::Tensor<T>& mean, const dt::Shape& shape) {
        BOOST_TEST(mean.shape() == shape);
        for (T v : mean.to_vector()) {
          if constexpr (dt::Floating<T>)
            BOOST_TEST(std::isnan(v));
          else
            BOOST_TEST(v == T{0});
        }
      };
      expect_empty_means(dt::reduce_mean(dt::zeros<T>({0})), dt::Shape{});
      expect_empty_means(dt::reduce_mean(dt::zeros<T>({2, 0}), 1), dt::Shape{2});
      expect_empty_means(dt::reduce_mean(dt::zeros<T>({2, 0, 3}), 1, true), dt::Shape{2, 1, 3});
      expect_empty_means(dt::reduce_mean(dt::zeros<T>({0, 600}), 0), dt::Shape{600});
      expect_empty_means(dt::reduce_mean(dt::zeros<T>({2, 0}), std::vector<std::int64_t>{0, 1}), dt::Shape{});
      // An empty kept axis: no outputs at all; and non-empty means are unchanged.
      BOOST_TEST(dt::reduce_mean(dt::zeros<T>({0, 3}), 1).shape() == (dt::Shape{0}));
      BOOST_TEST(dt::reduce_mean(dt::constant<T>({1, 2, 3, 5}, {2, 2}), 1).to_vector() ==
                     (std::is_floating_point_v<T> ? std::vector<T>{T(1.5), 4} : std::vector<T>{1, 4}),
                 boost::test_tools::per_element());
    }
  });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(integer_floor_division_by_minus_one_wraps, T, IntegerTypes) {
  on_cpu_and_simulated_gpu([](const char*) {
    constexpr T lo = std::numeric_limits<T>::lowest();
    const auto q = dt::div(dt::constant<T>({lo, lo, 7, -7, 7, lo + 1}), dt::constant<T>({-1, 1, -2, 2, -1, -1}));
    // INT_MIN // -1 is the one quotient that overflows: it wraps to INT_MIN, as NumPy gives.
    BOOST_TEST(q.to_vector() == (std::vector<T>{lo, lo, -4, -4, -7, std::numeric_limits<T>::max()}),
               boost::test_tools::per_element());
    DEVTENSOR_CHECK_THROW_WITH(dt::div(dt::constant<T>({lo}), dt::constant<T>({0})), InvalidArgumentError,
                               "Integer division by zero [Op:FloorDiv]");
  });
  static_assert(dt::arith::floor_mod(std::numeric_limits<T>::lowest(), T{-1}) == 0);
  static_assert(dt::arith::floor_mod(T{7}, T{-2}) == -1 && dt::arith::floor_mod(T{-7}, T{2}) == 1);
  static_assert(dt::arith::floor_div(T{-7}, T{2}) == -4 && dt::arith::floor_div(T{6}, T{-3}) == -2);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(integer_arithmetic_wraps_modulo_two_to_the_n, T, IntegerTypes) {
  on_cpu_and_simulated_gpu([](const char*) {
    constexpr T lo = std::numeric_limits<T>::lowest();
    constexpr T hi = std::numeric_limits<T>::max();
    const auto x = dt::constant<T>({hi, lo, lo});
    BOOST_TEST((x + dt::constant<T>({1, -1, lo})).to_vector() == (std::vector<T>{lo, hi, 0}),
               boost::test_tools::per_element());
    BOOST_TEST((x - dt::constant<T>({-1, 1, hi})).to_vector() == (std::vector<T>{lo, hi, 1}),
               boost::test_tools::per_element());
    BOOST_TEST((x * dt::constant<T>({2, 2, -1})).to_vector() == (std::vector<T>{-2, 0, lo}),
               boost::test_tools::per_element());
    BOOST_TEST(dt::neg(x).to_vector() == (std::vector<T>{-hi, lo, lo}), boost::test_tools::per_element());
    BOOST_TEST(dt::abs(x).to_vector() == (std::vector<T>{hi, lo, lo}), boost::test_tools::per_element());
    BOOST_TEST(dt::square(dt::constant<T>({lo, hi})).to_vector() == (std::vector<T>{0, 1}),
               boost::test_tools::per_element());
    // Sums (reductions over every layout path, add_n, integer matmul) wrap the same way.
    const auto m = dt::constant<T>({hi, hi, 2, 1, hi, hi}, {3, 2});
    BOOST_TEST(dt::reduce_sum(m).item() == T{-1});  // 4*hi + 3 = 2^(N+1) - 1 mod 2^N
    BOOST_TEST(dt::reduce_sum(m, 0).to_vector() == (std::vector<T>{0, -1}), boost::test_tools::per_element());
    BOOST_TEST(dt::reduce_sum(m, 1).to_vector() == (std::vector<T>{-2, 3, -2}), boost::test_tools::per_element());
    BOOST_TEST(dt::reduce_mean(dt::constant<T>({hi, hi, 2})).item() == T{0});  // (2*hi + 2) wraps to 0
    BOOST_TEST(dt::reduce_mean(dt::constant<T>({-7, 0})).item() == T{-3});     // truncation toward zero
    BOOST_TEST(dt::add_n(std::vector{x, x}).to_vector() == (std::vector<T>{-2, 0, 0}),
               boost::test_tools::per_element());
    const auto row = dt::constant<T>({hi, 2}, {1, 2});
    BOOST_TEST(dt::matmul(row, dt::constant<T>({2, hi}, {2, 1})).item() == static_cast<T>(-4));
  });
}

BOOST_AUTO_TEST_CASE(float_to_integer_casts_truncate_and_saturate) {
  on_cpu_and_simulated_gpu([](const char*) {
    const auto x =
        dt::constant<float>({kNaN, kInf, -kInf, 1e20f, -1e20f, 3.9f, -3.9f, 2147483648.f, -2147483648.f, -0.5f});
    BOOST_TEST(dt::cast<std::int32_t>(x).to_vector() ==
                   (std::vector<std::int32_t>{0, kMax32, kMin32, kMax32, kMin32, 3, -3, kMax32, kMin32, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(x.cast<std::int64_t>().to_vector() ==
                   (std::vector<std::int64_t>{0, kMax, kMin, kMax, kMin, 3, -3, 2147483648, -2147483648, 0}),
               boost::test_tools::per_element());
    const auto d = dt::constant<double>({9223372036854775807.0, -9223372036854775808.0, 9.2233720368547748e18, 1e300});
    BOOST_TEST(
        dt::cast<std::int64_t>(d).to_vector() == (std::vector<std::int64_t>{kMax, kMin, 9223372036854774784, kMax}),
        boost::test_tools::per_element());
    BOOST_TEST(dt::cast<bool>(x).to_vector() ==
                   (std::vector<bool>{true, true, true, true, true, true, true, true, true, true}),
               boost::test_tools::per_element());
    // Integer narrowing wraps (two's complement), as TensorFlow's Cast.
    BOOST_TEST(dt::cast<std::int32_t>(dt::constant<std::int64_t>({k2p32 + 5, -1})).to_vector() ==
                   (std::vector<std::int32_t>{5, -1}),
               boost::test_tools::per_element());
  });
  static_assert(dt::arith::convert<std::int32_t>(2147483520.f) == 2147483520);  // largest float below 2^31
  static_assert(dt::arith::convert<std::int32_t>(-2147483904.f) == kMin32);
}

// Neg flips the sign bit and Abs clears it, zeros included, as TensorFlow 2.21's tf.negative and
// tf.abs (checked there): -(+0) is -0, |-0| is +0.
BOOST_AUTO_TEST_CASE(negation_and_absolute_value_of_signed_zeros) {
  on_cpu_and_simulated_gpu([](const char*) {
    const auto zeros = dt::constant<float>({-0.0f, 0.0f});
    const auto negated = dt::neg(zeros).to_vector();
    BOOST_TEST(!std::signbit(negated[0]));
    BOOST_TEST(std::signbit(negated[1]));
    for (float v : dt::abs(zeros).to_vector()) BOOST_TEST(!std::signbit(v));
    const auto d = dt::neg(dt::constant<double>({0.0})).to_vector();
    BOOST_TEST(std::signbit(d[0]));
  });
  static_assert(dt::arith::neg(std::int32_t{-2147483647 - 1}) == kMin32);  // still wraps
}

BOOST_AUTO_TEST_CASE(range_rejects_non_finite_arguments_by_name) {
  on_cpu_and_simulated_gpu([](const char*) {
    DEVTENSOR_CHECK_THROW_WITH(dt::range<float>(kNaN, 1, 1), InvalidArgumentError,
                               "Requires start to be finite, got nan [Op:Range]");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<float>(0, kNaN, 1), InvalidArgumentError,
                               "Requires limit to be finite, got nan");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<float>(0, kInf, 1), InvalidArgumentError,
                               "Requires limit to be finite, got inf");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<double>(0, 1, -std::numeric_limits<double>::infinity()), InvalidArgumentError,
                               "Requires delta to be finite, got -inf");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<double>(0, 1e300, 1e-300), InvalidArgumentError,
                               "Requires ((limit - start) / delta) <= 9223372036854775807: start 0, limit 1e+300, "
                               "delta 1e-300 [Op:Range]");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<std::int64_t>(kMin, kMax, 1), InvalidArgumentError,
                               "Requires ((limit - start) / delta) <= 9223372036854775807");
    DEVTENSOR_CHECK_THROW_WITH(dt::range<float>(1, 0, 0.5f), InvalidArgumentError,
                               "Requires start <= limit when delta > 0 (or start >= limit when delta < 0): 1/0");
    // Steps across the whole integer range are exact.
    BOOST_TEST(dt::range<std::int32_t>(kMin32, kMax32, kMax32).to_vector() ==
                   (std::vector<std::int32_t>{kMin32, -1, kMax32 - 1}),
               boost::test_tools::per_element());
    BOOST_TEST(dt::range<std::int64_t>(kMax, kMin, kMin).to_vector() == (std::vector<std::int64_t>{kMax, -1}),
               boost::test_tools::per_element());
    BOOST_TEST(dt::range<std::int64_t>(kMin, kMin + 3, kMax).to_vector() == (std::vector<std::int64_t>{kMin}),
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(random_uniform_needs_finite_bounds_of_the_type) {
  DEVTENSOR_CHECK_THROW_WITH(dt::random_uniform<float>({2}, {.minval = -1e300, .maxval = 1e300}), InvalidArgumentError,
                             "minval -1e+300, maxval 1e+300 [Op:RandomUniform]");
  BOOST_CHECK_THROW(dt::random_uniform<double>({2}, {.minval = -1e308, .maxval = 1e308}), InvalidArgumentError);
  BOOST_CHECK_THROW(dt::random_uniform<double>({2}, {.minval = 0, .maxval = std::numeric_limits<double>::infinity()}),
                    InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(undefined_tensors_are_named_as_such_by_every_op) {
  on_cpu_and_simulated_gpu([](const char*) {
    const dt::Tensor<float> u;
    const auto t = dt::constant<float>({1, 2, 3, 4}, {2, 2});
    const auto says = [](const char* op, int input) {
      return std::string("Input ") + std::to_string(input) + " of " + op +
             " is an undefined tensor (default-constructed or moved from)";
    };
    // Before any shape check: no message may describe it as a scalar "[]".
    DEVTENSOR_CHECK_THROW_WITH(dt::add(t, u), InvalidArgumentError, says("AddV2", 1));
    DEVTENSOR_CHECK_THROW_WITH(dt::div(u, t), InvalidArgumentError, says("RealDiv", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::div(dt::Tensor<std::int32_t>(), dt::scalar<std::int32_t>(1)), InvalidArgumentError,
                               says("FloorDiv", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::relu(u), InvalidArgumentError, says("Relu", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::matmul(t, u), InvalidArgumentError, says("MatMul", 1));
    DEVTENSOR_CHECK_THROW_WITH(dt::reduce_sum(u), InvalidArgumentError, says("Sum", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::reshape(u, {1}), InvalidArgumentError, says("Reshape", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::transpose(u), InvalidArgumentError, says("Transpose", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::concat(std::vector{t, u}, 0), InvalidArgumentError, says("ConcatV2", 1));
    DEVTENSOR_CHECK_THROW_WITH(dt::split(u, 1), InvalidArgumentError, says("SplitV", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::slice(u, {}, {}), InvalidArgumentError, says("Slice", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::broadcast_to(u, dt::Shape{2}), InvalidArgumentError, says("BroadcastTo", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::pad(u, {}), InvalidArgumentError, says("Pad", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::identity(u), InvalidArgumentError, says("Identity", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::cast<double>(u), InvalidArgumentError, says("Cast", 0));
    DEVTENSOR_CHECK_THROW_WITH(u.cast<double>(), InvalidArgumentError, says("Cast", 0));
    DEVTENSOR_CHECK_THROW_WITH(dt::add_n(std::vector{t, t, u}), InvalidArgumentError, says("AddN", 2));
    DEVTENSOR_CHECK_THROW_WITH((void)u.to_vector(), dt::FailedPreconditionError,
                               "This is an undefined tensor (default-constructed or moved from)");
  });
}

// --- 3. requests that can never fit fail at once ---------------------------------------------------

BOOST_AUTO_TEST_CASE(a_tensor_larger_than_the_whole_limit_fails_without_waiting) {
  dt::config::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(10000));
  dt::config::set_simulated_gpus(1, dt::kGiB);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("GPU")[0], {{.memory_limit_mb = 64}});
  for (const char* device : {"/cpu:0", "/gpu:0"}) {
    dt::DeviceScope scope(device);
    const auto start = std::chrono::steady_clock::now();
    DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({k2p40}), dt::ResourceExhaustedError,
                               "OOM when allocating tensor with shape[1099511627776] and type float");
    BOOST_TEST(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count() < 2000,
        device);
  }
  {
    dt::DeviceScope scope("/gpu:0");
    DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({32, 1024, 1024}), dt::ResourceExhaustedError,
                               "The request alone exceeds the limit of 64.00MiB (set by memory_limit_mb = 64");
  }
}

BOOST_AUTO_TEST_CASE(the_host_memory_limit_caps_cpu_tensors) {
  dt::config::experimental::set_host_memory_limit(16 * dt::kMiB);
  BOOST_TEST(dt::zeros<float>({1024, 1024}).num_elements() == 1024 * 1024);  // 4 MiB fits
  DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({8, 1024, 1024}), dt::ResourceExhaustedError,
                             "The request alone exceeds the limit of 16.00MiB (set by "
                             "config::experimental::set_host_memory_limit)");
  dt::config::experimental::set_host_memory_limit(16 * dt::kMiB);  // the same value: accepted
  DEVTENSOR_CHECK_THROW_WITH(dt::config::experimental::set_host_memory_limit(32 * dt::kMiB),
                             dt::FailedPreconditionError, "cannot be modified after being initialized");
}

BOOST_AUTO_TEST_CASE(dataset_cardinalities_are_checked) {
  const auto x = dt::constant<float>({1, 2, 3});
  using Dataset = dt::data::Dataset<float>;
  DEVTENSOR_CHECK_THROW_WITH(Dataset::from_tensor_slices(x).repeat(kMax), InvalidArgumentError,
                             "computing the cardinality of the repeated dataset: the result does not fit in int64 (max "
                             "9223372036854775807) [Op:RepeatDataset]");
  const auto many = Dataset::from_tensor_slices(x).repeat(kMax / 3);
  BOOST_TEST(many.cardinality() == kMax / 3 * 3);
  BOOST_TEST(many.batch(kMax).cardinality() == 1);
  BOOST_TEST(many.batch(4).cardinality() == (kMax - 1) / 4 + 1);  // 2^63 - 2 = 2 mod 4
  BOOST_TEST(many.batch(4, true).cardinality() == (kMax - 1) / 4);
  BOOST_CHECK_THROW(many.concatenate(many), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()

// --- float16 and bfloat16 (issue 65) -----------------------------------------------------------

namespace half_table {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

/// A tensor of `dtype` (the reference script's names) from hexadecimal bit patterns.
template <class T>
dt::Tensor<T> from_bits(const std::vector<std::string>& hex) {
  std::vector<T> values;
  for (const auto& h : hex) {
    const auto raw = std::stoull(h, nullptr, 16);
    if constexpr (std::is_same_v<T, bool>) {
      values.push_back(raw != 0);
    } else if constexpr (dt::is_sixteen_bit_float_v<T>) {
      values.push_back(T::from_bits(static_cast<std::uint16_t>(raw)));
    } else {
      const auto bits =
          static_cast<std::conditional_t<sizeof(T) == 8, std::uint64_t,
                                         std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint16_t>>>(raw);
      T v;
      std::memcpy(&v, &bits, sizeof v);
      values.push_back(v);
    }
  }
  return dt::constant<T>(values);
}

/// The elements' bits, as the reference script writes them.
template <class T>
std::vector<std::string> to_bits(const dt::Tensor<T>& t) {
  std::vector<std::string> out;
  for (T v : t.to_vector()) {
    char text[32];
    if constexpr (std::is_same_v<T, bool>) {
      std::snprintf(text, sizeof text, "%d", v ? 1 : 0);
    } else if constexpr (dt::is_sixteen_bit_float_v<T>) {
      std::snprintf(text, sizeof text, "%04x", static_cast<unsigned>(v.bits()));
    } else {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof v);  // little-endian: the low bytes
      std::snprintf(text, sizeof text, "%0*llx", static_cast<int>(2 * sizeof v), static_cast<unsigned long long>(bits));
    }
    out.emplace_back(text);
  }
  return out;
}

/// Calls fn.template operator()<T>() for a dtype name of the table.
template <class Fn>
auto with_dtype(const std::string& name, Fn&& fn) {
  if (name == "float32") return fn.template operator()<float>();
  if (name == "float64") return fn.template operator()<double>();
  if (name == "int32") return fn.template operator()<std::int32_t>();
  if (name == "bool") return fn.template operator()<bool>();
  if (name == "float16") return fn.template operator()<dt::float16>();
  if (name == "bfloat16") return fn.template operator()<dt::bfloat16>();
  throw std::runtime_error("unknown dtype " + name);
}

bool is_nan_bits(const std::string& dtype, const std::string& hex) {
  const auto raw = std::stoull(hex, nullptr, 16);
  if (dtype == "float16") return (raw & 0x7fff) > 0x7c00;
  if (dtype == "bfloat16") return (raw & 0x7fff) > 0x7f80;
  return false;
}

/// Runs the table's op on devtensor.
template <class T>
std::vector<std::string> run(const std::string& op, const std::string& out_dtype,
                             const std::vector<std::vector<std::string>>& inputs) {
  const auto x = from_bits<T>(inputs.at(0));
  if (op == "Cast") return with_dtype(out_dtype, [&]<class U>() { return to_bits(dt::cast<U>(x)); });
  if constexpr (dt::is_sixteen_bit_float_v<T>) {
    const auto unary = std::map<std::string, dt::Tensor<T> (*)(const dt::Tensor<T>&)>{
        {"Neg", [](const dt::Tensor<T>& a) { return dt::neg(a); }},
        {"Abs", [](const dt::Tensor<T>& a) { return dt::abs(a); }},
        {"Square", [](const dt::Tensor<T>& a) { return dt::square(a); }},
        {"Sqrt", [](const dt::Tensor<T>& a) { return dt::sqrt(a); }},
        {"Exp", [](const dt::Tensor<T>& a) { return dt::exp(a); }},
        {"Log", [](const dt::Tensor<T>& a) { return dt::log(a); }},
        {"Relu", [](const dt::Tensor<T>& a) { return dt::relu(a); }},
        {"Sigmoid", [](const dt::Tensor<T>& a) { return dt::sigmoid(a); }},
        {"Tanh", [](const dt::Tensor<T>& a) { return dt::tanh(a); }},
        {"Softplus", [](const dt::Tensor<T>& a) { return dt::softplus(a); }},
        {"Sum", [](const dt::Tensor<T>& a) { return dt::reduce_sum(a, std::nullopt); }},
        {"Mean", [](const dt::Tensor<T>& a) { return dt::reduce_mean(a, std::nullopt); }},
        {"Max", [](const dt::Tensor<T>& a) { return dt::reduce_max(a, std::nullopt); }},
    };
    if (const auto f = unary.find(op); f != unary.end()) return to_bits(f->second(x));
    const auto y = from_bits<T>(inputs.at(1));
    if (op == "AddV2") return to_bits(dt::add(x, y));
    if (op == "Sub") return to_bits(dt::sub(x, y));
    if (op == "Mul") return to_bits(dt::mul(x, y));
    if (op == "RealDiv") return to_bits(dt::div(x, y));
    if (op == "Maximum") return to_bits(dt::maximum(x, y));
    if (op == "Minimum") return to_bits(dt::minimum(x, y));
    if (op == "MatMul") return to_bits(dt::matmul(dt::reshape(x, {1, -1}), dt::reshape(y, {-1, 1})));
  }
  throw std::runtime_error("the table's op " + op + " is not known to the test");
}

/// Where devtensor's figure differs from TensorFlow's CPU kernels on purpose, and what it is:
/// {op, input dtype, output dtype, element} -> devtensor's bits.
/// - float -> int32 saturates and NaN -> 0 (arith::convert: the GPU's result); TensorFlow's CPU
///   returns x86's "integer indefinite" 0x80000000 for NaN, infinities and overflow.
/// - Sums and means of 16-bit floats accumulate in float (TensorFlow's GPU kernels do; its CPU
///   kernels add in 16 bits: 65504 + 65504 - 65504 is inf there, 2048 + 1 + 1 is 2048).
/// - bfloat16 arithmetic keeps float32 subnormals (gradual underflow, as on GPUs and in NumPy);
///   TensorFlow's CPU kernels run with denormals flushed to zero. The exact results, by hand:
///   2^-133 is bfloat16 0001.
using Key = std::tuple<std::string, std::string, std::string, std::size_t>;
const std::map<Key, std::string>& deliberate_differences() {
  static const std::map<Key, std::string> differences = [] {
    std::map<Key, std::string> d;
    for (const std::string from : {"float16", "bfloat16"}) {
      // inputs 4, 5 (±max: bfloat16's overflow int32), 10, 11 (±inf), 12..15 (NaNs)
      if (from == "bfloat16") {
        d[{"Cast", from, "int32", 4}] = "7fffffff";
        d[{"Cast", from, "int32", 5}] = "80000000";
      }
      d[{"Cast", from, "int32", 10}] = "7fffffff";
      for (std::size_t i = 12; i < 16; ++i) d[{"Cast", from, "int32", i}] = "00000000";
    }
    d[{"Sum", "float16", "float16", 0}] = "7bff";   // 65504, not inf
    d[{"Sum", "float16", "float16", 1}] = "6801";   // 2050 (the second Sum line, see below)
    d[{"Mean", "float16", "float16", 0}] = "6157";  // 2050 / 3 = 683.33 -> 683.5
    // bfloat16 subnormals (TensorFlow: 0, or NaN for 0 / 0)
    d[{"Cast", "bfloat16", "float64", 6}] = "37a0000000000000";  // 2^-133
    d[{"Cast", "bfloat16", "float64", 7}] = "b7a0000000000000";
    d[{"Cast", "bfloat16", "float64", 8}] = "380fc00000000000";  // 127 * 2^-133
    d[{"Sub", "bfloat16", "bfloat16", 3}] = "0002";              // 2^-133 - -2^-133
    d[{"Mul", "bfloat16", "bfloat16", 10}] = "0040";             // 2^-126 * 0.5
    d[{"RealDiv", "bfloat16", "bfloat16", 3}] = "bf80";          // 2^-133 / -2^-133
    d[{"Maximum", "bfloat16", "bfloat16", 3}] = "0001";
    d[{"Minimum", "bfloat16", "bfloat16", 3}] = "8001";
    d[{"Sqrt", "bfloat16", "bfloat16", 8}] = "1e35";  // 2^-66.5
    d[{"Log", "bfloat16", "bfloat16", 8}] = "c2b8";   // -92.19 -> -92
    d[{"Relu", "bfloat16", "bfloat16", 8}] = "0001";
    d[{"Tanh", "bfloat16", "bfloat16", 8}] = "0001";
    return d;
  }();
  return differences;
}

}  // namespace half_table

BOOST_FIXTURE_TEST_SUITE(half_precision, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(casts_and_elementwise_results_are_tensorflows_bits) {
  std::ifstream in(DEVTENSOR_REFERENCE_DIR "/half_precision.txt");
  BOOST_TEST_REQUIRE(in.good(), "cannot read " DEVTENSOR_REFERENCE_DIR "/half_precision.txt");
  std::map<std::string, int> seen_sums;  // the table has two Sum lines per dtype
  int lines = 0, compared = 0, differences_used = 0;
  for (std::string line; std::getline(in, line);) {
    const auto fields = half_table::split(line, ' ');
    BOOST_TEST_REQUIRE(fields.size() == 5u, line);
    const auto& op = fields[0];
    const auto& from = fields[1];
    const auto& to = fields[2];
    std::vector<std::vector<std::string>> inputs;
    for (const auto& list : half_table::split(fields[3], ';')) inputs.push_back(half_table::split(list, ','));
    const auto want = half_table::split(fields[4], ',');
    const auto got = half_table::with_dtype(from, [&]<class T>() { return half_table::run<T>(op, to, inputs); });
    BOOST_TEST_REQUIRE(got.size() == want.size(), line);
    const int sum_index = op == "Sum" ? seen_sums[from]++ : 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      auto expected = want[i];
      const std::size_t key_index = op == "Sum" ? static_cast<std::size_t>(sum_index) : i;
      if (const auto d = half_table::deliberate_differences().find({op, from, to, key_index});
          d != half_table::deliberate_differences().end()) {
        expected = d->second;
        ++differences_used;
      }
      // A NaN computed by math is any NaN (its sign and payload are the math library's);
      // conversions keep theirs exactly.
      const bool both_nan =
          op != "Cast" && half_table::is_nan_bits(to, expected) && half_table::is_nan_bits(to, got[i]);
      BOOST_TEST((both_nan || got[i] == expected), op << ' ' << from << "->" << to << " element " << i << " (input "
                                                      << inputs[0][i] << "): devtensor " << got[i] << ", TensorFlow "
                                                      << want[i]
                                                      << (expected != want[i] ? " (expected " + expected + ")" : ""));
      ++compared;
    }
    ++lines;
  }
  BOOST_TEST(lines == 58);
  BOOST_TEST(compared > 700);
  BOOST_TEST(differences_used == 27);  // every deliberate difference is still one
}

BOOST_AUTO_TEST_CASE(the_types_round_to_nearest_even_have_tensorflows_names_and_print_as_numpy) {
  static_assert(sizeof(dt::float16) == 2 && sizeof(dt::bfloat16) == 2);
  static_assert(std::is_trivially_copyable_v<dt::float16> && std::is_trivially_copyable_v<dt::bfloat16>);
  static_assert(dt::float16(0.1f).bits() == 0x2e66 && dt::bfloat16(0.1f).bits() == 0x3dcd);
  static_assert(dt::float16(65519.0f).bits() == 0x7bff && dt::float16(65520.0f).bits() == 0x7c00);
  static_assert(static_cast<float>(dt::float16::from_bits(0x0001)) == 5.9604644775390625e-8f);
  static_assert(static_cast<float>(dt::bfloat16::from_bits(0x3f81)) == 1.0078125f);
  static_assert(std::numeric_limits<dt::float16>::max().bits() == 0x7bff);
  static_assert(dt::float16(2049).bits() == 0x6800);  // a tie: to even, 2048
  BOOST_TEST(dt::dtype_name<dt::float16>() == "float16");
  BOOST_TEST(dt::dtype_string<dt::float16>() == "half");
  BOOST_TEST(dt::dtype_enum_name<dt::float16>() == "DT_HALF");
  BOOST_TEST(dt::dtype_name<dt::bfloat16>() == "bfloat16");
  BOOST_TEST(dt::dtype_enum_name<dt::bfloat16>() == "DT_BFLOAT16");
  BOOST_TEST(dt::dtype_size(dt::DType::DT_HALF) == 2u);
  BOOST_TEST(dt::dtype_name(dt::DType::DT_BFLOAT16) == "bfloat16");
  const auto print = [](const auto& t) {
    std::ostringstream out;
    out << t;
    return out.str();
  };
  // TensorFlow 2.21's text (NumPy 2 for float16, ml_dtypes for bfloat16)
  const auto h = dt::constant<float>({0.1f, 1.5f, 65504.0f}).cast<dt::float16>();
  BOOST_TEST(print(h) == "tf.Tensor([1.00e-01 1.50e+00 6.55e+04], shape=(3,), dtype=float16)");
  BOOST_TEST(print(dt::scalar<float>(0.1f).cast<dt::float16>()) == "tf.Tensor(0.1, shape=(), dtype=float16)");
  BOOST_TEST(print(dt::constant<float>({kNaN, 1, -kInf}).cast<dt::float16>()) ==
             "tf.Tensor([ nan   1. -inf], shape=(3,), dtype=float16)");
  BOOST_TEST(print(dt::constant<float>({1e-5f, 1, 2, 3}, {2, 2}).cast<dt::float16>()) ==
             "tf.Tensor(\n[[1.e-05 1.e+00]\n [2.e+00 3.e+00]], shape=(2, 2), dtype=float16)");
  BOOST_TEST(print(dt::constant<float>({0.1f, 1.5f, -3}).cast<dt::bfloat16>()) ==
             "tf.Tensor([0.100098 1.5 -3], shape=(3,), dtype=bfloat16)");
  BOOST_TEST(print(dt::constant<float>({1e-5f, 1e10f, 2, 3000000}, {2, 2}).cast<dt::bfloat16>()) ==
             "tf.Tensor(\n[[1.00136e-05 9.99922e+09]\n [2 2.99827e+06]], shape=(2, 2), dtype=bfloat16)");
  BOOST_TEST(print(dt::constant<float>({kNaN, 1, -kInf, -0.0f, 123456}).cast<dt::bfloat16>()) ==
             "tf.Tensor([nan 1 -inf -0 123392], shape=(5,), dtype=bfloat16)");
  BOOST_TEST(print(dt::scalar<float>(0.1f).cast<dt::bfloat16>()) == "tf.Tensor(0.100098, shape=(), dtype=bfloat16)");
}

namespace half_gradients {
/// One type's computation of tests/reference/half_gradients.py: the loss, then the gradients of
/// w, b, v (float32 variables read through casts) and of the cast x, as floats.
template <class D>
std::vector<float> run() {
  std::vector<float> x0(15), w0(12), v0(8);
  for (int i = 0; i < 15; ++i) x0[static_cast<std::size_t>(i)] = (static_cast<float>(i) - 7.0f) / 4.0f;
  for (int i = 0; i < 12; ++i) w0[static_cast<std::size_t>(i)] = (static_cast<float>(i) - 5.5f) / 6.0f;
  for (int i = 0; i < 8; ++i) v0[static_cast<std::size_t>(i)] = (static_cast<float>(i) - 3.0f) / 5.0f;
  dt::Variable<float> w(dt::constant<float>(w0, {3, 4})), b(dt::constant<float>({0.25f, -0.5f, 0.125f, 0.75f})),
      v(dt::constant<float>(v0, {4, 2}));
  const auto t = dt::constant<float>({0.5f, -0.25f, 1.0f, 0.0f, 2.0f});
  dt::GradientTape tape({.persistent = true});
  const auto x = dt::constant<float>(x0, {5, 3}).cast<D>();
  tape.watch(x);
  const auto h = dt::relu(dt::add(dt::matmul(x, w.value().cast<D>()), b.value().cast<D>()));
  const auto z = dt::matmul(h, v.value().cast<D>());
  const auto u = dt::sub(dt::add(dt::mul(dt::tanh(z), dt::sigmoid(z)), dt::softplus(z)),
                         dt::div(dt::exp(dt::neg(dt::square(z))), dt::scalar<D>(D(4.0f))));
  const auto m = dt::maximum(u, dt::mul(dt::neg(u), dt::scalar<D>(D(2.0f))));
  const auto first = dt::reshape(dt::slice(u, {0, 0}, {-1, 1}), {5});
  const auto r = dt::mul(dt::reduce_mean(m, 1), dt::log(dt::add(dt::scalar<D>(D(1.0f)), dt::abs(first))));
  const auto loss = dt::reduce_sum(dt::square(dt::sub(r.template cast<float>(), t)));
  std::vector<float> out{loss.item()};
  for (const auto& g : tape.gradient(loss, std::vector<dt::Variable<float>>{w, b, v}))
    for (float e : g.to_vector()) out.push_back(e);
  for (const auto e : tape.gradient(loss, x).to_vector()) out.push_back(static_cast<float>(e));
  return out;
}
}  // namespace half_gradients

BOOST_AUTO_TEST_CASE(gradients_flow_through_sixteen_bit_ops_as_tensorflows) {
  // tests/reference/half_gradients.py (TensorFlow 2.21): float32 variables read through casts to
  // the 16-bit type, a relu layer, tanh · sigmoid + softplus − exp(−z²)/4, maximum, a mean, log,
  // abs, a slice, and a float32 loss. The gradients cross the casts both ways.
  std::ifstream in(DEVTENSOR_REFERENCE_DIR "/half_gradients.txt");
  BOOST_TEST_REQUIRE(in.good(), "cannot read " DEVTENSOR_REFERENCE_DIR "/half_gradients.txt");
  int types = 0;
  for (std::string line; std::getline(in, line);) {
    const auto fields = half_table::split(line, ' ');
    const auto ours = fields[0] == "float16" ? half_gradients::run<dt::float16>() : half_gradients::run<dt::bfloat16>();
    BOOST_TEST_REQUIRE(ours.size() + 1 == fields.size(), line);
    // Every value within a few units in the last place of the 16-bit type, relative to the largest
    // gradient of its group (TensorFlow's CPU kernels order some 16-bit sums differently).
    const float eps = fields[0] == "float16" ? 0x1p-10f : 0x1p-7f;
    int exact = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const float want = std::stof(fields[i + 1]);
      exact += ours[i] == want;
      BOOST_TEST(std::abs(ours[i] - want) <= 4 * eps * std::max(1.0f, std::abs(want)),
                 fields[0] << " value " << i << ": " << ours[i] << " vs TensorFlow's " << want);
    }
    BOOST_TEST_MESSAGE(fields[0] << ": " << exact << " of " << ours.size() << " values equal TensorFlow's bits");
    ++types;
  }
  BOOST_TEST(types == 2);
}

namespace half_windows {
/// tests/reference/half_conv.py's inputs: ((i·mul mod m) − sub) / div as float32, then the type.
template <class D>
dt::Tensor<D> values(std::int64_t count, std::int64_t mul, std::int64_t mod, std::int64_t sub, float div,
                     const std::vector<std::int64_t>& shape) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>((i * mul) % mod - sub) / div;
  return dt::constant<float>(v, dt::Shape(shape)).template cast<D>();
}
template <class D>
dt::Tensor<D> gradient_like(const dt::Tensor<D>& t) {
  return values<D>(t.num_elements(), 7, 11, 5, 6.0f, t.shape().dims_vector());
}
/// The gradient that reaches x through op(x), given the output gradient d: sum(op(x) · d) is
/// differentiated (its gradient at op's output is d exactly).
template <class D, class Op>
dt::Tensor<D> backprop(const dt::Tensor<D>& x, Op&& op) {
  dt::GradientTape tape;
  tape.watch(x);
  const auto y = op(x);
  const auto loss = dt::reduce_sum(dt::mul(y, gradient_like(y)), std::nullopt);
  return tape.gradient(loss, x);
}
/// Each op's output, as half_conv.py names them.
template <class D>
std::map<std::string, dt::Tensor<D>> run() {
  const auto x = values<D>(150, 37, 23, 11, 7.0f, {2, 5, 5, 3});
  const auto w = values<D>(108, 13, 17, 8, 9.0f, {3, 3, 3, 4});
  const auto b = dt::constant<float>({-1.5f / 8, -0.5f / 8, 0.5f / 8, 1.5f / 8}).cast<D>();
  const auto s = values<D>(28, 29, 31, 15, 4.0f, {4, 7});
  std::map<std::string, dt::Tensor<D>> out;
  const auto same = dt::conv2d(x, w, 1, "SAME");
  out["Conv2D_same"] = same;
  out["Conv2D_valid2"] = dt::conv2d(x, w, 2, "VALID");
  const auto dy = gradient_like(same);
  out["Conv2DBackpropInput"] = dt::conv2d_backprop_input(x.shape(), w, dy, 1, "SAME");
  out["Conv2DBackpropFilter"] = dt::conv2d_backprop_filter(x, w.shape(), dy, 1, "SAME");
  out["BiasAdd"] = dt::bias_add(dy, b);
  {
    dt::GradientTape tape;  // BiasAddGrad: the bias's gradient of sum(bias_add(v, b) · dy)
    tape.watch(b);
    const auto loss = dt::reduce_sum(dt::mul(dt::bias_add(dt::zeros<D>(dy.shape()), b), dy), std::nullopt);
    out["BiasAddGrad"] = tape.gradient(loss, b);
  }
  for (const auto& [suffix, k, stride, padding] : {std::tuple{"2", 2, 2, "VALID"}, std::tuple{"3", 3, 1, "SAME"}}) {
    const auto max = [&](const dt::Tensor<D>& in) { return dt::max_pool2d(in, k, stride, padding); };
    const auto avg = [&](const dt::Tensor<D>& in) { return dt::avg_pool2d(in, k, stride, padding); };
    out[std::string("MaxPool") + suffix] = max(x);
    out[std::string("AvgPool") + suffix] = avg(x);
    out[std::string("MaxPoolGrad") + suffix] = backprop(x, max);
    out[std::string("AvgPoolGrad") + suffix] = backprop(x, avg);
  }
  const auto f = values<D>(54, 13, 17, 8, 9.0f, {3, 3, 3, 2});
  const auto depthwise = dt::depthwise_conv2d(x, f, 1, "SAME");
  out["DepthwiseConv2dNative"] = depthwise;
  out["DepthwiseConv2dNative_valid2"] = dt::depthwise_conv2d(x, f, 2, "VALID");
  const auto ddw = gradient_like(depthwise);
  out["DepthwiseConv2dNativeBackpropInput"] = dt::depthwise_conv2d_backprop_input(x.shape(), f, ddw, 1, "SAME");
  out["DepthwiseConv2dNativeBackpropFilter"] = dt::depthwise_conv2d_backprop_filter(x, f.shape(), ddw, 1, "SAME");
  out["Softmax"] = dt::softmax(s);
  out["LogSoftmax"] = dt::log_softmax(s);
  return out;
}
/// Whether `got` is within `ulps` units in the last place of `want` (the unit of a normal number
/// of want's binade, the smallest normal's below it).
inline bool within_ulps(float got, float want, int mantissa_bits, int min_exponent, int ulps) {
  const int exponent = want == 0 ? min_exponent : std::max(min_exponent, std::ilogb(want));
  return std::abs(got - want) <= static_cast<float>(ulps) * std::ldexp(1.0f, exponent - mantissa_bits);
}
}  // namespace half_windows

BOOST_AUTO_TEST_CASE(windowed_ops_in_sixteen_bits_as_tensorflows) {
  // tests/reference/half_conv.py (TensorFlow 2.21's CPU kernels): float16 and bfloat16
  // convolutions (depthwise too), their backprops, the bias, the pools and their gradients, softmax. devtensor
  // computes them in float and rounds once (Note [Sixteen-bit bodies in float]); TensorFlow's
  // kernels sum in other orders (oneDNN), so a value may differ by an ulp.
  std::ifstream in(DEVTENSOR_REFERENCE_DIR "/half_conv.txt");
  BOOST_TEST_REQUIRE(in.good(), "cannot read " DEVTENSOR_REFERENCE_DIR "/half_conv.txt");
  const auto half = half_windows::run<dt::float16>();
  const auto brain = half_windows::run<dt::bfloat16>();
  // Where TensorFlow's CPU kernels add terms in the 16-bit type, rounding at each addition (the
  // average pools, the gradients that gather several windows' terms into one element, the bias's
  // sum over 50 positions), devtensor adds in float and rounds once (as TensorFlow's GPU kernels
  // and cuDNN): those are compared within a few units in the last place of the op's largest value.
  const std::set<std::string> summed_in_sixteen_bits{"BiasAddGrad", "AvgPool2", "AvgPool3", "MaxPoolGrad3",
                                                     "AvgPoolGrad3"};
  int lines = 0, compared = 0, exact = 0;
  for (std::string line; std::getline(in, line);) {
    const auto fields = half_table::split(line, ' ');
    const auto& op = fields[0];
    const bool is_half = fields[1] == "float16";
    const auto ours = is_half ? half.at(op).template cast<float>() : brain.at(op).template cast<float>();
    const auto got = ours.to_vector();
    BOOST_TEST_REQUIRE(got.size() + 2 == fields.size(), line.substr(0, 40));
    std::vector<float> want(got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto bits = static_cast<std::uint16_t>(std::stoul(fields[i + 2], nullptr, 16));
      want[i] = is_half ? static_cast<float>(dt::float16::from_bits(bits))
                        : static_cast<float>(dt::bfloat16::from_bits(bits));
    }
    const float largest = std::abs(
        *std::max_element(want.begin(), want.end(), [](float a, float b) { return std::abs(a) < std::abs(b); }));
    const int mantissa = is_half ? 10 : 7, min_exponent = is_half ? -14 : -126;
    int op_exact = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      op_exact += got[i] == want[i];
      const bool close = summed_in_sixteen_bits.contains(op)
                             ? std::abs(got[i] - want[i]) <= 4 * std::ldexp(1.0f, std::ilogb(largest) - mantissa)
                             : half_windows::within_ulps(got[i], want[i], mantissa, min_exponent, 1);
      BOOST_TEST(close,
                 op << ' ' << fields[1] << " element " << i << ": devtensor " << got[i] << ", TensorFlow " << want[i]);
    }
    BOOST_TEST_MESSAGE(op << ' ' << fields[1] << ": " << op_exact << " of " << got.size() << " equal");
    exact += op_exact;
    compared += static_cast<int>(got.size());
    ++lines;
  }
  BOOST_TEST(lines == 40);
  BOOST_TEST_MESSAGE(exact << " of " << compared << " values equal TensorFlow's bits");
  BOOST_TEST(exact * 100 >= compared * 90);
}

BOOST_AUTO_TEST_CASE(tf32_is_on_by_default_as_tensorflows) {
  // (No CPU test turns it off; GPU test programs do, in their main.)
  BOOST_TEST(dt::config::experimental::tensor_float_32_execution_enabled());
  dt::config::experimental::enable_tensor_float_32_execution(false);
  BOOST_TEST(!dt::config::experimental::tensor_float_32_execution_enabled());
  dt::config::experimental::enable_tensor_float_32_execution(true);
}

BOOST_AUTO_TEST_CASE(sums_means_and_products_accumulate_in_float) {
  using dt::float16;
  // 2048 + 1 + 1: in float16 each addition would round back to 2048
  const auto x = dt::constant<float>({2048, 1, 1}).cast<float16>();
  BOOST_TEST(dt::reduce_sum(x, std::nullopt).item().bits() == float16(2050).bits());
  BOOST_TEST(dt::reduce_mean(x, std::nullopt).item().bits() == float16(2050.0f / 3).bits());
  BOOST_TEST(dt::matmul(dt::reshape(x, {1, 3}), dt::ones<float16>({3, 1})).item().bits() == float16(2050).bits());
  BOOST_TEST(dt::matmul(dt::reshape(x, {3, 1}), dt::ones<float16>({3, 1}), true, false).item().bits() ==
             float16(2050).bits());
  // 10 000 x 0.1: float16 additions stop at 256 (0.1 is below half its spacing there)
  const auto tenths = dt::fill<float16>(dt::Shape{10000}, float16(0.1f));
  const float sum = static_cast<float>(dt::reduce_sum(tenths, std::nullopt).item());
  BOOST_TEST(std::abs(sum - 999.75f) < 1.0f);  // 10 000 x 0.0999755859375, rounded to 1000 in float16
  const auto rows = dt::reduce_sum(dt::reshape(dt::concat<float16>({x, x}, 0), {2, 3}), std::vector<std::int64_t>{1});
  BOOST_TEST(rows.to_vector()[1].bits() == float16(2050).bits());
  // max keeps -inf as the identity; the empty sum is 0 and the empty mean NaN
  BOOST_TEST(dt::reduce_max(dt::constant<float>({-kInf}).cast<float16>(), std::nullopt).item().bits() == 0xfc00);
  BOOST_TEST(dt::reduce_sum(dt::zeros<float16>({0}), std::nullopt).item().bits() == 0x0000);
  BOOST_TEST(dt::isnan(dt::reduce_mean(dt::zeros<dt::bfloat16>({0}), std::nullopt).item()));
  // Range's arguments are checked as float's
  const auto r = dt::range<float16>(float16(0), float16(2), float16(0.5f));
  BOOST_TEST(r.num_elements() == 4);
  BOOST_TEST(static_cast<float>(r.to_vector()[3]) == 1.5f);
  DEVTENSOR_CHECK_THROW_WITH(dt::range<float16>(float16(0), float16(kInf), float16(1)), InvalidArgumentError,
                             "Requires limit to be finite, got inf [Op:Range]");
}

BOOST_AUTO_TEST_SUITE_END()
