// v1 sessions: the graph placer (TensorFlow's Placer, colocation groups) and its error texts, the executor, feeds,
// pruning, the executable cache, ConfigProto. Expected texts were printed by TensorFlow 2.21 (CPU
// build) running the seeds' TF1 programs through tf.compat.v1.
#include <boost/test/unit_test.hpp>
#define BOOST_BIND_GLOBAL_PLACEHOLDERS  // property_tree includes the old boost/bind.hpp
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;
using devtensor::InvalidArgumentError;

namespace {
using devtensor::test::kCpu0;
using devtensor::test::kGpu0;
using devtensor::test::kGpu1;

/// What `work` writes to standard output (Boost.Test writes there too: nothing is checked inside).
template <class F>
std::string stdout_of(F&& work) {
  std::ostringstream text;
  auto* old = std::cout.rdbuf(text.rdbuf());
  try {
    work();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return text.str();
}

/// The seed's graph: c = a · b with a and b named.
dt::Tensor<float> seed_matmul(const v1::Graph& g) {
  auto scope = g.as_default();
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {.name = "a"});
  auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}, {.name = "b"});
  return dt::matmul(a, b);
}

/// The seed's towers: a matmul per GPU, summed with add_n on /cpu:0.
dt::Tensor<float> towers(const v1::Graph& g) {
  auto scope = g.as_default();
  std::vector<dt::Tensor<float>> parts;
  for (const char* device : {"/gpu:0", "/gpu:1"}) {
    dt::DeviceScope s(device);
    auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
    parts.push_back(dt::matmul(a, b));
  }
  dt::DeviceScope cpu("/cpu:0");
  return dt::add_n(parts);
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(session, dt::test::FreshContext)

// TensorFlow 2.21, CPU only: the log lists the MatMul, then the constants it deferred.
BOOST_AUTO_TEST_CASE(placement_log_is_tensorflows_byte_for_byte) {
  v1::Graph g;
  const auto c = seed_matmul(g);
  v1::Session sess(g, {.log_device_placement = true});
  BOOST_TEST(log.count("Device mapping: no known devices.") == 1u);
  dt::Tensor<float> value;
  const auto printed = stdout_of([&] { value = sess.run(c); });
  const std::string expected =
      std::string("MatMul: (MatMul): ") + kCpu0 + "\na: (Const): " + kCpu0 + "\nb: (Const): " + kCpu0 + "\n";
  BOOST_TEST(printed == expected);
  BOOST_TEST(log.count(std::string("MatMul: (MatMul): ") + kCpu0) == 1u);  // through the log sink too
  BOOST_TEST(value.to_vector() == (std::vector<float>{22, 28, 49, 64}), boost::test_tools::per_element());
  BOOST_TEST(value.device() == kCpu0);
  BOOST_TEST(stdout_of([&] { (void)sess.run(c); }).empty());  // placed once: no second log
}

BOOST_AUTO_TEST_CASE(gpus_come_first_and_generators_go_with_their_consumers) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  v1::Graph g;
  const auto sum = towers(g);
  dt::Tensor<float> free_matmul, on_cpu, copied;
  {
    auto scope = g.as_default();
    free_matmul = dt::matmul(dt::constant<float>({1, 2, 3, 4}, {2, 2}), dt::constant<float>({1, 0, 0, 1}, {2, 2}));
    dt::DeviceScope cpu("/cpu:0");
    on_cpu = dt::relu(sum);
  }
  {
    auto scope = g.as_default();
    copied = dt::identity(on_cpu);  // Identity goes with its input although a GPU would take it
  }
  v1::Session sess(g, {.log_device_placement = true});
  BOOST_TEST(
      log.count("Device mapping:\n/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, name: devtensor "
                "simulated GPU, pci bus id: simulated:0, compute capability: 9.0\n/job:localhost/replica:0/task:0/"
                "device:GPU:1 -> device: 1,") == 1u);
  dt::Tensor<float> value;
  const auto printed = stdout_of([&] { value = sess.run(copied); });
  BOOST_TEST(value.to_vector() == (std::vector<float>{44, 56, 98, 128}), boost::test_tools::per_element());
  const std::string expected =
      std::string("MatMul: (MatMul): ") + kGpu0 + "\nMatMul_1: (MatMul): " + kGpu1 + "\nAddN: (AddN): " + kCpu0 +
      "\nMatMul_2: (MatMul): " + kGpu0 + "\nRelu: (Relu): " + kCpu0 + "\nIdentity: (Identity): " + kCpu0 +
      "\nConst: (Const): " + kGpu0 + "\nConst_1: (Const): " + kGpu0 + "\nConst_2: (Const): " + kGpu1 +
      "\nConst_3: (Const): " + kGpu1 + "\nConst_4: (Const): " + kGpu0 + "\nConst_5: (Const): " + kGpu0 + "\n";
  BOOST_TEST(printed == expected);
}

