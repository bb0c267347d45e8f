// A distributed train step traced once for the whole loop (seed 001's distributed_train_step, as
// TensorFlow 2.21 traces it): strategy.run, batch_reduce_to, apply_gradients on mirrored variables
// and strategy.reduce inside dt::function give the eager loop's losses and weights.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/graph/inter_op.hpp"
#include "devtensor_test.hpp"
#include "seed_custom_loop.hpp"
#include "seed_loop.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

namespace {

void check_traced_equals_eager(auto ops) {
  ds::MirroredStrategy strategy({}, ops);
  const auto eager = dt::test::run_seed_loop(strategy, false);
  const auto traced = dt::test::run_seed_loop(strategy, true);
  BOOST_TEST(traced.traces == 1);  // once for the whole loop
  BOOST_TEST_REQUIRE(traced.losses.size() == eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i)
    BOOST_TEST(traced.losses[i] == eager.losses[i], boost::test_tools::tolerance(1e-6f));
  for (std::size_t i = 0; i < eager.weights.size(); ++i)
    BOOST_TEST(traced.weights[i] == eager.weights[i], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(traced.losses.back() < traced.losses.front());
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(traced_strategy, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(three_virtual_cpus) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}});
  check_traced_equals_eager(ds::ReductionToOneDevice{});
}

BOOST_AUTO_TEST_CASE(two_simulated_gpus) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  check_traced_equals_eager(ds::HierarchicalCopyAllReduce{.num_packs = 1});
}

// Note [Independent parts run at once] (graph/inter_op.hpp): a graph over two logical CPUs runs
// each CPU's steps on a thread of its own, with the bits of a run one step after another.
namespace {
/// Two chains of MatMuls, one per CPU, then their sum on CPU:0; `rows` of x's rows reshaped to
/// [3, -1] on CPU:1 (an error there when the element count is not a multiple of 3).
dt::Tensor<float> two_devices(const dt::Tensor<float>& x, const dt::Tensor<float>& w) {
  dt::Tensor<float> a, b;
  {
    dt::DeviceScope cpu0("/cpu:0");
    a = x;
    for (int i = 0; i < 10; ++i) a = dt::matmul(a, w);
  }
  {
    dt::DeviceScope cpu1("/cpu:1");
    b = dt::reshape(x, {3, -1});
    b = dt::reshape(b, {-1, 4});
    for (int i = 0; i < 10; ++i) b = dt::matmul(b, w);
  }
  dt::DeviceScope cpu0("/cpu:0");
  return dt::add(dt::reduce_sum(a), dt::reduce_sum(b));
}
}  // namespace

BOOST_AUTO_TEST_CASE(parts_on_two_cpus_give_the_bits_of_one_thread) {
  const auto run = [](int inter_op) {
    dt::testing::reset_context();
    dt::config::threading::set_inter_op_parallelism_threads(inter_op);
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
    const auto w = dt::random_uniform<float>({4, 4}, {.minval = -0.6, .maxval = 0.6, .seed = 2});
    auto f = dt::function(two_devices, {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 4}),
                                                                       dt::TensorSpec::of<float>({4, 4})}});
    const auto x = dt::random_uniform<float>({6, 4}, {.seed = 1});
    std::vector<float> results;
    for (int call = 0; call < 20; ++call) results.push_back(f(x, w).item());
    // A failure on CPU:1's part (5 rows: 20 elements do not reshape to [3, -1]) fails the call,
    // and the next call runs as before.
    DEVTENSOR_CHECK_THROW_WITH(f(dt::random_uniform<float>({5, 4}, {.seed = 3}), w), dt::InvalidArgumentError,
                               "reshape");
    results.push_back(f(x, w).item());
    return std::pair{f.get_concrete_function(x, w)->parts(), results};
  };
  const auto [one_part, one] = run(1);
  const auto [two_parts, two] = run(2);
  BOOST_TEST(one_part == 0u);
  BOOST_TEST(two_parts == 2u);
  BOOST_TEST(two == one, boost::test_tools::per_element());
  BOOST_TEST(run(-1).first == 0u);  // negative: the caller's thread only, as TensorFlow's
}

