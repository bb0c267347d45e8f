// Tensor<T>: handles, element access, printing, dtype names, buffers and their accounting.
#include <boost/test/unit_test.hpp>

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
  BOOST_TEST(print(dt::matmul(dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}), dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}))) ==
             "tf.Tensor(\n[[22. 28.]\n [49. 64.]], shape=(2, 2), dtype=float32)");
  BOOST_TEST(print(dt::scalar<float>(3)) == "tf.Tensor(3., shape=(), dtype=float32)");
  // Right-aligned to the widest value (numpy also aligns the decimal points; devtensor does not).
  BOOST_TEST(print(dt::constant<float>({1.5f, -2, 100})) == "tf.Tensor([ 1.5  -2. 100.], shape=(3,), dtype=float32)");
  BOOST_TEST(print(dt::constant<std::int32_t>({1, -20, 3})) == "tf.Tensor([  1 -20   3], shape=(3,), dtype=int32)");
  BOOST_TEST(print(dt::constant<bool>({true, false})) == "tf.Tensor([ True False], shape=(2,), dtype=bool)");
  BOOST_TEST(print(dt::zeros<double>({2, 1, 2})) ==
             "tf.Tensor(\n[[[0. 0.]]\n\n [[0. 0.]]], shape=(2, 1, 2), dtype=float64)");
  BOOST_TEST(print(dt::zeros<float>({0})) == "tf.Tensor([], shape=(0,), dtype=float32)");
  BOOST_TEST(print(dt::Tensor<float>()) == "tf.Tensor(<empty>)");
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
  BOOST_TEST(dt::constant<bool>({false, true}).to_vector() == (std::vector<bool>{false, true}), boost::test_tools::per_element());
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
    auto b = a;                              // a handle, not a copy
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

BOOST_AUTO_TEST_SUITE_END()
