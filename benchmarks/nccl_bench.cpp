// NcclAllReduce against a direct ncclAllReduce, in the same run, across every real GPU of the
// machine (a clique of one on a single-GPU machine: NCCL still runs its kernel). Both are
// out-of-place sums of one float tensor per GPU on the GPUs' own streams; devtensor's case adds
// what a strategy pays per call: placement of the result, BFC allocation, the packing views and
// the cached clique's lookup. Times are wall-clock with every stream synchronised per iteration.
// Counters: algbw = bytes / time, busbw = algbw · 2(n − 1)/n (nccl-tests), n = 1 gives busbw 0.
// Without a GPU the program prints "skipped" and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/nccl.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/devtensor.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;
namespace cu = devtensor::backend::cuda;

namespace {

/// One logical device per real GPU, in ordinal order (at most 8).
std::vector<int> real_gpus() {
  std::vector<int> out;
  const auto& devices = dt::Context::global().devices();
  for (std::size_t i = 0; i < devices.size() && out.size() < 8; ++i)
    if (devices[i].is_gpu && !devices[i].simulated) out.push_back(static_cast<int>(i));
  return out;
}

const dt::Device& info(int device) { return dt::Context::global().devices()[static_cast<std::size_t>(device)]; }

void synchronize(const std::vector<int>& devices) {
  for (int d : devices) {
    cu::DeviceGuard guard(info(d).platform_ordinal);
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(cu::stream_of(info(d))));
  }
}

void set_counters(benchmark::State& state, std::int64_t bytes, std::size_t n) {
  const double total = static_cast<double>(bytes) * static_cast<double>(state.iterations());
  state.counters["algbw"] = benchmark::Counter(total, benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["busbw"] = benchmark::Counter(total * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n),
                                               benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["gpus"] = static_cast<double>(n);
}

void BM_AllReduce_devtensor(benchmark::State& state) {
  const auto bytes = state.range(0);
  const auto devices = real_gpus();
  ds::PerReplica<dt::Tensor<float>> value;
  for (int d : devices) {
    dt::DeviceScope scope(info(d).spec);
    value.values.push_back(dt::ones<float>({bytes / 4}));
  }
  const ds::NcclAllReduce nccl{};
  const std::vector items{value};
  std::vector<const dt::Device*> destinations;
  for (int d : devices) destinations.push_back(&info(d));
  benchmark::DoNotOptimize(nccl.batch_reduce(ds::ReduceOp::SUM, items, destinations));  // the clique
  synchronize(devices);
  for (auto _ : state) {
    benchmark::DoNotOptimize(nccl.batch_reduce(ds::ReduceOp::SUM, items, destinations));
    synchronize(devices);
  }
  set_counters(state, bytes, devices.size());
}

void BM_AllReduce_raw_nccl(benchmark::State& state) {
  const auto bytes = state.range(0);
  const auto devices = real_gpus();
  const auto n = devices.size();
  std::vector<int> ordinals;
  for (int d : devices) ordinals.push_back(info(d).platform_ordinal);
  std::vector<ncclComm_t> comms(n);
  DEVTENSOR_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(n), ordinals.data()));
  std::vector<void*> send(n), recv(n);
  for (std::size_t i = 0; i < n; ++i) {
    cu::DeviceGuard guard(ordinals[i]);
    DEVTENSOR_CUDA_CHECK(cudaMalloc(&send[i], static_cast<std::size_t>(bytes)));
    DEVTENSOR_CUDA_CHECK(cudaMalloc(&recv[i], static_cast<std::size_t>(bytes)));
    DEVTENSOR_CUDA_CHECK(cudaMemset(send[i], 0, static_cast<std::size_t>(bytes)));
  }
  auto all_reduce = [&] {
    DEVTENSOR_NCCL_CHECK(ncclGroupStart());
    for (std::size_t i = 0; i < n; ++i)
      DEVTENSOR_NCCL_CHECK(ncclAllReduce(send[i], recv[i], static_cast<std::size_t>(bytes / 4), ncclFloat32, ncclSum,
                                         comms[i], cu::stream_of(info(devices[i]))));
    DEVTENSOR_NCCL_CHECK(ncclGroupEnd());
  };
  all_reduce();
  synchronize(devices);
  for (auto _ : state) {
    all_reduce();
    synchronize(devices);
  }
  set_counters(state, bytes, n);
  for (std::size_t i = 0; i < n; ++i) {
    cu::DeviceGuard guard(ordinals[i]);
    (void)cudaFree(send[i]);
    (void)cudaFree(recv[i]);
    (void)ncclCommDestroy(comms[i]);
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t bytes : {std::int64_t{4} << 10, std::int64_t{1} << 20, std::int64_t{64} << 20}) b->Arg(bytes);
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_AllReduce_devtensor)->Apply(sizes);
BENCHMARK(BM_AllReduce_raw_nccl)->Apply(sizes);

// main: gpu_bench_main.cpp (skips without a CUDA device).
