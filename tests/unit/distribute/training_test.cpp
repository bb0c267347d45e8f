// Distributed variables (mirrored and sync-on-read) and Keras fit (loss and metrics) across
// replicas, Sequential and functional models.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../nn/two_heads.hpp"
#include "distribute_test_support.hpp"
#include "seed_custom_loop.hpp"

namespace dt = devtensor;
namespace ds = dt::distribute;
namespace nn = dt::nn;
using dt::test::virtual_cpus;

BOOST_FIXTURE_TEST_SUITE(distributed_training, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(variables_created_in_scope_are_mirrored_from_component_0) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  dt::Variable<float> outside(dt::scalar<float>(1));
  BOOST_TEST(!outside.distributed());
  auto guard = strategy.scope();
  dt::Variable<float> v(dt::random_uniform<float>(dt::Shape({4})), {.name = "w"});
  BOOST_TEST(v.distributed());
  BOOST_TEST(v.num_components() == 3u);
  // Component 0 carries the name; the others are "<name>/replica_<i>".
  BOOST_TEST(v.name() == "w:0");
  BOOST_TEST(v.component_name(0) == "w:0");
  BOOST_TEST(v.component_name(1) == "w/replica_1:0");
  BOOST_TEST(v.component_name(2) == "w/replica_2:0");
  DEVTENSOR_CHECK_THROW_WITH(v.component_name(3), dt::InvalidArgumentError, "there is no component 3");
  BOOST_TEST(outside.component_name(0) == "Variable:0");
  const auto parts = strategy.experimental_local_results(v);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(parts[i].device() == "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i));
    BOOST_TEST(parts[i].to_vector() == parts[0].to_vector(), boost::test_tools::per_element());
  }
  // Cross-replica writes reach every component.
  v.assign(dt::constant<float>({1, 2, 3, 4}));
  v.assign_add(dt::constant<float>({1, 1, 1, 1}));
  for (const auto& p : strategy.experimental_local_results(v))
    BOOST_TEST(p.to_vector() == std::vector<float>({2, 3, 4, 5}), boost::test_tools::per_element());
  // Reads: the replica's own component inside run.
  auto devices = strategy.run([&] { return v.value().device(); });
  BOOST_TEST(devices.values[2] == "/job:localhost/replica:0/task:0/device:CPU:2");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::Variable<float>(dt::scalar<float>(0), {.synchronization = dt::VariableSynchronization::NONE}),
      dt::InvalidArgumentError, "`NONE` variable synchronization mode is not supported");
}

BOOST_AUTO_TEST_CASE(distributed_variables_are_their_own_type_over_per_device_variables) {
  // TensorFlow's MirroredVariable / SyncOnReadVariable: the strategy's scope installs a variable
  // creator; the Variable handle is the same type, its implementation a distributed variable over
  // one local variable per replica device.
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  const dt::Variable<float> local(dt::scalar<float>(1));
  BOOST_TEST(ds::as_distributed(local) == nullptr);
  std::optional<dt::Variable<float>> mirrored;
  std::optional<dt::Variable<std::int64_t>> counter;
  std::optional<dt::Variable<bool>> flag;
  {
    auto guard = strategy.scope();
    mirrored.emplace(dt::constant<float>({1, 2}), dt::VariableOptions{.name = "w"});
    counter.emplace(dt::scalar<std::int64_t>(0),
                    dt::VariableOptions{.name = "count",
                                        .synchronization = dt::VariableSynchronization::ON_READ,
                                        .aggregation = dt::VariableAggregation::SUM});
    flag.emplace(dt::scalar<bool>(false),
                 dt::VariableOptions{.name = "seen", .aggregation = dt::VariableAggregation::ONLY_FIRST_REPLICA});
  }
  const dt::Variable<float> after(dt::scalar<float>(1));  // the scope (and its creator) is gone
  BOOST_TEST(!after.distributed());
  const auto* m = ds::as_distributed(*mirrored);
  BOOST_TEST_REQUIRE(m != nullptr);
  BOOST_TEST(dynamic_cast<const ds::MirroredVariable<float>*>(m) != nullptr);
  BOOST_TEST(dynamic_cast<const ds::SyncOnReadVariable<std::int64_t>*>(ds::as_distributed(*counter)) != nullptr);
  BOOST_TEST(dynamic_cast<const ds::MirroredVariable<bool>*>(ds::as_distributed(*flag)) != nullptr);
  BOOST_TEST(m->strategy().num_replicas() == 2);
  // The per-device variables: local, named and placed as the components, sharing their values.
  BOOST_TEST_REQUIRE(m->values().size() == 2u);
  mirrored->assign(dt::constant<float>({3, 4}));
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& part = m->values()[i];
    BOOST_TEST(!part.distributed());
    BOOST_TEST(part.name() == mirrored->component_name(i));
    BOOST_TEST(part.device() == "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i));
    BOOST_TEST(part.handle_id() != mirrored->handle_id());
    BOOST_TEST(part.to_vector() == std::vector<float>({3, 4}), boost::test_tools::per_element());
  }
  // An integer sync-on-read counter: replica writes stay local, the cross-replica read sums them;
  // its device is component 0's, known without aggregating.
  strategy.run(
      [&] { counter->assign_add(dt::scalar<std::int64_t>(ds::get_replica_context()->replica_id_in_sync_group + 1)); });
  BOOST_TEST(counter->component(0).item() == 1);
  BOOST_TEST(counter->component(1).item() == 2);
  BOOST_TEST(counter->value().item() == 3);
  BOOST_TEST(counter->device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  // A bool mirrored variable written in replicas: the first replica's value everywhere.
  strategy.run([&] { flag->assign(dt::scalar<bool>(ds::get_replica_context()->replica_id_in_sync_group == 0)); });
  BOOST_TEST(flag->component(0).item());
  BOOST_TEST(flag->component(1).item());
  // Optimizer updates of a distributed variable are cross-replica only.
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] {
    mirrored->apply_update("ResourceApplyGradientDescent",
                           [](std::size_t, const dt::Tensor<float>&, dt::Tensor<float>&) {});
  }),
                             dt::FailedPreconditionError, "ResourceApplyGradientDescent of w:0 in a replica context");
  BOOST_TEST(mirrored->component(1).to_vector() == std::vector<float>({3, 4}), boost::test_tools::per_element());
  // A mirrored variable read under a device scope: that device's component, and its device.
  dt::DeviceScope on_second(names[1]);
  BOOST_TEST(mirrored->device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(mirrored->value().device() == mirrored->device());
}