BOOST_AUTO_TEST_CASE(a_generator_with_consumers_on_two_devices_takes_its_own_first_candidate) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  v1::Graph g;
  dt::Tensor<float> x, y;
  {
    auto scope = g.as_default();
    auto c = dt::constant<float>({1, 2}, {2}, {.name = "c"});
    {
      dt::DeviceScope cpu("/cpu:0");
      x = dt::relu(c);
    }
    y = dt::relu(c);  // GPU:0
  }
  v1::Session sess(g, {.log_device_placement = true});
  const auto printed = stdout_of([&] { (void)sess.run(std::vector<dt::AnyTensor>{x, y}); });
  BOOST_TEST(printed.find(std::string("c: (Const): ") + kGpu0) != std::string::npos);
  BOOST_TEST(printed.find(std::string("Relu: (Relu): ") + kCpu0) != std::string::npos);
  BOOST_TEST(printed.find(std::string("Relu_1: (Relu): ") + kGpu0) != std::string::npos);
}

// TensorFlow 2.21 (CPU build): "Cannot assign a device for operation MatMul: {{node MatMul}} was
// explicitly assigned to /device:GPU:2 but available devices are [ /job:localhost/replica:0/
// task:0/device:CPU:0 ]. Make sure the device specification refers to a valid device. The
// requested device appears to be a GPU, but CUDA is not enabled."
BOOST_AUTO_TEST_CASE(a_missing_device_fails_at_the_first_run_without_soft_placement) {
  v1::Graph g;
  dt::Tensor<float> c;
  {
    dt::DeviceScope gpu2("/gpu:2");
    c = seed_matmul(g);
  }
  v1::Session hard(g);
  DEVTENSOR_CHECK_THROW_WITH(
      (void)hard.run(c), InvalidArgumentError,
      "Cannot assign a device for operation MatMul: {{node MatMul}} was explicitly assigned to "
      "/device:GPU:2 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]. "
      "Make sure the device specification refers to a valid device.");
  // This test program has no GPU kernels (no devtensor::cuda): TensorFlow's CPU build says so too.
  DEVTENSOR_CHECK_THROW_WITH((void)hard.run(c), InvalidArgumentError,
                             "The requested device appears to be a GPU, but CUDA is not enabled.");
  v1::Session soft(g, {.log_device_placement = true, .allow_soft_placement = true});
  dt::Tensor<float> value;
  const auto printed = stdout_of([&] { value = soft.run(c); });
  BOOST_TEST(value.to_vector() == (std::vector<float>{22, 28, 49, 64}), boost::test_tools::per_element());
  BOOST_TEST(printed ==
             std::string("MatMul: (MatMul): ") + kCpu0 + "\na: (Const): " + kCpu0 + "\nb: (Const): " + kCpu0 + "\n");
}

