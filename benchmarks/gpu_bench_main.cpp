// The main of every GPU benchmark executable: without a CUDA device it says so and exits 0 (a
// benchmark run on a machine without a GPU measures nothing; scripts/gpu-check runs them on one),
// otherwise Google Benchmark's usual main.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "devtensor/core/matmul_options.hpp"

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
    std::printf("%s: skipped: no CUDA device\n", slash ? slash + 1 : (argc > 0 ? argv[0] : "benchmark"));
    return 0;
  }
  // float32 beside float32: the references (cuBLAS and cuDNN called directly, PyTorch's scripts)
  // run without TF32, so devtensor does too; a benchmark of TF32 turns it on for itself.
  devtensor::config::experimental::enable_tensor_float_32_execution(false);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
