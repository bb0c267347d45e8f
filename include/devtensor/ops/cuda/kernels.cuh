#pragma once
/// @file kernels.cuh
/// @brief The hand-written CUDA kernels (compiled in src/devtensor_cuda.cu): elementwise maps
/// with NumPy broadcasting, a strided copy that serves transpose / broadcast_to / slice / split /
/// concat / pad, fill, range, the counter-based random generators, and add_n's accumulation.
///
/// Every launch goes on the logical device's stream under a DeviceGuard and is checked with
/// cudaGetLastError (a bad launch configuration is reported where it happens; errors inside a
/// kernel surface at the next synchronising call, as in any CUDA program). Index arithmetic is
/// 64-bit throughout; grid-stride loops bound the grid at 65535 × 4 blocks.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cuda {

inline constexpr int kThreads = 256;
/// Ranks the index-decomposing kernels handle; higher ranks raise UnimplementedError on a GPU.
inline constexpr int kMaxRank = 8;

/// Blocks of kThreads for n elements, `per_thread` each: enough to fill the GPU, never more than
/// the grid-stride loop needs.
inline unsigned blocks_for(std::int64_t n, std::int64_t per_thread = 1) {
  const std::int64_t tile = std::int64_t{kThreads} * per_thread;
  const std::int64_t blocks = (n + tile - 1) / tile;
  return static_cast<unsigned>(blocks < 65535 * 4 ? (blocks > 0 ? blocks : 1) : 65535 * 4);
}

/// The device, guard and stream a launch needs.
struct Launch {
  const Device& device;
  backend::cuda::DeviceGuard guard;
  cudaStream_t stream;

  explicit Launch(const Device& on)
      : device(on), guard(device.platform_ordinal), stream(backend::cuda::stream_of(device)) {}

  /// Reports a failed launch (bad configuration, no kernel image for this GPU).
  void check(const char* kernel) const {
    if (cudaError_t status = cudaGetLastError(); status != cudaSuccess)
      throw InternalError(std::string("CUDA kernel ") + kernel + " failed to launch on " + device.full_name + ": " +
                          backend::cuda::describe(status) +
                          (status == cudaErrorNoKernelImageForDevice
                               ? ". Rebuild with CMAKE_CUDA_ARCHITECTURES including this GPU's compute capability."
                               : ""));
  }
};

/// Dimensions and per-operand strides passed to a kernel by value.
struct StridedIndex {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t a[kMaxRank] = {};  // first operand (or source) strides
  std::int64_t b[kMaxRank] = {};  // second operand (or destination) strides

  /// Offsets of element `i` of the row-major box `dims` in the two operands.
  __device__ void offsets(std::int64_t i, std::int64_t& oa, std::int64_t& ob) const {
    oa = 0;
    ob = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t c = i % dims[d];
      i /= dims[d];
      oa += c * a[d];
      ob += c * b[d];
    }
  }
};

inline void require_rank(std::size_t rank, std::string_view op) {
  if (rank > static_cast<std::size_t>(kMaxRank))
    throw UnimplementedError(std::string(op) + " on a GPU supports tensors of rank up to " + std::to_string(kMaxRank) +
                             ", got rank " + std::to_string(rank) +
                             "; run it on the CPU (DeviceScope(\"/cpu:0\")) or reshape first");
}

/// Row-major strides of `shape` left-padded to `rank`, 0 where the dimension broadcasts.
inline void broadcast_strides_into(const Shape& shape, std::size_t rank, std::int64_t* out) {
  const auto strides = shape.strides();
  const std::size_t offset = rank - shape.rank();
  for (std::size_t i = 0; i < rank; ++i) out[i] = 0;
  for (std::size_t i = 0; i < shape.rank(); ++i) out[offset + i] = shape[i] == 1 ? 0 : strides[i];
}

// --- kernels ------------------------------------------------------------------------------------

/// The streaming kernels below give each thread kUnroll elements a block apart, loaded before any
/// is computed: a warp's loads stay coalesced, and each thread keeps kUnroll loads per operand in
/// flight. One element per thread left HBM3e under-used (an add of 2^26 floats moved 2.55 TB/s
/// against a 4.09 TB/s device copy on an H200, 2026-11-27).
inline constexpr int kUnroll = 4;

template <class T, class U, class F>
__global__ void map_kernel(const T* __restrict__ in, U* __restrict__ out, std::int64_t n, F f) {
  const std::int64_t tile = std::int64_t{blockDim.x} * kUnroll;
  for (std::int64_t first = blockIdx.x * tile + threadIdx.x; first < n; first += std::int64_t{gridDim.x} * tile) {
    T x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (const std::int64_t i = first + std::int64_t{u} * blockDim.x; i < n) x[u] = in[i];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (const std::int64_t i = first + std::int64_t{u} * blockDim.x; i < n) out[i] = f(x[u]);
  }
}

/// out = f(a, b) where a and b are either n elements or one (step 0).
template <class T, class F>
__global__ void zip_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, std::int64_t n,
                           std::int64_t step_a, std::int64_t step_b, F f) {
  const std::int64_t tile = std::int64_t{blockDim.x} * kUnroll;
  for (std::int64_t first = blockIdx.x * tile + threadIdx.x; first < n; first += std::int64_t{gridDim.x} * tile) {
    T x[kUnroll];
    T y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (const std::int64_t i = first + std::int64_t{u} * blockDim.x; i < n) {
        x[u] = a[i * step_a];
        y[u] = b[i * step_b];
      }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (const std::int64_t i = first + std::int64_t{u} * blockDim.x; i < n) out[i] = f(x[u], y[u]);
  }
}