BOOST_AUTO_TEST_CASE(a_device_without_the_kernel_and_an_op_without_kernels) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  v1::Graph g;
  dt::Tensor<std::int32_t> c;
  {
    auto scope = g.as_default();
    dt::DeviceScope gpu("/gpu:0");
    auto a = dt::constant<std::int32_t>({1, 2, 3, 4}, {2, 2});
    c = dt::matmul(a, a);  // MatMul has no GPU kernel for int32
  }
  v1::Session hard(g);
  DEVTENSOR_CHECK_THROW_WITH((void)hard.run(c), InvalidArgumentError,
                             "Cannot assign a device for operation MatMul: Could not satisfy explicit device "
                             "specification '/device:GPU:0' because no supported kernel for GPU devices is available.");
  v1::Session soft(g, {.allow_soft_placement = true});
  BOOST_TEST(soft.run(c).device() == kCpu0);
  BOOST_TEST(soft.run(c).to_vector() == (std::vector<std::int32_t>{7, 10, 15, 22}), boost::test_tools::per_element());

  static constexpr dt::KernelSupport nowhere{"Nowhere", "DT_FLOAT", false, false, nullptr, nullptr, false};
  static constexpr dt::ops::OpInfo nowhere_op{"Nowhere", {}};
  v1::Graph h;
  dt::AnyTensor out;
  {
    auto scope = h.as_default();
    const dt::AnyTensor in = dt::constant<float>({1});
    out = dt::graph::add_op(*h.impl(), "", std::span(&in, 1),
                            {&nowhere_op, {{dt::DType::DT_FLOAT, dt::Shape{1}}}, nullptr, &nowhere})
              .front();
  }
  v1::Session none(h, {.allow_soft_placement = true});
  DEVTENSOR_CHECK_THROW_WITH((void)none.run(std::vector{out}), InvalidArgumentError,
                             "Cannot assign a device for operation Nowhere: No OpKernel was registered to support Op "
                             "'Nowhere' used by {{node Nowhere}} with these attrs: [T=DT_FLOAT]");
}

BOOST_AUTO_TEST_CASE(feeds_and_placeholders) {
  v1::Graph g;
  dt::Tensor<float> x, doubled, y;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({2}, {.name = "x"});
    doubled = x * 2.0f;
    y = doubled + 1.0f;
  }
  v1::Session sess(g);
  // TensorFlow 2.21's texts.
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(y), InvalidArgumentError,
                             "You must feed a value for placeholder tensor 'x' with dtype float and shape [2]");
  BOOST_TEST(sess.run(y, {{x, std::vector<float>{1, 2}}}).to_vector() == (std::vector<float>{3, 5}),
             boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(y, {{x, std::vector<float>{1, 2, 3}}}), InvalidArgumentError,
                             "Cannot feed value of shape (3,) for Tensor x:0, which has shape (2,)");
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(y, {{x, dt::constant<float>({1, 2, 3, 4}, {2, 2})}}), InvalidArgumentError,
                             "Cannot feed value of shape (2, 2) for Tensor x:0");
  BOOST_TEST(sess.run(y, {{x, dt::constant<float>({5, 6})}}).to_vector() == (std::vector<float>{11, 13}),
             boost::test_tools::per_element());
  // A flat feed keeps TensorFlow's refusal for a placeholder of more than one axis, and says how to
  // give the values their shape.
  {
    v1::Graph rows_graph;
    dt::Tensor<float> rows, row_sums, total;
    {
      auto scope = rows_graph.as_default();
      rows = v1::placeholder<float>({-1, 3}, {.name = "x"});
      row_sums = dt::reduce_sum(rows, {1});
      total = dt::reduce_sum(rows);
    }
    v1::Session rows_sess(rows_graph);
    DEVTENSOR_CHECK_THROW_WITH((void)rows_sess.run(row_sums, {{rows, std::vector<float>{1, 2, 3, 4, 5, 6}}}),
                               InvalidArgumentError,
                               "Cannot feed value of shape (6,) for Tensor x:0, which has shape (None, 3). Give flat "
                               "values their shape: {placeholder, {values, {rows, ...}}}");
    // {values, shape}: NumPy's np.array([[1, 2, 3], [4, 5, 6]]). TensorFlow 2.21 prints [ 6. 15.] and 21.0.
    const auto sums = rows_sess.run(row_sums, {{rows, {{1, 2, 3, 4, 5, 6}, {2, 3}}}});
    BOOST_TEST(sums.to_vector() == (std::vector<float>{6, 15}), boost::test_tools::per_element());
    std::ostringstream printed;
    printed << sums << "|" << rows_sess.run(total, {{rows, {{1, 2, 3, 4, 5, 6}, {2, 3}}}});
    BOOST_TEST(printed.str() == "[ 6. 15.]|21.0");
    DEVTENSOR_CHECK_THROW_WITH((void)rows_sess.run(row_sums, {{rows, {{1, 2, 3, 4, 5, 6}, {3, 2}}}}),
                               InvalidArgumentError,
                               "Cannot feed value of shape (3, 2) for Tensor x:0, which has shape (None, 3)");
  }
  // Any tensor of the graph may be fed: its producers (and the unfed placeholder) are not run.
  BOOST_TEST(sess.run(y, {{doubled, std::vector<float>{0, 10}}}).to_vector() == (std::vector<float>{1, 11}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_run_computes_only_what_the_fetches_need) {
  v1::Graph g;
  dt::Tensor<std::int32_t> bad, good;
  {
    auto scope = g.as_default();
    auto unfed = v1::placeholder<std::int32_t>({2}, {.name = "unfed"});
    auto zero = dt::constant<std::int32_t>({0, 0});
    bad = dt::div(unfed + 1, zero);                                   // would need a feed, and divides by zero
    auto broken = dt::div(dt::constant<std::int32_t>({1, 2}), zero);  // fails when run
    (void)broken;
    good = dt::constant<std::int32_t>({4, 6}) / 2;
  }
  v1::Session sess(g);
  BOOST_TEST(sess.run(good).to_vector() == (std::vector<std::int32_t>{2, 3}), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(bad), InvalidArgumentError,
                             "You must feed a value for placeholder tensor 'unfed'");
}

BOOST_AUTO_TEST_CASE(results_equal_eager_execution) {
  const std::vector<float> xs{-1.5f, 0.25f, 2, 3.5f, -0.75f, 1};
  const auto compute = [&](const dt::Tensor<float>& x) {
    auto w = dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2});
    auto h = dt::relu(dt::matmul(x, w) + 0.5f);
    return dt::tanh(h * h - dt::sigmoid(h)) / 3.0f;
  };
  const auto eager = compute(dt::constant<float>(xs, {2, 3})).to_vector();
  v1::Graph g;
  dt::Tensor<float> x, y;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({2, 3}, {.name = "x"});
    y = compute(x);
  }
  v1::Session sess(g);
  BOOST_TEST(sess.run(y, {{x, xs}}).to_vector() == eager, boost::test_tools::per_element());  // bitwise
}

