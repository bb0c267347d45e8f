# FindNCCL
# --------
# NCCL ships neither a CMake config nor a pkg-config file, so devtensor ships this module and
# installs it next to its package config.
#
# Result: NCCL_FOUND, NCCL_VERSION, NCCL_INCLUDE_DIR, NCCL_LIBRARY and the imported target NCCL::NCCL
# (which links CUDA::cudart because nccl.h includes cuda_runtime.h).
# Hints: NCCL_ROOT (variable or environment), NCCL_HOME (environment), the CUDA toolkit directories.
include(FindPackageHandleStandardArgs)
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()

set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT})
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
# Debian/Ubuntu packages put the library in lib/<multiarch> and may leave `libnccl.so` a broken
# (even self-referencing) symlink beside a good `libnccl.so.2`: look in lib/<arch> too, accept the
# versioned name, and drop a candidate that does not resolve to a file.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_nccl_suffixes lib/${CMAKE_LIBRARY_ARCHITECTURE} lib lib64)
else()
  set(_nccl_suffixes lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
endif()
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES ${_nccl_suffixes})
if(NCCL_LIBRARY)
  if(NOT EXISTS "${NCCL_LIBRARY}")  # EXISTS follows the link: false when it is broken
    unset(NCCL_LIBRARY CACHE)
    find_library(NCCL_LIBRARY NAMES libnccl.so.2
      HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
      PATH_SUFFIXES ${_nccl_suffixes})
  endif()
endif()

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_defines REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_line IN LISTS _nccl_defines)
    string(REGEX MATCH "NCCL_(MAJOR|MINOR|PATCH) ([0-9]+)" _ "${_line}")
    set(_nccl_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endforeach()
  if(DEFINED _nccl_MAJOR)
    set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
  endif()
endif()

find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  if(TARGET CUDA::cudart)
    set_property(TARGET NCCL::NCCL APPEND PROPERTY INTERFACE_LINK_LIBRARIES CUDA::cudart)
  endif()
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
