// A .cpp file compiled by the host compiler, linking devtensor::cuda: every op with a GPU kernel
// is placed on GPU:0 and runs its registered CUDA body (src/devtensor_cuda.cu), exactly as from a
// .cu file (test_gpu_context checks the same from nvcc). Runs only where a CUDA device exists.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;

namespace {
constexpr const char* kGpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_placement, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(every_gpu_capable_op_runs_on_the_gpu_from_a_cpp_file) {
  dt::debugging::set_log_device_placement(true);
  const auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  const auto c = dt::matmul(a, b);
  BOOST_TEST(c.device() == kGpu0);
  BOOST_TEST(c.to_vector() == (std::vector<float>{22, 28, 49, 64}));
  const auto d = dt::add(c, c);
  BOOST_TEST(d.device() == kGpu0);
  BOOST_TEST(d.to_vector() == (std::vector<float>{44, 56, 98, 128}));
  BOOST_TEST(dt::reduce_sum(d).device() == kGpu0);
  BOOST_TEST(dt::reduce_sum(d).item() == 326.0f);
  BOOST_TEST(dt::transpose(d).device() == kGpu0);
  BOOST_TEST(dt::relu(d - 50.0f).to_vector() == (std::vector<float>{0, 6, 48, 78}));
  BOOST_TEST(dt::cast<std::int32_t>(d).device() == kGpu0);
  BOOST_TEST(dt::random_uniform<float>({4}, {.seed = 1}).device() == kGpu0);
  BOOST_TEST(dt::range(0, 5).device() == kGpu0);
  BOOST_TEST(dt::concat(std::vector{d, d}, 0).device() == kGpu0);
  BOOST_TEST(dt::fill<double>({3}, 2.0).device() == kGpu0);
  BOOST_TEST(log.count("Executing op AddV2 in device " + std::string(kGpu0)) == 1u);
  BOOST_TEST(log.count("Executing op MatMul in device " + std::string(kGpu0)) == 1u);
  // Integer matmul has no GPU kernel (cuBLAS has no integer GEMM): the CPU, statically.
  const auto i = dt::matmul(dt::cast<std::int32_t>(a), dt::cast<std::int32_t>(b));
  BOOST_TEST(i.device() == kCpu0);
}

BOOST_AUTO_TEST_CASE(the_registry_holds_the_shipped_bodies) {
  const auto provider = dt::KernelRegistry::global().provider({"AddV2", "GPU", "DT_FLOAT"});
  BOOST_TEST_REQUIRE(provider.has_value());
  BOOST_TEST(provider->find("devtensor::cuda") != std::string::npos);
  BOOST_TEST(!dt::KernelRegistry::global().contains({"MatMul", "GPU", "DT_INT32"}));
  BOOST_TEST(dt::Context::global().gpu_platform() != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
