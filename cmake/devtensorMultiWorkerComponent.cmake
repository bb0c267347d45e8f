# The multi-worker components, for our build tree and for the installed package alike:
#   devtensor::cluster_resolver  TF_CONFIG parsing (nlohmann_json); header-only
#   devtensor::mpi               MultiWorkerMirroredStrategy and parameter-server training over MPI
#                                (MPI::MPI_CXX, C API only)
# devtensor::mpi's runtime (src/devtensor_mpi.cpp: the parameter-server runtime and TF_CONFIG's
# JSON) is compiled once per build tree, into an object every program linking the component gets,
# and its users get DEVTENSOR_MPI_COMPILED: their translation units see declarations only (Note
# [The mpi component's compiled part] in include/devtensor/config.hpp).
# Each is defined only when its dependencies are found. Inputs: _devtensor_core_target (the core
# target they add to) and _devtensor_source_dir (where devtensor_mpi.cpp is).
include("${CMAKE_CURRENT_LIST_DIR}/devtensorOptimizeWithoutBuildType.cmake")
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
    # What the component's code needs to compile, and what a program including its headers needs.
    add_library(devtensor_mpi_deps INTERFACE)
    target_link_libraries(devtensor_mpi_deps INTERFACE devtensor_cluster_resolver MPI::MPI_CXX)
    target_compile_definitions(devtensor_mpi_deps INTERFACE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
    add_library(devtensor_mpi_code OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_mpi.cpp")
    target_link_libraries(devtensor_mpi_code PRIVATE devtensor_mpi_deps)
    target_compile_features(devtensor_mpi_code PRIVATE cxx_std_20)
    set_target_properties(devtensor_mpi_code PROPERTIES POSITION_INDEPENDENT_CODE ON)
    devtensor_optimize_without_build_type(devtensor_mpi_code)  # as src/devtensor.cpp
    add_library(devtensor_mpi INTERFACE)
    target_link_libraries(devtensor_mpi INTERFACE devtensor_mpi_deps $<TARGET_OBJECTS:devtensor_mpi_code>)
    target_compile_definitions(devtensor_mpi INTERFACE DEVTENSOR_MPI_COMPILED)
    add_library(devtensor::mpi ALIAS devtensor_mpi)
  endif()
endif()
