// Tensor<T>: handles, element access, printing, dtype names, buffers and their accounting.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <sstream>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;

namespace {
template <class T>
std::string print(const dt::Tensor<T>& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(tensor, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(dtype_names) {
  BOOST_TEST(dt::Tensor<float>::dtype() == "float32");
  BOOST_TEST(dt::Tensor<double>::dtype() == "float64");
  BOOST_TEST(dt::Tensor<std::int32_t>::dtype() == "int32");
  BOOST_TEST(dt::Tensor<std::int64_t>::dtype() == "int64");
  BOOST_TEST(dt::Tensor<bool>::dtype() == "bool");
  BOOST_TEST(dt::dtype_string<float>() == "float");
  BOOST_TEST(dt::dtype_string<double>() == "double");
}

BOOST_AUTO_TEST_CASE(printing_like_tensorflow) {
  BOOST_TEST(print(dt::matmul(dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}),
                              dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}))) ==
             "tf.Tensor(\n[[22. 28.]\n [49. 64.]], shape=(2, 2), dtype=float32)");
  // TensorFlow starts a new line only when NumPy's text has more than one.
  BOOST_TEST(print(dt::constant<float>({1, 2}, {1, 2})) == "tf.Tensor([[1. 2.]], shape=(1, 2), dtype=float32)");
  BOOST_TEST(print(dt::scalar<float>(3)) == "tf.Tensor(3.0, shape=(), dtype=float32)");
  BOOST_TEST(print(dt::range<std::int64_t>(0, 2000)) ==
             "tf.Tensor([   0    1    2 ... 1997 1998 1999], shape=(2000,), dtype=int64)");
  BOOST_TEST(print(dt::zeros<float>({2, 0})) == "tf.Tensor([], shape=(2, 0), dtype=float32)");
  BOOST_TEST(print(dt::Tensor<float>()) == "tf.Tensor(<undefined>)");
}

// The expected strings follow NumPy's documented rules (numpy.set_printoptions, array2string and
// the scalar str), worked out by hand; see Note [NumPy's printing rules] in print.hpp.
BOOST_AUTO_TEST_CASE(numpy_float_alignment) {
  using dt::format_values;
  // Integer parts right-aligned, fractions left-aligned and padded with spaces.
  BOOST_TEST(format_values(dt::constant<float>({1.5f, -2, 3, 40}, {2, 2})) == "[[ 1.5 -2. ]\n [ 3.  40. ]]");
  BOOST_TEST(format_values(dt::constant<float>({-1.25f, 0.5f})) == "[-1.25  0.5 ]");
  BOOST_TEST(format_values(dt::constant<float>({1, 1000})) == "[   1. 1000.]");  // ratio 1000: not > 1000
  BOOST_TEST(format_values(dt::zeros<double>({2, 1, 2})) == "[[[0. 0.]]\n\n [[0. 0.]]]");
}

BOOST_AUTO_TEST_CASE(numpy_shortest_round_trip) {
  using dt::format_values;
  BOOST_TEST(format_values(dt::constant<float>({0.1f}) + dt::constant<float>({0.2f})) == "[0.3]");  // not 0.30000001
  BOOST_TEST(format_values(dt::constant<float>({1.0f / 3})) == "[0.33333334]");  // float32's shortest
  BOOST_TEST(format_values(dt::constant<double>({1.0 / 3})) == "[0.33333333]");  // precision 8 in arrays
  BOOST_TEST(format_values(dt::constant<double>({3.141592653589793})) == "[3.14159265]");
  BOOST_TEST(format_values(dt::constant<float>({-0.0f, 2})) == "[-0.  2.]");
}

BOOST_AUTO_TEST_CASE(numpy_scientific_notation) {
  using dt::format_values;
  BOOST_TEST(format_values(dt::constant<float>({1e-5f, 1})) == "[1.e-05 1.e+00]");       // smallest < 1e-4
  BOOST_TEST(format_values(dt::constant<float>({1.5e-5f, 1})) == "[1.5e-05 1.0e+00]");   // same digits for all
  BOOST_TEST(format_values(dt::constant<float>({1, 1001})) == "[1.000e+00 1.001e+03]");  // ratio > 1000
  BOOST_TEST(format_values(dt::constant<float>({1e8f})) == "[1.e+08]");                  // largest >= 1e8
  BOOST_TEST(format_values(dt::constant<double>({1e-100, 1})) == "[1.e-100 1.e+000]");   // exponents one width
  BOOST_TEST(format_values(dt::constant<float>({0, 1e-5f})) == "[0.e+00 1.e-05]");       // zero does not count
}

