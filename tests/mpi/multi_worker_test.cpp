// MultiWorkerMirroredStrategy across real processes. CTest runs this executable under
// mpiexec with 1, 2, 3 and 4 ranks; every rank runs every test case in the same order, so each
// collective has all its peers. Collectives here have a 60 s deadline: a bug fails, never hangs.
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_kernels.hpp"
#include "fake_gpu_platform.hpp"
#include "fit_equivalence.hpp"
#include "seed_custom_loop.hpp"
#include "seed_loop.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;
namespace nn = devtensor::nn;

namespace {

ds::CommunicationOptions with_deadline(std::int64_t bytes_per_pack = 0, double seconds = 60.0) {
  return ds::CommunicationOptions(bytes_per_pack, seconds, ds::CommunicationImplementation::RING);
}

/// The number of MPI ranks (1 when not launched by mpiexec).
int world_size() {
  const auto launch = ds::cluster_resolver::MpiLaunch::from_environment();
  return launch ? launch->size : 1;
}

/// No TF_CONFIG (the MPI launch defines the cluster) and TensorFlow's INFO lines shown.
struct NoTfConfig {
  dt::test::ScopedEnv tf_config{"TF_CONFIG", std::nullopt};
  NoTfConfig() { dt::logging::set_verbosity(dt::LogSeverity::info); }
  ~NoTfConfig() { dt::logging::set_verbosity(dt::LogSeverity::warning); }
};

template <class T>
std::vector<T> iota(std::size_t n, T start) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<T>(i));
  return out;
}

// NCCL between workers without a GPU: the fake platform's "real" GPUs are host memory, so a
// stand-in for the cross-process NCCL kernel sums them with MPI (on MPI_COMM_WORLD, apart from the
// strategy's own communicator). It records what devtensor hands NCCL: the clique, the local
// ordinals and streams, the element count per pack. The real kernel (backend/cuda/nccl.hpp) needs
// GPUs: tests/mpi's test_multi_worker_gpu runs it on a GPU machine.
struct CrossProcessCall {
  dt::GpuCliqueAcrossProcesses clique;
  std::string what, dtype;
  std::size_t count = 0;
  std::vector<int> ordinals;
};
std::vector<CrossProcessCall> cross_process_calls;
int unique_ids_made = 0;

template <class T>
void sum_locally(std::size_t count, std::span<const void* const> send, std::span<void* const> recv) {
  std::vector<T> total(count, T{0});
  for (const void* part : send)
    for (std::size_t i = 0; i < count; ++i) total[i] += static_cast<const T*>(part)[i];
  for (void* out : recv) std::memcpy(out, total.data(), count * sizeof(T));
}

template <class T>
void sum_across_workers(std::size_t count, std::span<const void* const> send, std::span<void* const> recv,
                        MPI_Datatype type) {
  std::vector<T> total(count, T{0});
  for (const void* part : send)
    for (std::size_t i = 0; i < count; ++i) total[i] += static_cast<const T*>(part)[i];
  MPI_Allreduce(MPI_IN_PLACE, total.data(), static_cast<int>(count), type, MPI_SUM, MPI_COMM_WORLD);
  for (void* out : recv) std::memcpy(out, total.data(), count * sizeof(T));
}

const dt::GpuAllReduceKernel cross_process_stand_in{
    "stand-in",
    [](std::string_view dtype, std::size_t count, std::span<const void* const> send, std::span<void* const> recv,
       std::span<const int>, std::span<void* const>) {  // a single worker's replicas
      if (dtype == "DT_FLOAT")
        sum_locally<float>(count, send, recv);
      else
        sum_locally<double>(count, send, recv);
    },
    [](std::span<std::byte, dt::GpuCliqueAcrossProcesses::unique_id_bytes> out) {
      ++unique_ids_made;
      const auto pid = static_cast<unsigned>(getpid());  // differs per worker: only the chief's may spread
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>((pid >> (8 * (i % 4))) + i);
    },
    [](const dt::GpuCliqueAcrossProcesses& clique, std::string_view what, std::string_view dtype, std::size_t count,
       std::span<const void* const> send, std::span<void* const> recv, std::span<const int> ordinals,
       std::span<void* const>) {
      cross_process_calls.push_back(
          {clique, std::string(what), std::string(dtype), count, {ordinals.begin(), ordinals.end()}});
      if (dtype == "DT_FLOAT")
        sum_across_workers<float>(count, send, recv, MPI_FLOAT);
      else if (dtype == "DT_DOUBLE")
        sum_across_workers<double>(count, send, recv, MPI_DOUBLE);
      else
        throw dt::InvalidArgumentError("stand-in: " + std::string(dtype));
    }};
// The same without the cross-process entry points: a program whose NCCL kernel stays in-process.
const dt::GpuAllReduceKernel in_process_only{"in-process only", cross_process_stand_in.all_reduce_sum};

/// `gpus` fake "real" GPUs per worker, on PCI bus `bus` (".<ordinal>" appended), with `kernel` as
/// the NCCL kernel; everything restored afterwards.
struct FakeGpusPerWorker {
  const dt::GpuAllReduceKernel* previous = dt::gpu_all_reduce_kernel();
  std::optional<dt::test::FakeGpuPlatform> platform;
  FakeGpusPerWorker(int gpus, const std::string& bus, const dt::GpuAllReduceKernel* kernel) {
    cross_process_calls.clear();
    unique_ids_made = 0;
    platform.emplace(gpus);
    dt::test::fake_gpu_recorder().pci_bus = bus;
    dt::logging::set_verbosity(dt::LogSeverity::info);  // the platform's context reset restored the default
    dt::register_gpu_all_reduce_kernel(kernel);
  }
  FakeGpusPerWorker(const FakeGpusPerWorker&) = delete;
  FakeGpusPerWorker& operator=(const FakeGpusPerWorker&) = delete;
  ~FakeGpusPerWorker() {
    dt::register_gpu_all_reduce_kernel(previous);
    dt::test::fake_gpu_recorder().pci_bus = "0000:00:00";
    platform.reset();
    dt::logging::set_verbosity(dt::LogSeverity::info);
  }
};