// The team starts the threads a run's parts need, whatever it had before: four logical CPUs with
// an inter-op setting of 4 run as four parts on four threads, after the tests above ran with two.
BOOST_AUTO_TEST_CASE(the_team_grows_to_the_parts_a_graph_has) {
  const auto run = [](int inter_op) {
    dt::testing::reset_context();
    dt::config::threading::set_inter_op_parallelism_threads(inter_op);
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}, {}});
    const auto w = dt::random_uniform<float>({4, 4}, {.minval = -0.6, .maxval = 0.6, .seed = 2});
    auto f = dt::function([&](const dt::Tensor<float>& x) {
      dt::Tensor<float> total;
      for (int d = 0; d < 4; ++d) {
        dt::Tensor<float> chain = x;
        {
          dt::DeviceScope cpu("/cpu:" + std::to_string(d));
          for (int i = 0; i < 10; ++i) chain = dt::matmul(chain, w);
        }
        dt::DeviceScope cpu0("/cpu:0");
        total = d == 0 ? dt::reduce_sum(chain) : dt::add(total, dt::reduce_sum(chain));
      }
      return total;
    });
    const auto x = dt::random_uniform<float>({6, 4}, {.seed = 1});
    std::vector<float> results;
    for (int call = 0; call < 5; ++call) results.push_back(f(x).item());
    return std::pair{f.get_concrete_function(x)->parts(), results};
  };
  const auto [one_part, one] = run(1);
  const auto [four_parts, four] = run(4);
  BOOST_TEST(one_part == 0u);
  BOOST_TEST(four_parts == 4u);
  BOOST_TEST(dt::graph::inter_op_team().workers() >= 3);  // the caller runs part 0
  BOOST_TEST(four == one, boost::test_tools::per_element());
}

namespace {
/// An op of host code that calls another traced function.
struct Nested {
  static constexpr std::string_view name = "Nested";
  static constexpr dt::ops::OpTraits traits{.communication = true, .any_thread = false};
};
}  // namespace
// A run nested in a part (an op of host code in the caller's part that calls another function with
// parts) finds the team busy and runs one step after another: no deadlock, the same values.
BOOST_AUTO_TEST_CASE(a_run_nested_in_a_part_runs_on_its_thread) {
  dt::config::threading::set_inter_op_parallelism_threads(2);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  const auto w = dt::random_uniform<float>({4, 4}, {.minval = -0.6, .maxval = 0.6, .seed = 2});
  auto inner = dt::function(two_devices);
  auto outer = dt::function([&](const dt::Tensor<float>& x) {
    const std::vector<dt::AnyTensor> in{dt::AnyTensor(x)};
    const auto nested = dt::run_op<dt::ops::HostFunction<Nested>>(
        {[&](std::span<const dt::AnyTensor> v) {
           return std::vector<dt::AnyTensor>{dt::AnyTensor(inner(v[0].as<float>(), w))};
         },
         {{dt::DType::DT_FLOAT, dt::Shape{}}}},
        in);
    return dt::add(nested.front().as<float>(), two_devices(x, w));
  });
  const auto x = dt::random_uniform<float>({6, 4}, {.seed = 1});
  const float expected = 2 * inner(x, w).item();
  for (int call = 0; call < 5; ++call) BOOST_TEST(outer(x).item() == expected);
  BOOST_TEST(outer.get_concrete_function(x)->parts() == 2u);
  BOOST_TEST(inner.get_concrete_function(x, w)->parts() == 2u);
}

