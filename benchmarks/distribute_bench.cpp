// Cross-device all-reduce and data-parallel training on logical CPUs, each beside its same-run
// reference:
//   BM_AllReduce<Ops>/devices/bytes  batch_reduce(SUM) of one float tensor of `bytes` per device
//                                   (CollectiveAllReduce: the in-process ring, one thread per device);
//                                   counters algbw = bytes / time and busbw = algbw · 2(n−1)/n
//                                   (nccl-tests' all-reduce definitions)
//   BM_StreamCopy/bytes              a STREAM copy loop over the same bytes (bytes read + written)
//   BM_FitStep/replicas/traced/batch Sequential::train_step (traced 0: op by op) or train_on_batch
//                                   (traced 1: fit's step, traced) with a global batch of `batch`
//                                   split across that many replicas (1 = no strategy)
#include <benchmark/benchmark.h>

#include <cstring>
#include <devtensor/devtensor.hpp>
#include <mutex>

namespace dt = devtensor;
namespace ds = dt::distribute;

namespace {

void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}, {}});
    dt::set_log_sink([](dt::LogSeverity, std::string_view) {});  // the reduce logs would flood the output
  });
}
std::vector<std::string> cpus(std::int64_t n) {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back("/cpu:" + std::to_string(i));
  return out;
}

template <class Ops>
void BM_AllReduce(benchmark::State& state) {
  setup();
  const auto n = state.range(0);
  const auto bytes = state.range(1);
  const auto elements = bytes / 4;
  ds::MirroredStrategy strategy(cpus(n), Ops{});
  ds::PerReplica<dt::Tensor<float>> value;
  for (std::int64_t d = 0; d < n; ++d) {
    dt::DeviceScope scope("/cpu:" + std::to_string(d));
    value.values.push_back(dt::fill<float>(dt::Shape({elements}), static_cast<float>(d)));
  }
  const std::vector<ds::PerReplica<dt::Tensor<float>>> batch{value};
  for (auto _ : state) benchmark::DoNotOptimize(strategy.batch_reduce_to(ds::ReduceOp::SUM, batch));
  state.counters["algbw"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busbw"] =
      benchmark::Counter(static_cast<double>(bytes) * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_StreamCopy(benchmark::State& state) {
  const auto elements = static_cast<std::size_t>(state.range(0) / 8);
  std::vector<double> a(elements, 1.0), c(elements, 0.0);
  for (auto _ : state) {
    for (std::size_t i = 0; i < elements; ++i) c[i] = a[i];  // STREAM's copy kernel
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_FitStep(benchmark::State& state) {
  setup();
  const auto replicas = state.range(0);
  const bool traced = state.range(1) != 0;
  const std::int64_t global = state.range(2);
  auto build = [] {
    dt::nn::Sequential model({dt::nn::Dense(64, {.input_dim = 32, .activation = dt::nn::Activation::relu}),
                              dt::nn::Dense(64, {.activation = dt::nn::Activation::relu}), dt::nn::Dense(1)});
    model.compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = 0.01});
    return model;
  };
  auto x = dt::random_normal<float>(dt::Shape({global, 32}), {.seed = 1});
  auto y = dt::random_normal<float>(dt::Shape({global, 1}), {.seed = 2});
  if (replicas == 1) {
    auto model = build();
    for (auto _ : state) benchmark::DoNotOptimize(traced ? model.train_on_batch(x, y) : model.train_step(x, y).first);
  } else {
    ds::MirroredStrategy strategy(cpus(replicas), ds::HierarchicalCopyAllReduce{});
    std::optional<dt::nn::Sequential> model;
    {
      auto guard = strategy.scope();
      model.emplace(build());
    }
    for (auto _ : state) benchmark::DoNotOptimize(traced ? model->train_on_batch(x, y) : model->train_step(x, y).first);
  }
  state.SetItemsProcessed(state.iterations() * global);
}

void all_reduce_args(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {2, 4})
    for (std::int64_t bytes : {std::int64_t{4} << 10, std::int64_t{64} << 10, std::int64_t{1} << 20,
                               std::int64_t{16} << 20, std::int64_t{64} << 20})
      b->Args({n, bytes});
}

}  // namespace

BENCHMARK(BM_AllReduce<ds::ReductionToOneDevice>)->Apply(all_reduce_args)->UseRealTime();
BENCHMARK(BM_AllReduce<ds::HierarchicalCopyAllReduce>)->Apply(all_reduce_args)->UseRealTime();
BENCHMARK(BM_AllReduce<ds::CollectiveAllReduce>)->Apply(all_reduce_args)->UseRealTime();
BENCHMARK(BM_StreamCopy)
    ->Arg(std::int64_t{4} << 10)
    ->Arg(std::int64_t{64} << 10)
    ->Arg(std::int64_t{1} << 20)
    ->Arg(std::int64_t{16} << 20)
    ->Arg(std::int64_t{64} << 20);
BENCHMARK(BM_FitStep)->ArgsProduct({{1, 2}, {0, 1}, {64, 512}})->UseRealTime();
