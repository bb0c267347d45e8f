#pragma once
/// @file config.hpp
/// @brief Macros that describe how this translation unit is compiled.
///
/// Note [One program, one registry]
/// A program mixes .cpp files compiled by the host compiler and .cu files compiled by nvcc. Every
/// function has one body whatever compiles it: GPU kernels are not compiled into the files that
/// call them but into one translation unit per program (src/devtensor_cuda.cu, which the
/// devtensor::cuda component adds to the build), and reached through the kernel registry
/// (ops/registry.hpp). So no inline ABI namespace is needed: the one-definition rule holds as it
/// does for any header-only library.

#include "devtensor/version.hpp"

#if defined(__CUDACC__)
#define DEVTENSOR_HOST_DEVICE __host__ __device__
#define DEVTENSOR_DEVICE __device__
#define DEVTENSOR_DEVICE_CODE 1
#else
#define DEVTENSOR_HOST_DEVICE
#define DEVTENSOR_DEVICE
#define DEVTENSOR_DEVICE_CODE 0
#endif

#define DEVTENSOR_INLINE inline

/// Note [Compiled mode]
/// devtensor works in two modes, as fmt and spdlog do:
/// - header-only (a bare `#include`, nothing defined): every translation unit compiles what it
///   uses, kernel bodies, the Context, the gradients, the layers; correct and self-contained;
/// - compiled (DEVTENSOR_COMPILED defined; the CMake target devtensor::devtensor does it and links
///   src/devtensor.cpp, compiled once per build tree): user translation units see declarations only
///   for the CPU kernel bodies of devtensor's ops, the Context's discovery and allocators, the
///   gradients, the Keras model's training loop, and the non-template code every program runs
///   but nobody edits (device names, shapes, printing, the placer's and the allocator's slow
///   paths, the construction of error messages); src/devtensor.cpp (which defines
///   DEVTENSOR_COMPILING_LIBRARY) holds their one definition. Hot paths stay inline (a cached
///   placement, a shape copy), their rare branches call out of line. Templates users instantiate
///   with their own types stay in the headers.
/// DEVTENSOR_HEADER_DEFINITIONS says whether this translation unit sees those definitions;
/// DEVTENSOR_DEFINITION marks them: `inline` header-only, strong in src/devtensor.cpp.
#if defined(DEVTENSOR_COMPILING_LIBRARY)
#define DEVTENSOR_HEADER_DEFINITIONS 1
#define DEVTENSOR_DEFINITION
#elif defined(DEVTENSOR_COMPILED)
#define DEVTENSOR_HEADER_DEFINITIONS 0
#define DEVTENSOR_DEFINITION inline
#else
#define DEVTENSOR_HEADER_DEFINITIONS 1
#define DEVTENSOR_DEFINITION inline
#endif

/// On a virtual member's declaration in its class: `inline` header-only, so that the class has no
/// key function and its vtable is emitted only where it is used (an out-of-class inline
/// definition would make every translation unit emit it); nothing in compiled mode, where the
/// library's definition makes it the key function and the vtable is emitted there alone.
#if defined(DEVTENSOR_COMPILING_LIBRARY) || defined(DEVTENSOR_COMPILED)
#define DEVTENSOR_HEADER_INLINE
#else
#define DEVTENSOR_HEADER_INLINE inline
#endif

/// Note [Explicit instantiations]
/// In compiled mode the graph-mode half of the public ops (op_detail::graph_op: the node, its
/// kernel, the shape checks; DEVTENSOR_GRAPH_OP) is instantiated once, in src/devtensor.cpp, for
/// the common element types (float, double, int32, int64), and user translation units see an
/// explicit instantiation declaration of each (Kokkos's ETI). That code was most of a test
/// translation unit at -O0. The eager path stays in the user's translation unit, inline: it is
/// the 1-element op's hot path (instantiating the public functions themselves in the library made
/// the 1-element add 126 instructions longer, 2 735 instead of 2 609). Each op family lists its
/// instances at the end of its header; variables/ lists Variable's constructor (it makes the local
/// variable, whose virtual functions bring its updates' kernels); distribute/ lists the distributed
/// variables' constructor (make_distributed_variable), MirroredStrategy over its cross-device ops
/// and DistributedDataset<float, float>; data/ Dataset<float, float> and <float, int32>.
/// Templates over a closed set of types are defined for the library only and instantiated there
/// for every member of the set: GradientTape::gradient (float and double, src/devtensor.cpp), the
/// parameter-server wire's tensors (every element type, src/devtensor_mpi.cpp). A member that
/// should stay in the library is defined out of its class and not `inline`: GCC instantiates and
/// optimizes an inline member (one defined in its class) despite `extern template`, in case it
/// inlines it. The library pays: src/devtensor.cpp compiles ~30 % longer, once per build tree
/// (benchmarks/RESULTS.md). DEVTENSOR_EXTERN_TEMPLATE is `extern template` for users,
/// `template` in the library, and undefined header-only (every translation unit instantiates
/// what it uses).
#if defined(DEVTENSOR_COMPILING_LIBRARY)
#define DEVTENSOR_EXTERN_TEMPLATE template
#elif defined(DEVTENSOR_COMPILED)
#define DEVTENSOR_EXTERN_TEMPLATE extern template
#endif
/// M(T) for each element type that has explicit instances.
#define DEVTENSOR_FOR_INSTANCE_TYPES(M) M(float) M(double) M(std::int32_t) M(std::int64_t)