BOOST_AUTO_TEST_CASE(nodes_added_after_a_run_are_placed_at_the_next) {
  v1::Graph g;
  const auto c = seed_matmul(g);
  v1::Session sess(g, {.log_device_placement = true});
  (void)stdout_of([&] { (void)sess.run(c); });
  dt::Tensor<float> d;
  {
    auto scope = g.as_default();
    d = c + c;
  }
  dt::Tensor<float> value;
  const auto printed = stdout_of([&] { value = sess.run(d); });
  BOOST_TEST(value.to_vector() == (std::vector<float>{44, 56, 98, 128}), boost::test_tools::per_element());
  // TensorFlow re-places the whole graph and logs it again.
  BOOST_TEST(printed.find(std::string("add: (AddV2): ") + kCpu0 + "\na: (Const)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(fetches_must_be_tensors_of_the_graph) {
  v1::Graph g, other;
  const auto c = seed_matmul(g);
  const auto elsewhere = seed_matmul(other);
  v1::Session sess(g);
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(elsewhere), InvalidArgumentError, "is not an element of this graph");
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(dt::constant<float>({1})), InvalidArgumentError, "has values already");
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(dt::Tensor<float>()), InvalidArgumentError, "undefined tensor");
  BOOST_TEST(sess.run(c).num_elements() == 4);  // nothing was corrupted
}

