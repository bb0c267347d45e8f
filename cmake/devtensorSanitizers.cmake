# DEVTENSOR_SANITIZE applies to devtensor's own test, example and benchmark targets.
add_library(devtensor_sanitizers INTERFACE)
if(DEVTENSOR_SANITIZE)
  set(_flags -fsanitize=${DEVTENSOR_SANITIZE} -fno-omit-frame-pointer)
  if(DEVTENSOR_SANITIZE MATCHES "undefined")
    list(APPEND _flags -fno-sanitize-recover=all)  # UBSan alone would not change the exit code
  endif()
  target_compile_options(devtensor_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_flags}>)
  target_link_options(devtensor_sanitizers INTERFACE ${_flags})
endif()
