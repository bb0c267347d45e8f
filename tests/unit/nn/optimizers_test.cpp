// The optimizers' fused updates (ResourceApplyGradientDescent / KerasMomentum / Adam): several
// steps against a double-precision reference of Keras's formulas on the CPU and on simulated GPUs,
// their errors, copy-on-write of variables, and a training step on "real" GPUs (the fake GPU
// platform with host functions registered as GPU bodies) that keeps every byte on the device.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_kernels.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace nn = devtensor::nn;

namespace {

constexpr std::size_t kSize = 7;
constexpr int kSteps = 6;

/// Step t's gradient: varied signs and magnitudes, so max(v_hat, v) and momentum both matter.
std::vector<double> gradient_at(int t) {
  std::vector<double> g;
  for (std::size_t i = 0; i < kSize; ++i) {
    const double x = static_cast<double>(i);
    g.push_back(std::sin(1.3 * x + 0.7 * t) * (t % 3 == 2 ? 0.1 : 1.0) + 0.05 * x);
  }
  return g;
}
std::vector<double> initial_values() {
  std::vector<double> w;
  for (std::size_t i = 0; i < kSize; ++i) w.push_back(0.5 - 0.2 * static_cast<double>(i));
  return w;
}
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

/// Keras's Adam in double precision (keras/src/optimizers/adam.py, operation by operation).
std::vector<double> adam_reference(double lr, double b1, double b2, double eps, bool amsgrad) {
  auto w = initial_values();
  std::vector<double> m(kSize, 0.0), v(kSize, 0.0), v_hat(kSize, 0.0);
  for (int t = 1; t <= kSteps; ++t) {
    const auto g = gradient_at(t);
    const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (std::size_t i = 0; i < kSize; ++i) {
      m[i] += (g[i] - m[i]) * (1 - b1);
      v[i] += (g[i] * g[i] - v[i]) * (1 - b2);
      double denominator = v[i];
      if (amsgrad) denominator = v_hat[i] = std::max(v_hat[i], v[i]);
      w[i] -= (m[i] * alpha) / (std::sqrt(denominator) + eps);
    }
  }
  return w;
}
/// Keras's SGD with momentum (keras/src/optimizers/sgd.py).
std::vector<double> momentum_reference(double lr, double momentum, bool nesterov) {
  auto w = initial_values();
  std::vector<double> velocity(kSize, 0.0);
  for (int t = 1; t <= kSteps; ++t) {
    const auto g = gradient_at(t);
    for (std::size_t i = 0; i < kSize; ++i) {
      velocity[i] = velocity[i] * momentum - g[i] * lr;
      w[i] += nesterov ? velocity[i] * momentum - g[i] * lr : velocity[i];
    }
  }
  return w;
}

/// Runs kSteps of `optimizer` on a variable created under `device`; returns its final values.
template <class Optimizer>
std::vector<float> run_steps(const Optimizer& optimizer, const std::string& device) {
  dt::DeviceScope scope(device);
  dt::Variable<float> w(dt::constant<float>(to_float(initial_values()), {static_cast<std::int64_t>(kSize)}));
  BOOST_TEST(dt::test::contains(w.device(), device == "/cpu:0" ? "CPU:0" : "GPU:0"));
  for (int t = 1; t <= kSteps; ++t)
    optimizer.apply_gradients({dt::constant<float>(to_float(gradient_at(t)), {static_cast<std::int64_t>(kSize)})}, {w});
  BOOST_TEST(optimizer.iterations() == kSteps);
  return w.to_vector();
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tolerance * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}

/// tests/reference/loss_scale.py (Keras 3, TensorFlow 2.21, eager and tf.function alike): y = x·w
/// + b, mean squared error over 4 examples, SGD(1e-4) inside LossScaleOptimizer(initial_scale =
/// 2^125, dynamic_growth_steps = 3). Seven steps overflow float32 and are skipped (the scale halves,
/// iterations stay 0), then the scale doubles after every three finite steps. Per step: loss,
/// scale after it, iterations, w and b.
struct LossScaleStep {
  double loss, scale;
  std::int64_t iterations;
  std::array<double, 4> values;
};
const std::vector<LossScaleStep> kKerasLossScaleSteps = {
    {153.353745, 2.12676479e+37, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 1.0633824e+37, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 5.31691198e+36, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 2.65845599e+36, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 1.329228e+36, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 6.64613998e+35, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 3.32306999e+35, 0, {0.5, -0.25, 0.125, 0.100000001}},
    {153.353745, 3.32306999e+35, 1, {0.416900009, -0.335799992, 0.0364999995, 0.0997299999}},
    {22.2239704, 3.32306999e+35, 2, {0.39563027, -0.351939201, 0.0254913382, 0.100243054}},
    {16.9062748, 6.64613998e+35, 3, {0.385877639, -0.355315, 0.0284923483, 0.100880735}},
    {15.8629999, 6.64613998e+35, 4, {0.378427416, -0.356340945, 0.0338907093, 0.101523161}},
    {15.0194063, 6.64613998e+35, 5, {0.37158674, -0.356923252, 0.0395667739, 0.102148995}},
    {14.2353239, 1.329228e+36, 6, {0.365039527, -0.357411265, 0.045137953, 0.102754913}},
    {13.5026083, 1.329228e+36, 7, {0.358721882, -0.357869357, 0.0505393893, 0.103340864}},
    {12.8177605, 1.329228e+36, 8, {0.35261631, -0.358309716, 0.0557642393, 0.103907384}},
    {12.1776505, 2.65845599e+36, 9, {0.34671393, -0.358734995, 0.060816057, 0.104455091}}};
std::vector<float> loss_scale_features() {
  std::vector<float> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(static_cast<float>(i) * 10.0f - 40.0f);
  return xs;  // [4, 3]
}
const std::vector<float> kLossScaleTargets{1.0f, -2.0f, 3.0f, 0.5f};  // [4, 1]
/// Step k's loss, scale, iterations and w, b against Keras's.
void check_loss_scale_step(std::size_t k, double loss, const nn::optimizers::LossScaleOptimizer& optimizer,
                           const std::vector<dt::Variable<float>>& vars) {
  const auto close = [](double a, double b) { return std::abs(a - b) <= 2e-6 * (1.0 + std::abs(b)); };
  const LossScaleStep& want = kKerasLossScaleSteps[k];
  BOOST_TEST(close(loss, want.loss), "step " << k << " loss " << loss << " vs " << want.loss);
  BOOST_TEST(close(optimizer.dynamic_scale(), want.scale), "step " << k << " scale " << optimizer.dynamic_scale());
  BOOST_TEST(optimizer.iterations() == want.iterations, "step " << k);
  for (std::size_t c = 0; c < vars[0].num_components(); ++c) {  // every replica's copy
    const auto w = vars[0].component(c).to_vector();
    const std::array<double, 4> got{w[0], w[1], w[2], vars[1].component(c).to_vector()[0]};
    for (std::size_t i = 0; i < 4; ++i)
      BOOST_TEST(close(got[i], want.values[i]),
                 "step " << k << " component " << c << " value " << i << ": " << got[i] << " vs " << want.values[i]);
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(optimizers, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(adam_matches_kerass_formulas_on_cpu_and_simulated_gpu) {
  dt::config::set_simulated_gpus(1);
  for (const std::string device : {"/cpu:0", "/gpu:0"})
    for (const bool amsgrad : {false, true}) {
      BOOST_TEST_CONTEXT(device << (amsgrad ? " amsgrad" : "")) {
        // A large learning rate and beta_2 = 0.9 so that every term moves the result visibly.
        const nn::optimizers::Adam adam{
            .learning_rate = 0.05, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3, .amsgrad = amsgrad};
        check_close(run_steps(adam, device), adam_reference(0.05, 0.8, 0.9, 1e-3, amsgrad), 1e-5);
      }
    }
  // The defaults are Keras's: learning_rate 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7.
  const nn::optimizers::Adam defaults;
  check_close(run_steps(defaults, "/cpu:0"), adam_reference(0.001, 0.9, 0.999, 1e-7, false), 1e-5);
  // AMSGrad differs from Adam on this gradient sequence (v shrinks after the small steps).
  BOOST_TEST(adam_reference(0.05, 0.8, 0.9, 1e-3, true) != adam_reference(0.05, 0.8, 0.9, 1e-3, false));
}

BOOST_AUTO_TEST_CASE(the_cpu_loops_simd_packs_compute_exactly_what_the_functors_do) {
  // kernels::cpu_update runs packs of 16 bytes, then the tail with the functor: for every length
  // (packs only, tail only, both) and element type, the same bits as the functor element by element.
  const auto check = [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const std::int64_t n : {1, 3, 4, 5, 8, 13}) {
      BOOST_TEST_CONTEXT(dt::dtype_name<T>() << " n = " << n) {
        const auto values = [&](double scale, double offset) {
          std::vector<T> out(static_cast<std::size_t>(n));
          for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<T>(std::sin(static_cast<double>(i) * scale) + offset);
          return out;
        };
        const auto var = values(0.7, 0.1), grad = values(1.3, -0.2);
        std::vector<T> out_a(var.size()), out_b(var.size());
        // SGD
        dt::kernels::cpu_update(dt::ops::GradientDescentUpdate<T>{var.data(), grad.data(), out_a.data(), T(0.3)}, 0, n);
        const dt::ops::GradientDescentUpdate<T> sgd{var.data(), grad.data(), out_b.data(), T(0.3)};
        for (std::int64_t i = 0; i < n; ++i) sgd(i);
        BOOST_TEST(out_a == out_b, boost::test_tools::per_element());
        // Momentum and Nesterov
        for (const bool nesterov : {false, true}) {
          auto vel_a = values(0.4, 0.0), vel_b = vel_a;
          dt::kernels::cpu_update(dt::ops::KerasMomentumUpdate<T>{var.data(), grad.data(), vel_a.data(), out_a.data(),
                                                                  T(0.1), T(0.9), nesterov},
                                  0, n);
          const dt::ops::KerasMomentumUpdate<T> momentum{var.data(), grad.data(), vel_b.data(), out_b.data(),
                                                         T(0.1),     T(0.9),      nesterov};
          for (std::int64_t i = 0; i < n; ++i) momentum(i);
          BOOST_TEST(out_a == out_b, boost::test_tools::per_element());
          BOOST_TEST(vel_a == vel_b, boost::test_tools::per_element());
        }
        // Adam, in place (out is var, as when nothing else holds the variable's buffer)
        auto w_a = var, w_b = var;
        auto m_a = values(0.2, 0.05), m_b = m_a;
        auto v_a = values(0.5, 1.5), v_b = v_a;
        dt::kernels::cpu_update(dt::ops::AdamUpdate<T>{w_a.data(), grad.data(), m_a.data(), v_a.data(), nullptr,
                                                       w_a.data(), T(0.01), T(0.1), T(0.001), T(1e-7)},
                                0, n);
        const dt::ops::AdamUpdate<T> adam{w_b.data(), grad.data(), m_b.data(), v_b.data(), nullptr,
                                          w_b.data(), T(0.01),     T(0.1),     T(0.001),   T(1e-7)};
        for (std::int64_t i = 0; i < n; ++i) adam(i);
        BOOST_TEST(w_a == w_b, boost::test_tools::per_element());
        BOOST_TEST(m_a == m_b, boost::test_tools::per_element());
        BOOST_TEST(v_a == v_b, boost::test_tools::per_element());
        BOOST_TEST(w_a != var);  // it did update
      }
    }
  };
  check(std::type_identity<float>{});
  check(std::type_identity<double>{});
}

BOOST_AUTO_TEST_CASE(sgd_momentum_and_nesterov_match_kerass_formulas_over_steps) {
  dt::config::set_simulated_gpus(1);
  for (const std::string device : {"/cpu:0", "/gpu:0"})
    for (const bool nesterov : {false, true}) {
      BOOST_TEST_CONTEXT(device << (nesterov ? " nesterov" : "")) {
        const nn::optimizers::SGD sgd{.learning_rate = 0.1, .momentum = 0.9, .nesterov = nesterov};
        check_close(run_steps(sgd, device), momentum_reference(0.1, 0.9, nesterov), 1e-5);
      }
    }
  const nn::optimizers::SGD plain{.learning_rate = 0.1};
  check_close(run_steps(plain, "/gpu:0"), momentum_reference(0.1, 0.0, false), 1e-5);
}

BOOST_AUTO_TEST_CASE(a_loss_scale_optimizer_skips_overflowing_steps_as_keras) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  const auto x = dt::constant<float>(loss_scale_features(), {4, 3});
  const auto y = dt::constant<float>(kLossScaleTargets, {4, 1});
  // Eagerly, then as one traced function (dt::function: the skip or update is its
  // LossScaledApply node, Keras's tf.cond), which must follow the same sequence, on the CPU and
  // with the variables on a (fake) GPU, where it asks for CUDA-graph replay and runs op by op.
  const dt::test::LogCapture captured;
  for (const std::string mode : {"eager", "traced", "traced on /GPU:0"}) {
    BOOST_TEST_CONTEXT(mode) {
      const bool traced = mode != "eager", on_gpu = mode == "traced on /GPU:0";
      dt::DeviceScope scope(on_gpu ? "/GPU:0" : "/cpu:0");
      const std::vector<dt::Variable<float>> vars{
          dt::Variable<float>(dt::constant<float>({0.5f, -0.25f, 0.125f}, {3, 1})),
          dt::Variable<float>(dt::constant<float>({0.1f}, {1}))};
      const nn::optimizers::LossScaleOptimizer optimizer{.inner_optimizer = nn::optimizers::SGD{.learning_rate = 1e-4},
                                                         .initial_scale = std::ldexp(1.0, 125),
                                                         .dynamic_growth_steps = 3};
      BOOST_TEST(optimizer.dynamic_scale() == std::ldexp(1.0, 125));
      const auto step = [&](const dt::Tensor<float>& features, const dt::Tensor<float>& targets) {
        dt::GradientTape tape;
        const auto prediction = dt::add(dt::matmul(features, vars[0].value()), vars[1].value());
        const auto loss = dt::reduce_mean(dt::square(dt::sub(prediction, targets)));
        const auto scaled = optimizer.scale_loss(loss);
        optimizer.apply_gradients(tape.gradient(scaled, vars), vars);
        return loss;
      };
      auto traced_step = dt::function(step, {.name = "step", .cuda_graph = on_gpu});
      for (std::size_t k = 0; k < kKerasLossScaleSteps.size(); ++k)
        check_loss_scale_step(k, (traced ? traced_step(x, y) : step(x, y)).item(), optimizer, vars);
      BOOST_TEST(optimizer.step_counter() == 0);  // step 15 was the third finite step: the scale doubled
      // Two traces, as tf.function's (TensorFlow 2.21 counts 2 for this loop): the first made the
      // scale's variable, and a trace that creates variables is traced again.
      BOOST_TEST(traced_step.experimental_get_tracing_count() == (traced ? 2 : 0));
      if (on_gpu) BOOST_TEST(!vars[0].component(0).host_memory());
    }
  }
  BOOST_TEST(
      captured.count("is not replayed as a CUDA graph: node 'LossScaleOptimizer' (LossScaledApply) runs host code "
                     "at every call, which a graph cannot record. It runs op by op.") == 1);
}

// A custom loop under MirroredStrategy, traced: two replicas on logical CPUs each take two of the
// four examples (the loss their squared errors over the global batch of 4), strategy.run computes
// each replica's scaled gradients, batch_reduce_to sums them, and apply_gradients updates in
// cross-replica context, in the same dt::function. The sum is one process's gradient, so every
// replica's copy follows Keras's one-process sequence, skipped steps and scale included, as
// TensorFlow 2.21's MirroredStrategy runs this loop (tests/reference/loss_scale_mirrored.py checks
// that it does). The same loop with apply inside strategy.run is refused here; TensorFlow diverges
// there: eagerly each replica checks its own gradients (its variables are -inf from step 6), and
// traced its graph fails to run.
BOOST_AUTO_TEST_CASE(a_traced_custom_loop_under_mirrored_strategy_follows_kerass_sequence) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0],
                                               std::vector<dt::config::LogicalDeviceConfiguration>(2));
  const dt::distribute::MirroredStrategy strategy;
  BOOST_TEST_REQUIRE(strategy.num_replicas_in_sync() == 2);
  const nn::optimizers::LossScaleOptimizer optimizer{.inner_optimizer = nn::optimizers::SGD{.learning_rate = 1e-4},
                                                     .initial_scale = std::ldexp(1.0, 125),
                                                     .dynamic_growth_steps = 3};
  std::vector<dt::Variable<float>> vars;
  {
    const auto scope = strategy.scope();
    vars = {dt::Variable<float>(dt::constant<float>({0.5f, -0.25f, 0.125f}, {3, 1})),
            dt::Variable<float>(dt::constant<float>({0.1f}, {1}))};
    optimizer.build();  // the scale's variable, mirrored
  }
  const auto features = loss_scale_features();
  const auto replica_step = [&] {
    const auto r = static_cast<std::size_t>(dt::distribute::get_replica_context()->replica_id_in_sync_group);
    const auto x = dt::constant<float>(std::vector<float>(features.begin() + 6 * static_cast<std::ptrdiff_t>(r),
                                                          features.begin() + 6 * static_cast<std::ptrdiff_t>(r + 1)),
                                       {2, 3});
    const auto y = dt::constant<float>({kLossScaleTargets[2 * r], kLossScaleTargets[2 * r + 1]}, {2, 1});
    dt::GradientTape tape;
    const auto prediction = dt::add(dt::matmul(x, vars[0].value()), vars[1].value());
    const auto loss = dt::nn::compute_average_loss(dt::reduce_sum(dt::square(dt::sub(prediction, y)), 1), 4);
    return std::pair{loss, tape.gradient(optimizer.scale_loss(loss), vars)};
  };
  auto step = dt::function([&] {
    auto results = strategy.run(replica_step);
    dt::distribute::PerReplica<dt::Tensor<float>> losses;
    std::vector<dt::distribute::PerReplica<dt::Tensor<float>>> grads(vars.size());
    for (const auto& [loss, g] : results.values) {
      losses.values.push_back(loss);
      for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
    }
    std::vector<dt::Tensor<float>> summed;
    for (const auto& sum : strategy.batch_reduce_to(dt::distribute::ReduceOp::SUM, grads))
      summed.push_back(sum.primary());
    optimizer.apply_gradients(summed, vars);
    return strategy.reduce(dt::distribute::ReduceOp::SUM, losses, std::nullopt);
  });
  for (std::size_t k = 0; k < kKerasLossScaleSteps.size(); ++k)
    check_loss_scale_step(k, step().item(), optimizer, vars);
  BOOST_TEST(vars[0].num_components() == 2u);
  BOOST_TEST(step.experimental_get_tracing_count() == 1);  // the scale's variable was built before
}