BOOST_AUTO_TEST_CASE(several_threads_run_one_session) {
  v1::Graph g;
  dt::Tensor<float> x, y;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({3}, {.name = "x"});
    y = dt::relu(x) * 2.0f;
  }
  v1::Session sess(g);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        const auto r = sess.run(y, {{x, std::vector<float>{v, -v, 1}}}).to_vector();
        ok[static_cast<std::size_t>(t)] += r == std::vector<float>{2 * v, 0, 2} ? 1 : 0;
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(ok == (std::vector<int>{50, 50, 50, 50}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(config_proto_gpu_options_configure_the_process) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  v1::Graph g;
  const auto c = seed_matmul(g);
  v1::Session sess(g, {.gpu_options = {.allow_growth = true, .visible_device_list = "1"}});
  const auto& devices = dt::Context::global().devices();
  BOOST_TEST(devices.size() == 2u);  // CPU:0 and the one visible GPU
  BOOST_TEST(devices[1].allow_growth);
  BOOST_TEST(sess.run(c).device() == kGpu0);
  // Once the devices exist, a different value is section 3.2's error; the same is accepted.
  v1::Session same(g, {.gpu_options = {.allow_growth = true}});
  DEVTENSOR_CHECK_THROW_WITH(v1::Session(g, {.gpu_options = {.per_process_gpu_memory_fraction = 0.5}}),
                             dt::FailedPreconditionError, "cannot be modified after being initialized");
  DEVTENSOR_CHECK_THROW_WITH(v1::Session(g, {.gpu_options = {.visible_device_list = "0,7"}}), InvalidArgumentError,
                             "'visible_device_list' listed an invalid GPU id '7'");
  DEVTENSOR_CHECK_THROW_WITH(v1::Session(g, {.device_count = {{"TPU", 1}}}), InvalidArgumentError, "device_count");
}

BOOST_AUTO_TEST_CASE(device_count_hides_gpus) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  v1::Graph g;
  const auto c = seed_matmul(g);
  v1::Session sess(g, {.device_count = {{"GPU", 0}}});
  BOOST_TEST(dt::Context::global().devices().size() == 1u);
  BOOST_TEST(sess.run(c).device() == kCpu0);
}

