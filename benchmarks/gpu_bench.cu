// GPU benchmarks, each case beside its reference in the same run (a ratio of two medians of one run):
//   matmul (devtensor, cuBLAS through the op)    vs raw cublasSgemm/Dgemm on the same buffers, float
//                                                in TF32 when devtensor's setting is (its default, as
//                                                TensorFlow's), and at 8192 with TF32 and without
//   bfloat16/float16 matmul at 8192 (issue 65)   vs cublasLtMatmul called directly (float32
//                                                accumulation, the heuristic's first algorithm)
//   elementwise add (12 B per element of HBM)     vs a device-to-device copy (8 B per element)
//   BFC allocate/free                             vs cudaMalloc/cudaFree and cudaMallocAsync
//   a 1-element op (placement, allocation, launch) vs a bare kernel launch
//   a traced chain of 8 elementwise ops (one fused launch) vs the copy (both 8 B per element)
//   a traced Dense forward pass (one cuBLASLt call with its epilogue) vs the bare sgemm
//   a host tensor's upload (1 MiB)              vs raw cudaMemcpyAsync from pageable and from pinned memory
//   the host time of that cudaMemcpyAsync call behind 0.5 ms of queued GPU work (pageable, pinned)
// GPU time comes from CUDA events around each iteration (UseManualTime); host-side cases use real
// time with a stream synchronisation at the end of each batch. Without a GPU the program prints
// "skipped" and exits 0.
#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "devtensor/backend/cuda/cublas.hpp"
#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/devtensor.hpp"
#include "eight_ops.hpp"

namespace dt = devtensor;
namespace cu = devtensor::backend::cuda;

namespace {

__global__ void empty_kernel() {}
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

const dt::Device& gpu0() {
  for (const auto& d : dt::Context::global().devices())
    if (d.is_gpu && !d.simulated) return d;
  throw dt::NotFoundError("no real GPU");
}

/// Times `body` per iteration with events on GPU:0's stream.
template <class F>
void time_on_stream(benchmark::State& state, F body) {
  const auto& d = gpu0();
  const cudaStream_t stream = cu::stream_of(d);
  cu::Event start(d.platform_ordinal, true);
  cu::Event stop(d.platform_ordinal, true);
  body();  // warm-up: allocator regions, cuBLAS handle
  DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    start.record(stream);
    body();
    stop.record(stream);
    stop.synchronize();
    state.SetIterationTime(static_cast<double>(stop.elapsed_ms_since(start)) / 1e3);
  }
}

template <class T>
void BM_MatMul_devtensor(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::random_uniform<T>({n, n}, {.seed = 1});
  const auto b = dt::random_uniform<T>({n, n}, {.seed = 2});
  time_on_stream(state, [&] { benchmark::DoNotOptimize(dt::matmul(a, b)); });
  state.counters["TFLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e12,
                         benchmark::Counter::kIsRate);
}

template <class T>
void BM_MatMul_cublas(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::random_uniform<T>({n, n}, {.seed = 1});
  const auto b = dt::random_uniform<T>({n, n}, {.seed = 2});
  auto c = dt::zeros<T>({n, n});
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  cublasHandle_t handle = nullptr;
  DEVTENSOR_CUBLAS_CHECK(cublasCreate(&handle));
  DEVTENSOR_CUBLAS_CHECK(cublasSetStream(handle, cu::stream_of(d)));
  // The math devtensor's own handle uses: TF32 tensor cores for float while the setting is on.
  if (std::is_same_v<T, float> && dt::config::experimental::tensor_float_32_execution_enabled())
    DEVTENSOR_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
  const T one = 1;
  const T zero = 0;
  const int in = static_cast<int>(n);
  time_on_stream(state, [&] {
    if constexpr (std::is_same_v<T, float>)
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, in, in, in, &one, b.data(), in, a.data(), in, &zero,
                  c.mutable_data(), in);
    else
      cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, in, in, in, &one, b.data(), in, a.data(), in, &zero,
                  c.mutable_data(), in);
  });
  cublasDestroy(handle);
  state.counters["TFLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e12,
                         benchmark::Counter::kIsRate);
}

double gemm_tflops(benchmark::State& state, std::int64_t n) {
  return 2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e12;
}

