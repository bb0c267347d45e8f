// A DeviceScope cannot be copied.
#include <devtensor/device/scope.hpp>
int main() {
  devtensor::DeviceScope a("/cpu:0");
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::DeviceScope b(a);
#endif
}
