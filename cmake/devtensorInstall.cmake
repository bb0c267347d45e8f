# install/export the fmt/json way: one export set per component, an architecture-independent version
# file, everything under share/cmake/devtensor (a header-only package has no lib/ to speak of).
include(CMakePackageConfigHelpers)
set(DEVTENSOR_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATAROOTDIR}/cmake/devtensor" CACHE STRING
    "Where devtensor's CMake package files are installed")

install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING
        PATTERN "*.hpp" PATTERN "*.cuh")
install(TARGETS devtensor devtensor_header_only EXPORT devtensorTargets)
install(EXPORT devtensorTargets NAMESPACE devtensor:: DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
export(EXPORT devtensorTargets NAMESPACE devtensor:: FILE "${PROJECT_BINARY_DIR}/devtensorTargets.cmake")

# The CUDA and NCCL components install as sources: their kernel translation units and the CMake
# file that compiles them in the consumer's tree (cmake/devtensorCudaComponent.cmake).
set(DEVTENSOR_INSTALL_SOURCEDIR "${CMAKE_INSTALL_DATADIR}/devtensor/src" CACHE STRING
    "Where devtensor's sources (devtensor.cpp, devtensor_cuda.cu, devtensor_nccl.cpp) are installed")
install(FILES src/devtensor.cpp src/devtensor_cuda.cu src/devtensor_nccl.cpp src/devtensor_keras_archive.cpp src/devtensor_mpi.cpp
        src/devtensor_onednn.cpp src/devtensor_cudnn.cpp DESTINATION "${DEVTENSOR_INSTALL_SOURCEDIR}")

configure_package_config_file(cmake/devtensorConfig.cmake.in
  "${PROJECT_BINARY_DIR}/devtensorConfig.cmake"
  INSTALL_DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}"
  PATH_VARS DEVTENSOR_INSTALL_SOURCEDIR)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/devtensorConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES
  "${PROJECT_BINARY_DIR}/devtensorConfig.cmake"
  "${PROJECT_BINARY_DIR}/devtensorConfigVersion.cmake"
  cmake/FindNCCL.cmake
  cmake/FindCUDNN.cmake
  cmake/devtensorCompiledComponent.cmake
  cmake/devtensorCudaComponent.cmake
  cmake/devtensorOnednnComponent.cmake
  cmake/devtensorMultiWorkerComponent.cmake
  cmake/devtensorHdf5Component.cmake
  cmake/devtensorKerasArchiveComponent.cmake
  cmake/devtensorOptimizeWithoutBuildType.cmake
  DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
