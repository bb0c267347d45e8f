// Building graphs: ops add nodes with TensorFlow's names (checked against TensorFlow 2.21's
// as_graph_def()), symbolic tensors that refuse to be read, name scopes, captures, requests.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;
using devtensor::InvalidArgumentError;

BOOST_FIXTURE_TEST_SUITE(graph_build, dt::test::FreshContext)

// TensorFlow 2.21 names these nodes, in this order:
// ['Const', 'Const_1', 'mul', 'add', 'Add_1', 'Mul_1', 'MatMul', 'Relu', 'sub', 'Identity', 'Neg',
//  'truediv', 'AddN', 'Const_2', 'const_3', 'MatMul_1', 'foo/add/y', 'foo/add', 'Foo_1/Identity',
//  'foo_2'] (tests/reference: the script in this test's comment of session_test.cpp).
BOOST_AUTO_TEST_CASE(nodes_get_tensorflow_names) {
  v1::Graph g;
  {
    auto scope = g.as_default();
    auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
    auto b = dt::constant<float>({3, 4, 5, 6}, {2, 2});
    (void)(a * b);
    (void)(a + b);
    (void)dt::add(a, b);
    (void)dt::mul(a, b);
    (void)dt::matmul(a, b);
    (void)dt::relu(a);
    (void)(a - b);
    (void)dt::identity(a);
    (void)(-a);
    (void)(a / b);
    (void)dt::add_n(std::vector{a, b});
    (void)dt::scalar<float>(1, {.name = "Const"});
    (void)dt::scalar<float>(1, {.name = "const"});  // unique case-insensitively
    (void)dt::scalar<float>(2, {.name = "MatMul"});
    {
      dt::graph::NameScope foo("foo");
      (void)(a + 1.0f);
    }
    {
      dt::graph::NameScope foo("Foo");  // "foo" is taken: Foo_1
      (void)dt::identity(a);
    }
    (void)dt::identity(a, {.name = "foo"});
  }
  const std::vector<std::string> expected{"Const",          "Const_1", "mul",     "add",      "Add_1",     "Mul_1",
                                          "MatMul",         "Relu",    "sub",     "Identity", "Neg",       "truediv",
                                          "AddN",           "Const_2", "const_3", "MatMul_1", "foo/add/y", "foo/add",
                                          "Foo_1/Identity", "foo_2"};
  BOOST_TEST(g.node_names() == expected, boost::test_tools::per_element());
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.emplace_back(n->type());
  BOOST_TEST(ops[2] == "Mul");
  BOOST_TEST(ops[3] == "AddV2");
  BOOST_TEST(ops[11] == "RealDiv");
  BOOST_TEST(ops[17] == "AddV2");
}

BOOST_AUTO_TEST_CASE(symbolic_tensors_have_shapes_but_no_values) {
  v1::Graph g;
  auto scope = g.as_default();
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {.name = "a"});
  auto c = dt::matmul(a, dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  BOOST_TEST(c.symbolic());
  BOOST_TEST(c.shape() == dt::Shape({2, 2}));
  BOOST_TEST(c.symbolic_ref()->name == "MatMul:0");
  std::ostringstream printed;
  printed << c;
  BOOST_TEST(printed.str() == "Tensor(\"MatMul:0\", shape=(2, 2), dtype=float32)");
  DEVTENSOR_CHECK_THROW_WITH((void)c.to_vector(), InvalidArgumentError, "Tensor 'MatMul:0' is symbolic");
  DEVTENSOR_CHECK_THROW_WITH((void)c.item(), InvalidArgumentError, "item() cannot read it");
  DEVTENSOR_CHECK_THROW_WITH((void)c.device_info(), InvalidArgumentError, "is symbolic");
  // Shape functions run while building: their errors come at once, as TensorFlow's.
  DEVTENSOR_CHECK_THROW_WITH((void)dt::matmul(a, a), InvalidArgumentError, "Matrix size-incompatible");
}

BOOST_AUTO_TEST_CASE(building_a_graph_does_not_initialise_the_devices) {
  v1::Graph g;
  {
    auto scope = g.as_default();
    dt::DeviceScope gpu("/gpu:3");
    (void)dt::matmul(dt::constant<float>({1, 2, 3, 4}, {2, 2}), dt::ones<float>({2, 2}));
  }
  BOOST_TEST(!dt::Context::global().initialized());  // ConfigProto's GPU options can still apply
  BOOST_TEST(g.node_names().size() == 3u);
}

BOOST_AUTO_TEST_CASE(nodes_request_what_their_scopes_name) {
  v1::Graph g;
  auto scope = g.as_default();
  dt::Tensor<float> c, d;
  {
    dt::DeviceScope gpu("/gpu:2");
    c = dt::constant<float>({1, 2}, {2});
    dt::DeviceScope inner("/device:CPU:*");
    d = dt::identity(c);
  }
  BOOST_TEST(c.device() == "/device:GPU:2");  // as TensorFlow's Tensor.device in a graph
  BOOST_TEST(d.device() == "/device:CPU:2");  // merged by override: the id stays (TF's DeviceSpec merge)
  BOOST_TEST(dt::identity(c).device() == "");
}