/// A PCI bus of this worker's own ("0000:0<rank>:00"): its GPUs differ from every other worker's.
std::string own_bus() {
  const auto launch = ds::cluster_resolver::MpiLaunch::from_environment();
  return "0000:" + std::to_string(10 + (launch ? launch->rank : 0)) + ":00";
}

ds::CommunicationOptions communication(ds::CommunicationImplementation implementation,
                                       std::int64_t bytes_per_pack = 0) {
  return ds::CommunicationOptions(bytes_per_pack, 60.0, implementation);
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(multi_worker, NoTfConfig)

BOOST_AUTO_TEST_CASE(the_mpi_launch_is_the_cluster) {
  dt::test::LogCapture log;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  BOOST_TEST(strategy.num_workers() == n);
  BOOST_TEST(strategy.num_replicas_in_sync() == n);  // one CPU per worker
  BOOST_TEST(strategy.is_chief() == (strategy.worker_index() == 0));
  if (n == 1) {
    BOOST_TEST(log.count("Single-worker MultiWorkerMirroredStrategy with local_devices = "
                         "('/device:CPU:0',), communication = CommunicationImplementation.RING") == 1u);
    BOOST_TEST(strategy.mpi_group() == nullptr);
    return;
  }
  const std::string task = "/job:worker/replica:0/task:" + std::to_string(strategy.worker_index());
  BOOST_TEST(strategy.worker_devices() == std::vector<std::string>{task + "/device:CPU:0"},
             boost::test_tools::per_element());
  BOOST_TEST(log.count("Enabled multi-worker collective ops with available devices: ['" + task + "/device:CPU:0']") ==
             1u);
  BOOST_TEST(log.count("Cluster is ready.") == 1u);
  BOOST_TEST(log.count("MultiWorkerMirroredStrategy with cluster_spec = {'worker': ['mpi:0', 'mpi:1'") == 1u);
  BOOST_TEST(log.count(", task_type = 'worker', task_id = " + std::to_string(strategy.worker_index()) +
                       ", num_workers = " + std::to_string(n) + ", local_devices = ('" + task +
                       "/device:CPU:0',), communication = CommunicationImplementation.RING") == 1u);
}

BOOST_AUTO_TEST_CASE(collectives_of_every_dtype_and_reduction) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  const int rank = strategy.worker_index();
  // Replica ids are global; run + reduce add every worker's replicas.
  const auto ids = strategy.run(
      [] { return dt::scalar<float>(static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
  BOOST_TEST(ids.values.at(0).item() == static_cast<float>(rank));
  BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, ids, std::nullopt).item() == static_cast<float>(n * (n - 1) / 2));
  BOOST_TEST(strategy.reduce(ds::ReduceOp::MEAN, ids, std::nullopt).item() == static_cast<float>(n - 1) / 2.0f,
             boost::test_tools::tolerance(1e-6f));
  // Every dtype, uneven sizes, empty tensors: straight through the worker group.
  auto* group = strategy.mpi_group();
  if (!group) return;
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000003}}) {
    auto f = iota<float>(size, static_cast<float>(rank));
    group->all_reduce(dt::DType::DT_FLOAT, f.data(), f.size(), dt::distribute::CollectiveReduction::sum, "float sum");
    auto d = iota<double>(size, rank * 0.5);
    group->all_reduce(dt::DType::DT_DOUBLE, d.data(), d.size(), dt::distribute::CollectiveReduction::max, "double max");
    auto i32 = iota<std::int32_t>(size, -rank);
    group->all_reduce(dt::DType::DT_INT32, i32.data(), i32.size(), dt::distribute::CollectiveReduction::min,
                      "int32 min");
    auto i64 = iota<std::int64_t>(size, std::int64_t{1} << 40);
    group->all_reduce(dt::DType::DT_INT64, i64.data(), i64.size(), dt::distribute::CollectiveReduction::sum,
                      "int64 sum");
    for (std::size_t i = 0; i < size; i += 1 + size / 17) {
      BOOST_TEST(f[i] == static_cast<float>(n) * static_cast<float>(i) + static_cast<float>(n * (n - 1) / 2),
                 boost::test_tools::tolerance(1e-5f));
      BOOST_TEST(d[i] == static_cast<double>(i) + (n - 1) * 0.5);
      BOOST_TEST(i32[i] == static_cast<std::int32_t>(i) - (n - 1));
      BOOST_TEST(i64[i] == n * ((std::int64_t{1} << 40) + static_cast<std::int64_t>(i)));
    }
  }
  std::vector<char> flags(3, 0);
  DEVTENSOR_CHECK_THROW_WITH(
      group->all_reduce(dt::DType::DT_BOOL, flags.data(), 3, dt::distribute::CollectiveReduction::sum, "bools"),
      dt::InvalidArgumentError, "not supported for bool tensors");
  // all_gather: every worker's bytes in rank order, each of its own length (worker 1's empty; NUL
  // and 0xff bytes survive).
  const std::string mine =
      rank == 1 ? std::string() : std::string("worker\0\xff", 8) + std::string(static_cast<std::size_t>(rank), 'x');
  const auto gathered = group->all_gather(mine, "names");
  BOOST_TEST_REQUIRE(gathered.size() == static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k)
    BOOST_TEST(
        gathered[static_cast<std::size_t>(k)] ==
        (k == 1 ? std::string() : std::string("worker\0\xff", 8) + std::string(static_cast<std::size_t>(k), 'x')));
}

BOOST_AUTO_TEST_CASE(many_packs_and_batch_reduce) {
  // 40-byte packs: a list of five tensors becomes several packs, reversed and restored.
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline(40));
  const int n = world_size();
  const float r = static_cast<float>(strategy.worker_index());
  std::vector<ds::PerReplica<dt::Tensor<float>>> values;
  for (int k = 0; k < 5; ++k)
    values.push_back({{dt::fill<float>({static_cast<std::int64_t>(3 + 4 * k)}, r + static_cast<float>(k))}});
  values.push_back({{dt::constant<float>(std::vector<float>{}, {0})}});  // an empty tensor among them
  dt::test::LogCapture log;
  const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, values);
  const auto means = strategy.batch_reduce_to(ds::ReduceOp::MEAN, values);
  BOOST_TEST_REQUIRE(sums.size() == values.size());
  const float rank_sum = static_cast<float>(n * (n - 1) / 2);
  for (int k = 0; k < 5; ++k) {
    BOOST_TEST(sums[static_cast<std::size_t>(k)].primary().shape().num_elements() == 3 + 4 * k);
    for (float v : sums[static_cast<std::size_t>(k)].primary().to_vector())
      BOOST_TEST(v == rank_sum + static_cast<float>(n * k));
    for (float v : means[static_cast<std::size_t>(k)].primary().to_vector())
      BOOST_TEST(v == (rank_sum + static_cast<float>(n * k)) / static_cast<float>(n),
                 boost::test_tools::tolerance(1e-6f));
  }
  BOOST_TEST(sums[5].primary().num_elements() == 0);
  if (n > 1)
    BOOST_TEST(log.count("Collective all_reduce tensors: 6 all_reduces, num_devices = 1, group_size = " +
                         std::to_string(n)) >= 1u);
}

