# FindCUDNN
# ---------
# cuDNN 9 ships neither a CMake config nor a pkg-config file, and it lives in different places:
# the CUDA toolkit's directories (NVIDIA's tarballs, this project's machines), or only inside a
# Python environment's `nvidia/cudnn/{include,lib}` (the nvidia-cudnn-cu* wheel PyTorch brings,
# with versioned `libcudnn.so.9` names only). devtensor ships this module and installs it next to
# its package config.
#
# Result: CUDNN_FOUND, CUDNN_VERSION, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY, CUDNN_LIBRARY_DIR and the
# imported target CUDNN::cudnn, which links CUDA::cudart and sets the run path of whatever links it
# to CUDNN_LIBRARY_DIR: the program finds libcudnn.so.9 without LD_LIBRARY_PATH, and cuDNN's own
# libraries (libcudnn_cnn.so.9, ...: loaded by name at run time, found through their $ORIGIN run
# path) come from that one directory.
# Hints: CUDNN_ROOT (variable or environment), CUDNN_HOME (environment), the CUDA toolkit, then
# the `nvidia/cudnn` package of Python3_EXECUTABLE or of the `python3` on PATH.
include(FindPackageHandleStandardArgs)
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()

set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDNN_HOME} ${CUDAToolkit_LIBRARY_ROOT})
# A Python environment's wheel: nvidia.cudnn is a namespace package (no __file__), so ask __path__.
set(_cudnn_python "${Python3_EXECUTABLE}")
if(NOT _cudnn_python)
  find_program(_cudnn_python NAMES python3)
endif()
if(_cudnn_python)
  execute_process(COMMAND "${_cudnn_python}" -c "import nvidia.cudnn as c; print(list(c.__path__)[0])"
    OUTPUT_VARIABLE _cudnn_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _cudnn_rc)
  if(_cudnn_rc EQUAL 0 AND IS_DIRECTORY "${_cudnn_wheel}")
    list(APPEND _cudnn_hints "${_cudnn_wheel}")
  endif()
endif()

find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_cudnn_suffixes lib/${CMAKE_LIBRARY_ARCHITECTURE} lib lib64)
else()
  set(_cudnn_suffixes lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
endif()
# The versioned name too: a wheel has no libcudnn.so link.
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES ${_cudnn_suffixes})

if(CUDNN_INCLUDE_DIR)
  set(_cudnn_version_header "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  if(NOT EXISTS "${_cudnn_version_header}")
    set(_cudnn_version_header "${CUDNN_INCLUDE_DIR}/cudnn.h")
  endif()
  file(STRINGS "${_cudnn_version_header}" _cudnn_defines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  foreach(_line IN LISTS _cudnn_defines)
    string(REGEX MATCH "CUDNN_(MAJOR|MINOR|PATCHLEVEL) +([0-9]+)" _ "${_line}")
    set(_cudnn_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endforeach()
  if(DEFINED _cudnn_MAJOR)
    set(CUDNN_VERSION "${_cudnn_MAJOR}.${_cudnn_MINOR}.${_cudnn_PATCHLEVEL}")
  endif()
endif()

find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION)

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  get_filename_component(CUDNN_LIBRARY_DIR "${CUDNN_LIBRARY}" DIRECTORY)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}"
    # Also in installed programs (CMake's build-tree run path goes away at install).
    INTERFACE_LINK_OPTIONS "LINKER:-rpath,${CUDNN_LIBRARY_DIR}")
  if(TARGET CUDA::cudart)
    set_property(TARGET CUDNN::cudnn APPEND PROPERTY INTERFACE_LINK_LIBRARIES CUDA::cudart)
  endif()
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