BOOST_AUTO_TEST_CASE(replica_writes_to_mirrored_variables_merge_with_the_aggregation) {
  const auto names = virtual_cpus(4);
  for (std::size_t n : {2u, 3u, 4u}) {
    BOOST_TEST_CONTEXT(n << " replicas") {
      ds::MirroredStrategy strategy(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(n)),
                                    ds::ReductionToOneDevice{});
      auto make = [&](dt::VariableAggregation aggregation) {
        auto guard = strategy.scope();
        return dt::Variable<float>(dt::scalar<float>(1), {.aggregation = aggregation});
      };
      // Replica r contributes r + 1.
      auto contribution = [] {
        return dt::scalar<float>(static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group + 1));
      };
      const float sum = static_cast<float>(n * (n + 1) / 2);
      auto v_sum = make(dt::VariableAggregation::SUM);
      strategy.run([&] { v_sum.assign_add(contribution()); });
      auto v_mean = make(dt::VariableAggregation::MEAN);
      strategy.run([&] { v_mean.assign(contribution()); });
      auto v_first = make(dt::VariableAggregation::ONLY_FIRST_REPLICA);
      strategy.run([&] { v_first.assign_sub(contribution()); });
      for (std::size_t c = 0; c < n; ++c) {  // every component, so the replicas stay equal
        BOOST_TEST(v_sum.component(c).item() == 1 + sum);
        BOOST_TEST(v_mean.component(c).item() == sum / static_cast<float>(n));
        BOOST_TEST(v_first.component(c).item() == 0.0f);
      }
      // Two merged updates in one run.
      strategy.run([&] {
        v_sum.assign_add(dt::scalar<float>(1));
        v_sum.assign_add(dt::scalar<float>(1));
      });
      BOOST_TEST(v_sum.value().item() == 1 + sum + 2 * static_cast<float>(n));
    }
  }
}

// TensorFlow 2.21 (values.py's _on_write_update_replica): a mirrored variable with aggregation NONE
// written inside strategy.run changes the replica's own component (BatchNormalization's moving
// statistics); reads outside run see the first. Eager and traced alike.
BOOST_AUTO_TEST_CASE(a_replica_write_without_aggregation_changes_its_own_component) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  std::optional<dt::Variable<float>> none;
  {
    auto guard = strategy.scope();
    none.emplace(dt::scalar<float>(1), dt::VariableOptions{.trainable = false});
  }
  const auto own = [] { return static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group); };
  strategy.run([&] { none->assign(dt::scalar<float>(5 + own())); });
  const auto* parts = ds::as_distributed(*none);
  BOOST_TEST_REQUIRE(parts != nullptr);
  for (std::size_t c = 0; c < 3; ++c) BOOST_TEST(parts->component(c).item() == 5.0f + static_cast<float>(c));
  BOOST_TEST(none->value().item() == 5.0f);
  auto traced = dt::function([&](const dt::Tensor<float>& x) {
    strategy.run([&] { none->assign_add(dt::mul(x, dt::scalar<float>(1 + own()))); });
    return dt::add(x, dt::scalar<float>(0));
  });
  (void)traced(dt::scalar<float>(10));
  (void)traced(dt::scalar<float>(1));
  for (std::size_t c = 0; c < 3; ++c)
    BOOST_TEST(parts->component(c).item() == 5.0f + static_cast<float>(c) + 11.0f * static_cast<float>(c + 1));
}

