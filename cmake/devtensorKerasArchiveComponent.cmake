# The keras_archive component, for our build tree and for the installed package alike: Keras 3
# `.keras` model files (model.save / nn::load_model, to_json / nn::model_from_json;
# <devtensor/saving/keras_archive.hpp>). Its code, over HDF5, libzip and nlohmann_json, is compiled
# once per build tree (src/devtensor_keras_archive.cpp, an object every program linking the
# component gets, as devtensor::cuda's kernels): a program's own files include none of it.
# Defined only when HDF5, libzip and nlohmann_json are found (Debian: libhdf5-dev, libzip-dev,
# nlohmann-json3-dev). Inputs: _devtensor_source_dir; include devtensorHdf5Component.cmake first.
include("${CMAKE_CURRENT_LIST_DIR}/devtensorOptimizeWithoutBuildType.cmake")
if(NOT TARGET devtensor_keras_archive AND TARGET devtensor_hdf5)
  # libzip by its header and library, not its CMake package: Debian's (libzip-dev 1.7.3) names the
  # command-line tools of other packages (/usr/bin/zipcmp) and fails to load without them.
  find_path(DEVTENSOR_LIBZIP_INCLUDE_DIR zip.h)
  find_library(DEVTENSOR_LIBZIP_LIBRARY zip)
  find_package(nlohmann_json 3.11 QUIET)
  if(DEVTENSOR_LIBZIP_INCLUDE_DIR AND DEVTENSOR_LIBZIP_LIBRARY AND TARGET nlohmann_json::nlohmann_json)
    # What the code needs to compile, and what a program that includes its header needs.
    add_library(devtensor_keras_archive_deps INTERFACE)
    target_include_directories(devtensor_keras_archive_deps SYSTEM INTERFACE "${DEVTENSOR_LIBZIP_INCLUDE_DIR}")
    target_link_libraries(devtensor_keras_archive_deps INTERFACE devtensor_hdf5 "${DEVTENSOR_LIBZIP_LIBRARY}"
                          nlohmann_json::nlohmann_json)
    target_compile_definitions(devtensor_keras_archive_deps INTERFACE DEVTENSOR_WITH_KERAS_ARCHIVE=1)
    add_library(devtensor_keras_archive_code OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_keras_archive.cpp")
    target_link_libraries(devtensor_keras_archive_code PRIVATE devtensor_keras_archive_deps)
    target_compile_features(devtensor_keras_archive_code PRIVATE cxx_std_20)
    set_target_properties(devtensor_keras_archive_code PROPERTIES POSITION_INDEPENDENT_CODE ON)
    devtensor_optimize_without_build_type(devtensor_keras_archive_code)  # as src/devtensor.cpp
    # What model.save / nn::load_model check at compile time (a call without the component does
    # not compile) comes with DEVTENSOR_WITH_KERAS_ARCHIVE; the bodies come with the object.
    add_library(devtensor_keras_archive INTERFACE)
    target_link_libraries(devtensor_keras_archive INTERFACE devtensor_keras_archive_deps
                          $<TARGET_OBJECTS:devtensor_keras_archive_code>)
    add_library(devtensor::keras_archive ALIAS devtensor_keras_archive)
  endif()
endif()