BOOST_AUTO_TEST_CASE(a_loss_scale_optimizer_refuses_what_keras_refuses_and_where_it_cannot_check) {
  const auto make = [](double scale, std::int64_t growth_steps, bool dynamic) {
    return nn::optimizers::LossScaleOptimizer{.inner_optimizer = nn::optimizers::SGD{},
                                              .initial_scale = scale,
                                              .dynamic_growth_steps = growth_steps,
                                              .dynamic = dynamic};
  };
  const auto loss = dt::scalar<float>(2.0f);
  DEVTENSOR_CHECK_THROW_WITH((void)make(8, 10, false).scale_loss(loss), dt::InvalidArgumentError,
                             "LossScaleOptimizer no longer supports `dynamic=False`");
  DEVTENSOR_CHECK_THROW_WITH((void)make(0, 10, true).scale_loss(loss), dt::InvalidArgumentError,
                             "`initial_scale` must be a positive finite float32, got 0");
  DEVTENSOR_CHECK_THROW_WITH((void)make(1e39, 10, true).scale_loss(loss), dt::InvalidArgumentError,
                             "`initial_scale` must be a positive finite float32");
  DEVTENSOR_CHECK_THROW_WITH((void)make(8, 0, true).scale_loss(loss), dt::InvalidArgumentError,
                             "`dynamic_growth_steps` must be at least 1, got 0");
  const auto optimizer = make(8, 10, true);
  BOOST_TEST(optimizer.scale_loss(loss).item() == 16.0f);
  const std::vector<dt::Variable<float>> vars{dt::Variable<float>(dt::constant<float>({1.0f}))};
  DEVTENSOR_CHECK_THROW_WITH(optimizer.apply_gradients({}, vars), dt::InvalidArgumentError,
                             "0 gradients for 1 variables");
  // the inner optimizer's checks come first: a refused step leaves the scale as it was
  DEVTENSOR_CHECK_THROW_WITH(optimizer.apply_gradients({dt::constant<float>({1.0f, 2.0f})}, vars),
                             dt::InvalidArgumentError, "has shape [2] but the variable has shape [1]");
  BOOST_TEST(optimizer.dynamic_scale() == 8.0);
  // a NaN gradient: skipped, the variable unchanged, the scale halved
  optimizer.apply_gradients({dt::constant<float>({std::numeric_limits<float>::quiet_NaN()})}, vars);
  BOOST_TEST(vars[0].value().to_vector()[0] == 1.0f);
  BOOST_TEST(optimizer.dynamic_scale() == 4.0);
  BOOST_TEST(optimizer.iterations() == 0);
  // a copy shares the scale; a finite step counts
  const auto copy = optimizer;
  copy.apply_gradients({dt::constant<float>({4.0f})}, vars);  // 4 / 4 = 1: w = 1 - 0.01
  BOOST_TEST(vars[0].value().to_vector()[0] == 0.99f);
  BOOST_TEST(optimizer.step_counter() == 1);
  BOOST_TEST(optimizer.iterations() == 1);
  // traced, the checks come when the function is traced, before its first run changes anything
  auto traced = dt::function([&](const dt::Tensor<float>& g) {
    optimizer.apply_gradients({g}, vars);
    return g;
  });
  DEVTENSOR_CHECK_THROW_WITH(traced(dt::constant<float>({1.0f, 2.0f})), dt::InvalidArgumentError,
                             "has shape [2] but the variable has shape [1]");
  BOOST_TEST(optimizer.step_counter() == 1);
  // and its node reads the gradients at every call: inf skips, a finite one updates
  (void)traced(dt::constant<float>({std::numeric_limits<float>::infinity()}));
  BOOST_TEST(vars[0].value().to_vector()[0] == 0.99f);
  BOOST_TEST(optimizer.dynamic_scale() == 2.0);
  BOOST_TEST(optimizer.step_counter() == 0);
  (void)traced(dt::constant<float>({2.0f}));  // 2 / 2 = 1: w = 0.99 - 0.01
  BOOST_TEST(vars[0].value().to_vector()[0] == 0.98f);
  BOOST_TEST(optimizer.iterations() == 2);
  BOOST_TEST(traced.experimental_get_tracing_count() == 1);  // a refused trace does not count
}