template <class T, class F>
__global__ void broadcast_zip_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                     std::int64_t n, StridedIndex index, F f) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t oa = 0;
    std::int64_t ob = 0;
    index.offsets(i, oa, ob);
    out[i] = f(a[oa], b[ob]);
  }
}

/// dst[dst_base + Σ idx·b] = src[src_base + Σ idx·a] over the box `index.dims`.
template <class T>
__global__ void strided_copy_kernel(const T* __restrict__ src, T* __restrict__ dst, std::int64_t n,
                                    StridedIndex index) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t os = 0;
    std::int64_t od = 0;
    index.offsets(i, os, od);
    dst[od] = src[os];
  }
}

template <class T>
__global__ void fill_kernel(T* __restrict__ out, std::int64_t n, T value) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = value;
}

template <class T, class F>
__global__ void generate_kernel(T* __restrict__ out, std::int64_t n, F f) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = f(i);
}

/// f(i) for every index: the fused optimizer updates, which write several buffers per element.
template <class F>
__global__ void for_each_index_kernel(std::int64_t n, F f) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    f(i);
}

template <class T>
__global__ void accumulate_kernel(T* __restrict__ out, const T* __restrict__ x, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = arith::add(out[i], x[i]);
}

// --- launchers ----------------------------------------------------------------------------------

/// out[i] = f(in[i]) (U may differ from T: casts).
template <class T, class U, class F>
void map(const Device& device, const T* in, U* out, std::int64_t n, F f) {
  if (n == 0) return;
  Launch launch(device);
  map_kernel<<<blocks_for(n, kUnroll), kThreads, 0, launch.stream>>>(in, out, n, f);
  launch.check("map");
}

/// out = f(a, b) with NumPy broadcasting to `out_shape`.
template <class T, class F>
void zip(const Device& device, const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* out,
         const Shape& out_shape, std::string_view op, F f) {
  const std::int64_t n = out_shape.num_elements();
  if (n == 0) return;
  Launch launch(device);
  const std::int64_t na = a_shape.num_elements();
  const std::int64_t nb = b_shape.num_elements();
  if ((na == n || na == 1) && (nb == n || nb == 1)) {  // same shape, or a scalar operand
    zip_kernel<<<blocks_for(n, kUnroll), kThreads, 0, launch.stream>>>(a, b, out, n, na == 1 ? 0 : 1, nb == 1 ? 0 : 1,
                                                                       f);
  } else {
    const std::size_t rank = out_shape.rank();
    require_rank(rank, op);
    StridedIndex index;
    index.rank = static_cast<int>(rank);
    for (std::size_t d = 0; d < rank; ++d) index.dims[d] = out_shape[d];
    broadcast_strides_into(a_shape, rank, index.a);
    broadcast_strides_into(b_shape, rank, index.b);
    broadcast_zip_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(a, b, out, n, index, f);
  }
  launch.check("zip");
}

/// Copies the box `dims` from src (strides `src_strides`, starting at `src_offset`) to dst
/// (strides `dst_strides`, starting at `dst_offset`).
template <class T>
void strided_copy(const Device& device, const T* src, std::span<const std::int64_t> src_strides,
                  std::int64_t src_offset, T* dst, std::span<const std::int64_t> dst_strides, std::int64_t dst_offset,
                  std::span<const std::int64_t> dims, std::string_view op) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  if (n == 0) return;
  require_rank(dims.size(), op);
  Launch launch(device);
  StridedIndex index;
  index.rank = static_cast<int>(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    index.dims[d] = dims[d];
    index.a[d] = src_strides[d];
    index.b[d] = dst_strides[d];
  }
  strided_copy_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(src + src_offset, dst + dst_offset, n, index);
  launch.check("strided_copy");
}

template <class T>
void fill(const Device& device, T* out, std::int64_t n, T value) {
  if (n == 0) return;
  Launch launch(device);
  fill_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(out, n, value);
  launch.check("fill");
}

/// out[i] = f(i): range and the random generators.
template <class T, class F>
void generate(const Device& device, T* out, std::int64_t n, F f) {
  if (n == 0) return;
  Launch launch(device);
  generate_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(out, n, f);
  launch.check("generate");
}

/// f(i) for i in [0, n): one launch.
template <class F>
void for_each_index(const Device& device, std::int64_t n, F f) {
  if (n == 0) return;
  Launch launch(device);
  for_each_index_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(n, f);
  launch.check("for_each_index");
}

/// dst = src, n elements of T, on the device's stream.
template <class T>
void copy(const Device& device, T* dst, const T* src, std::int64_t n) {
  if (n == 0 || dst == src) return;
  Launch launch(device);
  DEVTENSOR_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice, launch.stream));
}

/// out = inputs[0] + inputs[1] + ... (add_n): one copy, then one accumulation per input.
template <class T>
void sum_into(const Device& device, T* out, const T* const* inputs, std::size_t count, std::int64_t n) {
  if (n == 0) return;
  Launch launch(device);
  DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(out, inputs[0], static_cast<std::size_t>(n) * sizeof(T),
                                       cudaMemcpyDeviceToDevice, launch.stream));
  for (std::size_t k = 1; k < count; ++k)
    accumulate_kernel<<<blocks_for(n), kThreads, 0, launch.stream>>>(out, inputs[k], n);
  launch.check("accumulate");
}

}  // namespace devtensor::ops::cuda
