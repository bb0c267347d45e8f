# The header layering, checked by `cmake -P` (test `headers.layering`): every header includes only
# its own folder and the floors below it, never a floor above nor a sibling on its own floor.
#
#   core (and the top-level config, error, fwd, version) → memory → device → tensor | backend →
#   ops → variables | data → autodiff → distribute → graph → nn → testing | hdf5 | coordinator → saving
#
# Strategies plug their variables in through a variable creator, a device's memory statistics
# live with the devices, the TF32 switch is configuration (core). Keras's models sit above the
# traced functions their fit runs, as keras sits above tf.function. The umbrella devtensor.hpp and
# the topic headers beside it (tensors, graph, distribute, layers, keras, coordinator) are the top.
# Usage: cmake -DINCLUDE_DIR=<repo>/include -P layering.cmake
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "layering.cmake: pass -DINCLUDE_DIR=<repository>/include")
endif()
set(_floor_core 0)
set(_floor_memory 1)
set(_floor_device 2)
set(_floor_tensor 3)
set(_floor_backend 3)
set(_floor_ops 4)
set(_floor_variables 5)
set(_floor_data 5)
set(_floor_autodiff 6)
set(_floor_distribute 7)
set(_floor_graph 8)
set(_floor_nn 9)
set(_floor_testing 10)
set(_floor_hdf5 10)
# Parameter-server training: its ps tasks run the optimizers' rules (nn), over MPI.
set(_floor_coordinator 10)
# Keras's .keras archives: a model's config (nn) and its weights file (hdf5) in a zip.
set(_floor_saving 11)

# The folder a path under devtensor/ belongs to: its first component, "core" for the top-level
# files (the umbrella header is skipped by the caller).
function(_layer_of path out)
  if(path MATCHES "^([a-z0-9_]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "core" PARENT_SCOPE)
  endif()
endfunction()

set(_violations "")
file(GLOB_RECURSE _headers "${INCLUDE_DIR}/devtensor/*.hpp" "${INCLUDE_DIR}/devtensor/*.cuh")
foreach(_header IN LISTS _headers)
  file(RELATIVE_PATH _relative "${INCLUDE_DIR}/devtensor" "${_header}")
  if(_relative MATCHES "^(devtensor|tensors|graph|distribute|layers|keras|coordinator)\\.hpp$")
    continue()  # the umbrella and the topic headers: the top
  endif()
  _layer_of("${_relative}" _own)
  if(NOT DEFINED _floor_${_own})
    string(APPEND _violations "  devtensor/${_relative}: folder '${_own}' has no floor in layering.cmake\n")
    continue()
  endif()
  file(STRINGS "${_header}" _includes REGEX "^#include \"devtensor/")
  foreach(_include IN LISTS _includes)
    string(REGEX REPLACE "^#include \"devtensor/([^\"]+)\".*" "\\1" _target "${_include}")
    _layer_of("${_target}" _other)
    if(_other STREQUAL _own)
      continue()
    endif()
    if(NOT DEFINED _floor_${_other})
      string(APPEND _violations "  devtensor/${_relative}: ${_include} (folder '${_other}' has no floor)\n")
    elseif(_floor_${_other} GREATER_EQUAL _floor_${_own})
      string(APPEND _violations
             "  devtensor/${_relative} (${_own}, floor ${_floor_${_own}}): ${_include} (${_other}, floor ${_floor_${_other}})\n")
    endif()
  endforeach()
endforeach()
if(_violations)
  message(FATAL_ERROR "Headers include a layer above their own, or a sibling on their floor:\n${_violations}"
                      "Move the dependency up (a strategy plugs into variables through detail::VariableCreator), "
                      "or move the code to the layer that owns it.")
endif()
message(STATUS "layering: clean")
