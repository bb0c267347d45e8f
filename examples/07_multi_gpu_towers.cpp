// Walkthrough 7: two towers on /gpu:0 and /gpu:1, summed with add_n on /cpu:0.
// On two GPUs (real, or DEVTENSOR_SIMULATED_GPUS=2) each tower gets its own. On a machine with one
// GPU the program splits it into two logical GPUs of 1 GiB each first, as TensorFlow's GPU guide
// does. On a machine without GPUs it still runs, as in TensorFlow 2.21: soft placement (on by
// default) sends the constants and the matmuls of a missing GPU to the next device in priority
// order (CPU:0), and the placement log shows where each op ran.
#include <devtensor/tensors.hpp>

#include <iostream>
#include <vector>

namespace dt = devtensor;

int main() {
  if (const auto gpus = dt::config::list_physical_devices("GPU"); gpus.size() == 1)
    dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 1024}, {.memory_limit_mb = 1024}});
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