/// TF32 on or off while a case runs, the setting before it afterwards.
class Tf32Setting {
 public:
  explicit Tf32Setting(bool enabled) { dt::config::experimental::enable_tensor_float_32_execution(enabled); }
  Tf32Setting(const Tf32Setting&) = delete;
  Tf32Setting& operator=(const Tf32Setting&) = delete;
  ~Tf32Setting() { dt::config::experimental::enable_tensor_float_32_execution(before_); }

 private:
  bool before_ = dt::config::experimental::tensor_float_32_execution_enabled();
};

/// float32 matmul with TF32 on (devtensor's default) or off (range(1): 1 or 0), beside
/// BM_MatMul_cublas<float> run under the same setting.
void BM_MatMul_devtensor_tf32(benchmark::State& state) {
  const Tf32Setting tf32(state.range(1) != 0);
  BM_MatMul_devtensor<float>(state);
}
void BM_MatMul_cublas_tf32(benchmark::State& state) {
  const Tf32Setting tf32(state.range(1) != 0);
  BM_MatMul_cublas<float>(state);
}

/// bfloat16 or float16 [n, n] x [n, n] through devtensor's MatMul (float32 accumulation).
template <class T>
void BM_MatMul16_devtensor(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::cast<T>(dt::random_uniform<float>({n, n}, {.seed = 1}));
  const auto b = dt::cast<T>(dt::random_uniform<float>({n, n}, {.seed = 2}));
  time_on_stream(state, [&] { benchmark::DoNotOptimize(dt::matmul(a, b)); });
  state.counters["TFLOPS"] = benchmark::Counter(gemm_tflops(state, n), benchmark::Counter::kIsRate);
}

/// The same product through cublasLtMatmul directly (row-major a · b is the column-major b · a, no
/// transposes): CUBLAS_COMPUTE_32F with float scalars, a 32 MiB workspace, the heuristic's first
/// algorithm.
template <class T>
void BM_MatMul16_cublaslt(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::cast<T>(dt::random_uniform<float>({n, n}, {.seed = 1}));
  const auto b = dt::cast<T>(dt::random_uniform<float>({n, n}, {.seed = 2}));
  auto c = dt::cast<T>(dt::zeros<float>({n, n}));
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  const cudaDataType_t type = std::is_same_v<T, dt::bfloat16> ? CUDA_R_16BF : CUDA_R_16F;
  constexpr std::size_t kWorkspace = std::size_t{32} << 20;
  void* workspace = nullptr;
  DEVTENSOR_CUDA_CHECK(cudaMalloc(&workspace, kWorkspace));
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layout = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  DEVTENSOR_CUBLAS_CHECK(cublasLtCreate(&handle));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const auto u = static_cast<std::uint64_t>(n);
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, u, u, static_cast<std::int64_t>(n)));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                              &kWorkspace, sizeof(kWorkspace)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  DEVTENSOR_CUBLAS_CHECK(
      cublasLtMatmulAlgoGetHeuristic(handle, op, layout, layout, layout, layout, preference, 1, &heuristic, &found));
  if (found == 0) {
    state.SkipWithError("cublasLt found no algorithm");
  } else {
    const float one = 1.0f, zero = 0.0f;
    time_on_stream(state, [&] {
      DEVTENSOR_CUBLAS_CHECK(cublasLtMatmul(handle, op, &one, b.data(), layout, a.data(), layout, &zero,
                                            c.mutable_data(), layout, c.mutable_data(), layout, &heuristic.algo,
                                            workspace, kWorkspace, cu::stream_of(d)));
    });
    state.counters["TFLOPS"] = benchmark::Counter(gemm_tflops(state, n), benchmark::Counter::kIsRate);
  }
  DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(cu::stream_of(d)));
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(layout);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(handle);
  cudaFree(workspace);
}

void BM_Add_devtensor(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::random_uniform<float>({n}, {.seed = 1});
  const auto b = dt::random_uniform<float>({n}, {.seed = 2});
  time_on_stream(state, [&] { benchmark::DoNotOptimize(dt::add(a, b)); });
  state.SetBytesProcessed(state.iterations() * n * 12);  // read a, read b, write c
}