// The seed loop's replicas on two logical CPUs as parts: its losses and weights bit for bit.
BOOST_AUTO_TEST_CASE(a_traced_strategy_step_runs_its_replicas_as_parts) {
  const auto run = [](int inter_op) {
    dt::testing::reset_context();
    dt::config::threading::set_inter_op_parallelism_threads(inter_op);
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
    ds::MirroredStrategy strategy({}, ds::ReductionToOneDevice{});
    return dt::test::run_seed_loop(strategy, true);
  };
  const auto one = run(1);
  const auto two = run(2);
  BOOST_TEST(one.parts == 0u);
  BOOST_TEST(two.parts == 2u);
  BOOST_TEST(two.losses == one.losses, boost::test_tools::per_element());
  BOOST_TEST(two.weights == one.weights, boost::test_tools::per_element());
}

// Seed 001's custom loop calls apply_gradients inside strategy.run. Traced with the default
// settings (each replica's part on a thread of its own) it gives TensorFlow 2.21's losses and
// weights to 1e-6 with 2, 3 and 4 replicas, SGD and Adam, as the eager loop does. On the main
// before automatic control dependencies the traced SGD loop printed 0.4733651578 at step 0 (a
// replica read weights the update had already changed), and traced Adam took a step per replica
// (kernel 0.6898 after 100 steps, TensorFlow's 0.5979).
BOOST_AUTO_TEST_CASE(the_seeds_custom_loop_traced_gives_tensorflows_numbers) {
  using dt::test::SeedOptimizer;
  for (const auto which : {SeedOptimizer::sgd, SeedOptimizer::adam})
    for (const int replicas : {2, 3, 4}) {
      BOOST_TEST_CONTEXT((which == SeedOptimizer::sgd ? "SGD, " : "Adam, ") << replicas << " replicas") {
        dt::testing::reset_context();
        dt::config::set_logical_device_configuration(
            dt::config::list_physical_devices("CPU")[0],
            std::vector<dt::config::LogicalDeviceConfiguration>(static_cast<std::size_t>(replicas)));
        ds::MirroredStrategy strategy;
        const auto traced = dt::test::run_seed_custom_loop(strategy, which, true);
        BOOST_TEST(dt::test::matches(traced, dt::test::tensorflow_custom_loop(which, replicas)));
        BOOST_TEST(traced.traces == 1);
        // The replicas run as parts at once, as many as the inter-op threads (the machine's cores).
        BOOST_TEST(traced.parts == static_cast<std::size_t>(std::min(replicas, dt::graph::inter_op_threads())));
      }
    }
}

BOOST_AUTO_TEST_CASE(the_seeds_custom_loop_eager_gives_tensorflows_numbers) {
  using dt::test::SeedOptimizer;
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  ds::MirroredStrategy strategy;
  for (const auto which : {SeedOptimizer::sgd, SeedOptimizer::adam})
    BOOST_TEST(dt::test::matches(dt::test::run_seed_custom_loop(strategy, which, false),
                                 dt::test::tensorflow_custom_loop(which, 2)));
}

