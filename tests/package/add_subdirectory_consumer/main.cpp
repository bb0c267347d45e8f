#include <devtensor/devtensor.hpp>

#include <cstdio>

int main() {
  const auto spec = devtensor::DeviceSpec::parse("/job:localhost/replica:0/task:0/gpu:1");
  std::printf("add_subdirectory_consumer: %s\n", spec.to_string().c_str());
  return spec.to_string() == "/job:localhost/replica:0/task:0/device:GPU:1" ? 0 : 1;
}
