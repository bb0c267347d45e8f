// Walkthrough 6: ask for a GPU that does not exist. With soft placement off it is an error; with
// soft placement on (the default) the op runs on a device that exists.
#include <devtensor/tensors.hpp>

#include <iostream>

namespace dt = devtensor;

int main() {
  dt::debugging::set_log_device_placement(true);
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  dt::DeviceScope scope("/device:GPU:4");

  dt::config::set_soft_device_placement(false);
  try {
    auto c = dt::matmul(a, b);
    std::cout << "unexpected: ran on " << c.device() << "\n";
    return 1;
  } catch (const dt::InvalidArgumentError& e) {
    std::cout << "soft placement off: InvalidArgumentError: " << e.what() << "\n\n";
  }

  dt::config::set_soft_device_placement(true);
  auto c = dt::matmul(a, b);
  std::cout << "soft placement on: ran on " << c.device() << "\n" << c << "\n";
  return 0;
}