// Property: random small models under random strategies, traced with the replicas' parts at once,
// give every step's loss and the final weights of the same loop run eagerly, to 1e-6. Models of
// one or two Dense layers, SGD (with and without momentum) or Adam, MSE or cross-entropy, the
// update inside strategy.run (merged) or after it (batch_reduce_to, then apply_gradients).
namespace {
struct RandomCase {
  int replicas, hidden, optimizer, loss;
  bool two_layers, apply_inside;
  dt::nn::Activation activation;
};
struct RandomRun {
  std::vector<float> losses, weights;
};
RandomRun run_random_case(const RandomCase& c, std::uint64_t seed, bool traced) {
  dt::testing::reset_context();
  dt::nn::clear_session();
  dt::config::set_logical_device_configuration(
      dt::config::list_physical_devices("CPU")[0],
      std::vector<dt::config::LogicalDeviceConfiguration>(static_cast<std::size_t>(c.replicas)));
  ds::MirroredStrategy strategy;
  const dt::nn::Optimizer optimizer =
      c.optimizer == 0   ? dt::nn::Optimizer(dt::nn::optimizers::SGD{.learning_rate = 0.1})
      : c.optimizer == 1 ? dt::nn::Optimizer(dt::nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9})
                         : dt::nn::Optimizer(dt::nn::optimizers::Adam{.learning_rate = 0.05});
  std::optional<dt::nn::Sequential> model;
  {
    auto guard = strategy.scope();
    std::vector<dt::nn::Layer> layers;
    const auto init = [&](std::uint64_t k) { return dt::nn::initializers::GlorotUniform{.seed = seed * 10 + k}; };
    if (c.two_layers)
      layers.push_back(
          dt::nn::Dense(c.hidden, {.input_dim = 3, .activation = c.activation, .kernel_initializer = init(1)}));
    layers.push_back(c.two_layers ? dt::nn::Dense(1, {.kernel_initializer = init(2)})
                                  : dt::nn::Dense(1, {.input_dim = 3, .kernel_initializer = init(2)}));
    model.emplace(std::move(layers));
  }
  const auto variables = model->trainable_variables();
  const std::int64_t global_batch = 4 * c.replicas + 1;  // uneven replica batches
  const auto per_example = [&](const dt::Tensor<float>& y, const dt::Tensor<float>& p) {
    return c.loss == 0
               ? dt::nn::losses::MeanSquaredError{.reduction = dt::nn::Reduction::NONE}(y, p)
               : dt::nn::losses::BinaryCrossentropy{.from_logits = true, .reduction = dt::nn::Reduction::NONE}(y, p);
  };
  const auto replica_step = [&](const std::tuple<dt::Tensor<float>, dt::Tensor<float>>& batch) {
    const auto& [x, y] = batch;
    dt::GradientTape tape;
    auto loss = dt::nn::compute_average_loss(per_example(y, (*model)(x)), global_batch);
    auto grads = tape.gradient(loss, variables);
    if (c.apply_inside) optimizer.apply_gradients(grads, variables);
    return std::pair{loss, grads};
  };
  const auto step = [&](const ds::PerReplica<std::tuple<dt::Tensor<float>, dt::Tensor<float>>>& batch) {
    auto results = strategy.run(replica_step, batch);
    ds::PerReplica<dt::Tensor<float>> losses;
    std::vector<ds::PerReplica<dt::Tensor<float>>> grads(variables.size());
    for (const auto& [loss, g] : results.values) {
      losses.values.push_back(loss);
      for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
    }
    if (!c.apply_inside) {
      std::vector<dt::Tensor<float>> update;
      for (const auto& summed : strategy.batch_reduce_to(ds::ReduceOp::SUM, grads)) update.push_back(summed.primary());
      optimizer.apply_gradients(update, variables);
    }
    return strategy.reduce(ds::ReduceOp::SUM, losses, std::nullopt);
  };
  auto traced_step = dt::function(step);
  const std::int64_t n = 3 * global_batch;
  const auto x = dt::random_uniform<float>({n, 3}, {.minval = -1, .maxval = 1, .seed = seed});
  const auto y = dt::random_uniform<float>({n, 1}, {.seed = seed + 1});  // soft labels in [0, 1)
  const auto data = dt::data::Dataset<float, float>::from_tensor_slices(x, y).repeat(2).batch(global_batch);
  RandomRun out;
  for (const auto& batch : strategy.experimental_distribute_dataset(data))
    out.losses.push_back((traced ? traced_step(batch) : step(batch)).item());
  for (const auto& v : variables)
    for (std::size_t r = 0; r < v.num_components(); ++r)  // every replica's copy
      for (float w : v.component(r).to_vector()) out.weights.push_back(w);
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(random_models_traced_with_parts_at_once_equal_eager) {
  std::mt19937 rng(2026);
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const RandomCase c{
        2 + static_cast<int>(rng() % 3),
        2 + static_cast<int>(rng() % 4),
        static_cast<int>(rng() % 3),
        static_cast<int>(rng() % 2),
        rng() % 2 == 0,
        rng() % 2 == 0,
        std::array{dt::nn::Activation::relu, dt::nn::Activation::tanh, dt::nn::Activation::linear}[rng() % 3]};
    BOOST_TEST_CONTEXT("case " << seed << ": " << c.replicas << " replicas, optimizer " << c.optimizer << ", loss "
                               << c.loss << (c.two_layers ? ", two layers" : ", one layer")
                               << (c.apply_inside ? ", update inside strategy.run" : ", update after it")) {
      const auto eager = run_random_case(c, seed, false);
      const auto traced = run_random_case(c, seed, true);
      BOOST_TEST_REQUIRE(traced.losses.size() == eager.losses.size());
      BOOST_TEST_REQUIRE(traced.weights.size() == eager.weights.size());
      for (std::size_t i = 0; i < eager.losses.size(); ++i)
        BOOST_TEST(std::abs(traced.losses[i] - eager.losses[i]) <= 1e-6);
      for (std::size_t i = 0; i < eager.weights.size(); ++i)
        BOOST_TEST(std::abs(traced.weights[i] - eager.weights[i]) <= 1e-6);
    }
  }
}