BOOST_AUTO_TEST_CASE(numpy_nan_and_inf) {
  using dt::format_values;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  BOOST_TEST(format_values(dt::constant<double>({nan, 1, -inf})) == "[ nan   1. -inf]");
  BOOST_TEST(format_values(dt::constant<double>({nan, inf})) == "[nan inf]");
  BOOST_TEST(format_values(dt::constant<double>({1.5, inf})) == "[1.5 inf]");
}

BOOST_AUTO_TEST_CASE(numpy_scalars) {
  using dt::format_values;
  BOOST_TEST(format_values(dt::scalar<float>(3)) == "3.0");
  BOOST_TEST(format_values(dt::scalar<float>(0.3f)) == "0.3");
  BOOST_TEST(format_values(dt::scalar<float>(1.0f / 3)) == "0.33333334");
  BOOST_TEST(format_values(dt::scalar<double>(1.0 / 3)) == "0.3333333333333333");  // no precision cap
  BOOST_TEST(format_values(dt::scalar<float>(123456789.0f)) == "123456790.0");
  BOOST_TEST(format_values(dt::scalar<float>(1e-5f)) == "1e-05");
  BOOST_TEST(format_values(dt::scalar<float>(1e-4f)) == "1e-04");  // float32 0.0001 is just below 1e-4
  BOOST_TEST(format_values(dt::scalar<double>(1e-4)) == "0.0001");
  BOOST_TEST(format_values(dt::scalar<double>(1e16)) == "1e+16");
  BOOST_TEST(format_values(dt::scalar<double>(-2.5e20)) == "-2.5e+20");
  BOOST_TEST(format_values(dt::scalar<float>(-0.0f)) == "-0.0");
  BOOST_TEST(format_values(dt::scalar<double>(std::numeric_limits<double>::quiet_NaN())) == "nan");
  BOOST_TEST(format_values(dt::scalar<double>(-std::numeric_limits<double>::infinity())) == "-inf");
  BOOST_TEST(format_values(dt::scalar<std::int32_t>(-7)) == "-7");
  BOOST_TEST(format_values(dt::scalar<std::int64_t>(std::numeric_limits<std::int64_t>::min())) ==
             "-9223372036854775808");
  BOOST_TEST(format_values(dt::scalar<bool>(true)) == "True");
}

BOOST_AUTO_TEST_CASE(numpy_integers_and_booleans) {
  using dt::format_values;
  BOOST_TEST(format_values(dt::constant<std::int32_t>({1, -20, 3})) == "[  1 -20   3]");
  BOOST_TEST(format_values(dt::constant<std::int64_t>({5, 100}, {2, 1})) == "[[  5]\n [100]]");
  BOOST_TEST(format_values(dt::constant<bool>({true, false})) == "[ True False]");
  BOOST_TEST(format_values(dt::constant<bool>({true, true})) == "[ True  True]");  // " True" always
  BOOST_TEST(format_values(dt::zeros<std::int32_t>({0})) == "[]");
  BOOST_TEST(format_values(dt::zeros<bool>({3, 0, 2})) == "[]");
}

BOOST_AUTO_TEST_CASE(numpy_line_wrapping) {
  using dt::format_values;
  // 75 columns: a line takes another word only when it then ends before column 75 less one per
  // open bracket; continuation lines are indented to the first element.
  BOOST_TEST(format_values(dt::range<std::int32_t>(0, 100)) ==
             "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
             " 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47\n"
             " 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71\n"
             " 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95\n"
             " 96 97 98 99]");
  BOOST_TEST(format_values(dt::range<float>(0, 30)) ==
             "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
             " 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]");
  BOOST_TEST(format_values(dt::reshape(dt::range<float>(0, 60), {2, 30})) ==
             "[[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
             "  18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]\n"
             " [30. 31. 32. 33. 34. 35. 36. 37. 38. 39. 40. 41. 42. 43. 44. 45. 46. 47.\n"
             "  48. 49. 50. 51. 52. 53. 54. 55. 56. 57. 58. 59.]]");
}