BOOST_AUTO_TEST_CASE(disable_eager_execution_builds_the_process_default_graph) {
  v1::Graph before = v1::get_default_graph();
  v1::disable_eager_execution();
  BOOST_TEST(!v1::executing_eagerly());
  auto c = dt::matmul(dt::constant<float>({1, 2, 3, 4}, {2, 2}), dt::constant<float>({1, 0, 0, 1}, {2, 2}));
  BOOST_TEST(c.symbolic());
  v1::Session sess;  // the default graph
  BOOST_TEST(sess.run(c).to_vector() == (std::vector<float>{1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(!(v1::get_default_graph() == before));
  v1::reset_default_graph();
  BOOST_TEST(v1::get_default_graph().node_names().empty());
  bool other_thread_eager = true;  // the process graph is every thread's without a GraphScope
  std::thread([&] { other_thread_eager = v1::executing_eagerly(); }).join();
  BOOST_TEST(!other_thread_eager);
  v1::enable_eager_execution();
  BOOST_TEST(v1::executing_eagerly());
  BOOST_TEST(dt::relu(dt::constant<float>({-1, 1})).to_vector() == (std::vector<float>{0, 1}),
             boost::test_tools::per_element());
}

// TensorFlow 1's FULL_TRACE on the seed's towers over two (simulated) GPUs: RunMetadata's step
// stats device by device, and their timeline as Chrome trace JSON, parsed back: one process per
// device, an "Op" event per node, a data-flow arrow for each value that crossed devices. A run
// without a trace level records nothing.
BOOST_AUTO_TEST_CASE(a_full_trace_run_records_step_stats_and_a_chrome_timeline) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  v1::Graph g;  // the towers on a placeholder (of constants alone, constant folding leaves one node)
  dt::Tensor<float> x, sum;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({2, 3}, {.name = "x"});
    std::vector<dt::Tensor<float>> parts;
    for (const char* device : {"/gpu:0", "/gpu:1"}) {
      dt::DeviceScope s(device);
      parts.push_back(dt::matmul(x, dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2})));
    }
    dt::DeviceScope cpu("/cpu:0");
    sum = dt::add_n(parts);
  }
  const std::vector<v1::Feed> feeds{{x, std::vector<float>{1, 2, 3, 4, 5, 6}}};
  v1::Session sess(g);
  v1::RunMetadata untraced;
  (void)sess.run({dt::AnyTensor(sum)}, feeds, {}, {}, &untraced);
  BOOST_TEST(untraced.step_stats.dev_stats.empty());
  v1::RunMetadata metadata;
  const auto values = sess.run({dt::AnyTensor(sum)}, feeds, {}, {.trace_level = v1::RunOptions::FULL_TRACE}, &metadata);
  BOOST_TEST(values.front().as<float>().to_vector() == (std::vector<float>{44, 56, 98, 128}),
             boost::test_tools::per_element());
  std::set<std::string> devices;
  std::size_t nodes = 0;
  const dt::NodeExecStats* add_n = nullptr;
  for (const auto& device : metadata.step_stats.dev_stats) {
    devices.insert(device.device);
    for (const auto& node : device.node_stats) {
      ++nodes;
      BOOST_TEST(node.all_start_micros > 1'600'000'000'000'000);  // since the Unix epoch
      BOOST_TEST(node.all_end_rel_micros >= 0);
      if (node.op == "AddN") add_n = &node;
      if (node.op == "MatMul") {
        BOOST_TEST(device.device != kCpu0);
        BOOST_TEST((node.output_shapes == std::vector<dt::Shape>{dt::Shape({2, 2})}));
        BOOST_TEST(node.inputs.size() == 2u);
        BOOST_TEST(node.inputs.front() == "x");  // a feed is named by its placeholder
        // What it made, and from which allocator (TensorFlow's NodeOutput).
        BOOST_TEST_REQUIRE(node.output.size() == 1u);
        BOOST_TEST(node.output[0].slot == 0);
        BOOST_TEST(node.output[0].dtype == "DT_FLOAT");
        BOOST_TEST(node.output[0].shape == dt::Shape({2, 2}));
        BOOST_TEST(node.output[0].requested_bytes == 16);
        BOOST_TEST(node.output[0].allocator_name == (device.device.back() == '0' ? "GPU_0_bfc" : "GPU_1_bfc"));
      }
    }
  }
  BOOST_TEST((devices == std::set<std::string>{kCpu0, "/job:localhost/replica:0/task:0/device:GPU:0",
                                               "/job:localhost/replica:0/task:0/device:GPU:1"}));
  BOOST_TEST_REQUIRE(add_n != nullptr);
  BOOST_TEST((add_n->inputs == std::vector<std::string>{"MatMul", "MatMul_1"}));
  BOOST_TEST(add_n->timeline_label == "AddN = AddN(MatMul, MatMul_1)");
  // The timeline, as Chrome and Perfetto read it.
  const std::string json = dt::timeline::Timeline(metadata.step_stats).generate_chrome_trace_format();
  boost::property_tree::ptree tree;
  std::istringstream in(json);
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(in, tree));
  std::size_t processes = 0, ops = 0, flow_starts = 0, flow_ends = 0;
  std::set<std::string> process_names;
  for (const auto& [key, event] : tree.get_child("traceEvents")) {
    const auto phase = event.get<std::string>("ph");
    BOOST_TEST(event.get_optional<int>("pid").has_value());
    if (phase == "M" && event.get<std::string>("name") == "process_name") {
      ++processes;
      process_names.insert(event.get<std::string>("args.name"));
    } else if (phase == "X") {
      ++ops;
      BOOST_TEST(event.get<std::string>("cat") == "Op");
      BOOST_TEST(event.get<double>("ts") > 1.6e15);  // microseconds since the Unix epoch
      BOOST_TEST(event.get<double>("dur") >= 0.0);
      BOOST_TEST(!event.get<std::string>("args.name").empty());
      BOOST_TEST(event.get<std::string>("args.op") == event.get<std::string>("name"));
    } else if (phase == "s" || phase == "t") {
      (phase == "s" ? flow_starts : flow_ends) += 1;
      BOOST_TEST(event.get<std::string>("cat") == "DataFlow");
    }
  }
  BOOST_TEST(processes == 7u);  // timeline.py's: Allocators, then each device's Compute and Tensors
  BOOST_TEST(process_names.count("Allocators") == 1u);
  BOOST_TEST(process_names.count(std::string(kCpu0) + " Compute") == 1u);
  BOOST_TEST(process_names.count(std::string(kCpu0) + " Tensors") == 1u);
  BOOST_TEST(ops == nodes);
  BOOST_TEST(flow_starts == 2u);  // the two towers' products, to AddN on the CPU
  BOOST_TEST(flow_ends == 2u);
  BOOST_TEST(dt::timeline::Timeline(metadata.step_stats).generate_chrome_trace_format(false).find("DataFlow") ==
             std::string::npos);
  BOOST_TEST(json.find("\"Memory\"") == std::string::npos);  // show_memory is off by default, as TensorFlow's

  // show_memory: each output a tensor object (created, described, deleted) in its device's
  // "Tensors" process, and per allocator a "Memory" counter of the bytes its live outputs hold.
  std::size_t outputs = 0;
  for (const auto& device : metadata.step_stats.dev_stats)
    for (const auto& node : device.node_stats) outputs += node.output.size();
  boost::property_tree::ptree memory;
  std::istringstream memory_json(dt::timeline::Timeline(metadata.step_stats).generate_chrome_trace_format(true, true));
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(memory_json, memory));
  std::map<std::string, std::size_t> objects;
  std::map<std::string, std::vector<long>> counters;  // per allocator, in order
  for (const auto& [key, event] : memory.get_child("traceEvents")) {
    const auto phase = event.get<std::string>("ph");
    if (phase == "N" || phase == "O" || phase == "D") {
      ++objects[phase];
      BOOST_TEST(event.get<std::string>("cat") == "Tensor");
      BOOST_TEST(event.get<int>("pid") % 2 == 0);  // a "Tensors" process
      if (phase == "O") {
        const auto description = event.get<std::string>("args.snapshot.tensor_description");
        BOOST_TEST(description.find("dtype: DT_FLOAT") == 0u);
        BOOST_TEST(description.find("allocator_name: ") != std::string::npos);
      }
    } else if (phase == "C") {
      BOOST_TEST(event.get<std::string>("cat") == "Memory");
      BOOST_TEST(event.get<int>("pid") == 0);  // "Allocators"
      const auto name = event.get<std::string>("name");
      counters[name].push_back(event.get<long>("args." + name));
    }
  }
  BOOST_TEST(outputs >= 3u);  // the two products and their sum at least
  BOOST_TEST(objects["N"] == outputs);
  BOOST_TEST(objects["O"] == outputs);
  BOOST_TEST(objects["D"] == outputs);
  BOOST_TEST(counters.count("GPU_0_bfc") == 1u);
  BOOST_TEST(counters.count("GPU_1_bfc") == 1u);
  for (const auto& [allocator, series] : counters) {
    BOOST_TEST(series.size() % 2 == 0u);  // each output allocated once and released once
    BOOST_TEST(series.back() == 0);       // all released by the end of the run
    BOOST_TEST(*std::max_element(series.begin(), series.end()) >= (allocator.rfind("GPU", 0) == 0 ? 16 : 1));
  }
}

