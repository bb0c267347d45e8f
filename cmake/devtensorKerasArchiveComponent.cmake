# The keras_archive component, for our build tree and for the installed package alike (header-only:
# it adds libzip and nlohmann_json to the hdf5 component, which it needs for the weights inside).
#   devtensor::keras_archive  Keras 3 `.keras` model files (model.save / nn::load_model, to_json /
#                             nn::model_from_json; <devtensor/saving/keras_archive.hpp>)
# Defined only when HDF5, libzip and nlohmann_json are found (Debian: libhdf5-dev, libzip-dev,
# nlohmann-json3-dev). Include devtensorHdf5Component.cmake first.
if(NOT TARGET devtensor_keras_archive AND TARGET devtensor_hdf5)
  # libzip by its header and library, not its CMake package: Debian's (libzip-dev 1.7.3) names the
  # command-line tools of other packages (/usr/bin/zipcmp) and fails to load without them.
  find_path(DEVTENSOR_LIBZIP_INCLUDE_DIR zip.h)
  find_library(DEVTENSOR_LIBZIP_LIBRARY zip)
  find_package(nlohmann_json 3.11 QUIET)
  if(DEVTENSOR_LIBZIP_INCLUDE_DIR AND DEVTENSOR_LIBZIP_LIBRARY AND TARGET nlohmann_json::nlohmann_json)
    add_library(devtensor_keras_archive INTERFACE IMPORTED GLOBAL)
    target_include_directories(devtensor_keras_archive SYSTEM INTERFACE "${DEVTENSOR_LIBZIP_INCLUDE_DIR}")
    target_link_libraries(devtensor_keras_archive INTERFACE devtensor_hdf5 "${DEVTENSOR_LIBZIP_LIBRARY}"
                          nlohmann_json::nlohmann_json)
    # What model.save / nn::load_model check at compile time (a call without the component does
    # not compile), and what makes <devtensor/devtensor.hpp> include the archive code.
    target_compile_definitions(devtensor_keras_archive INTERFACE DEVTENSOR_WITH_KERAS_ARCHIVE=1)
    add_library(devtensor::keras_archive ALIAS devtensor_keras_archive)
  endif()
endif()
