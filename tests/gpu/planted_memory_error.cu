// A deliberate out-of-bounds write, for scripts/gpu-check: compute-sanitizer's memcheck must fail
// on it (proving that --report-api-errors no did not switch memory checking off). Not a test.
#include <cuda_runtime_api.h>

#include <cstdio>

__global__ void write_past_the_end(int* p) { p[threadIdx.x] = 1; }

int main() {
  int* p = nullptr;
  if (cudaMalloc(&p, 4 * sizeof(int)) != cudaSuccess) return 1;
  write_past_the_end<<<1, 64>>>(p);
  cudaDeviceSynchronize();
  cudaFree(p);
  std::printf("planted memory error ran\n");
  return 0;
}