// Note [One thread state]: a snapshot carries the thread's context to another thread (device
// scopes' request, strategy scope and variable creator, a step's seed), not its tapes or capture,
// and the guard gives the other thread its own state back.
BOOST_AUTO_TEST_CASE(a_thread_state_snapshot_carries_the_context_but_not_the_tapes) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  ds::MirroredStrategy strategy;
  auto in_scope = strategy.scope();
  dt::DeviceScope cpu1("/cpu:1");
  dt::GradientTape tape;
  const auto seed = dt::constant<std::int64_t>({7});
  dt::nn::StepSeedScope step(seed, 3);
  const auto snapshot = dt::ThreadState::snapshot();
  struct Seen {
    std::string device;
    const dt::VariableCreator* creator = nullptr;
    const void* scope = nullptr;
    int replica = -1;
    bool tapes = true;
    std::string nested;
  };
  Seen before, during, after;
  const auto look = [](Seen& seen) {
    seen.device = dt::current_device_spec().to_string();
    seen.creator = dt::current_variable_creator();
    seen.scope = ds::current_distribution_scope();
    seen.replica = dt::nn::current_step_seed().replica;
    seen.tapes = dt::autodiff::tapes_active();
  };
  std::thread([&] {
    look(before);
    {
      const dt::ThreadStateGuard as_caller(snapshot);
      look(during);
      dt::DeviceScope cpu0("/cpu:0");  // scopes nest on the caller's request
      during.nested = dt::current_device_spec().to_string();
    }
    look(after);
  }).join();
  BOOST_TEST(before.device == "");
  BOOST_TEST(during.device == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(during.nested == "/job:localhost/replica:0/task:0/device:CPU:0");
  BOOST_TEST(during.creator == dt::current_variable_creator());
  BOOST_TEST(during.creator != nullptr);
  BOOST_TEST(during.scope == static_cast<const void*>(ds::current_distribution_scope()));
  BOOST_TEST(during.replica == 3);
  BOOST_TEST(!during.tapes);  // the tape records this thread's ops only
  BOOST_TEST(after.device == before.device);
  BOOST_TEST(after.creator == nullptr);
  BOOST_TEST(after.scope == nullptr);
  BOOST_TEST(after.replica == 0);
}

// A replica's thread starts in the caller's context: variables made inside strategy.run under the
// strategy's scope are the strategy's (TensorFlow copies the variable creator stack into its
// replica threads), with the replica's device on top of the caller's request.
BOOST_AUTO_TEST_CASE(replicas_start_in_the_callers_context) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  ds::MirroredStrategy strategy;
  auto in_scope = strategy.scope();
  const auto seen = strategy.run([&] {
    return std::pair{dt::current_variable_creator() != nullptr, dt::current_device_spec().to_string()};
  });
  BOOST_TEST(seen.values[0].first);
  BOOST_TEST(seen.values[1].first);
  BOOST_TEST(seen.values[1].second == "/job:localhost/replica:0/task:0/device:CPU:1");
}

BOOST_AUTO_TEST_SUITE_END()
