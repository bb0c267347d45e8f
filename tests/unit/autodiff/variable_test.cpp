// Variable<T>: creation, placement, reads, assignments and their errors, stored settings.
#include <boost/test/unit_test.hpp>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;

BOOST_FIXTURE_TEST_SUITE(variable, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(holds_a_copy_of_its_initial_value) {
  auto init = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  dt::Variable<float> v(init, {.name = "kernel"});
  BOOST_TEST(v.name() == "kernel:0");
  BOOST_TEST(v.shape() == dt::Shape({2, 2}));
  BOOST_TEST(v.dtype() == "float32");
  BOOST_TEST(v.trainable());
  BOOST_TEST(v.value().storage() != init.storage());
  BOOST_TEST(v.to_vector() == std::vector<float>({1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(dt::Variable<float>(dt::scalar<float>(0)).name() == "Variable:0");
}

BOOST_AUTO_TEST_CASE(assignments_replace_the_value_and_earlier_reads_keep_theirs) {
  dt::Variable<std::int32_t> v(dt::constant<std::int32_t>({1, 2}));
  auto before = v.value();
  v.assign(dt::constant<std::int32_t>({5, 6}));
  BOOST_TEST(v.to_vector() == std::vector<std::int32_t>({5, 6}), boost::test_tools::per_element());
  v.assign_add(dt::constant<std::int32_t>({1, 1})).assign_sub(dt::constant<std::int32_t>({10, 0}));
  BOOST_TEST(v.to_vector() == std::vector<std::int32_t>({-4, 7}), boost::test_tools::per_element());
  BOOST_TEST(before.to_vector() == std::vector<std::int32_t>({1, 2}), boost::test_tools::per_element());
  dt::Variable<std::int32_t> alias = v;  // a second handle to the same variable
  alias.assign(dt::constant<std::int32_t>({0, 0}));
  BOOST_TEST(v.to_vector() == std::vector<std::int32_t>({0, 0}), boost::test_tools::per_element());
  BOOST_TEST(alias.same_as(v));
}

BOOST_AUTO_TEST_CASE(shape_mismatches_and_empty_values_are_errors) {
  dt::Variable<float> v(dt::constant<float>({1, 2}), {.name = "w"});
  DEVTENSOR_CHECK_THROW_WITH(v.assign(dt::constant<float>({1, 2, 3})), dt::InvalidArgumentError,
                             "Cannot update variable with shape [2] using a Tensor with shape [3]");
  DEVTENSOR_CHECK_THROW_WITH(v.assign_add(dt::scalar<float>(1)), dt::InvalidArgumentError, "[Op:AssignAddVariableOp]");
  DEVTENSOR_CHECK_THROW_WITH(v.assign(dt::Tensor<float>()), dt::InvalidArgumentError,
                             "Cannot assign an undefined tensor");
  BOOST_TEST(v.to_vector() == std::vector<float>({1, 2}), boost::test_tools::per_element());  // unchanged
  DEVTENSOR_CHECK_THROW_WITH(dt::Variable<float>(dt::Tensor<float>()), dt::InvalidArgumentError,
                             "the initial value is an undefined tensor");
  dt::Variable<float> empty;
  BOOST_TEST(!empty.defined());
  DEVTENSOR_CHECK_THROW_WITH((void)empty.value(), dt::FailedPreconditionError, "This Variable is empty");
}

BOOST_AUTO_TEST_CASE(synchronization_and_aggregation_are_stored) {
  dt::Variable<float> v(dt::scalar<float>(0), {.name = "acc",
                                               .synchronization = dt::VariableSynchronization::ON_READ,
                                               .aggregation = dt::VariableAggregation::SUM});
  BOOST_TEST(!v.trainable());  // ON_READ defaults to non-trainable
  BOOST_TEST((v.synchronization() == dt::VariableSynchronization::ON_READ));
  BOOST_TEST((v.aggregation() == dt::VariableAggregation::SUM));
  BOOST_TEST(dt::to_string(v.aggregation()) == "SUM");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::Variable<float>(dt::scalar<float>(0),
                          {.trainable = true, .synchronization = dt::VariableSynchronization::ON_READ}),
      dt::InvalidArgumentError, "can be set to VariableSynchronization.ON_READ only for non-trainable variables");
}

BOOST_AUTO_TEST_CASE(created_on_the_current_device_scope) {
  dt::config::set_simulated_gpus(2);
  dt::Variable<float> preferred(dt::scalar<float>(1));
  BOOST_TEST(preferred.device() == "/job:localhost/replica:0/task:0/device:GPU:0");
  {
    dt::DeviceScope scope("/gpu:1");
    dt::Variable<float> on_gpu1(dt::constant<float>({1, 2}));
    BOOST_TEST(on_gpu1.device() == "/job:localhost/replica:0/task:0/device:GPU:1");
    BOOST_TEST(on_gpu1.device_spec().to_string() == on_gpu1.device());
    on_gpu1.assign_add(dt::constant<float>({1, 1}));
    BOOST_TEST(on_gpu1.device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  }
  dt::DeviceScope scope("/cpu:0");
  dt::Variable<float> on_cpu(dt::scalar<float>(1));
  BOOST_TEST(on_cpu.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  // Its bytes count against GPU:1's allocator only while it lives there.
  BOOST_TEST(on_cpu.value().device_index() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
