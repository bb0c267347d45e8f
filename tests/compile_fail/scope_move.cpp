// A DeviceScope cannot be moved.
#include <devtensor/device/scope.hpp>
#include <utility>
int main() {
  devtensor::DeviceScope a("/cpu:0");
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::DeviceScope b(std::move(a));
#endif
}