BOOST_AUTO_TEST_CASE(adam_rejects_bad_hyperparameters_and_leaves_variables_unchanged) {
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::Adam{.learning_rate = -0.1}), dt::InvalidArgumentError,
                             "`learning_rate` must be a non-negative number. Received: learning_rate=-0.1");
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::Adam{.learning_rate = std::nan("")}),
                             dt::InvalidArgumentError, "`learning_rate` must be a non-negative number");
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::Adam{.beta_1 = 1.0}), dt::InvalidArgumentError,
                             "`beta_1` must be between [0, 1). Received: beta_1=1.0");
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::Adam{.beta_2 = -0.5}), dt::InvalidArgumentError,
                             "`beta_2` must be between [0, 1). Received: beta_2=-0.5");
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::Adam{.epsilon = -1}), dt::InvalidArgumentError,
                             "`epsilon` must be non-negative");
  BOOST_CHECK_NO_THROW(nn::Optimizer(nn::optimizers::Adam{.learning_rate = 0, .beta_1 = 0, .beta_2 = 0}));

  // A bad call updates nothing: neither the variables nor the step count.
  dt::Variable<float> a(dt::constant<float>({1, 2}), {.name = "a"});
  dt::Variable<float> b(dt::constant<float>({3}), {.name = "b"});
  const nn::optimizers::Adam adam{.learning_rate = 0.1};
  DEVTENSOR_CHECK_THROW_WITH(adam.apply_gradients({dt::constant<float>({1, 1}), dt::constant<float>({1, 1})}, {a, b}),
                             dt::InvalidArgumentError,
                             "the gradient for b:0 has shape [2] but the variable has shape [1]");
  const nn::optimizers::Adam bad{.beta_1 = 2};
  DEVTENSOR_CHECK_THROW_WITH(bad.apply_gradients({dt::constant<float>({1, 1})}, {a}), dt::InvalidArgumentError,
                             "`beta_1` must be between [0, 1)");
  BOOST_TEST(a.to_vector() == (std::vector<float>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(b.to_vector() == (std::vector<float>{3}), boost::test_tools::per_element());
  BOOST_TEST(adam.iterations() == 0);
  // The gradient of the wrong element count for a variable is refused the same way.
  DEVTENSOR_CHECK_THROW_WITH(adam.apply_gradients({dt::constant<float>({1, 1})}, {a, b}), dt::InvalidArgumentError,
                             "1 gradients for 2 variables");
}

BOOST_AUTO_TEST_CASE(a_fused_update_is_in_place_unless_a_read_still_holds_the_buffer) {
  dt::Variable<float> w(dt::constant<float>({1, 2, 3}));
  const nn::optimizers::SGD sgd{.learning_rate = 0.5};
  const auto grad = std::vector{dt::constant<float>({2, 2, 2})};
  const float* buffer = w.component(0).data();
  sgd.apply_gradients(grad, {w});
  BOOST_TEST(w.component(0).data() == buffer);  // updated in place: nothing else held it
  BOOST_TEST(w.to_vector() == (std::vector<float>{0, 1, 2}), boost::test_tools::per_element());

  const dt::Tensor<float> before = w.value();  // a read keeps its value (copy-on-write)
  sgd.apply_gradients(grad, {w});
  BOOST_TEST(before.to_vector() == (std::vector<float>{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(w.to_vector() == (std::vector<float>{-1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(w.component(0).data() != before.data());
}

/// A variable mirrored on the strategy's replicas, holding initial_values().
dt::Variable<float> mirrored_initial_values(dt::distribute::MirroredStrategy<>& strategy) {
  auto guard = strategy.scope();
  return dt::Variable<float>(dt::constant<float>(to_float(initial_values()), {static_cast<std::int64_t>(kSize)}));
}
/// Each of w's two components on its own GPU, equal to Keras's Adam (lr 0.05, betas 0.8 / 0.9,
/// epsilon 1e-3) after kSteps steps of gradient_at.
void check_components_follow_adam(const dt::Variable<float>& w) {
  const auto want = adam_reference(0.05, 0.8, 0.9, 1e-3, false);
  for (std::size_t c = 0; c < 2; ++c) {
    BOOST_TEST(dt::test::contains(w.component(c).device(), "GPU:" + std::to_string(c)));
    check_close(w.component(c).to_vector(), want, 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(mirrored_components_get_the_same_update_on_their_own_devices) {
  dt::config::set_simulated_gpus(2);
  dt::distribute::MirroredStrategy strategy({"/gpu:0", "/gpu:1"});
  const auto w = mirrored_initial_values(strategy);
  const nn::optimizers::Adam adam{.learning_rate = 0.05, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3};
  for (int t = 1; t <= kSteps; ++t)
    adam.apply_gradients({dt::constant<float>(to_float(gradient_at(t)), {static_cast<std::int64_t>(kSize)})}, {w});
  check_components_follow_adam(w);
}

// TensorFlow's custom training loop: apply_gradients inside strategy.run. The replicas' gradients
// meet in merge_call, are summed by the strategy's all-reduce, and one step updates each component
// with the sum on its own device: the result of one process given the summed gradient.
BOOST_AUTO_TEST_CASE(inside_strategy_run_the_replicas_gradients_are_summed_then_applied_once) {
  dt::config::set_simulated_gpus(2);
  dt::distribute::MirroredStrategy strategy({"/gpu:0", "/gpu:1"});
  const auto w = mirrored_initial_values(strategy);
  const nn::optimizers::Adam adam{.learning_rate = 0.05, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3};
  for (int t = 1; t <= kSteps; ++t)
    strategy.run([&] {
      // Replica r contributes (r + 1) / 3 of the step's gradient: the replicas' sum is all of it.
      const auto share = static_cast<double>(dt::distribute::get_replica_context()->replica_id_in_sync_group + 1) / 3.0;
      auto g = gradient_at(t);
      for (auto& x : g) x *= share;
      adam.apply_gradients({dt::constant<float>(to_float(g), {static_cast<std::int64_t>(kSize)})}, {w});
      return 0;
    });
  BOOST_TEST(adam.iterations() == kSteps);  // one step per run, not one per replica
  check_components_follow_adam(w);

  // A variable made outside the strategy's scope cannot be updated from its replicas.
  dt::Variable<float> plain(dt::constant<float>({1, 2}));
  const nn::optimizers::SGD sgd;
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] {
    sgd.apply_gradients({dt::constant<float>({1, 1}),
                         dt::constant<float>(to_float(gradient_at(1)), {static_cast<std::int64_t>(kSize)})},
                        {plain, w});
    return 0;
  }),
                             dt::InvalidArgumentError, "was not created in its scope");
  BOOST_TEST(plain.to_vector() == std::vector<float>({1, 2}), boost::test_tools::per_element());
  BOOST_TEST(sgd.iterations() == 0);
}

BOOST_AUTO_TEST_CASE(a_gradient_on_another_device_is_copied_or_refused_by_the_device_policy) {
  std::vector<dt::config::LogicalDeviceConfiguration> two(2);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], two);
  std::optional<dt::Variable<float>> w;
  {
    dt::DeviceScope scope("/cpu:1");
    w.emplace(dt::constant<float>({1, 2}), dt::VariableOptions{.name = "w"});
  }
  dt::Tensor<float> grad;
  {
    dt::DeviceScope scope("/cpu:0");
    grad = dt::constant<float>({1, 1});
  }
  const nn::optimizers::Adam adam{.learning_rate = 0.5};
  dt::Variable<float> first(dt::constant<float>({5}));  // on CPU:0 with its gradient: fine alone
  dt::config::experimental::set_device_policy(dt::DevicePolicy::EXPLICIT);
  DEVTENSOR_CHECK_THROW_WITH(
      adam.apply_gradients({dt::constant<float>({1}), grad}, {first, *w}), dt::InvalidArgumentError,
      "Tensors on conflicting devices: cannot compute ResourceApplyAdam as input #1 was expected "
      "to be on /job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(first.to_vector() == (std::vector<float>{5}), boost::test_tools::per_element());  // nothing updated
  BOOST_TEST(w->to_vector() == (std::vector<float>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(adam.iterations() == 0);
  const nn::optimizers::SGD sgd{.momentum = 0.5};
  DEVTENSOR_CHECK_THROW_WITH(sgd.apply_gradients({grad}, {*w}), dt::InvalidArgumentError,
                             "cannot compute ResourceApplyKerasMomentum as input #1");
  dt::config::experimental::set_device_policy(dt::DevicePolicy::SILENT);
  adam.apply_gradients({grad}, {*w});  // copied to the variable's device, as TensorFlow does
  check_close(w->to_vector(), {0.5, 1.5}, 1e-5);
  BOOST_TEST(dt::test::contains(w->device(), "CPU:1"));
}

BOOST_AUTO_TEST_CASE(training_on_a_gpu_reports_memory_and_an_oom_says_which_knob_to_turn) {
  dt::config::set_simulated_gpus(1, std::int64_t{1} << 30);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("GPU")[0], {{.memory_limit_mb = 2}});
  dt::DeviceScope gpu("/gpu:0");
  nn::Sequential model({nn::Dense(64, {.input_dim = 64, .activation = nn::Activation::relu}), nn::Dense(1)});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{});
  dt::config::experimental::reset_memory_stats("GPU:0");
  const auto before = dt::config::experimental::get_memory_info("GPU:0");
  model.train_step(dt::ones<float>({16, 64}), dt::zeros<float>({16, 1}));
  const auto after = dt::config::experimental::get_memory_info("GPU:0");
  // Adam's two slots per variable stay; the step's activations and gradients came and went.
  BOOST_TEST(after.current > before.current);
  BOOST_TEST(after.peak > after.current);
  const auto weights = model.trainable_variables()[0].to_vector();
  // A batch too large for the 2 MiB device (the batch itself in host memory, as a dataset's is):
  // the step fails with a typed error naming the limit and what to change.
  dt::Tensor<float> big_x, big_y;
  {
    dt::DeviceScope host("/cpu:0");
    big_x = dt::ones<float>({4096, 64});
    big_y = dt::zeros<float>({4096, 1});
  }
  DEVTENSOR_CHECK_THROW_WITH(model.train_step(big_x, big_y), dt::ResourceExhaustedError, "OOM when allocating tensor");
  DEVTENSOR_CHECK_THROW_WITH(model.train_step(big_x, big_y), dt::ResourceExhaustedError,
                             "(set by memory_limit_mb = 2 of the virtual device): free tensors that are no longer "
                             "needed, reduce the batch size, or raise the limit");
  BOOST_TEST(model.trainable_variables()[0].to_vector() == weights, boost::test_tools::per_element());
  BOOST_CHECK_NO_THROW(model.train_step(dt::ones<float>({16, 64}), dt::zeros<float>({16, 1})));  // still usable
}

BOOST_AUTO_TEST_CASE(fused_updates_are_logged_on_the_variables_device) {
  dt::Variable<float> w(dt::constant<float>({1}));
  dt::debugging::set_log_device_placement(true);
  nn::optimizers::Adam{}.apply_gradients({dt::constant<float>({1})}, {w});
  nn::optimizers::SGD{.momentum = 0.5}.apply_gradients({dt::constant<float>({1})}, {w});
  BOOST_TEST(log.count("Executing op ResourceApplyAdam in device /job:localhost/replica:0/task:0/device:CPU:0") == 1u);
  BOOST_TEST(
      log.count("Executing op ResourceApplyKerasMomentum in device /job:localhost/replica:0/task:0/device:CPU:0") ==
      1u);
}

BOOST_AUTO_TEST_CASE(a_program_without_gpu_bodies_stages_updates_of_gpu_variables_through_the_host) {
  // A host-compiled program (no devtensor::cuda) whose mirrored variables live in GPU memory.
  dt::test::FakeGpuPlatform platform(1);
  dt::distribute::MirroredStrategy strategy;
  std::optional<dt::Variable<float>> w;
  {
    auto guard = strategy.scope();
    w.emplace(dt::constant<float>(to_float(initial_values()), {static_cast<std::int64_t>(kSize)}));
  }
  BOOST_TEST_REQUIRE(!w->component(0).host_memory());
  const nn::optimizers::Adam adam{
      .learning_rate = 0.05, .beta_1 = 0.8, .beta_2 = 0.9, .epsilon = 1e-3, .amsgrad = true};
  for (int t = 1; t <= kSteps; ++t)
    adam.apply_gradients({dt::constant<float>(to_float(gradient_at(t)), {static_cast<std::int64_t>(kSize)})}, {*w});
  check_close(w->to_vector(), adam_reference(0.05, 0.8, 0.9, 1e-3, true), 1e-5);
  const nn::optimizers::SGD sgd{.learning_rate = 0.1, .momentum = 0.9};
  const auto start = w->to_vector();
  sgd.apply_gradients({dt::fill<float>(w->shape(), 1.0f)}, {*w});
  const auto after = w->to_vector();
  for (std::size_t i = 0; i < kSize; ++i) BOOST_TEST(std::abs(after[i] - (start[i] - 0.1f)) <= 1e-6f);
}

BOOST_AUTO_TEST_SUITE_END()

// --- a training step on "real" GPUs ---------------------------------------------------------------

namespace {

struct Mlp {
  std::vector<dt::Variable<float>> vars;  // w1 [4, 8], b1 [8], w2 [8, 1], b2 [1]
  Mlp() {
    std::vector<float> w1, w2;
    for (int i = 0; i < 32; ++i) w1.push_back(0.1f * static_cast<float>((i * 7) % 11) - 0.5f);
    for (int i = 0; i < 8; ++i) w2.push_back(0.2f * static_cast<float>((i * 3) % 5) - 0.4f);
    vars.emplace_back(dt::constant<float>(w1, {4, 8}), dt::VariableOptions{.name = "w1"});
    vars.emplace_back(dt::zeros<float>({8}), dt::VariableOptions{.name = "b1"});
    vars.emplace_back(dt::constant<float>(w2, {8, 1}), dt::VariableOptions{.name = "w2"});
    vars.emplace_back(dt::zeros<float>({1}), dt::VariableOptions{.name = "b2"});
  }
  /// One tape step; returns the loss tensor (not read: reading it is the user's choice).
  template <class Optimizer>
  dt::Tensor<float> step(const Optimizer& optimizer, const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    dt::GradientTape tape;
    const auto hidden = dt::relu(dt::add(dt::matmul(x, vars[0].value()), vars[1].value()));
    const auto prediction = dt::add(dt::matmul(hidden, vars[2].value()), vars[3].value());
    auto loss = dt::reduce_mean(dt::square(dt::sub(prediction, y)));
    optimizer.apply_gradients(tape.gradient(loss, vars), vars);
    return loss;
  }
};

std::vector<float> batch_values(int n, int features) {
  std::vector<float> v;
  for (int i = 0; i < n * features; ++i) v.push_back(std::cos(0.37f * static_cast<float>(i)));
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(training_on_real_gpus)

BOOST_AUTO_TEST_CASE(a_training_step_keeps_variables_and_updates_on_the_gpu) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  auto& recorder = dt::test::fake_gpu_recorder();

  const auto x_host = batch_values(16, 4);
  const auto y_host = batch_values(16, 1);
  const auto train = [&]<class Optimizer>(const Optimizer& optimizer, const std::string& device) {
    dt::DeviceScope scope(device);
    Mlp model;
    const auto x = dt::constant<float>(x_host, {16, 4});
    const auto y = dt::constant<float>(y_host, {16, 1});
    for (const auto& v : model.vars) BOOST_TEST(dt::test::contains(v.device(), device == "/cpu:0" ? "CPU:0" : "GPU:0"));
    std::size_t copies_before = 0;
    {
      std::lock_guard lock(recorder.mutex);
      copies_before = recorder.copies.size();
    }
    std::vector<dt::Tensor<float>> losses;
    for (int s = 0; s < 4; ++s) losses.push_back(model.step(optimizer, x, y));
    std::size_t to_host = 0, to_device = 0;
    {
      std::lock_guard lock(recorder.mutex);
      for (std::size_t i = copies_before; i < recorder.copies.size(); ++i) {
        const auto& c = recorder.copies[i];
        if (c.dst_ordinal < 0 && c.src_ordinal >= 0) ++to_host;
        if (c.dst_ordinal >= 0 && c.src_ordinal < 0) ++to_device;
      }
    }
    if (device != "/cpu:0") {
      BOOST_TEST(to_host == 0u);  // no host round trip: not a loss read, not a staged update
      // No variable (or anything else) brought back from the host; Adam's step count starts on
      // the GPU from the host's, once (its step size is computed there: ops::AdamStepSize).
      BOOST_TEST(to_device == (std::is_same_v<Optimizer, nn::optimizers::Adam> ? 1u : 0u));
      for (const auto& v : model.vars) BOOST_TEST(!v.component(0).host_memory());
    }
    std::vector<float> result;
    for (const auto& v : model.vars)
      for (float f : v.to_vector()) result.push_back(f);
    result.push_back(losses.back().item());  // the one read the user asked for
    return result;
  };
  for (const bool adam : {false, true}) {
    BOOST_TEST_CONTEXT((adam ? "Adam" : "SGD with Nesterov momentum")) {
      const auto on_cpu =
          adam ? train(nn::optimizers::Adam{.learning_rate = 0.01}, "/cpu:0")
               : train(nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}, "/cpu:0");
      const auto on_gpu =
          adam ? train(nn::optimizers::Adam{.learning_rate = 0.01}, "/gpu:0")
               : train(nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}, "/gpu:0");
      BOOST_TEST_REQUIRE(on_cpu.size() == on_gpu.size());
      for (std::size_t i = 0; i < on_cpu.size(); ++i)
        BOOST_TEST(std::abs(on_cpu[i] - on_gpu[i]) <= 1e-5f * (1 + std::abs(on_cpu[i])), "value " << i);
    }
  }
}

BOOST_AUTO_TEST_CASE(fit_and_evaluate_read_the_loss_once_per_epoch_not_once_per_step) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  auto& recorder = dt::test::fake_gpu_recorder();
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host("/cpu:0");  // a dataset's elements live in host memory, as tf.data's do
    x = dt::constant<float>(batch_values(40, 2), {40, 2});
    y = dt::constant<float>(batch_values(40, 1), {40, 1});
  }
  const auto fit = [&](const std::string& device) {
    dt::DeviceScope scope(device);
    nn::clear_session();
    nn::Sequential model({nn::Dense(4, {.input_dim = 2,
                                        .activation = nn::Activation::relu,
                                        .kernel_initializer = nn::initializers::Constant{0.3f}}),
                          nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{-0.2f}})});
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{.learning_rate = 0.01});
    const auto data = dt::data::Dataset<float, float>::from_tensor_slices(x, y).batch(8);  // 5 steps per epoch
    std::size_t before = 0;
    {
      std::lock_guard lock(recorder.mutex);
      before = recorder.copies.size();
    }
    auto& tracker_launches = dt::test::fake_kernels::update_launches<dt::ops::WeightedAccumulateUpdate<float>>;
    const std::int64_t launches_before = tracker_launches;
    auto history = model.fit(data, {.epochs = 3, .verbose = 0});
    history.loss.push_back(model.evaluate(data, {.verbose = 0}));
    const std::int64_t tracker_steps = tracker_launches - launches_before;
    std::size_t to_host = 0, batches_up = 0;
    {
      std::lock_guard lock(recorder.mutex);
      for (std::size_t i = before; i < recorder.copies.size(); ++i) {
        const auto& c = recorder.copies[i];
        to_host += c.dst_ordinal < 0 && c.src_ordinal >= 0 ? 1u : 0u;
        batches_up += c.dst_ordinal >= 0 && c.src_ordinal < 0 && c.bytes == 8 * 2 * sizeof(float) ? 1u : 0u;
      }
    }
    if (device != "/cpu:0") {
      BOOST_TEST(to_host == 4u);  // the loss of 3 epochs and of evaluate: one read each
      // Each step uploads its batch of x once, though the train step reads it twice there (the
      // forward MatMul and the kernel's gradient): Note [One copy per value and device].
      BOOST_TEST(batches_up == 20u);
      BOOST_TEST(tracker_steps == 20);  // the loss tracker: one fused launch per step (15 + 5)
      for (const auto& v : model.trainable_variables()) BOOST_TEST(dt::test::contains(v.device(), "GPU:0"));
    }
    return history.loss;
  };
  const auto on_cpu = fit("/cpu:0");
  const auto on_gpu = fit("/gpu:0");
  BOOST_TEST_REQUIRE(on_cpu.size() == 4u);
  BOOST_TEST(on_cpu[2] < on_cpu[0]);
  for (std::size_t i = 0; i < on_cpu.size(); ++i)
    BOOST_TEST(std::abs(on_cpu[i] - on_gpu[i]) <= 1e-5 * (1 + std::abs(on_cpu[i])), "epoch " << i);
}