BOOST_AUTO_TEST_CASE(initial_values_come_from_the_chief) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const float r = static_cast<float>(strategy.worker_index());
  std::optional<dt::Variable<float>> v;
  {
    auto guard = strategy.scope();
    v.emplace(dt::constant<float>({r, r + 1, r + 2}), dt::VariableOptions{.name = "w"});
  }
  BOOST_TEST(v->to_vector() == std::vector<float>({0, 1, 2}), boost::test_tools::per_element());
}

// A sync-on-read variable (a metric's state) read in cross-replica context aggregates every
// replica of every worker: the read is a collective, as strategy.reduce is in TensorFlow.
BOOST_AUTO_TEST_CASE(sync_on_read_variables_aggregate_across_workers) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  std::optional<dt::Variable<float>> total, mean;
  {
    auto guard = strategy.scope();
    total.emplace(dt::constant<float>({0, 0}),
                  dt::VariableOptions{.name = "total",
                                      .synchronization = dt::VariableSynchronization::ON_READ,
                                      .aggregation = dt::VariableAggregation::SUM});
    mean.emplace(dt::constant<float>({0, 0}),
                 dt::VariableOptions{.name = "mean",
                                     .synchronization = dt::VariableSynchronization::ON_READ,
                                     .aggregation = dt::VariableAggregation::MEAN});
  }
  strategy.run([&] {
    const auto id = static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group);
    total->assign(dt::constant<float>({id + 1, 2 * (id + 1)}));
    mean->assign(dt::constant<float>({id, 1}));
    return 0;
  });
  const float ids = static_cast<float>(n * (n - 1) / 2);
  BOOST_TEST(total->to_vector() == std::vector<float>({ids + static_cast<float>(n), 2 * (ids + static_cast<float>(n))}),
             boost::test_tools::per_element());
  const auto m = mean->to_vector();
  BOOST_TEST(m[0] == ids / static_cast<float>(n), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(m[1] == 1.0f, boost::test_tools::tolerance(1e-6f));
  // A cross-replica assignment of a SUM variable leaves each replica its share: reading gives it back.
  total->assign(dt::constant<float>({10, 20}));
  BOOST_TEST(total->to_vector() == std::vector<float>({10, 20}), boost::test_tools::per_element());
  BOOST_TEST(total->component(0).to_vector()[0] == 10.0f / static_cast<float>(n), boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(reduce_over_an_axis_weighs_uneven_batches) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  const int rank = strategy.worker_index();
  // Worker k holds k + 1 rows of value k: the mean over every row is Σk(k+1) / Σ(k+1).
  const auto rows = strategy.run([&] {
    return dt::fill<float>({static_cast<std::int64_t>(rank + 1), 2}, static_cast<float>(rank));
  });
  const auto mean = strategy.reduce(ds::ReduceOp::MEAN, rows, 0);
  double num = 0, den = 0;
  for (int k = 0; k < n; ++k) num += k * (k + 1.0), den += k + 1.0;
  for (float v : mean.to_vector()) BOOST_TEST(v == static_cast<float>(num / den), boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(fit_matches_single_process_training) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  // Global batches of 8, 8 and 6 rows, split unevenly across the workers; the model written with
  // the functional API, as the seeds write theirs.
  (void)dt::test::check_fit_matches_one_process(
      strategy, {.rows = 22,
                 .activation = nn::Activation::tanh,
                 .optimizer = [] { return nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.5}; },
                 .functional = true});
}

BOOST_AUTO_TEST_CASE(custom_loop_with_a_distributed_dataset) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  // 10 elements in global batches of 4, 4, 2: every element is seen once, by one worker, in order.
  auto data = dt::data::Dataset<float>::from_tensor_slices(dt::constant<float>(iota<float>(10, 1.0f), {10})).batch(4);
  double seen = 0;
  std::int64_t count = 0;
  for (const auto& batch : strategy.experimental_distribute_dataset(data)) {
    const auto per_replica =
        strategy.run([](const std::tuple<dt::Tensor<float>>& b) { return dt::reduce_sum(std::get<0>(b)); }, batch);
    const auto sizes = strategy.run(
        [](const std::tuple<dt::Tensor<float>>& b) {
          return dt::scalar<float>(static_cast<float>(std::get<0>(b).num_elements()));
        },
        batch);
    seen += strategy.reduce(ds::ReduceOp::SUM, per_replica, std::nullopt).item();
    count += static_cast<std::int64_t>(strategy.reduce(ds::ReduceOp::SUM, sizes, std::nullopt).item());
  }
  BOOST_TEST(seen == 55.0);
  BOOST_TEST(count == 10);
  (void)n;
}

// TensorFlow's custom training loop: apply_gradients inside strategy.run sums every replica's
// gradient across the workers, then takes one step on every worker.
BOOST_AUTO_TEST_CASE(apply_gradients_inside_run_sums_across_workers) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const int n = world_size();
  std::optional<dt::Variable<float>> w;
  {
    auto guard = strategy.scope();
    w.emplace(dt::constant<float>({1, 2, 3}), dt::VariableOptions{.name = "w"});
  }
  const nn::optimizers::SGD sgd{.learning_rate = 0.5};
  strategy.run([&] {
    const auto id = static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group);
    sgd.apply_gradients({dt::fill<float>({3}, id + 1)}, {*w});
    return 0;
  });
  const float total = static_cast<float>(n * (n + 1) / 2);
  BOOST_TEST(sgd.iterations() == 1);
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(w->to_vector()[i] == static_cast<float>(i + 1) - 0.5f * total, boost::test_tools::tolerance(1e-6f));
}

