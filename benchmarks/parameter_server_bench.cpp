// Parameter-server training across processes, each case beside its same-run reference. Run under
// mpiexec, rank 0 the chief, then the workers, the last rank the ps task:
//   mpiexec -n 3 build/cpu-release/benchmarks/bench_parameter_server   # 1 worker
//   mpiexec -n 4 ...                                                   # 2 workers, -n 5: 3
// Only the chief reports (the workers and the ps task serve inside the library).
//   BM_RawMpiPushPull        the traffic of a push and a pull of 1 MiB between the chief and the
//                            ps rank in raw MPI (1 MiB out, 8 bytes back; 8 bytes out, 1 MiB
//                            back), before the strategy exists: the reference (always run it:
//                            the ps rank answers exactly 100 x 5 round trips before it serves)
//   BM_RawMpiRmaPushPull     the alternative transport the design weighed: the same megabyte
//                            written and read back with one-sided MPI (MPI_Put, then MPI_Get, each
//                            in a passive-target lock epoch on a window MPI_Win_allocate'd on the
//                            ps rank, which meanwhile waits outside MPI as a busy server would)
//   BM_PushPull              Variable::assign then read_value of a 1 MiB variable on the ps task
//   BM_LocalStep             one SGD step of a 32-64-64-1 MLP at batch 64 in the chief's own
//                            process (no ps): the rate of one worker without communication
//   BM_AsyncSteps            the same step scheduled 64 times and joined: the workers pull the
//                            variables, compute, and push the gradients (SGD runs on the ps task);
//                            items/s = updates per second of the whole cluster
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <devtensor/coordinator/cluster_coordinator.hpp>
#include <devtensor/devtensor.hpp>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dt = devtensor;
namespace ds = dt::distribute;
namespace dc = dt::distribute::coordinator;