BOOST_AUTO_TEST_CASE(without_the_gpu_body_variables_stay_on_the_host) {
  dt::test::FakeGpuPlatform platform(1);
  dt::Variable<float> w(dt::constant<float>({1, 2}));  // no VarHandleOp GPU body registered
  BOOST_TEST(dt::test::contains(w.device(), "CPU:0"));
  dt::test::FakeGpuKernels kernels;
  dt::Variable<float> v(dt::constant<float>({1, 2}));
  BOOST_TEST(dt::test::contains(v.device(), "GPU:0"));
  v.assign_add(dt::constant<float>({1, 1}));
  v.assign_sub(dt::constant<float>({0.5f, 0.5f}));
  BOOST_TEST(v.to_vector() == (std::vector<float>{1.5f, 2.5f}), boost::test_tools::per_element());
  BOOST_TEST(dt::test::contains(v.device(), "GPU:0"));
}

BOOST_AUTO_TEST_SUITE_END()

// Learning-rate schedules (nn/schedules.hpp) against Keras 3.15's values (tests/reference/callbacks.py),
// and the learning rate as shared, settable state.
BOOST_FIXTURE_TEST_SUITE(schedules, dt::test::FreshContext)

namespace {
/// y = 2x + 1 on numpy's linspace(-1, 1, 8), a Dense(1) from zeros: the reference script's model.
nn::Sequential line_model(nn::Optimizer optimizer, nn::CompileOptions options = {}) {
  nn::clear_session();
  nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
  model.compile(nn::losses::MeanSquaredError{}, std::move(optimizer), std::move(options));
  return model;
}
/// An optimizer type whose learning rate is a plain number.
struct PlainSgd {
  double learning_rate = 0.3;
  static constexpr std::string_view name = "PlainSgd";
  void validate() const {}
  void apply_gradients(const std::vector<dt::Tensor<float>>&, const std::vector<dt::Variable<float>>&) const {}
};
std::pair<dt::Tensor<float>, dt::Tensor<float>> line_points() {
  std::vector<float> x, y;
  for (int i = 0; i < 8; ++i) {
    x.push_back(static_cast<float>(-1.0 + 2.0 * i / 7.0));
    y.push_back(2 * x.back() + 1);
  }
  return {dt::constant<float>(x, {8, 1}), dt::constant<float>(y, {8, 1})};
}
void check_all_near(const std::vector<double>& got, const std::vector<double>& want, double tolerance) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tolerance * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}
std::vector<double> flat_weights(const nn::Model& model) {
  std::vector<double> out;
  for (const auto& v : model.variables())
    for (const float f : v.to_vector()) out.push_back(f);
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(each_schedule_gives_keras_values_at_steps_0_to_25) {
  namespace s = nn::schedules;
  const std::vector<std::pair<const char*, nn::LearningRate>> schedules{
      {"exponential", s::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}},
      {"exponential_staircase",
       s::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true}},
      {"piecewise", s::PiecewiseConstantDecay{.boundaries = {5, 15}, .values = {0.1, 0.05, 0.01}}},
      {"cosine", s::CosineDecay{.initial_learning_rate = 0.1, .decay_steps = 20, .alpha = 0.1}},
      {"cosine_warmup",
       s::CosineDecay{.initial_learning_rate = 0.0, .decay_steps = 15, .warmup_target = 0.2, .warmup_steps = 5}},
      {"inverse_time", s::InverseTimeDecay{.initial_learning_rate = 0.1, .decay_steps = 5, .decay_rate = 0.5}},
      {"inverse_time_staircase",
       s::InverseTimeDecay{.initial_learning_rate = 0.1, .decay_steps = 5, .decay_rate = 0.5, .staircase = true}},
      {"polynomial",
       s::PolynomialDecay{.initial_learning_rate = 0.1, .decay_steps = 10, .end_learning_rate = 0.01, .power = 2.0}},
      {"polynomial_cycle",
       s::PolynomialDecay{
           .initial_learning_rate = 0.1, .decay_steps = 10, .end_learning_rate = 0.01, .power = 2.0, .cycle = true}},
  };
  const std::vector<std::pair<std::string, std::vector<double>>> keras{
      {"exponential",
       {0.10000000149011612, 0.09330330044031143,  0.08705505728721619,  0.08122523874044418,  0.07578583061695099,
        0.0707106813788414,  0.06597539037466049,  0.06155722215771675,  0.057434916496276855, 0.05358867719769478,
        0.05000000074505806, 0.046651650220155716, 0.043527524918317795, 0.04061261937022209,  0.037892915308475494,
        0.0353553406894207,  0.032987695187330246, 0.030778611078858376, 0.028717461973428726, 0.02679433859884739,
        0.02500000037252903, 0.023325826972723007, 0.021763762459158897, 0.020306309685111046, 0.018946455791592598,
        0.01767767034471035}},
      {"exponential_staircase",
       {0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
        0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
        0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806,
        0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806,
        0.02500000037252903, 0.02500000037252903, 0.02500000037252903, 0.02500000037252903, 0.02500000037252903,
        0.02500000037252903}},
      {"piecewise",
       {0.10000000149011612,  0.10000000149011612,  0.10000000149011612,  0.10000000149011612,  0.10000000149011612,
        0.10000000149011612,  0.05000000074505806,  0.05000000074505806,  0.05000000074505806,  0.05000000074505806,
        0.05000000074505806,  0.05000000074505806,  0.05000000074505806,  0.05000000074505806,  0.05000000074505806,
        0.05000000074505806,  0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582,
        0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582,
        0.009999999776482582}},
      {"cosine",
       {0.10000000149011612,  0.09944597631692886,  0.09779754281044006,  0.09509529173374176,  0.09140576422214508,
        0.08681981265544891,  0.08145033568143845,  0.07542957365512848,  0.06890576332807541,  0.06203955411911011,
        0.05499999597668648,  0.047960445284843445, 0.04109422490000725,  0.03457043319940567,  0.028549665585160255,
        0.023180196061730385, 0.018594233319163322, 0.014904703013598919, 0.012202458456158638, 0.010554024018347263,
        0.010000000707805157, 0.010000000707805157, 0.010000000707805157, 0.010000000707805157, 0.010000000707805157,
        0.010000000707805157}},
      {"cosine_warmup",
       {0.0,
        0.04000000283122063,
        0.08000000566244125,
        0.12000000476837158,
        0.1600000113248825,
        0.20000000298023224,
        0.19781476259231567,
        0.19135454297065735,
        0.1809016913175583,
        0.16691306233406067,
        0.15000000596046448,
        0.13090169429779053,
        0.11045284569263458,
        0.08954714238643646,
        0.06909828633069992,
        0.04999999329447746,
        0.03308693319559097,
        0.019098294898867607,
        0.008645451627671719,
        0.0021852373611181974,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0}},
      {"inverse_time",
       {0.10000000149011612,
        0.09090909361839294,
        0.0833333283662796,
        0.07692307978868484,
        0.0714285746216774,
        0.06666667014360428,
        0.0625,
        0.05882352963089943,
        0.055555559694767,
        0.05263157933950424,
        0.05000000074505806,
        0.0476190522313118,
        0.04545454680919647,
        0.043478261679410934,
        0.0416666641831398,
        0.03999999910593033,
        0.03846153989434242,
        0.03703703731298447,
        0.0357142873108387,
        0.03448275849223137,
        0.03333333507180214,
        0.03225806728005409,
        0.03125,
        0.03030303120613098,
        0.029411764815449715,
        0.02857142873108387}},
      {"inverse_time_staircase",
       {0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
        0.06666667014360428, 0.06666667014360428, 0.06666667014360428, 0.06666667014360428, 0.06666667014360428,
        0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806,
        0.03999999910593033, 0.03999999910593033, 0.03999999910593033, 0.03999999910593033, 0.03999999910593033,
        0.03333333507180214, 0.03333333507180214, 0.03333333507180214, 0.03333333507180214, 0.03333333507180214,
        0.02857142873108387}},
      {"polynomial",
       {0.10000000149011612,  0.08289999514818192,  0.06760000437498093,  0.054099999368190765, 0.04240000247955322,
        0.032499998807907104, 0.024399999529123306, 0.01810000091791153,  0.013599999248981476, 0.010900000110268593,
        0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582,
        0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582,
        0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582, 0.009999999776482582,
        0.009999999776482582}},
      {"polynomial_cycle", {0.10000000149011612,  0.08289999514818192,  0.06760000437498093,  0.054099999368190765,
                            0.04240000247955322,  0.032499998807907104, 0.024399999529123306, 0.01810000091791153,
                            0.013599999248981476, 0.010900000110268593, 0.009999999776482582, 0.028224999085068703,
                            0.024399999529123306, 0.021025002002716064, 0.01810000091791153,  0.015625,
                            0.013599999248981476, 0.012024999596178532, 0.010900000110268593, 0.010224999859929085,
                            0.009999999776482582, 0.01810000091791153,  0.01640000008046627,  0.014900000765919685,
                            0.013599999248981476, 0.012500000186264515}},
  };
  BOOST_REQUIRE(keras.size() == schedules.size());
  for (std::size_t k = 0; k < keras.size(); ++k) {
    BOOST_TEST_CONTEXT(keras[k].first) {
      BOOST_TEST(schedules[k].first == keras[k].first);
      BOOST_TEST(schedules[k].second.is_schedule());
      // Keras computes in float32 (TensorFlow's pow and cos), this in double rounded once: equal to 1e-7.
      for (std::int64_t step = 0; step <= 25; ++step)
        BOOST_TEST(std::abs(schedules[k].second.at(step) - keras[k].second[static_cast<std::size_t>(step)]) <= 1e-7,
                   "step " << step << ": " << schedules[k].second.at(step) << " vs "
                           << keras[k].second[static_cast<std::size_t>(step)]);
    }
  }
  // Any function of the step is a schedule too (Keras's LearningRateSchedule subclass).
  const nn::LearningRate halving = [](std::int64_t step) { return 1.0 / static_cast<double>(1 << step); };
  BOOST_TEST(halving.at(3) == 0.125);
}

