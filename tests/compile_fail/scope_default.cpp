// A DeviceScope has no default constructor.
#include <devtensor/device/scope.hpp>
int main() {
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::DeviceScope s;
#else
  devtensor::DeviceScope s(devtensor::cpu);
#endif
}