BOOST_AUTO_TEST_CASE(replica_write_errors_never_deadlock) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  std::optional<dt::Variable<float>> sum;
  std::optional<dt::Variable<std::int32_t>> int_mean;
  {
    auto guard = strategy.scope();
    sum.emplace(dt::scalar<float>(1), dt::VariableOptions{.aggregation = dt::VariableAggregation::SUM});
    int_mean.emplace(dt::scalar<std::int32_t>(1), dt::VariableOptions{.aggregation = dt::VariableAggregation::MEAN});
  }
  DEVTENSOR_CHECK_THROW_WITH(
      strategy.run([&] { int_mean->assign(dt::scalar<std::int32_t>(2)); }), dt::InvalidArgumentError,
      "Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation in replica context");
  // Replica 1 fails before its update while the others wait in merge_call: they are released.
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] {
    if (ds::get_replica_context()->replica_id_in_sync_group == 1) throw dt::InvalidArgumentError("replica 1 failed");
    sum->assign_add(dt::scalar<float>(1));
  }),
                             dt::InvalidArgumentError, "replica 1 failed");
  // Replica 2 returns without the update.
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] {
    if (ds::get_replica_context()->replica_id_in_sync_group != 2) sum->assign_add(dt::scalar<float>(1));
  }),
                             dt::FailedPreconditionError, "merge_call abandoned");
  BOOST_TEST(sum->value().item() == 1.0f);                       // no partial update was applied
  strategy.run([&] { sum->assign_add(dt::scalar<float>(1)); });  // and the strategy still works
  BOOST_TEST(sum->value().item() == 4.0f);
}

BOOST_AUTO_TEST_CASE(sync_on_read_variables_aggregate_when_read_across_replicas) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  auto guard = strategy.scope();
  for (auto aggregation :
       {dt::VariableAggregation::SUM, dt::VariableAggregation::MEAN, dt::VariableAggregation::ONLY_FIRST_REPLICA}) {
    dt::Variable<float> v(dt::scalar<float>(0),
                          {.synchronization = dt::VariableSynchronization::ON_READ, .aggregation = aggregation});
    BOOST_TEST(!v.trainable());
    strategy.run([&] {  // local writes: replica r stores r + 1
      v.assign(dt::scalar<float>(static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group + 1)));
    });
    const float want = aggregation == dt::VariableAggregation::SUM    ? 3.0f
                       : aggregation == dt::VariableAggregation::MEAN ? 1.5f
                                                                      : 1.0f;
    BOOST_TEST(v.value().item() == want);
    auto local = strategy.run([&] { return v.value().item(); });
    BOOST_TEST(local.values == std::vector<float>({1, 2}), boost::test_tools::per_element());
  }
  dt::Variable<float> total(dt::scalar<float>(0), {.synchronization = dt::VariableSynchronization::ON_READ,
                                                   .aggregation = dt::VariableAggregation::SUM});
  total.assign(dt::scalar<float>(8));  // stored as 4 + 4, read back as 8
  BOOST_TEST(total.component(0).item() == 4.0f);
  BOOST_TEST(total.value().item() == 8.0f);
}

BOOST_AUTO_TEST_CASE(gradients_in_replicas_see_their_own_components) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::HierarchicalCopyAllReduce{});
  std::optional<dt::Variable<float>> w;
  {
    auto guard = strategy.scope();
    w.emplace(dt::constant<float>({2, 3}));
  }
  ds::PerReplica<dt::Tensor<float>> inputs{{dt::constant<float>({1, 1}), dt::constant<float>({10, 20})}};
  auto grads = strategy.run(
      [&](const dt::Tensor<float>& x) {
        dt::GradientTape tape;
        auto loss = dt::reduce_sum(dt::mul(w->value(), x));
        return tape.gradient(loss, *w);
      },
      inputs);
  BOOST_TEST(grads[0].to_vector() == std::vector<float>({1, 1}), boost::test_tools::per_element());
  BOOST_TEST(grads[1].to_vector() == std::vector<float>({10, 20}), boost::test_tools::per_element());
  BOOST_TEST(grads[1].device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  auto summed = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{grads});
  BOOST_TEST(summed[0][1].to_vector() == std::vector<float>({11, 21}), boost::test_tools::per_element());
}