namespace {

constexpr int kMiB = 1 << 20;
constexpr int kRawIterations = 100, kRawRepetitions = 5;  // the ps rank echoes exactly these

int rank = 0, size = 1;
std::unique_ptr<ds::ParameterServerStrategy> strategy;
std::unique_ptr<dc::ClusterCoordinator> coordinator;
void start_strategy();

void BM_RawMpiPushPull(benchmark::State& state) {
  std::vector<char> big(kMiB, 1);
  long small = 0;
  for (auto _ : state) {
    MPI_Send(big.data(), kMiB, MPI_BYTE, size - 1, 7, MPI_COMM_WORLD);
    MPI_Recv(&small, 1, MPI_LONG, size - 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&small, 1, MPI_LONG, size - 1, 9, MPI_COMM_WORLD);
    MPI_Recv(big.data(), kMiB, MPI_BYTE, size - 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  state.SetBytesProcessed(state.iterations() * 2 * kMiB);
}
/// The ps rank's side of BM_RawMpiPushPull (before its server starts).
void echo_raw() {
  std::vector<char> big(kMiB, 2);
  long small = 0;
  for (int i = 0; i < kRawIterations * kRawRepetitions; ++i) {
    MPI_Recv(big.data(), kMiB, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&small, 1, MPI_LONG, 0, 8, MPI_COMM_WORLD);
    MPI_Recv(&small, 1, MPI_LONG, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(big.data(), kMiB, MPI_BYTE, 0, 10, MPI_COMM_WORLD);
  }
}

MPI_Win rma_window = MPI_WIN_NULL;  // 1 MiB on the ps rank, nothing elsewhere

void BM_RawMpiRmaPushPull(benchmark::State& state) {
  std::vector<char> big(kMiB, 1);
  const int target = size - 1;
  for (auto _ : state) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, rma_window);
    MPI_Put(big.data(), kMiB, MPI_BYTE, target, 0, kMiB, MPI_BYTE, rma_window);
    MPI_Win_unlock(target, rma_window);
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, rma_window);
    MPI_Get(big.data(), kMiB, MPI_BYTE, target, 0, kMiB, MPI_BYTE, rma_window);
    MPI_Win_unlock(target, rma_window);
  }
  state.SetBytesProcessed(state.iterations() * 2 * kMiB);
}

void BM_PushPull(benchmark::State& state) {
  start_strategy();
  std::optional<dt::Variable<float>> v;
  {
    auto scope = strategy->scope();
    v.emplace(dt::zeros<float>({kMiB / 4}), dt::VariableOptions{.name = "big"});
  }
  const auto value = dt::ones<float>({kMiB / 4});
  for (auto _ : state) {
    v->assign(value);
    benchmark::DoNotOptimize(v->read_value());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kMiB);
}

/// A 32-64-64-1 MLP, its data, one step's function.
struct Mlp {
  std::vector<dt::nn::Dense> layers;
  dt::Tensor<float> x = dt::random_uniform<float>({64, 32}, {.seed = 1});
  dt::Tensor<float> y = dt::random_uniform<float>({64, 1}, {.seed = 2});
  dt::nn::optimizers::SGD sgd{.learning_rate = 0.01};
  Mlp() {
    layers.emplace_back(64, dt::nn::DenseOptions{.input_dim = 32, .activation = dt::nn::Activation::relu});
    layers.emplace_back(64, dt::nn::DenseOptions{.input_dim = 64, .activation = dt::nn::Activation::relu});
    layers.emplace_back(1, dt::nn::DenseOptions{.input_dim = 64});
  }
  void step() {
    std::vector<dt::Variable<float>> vars;
    for (auto& l : layers)
      for (auto& v : l.trainable_variables()) vars.push_back(v);
    dt::GradientTape tape;
    auto h = x;
    for (auto& l : layers) h = l(h);
    auto loss = dt::nn::losses::MeanSquaredError{}(y, h);
    sgd.apply_gradients(tape.gradient(loss, vars), vars);
  }
};

void BM_LocalStep(benchmark::State& state) {
  Mlp mlp;
  for (auto _ : state) mlp.step();
  state.SetItemsProcessed(state.iterations());
}

std::optional<Mlp> remote_mlp;
std::optional<dc::ScheduledFunction<std::function<void()>>> remote_step;

/// A barrier that sleeps while it waits (MPI_Barrier would spin a core during the reference).
void quiet_barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

/// Every task: the strategy, the coordinator, the MLP on the ps task and its step. The chief comes
/// here after the raw reference (its first case), the others at once.
void start_strategy() {
  if (strategy) return;
  quiet_barrier();  // the chief is past the one-sided reference: the window goes (collective)
  MPI_Win_free(&rma_window);
  quiet_barrier();
  std::string workers;
  for (int r = 1; r + 1 < size; ++r) workers += (r > 1 ? ", \"mpi:" : "\"mpi:") + std::to_string(r) + "\"";
  const std::string config = R"({"cluster": {"chief": ["mpi:0"], "worker": [)" + workers + R"(], "ps": ["mpi:)" +
                             std::to_string(size - 1) + R"("]}})";
  strategy = std::make_unique<ds::ParameterServerStrategy>(
      ds::cluster_resolver::TFConfigClusterResolver({.tf_config = config}));
  coordinator = std::make_unique<dc::ClusterCoordinator>(*strategy);
  {
    auto scope = strategy->scope();
    remote_mlp.emplace();
  }
  remote_step = coordinator->function(std::function<void()>([] { remote_mlp->step(); }));
}

void BM_AsyncSteps(benchmark::State& state) {
  start_strategy();
  constexpr int kSteps = 64;
  for (auto _ : state) {
    for (int i = 0; i < kSteps; ++i) coordinator->schedule(*remote_step);
    coordinator->join();
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
  state.counters["workers"] = strategy->num_workers();
}

}  // namespace

int main(int argc, char** argv) {
  (void)ds::mpi_detail::Runtime::get();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void* window_memory = nullptr;
  MPI_Win_allocate(rank == size - 1 ? kMiB : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &window_memory, &rma_window);
  if (rank != 0) {
    if (rank == size - 1) echo_raw();  // the reference's peer, alone with the chief
    start_strategy();                  // the ps task serves in here
    coordinator->join();               // a worker serves from here
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  // In this order (the raw reference first, while nothing else runs): no random interleaving.
  benchmark::RegisterBenchmark("BM_RawMpiPushPull", BM_RawMpiPushPull)
      ->Iterations(kRawIterations)
      ->Repetitions(kRawRepetitions)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_RawMpiRmaPushPull", BM_RawMpiRmaPushPull)
      ->Iterations(kRawIterations)
      ->Repetitions(kRawRepetitions)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PushPull", BM_PushPull)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_LocalStep", BM_LocalStep)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_AsyncSteps", BM_AsyncSteps)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  start_strategy();  // (a filter that skipped BM_PushPull: the others still wait for it)
  remote_mlp.reset();
  coordinator.reset();
  strategy.reset();  // ends the job
  return 0;
}