// A profile holds the same nodes once per run: each reader reads its own run's value, so each
// run's outputs are released after that run's readers (the memory counter never holds two runs'),
// and each data-flow arrow starts at its own run's producer.
BOOST_AUTO_TEST_CASE(a_timeline_of_repeated_runs_pairs_each_reader_with_its_own_run) {
  const std::string gpu = "/job:localhost/replica:0/task:0/device:GPU:0";
  dt::StepStats stats{.dev_stats = {{.device = gpu}, {.device = kCpu0}}};
  for (const std::int64_t t : {1000, 2000}) {
    stats.dev_stats[0].node_stats.push_back({.node_name = "A",
                                             .op = "MatMul",
                                             .all_start_micros = t,
                                             .all_end_rel_micros = 10,
                                             .output_shapes = {dt::Shape({2, 2})},
                                             .output = {{.slot = 0,
                                                         .dtype = "DT_FLOAT",
                                                         .shape = dt::Shape({2, 2}),
                                                         .requested_bytes = 16,
                                                         .allocator_name = "GPU_0_bfc"}}});
    stats.dev_stats[1].node_stats.push_back(
        {.node_name = "B", .op = "Relu", .all_start_micros = t + 10, .all_end_rel_micros = 10, .inputs = {"A"}});
  }
  boost::property_tree::ptree tree;
  std::istringstream in(dt::timeline::Timeline(stats).generate_chrome_trace_format(true, true));
  BOOST_REQUIRE_NO_THROW(boost::property_tree::read_json(in, tree));
  std::vector<long> flow_starts, deletes, counter;
  for (const auto& [key, event] : tree.get_child("traceEvents")) {
    const auto phase = event.get<std::string>("ph");
    if (phase == "s") flow_starts.push_back(event.get<long>("ts"));
    if (phase == "D") deletes.push_back(event.get<long>("ts"));
    if (phase == "C") counter.push_back(event.get<long>("args.GPU_0_bfc"));
  }
  BOOST_TEST(flow_starts == (std::vector<long>{1010, 2010}), boost::test_tools::per_element());
  BOOST_TEST(deletes == (std::vector<long>{1019, 2019}), boost::test_tools::per_element());  // B's end - 1
  BOOST_TEST(counter == (std::vector<long>{16, 0, 16, 0}), boost::test_tools::per_element());
}