namespace {
/// A 2-layer model with seeded weights, compiled; built inside `strategy`'s scope when given.
nn::Sequential build_model() {
  nn::Sequential model({nn::Dense(4, {.input_dim = 2,
                                      .activation = nn::Activation::tanh,
                                      .kernel_initializer = nn::initializers::GlorotUniform{.seed = 5}}),
                        nn::Dense(1, {.kernel_initializer = nn::initializers::GlorotUniform{.seed = 6}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.5});
  return model;
}
template <class Strategy>
nn::Sequential make_model(const Strategy* strategy) {
  if (!strategy) return build_model();
  auto guard = strategy->scope();
  return build_model();
}
std::pair<dt::Tensor<float>, dt::Tensor<float>> data(std::int64_t n) {
  std::vector<float> x, y;
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = static_cast<float>(i % 7) / 7.0f, b = static_cast<float>(i % 5) / 5.0f;
    x.insert(x.end(), {a, b});
    y.push_back(a - 2 * b + 0.5f);
  }
  return {dt::constant<float>(x, {n, 2}), dt::constant<float>(y, {n, 1})};
}
}  // namespace

BOOST_AUTO_TEST_CASE(fit_across_replicas_matches_one_device_and_keeps_replicas_identical) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::HierarchicalCopyAllReduce{});
  nn::clear_session();
  auto single = make_model<ds::MirroredStrategy<ds::HierarchicalCopyAllReduce>>(nullptr);
  auto mirrored = make_model(&strategy);
  BOOST_TEST(mirrored.trainable_variables()[0].num_components() == 3u);
  auto [x, y] = data(22);  // batches of 8, 8 and 6: uneven replica splits, including 3/3/2 and 2/2/2
  auto h1 = single.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false});
  auto h2 = mirrored.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (std::size_t e = 0; e < 3; ++e) BOOST_TEST(h2.loss[e] == h1.loss[e], boost::test_tools::tolerance(1e-4));
  BOOST_TEST(h2.loss[2] < h2.loss[0]);
  // A batch smaller than the replica count: the last replica gets an empty batch and still runs.
  auto [x2, y2] = data(2);
  auto tiny = mirrored.fit(x2, y2, {.epochs = 1, .batch_size = 2, .verbose = 0, .shuffle = false});
  BOOST_TEST(std::isfinite(tiny.loss[0]));
  (void)single.fit(x2, y2, {.epochs = 1, .batch_size = 2, .verbose = 0, .shuffle = false});
  const auto a = single.trainable_variables();
  const auto b = mirrored.trainable_variables();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto want = a[i].to_vector();
    for (const auto& component : strategy.experimental_local_results(b[i])) {
      const auto got = component.to_vector();
      BOOST_TEST(got == b[i].component(0).to_vector(), boost::test_tools::per_element());  // replicas identical
      for (std::size_t j = 0; j < want.size(); ++j) BOOST_TEST(got[j] == want[j], boost::test_tools::tolerance(1e-4f));
    }
  }
}

// fit traces the replicated step by default (strategy.run, the gradients' all-reduce, the update
// and the loss's reduction as nodes of one graph): the same bits as the eager step, including a
// replica with an empty share of the batch.
BOOST_AUTO_TEST_CASE(a_traced_fit_across_replicas_gives_the_eager_fits_bits) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::HierarchicalCopyAllReduce{});
  const auto train = [&](bool run_eagerly) {
    nn::clear_session();
    auto model = make_model(&strategy);
    model.set_run_eagerly(run_eagerly);
    auto [x, y] = data(22);
    auto losses = model.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false}).loss;
    auto [x2, y2] = data(2);
    losses.push_back(model.fit(x2, y2, {.epochs = 1, .batch_size = 2, .verbose = 0, .shuffle = false}).loss[0]);
    std::vector<float> weights;
    for (const auto& v : model.trainable_variables())
      for (const auto& component : strategy.experimental_local_results(v))
        for (float w : component.to_vector()) weights.push_back(w);
    return std::pair{losses, weights};
  };
  const auto [eager_losses, eager_weights] = train(true);
  const auto [traced_losses, traced_weights] = train(false);
  BOOST_TEST(traced_losses == eager_losses, boost::test_tools::per_element());
  BOOST_TEST(traced_weights == eager_weights, boost::test_tools::per_element());
}

// The seeds' custom-loop model through Keras's fit, traced (the default), on one and two replicas
// with SGD and Adam: TensorFlow 2.21's epoch losses and weights to 1e-6
// (tests/reference/seed_custom_loop.py).
BOOST_AUTO_TEST_CASE(a_traced_fit_gives_tensorflows_numbers_on_one_and_two_replicas) {
  using dt::test::SeedOptimizer;
  for (const auto which : {SeedOptimizer::sgd, SeedOptimizer::adam})
    for (const int replicas : {1, 2}) {
      BOOST_TEST_CONTEXT((which == SeedOptimizer::sgd ? "SGD, " : "Adam, ") << replicas << " replica(s)") {
        dt::testing::reset_context();
        ds::MirroredStrategy strategy(virtual_cpus(replicas));
        BOOST_TEST(dt::test::matches(dt::test::run_seed_fit(strategy, which), dt::test::tensorflow_fit(which)));
      }
    }
}