BOOST_AUTO_TEST_CASE(eager_tensors_are_captured_once_as_constants) {
  auto eager = dt::constant<float>({1, 2, 3});
  v1::Graph g;
  {
    auto scope = g.as_default();
    (void)(eager + eager);
    (void)dt::relu(eager);
  }
  BOOST_TEST(g.node_names() == (std::vector<std::string>{"Const", "add", "Relu"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(graphs_do_not_mix) {
  v1::Graph g1, g2;
  dt::Tensor<float> a;
  {
    auto scope = g1.as_default();
    a = dt::constant<float>({1, 2});
  }
  {
    auto scope = g2.as_default();
    DEVTENSOR_CHECK_THROW_WITH((void)dt::relu(a), InvalidArgumentError, "must be from the same graph");
  }
  // Outside every graph a symbolic tensor is refused by eager ops.
  DEVTENSOR_CHECK_THROW_WITH((void)dt::relu(a), InvalidArgumentError, "Tensor 'Const:0' is symbolic");
  BOOST_TEST(v1::executing_eagerly());
}

BOOST_AUTO_TEST_CASE(graph_scopes_are_per_thread_and_nest) {
  v1::Graph outer, inner;
  auto s1 = outer.as_default();
  BOOST_TEST((v1::get_default_graph() == outer));
  {
    auto s2 = inner.as_default();
    BOOST_TEST((v1::get_default_graph() == inner));
    (void)dt::constant<float>({1});
  }
  (void)dt::constant<float>({1});
  BOOST_TEST(inner.node_names().size() == 1u);
  BOOST_TEST(outer.node_names().size() == 1u);
  bool other_thread_eager = false;
  std::thread([&] { other_thread_eager = v1::executing_eagerly(); }).join();
  BOOST_TEST(other_thread_eager);
  BOOST_TEST(!v1::executing_eagerly());
}

BOOST_AUTO_TEST_CASE(threads_build_one_graph_with_their_own_name_scopes) {
  v1::Graph g;
  const auto build = [&](const char* scope_name, bool relu) {
    auto scope = g.as_default();
    dt::graph::NameScope name_scope(scope_name);
    auto x = dt::constant<float>({1, 2});
    for (int i = 0; i < 50; ++i) x = relu ? dt::relu(x) : dt::neg(x);
  };
  std::thread a(build, "a", true), b(build, "b", false);
  a.join();
  b.join();
  const auto nodes = g.nodes();
  BOOST_TEST(nodes.size() == 102u);
  std::set<std::string> names;
  for (const auto& n : nodes) {
    names.insert(n->name);
    if (n->type() == "Relu") BOOST_TEST(n->name.starts_with("a/Relu"), n->name);
    if (n->type() == "Neg") BOOST_TEST(n->name.starts_with("b/Neg"), n->name);
  }
  BOOST_TEST(names.size() == nodes.size());  // unique
}

BOOST_AUTO_TEST_CASE(placeholders_need_a_graph) {
  DEVTENSOR_CHECK_THROW_WITH((void)v1::placeholder<float>({2}), dt::FailedPreconditionError,
                             "not compatible with eager execution");
  v1::Graph g;
  auto scope = g.as_default();
  auto x = v1::placeholder<float>({2}, {.name = "x"});
  BOOST_TEST(x.symbolic_ref()->name == "x:0");
  BOOST_TEST(g.nodes().front()->type() == "Placeholder");
}

// A constant of one value and a shape is a splat (TensorFlow's TensorProto keeps one value): the
// node expands it when it runs, through the device's allocator, so its size is bounded by the
// device's memory and a shape too large to address is an error when the graph is built.
BOOST_AUTO_TEST_CASE(constants_of_one_value_fill_their_shape_when_run) {
  v1::Graph g;
  dt::Tensor<double> small, large;
  {
    auto scope = g.as_default();
    small = dt::constant<double>({2.5}, {3, 2});
    large = dt::constant<double>({1.0}, {std::int64_t{1} << 40});  // 8 TiB
    DEVTENSOR_CHECK_THROW_WITH((void)dt::constant<double>({1.0}, {std::int64_t{1} << 40, std::int64_t{1} << 30}),
                               dt::InvalidArgumentError, "");
  }
  v1::Session sess(g);
  BOOST_TEST(sess.run(small).to_vector() == std::vector<double>(6, 2.5), boost::test_tools::per_element());
  BOOST_CHECK_THROW((void)sess.run(large), dt::ResourceExhaustedError);
}

BOOST_AUTO_TEST_SUITE_END()