// Seed 001's distributed_train_step traced once under MultiWorkerMirroredStrategy: the gradients'
// and losses' all-reduces across the workers run as nodes of every worker's graph, and the traced
// loop's losses and weights equal the eager loop's.
BOOST_AUTO_TEST_CASE(a_traced_distributed_step_equals_the_eager_one) {
  const auto train = [](bool traced) {
    ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
    auto result =
        dt::test::run_seed_loop(strategy, traced, {.examples = 48, .batch = 12, .epochs = 3, .shuffle = false});
    if (traced) BOOST_TEST(result.traces == 1);
    result.losses.insert(result.losses.end(), result.weights.begin(), result.weights.end());
    return result.losses;
  };
  const auto eager = train(false);
  const auto traced = train(true);
  BOOST_TEST_REQUIRE(traced.size() == eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i) BOOST_TEST(traced[i] == eager[i], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(eager[11] < eager[0]);  // it trains (12 losses, then the weights)
}

// Seed 001's custom loop (apply_gradients inside strategy.run) across the processes, traced and
// eager, gives TensorFlow 2.21's numbers to 1e-6 (tests/reference/seed_custom_loop.py: every
// replica sees the same examples, so one worker's figures are two replicas' figures); and the same
// model through fit, traced.
BOOST_AUTO_TEST_CASE(the_seeds_custom_loop_and_fit_give_tensorflows_numbers) {
  using dt::test::SeedOptimizer;
  const int replicas = std::max(2, world_size());
  for (const auto which : {SeedOptimizer::sgd, SeedOptimizer::adam}) {
    for (const bool traced : {true, false}) {
      BOOST_TEST_CONTEXT((which == SeedOptimizer::sgd ? "SGD" : "Adam") << (traced ? ", traced" : ", eager")) {
        ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
        BOOST_TEST(dt::test::matches(dt::test::run_seed_custom_loop(strategy, which, traced),
                                     dt::test::tensorflow_custom_loop(which, replicas)));
      }
    }
    BOOST_TEST_CONTEXT((which == SeedOptimizer::sgd ? "SGD" : "Adam") << ", fit") {
      ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
      BOOST_TEST(dt::test::matches(dt::test::run_seed_fit(strategy, which), dt::test::tensorflow_fit(which)));
    }
  }
}

// Dynamic loss scaling across processes: under mixed_float16, LossScaleOptimizer(SGD(0.01),
// dynamic_growth_steps=2) and targets 100x, steps overflow. Every worker decides on the all-reduced
// scaled gradients, so all skip the same steps and hold the same scale (checked through MPI); with
// two workers, one replica each, the run is Keras's MirroredStrategy over two replicas
// (tests/reference/mixed_precision_conv.py `mirrored`), traced and eager.
BOOST_AUTO_TEST_CASE(loss_scaling_skips_the_same_steps_on_every_worker) {
  const auto pattern = [](int n, int multiplier, int modulus, float shift, float scale) {
    std::vector<float> v;
    for (int i = 0; i < n; ++i) v.push_back((static_cast<float>(i * multiplier % modulus) - shift) / scale);
    return v;
  };
  const auto x = dt::constant<float>(pattern(576, 37, 23, 11, 7), {8, 6, 6, 2});
  std::vector<float> targets;
  for (const float e : pattern(8, 3, 5, 2, 4)) targets.insert(targets.end(), {e * 100, (1 - e) * 100});
  const auto y = dt::constant<float>(targets, {8, 2});
  for (const bool eager : {false, true}) {
    BOOST_TEST_CONTEXT((eager ? "eager" : "traced")) {
      nn::clear_session();
      ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
      std::optional<nn::Sequential> m;
      {
        auto scope = strategy.scope();
        nn::mixed_precision::set_global_policy("mixed_float16");
        m.emplace(std::vector<nn::Layer>{
            nn::Conv2D(3, {3, 3}, {.padding = "same", .activation = nn::Activation::relu, .input_shape = {{6, 6, 2}}}),
            nn::AveragePooling2D({2, 2}), nn::MaxPooling2D({1, 1}), nn::Flatten(),
            nn::Dense(2, {.activation = nn::Activation::softmax, .dtype = "float32"})});
        nn::mixed_precision::set_global_policy("float32");
        m->set_weights({dt::constant<float>(pattern(54, 13, 17, 8, 18), {3, 3, 2, 3}),
                        dt::constant<float>({0.05f, -0.1f, 0.02f}),
                        dt::constant<float>(pattern(54, 7, 11, 5, 20), {27, 2}), dt::constant<float>({0.1f, -0.1f})});
        m->compile(nn::losses::MeanSquaredError{},
                   nn::optimizers::LossScaleOptimizer{.inner_optimizer = nn::optimizers::SGD{.learning_rate = 0.01},
                                                      .dynamic_growth_steps = 2},
                   {.run_eagerly = eager});
      }
      std::vector<double> losses, scales, iterations;
      struct Record {
        const nn::Model* model;
        std::vector<double>* losses;
        std::vector<double>* scales;
        std::vector<double>* iterations;
        void on_train_batch_end(std::int64_t, const nn::Logs& logs) {
          for (const auto& [key, value] : logs)
            if (key == "loss") losses->push_back(value);
          scales->push_back(model->optimizer().target<nn::optimizers::LossScaleOptimizer>()->dynamic_scale());
          iterations->push_back(static_cast<double>(model->optimizer().iterations()));
        }
      };
      m->fit(x, y,
             {.epochs = 5,
              .batch_size = 4,
              .verbose = 0,
              .shuffle = false,
              .callbacks = {Record{&*m, &losses, &scales, &iterations}}});
      BOOST_TEST_REQUIRE(scales.size() == 10u);
      for (auto* sequence : {&scales, &iterations}) {  // the same on every worker
        if (world_size() == 1) break;                  // (one worker: MPI is not initialised)
        std::vector<double> low(*sequence), high(*sequence);
        MPI_Allreduce(MPI_IN_PLACE, low.data(), 10, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, high.data(), 10, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        BOOST_TEST(low == high, boost::test_tools::per_element());
      }
      BOOST_TEST(iterations.back() < 10.0);  // steps were skipped
      if (world_size() == 2) {
        const std::vector<double> keras_scales{16384, 8192, 8192, 16384, 16384, 32768, 32768, 65536, 65536, 131072};
        const std::vector<double> keras_iterations{0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
        const std::vector<double> keras_losses{6506.27148, 6820.98047, 6506.27148, 6791.44727, 6463.20312,
                                               6769.68115, 6463.13672, 6769.55127, 6463.10107, 6769.479};
        BOOST_TEST(scales == keras_scales, boost::test_tools::per_element());
        BOOST_TEST(iterations == keras_iterations, boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(losses.size() == 10u);
        for (std::size_t b = 0; b < 10; ++b)
          BOOST_TEST(std::abs(losses[b] - keras_losses[b]) <= 2e-6 * keras_losses[b],
                     "batch " << b << ": " << losses[b] << " vs Keras's " << keras_losses[b]);
      }
    }
  }
}

// Keras's callbacks across processes (nn/callbacks.hpp): every worker sees the same all-reduced
// logs, so all stop at the same epoch and change the rate alike; only the chief writes files.
BOOST_AUTO_TEST_CASE(callbacks_agree_across_workers_and_only_the_chief_writes) {
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  const auto launch = ds::cluster_resolver::MpiLaunch::from_environment();
  const int rank = launch ? launch->rank : 0;
  std::unique_ptr<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    nn::clear_session();
    model = std::make_unique<nn::Sequential>(
        std::vector<nn::Layer>{nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
    model->compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.05});
  }
  std::vector<float> x, y;
  for (int i = 0; i < 8; ++i) {
    x.push_back(static_cast<float>(-1.0 + 2.0 * i / 7.0));
    y.push_back(2 * x.back() + 1);
  }
  const auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(x, {8, 1}),
                                                                        dt::constant<float>(y, {8, 1}))
                        .batch(4);
  // Each worker names its own file: only the chief's may appear. (Keras 3's figures alone: losses
  // 2.704, 2.079, 1.620 ...; with min_delta 0.5 and patience 1 the third epoch stops it.)
  const std::string csv =
      "/tmp/devtensor_mw_callbacks_" + std::to_string(getppid()) + "_" + std::to_string(rank) + ".csv";
  const std::string logs = "/tmp/devtensor_mw_tensorboard_" + std::to_string(getppid()) + "_" + std::to_string(rank);
  nn::callbacks::EarlyStopping early{.monitor = "loss", .min_delta = 0.5, .patience = 1};
  const auto history = model->fit(
      data,
      {.epochs = 10,
       .verbose = 0,
       .callbacks = {
           early, nn::callbacks::ReduceLROnPlateau{.monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 0.5},
           nn::callbacks::CSVLogger{.filename = csv}, nn::callbacks::TensorBoard{.log_dir = logs}}});
  BOOST_TEST(model->is_chief() == (rank == 0));
  BOOST_TEST(history.loss.size() == 3u);
  BOOST_TEST(early.stopped_epoch() == 2);
  BOOST_TEST(history.loss[0] == 2.704125165939331, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(history.loss[1] == 2.078704833984375, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(history.metrics.at("learning_rate").back() == 0.05000000074505806);  // reduced after epoch 2's log
  BOOST_TEST(static_cast<float>(model->optimizer().learning_rate()) == 0.025f);
  // Every worker stopped after the same number of epochs (launched alone, MPI is not started).
  if (world_size() > 1) {
    int epochs[2] = {static_cast<int>(history.loss.size()), -static_cast<int>(history.loss.size())};
    MPI_Allreduce(MPI_IN_PLACE, epochs, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    BOOST_TEST(epochs[0] == -epochs[1]);
  }
  BOOST_TEST(std::filesystem::exists(csv) == (rank == 0));
  BOOST_TEST(std::filesystem::exists(logs + "/train") == (rank == 0));  // TensorBoard's files too
  if (rank == 0) {
    std::vector<double> epoch_loss;
    for (const auto& entry : std::filesystem::directory_iterator(logs + "/train"))
      for (const auto& event : dt::summary::read_events(entry.path().string()))
        for (const auto& value : event.values)
          if (value.tag == "epoch_loss") epoch_loss.push_back(value.values.at(0));
    BOOST_TEST_REQUIRE(epoch_loss.size() == 3u);
    BOOST_TEST(epoch_loss[0] == static_cast<double>(static_cast<float>(history.loss[0])));
  }
  std::error_code ignored;
  std::filesystem::remove(csv, ignored);
  std::filesystem::remove_all(logs, ignored);
}

BOOST_AUTO_TEST_CASE(tf_config_must_agree_with_the_launch) {
  const int n = world_size();
  std::string workers;
  for (int i = 0; i < n + 1; ++i) workers += (i ? ", " : "") + std::string("\"h") + std::to_string(i) + ":1\"";
  // One worker more than the launch has.
  dt::test::ScopedEnv more("TF_CONFIG",
                           R"({"cluster": {"worker": [)" + workers + R"(]}, "task": {"type": "worker", "index": 0}})");
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(), dt::FailedPreconditionError,
                             "`mpiexec -n " + std::to_string(n + 1) + " ./app`");
}

BOOST_AUTO_TEST_CASE(bad_clusters_are_typed_errors) {
  auto with = [](const std::string& json) {
    return ds::cluster_resolver::TFConfigClusterResolver({.tf_config = json});
  };
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(with(R"({"cluster": {"worker": ["a:1"]}})")),
                             dt::InvalidArgumentError,
                             "When `cluster_spec` is given, you must also specify `task_type` and `task_id`.");
  DEVTENSOR_CHECK_THROW_WITH(
      ds::MultiWorkerMirroredStrategy(with(R"({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}})")),
      dt::InvalidArgumentError, "No `worker`, `chief` or `evaluator` tasks can be found in `cluster_spec`");
  DEVTENSOR_CHECK_THROW_WITH(
      ds::MultiWorkerMirroredStrategy(
          with(R"({"cluster": {"worker": ["a:1"], "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})")),
      dt::InvalidArgumentError, "Unexpected `task_type` 'ps'");
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(with(
                                 R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})")),
                             dt::InvalidArgumentError, "There must be at most one 'chief' job.");
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(
                                 with(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}})")),
                             dt::InvalidArgumentError, "The `task_id` 3 exceeds the maximum id of worker.");
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(
                                 with(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})")),
                             dt::InvalidArgumentError, "Unrecognized task_type: boss");
  DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(with("{oops")), dt::InvalidArgumentError,
                             "TF_CONFIG is not valid JSON");
  DEVTENSOR_CHECK_THROW_WITH(ds::CommunicationOptions(-1), dt::InvalidArgumentError,
                             "bytes_per_pack must be non-negative");
}

