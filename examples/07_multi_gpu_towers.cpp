// Walkthrough 7: two towers on /gpu:0 and /gpu:1, summed with add_n on /cpu:0.
// Run with DEVTENSOR_SIMULATED_GPUS=2 (or on two real GPUs) to see each tower on its own GPU. On a
// machine without them the program still runs, as in TensorFlow 2.21: soft placement (on by
// default) sends the constants and the matmuls of a missing GPU to the next device in priority
// order (GPU:0, or CPU:0 without GPUs), and the placement log shows where each op ran.
#include <devtensor/devtensor.hpp>

#include <iostream>
#include <vector>

namespace dt = devtensor;

int main() {
  dt::debugging::set_log_device_placement(true);
  std::vector<dt::Tensor<float>> towers;
  for (const char* device : {"/gpu:0", "/gpu:1"}) {
    dt::DeviceScope scope(device);
    auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
    towers.push_back(dt::matmul(a, b));
  }
  dt::Tensor<float> sum;
  {
    dt::DeviceScope scope("/cpu:0");
    sum = dt::add_n(towers);
  }
  std::cout << sum << "\n";
  return sum.to_vector() == std::vector<float>{44, 56, 98, 128} ? 0 : 1;
}
