// TensorFlow's "Expecting a string device name" is a compile error: a number is no device.
#include <devtensor/device/scope.hpp>
int main() {
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::DeviceScope s(3.5);
#else
  devtensor::DeviceScope s("/cpu:0");
#endif
}