// Two (simulated) GPUs per worker: num_replicas_in_sync = 2 × workers, global replica ids
// (id_in_cluster × 2 + local index), reductions over every replica of every worker, a pack of
// several GPU tensors through the host buffer. NCCL cannot serve simulated GPUs: asking for it
// says so once.
BOOST_AUTO_TEST_CASE(two_gpus_per_worker) {
  dt::testing::reset_context();
  dt::logging::set_verbosity(dt::LogSeverity::info);  // the reset restored the default
  dt::config::set_simulated_gpus(2);
  {
    dt::test::LogCapture log;
    ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                             ds::CommunicationOptions(0, 60.0, ds::CommunicationImplementation::NCCL));
    const int n = world_size();
    const int rank = strategy.worker_index();
    const int replicas = 2 * n;
    BOOST_TEST(strategy.num_replicas_in_sync() == replicas);
    const auto ids = strategy.run(
        [] { return dt::scalar<float>(static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
    BOOST_TEST_REQUIRE(ids.values.size() == 2u);
    BOOST_TEST(ids.values[0].item() == static_cast<float>(2 * rank));
    BOOST_TEST(ids.values[1].item() == static_cast<float>(2 * rank + 1));
    BOOST_TEST(ids.values[1].device_info().is_gpu);
    const auto id_sum = static_cast<float>(replicas * (replicas - 1) / 2);
    BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, ids, std::nullopt).item() == id_sum);
    // Two tensors per replica, one pack (bytes_per_pack 0): copied into one host buffer and out.
    const auto a = strategy.run(
        [] { return dt::fill<float>({5}, static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
    const auto b = strategy.run([] {
      return dt::fill<float>({3, 2}, 2.0f * static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group));
    });
    const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{a, b});
    BOOST_TEST_REQUIRE(sums.size() == 2u);
    for (const auto& component : sums[0].values)
      for (float v : component.to_vector()) BOOST_TEST(v == id_sum);
    BOOST_TEST(sums[1].values.at(1).shape() == dt::Shape({3, 2}));
    for (float v : sums[1].values.at(1).to_vector()) BOOST_TEST(v == 2.0f * id_sum);
    if (n > 1) {
      // Simulated GPUs are host memory: NCCL cannot serve them, so the workers' sums go through MPI.
      BOOST_TEST(log.count("CommunicationImplementation.NCCL between workers needs real GPUs on every worker") == 1u);
      const std::string task = "/job:worker/replica:0/task:" + std::to_string(rank);
      BOOST_TEST(log.count("local_devices = ('" + task + "/device:GPU:0', '" + task +
                           "/device:GPU:1'), communication = CommunicationImplementation.NCCL") == 1u);
    }
  }
  dt::testing::reset_context();
  dt::logging::set_verbosity(dt::LogSeverity::info);
}

// Every worker has two GPUs of its own: AUTO joins all of them in one NCCL clique (ranks
// 2 × worker, 2 × worker + 1 of 2 × workers), the id made by the chief alone and broadcast; each
// pack is one NCCL call over every replica of every worker, on the devices, and MEAN divides by
// every rank.
BOOST_AUTO_TEST_CASE(nccl_joins_every_workers_gpus_in_one_clique) {
  FakeGpusPerWorker gpus(2, own_bus(), &cross_process_stand_in);
  dt::test::LogCapture log;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::AUTO));
  const int n = world_size();
  const int rank = strategy.worker_index();
  if (n == 1) {  // a single worker has no processes to join
    BOOST_TEST(!strategy.nccl_between_workers());
    return;
  }
  BOOST_TEST_REQUIRE(strategy.nccl_between_workers());
  BOOST_TEST(unique_ids_made == (rank == 0 ? 1 : 0));
  const auto a = strategy.run(
      [] { return dt::fill<float>({5}, static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
  const auto b = strategy.run([] {
    return dt::fill<float>({3, 2}, 2.0f * static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group));
  });
  const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{a, b});
  const auto means = strategy.batch_reduce_to(ds::ReduceOp::MEAN, std::vector{a, b});
  const float id_sum = static_cast<float>(2 * n * (2 * n - 1) / 2);
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(sums[0].values.at(r).device() == "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(r));
    for (float v : sums[0].values.at(r).to_vector()) BOOST_TEST(v == id_sum);
    for (float v : sums[1].values.at(r).to_vector()) BOOST_TEST(v == 2 * id_sum);
    for (float v : means[1].values.at(r).to_vector())
      BOOST_TEST(v == 2 * id_sum / static_cast<float>(2 * n), boost::test_tools::tolerance(1e-6f));
  }
  BOOST_TEST_REQUIRE(cross_process_calls.size() == 2u);  // one pack per batch_reduce
  const auto& call = cross_process_calls[0];
  BOOST_TEST(call.clique.num_ranks == 2 * n);
  BOOST_TEST(call.clique.first_rank == 2 * rank);
  BOOST_TEST(call.clique.timeout_seconds.value_or(0.0) == 60.0);
  BOOST_TEST(call.ordinals == (std::vector<int>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(call.count == 11u);
  BOOST_TEST(call.dtype == "DT_FLOAT");
  BOOST_TEST(call.what == "batch_reduce");
  // Every worker holds the chief's id.
  std::string hex;
  for (std::byte c : call.clique.unique_id) {
    const auto v = std::to_integer<unsigned>(c);
    hex += "0123456789abcdef"[v >> 4];
    hex += "0123456789abcdef"[v & 15];
  }
  const auto ids = strategy.mpi_group()->all_gather(hex, "test: unique ids");
  for (const auto& other : ids) BOOST_TEST(other == ids[0]);
  BOOST_TEST(
      log.count("Collective all_reduce tensors: 2 all_reduces, num_devices = 2, group_size = " + std::to_string(2 * n) +
                ", implementation = CommunicationImplementation.NCCL, num_packs = 1") >= 1u);
}

// Keras fit with the gradients summed by NCCL across the workers' (fake) GPUs, the GPU bodies
// registered: the same weights as one process training on its CPU.
BOOST_AUTO_TEST_CASE(fit_with_nccl_between_workers_matches_single_process_training) {
  FakeGpusPerWorker gpus(1, own_bus(), &cross_process_stand_in);
  dt::test::FakeGpuKernels kernels;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::NCCL));
  const auto variables = dt::test::check_fit_matches_one_process(
      strategy, {.optimizer = [] { return nn::optimizers::Adam{.learning_rate = 0.01}; }});
  // 3 steps × 3 epochs, one pack each, for the traced fit and again for the eager one
  if (world_size() > 1) BOOST_TEST(cross_process_calls.size() == 18u);
  for (const auto& v : variables) BOOST_TEST(v.device() == "/job:localhost/replica:0/task:0/device:GPU:0");
}

