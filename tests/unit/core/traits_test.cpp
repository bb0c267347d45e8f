// Device tags, the DeviceTag concept and the has_kernel_v scaffolding, with user-defined ops.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string_view>

#include "devtensor/ops/traits.hpp"

namespace dt = devtensor;

namespace {
// A user op with only a CPU kernel, for floating types.
struct CpuOnlyOp {
  static constexpr std::string_view name = "CpuOnlyOp";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, dt::cpu_t>&& std::is_floating_point_v<T>;
};
// A user op with kernels everywhere.
struct EverywhereOp {
  static constexpr std::string_view name = "EverywhereOp";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = true;
};
// No kernel table at all.
struct NoTableOp {
  static constexpr std::string_view name = "NoTableOp";
};
struct NotATag {};
struct LyingTag {  // names another type as its tag
  using device_tag = dt::cpu_t;
  static constexpr std::string_view device_type = "CPU";
  static constexpr bool is_host = true;
};
}  // namespace

static_assert(dt::DeviceTag<dt::cpu_t>);
static_assert(dt::DeviceTag<dt::gpu_t>);
static_assert(dt::DeviceTag<const dt::gpu_t&>);
static_assert(!dt::DeviceTag<NotATag>);
static_assert(!dt::DeviceTag<LyingTag>);
static_assert(!dt::DeviceTag<int>);
static_assert(dt::device_type_name<dt::cpu_t> == "CPU");
static_assert(dt::device_type_name<dt::gpu_t> == "GPU");

static_assert(dt::OpType<CpuOnlyOp>);
static_assert(dt::has_kernel_v<CpuOnlyOp, dt::cpu_t, float>);
static_assert(!dt::has_kernel_v<CpuOnlyOp, dt::cpu_t, std::int32_t>);
static_assert(!dt::has_kernel_v<CpuOnlyOp, dt::gpu_t, float>);
static_assert(dt::has_kernel_v<EverywhereOp, dt::gpu_t, double>);
static_assert(!dt::has_kernel_v<NoTableOp, dt::cpu_t, float>);
static_assert(dt::HasKernel<EverywhereOp, dt::gpu_t, float>);
static_assert(!dt::HasKernel<CpuOnlyOp, dt::gpu_t, float>);

// Explicit-tag calls fall back to the CPU kernel statically.
static_assert(std::same_as<dt::kernel_tag_t<CpuOnlyOp, dt::gpu_t, float>, dt::cpu_t>);
static_assert(std::same_as<dt::kernel_tag_t<EverywhereOp, dt::gpu_t, float>, dt::gpu_t>);

// supported_device_types is usable at compile time, in preference order.
static_assert(dt::supported_device_types<EverywhereOp, float>().size() == 2);
static_assert(dt::supported_device_types<EverywhereOp, float>().types[0] == "GPU");
static_assert(dt::supported_device_types<CpuOnlyOp, float>().size() == 1);
static_assert(dt::supported_device_types<CpuOnlyOp, float>().contains("CPU"));
static_assert(!dt::supported_device_types<CpuOnlyOp, float>().contains("GPU"));
static_assert(dt::supported_device_types<CpuOnlyOp, std::int64_t>().size() == 0);

BOOST_AUTO_TEST_SUITE(traits)

BOOST_AUTO_TEST_CASE(runtime_view_of_supported_types) {
  std::string joined;
  for (auto t : dt::supported_device_types<EverywhereOp, float>()) joined += std::string(t) + ",";
  BOOST_TEST(joined == "GPU,CPU,");
}

BOOST_AUTO_TEST_SUITE_END()
