// Walkthrough 5: place the constants on the CPU by hand; the matmul runs on the default device
// (GPU:0 when there is one), and its inputs are copied there.
#include <devtensor/tensors.hpp>

#include <iostream>

namespace dt = devtensor;

int main() {
  dt::debugging::set_log_device_placement(true);
  dt::Tensor<float> a, b;
  {
    dt::DeviceScope scope("/cpu:0");
    a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  }
  auto c = dt::matmul(a, b);
  std::cout << "a on " << a.device() << "\nc on " << c.device() << "\n" << c << "\n";
  return c.to_vector() == std::vector<float>{22, 28, 49, 64} ? 0 : 1;
}
