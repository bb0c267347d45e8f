// The cudart flavour (host compiler + devtensor::cuda): library kernels (cuBLAS matmul, copies,
// views) run on the GPU; ops that need a hand-written kernel fall back to the CPU, statically.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;

static_assert(std::string_view(DEVTENSOR_FLAVOUR_NAME) == "cudart");
static_assert(dt::has_kernel_v<dt::ops::MatMul, dt::gpu_t, float>);
static_assert(dt::has_kernel_v<dt::ops::Identity, dt::gpu_t, float>);
static_assert(!dt::has_kernel_v<dt::ops::Add, dt::gpu_t, float>);

BOOST_FIXTURE_TEST_SUITE(gpu_cudart_flavour, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(matmul_on_the_gpu_add_on_the_cpu) {
  dt::debugging::set_log_device_placement(true);
  const auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  const auto c = dt::matmul(a, b);
  BOOST_TEST(c.device() == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(c.to_vector() == (std::vector<float>{22, 28, 49, 64}));
  const auto d = dt::add(c, c);  // no hand-written kernel in this TU: the CPU
  BOOST_TEST(d.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  BOOST_TEST(d.to_vector() == (std::vector<float>{44, 56, 98, 128}));
  const auto e = dt::matmul(dt::gpu, d, d);  // explicit tag: the GPU kernel exists here
  BOOST_TEST(e.device() == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(log.count("Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