BOOST_AUTO_TEST_CASE(accuracy_across_replicas_equals_one_devices) {
  // Three virtual CPUs, 7 examples per batch: shares of 3, 2 and 2 rows; the metric is summed over
  // the replicas and divided by the global batch, traced as eagerly.
  std::vector<float> xs, ys;
  for (int i = 0; i < 21; ++i) {
    const float x = static_cast<float>(i % 5) - 2.0f;  // class 0 below -0.5, 1 up to 0.5, 2 above
    xs.push_back(x);
    ys.push_back(x < -0.5f ? 0.0f : x < 0.5f ? 1.0f : 2.0f);
  }
  const auto run = [&](bool distributed, bool eager) {
    dt::test::FreshContext fresh;
    nn::clear_session();
    const auto names = virtual_cpus(3);
    const auto train = [&] {
      nn::Sequential model({nn::Dense(
          3,
          {.input_dim = 1, .activation = nn::Activation::softmax, .kernel_initializer = nn::initializers::Zeros{}})});
      model.compile("sparse_categorical_crossentropy", nn::optimizers::SGD{.learning_rate = 0.5},
                    {.metrics = {"accuracy"}, .run_eagerly = eager});
      return model
          .fit(dt::constant<float>(xs, {21, 1}), dt::constant<float>(ys, {21}),
               {.epochs = 3, .batch_size = 7, .verbose = 0, .shuffle = false})
          .metrics.at("accuracy");
    };
    if (!distributed) return train();
    ds::MirroredStrategy strategy(names);
    const auto scope = strategy.scope();
    return train();
  };
  const auto one_device = run(false, true);
  BOOST_TEST_MESSAGE("accuracy per epoch: " << one_device[0] << " " << one_device[1] << " " << one_device[2]);
  BOOST_TEST(one_device.front() != one_device.back());  // it learns: a metric that moves
  for (bool eager : {true, false}) {
    const auto replicas = run(true, eager);
    BOOST_TEST_REQUIRE(replicas.size() == one_device.size());
    for (std::size_t i = 0; i < replicas.size(); ++i)
      BOOST_TEST(replicas[i] == one_device[i], boost::test_tools::tolerance(1e-6));
  }
}

// evaluate and predict under a strategy split each batch across the replicas as fit does
// (TensorFlow's distributed test and predict steps), each replica computing its rows with its own
// components. Made visible by giving replica r's bias the value r: a batch of 7 rows over 3
// replicas is shares of 3, 2 and 2, one of 4 is 2, 1 and 1, one of 3 is 1, 1 and 1.
BOOST_AUTO_TEST_CASE(evaluate_and_predict_split_each_batch_across_the_replicas) {
  for (const bool eager : {true, false}) {
    BOOST_TEST_CONTEXT((eager ? "eager" : "traced")) {
      dt::test::FreshContext fresh;
      nn::clear_session();
      ds::MirroredStrategy strategy(virtual_cpus(3));
      const auto build = [&] {
        const auto scope = strategy.scope();
        nn::Sequential built({nn::Dense(1, {.input_dim = 2, .kernel_initializer = nn::initializers::Zeros{}})});
        built.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{},
                      {.metrics = {"mean_absolute_error"}, .run_eagerly = eager});
        return built;
      };
      auto built = build();
      auto* model = &built;
      const auto* bias = ds::as_distributed(model->trainable_variables()[1]);
      BOOST_TEST_REQUIRE(bias != nullptr);
      BOOST_TEST_REQUIRE(bias->values().size() == 3u);
      for (std::size_t r = 0; r < 3; ++r) bias->values()[r].assign(dt::constant<float>({static_cast<float>(r)}, {1}));
      const auto x = dt::ones<float>({7, 2});
      const auto y = dt::zeros<float>({7, 1});
      BOOST_TEST(model->predict(x, {.batch_size = 7}).to_vector() == std::vector<float>({0, 0, 0, 1, 1, 2, 2}),
                 boost::test_tools::per_element());
      const auto in_two_batches = model->predict(x, {.batch_size = 4});
      BOOST_TEST(in_two_batches.shape() == dt::Shape({7, 1}));
      BOOST_TEST(in_two_batches.to_vector() == std::vector<float>({0, 0, 1, 2, 0, 1, 2}),
                 boost::test_tools::per_element());
      // The loss and the metric summed over the replicas: mean squared error 10/7, absolute 6/7.
      for (const std::int64_t batch_size : {7, 4}) {
        const auto evaluation = model->evaluate(x, y, {.batch_size = batch_size, .verbose = 0});
        BOOST_TEST(evaluation.loss == 10.0 / 7.0, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(evaluation.metrics.at("mean_absolute_error") == 6.0 / 7.0, boost::test_tools::tolerance(1e-6));
      }
      // Fewer rows than replicas: the last replica's share is empty and it still runs.
      BOOST_TEST(model->predict(dt::ones<float>({2, 2})).to_vector() == std::vector<float>({0, 1}),
                 boost::test_tools::per_element());
      BOOST_TEST(model->evaluate(dt::ones<float>({2, 2}), dt::zeros<float>({2, 1}), {.verbose = 0}).loss == 0.5,
                 boost::test_tools::tolerance(1e-6));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_seeds_model_trains_on_two_simulated_gpus) {
  dt::config::set_simulated_gpus(2);
  ds::MirroredStrategy strategy;
  std::optional<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    model.emplace(std::vector<nn::Layer>{nn::Dense(1, {.input_dim = 1})});
    model->compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.2});
  }
  auto data_set = dt::data::Dataset<float, float>::from_tensors(dt::constant<float>({1}), dt::constant<float>({1}))
                      .repeat(100)
                      .batch(10);
  auto history = model->fit(data_set, {.epochs = 2, .verbose = 0});
  BOOST_TEST(history.loss[1] < history.loss[0]);
  const auto kernel = model->trainable_variables()[0];
  BOOST_TEST(kernel.component(1).device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  BOOST_TEST(kernel.component(0).to_vector() == kernel.component(1).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(model->evaluate(data_set, {.verbose = 0}) <= history.loss[1] + 1e-6);
}

// Keras's compile check: a model whose variables were created outside the strategy's scope is
// refused when compiled inside it (TensorFlow 2.21 with Keras 3 fails later, in fit, with a bare
// AssertionError from MirroredExtended.update; devtensor keeps tf.keras's earlier, explaining error).
BOOST_AUTO_TEST_CASE(a_model_built_outside_the_scope_is_refused_by_compile_inside) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  nn::Sequential model({nn::Dense(1, {.input_dim = 1})}, "outside");
  BOOST_REQUIRE(model.built());
  {
    auto guard = strategy.scope();
    DEVTENSOR_CHECK_THROW_WITH(
        model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{}), dt::InvalidArgumentError,
        "shape (1, 1)) was not created in the distribution strategy scope of (MirroredStrategy(");
    DEVTENSOR_CHECK_THROW_WITH(model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{}),
                               dt::InvalidArgumentError, "being created outside the distribution strategy scope");
  }
  BOOST_TEST(!model.compiled());  // refused without a change: it still trains on one device
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});
  const auto ones = dt::ones<float>({4, 1});
  const auto history = model.fit(ones, ones, {.epochs = 1, .batch_size = 4, .verbose = 0});
  BOOST_TEST(std::isfinite(history.loss[0]));
  BOOST_TEST(model.trainable_variables()[0].num_components() == 1u);
}