BOOST_AUTO_TEST_CASE(schedules_refuse_what_keras_refuses) {
  namespace s = nn::schedules;
  const auto make = [](auto schedule) { return nn::LearningRate(schedule); };
  DEVTENSOR_CHECK_THROW_WITH(
      make(s::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}),
      dt::InvalidArgumentError, "Argument `decay_steps` must be > 0. Received: decay_steps=0");
  DEVTENSOR_CHECK_THROW_WITH(make(s::CosineDecay{.initial_learning_rate = 0.1, .decay_steps = 0}),
                             dt::InvalidArgumentError, "Argument `decay_steps` must be > 0. Received: decay_steps=0");
  DEVTENSOR_CHECK_THROW_WITH(make(s::PolynomialDecay{.initial_learning_rate = 0.1, .decay_steps = -1}),
                             dt::InvalidArgumentError, "Argument `decay_steps` must be > 0. Received: decay_steps=-1");
  DEVTENSOR_CHECK_THROW_WITH(
      make(s::InverseTimeDecay{.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}),
      dt::InvalidArgumentError, "Argument `decay_steps` must be > 0. Received: decay_steps=0");
  DEVTENSOR_CHECK_THROW_WITH(make(s::PiecewiseConstantDecay{.boundaries = {5}, .values = {0.1}}),
                             dt::InvalidArgumentError,
                             "The length of boundaries should be 1 less than the length of values. Received: "
                             "boundaries=[5] of length 1, and values=[0.1] of length 1.");
  DEVTENSOR_CHECK_THROW_WITH(make(s::PiecewiseConstantDecay{.boundaries = {5, 5}, .values = {0.1, 0.2, 0.3}}),
                             dt::InvalidArgumentError, "boundaries must increase");
  // A schedule is not settable (Keras's TypeError); a number is, shared by every copy.
  const nn::optimizers::SGD scheduled{
      .learning_rate = s::ExponentialDecay{.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}};
  DEVTENSOR_CHECK_THROW_WITH(scheduled.learning_rate.set(0.2), dt::InvalidArgumentError,
                             "hence its learning rate is not settable");
  const nn::Optimizer erased = scheduled;
  BOOST_TEST(erased.learning_rate_is_schedule());
  DEVTENSOR_CHECK_THROW_WITH(erased.set_learning_rate(0.2), dt::InvalidArgumentError, "is not settable");
  const nn::optimizers::Adam adam{.learning_rate = 0.01};
  const nn::Optimizer adam_erased = adam;
  adam_erased.set_learning_rate(0.5);
  BOOST_TEST(adam.learning_rate.at(0) == 0.5);
  BOOST_TEST(adam_erased.learning_rate() == 0.5);
  DEVTENSOR_CHECK_THROW_WITH(adam_erased.set_learning_rate(-1), dt::InvalidArgumentError,
                             "non-negative number, got -1");
  DEVTENSOR_CHECK_THROW_WITH(adam_erased.set_learning_rate(std::nan("")), dt::InvalidArgumentError, "non-negative");
  BOOST_TEST(adam_erased.learning_rate() == 0.5);
  // An optimizer type whose learning rate is a plain number is read, never set from outside.
  const nn::Optimizer plain = PlainSgd{};
  BOOST_TEST(plain.learning_rate() == 0.3);
  BOOST_TEST(!plain.learning_rate_is_schedule());
  DEVTENSOR_CHECK_THROW_WITH(plain.set_learning_rate(0.1), dt::UnimplementedError, "PlainSgd keeps its learning rate");
}

