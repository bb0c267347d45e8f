// Under DEVTENSOR_STRICT_PLACEMENT, asking for a GPU kernel that does not exist in this TU fails.
#include <devtensor/ops/traits.hpp>
#include <string_view>
struct CpuOnlyOp {
  static constexpr std::string_view name = "CpuOnlyOp";
  template <devtensor::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, devtensor::cpu_t>;
};
int main() {
#ifdef DEVTENSOR_EXPECT_FAILURE
  devtensor::require_kernel<CpuOnlyOp, devtensor::gpu_t, float>();
#else
  devtensor::require_kernel<CpuOnlyOp, devtensor::cpu_t, float>();
#endif
}
