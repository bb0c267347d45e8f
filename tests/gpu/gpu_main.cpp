// The main of every GPU test executable: skip (exit 77, CTest's SKIP_RETURN_CODE) when the CUDA
// runtime sees no device, otherwise run the Boost.Test module.
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

#include "devtensor/core/matmul_options.hpp"

#define DEVTENSOR_STR2(x) #x
#define DEVTENSOR_STR(x) DEVTENSOR_STR2(x)

namespace {
bool init_module() {
  boost::unit_test::framework::master_test_suite().p_name.value = DEVTENSOR_STR(DEVTENSOR_TEST_MODULE_NAME);
  return true;
}
}  // namespace

int main(int argc, char* argv[]) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    std::printf("%s: skipped: no CUDA device (%s)\n", DEVTENSOR_STR(DEVTENSOR_TEST_MODULE_NAME),
                status != cudaSuccess ? cudaGetErrorName(status) : "device count 0");
    return 77;
  }
  // The tests compare float32 GPU results with the CPU's to float32 accuracy: TF32 off (the test
  // of the switch turns it on; test_ops checks that TensorFlow's default, on, is devtensor's).
  devtensor::config::experimental::enable_tensor_float_32_execution(false);
  return boost::unit_test::unit_test_main(&init_module, argc, argv);
}
