// The devtensor cases of bench_gpu again, compiled by the host compiler (g++): with one kernel
// registry per program, a .cpp file reaches the same GPU bodies as the .cu file beside it, so the
// two must place identically and time alike (BM_*_from_cpp vs BM_* in the same run).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/devtensor.hpp"

namespace dt = devtensor;
namespace cu = devtensor::backend::cuda;

namespace {

const dt::Device& gpu0() {
  for (const auto& d : dt::Context::global().devices())
    if (d.is_gpu && !d.simulated) return d;
  throw dt::NotFoundError("no real GPU");
}

void BM_Add_devtensor_from_cpp(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::random_uniform<float>({n}, {.seed = 1});
  const auto b = dt::random_uniform<float>({n}, {.seed = 2});
  if (dt::add(a, b).device_info().simulated || !dt::add(a, b).device_info().is_gpu)
    state.SkipWithError("add did not run on a real GPU from a .cpp file");
  const auto& d = gpu0();
  const cudaStream_t stream = cu::stream_of(d);
  cu::Event start(d.platform_ordinal, true);
  cu::Event stop(d.platform_ordinal, true);
  DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    start.record(stream);
    benchmark::DoNotOptimize(dt::add(a, b));
    stop.record(stream);
    stop.synchronize();
    state.SetIterationTime(static_cast<double>(stop.elapsed_ms_since(start)) / 1e3);
  }
  state.SetBytesProcessed(state.iterations() * n * 12);
}

void BM_TinyOp_devtensor_from_cpp(benchmark::State& state) {
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::ones<float>({1});
  const auto stream = cu::stream_of(gpu0());
  for (auto _ : state) {
    for (int i = 0; i < 100; ++i) benchmark::DoNotOptimize(dt::add(a, a));
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

}  // namespace

BENCHMARK(BM_Add_devtensor_from_cpp)->Arg(1 << 20)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TinyOp_devtensor_from_cpp)->UseRealTime();