BOOST_AUTO_TEST_CASE(numpy_summarisation) {
  using dt::format_values;
  // More than 1000 elements: 3 edge items per long axis, widths from the shown values only.
  BOOST_TEST(format_values(dt::zeros<float>({1000})).find("...") == std::string::npos);  // 1000 is not more
  BOOST_TEST(format_values(dt::range<std::int64_t>(0, 1001)) == "[   0    1    2 ...  998  999 1000]");
  BOOST_TEST(format_values(dt::range<double>(0, 2000)) ==
             "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
  BOOST_TEST(format_values(dt::reshape(dt::range<std::int32_t>(0, 2000), {40, 50})) ==
             "[[   0    1    2 ...   47   48   49]\n"
             " [  50   51   52 ...   97   98   99]\n"
             " [ 100  101  102 ...  147  148  149]\n"
             " ...\n"
             " [1850 1851 1852 ... 1897 1898 1899]\n"
             " [1900 1901 1902 ... 1947 1948 1949]\n"
             " [1950 1951 1952 ... 1997 1998 1999]]");
  BOOST_TEST(format_values(dt::zeros<std::int32_t>({2, 2, 300})) ==
             "[[[0 0 0 ... 0 0 0]\n  [0 0 0 ... 0 0 0]]\n\n [[0 0 0 ... 0 0 0]\n  [0 0 0 ... 0 0 0]]]");
  const std::string row = " [[0 0 0 ... 0 0 0]]\n\n";
  BOOST_TEST(format_values(dt::zeros<std::int32_t>({8, 1, 200})) ==
             "[" + row.substr(1) + row + row + " ...\n\n" + row + row + " [[0 0 0 ... 0 0 0]]]");
  BOOST_TEST(format_values(dt::ones<bool>({1001})) == "[ True  True  True ...  True  True  True]");
  // PrintOptions holds NumPy's other defaults; a caller may pass its own.
  BOOST_TEST(format_values(dt::range<std::int32_t>(0, 10), dt::PrintOptions{.threshold = 5, .edgeitems = 2}) ==
             "[0 1 ... 8 9]");
}

BOOST_AUTO_TEST_CASE(element_access) {
  auto t = dt::constant<std::int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  BOOST_TEST(t.at({1, 2}) == 6);
  BOOST_TEST(t.at({0, 1}) == 2);
  BOOST_TEST(t.num_elements() == 6);
  BOOST_TEST(t.rank() == 2u);
  DEVTENSOR_CHECK_THROW_WITH((void)t.at({2, 0}), dt::InvalidArgumentError, "index 2 is out of range for axis 0");
  DEVTENSOR_CHECK_THROW_WITH((void)t.at({1}), dt::InvalidArgumentError, "got 1 indices for a tensor of shape [2,3]");
  DEVTENSOR_CHECK_THROW_WITH((void)t.item(), dt::InvalidArgumentError, "item() needs a tensor with one element");
  BOOST_TEST(dt::constant<bool>({false, true}).to_vector() == (std::vector<bool>{false, true}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(empty_handles_fail_clearly) {
  dt::Tensor<float> empty;
  BOOST_TEST(!empty.defined());
  BOOST_TEST(empty.data() == nullptr);
  DEVTENSOR_CHECK_THROW_WITH((void)empty.to_vector(), dt::FailedPreconditionError, "This is an undefined tensor");
  BOOST_CHECK_THROW((void)empty.device(), dt::FailedPreconditionError);
}

BOOST_AUTO_TEST_CASE(handles_share_buffers_and_free_them_once) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  const auto base = dt::config::experimental::get_memory_info("GPU:0").current;
  {
    auto a = dt::zeros<float>({256, 256});  // 256 KiB
    auto b = a;                             // a handle, not a copy
    BOOST_TEST(b.data() == a.data());
    BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current - base == 256 * 1024);
    a = dt::Tensor<float>();
    BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current - base == 256 * 1024);
  }
  BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current == base);
}

BOOST_AUTO_TEST_CASE(cpu_outputs_reuse_cached_memory) {
  // The CPU allocator caches: a freed output's buffer serves the next one of the same size.
  auto a = dt::fill<float>({1 << 20}, 1.0f);
  const float* first = nullptr;
  {
    auto b = a + a;
    first = b.data();
  }
  auto c = a + a;
  BOOST_TEST(c.data() == first);
}

// (Here, in test_ops, which the ThreadSanitizer stage runs: the value suites are in test_ops_values.)
BOOST_AUTO_TEST_CASE(large_tensors_use_the_thread_pool) {
  const std::int64_t n = 3 << 20;  // above the parallel grain
  auto a = dt::fill<float>({n}, 1.5f);
  auto b = dt::fill<float>({n}, 2.0f);
  const auto c = (a * b).to_vector();
  BOOST_TEST(std::all_of(c.begin(), c.end(), [](float e) { return e == 3.0f; }));
  BOOST_TEST(dt::reduce_sum(dt::reshape(a, {3, -1}), 1).to_vector() == std::vector<float>(3, 1.5f * (1 << 20)),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
