// Real-GPU discovery, device_lib attributes, the default memory limit, the device guard and
// checked errors. Runs only where a CUDA device exists (skipped elsewhere).
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;

namespace {
__global__ void write_device_code(int* out) { *out = DEVTENSOR_DEVICE_CODE; }
}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_context, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(discovers_every_cuda_device) {
  int count = 0;
  BOOST_TEST_REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  const auto gpus = cfg::list_physical_devices("GPU");
  BOOST_TEST(static_cast<int>(gpus.size()) == count);
  BOOST_TEST(gpus[0].name == "/physical_device:GPU:0");
  const auto& p = devtensor::Context::global().physical_devices()[1];
  BOOST_TEST(!p.simulated);
  cudaDeviceProp prop{};
  BOOST_TEST_REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  BOOST_TEST(p.properties.name == std::string(prop.name));
  BOOST_TEST(p.properties.compute_capability_major == prop.major);
  BOOST_TEST(p.properties.total_memory == prop.totalGlobalMem);
}

BOOST_AUTO_TEST_CASE(simulated_gpus_come_after_real_ones) {
  int count = 0;
  BOOST_TEST_REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  cfg::set_simulated_gpus(1, devtensor::kGiB);
  const auto gpus = cfg::list_physical_devices("GPU");
  BOOST_TEST_REQUIRE(static_cast<int>(gpus.size()) == count + 1);
  BOOST_TEST(gpus.back().name == "/physical_device:GPU:" + std::to_string(count));
}

BOOST_AUTO_TEST_CASE(device_lib_shows_the_real_device) {
  const auto local = devtensor::device_lib::list_local_devices();
  BOOST_TEST_REQUIRE(local.size() >= 2u);
  const auto& g = local[1];
  const auto& p = devtensor::Context::global().physical_devices()[1].properties;
  BOOST_TEST(g.name == "/device:GPU:0");
  BOOST_TEST(devtensor::test::contains(g.physical_device_desc, "name: " + p.name));
  BOOST_TEST(devtensor::test::contains(g.physical_device_desc, "pci bus id: " + p.pci_bus_id));
  BOOST_TEST(devtensor::test::contains(g.physical_device_desc,
                                       "compute capability: " + std::to_string(p.compute_capability_major) + "."));
  const auto reserve = devtensor::min_system_memory(p.free_memory, p.compute_capability_major);
  BOOST_TEST(g.memory_limit == p.free_memory - reserve);
  BOOST_TEST(log.count("Created device /job:localhost/replica:0/task:0/device:GPU:0 with ") == 1u);
}

BOOST_AUTO_TEST_CASE(fraction_uses_total_memory) {
  cfg::experimental::set_memory_fraction(0.25);
  const auto local = devtensor::device_lib::list_local_devices();
  const auto& p = devtensor::Context::global().physical_devices()[1].properties;
  BOOST_TEST(local[1].memory_limit == static_cast<std::uint64_t>(static_cast<double>(p.total_memory) * 0.25));
}

BOOST_AUTO_TEST_CASE(device_guard_switches_only_when_needed) {
  int before = -1;
  BOOST_TEST_REQUIRE(cudaGetDevice(&before) == cudaSuccess);
  {
    devtensor::backend::cuda::DeviceGuard same(before);
    BOOST_TEST(!same.switched());
  }
  int count = 0;
  (void)cudaGetDeviceCount(&count);
  if (count > 1) {
    const int other = before == 0 ? 1 : 0;
    {
      devtensor::backend::cuda::DeviceGuard guard(other);
      BOOST_TEST(guard.switched());
      int now = -1;
      (void)cudaGetDevice(&now);
      BOOST_TEST(now == other);
    }
    int after = -1;
    (void)cudaGetDevice(&after);
    BOOST_TEST(after == before);
  }
  BOOST_CHECK_THROW([] { devtensor::backend::cuda::DeviceGuard guard(10000); }(), devtensor::InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(checked_errors_name_the_cuda_error) {
  DEVTENSOR_CHECK_THROW_WITH(DEVTENSOR_CUDA_CHECK(cudaSetDevice(10000)), devtensor::InvalidArgumentError,
                             "cudaErrorInvalidDevice");
  BOOST_TEST(cudaGetLastError() == cudaSuccess);  // the sticky error was cleared
}

// A user's .cu file: its own kernels run beside devtensor's (which live in the kernel TU).
BOOST_AUTO_TEST_CASE(a_users_own_kernel_runs_in_an_nvcc_translation_unit) {
  int* d = nullptr;
  DEVTENSOR_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  write_device_code<<<1, 1>>>(d);
  DEVTENSOR_CUDA_CHECK(cudaGetLastError());
  int h = 0;
  DEVTENSOR_CUDA_CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  DEVTENSOR_CUDA_CHECK(cudaFree(d));
  BOOST_TEST(h == 1);
  // And devtensor's ops called from this nvcc TU reach the same registered bodies as from a .cpp.
  const auto t = devtensor::add(devtensor::constant<float>({1, 2}), devtensor::constant<float>({3, 4}));
  BOOST_TEST(t.device() == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(t.to_vector() == (std::vector<float>{4, 6}));
}

BOOST_AUTO_TEST_SUITE_END()
