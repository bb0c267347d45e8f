// The kernel registry through the fake GPU platform: host memory posing as a real
// GPU's memory, and host functions registered as that GPU's kernel bodies. This program is
// host-compiled and does not link devtensor::cuda, so it starts with no GPU body at all.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;

namespace {

using devtensor::test::kCpu0;
using devtensor::test::kGpu0;

std::atomic<int> fake_add_calls{0};
/// AddV2's GPU body as the fake GPU runs it: its "device memory" is host memory.
void fake_gpu_add(const dt::ops::KernelContext& ctx) {
  BOOST_TEST(ctx.device.full_name == kGpu0);
  ++fake_add_calls;
  dt::ops::Add::cpu<float>(ctx);
}
void other_gpu_add(const dt::ops::KernelContext&) {}

/// Registers fake_gpu_add for one test and removes it afterwards.
struct RegisteredFakeAdd {
  RegisteredFakeAdd() {
    fake_add_calls = 0;
    BOOST_TEST_REQUIRE((dt::register_kernel<dt::ops::Add, dt::gpu_t, float>(&fake_gpu_add, "registry_test")));
  }
  RegisteredFakeAdd(const RegisteredFakeAdd&) = delete;
  RegisteredFakeAdd& operator=(const RegisteredFakeAdd&) = delete;
  ~RegisteredFakeAdd() { dt::unregister_kernel<dt::ops::Add, dt::gpu_t, float>(); }
};

// A user's op with registered bodies (TensorFlow's REGISTER_KERNEL_BUILDER): CPU for float, and a
// GPU body that a test registers.
struct TripleOp {
  static constexpr std::string_view name = "Triple";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<T, float>;
  template <class T>
  using body = void(const dt::Device&, const T* in, T* out, std::int64_t n);
};
std::string last_triple_device;
void triple_cpu(const dt::Device& device, const float* in, float* out, std::int64_t n) {
  last_triple_device = device.full_name;
  for (std::int64_t i = 0; i < n; ++i) out[i] = 3 * in[i];
}
void triple_gpu(const dt::Device& device, const float* in, float* out, std::int64_t n) {
  last_triple_device = device.full_name + " (gpu body)";
  for (std::int64_t i = 0; i < n; ++i) out[i] = 3 * in[i];
}
DEVTENSOR_REGISTER_KERNEL(TripleOp, dt::cpu_t, float, &triple_cpu);

dt::Tensor<float> triple(const dt::Tensor<float>& x) {
  const dt::Device& device = dt::place_op(dt::kernel_support<TripleOp, float>);
  const auto in = dt::to_device(x, device, TripleOp::name);
  auto out = dt::Tensor<float>::empty(in.shape(), device, TripleOp::name);
  dt::kernel_for<TripleOp, float>(out.device_info())(out.device_info(), in.data(), out.mutable_data(),
                                                     in.num_elements());
  return out;
}

// A user's op that declares a GPU kernel but whose CPU body nobody registered.
struct UnregisteredOp {
  static constexpr std::string_view name = "Unregistered";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = true;
  template <class T>
  using body = void(const dt::Device&, T* out);
};

// A user's op that declares a GPU kernel and no CPU kernel (a GPU-only op). Its bodies are
// registered by the tests that need them.
struct GpuOnlyScaleOp {
  static constexpr std::string_view name = "GpuOnlyScale";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, dt::gpu_t>&& std::same_as<T, float>;
  template <class T>
  using body = void(const dt::Device&, const T* in, T* out, std::int64_t n, T factor);
};
std::string last_scale_body;
void scale_cuda_stand_in(const dt::Device&, const float* in, float* out, std::int64_t n, float factor) {
  last_scale_body = "gpu";
  for (std::int64_t i = 0; i < n; ++i) out[i] = factor * in[i];
}
void scale_host(const dt::Device&, const float* in, float* out, std::int64_t n, float factor) {
  last_scale_body = "host";
  for (std::int64_t i = 0; i < n; ++i) out[i] = factor * in[i];
}
/// Registers one of GpuOnlyScaleOp's bodies for one test.
template <class Tag>
struct RegisteredScale {
  explicit RegisteredScale(GpuOnlyScaleOp::body<float>* body) {
    BOOST_TEST_REQUIRE((dt::register_kernel<GpuOnlyScaleOp, Tag, float>(body, "registry_test")));
  }
  RegisteredScale(const RegisteredScale&) = delete;
  RegisteredScale& operator=(const RegisteredScale&) = delete;
  ~RegisteredScale() { dt::unregister_kernel<GpuOnlyScaleOp, Tag, float>(); }
};

/// The op as a user writes it: the placer, then the registered body for the chosen device.
dt::Tensor<float> gpu_only_scale(const dt::Tensor<float>& x, float factor) {
  const dt::Device& device = dt::place_op(dt::kernel_support<GpuOnlyScaleOp, float>);
  const auto in = dt::to_device(x, device, GpuOnlyScaleOp::name);
  auto out = dt::Tensor<float>::empty(in.shape(), device, GpuOnlyScaleOp::name);
  dt::kernel_for<GpuOnlyScaleOp, float>(out.device_info())(out.device_info(), in.data(), out.mutable_data(),
                                                           in.num_elements(), factor);
  return out;
}
/// The same op with its own inline body for host memory (simulated GPUs).
dt::Tensor<float> gpu_only_scale_inline(const dt::Tensor<float>& x, float factor) {
  const dt::Device& device = dt::place_op(dt::kernel_support<GpuOnlyScaleOp, float>);
  const auto in = dt::to_device(x, device, GpuOnlyScaleOp::name);
  auto out = dt::Tensor<float>::empty(in.shape(), device, GpuOnlyScaleOp::name);
  BOOST_TEST_REQUIRE(out.device_info().host_memory());
  for (std::int64_t i = 0; i < in.num_elements(); ++i) out.mutable_data()[i] = factor * in.data()[i];
  return out;
}

/// Two simulated GPUs and two virtual CPUs, as in the scenario that found the defect.
struct TwoSimulatedGpus : dt::test::FreshContext {
  TwoSimulatedGpus() {
    dt::config::set_simulated_gpus(2, dt::kGiB);
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(kernel_registry)

template <class Op, class T>
const dt::KernelSupport& support() {
  return dt::kernel_support<Op, T>;
}

BOOST_AUTO_TEST_CASE(this_program_has_no_gpu_body_until_one_is_registered) {
  BOOST_TEST(!dt::KernelRegistry::global().contains({"AddV2", "GPU", "DT_FLOAT"}));
  BOOST_TEST((!support<dt::ops::Add, float>().gpu_present()));
  BOOST_TEST((support<dt::ops::Add, float>().gpu));                 // declared all the same
  BOOST_TEST((support<dt::ops::Identity, float>().gpu_present()));  // copies need no body
  RegisteredFakeAdd fake;
  BOOST_TEST((support<dt::ops::Add, float>().gpu_present()));
  BOOST_TEST((dt::registered_kernel<dt::ops::Add, dt::gpu_t, float>() == &fake_gpu_add));
  const auto provider = dt::KernelRegistry::global().provider({"AddV2", "GPU", "DT_FLOAT"});
  BOOST_TEST_REQUIRE(provider.has_value());
  BOOST_TEST(*provider == "registry_test");
}

BOOST_FIXTURE_TEST_CASE(a_gpu_capable_op_without_its_body_falls_back_with_one_log_line, dt::test::FakeGpuPlatform) {
  const auto a = dt::constant<float>({1, 2});
  BOOST_TEST(a.device() == kGpu0);  // constants need no kernel: on the "real" GPU
  const auto b = dt::add(a, a);
  const auto c = dt::add(b, a);
  BOOST_TEST(b.device() == kCpu0);
  BOOST_TEST(c.to_vector() == (std::vector<float>{3, 6}));
  BOOST_TEST(log.count("AddV2 has a GPU kernel for DT_FLOAT, but this program does not contain it: running on " +
                       std::string(kCpu0)) == 1u);  // once, not once per call
  BOOST_TEST(log.count("devtensor::cuda") == 1u);
  // A request that excludes GPUs says nothing.
  log.clear();
  dt::DeviceScope cpu("/cpu:0");
  (void)dt::sub(a, a);
  BOOST_TEST(log.count("does not contain it") == 0u);
}

BOOST_FIXTURE_TEST_CASE(without_soft_placement_the_error_names_the_missing_component, dt::test::FakeGpuPlatform) {
  dt::config::set_soft_device_placement(false);
  const auto a = dt::constant<float>({1, 2});
  dt::DeviceScope gpu("/gpu:0");
  DEVTENSOR_CHECK_THROW_WITH(dt::add(a, a), dt::InvalidArgumentError,
                             "Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0'. "
                             "enable_soft_placement=0. Supported device types [CPU].");
  DEVTENSOR_CHECK_THROW_WITH(dt::add(a, a), dt::InvalidArgumentError, "link the devtensor::cuda component");
}

BOOST_FIXTURE_TEST_CASE(a_registered_host_body_runs_as_the_gpu_kernel, dt::test::FakeGpuPlatform) {
  RegisteredFakeAdd fake;
  dt::debugging::set_log_device_placement(true);
  const auto a = dt::constant<float>({1, 2, 3}, {3, 1});
  const auto b = dt::constant<float>({10, 20}, {1, 2});
  const auto c = dt::add(a, b);  // broadcasting: the body gets the shapes
  BOOST_TEST(c.device() == kGpu0);
  BOOST_TEST(fake_add_calls == 1);
  BOOST_TEST(c.to_vector() == (std::vector<float>{11, 21, 12, 22, 13, 23}));
  BOOST_TEST(log.count("Executing op AddV2 in device " + std::string(kGpu0)) == 1u);
  // Other element types and other ops still lack their bodies: the CPU.
  BOOST_TEST(dt::add(dt::constant<double>({1}), dt::constant<double>({2})).device() == kCpu0);
  BOOST_TEST(dt::mul(a, a).device() == kCpu0);
}

BOOST_FIXTURE_TEST_CASE(registering_and_unregistering_updates_cached_placements, dt::test::FakeGpuPlatform) {
  const auto a = dt::constant<float>({1});
  BOOST_TEST(dt::add(a, a).device() == kCpu0);  // cached for this thread
  {
    RegisteredFakeAdd fake;
    BOOST_TEST(dt::add(a, a).device() == kGpu0);
  }
  BOOST_TEST(dt::add(a, a).device() == kCpu0);
}

BOOST_AUTO_TEST_CASE(duplicate_registrations_keep_the_first_body) {
  dt::test::LogCapture log;
  RegisteredFakeAdd fake;
  BOOST_TEST((dt::register_kernel<dt::ops::Add, dt::gpu_t, float>(&fake_gpu_add, "again")));  // the same body
  BOOST_TEST(log.count("registered twice") == 0u);
  BOOST_TEST((!(dt::register_kernel<dt::ops::Add, dt::gpu_t, float>(&other_gpu_add, "intruder"))));
  BOOST_TEST(log.count("Kernel AddV2 on GPU for DT_FLOAT is registered twice: kept the body from registry_test, "
                       "ignored the one from intruder") == 1u);
  BOOST_TEST((dt::registered_kernel<dt::ops::Add, dt::gpu_t, float>() == &fake_gpu_add));
  BOOST_TEST(*dt::KernelRegistry::global().provider({"AddV2", "GPU", "DT_FLOAT"}) == "registry_test");
  const bool removed = dt::unregister_kernel<dt::ops::Sub, dt::gpu_t, float>();
  BOOST_TEST(!removed);  // nothing to remove  // nothing to remove
}

BOOST_FIXTURE_TEST_CASE(simulated_gpus_follow_the_declaration_and_run_the_cpu_body, dt::test::FreshContext) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  const auto a = dt::constant<float>({1, 2});
  const auto b = dt::add(a, a);  // no GPU body anywhere in this program
  BOOST_TEST(b.device() == kGpu0);
  BOOST_TEST(b.to_vector() == (std::vector<float>{2, 4}));
  BOOST_TEST(log.count("does not contain it") == 0u);
}

// A GPU-only op is placed on a simulated GPU as on a real one (here under /device:CPU:0 with soft
// placement, as TensorFlow would on a GPU machine); run there with a host body, or refused with
// an error that says the op has none.
BOOST_FIXTURE_TEST_CASE(a_gpu_only_op_is_placed_on_simulated_gpus_as_on_real_ones, TwoSimulatedGpus) {
  const auto x = dt::constant<float>({1, 2});
  dt::DeviceScope cpu("/device:CPU:0");
  BOOST_TEST(dt::place_op(support<GpuOnlyScaleOp, float>()).full_name == kGpu0);
  DEVTENSOR_CHECK_THROW_WITH(gpu_only_scale(x, 2), dt::UnimplementedError,
                             "GpuOnlyScale with T=DT_FLOAT was placed on " + std::string(kGpu0) +
                                 ", a simulated GPU, but has no body in this program that runs on host memory: "
                                 "simulated GPUs keep buffers in host memory and run host bodies. Register one with "
                                 "DEVTENSOR_REGISTER_KERNEL(<op type>, devtensor::cpu_t, float, body)");
  {
    RegisteredScale<dt::gpu_t> cuda(&scale_cuda_stand_in);
    DEVTENSOR_CHECK_THROW_WITH(gpu_only_scale(x, 2), dt::UnimplementedError,
                               "but has only a CUDA body in this program");
    RegisteredScale<dt::cpu_t> host(&scale_host);
    const auto y = gpu_only_scale(x, 2);
    BOOST_TEST(y.device() == kGpu0);
    BOOST_TEST(last_scale_body == "host");
    BOOST_TEST(y.to_vector() == (std::vector<float>{2, 4}));
    // A CPU body of an op that declares no CPU kernel does not make the CPU a candidate.
    dt::config::set_soft_device_placement(false);
    DEVTENSOR_CHECK_THROW_WITH(gpu_only_scale(x, 2), dt::InvalidArgumentError,
                               "Could not satisfy device specification '" + std::string(kCpu0) +
                                   "'. enable_soft_placement=0. Supported device types [GPU].");
    dt::config::set_soft_device_placement(true);
    dt::DeviceScope gpu1("/gpu:1");
    BOOST_TEST(gpu_only_scale(x, 3).device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  }
  // An op whose own code runs on host memory needs no registered body.
  const auto z = gpu_only_scale_inline(x, 5);
  BOOST_TEST(z.device() == kGpu0);
  BOOST_TEST(z.to_vector() == (std::vector<float>{5, 10}));
}

// The same op on the fake platform's "real" GPU: the registered GPU body runs there; without one
// nothing can run it, and the error says which body is missing.
BOOST_FIXTURE_TEST_CASE(a_gpu_only_op_on_a_real_gpu_needs_its_gpu_body, dt::test::FakeGpuPlatform) {
  const auto x = dt::constant<float>({1, 2});
  dt::DeviceScope cpu("/device:CPU:0");
  DEVTENSOR_CHECK_THROW_WITH(gpu_only_scale(x, 2), dt::InvalidArgumentError,
                             "(Op GpuOnlyScale with T=DT_FLOAT has kernels for [].) Its GPU kernel is declared but "
                             "this program does not contain the body");
  RegisteredScale<dt::cpu_t> host(&scale_host);  // host bodies do not run on real GPUs
  DEVTENSOR_CHECK_THROW_WITH(gpu_only_scale(x, 2), dt::InvalidArgumentError, "has kernels for []");
  RegisteredScale<dt::gpu_t> cuda(&scale_cuda_stand_in);
  const auto y = gpu_only_scale(x, 2);
  BOOST_TEST(y.device() == kGpu0);
  BOOST_TEST(last_scale_body == "gpu");
  BOOST_TEST(y.to_vector() == (std::vector<float>{2, 4}));
}

BOOST_FIXTURE_TEST_CASE(a_users_op_is_placed_by_its_registered_bodies, dt::test::FakeGpuPlatform) {
  const auto x = dt::constant<float>({1, 2});
  BOOST_TEST(x.device() == kGpu0);
  BOOST_TEST(triple(x).device() == kCpu0);  // a CPU body only
  BOOST_TEST(last_triple_device == kCpu0);
  BOOST_TEST(triple(x).to_vector() == (std::vector<float>{3, 6}));
  BOOST_TEST_REQUIRE((dt::register_kernel<TripleOp, dt::gpu_t, float>(&triple_gpu, "registry_test")));
  BOOST_TEST(triple(x).device() == kGpu0);
  BOOST_TEST(last_triple_device == std::string(kGpu0) + " (gpu body)");
  BOOST_TEST(triple(x).to_vector() == (std::vector<float>{3, 6}));
  BOOST_TEST((dt::unregister_kernel<TripleOp, dt::gpu_t, float>()));
  BOOST_TEST(triple(x).device() == kCpu0);
}

BOOST_AUTO_TEST_CASE(an_op_without_any_registered_body_is_refused) {
  dt::test::FreshContext fresh;
  BOOST_TEST((!support<UnregisteredOp, float>().cpu_present()));
  DEVTENSOR_CHECK_THROW_WITH(dt::place_op(support<UnregisteredOp, float>()), dt::InvalidArgumentError,
                             "No supported device found in available devices");
  const auto unregistered_body = [] { return dt::kernel_for<UnregisteredOp, float>(dt::host_buffer_device()); };
  DEVTENSOR_CHECK_THROW_WITH(unregistered_body(), dt::InternalError, "register one with DEVTENSOR_REGISTER_KERNEL");
}

BOOST_AUTO_TEST_CASE(the_listing_is_ordered_and_names_providers) {
  RegisteredFakeAdd fake;
  const auto list = dt::KernelRegistry::global().list();
  BOOST_TEST_REQUIRE(list.size() >= 2u);  // Triple on CPU (static registration) and AddV2 on GPU
  for (std::size_t i = 1; i < list.size(); ++i) BOOST_TEST((list[i - 1].key < list[i].key));
  bool triple_found = false;
  for (const auto& r : list)
    if (r.key == dt::KernelKey{"Triple", "CPU", "DT_FLOAT"})
      triple_found = r.provider.find("registry_test.cpp") != std::string::npos;
  BOOST_TEST(triple_found);  // DEVTENSOR_REGISTER_KERNEL names the file
}

BOOST_AUTO_TEST_SUITE_END()
