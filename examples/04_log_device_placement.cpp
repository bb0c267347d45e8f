// Walkthrough 4: log where each op runs (TensorFlow's "Logging device placement").
//   ./04_log_device_placement                                # CPU
//   DEVTENSOR_SIMULATED_GPUS=2 ./04_log_device_placement     # GPU:0 wins: MatMul has a GPU kernel
#include <devtensor/tensors.hpp>

#include <iostream>

namespace dt = devtensor;

int main() {
  dt::debugging::set_log_device_placement(true);
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto c = dt::matmul(a, b);
  std::cout << c << "\n";
  return c.to_vector() == std::vector<float>{22, 28, 49, 64} ? 0 : 1;
}