// CompileOptions::cuda_graph across processes: the all-reduce talks to the other workers at every
// step (host code a CUDA graph cannot replay), so the step runs op by op after one WARNING per
// worker, with the same numbers. A job of one process is captured.
BOOST_AUTO_TEST_CASE(a_cuda_graph_fit_across_workers_runs_op_by_op_with_one_warning) {
  FakeGpusPerWorker gpus(1, own_bus(), &cross_process_stand_in);
  dt::test::FakeGpuKernels kernels;
  const dt::test::LogCapture log;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::NCCL));
  (void)dt::test::check_fit_matches_one_process(
      strategy,
      {.optimizer = [] { return nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.5}; }, .cuda_graph = true});
  if (world_size() > 1) {
    BOOST_TEST(log.count("is not replayed as a CUDA graph") == 1);
    BOOST_TEST(log.count("(BatchAllReduce) runs host code at every call, which a graph cannot record") == 1);
    BOOST_TEST(dt::test::fake_gpu_recorder().captures == 0);
  } else {  // a job of one process sums within it: the step is a graph
    BOOST_TEST(log.count("CUDA graph") == 0);
    BOOST_TEST(dt::test::fake_gpu_recorder().captures == 1);
  }
}

// NCCL allows one rank per GPU. Workers on one GPU (the fake GPUs of every process share a PCI
// bus id here): asking for NCCL is refused on every worker, saying how to launch; AUTO sums
// through host memory and MPI instead.
BOOST_AUTO_TEST_CASE(workers_sharing_a_gpu_are_refused_nccl) {
  FakeGpusPerWorker gpus(1, "0000:00:00", &cross_process_stand_in);
  const int n = world_size();
  if (n > 1)
    DEVTENSOR_CHECK_THROW_WITH(
        ds::MultiWorkerMirroredStrategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                        communication(ds::CommunicationImplementation::NCCL)),
        dt::InvalidArgumentError,
        "NCCL cannot all-reduce between these workers: workers 0 and 1 both use the GPU at PCI bus id "
        "0000:00:00.0 on host ");
  dt::test::LogCapture log;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::AUTO));
  BOOST_TEST(!strategy.nccl_between_workers());
  const auto ids = strategy.run(
      [] { return dt::fill<float>({4}, static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
  const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{ids});
  for (float v : sums[0].primary().to_vector()) BOOST_TEST(v == static_cast<float>(n * (n - 1) / 2));
  BOOST_TEST(cross_process_calls.empty());
  if (n > 1)
    BOOST_TEST(
        log.count("Not using NCCL between workers: workers 0 and 1 both use the GPU at PCI bus id 0000:00:00.0") == 1u);
}

// Two logical GPUs on one physical GPU per worker: the same rule within a worker.
BOOST_AUTO_TEST_CASE(two_logical_gpus_on_one_physical_gpu_are_refused_nccl) {
  FakeGpusPerWorker gpus(1, own_bus(), &cross_process_stand_in);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("GPU").at(0),
                                               {dt::config::LogicalDeviceConfiguration{.memory_limit_mb = 64},
                                                dt::config::LogicalDeviceConfiguration{.memory_limit_mb = 64}});
  if (world_size() > 1)
    DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                                               communication(ds::CommunicationImplementation::NCCL)),
                               dt::InvalidArgumentError,
                               "worker 0 has two replicas on the GPU at PCI bus id 0000:10:00.0");
}

