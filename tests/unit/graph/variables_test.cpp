// TensorFlow 1 variables in graphs: node names, the uninitialised-variable error, the initializer,
// assignments persisting across runs of one session, values per session, colocation with the
// handle. Expected names and texts are TensorFlow 2.21's (tf.compat.v1 in graph mode).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;

namespace {
using devtensor::test::kCpu0;
using devtensor::test::kGpu1;
}  // namespace

BOOST_FIXTURE_TEST_SUITE(graph_variables, dt::test::FreshContext)

// TensorFlow 2.21: v = tf.compat.v1.Variable([1.0, 2.0], name='v'); r = v * 3.0 gives
// v/Initializer/initial_value, v, v/IsInitialized/VarIsInitializedOp, v/Assign,
// v/Read/ReadVariableOp, ReadVariableOp, mul/y, mul; global_variables_initializer() adds init.
BOOST_AUTO_TEST_CASE(variables_get_tensorflows_nodes) {
  v1::Graph g;
  {
    auto scope = g.as_default();
    v1::Variable<float> v({1, 2}, {2}, {.name = "v"});
    (void)(v.read_value() * 3.0f);
    (void)v1::global_variables_initializer();
    BOOST_TEST(v.name() == "v:0");
  }
  const std::vector<std::string> expected{"v/Initializer/initial_value",
                                          "v",
                                          "v/IsInitialized/VarIsInitializedOp",
                                          "v/Assign",
                                          "v/Read/ReadVariableOp",
                                          "ReadVariableOp",
                                          "mul/y",
                                          "mul",
                                          "init"};
  BOOST_TEST(g.node_names() == expected, boost::test_tools::per_element());
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.emplace_back(n->type());
  BOOST_TEST(ops[1] == "VarHandleOp");
  BOOST_TEST(ops[3] == "AssignVariableOp");
  BOOST_TEST(ops[8] == "NoOp");
}

BOOST_AUTO_TEST_CASE(reading_before_the_initializer_is_tensorflows_error) {
  v1::Graph g;
  dt::Tensor<float> r;
  dt::graph::Operation init;
  {
    auto scope = g.as_default();
    v1::Variable<float> v({1, 2}, {2}, {.name = "v"});
    r = v.read_value() * 3.0f;
    init = v1::global_variables_initializer();
  }
  v1::Session sess(g);
  DEVTENSOR_CHECK_THROW_WITH(
      (void)sess.run(r), dt::FailedPreconditionError,
      "Could not find variable v. This could mean that the variable has been deleted. In TF1, it "
      "can also mean the variable is uninitialized.");
  sess.run(init);
  BOOST_TEST(sess.run(r).to_vector() == (std::vector<float>{3, 6}), boost::test_tools::per_element());
  // Values belong to the session: a second session starts uninitialised.
  v1::Session other(g);
  BOOST_CHECK_THROW((void)other.run(r), dt::FailedPreconditionError);
}

BOOST_AUTO_TEST_CASE(assignments_persist_across_runs) {
  v1::Graph g;
  dt::Tensor<float> value;
  dt::graph::Operation step, init;
  {
    auto scope = g.as_default();
    v1::Variable<float> counter(std::vector<float>{0}, dt::Shape{}, {.name = "counter"});
    step = counter.assign(counter.read_value() + 1.0f);
    value = counter.read_value();
    init = counter.initializer();
  }
  v1::Session sess(g);
  sess.run(init);
  for (int i = 0; i < 5; ++i) sess.run(step);
  BOOST_TEST(sess.run(value).item() == 5.0f);
  sess.run(init);  // the initializer assigns the initial value again
  BOOST_TEST(sess.run(value).item() == 0.0f);
}

BOOST_AUTO_TEST_CASE(a_variable_and_its_readers_share_its_device) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  v1::Graph g;
  dt::Tensor<float> doubled, read;
  dt::graph::Operation init;
  {
    auto scope = g.as_default();
    std::optional<v1::Variable<float>> v;
    {
      dt::DeviceScope gpu1("/gpu:1");
      v.emplace(std::vector<float>{1, 2, 3}, dt::Shape{3}, dt::OpOptions{.name = "w"});
    }
    read = v->read_value();  // no request: colocated with the handle on GPU:1
    dt::DeviceScope cpu("/cpu:0");
    doubled = read * 2.0f;
    init = v1::global_variables_initializer();
  }
  v1::Session sess(g, {.log_device_placement = true});
  sess.run(init);
  BOOST_TEST(sess.run(read).device() == kGpu1);
  const auto d = sess.run(doubled);
  BOOST_TEST(d.device() == kCpu0);
  BOOST_TEST(d.to_vector() == (std::vector<float>{2, 4, 6}), boost::test_tools::per_element());
  const auto lines = log.lines();
  for (const std::string line :
       {"w: (VarHandleOp): ", "w/Read/ReadVariableOp: (ReadVariableOp): ", "ReadVariableOp: (ReadVariableOp): "})
    BOOST_TEST(std::count(lines.begin(), lines.end(), line + kGpu1) == 1, line);
}

// TensorFlow 2.21's placement error text: a reader that asks for another device than its variable's group.
BOOST_AUTO_TEST_CASE(a_reader_requesting_another_device_than_its_variable) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  v1::Graph g;
  dt::Tensor<float> read;
  dt::graph::Operation init;
  {
    auto scope = g.as_default();
    std::optional<v1::Variable<float>> v;
    {
      dt::DeviceScope gpu("/gpu:0");
      v.emplace(std::vector<float>{1, 2}, dt::Shape{2}, dt::OpOptions{.name = "v"});
    }
    dt::DeviceScope cpu("/cpu:0");
    read = v->read_value();
    init = v1::global_variables_initializer();
  }
  v1::Session hard(g);
  DEVTENSOR_CHECK_THROW_WITH(hard.run(init), dt::InvalidArgumentError,
                             "Cannot assign a device for operation ReadVariableOp: Could not satisfy explicit device "
                             "specification '/device:CPU:0' because the node {{colocation_node ReadVariableOp}} was "
                             "colocated with a group of nodes that required incompatible device '/device:GPU:0'. All "
                             "available devices [/job:localhost/replica:0/task:0/device:CPU:0, "
                             "/job:localhost/replica:0/task:0/device:GPU:0].");
  v1::Session soft(g, {.allow_soft_placement = true});  // the request yields to the variable
  soft.run(init);
  BOOST_TEST(soft.run(read).device() == "/job:localhost/replica:0/task:0/device:GPU:0");
}

BOOST_AUTO_TEST_CASE(variables_need_a_graph_and_matching_shapes) {
  DEVTENSOR_CHECK_THROW_WITH(v1::Variable<float>({1}, {1}), dt::FailedPreconditionError, "builds graph nodes");
  DEVTENSOR_CHECK_THROW_WITH((void)v1::global_variables_initializer(), dt::FailedPreconditionError,
                             "builds graph nodes");
  v1::Graph g;
  auto scope = g.as_default();
  v1::Variable<float> v({1, 2}, {2});
  BOOST_TEST(v.name() == "Variable:0");
  DEVTENSOR_CHECK_THROW_WITH((void)v.assign(dt::constant<float>({1, 2, 3})), dt::InvalidArgumentError,
                             "Cannot assign a tensor of shape [3] to variable Variable:0 of shape [2]");
}

BOOST_AUTO_TEST_SUITE_END()
