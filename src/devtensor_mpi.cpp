// The mpi component's compiled part (Note [The mpi component's compiled part] in
// include/devtensor/config.hpp), compiled once per build tree: the parameter-server runtime that
// every program of parameter-server training runs and nobody edits (the ps task's server, the
// coordinator's dispatcher and worker loop, the roles, the remote variables and their creator).
// cmake/devtensorMultiWorkerComponent.cmake adds this object to every program that links
// devtensor::mpi and defines DEVTENSOR_MPI_COMPILED for them: their translation units see
// declarations only. Without CMake: compile this file once with the component's flags (MPI's
// include path, nlohmann_json's, -DOMPI_SKIP_MPICXX, and DEVTENSOR_COMPILED / WITH_CBLAS as the
// program's), link its object, and compile the program with -DDEVTENSOR_MPI_COMPILED; or leave
// that definition out and compile nothing extra (every translation unit compiles what it uses).
#define DEVTENSOR_COMPILING_MPI 1

#include "devtensor/coordinator/cluster_coordinator.hpp"
#include "devtensor/coordinator/parameter_server_strategy.hpp"
#include "devtensor/distribute/multi_worker/cluster_resolver.hpp"

namespace devtensor::distribute::ps_wire {

// A tensor onto the wire and off it, for every element type (ps_wire.hpp declares them to every program).
#define DEVTENSOR_WIRE_TENSOR(T)                                                      \
  template Tensor<T> WireTensor::to_tensor<T>(const Device&, std::string_view) const; \
  template void WireTensor::copy_into<T>(Tensor<T>&) const;                           \
  template Writer& Writer::put_tensor<T>(const Tensor<T>&);
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_WIRE_TENSOR)
#undef DEVTENSOR_WIRE_TENSOR
template Tensor<bool> WireTensor::to_tensor<bool>(const Device&, std::string_view) const;
template Writer& Writer::put_tensor<bool>(const Tensor<bool>&);

}  // namespace devtensor::distribute::ps_wire
