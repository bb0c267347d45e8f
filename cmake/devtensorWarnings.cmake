# Warnings for devtensor's own targets (tests, examples, benchmarks); never imposed on users.
add_library(devtensor_warnings INTERFACE)
target_compile_options(devtensor_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wimplicit-fallthrough $<$<BOOL:${DEVTENSOR_WARNINGS_AS_ERRORS}>:-Werror>>
  # nvcc: warnings on, not errors (Boost and CCCL headers are not warning-clean under nvcc).
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