// A program whose NCCL kernel cannot cross processes (or workers without real GPUs): NCCL asked
// for warns once and the workers' sums go through host memory and MPI.
BOOST_AUTO_TEST_CASE(without_the_cross_process_kernel_workers_sum_through_mpi) {
  FakeGpusPerWorker gpus(1, own_bus(), &in_process_only);
  dt::test::LogCapture log;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::NCCL));
  const int n = world_size();
  BOOST_TEST(!strategy.nccl_between_workers());
  const auto ids = strategy.run([] {
    return dt::fill<float>({3}, 1.0f + static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group));
  });
  const auto means = strategy.batch_reduce_to(ds::ReduceOp::MEAN, std::vector{ids});
  for (float v : means[0].primary().to_vector())
    BOOST_TEST(v == static_cast<float>(n + 1) / 2.0f, boost::test_tools::tolerance(1e-6f));
  if (n > 1)
    BOOST_TEST(log.count("needs real GPUs on every worker and the NCCL kernel in every worker's program") == 1u);
}

// Last: after a timeout the group is aborted. Worker 1 arrives late; the others must get
// DeadlineExceededError naming the operation and worker 1 after the timeout (within a second), and
// worker 1, when it arrives, at once (the chief abandoned the collective before it started: no
// worker is left inside an MPI collective). (tests/mpi/collective_faults.cpp: the process exits.)
BOOST_AUTO_TEST_CASE(a_missing_worker_times_out_instead_of_hanging) {
  const int n = world_size();
  if (n < 2) return;
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline(0, 1.0));
  const auto one = strategy.run([] { return dt::scalar<float>(1); });
  const bool late = strategy.worker_index() == 1;
  if (late) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::string expected =
      late ? "worker(s) 1 did not join it; this worker arrived after the others had given up on it"
           : "worker(s) 1 did not join it. Every worker must make";
  const auto began = std::chrono::steady_clock::now();
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.reduce(ds::ReduceOp::SUM, one, std::nullopt), dt::DeadlineExceededError,
                             expected);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  // The chief decides at its own deadline; a peer that arrived after it hears a little sooner.
  BOOST_TEST(waited >= (late ? 0.0 : strategy.worker_index() == 0 ? 1.0 : 0.9));
  BOOST_TEST(waited < (late ? 0.5 : 2.0));
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.reduce(ds::ReduceOp::SUM, one, std::nullopt), dt::FailedPreconditionError,
                             "was aborted after the all-reduce of strategy.reduce timed out");
}

