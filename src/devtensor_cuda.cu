// devtensor's GPU backend: compiled once per program, by nvcc, in the consumer's build tree
// (Note [One registry per program] in ops/registry.hpp).
//
// Linking the devtensor::cuda CMake component adds this file's object to the program; without
// CMake compile it once, in the program's mode (add -DDEVTENSOR_COMPILED in compiled mode), and
// link it with the CUDA runtime, cuBLAS and cuBLASLt:
//   nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -I<prefix>/include
//        -I<cuda>/include/cccl -c <prefix>/share/devtensor/src/devtensor_cuda.cu -o devtensor_cuda.o
//   g++ -std=c++20 ... your.o devtensor_cuda.o -L<cuda>/lib64 -lcudart -lcublas -lcublasLt
// During static initialisation it registers the CUDA platform (real GPUs appear in the Context),
// the GPU body of every op that declares one, and the kernel of fused elementwise chains; every
// translation unit of the program then reaches them through the registry, whichever compiler
// built it. It must be linked as an object
// file (an archive member that nobody references is dropped by the linker): the CMake component
// does that, also for consumers whose own code is a static library.
//
// Like TensorFlow's *_gpu.cu.cc files, this file only instantiates: every op's CUDA body is
// defined with the op (`cuda<T>` beside `cpu<T>`, for nvcc only: DEVTENSOR_CUDA_KERNEL_BODIES),
// and the op list (ops/op_list.hpp) says which ops there are; nothing here lists ops by hand.

// Defines the ops' CUDA bodies in the headers below (only this translation unit sees them).
#define DEVTENSOR_CUDA_KERNEL_BODIES 1

#include "devtensor/backend/cuda/platform.hpp"  // registers the CUDA platform
#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cuda/fused_chain.cuh"
#include "devtensor/ops/op_list.hpp"

namespace devtensor::cuda_backend {
namespace {

constexpr const char* kProvider = "devtensor::cuda (src/devtensor_cuda.cu)";

/// Registers Op's CUDA body for T when Op declares a GPU kernel for T. Ops without a body
/// (constants, views: Reshape, Identity) need none.
template <class Op, class T>
void register_gpu_body() {
  if constexpr (kernel_detail::declares_body<Op, T> && has_kernel_v<Op, gpu_t, T>)
    register_kernel<Op, gpu_t, T>(&Op::template cuda<T>, kProvider);
}
template <class Op>
void register_gpu_bodies() {
  []<class... Ts>(ops::TypeList<Ts...>) { (register_gpu_body<Op, Ts>(), ...); }(ops::AllTypes{});
}

bool register_all() {
  []<class... Ops>(ops::TypeList<Ops...>) { (register_gpu_bodies<Ops>(), ...); }(ops::BuiltinOps{});
  ops::register_gpu_fused_chain(&ops::cuda::chain_kernel);  // ops/fused_chain.hpp
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
}  // namespace devtensor::cuda_backend