// tf.profiler.experimental.start/stop over graphs: the calls of traced functions (fit's steps too)
// and the sessions' runs between start and stop, as one Chrome trace; TensorFlow's errors for a
// second start and for a stop without one; nothing recorded before start or after stop.
BOOST_AUTO_TEST_CASE(the_profiler_records_traced_functions_and_sessions_between_start_and_stop) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("devtensor_profile_" + std::to_string(::getpid()) + ".json")).string();
  DEVTENSOR_CHECK_THROW_WITH(dt::profiler::stop(path), dt::UnavailableError,
                             "Cannot export profiling results. No profiler is running.");
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::relu(dt::matmul(x, x)); });
  const auto x = dt::constant<float>({1, -2, 3, 4}, {2, 2});
  (void)f(x);  // before start: not recorded
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  v1::Graph g;
  dt::Tensor<float> fed, negated;
  {
    auto scope = g.as_default();
    fed = v1::placeholder<float>({2}, {.name = "fed"});
    negated = dt::neg(fed);
  }
  v1::Session sess(g);
  dt::nn::clear_session();
  dt::nn::Sequential model({dt::nn::Dense(1, {.input_dim = 1})});
  model.compile(dt::nn::Loss("mse"), dt::nn::optimizers::SGD{});
  dt::profiler::start();
  BOOST_TEST(dt::profiler::active());
  DEVTENSOR_CHECK_THROW_WITH(dt::profiler::start(), dt::AlreadyExistsError, "Another profiler is running.");
  BOOST_TEST(f(x).to_vector() == (std::vector<float>{0, 0, 15, 10}), boost::test_tools::per_element());
  (void)f(x);
  (void)sess.run(negated, {{fed, std::vector<float>{1, 2}}});
  (void)model.fit(dt::ones<float>({4, 1}), dt::ones<float>({4, 1}), {.batch_size = 2, .verbose = 0});
  dt::profiler::stop(path);
  BOOST_TEST(!dt::profiler::active());
  (void)f(x);  // after stop: not recorded
  boost::property_tree::ptree tree;
  boost::property_tree::read_json(path, tree);
  std::map<std::string, int> by_op;
  for (const auto& [key, event] : tree.get_child("traceEvents"))
    if (event.get<std::string>("ph") == "X") {
      ++by_op[event.get<std::string>("name")];
      BOOST_TEST(event.get<std::string>("cat") == "Op");
    }
  for (const auto& op : ops) BOOST_TEST(by_op[op] >= 2, op << " ran " << by_op[op] << " times in the profile");
  BOOST_TEST(by_op["Neg"] == 1);                           // the session's run
  BOOST_TEST(by_op["ResourceApplyGradientDescent"] >= 2);  // fit's two traced steps, each updating
  std::filesystem::remove(path);
  dt::profiler::start();
  DEVTENSOR_CHECK_THROW_WITH(dt::profiler::stop("/nonexistent/folder/profile.json"), dt::InvalidArgumentError,
                             "Could not write the profile");
  BOOST_TEST(!dt::profiler::active());
}

BOOST_AUTO_TEST_SUITE_END()