// Only variables that exist are checked: a model made outside the scope but built by its first
// step creates its variables in the scope captured at compile, and they are mirrored.
BOOST_AUTO_TEST_CASE(an_unbuilt_model_compiled_in_the_scope_mirrors_its_variables) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  nn::Sequential model({nn::Dense(1)});
  BOOST_REQUIRE(!model.built());
  {
    auto guard = strategy.scope();
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});
  }
  const auto ones = dt::ones<float>({4, 1});
  (void)model.fit(ones, ones, {.epochs = 1, .batch_size = 4, .verbose = 0});
  BOOST_TEST(model.trainable_variables()[0].num_components() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
/// in -> tanh branch and linear branch, added -> Dense(1); every kernel a constant.
nn::Model branches_model() {
  const auto in = nn::Input({3});
  const auto h =
      nn::Dense(4, {.activation = nn::Activation::tanh, .kernel_initializer = nn::initializers::Constant{0.1f}})(in);
  const auto s = nn::Dense(4, {.kernel_initializer = nn::initializers::Constant{-0.05f}})(in);
  nn::Model model(in, nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.3f}})(nn::Add()({h, s})));
  model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.1});
  return model;
}
}  // namespace

// The seeds' functional model (Input, Dense(1), Model) under MirroredStrategy: TensorFlow 2.21's
// epoch losses, evaluation, variables and summary (tests/reference/functional.py prints them), a
// functional model with branches trained across replicas as on one device, and Dropout.
struct FunctionalStrategyFixture : dt::test::FreshContext {
  FunctionalStrategyFixture() { nn::clear_session(); }
};

BOOST_FIXTURE_TEST_SUITE(functional_strategy, FunctionalStrategyFixture)

