// Conv2D and its two backprops on GPU:0 through devtensor (the cudnn component's engine) against
// cuDNN called directly, in the same run, at ResNet-50's 3x3 stages (issue 62): batch 64,
// 56x56x64 -> 64 and 14x14x256 -> 256, SAME, float32, NHWC. The direct calls choose their algorithm
// by the engine's rule (the first of cudnnGet*Algorithm_v7's results with FMA math, TF32 being off
// in GPU benchmarks: gpu_bench_main.cpp), so both run the same cuDNN kernel; devtensor's case adds what an op
// pays: placement, the output's BFC allocation, the workspace's, and the HWIO <-> KRSC filter
// transposes (cuDNN takes KRSC filters; devtensor's are TensorFlow's HWIO). Wall-clock, the stream
// synchronised per iteration in both. Without a GPU the program prints "skipped" and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/devtensor.hpp"

namespace dt = devtensor;
namespace cu = devtensor::backend::cuda;

namespace {

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(status));
}
#define BENCH_CUDNN(call) check((call), #call)

enum Direction : std::int64_t { kForward, kBackpropInput, kBackpropFilter };

struct Stage {
  std::int64_t batch, size, channels;  // a square NHWC input, 3x3 SAME, channels -> channels
};
Stage stage_of(const benchmark::State& state) { return {64, state.range(0), state.range(1)}; }

const dt::Device& gpu0() {
  for (const auto& d : dt::Context::global().devices())
    if (d.is_gpu && !d.simulated) return d;
  throw std::runtime_error("no real GPU");
}

void synchronize() {
  cu::DeviceGuard guard(gpu0().platform_ordinal);
  DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(cu::stream_of(gpu0())));
}

void set_counters(benchmark::State& state, const Stage& s) {
  const double flops = 2.0 * static_cast<double>(s.batch * s.size * s.size * s.channels * s.channels * 9);
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e12, benchmark::Counter::kIsRate);
}

void BM_Conv2D_devtensor(benchmark::State& state) {
  const Stage s = stage_of(state);
  const auto direction = state.range(2);
  dt::DeviceScope scope(gpu0().spec);
  const auto x = dt::random_uniform<float>({s.batch, s.size, s.size, s.channels}, {.seed = 1});
  const auto w = dt::random_uniform<float>({3, 3, s.channels, s.channels}, {.seed = 2});
  const auto dy = dt::random_uniform<float>({s.batch, s.size, s.size, s.channels}, {.seed = 3});
  const auto run = [&] {
    if (direction == kForward) return dt::conv2d(x, w, 1, "SAME");
    if (direction == kBackpropInput) return dt::conv2d_backprop_input(x.shape(), w, dy, 1, "SAME");
    return dt::conv2d_backprop_filter(x, w.shape(), dy, 1, "SAME");
  };
  benchmark::DoNotOptimize(run());  // the plan, the handle
  synchronize();
  for (auto _ : state) {
    benchmark::DoNotOptimize(run());
    synchronize();
  }
  set_counters(state, s);
}

