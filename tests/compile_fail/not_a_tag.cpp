// has_kernel_v accepts only device tags.
#include <devtensor/ops/traits.hpp>
#include <string_view>
struct Op {
  static constexpr std::string_view name = "Op";
};
struct NotATag {};
int main() {
#ifdef DEVTENSOR_EXPECT_FAILURE
  return devtensor::has_kernel_v<Op, NotATag, float> ? 1 : 0;
#else
  return devtensor::has_kernel_v<Op, devtensor::cpu_t, float> ? 1 : 0;
#endif
}