// keras.utils.set_random_seed: the same program run twice gives the same weights bit for bit, its
// unseeded initializers, Dropout and fit's shuffle included, traced and eager, across two replicas;
// without the global seed two runs differ (so the check can fail).
BOOST_AUTO_TEST_CASE(a_global_seed_makes_a_mirrored_fit_repeat_bit_for_bit) {
  const auto names = virtual_cpus(2);
  const auto x = dt::random_uniform<float>({24, 3}, {.seed = 1});
  const auto y = dt::random_uniform<float>({24, 1}, {.seed = 2});
  const auto train = [&](std::optional<std::uint64_t> seed, bool eager) {
    if (seed)
      nn::utils::set_random_seed(*seed);
    else
      dt::random::set_seed(std::nullopt);
    ds::MirroredStrategy strategy(names);
    auto guard = strategy.scope();
    nn::Sequential model(
        {nn::Dense(8, {.input_dim = 3, .activation = nn::Activation::relu}), nn::Dropout(0.3), nn::Dense(1)});
    model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.05}, {.run_eagerly = eager});
    (void)model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});  // shuffled every epoch
    std::vector<float> weights;
    for (const auto& v : model.trainable_variables()) {
      const auto w = v.value().to_vector();
      weights.insert(weights.end(), w.begin(), w.end());
    }
    return weights;
  };
  for (const bool eager : {false, true}) {
    const auto first = train(42, eager);
    BOOST_TEST(train(42, eager) == first, boost::test_tools::per_element());
    BOOST_TEST(train(43, eager) != first);
    BOOST_TEST(train(std::nullopt, eager) != train(std::nullopt, eager));
  }
}

