// A discarded DeviceScope temporary would end at the semicolon: [[nodiscard]] + -Werror.
#include <devtensor/device/scope.hpp>
int main() {
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::DeviceScope("/gpu:0");
#else
  devtensor::DeviceScope s("/gpu:0");
#endif
}