// Run alone (disabled by default; CTest entry test_multi_worker.worker_exits): without a timeout,
// worker 1 exits with status 3 while the others wait in an all-reduce. Its exit must end the job
// through the launcher (MPI_Abort on the way out), not leave the others waiting for ever.
BOOST_AUTO_TEST_CASE(a_worker_that_exits_ends_the_job, *boost::unit_test::disabled()) {
  ds::MultiWorkerMirroredStrategy strategy(
      ds::cluster_resolver::TFConfigClusterResolver(),
      ds::CommunicationOptions(0, std::nullopt, ds::CommunicationImplementation::RING));
  BOOST_TEST_REQUIRE(strategy.num_workers() >= 2);
  if (strategy.worker_index() == 1) std::exit(3);
  const auto one = strategy.run([] { return dt::scalar<float>(1); });
  (void)strategy.reduce(ds::ReduceOp::SUM, one, std::nullopt);
  BOOST_ERROR("the all-reduce completed without worker 1");
}

#if defined(DEVTENSOR_WITH_HDF5)
// Run alone (disabled by default; CTest entries test_multi_worker.kill_and_resume.*, driven by
// kill_and_resume.cmake): one multi-worker fit with BackupAndRestore. Arguments after "--":
// <backup_dir> <result_file> <save_freq: "epoch" or batches> ["kill"]. With "kill", worker 1 sends
// itself SIGKILL before epoch 2's second batch, and the launcher ends the job. Every worker checks
// that all reached the same weights; the chief writes them, exactly (hexadecimal floats), to the
// result file and says where the fit resumed.
BOOST_AUTO_TEST_CASE(backup_and_restore_job, *boost::unit_test::disabled()) {
  const auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_TEST_REQUIRE(suite.argc >= 4);
  const std::string backup_dir = suite.argv[1], result = suite.argv[2], save_freq = suite.argv[3];
  const bool kill = suite.argc > 4 && std::string(suite.argv[4]) == "kill";
  const dt::test::ScopedEnv no_tf_config{"TF_CONFIG", std::nullopt};
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(), with_deadline());
  nn::utils::set_random_seed(21);
  std::unique_ptr<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    nn::clear_session();
    model = std::make_unique<nn::Sequential>(std::vector<nn::Layer>{
        nn::Dense(8, {.input_dim = 3, .activation = nn::Activation::relu}), nn::Dropout(0.25), nn::Dense(1)});
    model->compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{.learning_rate = 0.01});
  }
  std::vector<float> x, y;
  for (int i = 0; i < 48; ++i) {
    const float a = static_cast<float>(i % 7) / 7.0f, b = static_cast<float>(i % 5) / 5.0f;
    x.insert(x.end(), {a, b, a * b});
    y.push_back(a - 2 * b + 0.5f);
  }
  // Global batches of 12 (split among 2, 3 or 4 workers), shuffled anew every epoch.
  const auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(x, {48, 3}),
                                                                        dt::constant<float>(y, {48, 1}))
                        .shuffle(48)
                        .batch(12);
  nn::callbacks::BackupAndRestore backup{.backup_dir = backup_dir};
  if (save_freq != "epoch") backup.save_freq = static_cast<std::int64_t>(std::stoll(save_freq));
  int epoch = 0;
  const bool dies = kill && strategy.worker_index() == 1;
  nn::callbacks::LambdaCallback killer{.on_epoch_begin_fn = [&epoch](int e, const nn::Logs&) { epoch = e; },
                                       .on_train_batch_begin_fn =
                                           [&epoch, dies](std::int64_t batch, const nn::Logs&) {
                                             if (dies && epoch == 2 && batch == 1) std::raise(SIGKILL);
                                           }};
  const auto history = model->fit(data, {.epochs = 5, .verbose = 0, .callbacks = {backup, killer}});
  BOOST_TEST_REQUIRE(!kill);  // the job ends before
  std::vector<float> weights;
  for (const auto& v : model->trainable_variables()) {
    const auto values = v.to_vector();
    weights.insert(weights.end(), values.begin(), values.end());
  }
  if (world_size() > 1) {  // every worker reached the chief's weights
    std::vector<float> highest(weights), lowest(weights);
    MPI_Allreduce(MPI_IN_PLACE, highest.data(), static_cast<int>(weights.size()), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, lowest.data(), static_cast<int>(weights.size()), MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    BOOST_TEST(highest == weights, boost::test_tools::per_element());
    BOOST_TEST(lowest == weights, boost::test_tools::per_element());
  }
  if (save_freq == "epoch")  // the chief saves at every epoch's end; the others never
    BOOST_TEST(backup.saves() == (strategy.worker_index() == 0 ? static_cast<std::int64_t>(history.loss.size()) : 0));
  if (strategy.worker_index() != 0) return;
  if (const auto point = backup.restored())
    std::printf("BackupAndRestore resumed at epoch %d, batch %lld; %zu epochs run\n", point->epoch,
                static_cast<long long>(point->step), history.loss.size());
  else
    std::printf("BackupAndRestore found no backup; %zu epochs run\n", history.loss.size());
  std::FILE* out = std::fopen(result.c_str(), "w");
  BOOST_TEST_REQUIRE(out != nullptr);
  for (const float w : weights) std::fprintf(out, "%a\n", static_cast<double>(w));
  std::fclose(out);
}
#endif  // DEVTENSOR_WITH_HDF5

BOOST_AUTO_TEST_SUITE_END()
