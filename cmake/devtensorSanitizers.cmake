# DEVTENSOR_SANITIZE applies to devtensor's own test, example and benchmark targets.
add_library(devtensor_sanitizers INTERFACE)
if(DEVTENSOR_SANITIZE)
  set(_flags -fsanitize=${DEVTENSOR_SANITIZE} -fno-omit-frame-pointer)
  if(DEVTENSOR_SANITIZE MATCHES "undefined")
    # GCC's -fsanitize=undefined leaves out float-cast-overflow (a NaN or out-of-range float
    # converted to an integer); clang's includes it. Name it for both.
    list(APPEND _flags -fsanitize=float-cast-overflow)
    list(APPEND _flags -fno-sanitize-recover=all)  # UBSan alone would not change the exit code
  endif()
  target_compile_options(devtensor_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_flags}>)
  target_link_options(devtensor_sanitizers INTERFACE ${_flags})
endif()