void BM_Conv2D_cudnn(benchmark::State& state) {
  const Stage s = stage_of(state);
  const auto direction = state.range(2);
  const int n = static_cast<int>(s.batch), hw = static_cast<int>(s.size), c = static_cast<int>(s.channels);
  cu::DeviceGuard guard(gpu0().platform_ordinal);
  const cudaStream_t stream = cu::stream_of(gpu0());
  cudnnHandle_t handle = nullptr;
  BENCH_CUDNN(cudnnCreate(&handle));
  BENCH_CUDNN(cudnnSetStream(handle, stream));
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  BENCH_CUDNN(cudnnCreateTensorDescriptor(&xd));
  BENCH_CUDNN(cudnnCreateTensorDescriptor(&yd));
  BENCH_CUDNN(cudnnCreateFilterDescriptor(&wd));
  BENCH_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
  BENCH_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, hw, hw));
  BENCH_CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, hw, hw));
  BENCH_CUDNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, c, c, 3, 3));
  BENCH_CUDNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  BENCH_CUDNN(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  // The first heuristic result with FMA math, as the engine chooses.
  int algorithm = -1;
  std::size_t workspace_bytes = 0;
  const auto choose = [&](const auto& results, int returned) {
    for (int i = 0; i < returned && algorithm < 0; ++i)
      if (results[static_cast<std::size_t>(i)].status == CUDNN_STATUS_SUCCESS &&
          results[static_cast<std::size_t>(i)].mathType == CUDNN_FMA_MATH) {
        algorithm = static_cast<int>(results[static_cast<std::size_t>(i)].algo);
        workspace_bytes = results[static_cast<std::size_t>(i)].memory;
      }
  };
  int returned = 0;
  if (direction == kForward) {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    BENCH_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                       &returned, results.data()));
    choose(results, returned);
  } else if (direction == kBackpropInput) {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    BENCH_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, wd, yd, cd, xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results.data()));
    choose(results, returned);
  } else {
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    BENCH_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, xd, yd, cd, wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results.data()));
    choose(results, returned);
  }
  if (algorithm < 0) throw std::runtime_error("cuDNN offered no FMA algorithm");
  const std::size_t activations = static_cast<std::size_t>(n) * static_cast<std::size_t>(hw * hw * c) * sizeof(float);
  void *x = nullptr, *y = nullptr, *w = nullptr, *workspace = nullptr;
  DEVTENSOR_CUDA_CHECK(cudaMalloc(&x, activations));
  DEVTENSOR_CUDA_CHECK(cudaMalloc(&y, activations));
  DEVTENSOR_CUDA_CHECK(cudaMalloc(&w, static_cast<std::size_t>(9 * c * c) * sizeof(float)));
  if (workspace_bytes > 0) DEVTENSOR_CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
  DEVTENSOR_CUDA_CHECK(cudaMemset(x, 0, activations));
  DEVTENSOR_CUDA_CHECK(cudaMemset(y, 0, activations));
  DEVTENSOR_CUDA_CHECK(cudaMemset(w, 0, static_cast<std::size_t>(9 * c * c) * sizeof(float)));
  const float one = 1.0F, zero = 0.0F;
  const auto run = [&] {
    if (direction == kForward)
      BENCH_CUDNN(cudnnConvolutionForward(handle, &one, xd, x, wd, w, cd,
                                          static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), workspace, workspace_bytes,
                                          &zero, yd, y));
    else if (direction == kBackpropInput)
      BENCH_CUDNN(cudnnConvolutionBackwardData(handle, &one, wd, w, yd, y, cd,
                                               static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm), workspace,
                                               workspace_bytes, &zero, xd, x));
    else
      BENCH_CUDNN(cudnnConvolutionBackwardFilter(handle, &one, xd, x, yd, y, cd,
                                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), workspace,
                                                 workspace_bytes, &zero, wd, w));
  };
  run();
  synchronize();
  for (auto _ : state) {
    run();
    synchronize();
  }
  set_counters(state, s);
  state.counters["algorithm"] = algorithm;
  (void)cudaFree(x);
  (void)cudaFree(y);
  (void)cudaFree(w);
  if (workspace != nullptr) (void)cudaFree(workspace);
  (void)cudnnDestroyTensorDescriptor(xd);
  (void)cudnnDestroyTensorDescriptor(yd);
  (void)cudnnDestroyFilterDescriptor(wd);
  (void)cudnnDestroyConvolutionDescriptor(cd);
  (void)cudnnDestroy(handle);
}

/// {size, channels, direction}: ResNet-50's conv2_x and conv4_x 3x3 stages, each direction.
void stages(benchmark::internal::Benchmark* b) {
  for (const auto& [size, channels] : {std::pair<std::int64_t, std::int64_t>{56, 64}, {14, 256}})
    for (std::int64_t direction : {kForward, kBackpropInput, kBackpropFilter}) b->Args({size, channels, direction});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_Conv2D_devtensor)->Apply(stages);
BENCHMARK(BM_Conv2D_cudnn)->Apply(stages);

// main: gpu_bench_main.cpp (skips without a CUDA device).
