# install/export the fmt/json way: one export set per component, an architecture-independent version
# file, everything under share/cmake/devtensor (a header-only package has no lib/ to speak of).
include(CMakePackageConfigHelpers)
set(DEVTENSOR_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATAROOTDIR}/cmake/devtensor" CACHE STRING
    "Where devtensor's CMake package files are installed")

install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING
        PATTERN "*.hpp" PATTERN "*.cuh")
install(TARGETS devtensor EXPORT devtensorTargets)
install(EXPORT devtensorTargets NAMESPACE devtensor:: DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
export(EXPORT devtensorTargets NAMESPACE devtensor:: FILE "${PROJECT_BINARY_DIR}/devtensorTargets.cmake")

# Installing a component needs no CUDA on the installing machine as long as nothing builds against it.
if(TARGET devtensor_cuda)
  install(TARGETS devtensor_cuda EXPORT devtensorCudaTargets)
  install(EXPORT devtensorCudaTargets NAMESPACE devtensor:: DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
endif()
if(TARGET devtensor_nccl)
  install(TARGETS devtensor_nccl EXPORT devtensorNcclTargets)
  install(EXPORT devtensorNcclTargets NAMESPACE devtensor:: DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
endif()

configure_package_config_file(cmake/devtensorConfig.cmake.in
  "${PROJECT_BINARY_DIR}/devtensorConfig.cmake"
  INSTALL_DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/devtensorConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES
  "${PROJECT_BINARY_DIR}/devtensorConfig.cmake"
  "${PROJECT_BINARY_DIR}/devtensorConfigVersion.cmake"
  cmake/FindNCCL.cmake
  DESTINATION "${DEVTENSOR_INSTALL_CMAKEDIR}")
