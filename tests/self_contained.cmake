# The repository explains itself (test docs.self_contained): no file cites the design notes that
# live outside it (their section numbers, file names, or the folder they sit in). Say the
# behaviour, or cite TensorFlow / a public document instead.
#
# Usage: cmake -DROOT=<folder to scan> -P self_contained.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "self_contained.cmake: pass -DROOT=<folder>")
endif()
# Split so that this file does not match itself.
set(_spec "SP" "EC")
list(JOIN _spec "" _spec)
set(_pattern "${_spec} [0-9§]|${_spec}[.]md|${_spec}, |${_spec} example|DES" "IGN[.]md|DESIGN §|TOOL" "CHAIN|STY" "LE[.]md|WAVE5-|[.][.]/shared/")
list(JOIN _pattern "" _pattern)
file(GLOB_RECURSE _files "${ROOT}/*.hpp" "${ROOT}/*.cpp" "${ROOT}/*.cu" "${ROOT}/*.cuh" "${ROOT}/*.cmake"
     "${ROOT}/*.txt" "${ROOT}/*.md" "${ROOT}/*.py" "${ROOT}/*.sh" "${ROOT}/*.json" "${ROOT}/scripts/*")
set(_problems "")
foreach(_file IN LISTS _files)
  if(_file MATCHES "/build/|/readme_fixture/outside/|/self_contained[.]cmake$" AND NOT ROOT MATCHES "readme_fixture")
    continue()
  endif()
  file(STRINGS "${_file}" _hits REGEX "${_pattern}")
  foreach(_hit IN LISTS _hits)
    file(RELATIVE_PATH _relative "${ROOT}" "${_file}")
    string(STRIP "${_hit}" _hit)
    string(APPEND _problems "  ${_relative}: ${_hit}\n")
  endforeach()
endforeach()
if(_problems)
  message(FATAL_ERROR "Citations of notes outside the repository (say the behaviour instead):\n${_problems}")
endif()
list(LENGTH _files _count)
message(STATUS "self-contained: ${_count} files cite nothing outside the repository")
