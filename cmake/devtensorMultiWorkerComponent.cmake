# The multi-worker components, for our build tree and for the installed package alike (header-only:
# they only add dependencies to the core target named by _devtensor_core_target).
#   devtensor::cluster_resolver  TF_CONFIG parsing (nlohmann_json)
#   devtensor::mpi               MultiWorkerMirroredStrategy over MPI (MPI::MPI_CXX, C API only)
# Each is defined only when its dependencies are found.
if(NOT TARGET devtensor_cluster_resolver)
  find_package(nlohmann_json 3.11 CONFIG QUIET)
  if(nlohmann_json_FOUND)
    add_library(devtensor_cluster_resolver INTERFACE IMPORTED GLOBAL)
    target_link_libraries(devtensor_cluster_resolver INTERFACE ${_devtensor_core_target} nlohmann_json::nlohmann_json)
    add_library(devtensor::cluster_resolver ALIAS devtensor_cluster_resolver)
  endif()
endif()
if(TARGET devtensor_cluster_resolver AND NOT TARGET devtensor_mpi)
  # Open MPI and MPICH take different mpiexec flags: record which one this is.
  set(MPI_DETERMINE_LIBRARY_VERSION ON)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    add_library(devtensor_mpi INTERFACE IMPORTED GLOBAL)
    target_link_libraries(devtensor_mpi INTERFACE devtensor_cluster_resolver MPI::MPI_CXX)
    target_compile_definitions(devtensor_mpi INTERFACE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
    add_library(devtensor::mpi ALIAS devtensor_mpi)
  endif()
endif()
