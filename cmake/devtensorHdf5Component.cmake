# The hdf5 component, for our build tree and for the installed package alike (header-only: it only
# adds the HDF5 C library to the core target named by _devtensor_core_target).
#   devtensor::hdf5  Keras weights files (model.save_weights / load_weights; <devtensor/hdf5/weights.hpp>)
# Defined only when HDF5's C library is found (Debian: libhdf5-dev).
if(NOT TARGET devtensor_hdf5)
  find_package(HDF5 QUIET COMPONENTS CXX)  # CXX: projects need not enable C; we call the C API
  if(HDF5_FOUND AND TARGET HDF5::HDF5)
    add_library(devtensor_hdf5 INTERFACE IMPORTED GLOBAL)
    target_link_libraries(devtensor_hdf5 INTERFACE ${_devtensor_core_target} HDF5::HDF5)
    # What model.save_weights / load_weights check at compile time (a call without the component
    # does not compile), and what makes <devtensor/devtensor.hpp> include the weights-file code.
    target_compile_definitions(devtensor_hdf5 INTERFACE DEVTENSOR_WITH_HDF5=1)
    # HDF5's macros use C casts: its headers are system headers, so they warn nowhere.
    get_target_property(_devtensor_hdf5_includes HDF5::HDF5 INTERFACE_INCLUDE_DIRECTORIES)
    if(_devtensor_hdf5_includes)
      target_include_directories(devtensor_hdf5 SYSTEM INTERFACE ${_devtensor_hdf5_includes})
    endif()
    add_library(devtensor::hdf5 ALIAS devtensor_hdf5)
  endif()
endif()