void BM_Copy_reference(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::random_uniform<float>({n}, {.seed = 1});
  auto c = dt::zeros<float>({n});
  const auto stream = cu::stream_of(gpu0());
  time_on_stream(state, [&] {
    DEVTENSOR_CUDA_CHECK(
        cudaMemcpyAsync(c.mutable_data(), a.data(), static_cast<std::size_t>(n) * 4, cudaMemcpyDeviceToDevice, stream));
  });
  state.SetBytesProcessed(state.iterations() * n * 8);  // read + write
}

// Issue 30: a chain of 8 elementwise ops (ops_bench.cpp's) traced, fused into one launch of the
// chain kernel (ops/fused_chain.hpp): one read and one write per element, the copy's traffic;
// goal: >= 0.8x the copy's bandwidth. Eager: eight passes.
using dt::bench::eight_ops;
void BM_Chain8_traced(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto x = dt::random_uniform<float>({n}, {.seed = 1});
  auto f = dt::function(eight_ops);
  benchmark::DoNotOptimize(f(x));  // traced and optimised before the timing
  time_on_stream(state, [&] { benchmark::DoNotOptimize(f(x)); });
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  state.counters["fused"] = std::count(ops.begin(), ops.end(), "_FusedElementwise") == 1 ? 1 : 0;
  state.SetBytesProcessed(state.iterations() * n * 8);
}
void BM_Chain8_eager(benchmark::State& state) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto x = dt::random_uniform<float>({n}, {.seed = 1});
  time_on_stream(state, [&] { benchmark::DoNotOptimize(eight_ops(x)); });
  state.SetBytesProcessed(state.iterations() * n * 8);
}

// Issue 30: reduce_sum(square(x - y), 1) over n rows of 4096 floats (ops_bench.cpp's
// SquaredDistance): traced, one _FusedReduction launch that reads x and y once and never writes the
// chain's result; eager: Sub, Square, then the reduction, three passes. Bytes: x and y read once
// (the copy's 8 bytes per element); goal: the copy's bandwidth, as the chain's.
void squared_distance_case(benchmark::State& state, bool traced) {
  const auto rows = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto x = dt::random_uniform<float>({rows, 4096}, {.seed = 1});
  const auto y = dt::random_uniform<float>({rows, 4096}, {.seed = 2});
  const auto body = [](const dt::Tensor<float>& a, const dt::Tensor<float>& b) {
    return dt::reduce_sum(dt::square(a - b), {1});
  };
  auto f = dt::function(body);
  if (traced) {
    benchmark::DoNotOptimize(f(x, y));
    const auto ops = f.get_concrete_function(x, y)->optimized_ops();
    state.counters["fused"] = std::count(ops.begin(), ops.end(), "_FusedReduction") == 1 ? 1 : 0;
  }
  time_on_stream(state, [&] { benchmark::DoNotOptimize(traced ? f(x, y) : body(x, y)); });
  state.SetBytesProcessed(state.iterations() * rows * 4096 * 8);
}
void BM_SquaredDistance_traced(benchmark::State& state) { squared_distance_case(state, true); }
void BM_SquaredDistance_eager(benchmark::State& state) { squared_distance_case(state, false); }

// Issue 30: Dense's forward pass, relu(x·w + b) with n × n operands: traced, one cuBLASLt call with
// the bias and Relu as its epilogue (Note [GEMM epilogues]); eager: the GEMM, the add, the Relu.
// Reference: the bare sgemm of the same size (BM_MatMul_cublas<float>); goal: >= 0.98x its speed.
void dense_case(benchmark::State& state, bool traced) {
  const auto n = state.range(0);
  dt::DeviceScope scope("/gpu:0");
  const auto x = dt::random_uniform<float>({n, n}, {.seed = 1});
  const auto w = dt::random_uniform<float>({n, n}, {.seed = 2});
  const auto b = dt::random_uniform<float>({n}, {.minval = -0.5, .maxval = 0.5, .seed = 3});
  const auto body = [](const dt::Tensor<float>& in, const dt::Tensor<float>& kernel, const dt::Tensor<float>& bias) {
    return dt::relu(dt::matmul(in, kernel) + bias);
  };
  auto f = dt::function(body);
  if (traced) {
    benchmark::DoNotOptimize(f(x, w, b));
    const auto ops = f.get_concrete_function(x, w, b)->optimized_ops();
    state.counters["fused"] = std::count(ops.begin(), ops.end(), "_FusedMatMul") == 1 ? 1 : 0;
  }
  time_on_stream(state, [&] { benchmark::DoNotOptimize(traced ? f(x, w, b) : body(x, w, b)); });
  state.counters["TFLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e12,
                         benchmark::Counter::kIsRate);
}
void BM_Dense_traced(benchmark::State& state) { dense_case(state, true); }
void BM_Dense_eager(benchmark::State& state) { dense_case(state, false); }

