# The header layering, checked by `cmake -P` (test `headers.layering`): distribution and Keras sit
# on top. Variables, tapes, ops, tensors, devices and memory include nothing from distribute/ or
# nn/ (strategies plug their variables in through a variable creator), and distribute/ includes
# nothing from nn/. Usage: cmake -DINCLUDE_DIR=<repo>/include -P layering.cmake
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "layering.cmake: pass -DINCLUDE_DIR=<repository>/include")
endif()
set(_rules
  "core|tensor|memory|device|ops|backend|autodiff|variables|data|testing:distribute|nn"
  "distribute:nn")
set(_violations "")
foreach(_rule IN LISTS _rules)
  string(REPLACE ":" ";" _parts "${_rule}")
  list(GET _parts 0 _lower)
  list(GET _parts 1 _upper)
  file(GLOB_RECURSE _headers "${INCLUDE_DIR}/devtensor/*.hpp")
  foreach(_header IN LISTS _headers)
    file(RELATIVE_PATH _relative "${INCLUDE_DIR}" "${_header}")
    if(NOT _relative MATCHES "^devtensor/(${_lower})/")
      continue()
    endif()
    file(STRINGS "${_header}" _includes REGEX "^#include \"devtensor/(${_upper})/")
    foreach(_include IN LISTS _includes)
      string(APPEND _violations "  ${_relative}: ${_include}\n")
    endforeach()
  endforeach()
endforeach()
if(_violations)
  message(FATAL_ERROR "Headers include a layer above their own:\n${_violations}"
                      "Move the dependency up (a strategy plugs into variables through detail::VariableCreator), "
                      "or move the code to the layer that owns it.")
endif()
message(STATUS "layering: clean")