BOOST_AUTO_TEST_CASE(fit_with_a_schedule_gives_keras_losses_traced_and_eager) {
  // Keras: ExponentialDecay(0.1, 2, 0.5) for SGD, CosineDecay(0, 4, warmup_target=0.1,
  // warmup_steps=2) for Adam, 3 epochs of 2 steps. The traced step replays with every step's rate
  // (a rate fixed at tracing would give other losses from the second step on).
  auto [x, y] = line_points();
  for (const bool eager : {false, true}) {
    BOOST_TEST_CONTEXT((eager ? "eager" : "traced")) {
      auto sgd =
          line_model(nn::optimizers::SGD{.learning_rate =
                                             nn::schedules::ExponentialDecay{
                                                 .initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5}},
                     {.run_eagerly = eager});
      auto history = sgd.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
      check_all_near(history.loss, {2.6940524578094482, 1.8356554508209229, 1.537296175956726}, 1e-6);
      check_all_near(flat_weights(sgd), {0.4276667833328247, 0.4096728563308716}, 1e-6);
      BOOST_TEST(sgd.optimizer().learning_rate() == 0.1 * std::pow(0.5, 3), boost::test_tools::tolerance(1e-7));
      auto adam =
          line_model(nn::optimizers::Adam{.learning_rate = nn::schedules::CosineDecay{.initial_learning_rate = 0.0,
                                                                                      .decay_steps = 4,
                                                                                      .warmup_target = 0.1,
                                                                                      .warmup_steps = 2}},
                     {.run_eagerly = eager});
      history = adam.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
      // Adam's step size in double here, in float32 in Keras (as the optimizers suite's 1e-5).
      check_all_near(history.loss, {2.7142856121063232, 2.3667867183685303, 2.030623435974121}, 1e-5);
      check_all_near(flat_weights(adam), {0.24674053490161896, 0.18059943616390228}, 1e-5);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rate_set_between_steps_reaches_the_traced_step) {
  // What ReduceLROnPlateau does: the traced step reads the shared rate when it runs.
  auto [x, y] = line_points();
  const auto run = [&](bool eager) {
    auto model = line_model(nn::optimizers::SGD{.learning_rate = 0.05}, {.run_eagerly = eager});
    (void)model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .shuffle = false});
    model.optimizer().set_learning_rate(0.5);
    (void)model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .shuffle = false});
    return flat_weights(model);
  };
  const auto traced = run(false);
  BOOST_TEST(traced == run(true), boost::test_tools::per_element());
  auto unchanged = line_model(nn::optimizers::SGD{.learning_rate = 0.05});
  (void)unchanged.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
  BOOST_TEST(std::abs(flat_weights(unchanged)[0] - traced[0]) > 0.1);
}

BOOST_AUTO_TEST_SUITE_END()