// EarlyStopping's restore_best_weights across replicas: a diverging fit (SGD at 0.9 on a line)
// is best after its first epoch, stops two epochs later, and every replica's variables go back to
// the first epoch's values, as on one device.
BOOST_AUTO_TEST_CASE(early_stopping_restores_the_best_weights_on_every_replica) {
  const auto names = virtual_cpus(2);  // before the first tensor
  std::vector<float> xs, ys;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(static_cast<float>(-1.0 + 2.0 * i / 7.0));
    ys.push_back(2 * xs.back() + 1);
  }
  const auto x = dt::constant<float>(xs, {8, 1}), y = dt::constant<float>(ys, {8, 1});
  const auto train = [&](ds::MirroredStrategy<>* strategy) {
    std::optional<nn::Sequential> model;
    const auto make = [&] {
      nn::clear_session();
      model.emplace(
          std::vector<nn::Layer>{nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
      model->compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.9});
    };
    if (strategy) {
      auto guard = strategy->scope();
      make();
    } else {
      make();
    }
    auto after_first = std::make_shared<std::vector<float>>();
    nn::callbacks::EarlyStopping early{.monitor = "loss", .patience = 2, .restore_best_weights = true};
    const auto history = model->fit(
        x, y,
        {.epochs = 10,
         .batch_size = 4,
         .verbose = 0,
         .shuffle = false,
         .callbacks = {early, nn::callbacks::LambdaCallback{.on_epoch_end_fn = [&, after_first](int epoch, nn::Logs&) {
                         if (epoch != 0) return;
                         for (const auto& w : model->get_weights())
                           for (const float v : w.to_vector()) after_first->push_back(v);
                       }}}});
    BOOST_TEST(history.loss.size() == 3u);  // best at epoch 0, patience 2
    BOOST_TEST(history.loss[2] > history.loss[0]);
    BOOST_TEST(early.best_epoch() == 0);
    std::vector<float> now;
    for (const auto& v : model->variables()) {
      for (std::size_t c = 1; c < v.num_components(); ++c)
        BOOST_TEST(v.component(c).to_vector() == v.component(0).to_vector(), boost::test_tools::per_element());
      for (const float f : v.to_vector()) now.push_back(f);
    }
    BOOST_TEST(now == *after_first, boost::test_tools::per_element());
    return now;
  };
  ds::MirroredStrategy strategy(names);
  const auto mirrored = train(&strategy);
  const auto single = train(nullptr);
  BOOST_TEST_REQUIRE(mirrored.size() == single.size());
  for (std::size_t i = 0; i < single.size(); ++i)
    BOOST_TEST(mirrored[i] == single[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(several_inputs_and_outputs_train_across_replicas_as_tensorflow) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  const dt::test::TwoHeadsData data;
  const dt::nn::FitOptions options{.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false};
  std::optional<nn::Model> traced, eager;
  {
    auto guard = strategy.scope();
    traced.emplace(dt::test::two_heads_model());
    eager.emplace(dt::test::two_heads_model(/*run_eagerly=*/true));
  }
  const auto history = traced->fit(data.xs, data.ys, options);
  // TensorFlow 2.21 under MirroredStrategy over two CPUs (tests/reference/functional.py).
  const auto tol = boost::test_tools::tolerance(2e-6);
  dt::test::check_values(history.loss, {2.4443295, 1.7611834}, 2e-6);
  dt::test::check_values(history.metrics.at("reg_loss"), {1.8923613, 1.2110337}, 2e-6);
  dt::test::check_values(history.metrics.at("cls_loss"), {1.1039364, 1.1002995}, 2e-6);
  dt::test::check_values(history.metrics.at("cls_accuracy"), {0.25, 0.3333333}, 2e-6);
  const auto evaluation = traced->evaluate(data.xs, data.ys, {.verbose = 0});
  BOOST_TEST(evaluation.loss == 1.4246712, tol);
  BOOST_TEST(evaluation.metrics.at("cls_accuracy") == 0.6666667, tol);
  // The traced replicated step gives the eager one's bits; replicas stay identical.
  const auto eager_history = eager->fit(data.xs, data.ys, options);
  BOOST_TEST(eager_history.loss == history.loss, boost::test_tools::per_element());
  BOOST_TEST(eager_history.metrics == history.metrics);
  for (const auto& v : traced->variables()) {
    BOOST_TEST_REQUIRE(v.num_components() == 2u);
    BOOST_TEST(v.component(0).to_vector() == v.component(1).to_vector(), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(the_seeds_functional_model_gives_tensorflows_losses) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  std::optional<nn::Model> model;
  {
    // As the seeds write it: inputs, predictions and the model inside strategy.scope().
    auto guard = strategy.scope();
    const auto inputs = nn::Input({1});
    const auto predictions = nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.5f}})(inputs);
    model.emplace(inputs, predictions);
    model->compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.2});
  }
  std::ostringstream summary;
  model->summary(summary, {.line_length = 76});
  BOOST_TEST(summary.str() == std::string(R"(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)        │ (None, 1)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 1)              │             2 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 2 (8.00 B)
 Trainable params: 2 (8.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  const auto ones = dt::ones<float>(dt::Shape({100, 1}));
  const auto history = model->fit(ones, ones, {.epochs = 2, .batch_size = 10, .verbose = 0});
  // TensorFlow 2.21: epoch losses [0.026042, 0.0], evaluate 0.0, kernel 0.75000006, bias 0.24999993.
  BOOST_TEST_REQUIRE(history.loss.size() == 2u);
  BOOST_TEST(history.loss[0] == 0.026042, boost::test_tools::tolerance(1e-6 / 0.026042));
  BOOST_TEST(std::abs(history.loss[1]) <= 1e-6);
  BOOST_TEST(std::abs(model->evaluate(ones, ones, {.verbose = 0}).loss) <= 1e-6);
  const auto kernel = model->trainable_variables()[0];
  const auto bias = model->trainable_variables()[1];
  BOOST_TEST(kernel.value().item() == 0.75f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(bias.value().item() == 0.25f, boost::test_tools::tolerance(1e-6f));
  // Mirrored: one component per replica, equal after training.
  BOOST_TEST_REQUIRE(kernel.num_components() == 2u);
  BOOST_TEST(kernel.component(1).device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(kernel.component(0).to_vector() == kernel.component(1).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(model->name() == "functional");
  BOOST_TEST(model->layers()[0]->name() == "input_layer");
  BOOST_TEST(model->layers()[1]->name() == "dense");
}

BOOST_AUTO_TEST_CASE(a_model_with_branches_trains_across_replicas_as_on_one_device) {
  const auto names = virtual_cpus(3);  // before the first op
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3, 1, 1, -2, 0.5f, 0, 0, 1, -1, 2, 2}, {6, 3});
  const auto y = dt::constant<float>({1, -1, 0.5f, 2, 0, 1}, {6, 1});
  auto one_device = branches_model();
  const auto expected = one_device.fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  ds::MirroredStrategy strategy(names);
  std::optional<nn::Model> replicated;
  {
    auto guard = strategy.scope();
    replicated.emplace(branches_model());
  }
  const auto got = replicated->fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  BOOST_TEST_REQUIRE(got.loss.size() == expected.loss.size());
  for (std::size_t i = 0; i < got.loss.size(); ++i)
    BOOST_TEST(got.loss[i] == expected.loss[i], boost::test_tools::tolerance(1e-6));
  BOOST_TEST(replicated->trainable_variables()[0].num_components() == 3u);
  const auto a = replicated->trainable_variables()[4].value().to_vector();
  const auto b = one_device.trainable_variables()[4].value().to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) BOOST_TEST(a[i] == b[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(dropout_across_replicas_is_the_same_traced_or_eager) {
  // Each replica draws its own mask from the step's seed: a traced fit and an eager one agree.
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  const auto make = [&] {
    auto guard = strategy.scope();
    const auto in = nn::Input({8});
    const auto dropped = nn::Dropout(0.5, {.seed = 5})(in);
    nn::Model model(in, nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.25f}})(dropped));
    model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.01});
    return model;
  };
  auto traced = make();
  auto eager = make();
  eager.set_run_eagerly(true);
  const auto x = dt::ones<float>(dt::Shape({6, 8}));
  const auto y = dt::ones<float>(dt::Shape({6, 1}));
  const auto a = traced.fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  const auto b = eager.fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  BOOST_TEST(a.loss == b.loss, boost::test_tools::per_element());
  BOOST_TEST(a.loss[0] != a.loss[1]);
  BOOST_TEST(traced.trainable_variables()[0].value().to_vector() == eager.trainable_variables()[0].value().to_vector(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
