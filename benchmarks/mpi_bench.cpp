// Collectives across processes, each beside its same-run reference. Run under mpiexec:
//   mpiexec -n 2 build/cpu-release/benchmarks/bench_mpi --benchmark_repetitions=5
// Every rank runs every case with a fixed iteration count (ranks must make the same collective
// calls); each iteration's time is the slowest rank's (an MPI_MAX of the rank's own time), and only
// rank 0 reports.
//   BM_RawMpiAllreduce/bytes         MPI_Allreduce(MPI_IN_PLACE) of `bytes` of floats: the reference
//   BM_WorkerGroupAllreduce/bytes    devtensor's MpiWorkerGroup::all_reduce on the same buffer
//   BM_WorkerGroupAllreduceTimed/b   the same with a deadline (the chief's admission, then the
//                                    blocking collective)
//   BM_StrategyReduce/bytes          MultiWorkerMirroredStrategy::batch_reduce_to of one tensor
//                                    (local ring + host staging + the MPI all-reduce + a device copy)
//   BM_TrainStep                     Sequential::train_step of a 32-64-64-1 MLP, global batch
//                                    256 · workers (weak scaling: compare np1 with np2)
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <devtensor/devtensor.hpp>
#include <devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp>
#include <memory>
#include <string_view>
#include <vector>

namespace dt = devtensor;
namespace ds = dt::distribute;

namespace {

constexpr std::int64_t kiB = 1024;

/// Iterations per size: every rank must run the same number.
std::int64_t iterations_for(std::int64_t bytes) {
  if (bytes <= 4 * kiB) return 2000;
  if (bytes <= 1024 * kiB) return 200;
  return 10;
}

/// Times `body` on every rank and records the slowest rank's time.
template <class Body>
void timed(benchmark::State& state, Body body) {
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto began = std::chrono::steady_clock::now();
    body();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(seconds);
  }
}

void bus_bandwidth(benchmark::State& state, std::int64_t bytes) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  state.counters["busbw"] =
      benchmark::Counter(static_cast<double>(bytes) * 2.0 * (n - 1) / n, benchmark::Counter::kIsIterationInvariantRate);
}

ds::MultiWorkerMirroredStrategy& strategy() {
  static ds::MultiWorkerMirroredStrategy s(
      ds::cluster_resolver::TFConfigClusterResolver(),
      ds::CommunicationOptions(0, std::nullopt, ds::CommunicationImplementation::RING));
  return s;
}

void BM_RawMpiAllreduce(benchmark::State& state) {
  std::vector<float> buffer(static_cast<std::size_t>(state.range(0) / 4), 1.0f);
  timed(state, [&] {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
  bus_bandwidth(state, state.range(0));
}

void BM_WorkerGroupAllreduce(benchmark::State& state) {
  static ds::MpiWorkerGroup group;
  std::vector<float> buffer(static_cast<std::size_t>(state.range(0) / 4), 1.0f);
  timed(state, [&] {
    group.all_reduce(dt::DType::DT_FLOAT, buffer.data(), buffer.size(), dt::distribute::CollectiveReduction::sum,
                     "bench");
  });
  bus_bandwidth(state, state.range(0));
}

void BM_WorkerGroupAllreduceTimed(benchmark::State& state) {
  static ds::MpiWorkerGroup group(60.0);
  std::vector<float> buffer(static_cast<std::size_t>(state.range(0) / 4), 1.0f);
  timed(state, [&] {
    group.all_reduce(dt::DType::DT_FLOAT, buffer.data(), buffer.size(), dt::distribute::CollectiveReduction::sum,
                     "bench");
  });
  bus_bandwidth(state, state.range(0));
}

void BM_StrategyReduce(benchmark::State& state) {
  auto& s = strategy();
  const std::vector<ds::PerReplica<dt::Tensor<float>>> batch{
      {{dt::fill<float>(dt::Shape({state.range(0) / 4}), 1.0f)}}};
  timed(state, [&] { benchmark::DoNotOptimize(s.batch_reduce_to(ds::ReduceOp::SUM, batch)); });
  bus_bandwidth(state, state.range(0));
}

void BM_TrainStep(benchmark::State& state) {
  auto& s = strategy();
  const std::int64_t global = 256 * s.num_workers();
  std::optional<dt::nn::Sequential> model;
  {
    auto guard = s.scope();
    model.emplace(
        std::vector<dt::nn::Layer>{dt::nn::Dense(64, {.input_dim = 32, .activation = dt::nn::Activation::relu}),
                                   dt::nn::Dense(64, {.activation = dt::nn::Activation::relu}), dt::nn::Dense(1)});
    model->compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = 0.01});
  }
  auto x = dt::random_normal<float>(dt::Shape({global, 32}), {.seed = 1});
  auto y = dt::random_normal<float>(dt::Shape({global, 1}), {.seed = 2});
  timed(state, [&] { benchmark::DoNotOptimize(model->train_step(x, y).first); });
  state.SetItemsProcessed(state.iterations() * global);
}

/// One registration per size: an iteration count belongs to a whole registration.
void register_sizes(const char* name, void (*body)(benchmark::State&)) {
  for (std::int64_t bytes : {4 * kiB, 1024 * kiB, 64 * 1024 * kiB})
    benchmark::RegisterBenchmark(name, body)->Arg(bytes)->Iterations(iterations_for(bytes))->UseManualTime();
}

void register_all() {
  register_sizes("BM_RawMpiAllreduce", BM_RawMpiAllreduce);
  register_sizes("BM_WorkerGroupAllreduce", BM_WorkerGroupAllreduce);
  register_sizes("BM_WorkerGroupAllreduceTimed", BM_WorkerGroupAllreduceTimed);
  register_sizes("BM_StrategyReduce", BM_StrategyReduce);
  benchmark::RegisterBenchmark("BM_TrainStep", BM_TrainStep)->Iterations(200)->UseManualTime();
}

/// Rank 0 reports; the others run silently.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  ds::mpi_detail::Runtime::get();  // MPI, initialised as devtensor does it (a single worker would not)
  (void)strategy();                // the cluster, from the launch
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  dt::set_log_sink([](dt::LogSeverity, std::string_view) {});
  // Only rank 0 writes --benchmark_out: the others drop the flag.
  std::vector<char*> args(argv, argv + argc);
  // Every rank must run the cases in the same order: random interleaving shuffles per process.
  for (const char* a : args)
    if (std::string_view(a).starts_with("--benchmark_enable_random_interleaving") &&
        !std::string_view(a).ends_with("=false")) {
      if (rank == 0)
        std::fprintf(stderr,
                     "bench_mpi: --benchmark_enable_random_interleaving would give each rank its own order of "
                     "collectives (a deadlock); repeat whole runs instead\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  if (rank != 0) std::erase_if(args, [](const char* a) { return std::string_view(a).starts_with("--benchmark_out"); });
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  register_all();
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