/// Note [The mpi component's compiled part]
/// The parameter-server runtime (the ps task's server, the coordinator's dispatcher and worker
/// loop, the roles, the remote variables and their creator: ~200 KB of object code, 10 s of a
/// translation unit) is compiled once per build tree as well: src/devtensor_mpi.cpp (which
/// defines DEVTENSOR_COMPILING_MPI) holds it, and the CMake target devtensor::mpi links its object
/// and gives its users DEVTENSOR_MPI_COMPILED, so their translation units see declarations only.
/// Without that definition (a bare include, no CMake), every translation unit compiles what it
/// uses, as header-only devtensor does. DEVTENSOR_MPI_DEFINITIONS and DEVTENSOR_MPI_DEFINITION
/// play the roles of DEVTENSOR_HEADER_DEFINITIONS and DEVTENSOR_DEFINITION for that code.
#if defined(DEVTENSOR_COMPILING_MPI)
#define DEVTENSOR_MPI_DEFINITIONS 1
#define DEVTENSOR_MPI_DEFINITION
#elif defined(DEVTENSOR_MPI_COMPILED)
#define DEVTENSOR_MPI_DEFINITIONS 0
#define DEVTENSOR_MPI_DEFINITION inline
#else
#define DEVTENSOR_MPI_DEFINITIONS 1
#define DEVTENSOR_MPI_DEFINITION inline
#endif

/// Whether this translation unit compiles the CPU bodies of devtensor's ops (the loops, the CBLAS
/// calls): header-only, every translation unit does, for the ops it runs; in compiled mode only
/// src/devtensor.cpp does, and the others call the bodies it instantiated.
#define DEVTENSOR_CPU_KERNEL_BODIES DEVTENSOR_HEADER_DEFINITIONS
/// The CUDA bodies are compiled by src/devtensor_cuda.cu alone, which defines
/// DEVTENSOR_CUDA_KERNEL_BODIES before including anything.

/// Process-wide singletons are function-local statics in inline functions. With default visibility
/// the dynamic linker unifies them across shared libraries (rapidsai/rmm#826 is what happens when
/// it does not); devtensor assumes one copy of its state per process and says so in the README.
#if defined(__GNUC__) || defined(__clang__)
#define DEVTENSOR_EXPORT __attribute__((visibility("default")))
#else
#define DEVTENSOR_EXPORT
#endif

/// A rarely taken path kept out of its caller's body (graph mode's branch in run_op), so that the
/// eager path's inlining does not change with it.
#if defined(__GNUC__) || defined(__clang__)
#define DEVTENSOR_COLD __attribute__((noinline, cold))
#else
#define DEVTENSOR_COLD
#endif

/// A loop GCC should vectorise although the program is built with -O2: GCC 12 at -O2 vectorises
/// no loop with a runtime trip count (Clang does). For small hot loops only (a fused node's
/// per-block scalar functions), whose results do not change: elementwise IEEE operations.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__INTEL_LLVM_COMPILER)
#define DEVTENSOR_VECTORIZE __attribute__((optimize("tree-vectorize", "vect-cost-model=cheap")))
#else
#define DEVTENSOR_VECTORIZE
#endif

#define DEVTENSOR_STRINGIFY_IMPL(x) #x
#define DEVTENSOR_STRINGIFY(x) DEVTENSOR_STRINGIFY_IMPL(x)