void BM_Alloc_bfc(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto& allocator = dt::Context::global().allocator(gpu0());
  for (auto _ : state) {
    void* p = allocator.allocate(bytes, 256, {});
    benchmark::DoNotOptimize(p);
    allocator.deallocate(p);
  }
}

void BM_Alloc_cudaMalloc(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  cu::DeviceGuard guard(gpu0().platform_ordinal);
  for (auto _ : state) {
    void* p = nullptr;
    DEVTENSOR_CUDA_CHECK(cudaMalloc(&p, bytes));
    benchmark::DoNotOptimize(p);
    DEVTENSOR_CUDA_CHECK(cudaFree(p));
  }
}

void BM_Alloc_cudaMallocAsync(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  cu::Stream stream(d.platform_ordinal);
  for (auto _ : state) {
    void* p = nullptr;
    DEVTENSOR_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream.get()));
    benchmark::DoNotOptimize(p);
    DEVTENSOR_CUDA_CHECK(cudaFreeAsync(p, stream.get()));
  }
  stream.synchronize();
}

void BM_TinyOp_devtensor(benchmark::State& state) {
  dt::DeviceScope scope("/gpu:0");
  const auto a = dt::ones<float>({1});
  const auto stream = cu::stream_of(gpu0());
  for (auto _ : state) {
    for (int i = 0; i < 100; ++i) benchmark::DoNotOptimize(dt::add(a, a));
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

void BM_TinyOp_bare_launch(benchmark::State& state) {
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  const auto stream = cu::stream_of(d);
  for (auto _ : state) {
    for (int i = 0; i < 100; ++i) empty_kernel<<<1, 1, 0, stream>>>();
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  state.SetItemsProcessed(state.iterations() * 100);
}

// The upload fit makes of every host batch (the H200's BM_MlpStep_Fit at hidden 256 spent ~700 us
// a step more than the tape loop on GPU-resident data; Note in gpu_training_bench.cu). Real time:
// the host's time from the call to the end of the copy, so a pageable source's staging counts.
// devtensor: a host tensor copied to GPU:0 (identity under a DeviceScope, the executor's _Recv
// path); raw: cudaMemcpyAsync from malloc'd (pageable) and from cudaMallocHost (pinned) memory.
void BM_Upload_devtensor(benchmark::State& state) {
  const auto n = state.range(0) / 4;
  dt::Tensor<float> host;
  {
    dt::DeviceScope cpu("/cpu:0");
    host = dt::random_uniform<float>({n}, {.seed = 1});
  }
  dt::DeviceScope scope("/gpu:0");
  const auto stream = cu::stream_of(gpu0());
  for (auto _ : state) {
    benchmark::DoNotOptimize(dt::identity(host));
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// A host source of `bytes` (pageable or pinned) and a device destination, freed at scope exit.
struct UploadBuffers {
  std::vector<char> pageable;
  void* pinned = nullptr;
  void* device = nullptr;
  UploadBuffers(std::size_t bytes, bool pin) : pageable(pin ? 0 : bytes, 1) {
    try {
      if (pin) {
        DEVTENSOR_CUDA_CHECK(cudaMallocHost(&pinned, bytes));
        std::memset(pinned, 1, bytes);
      }
      DEVTENSOR_CUDA_CHECK(cudaMalloc(&device, bytes));
    } catch (...) {
      release();
      throw;
    }
  }
  UploadBuffers(const UploadBuffers&) = delete;
  UploadBuffers& operator=(const UploadBuffers&) = delete;
  ~UploadBuffers() { release(); }
  void release() noexcept {
    if (device) static_cast<void>(cudaFree(device));
    if (pinned) static_cast<void>(cudaFreeHost(pinned));
    device = pinned = nullptr;
  }
  [[nodiscard]] const void* host() const { return pinned ? pinned : pageable.data(); }
};

void upload_raw(benchmark::State& state, bool pinned) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  const auto stream = cu::stream_of(d);
  const UploadBuffers buffers(bytes, pinned);
  for (auto _ : state) {
    DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(buffers.device, buffers.host(), bytes, cudaMemcpyHostToDevice, stream));
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
void BM_Upload_pageable_raw(benchmark::State& state) { upload_raw(state, false); }
void BM_Upload_pinned_raw(benchmark::State& state) { upload_raw(state, true); }

// Whether a pageable upload waits for the GPU work queued before it (CUDA may "synchronize with
// the stream" to stage a pageable copy): the host time of the cudaMemcpyAsync call alone, behind a
// kernel that spins for `cycles` (about 0.5 ms). Near 0.5 ms: the call waited, and host work
// after it cannot overlap the GPU's; a few microseconds: it did not. Pinned memory for reference.
void upload_behind_work(benchmark::State& state, bool pinned) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto& d = gpu0();
  cu::DeviceGuard guard(d.platform_ordinal);
  const auto stream = cu::stream_of(d);
  int clock_khz = 0;
  DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d.platform_ordinal));
  const long long cycles = static_cast<long long>(clock_khz) * 1000 / 2000;  // 0.5 ms
  const UploadBuffers buffers(bytes, pinned);
  for (auto _ : state) {
    spin_kernel<<<1, 1, 0, stream>>>(cycles);
    const auto start = std::chrono::steady_clock::now();
    DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(buffers.device, buffers.host(), bytes, cudaMemcpyHostToDevice, stream));
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}
void BM_UploadCall_behind_work_pageable(benchmark::State& state) { upload_behind_work(state, false); }
void BM_UploadCall_behind_work_pinned(benchmark::State& state) { upload_behind_work(state, true); }

}  // namespace

BENCHMARK(BM_MatMul_devtensor<float>)->Arg(1024)->Arg(4096)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul_cublas<float>)->Arg(1024)->Arg(4096)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul_devtensor<double>)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul_cublas<double>)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul_devtensor_tf32)->Args({8192, 1})->Args({8192, 0})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul_cublas_tf32)->Args({8192, 1})->Args({8192, 0})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul16_devtensor<dt::bfloat16>)->Arg(8192)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul16_cublaslt<dt::bfloat16>)->Arg(8192)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul16_devtensor<dt::float16>)->Arg(8192)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul16_cublaslt<dt::float16>)->Arg(8192)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Add_devtensor)->Arg(1 << 20)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Copy_reference)->Arg(1 << 20)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Chain8_traced)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Chain8_eager)->Arg(1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SquaredDistance_traced)->Arg(4096)->Arg(16)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SquaredDistance_eager)->Arg(4096)->Arg(16)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Dense_traced)->Arg(1024)->Arg(4096)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Dense_eager)->Arg(1024)->Arg(4096)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Alloc_bfc)->Arg(1 << 20);
BENCHMARK(BM_Alloc_cudaMalloc)->Arg(1 << 20);
BENCHMARK(BM_Alloc_cudaMallocAsync)->Arg(1 << 20);
BENCHMARK(BM_TinyOp_devtensor)->UseRealTime();
BENCHMARK(BM_TinyOp_bare_launch)->UseRealTime();
BENCHMARK(BM_Upload_devtensor)->Arg(1 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Upload_pageable_raw)->Arg(1 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Upload_pinned_raw)->Arg(1 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);
// A fixed count: the manual time (the call alone) may be microseconds, each iteration's spin 0.5 ms.
BENCHMARK(BM_UploadCall_behind_work_pageable)
    ->Arg(1 << 20)
    ->Iterations(200)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UploadCall_behind_work_pinned)
    ->Arg(1 << 20)
    ->Iterations(200)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// main: gpu_bench_main.cpp (skips without a CUDA device).
