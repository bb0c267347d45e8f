# Options follow "is this the top-level project" (json's JSON_BuildTests, fmt's FMT_MASTER_PROJECT):
# a project that pulls devtensor in with add_subdirectory or FetchContent builds none of our tests.
include(GNUInstallDirs)
include(CMakeDependentOption)

option(DEVTENSOR_BUILD_TESTS "Build and register devtensor's tests" ${PROJECT_IS_TOP_LEVEL})
option(DEVTENSOR_BUILD_EXAMPLES "Build and register devtensor's examples" ${PROJECT_IS_TOP_LEVEL})
option(DEVTENSOR_BUILD_BENCHMARKS "Build devtensor's benchmarks (needs Google Benchmark)" ${PROJECT_IS_TOP_LEVEL})
option(DEVTENSOR_CPU_SUITES "With the tests: build and register the CPU unit suites, the multi-process (MPI) tests and every example; OFF in CI's main stage, after the sanitizer stages ran them" ON)
option(DEVTENSOR_INSTALL "Generate devtensor's install and export rules" ${PROJECT_IS_TOP_LEVEL})
option(DEVTENSOR_COMPILED "devtensor::devtensor compiles src/devtensor.cpp once per build tree and its users see declarations (faster builds); OFF: header-only like devtensor::header_only" ON)
option(DEVTENSOR_STRICT_PLACEMENT "A GPU-tagged call without a GPU kernel is a compile error" OFF)
option(DEVTENSOR_WARNINGS_AS_ERRORS "Treat warnings as errors in devtensor's own targets" ${PROJECT_IS_TOP_LEVEL})
set(DEVTENSOR_SANITIZE "" CACHE STRING "Sanitizers for devtensor's own targets: '', 'address,undefined' or 'thread'")
set(DEVTENSOR_FUZZ_SECONDS "20" CACHE STRING "How long the parser fuzz test runs inside ctest")
option(DEVTENSOR_BENCHMARKS_SYNTAX_ONLY "Check the benchmarks' C++ sources with the compiler's front end (-fsyntax-only, cmake/syntax_only.sh) instead of building them: CI's main stage keeps them compiling without the code generation of programs it never runs (about two thirds of each TU's time); .cu sources are still compiled by nvcc" OFF)
option(DEVTENSOR_UNITY_TESTS "Compile each CPU test executable's sources as one translation unit (CMake's unity build): devtensor's and Boost.Test's headers are parsed once per executable instead of once per file (~5 s each); the sanitizer stages of CI, which compile every test" OFF)
option(DEVTENSOR_LIBFUZZER_HEAVY_TARGETS "Build and run the ops and keras_archive targets with libFuzzer (clang, header-only: ~2 CPU-minutes each to compile); OFF: clang only checks that they compile, their standalone forms still run under the sanitizer stage" ON)

# CUDA is used when nvcc is there, unless the user says no (-DDEVTENSOR_ENABLE_CUDA=OFF or CUDACXX=/nonexistent).
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_devtensor_cuda_default ON)
else()
  set(_devtensor_cuda_default OFF)
endif()
option(DEVTENSOR_ENABLE_CUDA "Build the devtensor::cuda component and the .cu tests" ${_devtensor_cuda_default})
