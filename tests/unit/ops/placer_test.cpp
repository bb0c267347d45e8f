// The placer on CPU only, virtual CPUs and simulated GPUs: preference, fallback,
// explicit scopes, soft placement on and off, unknown devices, exact log lines, copies, the device
// policy, small-int pinning, threads, explicit tags.
#include <boost/test/unit_test.hpp>

#include <thread>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
using dt::InvalidArgumentError;

namespace {

using devtensor::test::kCpu0;
using devtensor::test::kCpu1;
using devtensor::test::kGpu0;
using devtensor::test::kGpu1;

// A user op with only a CPU kernel (for floats), written the way README shows.
struct CpuOnlyScale {
  static constexpr std::string_view name = "CpuOnlyScale";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, dt::cpu_t>&& std::is_floating_point_v<T>;
};
template <class T>
dt::Tensor<T> cpu_only_scale(const dt::Tensor<T>& x, T factor) {
  const dt::Device& device = dt::place_op(dt::kernel_support<CpuOnlyScale, T>);
  const auto in = dt::to_device(x, device, CpuOnlyScale::name);
  auto out = dt::Tensor<T>::empty(in.shape(), device, CpuOnlyScale::name);
  for (std::int64_t i = 0; i < in.num_elements(); ++i) out.mutable_data()[i] = in.data()[i] * factor;
  return out;
}

void two_gpus() { dt::config::set_simulated_gpus(2, dt::kGiB); }

}  // namespace

BOOST_FIXTURE_TEST_SUITE(placer, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(cpu_only_machine) {
  dt::debugging::set_log_device_placement(true);
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  auto c = dt::matmul(a, a);
  BOOST_TEST(c.device() == kCpu0);
  BOOST_TEST(log.lines() == (std::vector<std::string>{"Executing op _EagerConst in device " + std::string(kCpu0),
                                                      "Executing op MatMul in device " + std::string(kCpu0)}),
             boost::test_tools::per_element());
  BOOST_TEST(devtensor::test::contains(dt::Context::global().initialization_trigger(), "_EagerConst"));
}

// Placement and device-creation lines are TensorFlow C++ INFO lines: TF_CPP_MIN_LOG_LEVEL=1 hides
// them, warnings stay.
BOOST_AUTO_TEST_CASE(placement_log_obeys_the_min_cpp_log_level) {
  two_gpus();
  dt::logging::set_min_cpp_log_level(1);
  dt::debugging::set_log_device_placement(true);
  dt::config::experimental::set_device_policy(dt::DevicePolicy::WARN);
  dt::Tensor<float> a;
  {
    dt::DeviceScope s("/gpu:1");
    a = dt::constant<float>({1, 2});
  }
  (void)(a + a);  // on GPU:0: both inputs copied, with a warning each
  dt::config::experimental::set_device_policy(dt::DevicePolicy::SILENT);
  BOOST_TEST(log.count("Executing op") == 0u);
  BOOST_TEST(log.count("Created device") == 0u);
  BOOST_TEST(log.count("Copying input #0 of AddV2") == 1u);
  dt::logging::set_min_cpp_log_level(0);
  (void)(a + a);
  BOOST_TEST(log.count("Executing op AddV2 in device " + std::string(kGpu0)) == 1u);
}

BOOST_AUTO_TEST_CASE(gpu_preferred_when_it_has_a_kernel) {
  two_gpus();
  dt::debugging::set_log_device_placement(true);
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(a.device() == kGpu0);  // constants go to the default device too
  auto c = dt::matmul(a, a);
  BOOST_TEST(c.device() == kGpu0);
  BOOST_TEST(log.count("Executing op MatMul in device " + std::string(kGpu0)) == 1u);
  // Integer matmul has no GPU kernel (cuBLAS has none): it falls back to the CPU.
  auto i = dt::constant<std::int32_t>(std::vector<std::int32_t>(100, 1), {10, 10});
  BOOST_TEST(dt::matmul(i, i).device() == kCpu0);
  // A user op with only a CPU kernel falls back too, and the log says where it ran.
  BOOST_TEST(cpu_only_scale(a, 2.0f).device() == kCpu0);
  BOOST_TEST(log.count("Executing op CpuOnlyScale in device " + std::string(kCpu0)) == 1u);
}

BOOST_AUTO_TEST_CASE(simulated_gpu_tensors_are_accounted_to_the_gpu) {
  two_gpus();
  const auto before = dt::config::experimental::get_memory_info("GPU:0").current;
  {
    auto big = dt::zeros<float>({1024, 256});  // 1 MiB on GPU:0
    BOOST_TEST(big.device() == kGpu0);
    BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current - before == 1 << 20);
  }
  BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current == before);
}

BOOST_AUTO_TEST_CASE(explicit_scopes) {
  two_gpus();
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  {
    dt::DeviceScope s("/cpu:0");
    BOOST_TEST(dt::matmul(a, a).device() == kCpu0);
    BOOST_TEST(dt::constant<float>({1}).device() == kCpu0);
  }
  {
    dt::DeviceScope s("/gpu:1");
    BOOST_TEST(dt::matmul(a, a).device() == kGpu1);
  }
  {
    dt::DeviceScope s("GPU:1");
    dt::DeviceScope inner(dt::cpu);
    // Type CPU, id 1 from the enclosing scope: CPU:1 does not exist, so soft placement drops type
    // and id and the first device with a kernel wins.
    BOOST_TEST(dt::current_device_spec().to_string() == "/job:localhost/replica:0/task:0/device:CPU:1");
    BOOST_TEST(dt::matmul(a, a).device() == kGpu0);
  }
  {
    dt::DeviceScope s("/device:GPU:*");
    BOOST_TEST(dt::matmul(a, a).device() == kGpu0);
  }
}

BOOST_AUTO_TEST_CASE(virtual_cpus) {
  auto cpu = dt::config::list_physical_devices("CPU")[0];
  dt::config::set_logical_device_configuration(cpu, {{}, {}});
  auto a = dt::constant<double>({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(dt::matmul(a, a).device() == kCpu0);  // CPU:0 before CPU:1 by name
  dt::DeviceScope s("/cpu:1");
  auto b = dt::matmul(a, a);
  BOOST_TEST(b.device() == kCpu1);
  BOOST_TEST(b.to_vector() == (std::vector<double>{7, 10, 15, 22}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(soft_placement_on_falls_back) {
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  dt::debugging::set_log_device_placement(true);
  dt::DeviceScope s("/gpu:0");  // no GPUs at all
  auto c = dt::matmul(a, a);
  BOOST_TEST(c.device() == kCpu0);
  BOOST_TEST(log.count("Executing op MatMul in device " + std::string(kCpu0)) == 1u);
}

BOOST_AUTO_TEST_CASE(soft_placement_off_fails_with_tensorflows_text) {
  two_gpus();
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  dt::config::set_soft_device_placement(false);
  {
    dt::DeviceScope s("/gpu:5");  // a GPU that does not exist
    DEVTENSOR_CHECK_THROW_WITH(dt::matmul(a, a), InvalidArgumentError,
                               "Could not satisfy device specification '/job:localhost/replica:0/task:0/"
                               "device:GPU:5'. enable_soft_placement=0. Supported device types [GPU, CPU]. "
                               "All available devices [/job:localhost/replica:0/task:0/device:CPU:0, "
                               "/job:localhost/replica:0/task:0/device:GPU:0, "
                               "/job:localhost/replica:0/task:0/device:GPU:1].");
  }
  {
    dt::DeviceScope s("/gpu:0");  // exists, but the op has no GPU kernel
    DEVTENSOR_CHECK_THROW_WITH(cpu_only_scale(a, 2.0f), InvalidArgumentError, "Supported device types [CPU]");
    DEVTENSOR_CHECK_THROW_WITH(cpu_only_scale(a, 2.0f), InvalidArgumentError,
                               "because no supported kernel for GPU devices is available");
  }
  dt::config::set_soft_device_placement(true);  // may change at any time
  dt::DeviceScope s("/gpu:5");
  BOOST_TEST(dt::matmul(a, a).device() == kGpu0);  // soft placement drops type and id: GPU:0 first
}

struct Nowhere {  // an op with no kernel table: no kernels on any device
  static constexpr std::string_view name = "Nowhere";
};

BOOST_AUTO_TEST_CASE(no_kernel_anywhere) {
  DEVTENSOR_CHECK_THROW_WITH((void)dt::place_op(dt::kernel_support<Nowhere, float>), InvalidArgumentError,
                             "No supported device found in available devices [/job:localhost/replica:0/"
                             "task:0/device:CPU:0]. enable_soft_placement=1.");
}

// Checked in TensorFlow 2.21: tensors created under a scope follow soft placement.
BOOST_AUTO_TEST_CASE(constants_follow_soft_placement) {
  dt::debugging::set_log_device_placement(true);
  for (const char* spec : {"/gpu:0", "/gpu:7", "/cpu:5", "/device:GPU:*"}) {
    dt::DeviceScope s(spec);  // CPU only: each falls back to CPU:0
    BOOST_TEST(dt::constant<float>({1, 2}).device() == kCpu0, spec);
  }
  BOOST_TEST(log.lines().back() == "Executing op _EagerConst in device " + std::string(kCpu0));
  dt::config::set_soft_device_placement(false);
  dt::DeviceScope s("/gpu:0");
  DEVTENSOR_CHECK_THROW_WITH(dt::constant<float>({1, 2}), InvalidArgumentError,
                             "Could not satisfy device specification '/job:localhost/replica:0/task:0/"
                             "device:GPU:0'. enable_soft_placement=0. Supported device types [GPU, CPU]. "
                             "All available devices [/job:localhost/replica:0/task:0/device:CPU:0].");
  DEVTENSOR_CHECK_THROW_WITH(dt::constant<float>({1, 2}), InvalidArgumentError, "[Op:_EagerConst]");
}

// The seeds' two-towers program on a CPU-only configuration: every op of both towers falls back.
BOOST_AUTO_TEST_CASE(two_towers_run_without_gpus) {
  dt::debugging::set_log_device_placement(true);
  std::vector<dt::Tensor<float>> towers;
  for (const char* device : {"/gpu:0", "/gpu:1"}) {
    dt::DeviceScope scope(device);
    auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
    towers.push_back(dt::matmul(a, b));
  }
  dt::DeviceScope scope("/cpu:0");
  const auto sum = dt::add_n(towers);
  BOOST_TEST(sum.to_vector() == (std::vector<float>{44, 56, 98, 128}), boost::test_tools::per_element());
  const std::string on_cpu = std::string(" in device ") + kCpu0;
  std::vector<std::string> expected;
  for (int tower = 0; tower < 2; ++tower)
    for (const char* op : {"_EagerConst", "_EagerConst", "MatMul"})
      expected.push_back("Executing op " + std::string(op) + on_cpu);
  expected.push_back("Executing op AddN" + on_cpu);
  BOOST_TEST(log.lines() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(constants_with_gpus_fall_back_in_priority_order) {
  two_gpus();
  {
    dt::DeviceScope s("/gpu:7");
    BOOST_TEST(dt::constant<float>({1, 2}).device() == kGpu0);
    BOOST_TEST(dt::zeros<float>({2}).device() == kGpu0);  // Fill, an op, the same way
  }
  dt::DeviceScope s("/gpu:1");
  BOOST_TEST(dt::constant<float>({1, 2}).device() == kGpu1);  // an existing device is kept
}

BOOST_AUTO_TEST_CASE(unknown_job_or_task_fails_whatever_soft_placement) {
  for (bool soft : {true, false}) {
    dt::config::set_soft_device_placement(soft);
    {
      dt::DeviceScope s("/job:foo/cpu:0");
      DEVTENSOR_CHECK_THROW_WITH(dt::constant<float>({1, 2}), InvalidArgumentError,
                                 "/job:foo/replica:0/task:0/device:CPU:0 unknown device.");
      DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({2}), InvalidArgumentError, "unknown device.");
      DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({2}), InvalidArgumentError, "[Op:Fill]");
    }
    dt::DeviceScope s("/task:3/gpu:0");
    DEVTENSOR_CHECK_THROW_WITH(dt::constant<float>({1, 2}), InvalidArgumentError,
                               "/job:localhost/replica:0/task:3/device:GPU:0 unknown device.");
  }
}

BOOST_AUTO_TEST_CASE(inputs_are_copied_to_the_ops_device) {
  two_gpus();
  dt::Tensor<float> on_gpu1, on_cpu;
  {
    dt::DeviceScope s("/gpu:1");
    on_gpu1 = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  }
  {
    dt::DeviceScope s("/cpu:0");
    on_cpu = dt::constant<float>({1, 1, 1, 1}, {2, 2});
  }
  auto sum = on_gpu1 + on_cpu;  // no scope: GPU:0, both inputs copied there
  BOOST_TEST(sum.device() == kGpu0);
  BOOST_TEST(sum.to_vector() == (std::vector<float>{2, 3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(on_gpu1.device() == kGpu1);  // inputs stay where they were
  {
    dt::DeviceScope s("/cpu:0");
    auto moved = dt::identity(on_gpu1);
    BOOST_TEST(moved.device() == kCpu0);
    BOOST_TEST(moved.data() != on_gpu1.data());
    BOOST_TEST(moved.to_vector() == on_gpu1.to_vector(), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(device_policy) {
  two_gpus();
  dt::Tensor<float> f;
  dt::Tensor<std::int32_t> i;
  {
    dt::DeviceScope s("/cpu:0");
    f = dt::constant<float>({1, 2});
    i = dt::constant<std::int32_t>(std::vector<std::int32_t>(100, 1));
  }
  BOOST_TEST((dt::config::experimental::get_device_policy() == dt::DevicePolicy::SILENT));
  dt::config::experimental::set_device_policy(dt::DevicePolicy::EXPLICIT);
  DEVTENSOR_CHECK_THROW_WITH(dt::square(f), InvalidArgumentError,
                             "Tensors on conflicting devices: cannot compute Square as input #0 was expected "
                             "to be on /job:localhost/replica:0/task:0/device:GPU:0 but is actually on "
                             "/job:localhost/replica:0/task:0/device:CPU:0");
  dt::config::experimental::set_device_policy(dt::DevicePolicy::SILENT_FOR_INT32);
  BOOST_TEST(dt::square(i).device() == kGpu0);  // int32 copied silently
  BOOST_CHECK_THROW(dt::square(f), InvalidArgumentError);
  dt::config::experimental::set_device_policy(dt::DevicePolicy::WARN);
  BOOST_TEST(dt::square(f).device() == kGpu0);
  BOOST_TEST(log.count("Copying input #0 of Square from " + std::string(kCpu0) + " to " + std::string(kGpu0)) == 1u);
  dt::config::experimental::set_device_policy(dt::DevicePolicy::SILENT);
}

BOOST_AUTO_TEST_CASE(small_integer_ops_are_pinned_to_the_host) {
  two_gpus();
  dt::Tensor<std::int32_t> small, large;
  {
    dt::DeviceScope s("/cpu:0");
    small = dt::constant<std::int32_t>({1, 2, 3});
    large = dt::constant<std::int32_t>(std::vector<std::int32_t>(65, 1));
  }
  BOOST_TEST((small + small).device() == kCpu0);  // shape arithmetic stays on the CPU
  BOOST_TEST((large + large).device() == kGpu0);  // 65 elements: normal placement
  {
    dt::DeviceScope s("/gpu:1");  // an explicit device type wins over pinning
    BOOST_TEST((small + small).device() == kGpu1);
  }
  auto f = dt::constant<float>({1, 2, 3});
  BOOST_TEST((f + f).device() == kGpu0);  // floats are never pinned
}

BOOST_AUTO_TEST_CASE(explicit_tag_calls) {
  two_gpus();
  dt::debugging::set_log_device_placement(true);
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  // MatMul declares a float GPU kernel: the tag's device (simulated GPUs run the CPU body).
  static_assert(dt::has_kernel_v<dt::ops::MatMul, dt::gpu_t, float>);
  auto c = dt::matmul(dt::gpu, a, a);
  BOOST_TEST(c.device() == kGpu0);
  BOOST_TEST(log.count("Executing op MatMul in device " + std::string(kGpu0)) == 1u);
  BOOST_TEST(dt::matmul(dt::cpu, a, a).device() == kCpu0);
  BOOST_TEST(dt::add(dt::gpu, a, a).device() == kGpu0);
  BOOST_TEST(dt::add_n(dt::gpu, std::vector{a, a}).device() == kGpu0);
  // No integer GPU GEMM is declared: the CPU kernel, statically.
  static_assert(!dt::has_kernel_v<dt::ops::MatMul, dt::gpu_t, std::int32_t>);
  const auto i = dt::constant<std::int32_t>(std::vector<std::int32_t>(100, 1), {10, 10});
  BOOST_TEST(dt::matmul(dt::gpu, i, i).device() == kCpu0);
  BOOST_TEST(dt::current_device_spec().to_string() == "");  // the tag's scope is gone again
}

BOOST_AUTO_TEST_CASE(cache_follows_scopes_and_configuration) {
  two_gpus();
  auto a = dt::constant<float>({1, 2});
  for (int round = 0; round < 3; ++round) {
    BOOST_TEST(dt::square(a).device() == kGpu0);
    {
      dt::DeviceScope s("/gpu:1");
      BOOST_TEST(dt::square(a).device() == kGpu1);
    }
    {
      dt::DeviceScope s("/cpu:0");
      BOOST_TEST(dt::square(a).device() == kCpu0);
    }
  }
  dt::config::set_soft_device_placement(false);
  dt::DeviceScope s("/gpu:9");
  BOOST_CHECK_THROW(dt::square(a), InvalidArgumentError);  // not a stale cached decision
}

BOOST_AUTO_TEST_CASE(threads_with_different_scopes) {
  two_gpus();
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  std::vector<std::string> devices(2);
  std::vector<std::vector<float>> values(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      dt::DeviceScope s(dt::gpu, t);
      for (int i = 0; i < 200; ++i) {
        auto c = dt::matmul(a, a);
        devices[static_cast<std::size_t>(t)] = c.device();
        values[static_cast<std::size_t>(t)] = c.to_vector();
      }
    });
  for (auto& th : threads) th.join();
  BOOST_TEST(devices[0] == kGpu0);
  BOOST_TEST(devices[1] == kGpu1);
  BOOST_TEST(values[0] == (std::vector<float>{7, 10, 15, 22}), boost::test_tools::per_element());
  BOOST_TEST(values[1] == values[0], boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(oom_error_for_a_tensor) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  dt::config::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(0));
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("GPU")[0], {{.memory_limit_mb = 16}});
  try {
    (void)dt::zeros<float>({1024, 1024, 8});  // 32 MiB
    BOOST_FAIL("expected ResourceExhaustedError");
  } catch (const dt::ResourceExhaustedError& e) {
    const std::string m = e.what();
    BOOST_TEST(
        devtensor::test::contains(m,
                                  "OOM when allocating tensor with shape[1024,1024,8] and type float on "
                                  "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:Fill]"));
    BOOST_TEST(devtensor::test::contains(m, "ran out of memory trying to allocate 32.00MiB"));
    BOOST_TEST(devtensor::test::contains(m, "memory_limit_mb = 16 of the virtual device"));
  }
}

// TensorFlow 2.21's tf.device upper-cases the type tokens `cpu` and `gpu` after `/device:` (checked
// with soft placement off: '/device:gpu:0' is reported as '.../device:GPU:0', '/device:cpu:0' runs
// on CPU:0, '/device:Cpu:0' fails: tests/reference/device_case.py); DeviceSpec::parse keeps the
// C++ grammar's case.
BOOST_AUTO_TEST_CASE(scopes_upper_case_cpu_and_gpu_as_tf_device_does) {
  two_gpus();
  dt::config::set_soft_device_placement(false);
  auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(*dt::DeviceSpec::parse("/device:gpu:1").type() == "gpu");
  {
    dt::DeviceScope s("/device:gpu:1");
    BOOST_TEST(dt::current_device_spec().to_string() == kGpu1);
    BOOST_TEST(dt::matmul(a, a).device() == kGpu1);
  }
  {
    dt::DeviceScope s("/job:localhost/replica:0/task:0/device:cpu:0");
    BOOST_TEST(dt::matmul(a, a).device() == kCpu0);
  }
  {
    dt::DeviceScope s("/device:Gpu:1");  // only the exact tokens change
    DEVTENSOR_CHECK_THROW_WITH((void)dt::matmul(a, a), InvalidArgumentError,
                               "Could not satisfy device specification "
                               "'/job:localhost/replica:0/task:0/device:Gpu:1'. enable_soft_placement=0.");
  }
}

BOOST_AUTO_TEST_CASE(the_first_op_is_named_with_the_users_line) {
  const auto line = __LINE__ + 1;
  auto t = dt::fill<float>({2}, 1.0f);
  const std::string trigger = dt::Context::global().initialization_trigger();
  BOOST_TEST(trigger == "the first op (Fill) at " + std::string(__FILE__) + ":" + std::to_string(line));
  const auto cpu = dt::config::list_physical_devices("CPU")[0];
  DEVTENSOR_CHECK_THROW_WITH(dt::config::set_logical_device_configuration(cpu, {{}, {}}), dt::FailedPreconditionError,
                             "devtensor was initialized by the first op (Fill) at " + std::string(__FILE__));
}

BOOST_AUTO_TEST_CASE(a_constant_first_is_named_with_the_users_line) {
  const auto line = __LINE__ + 1;
  auto t = dt::constant<float>({1, 2}, {2});
  BOOST_TEST(dt::Context::global().initialization_trigger() ==
             "the first op (_EagerConst) at " + std::string(__FILE__) + ":" + std::to_string(line));
}

BOOST_AUTO_TEST_CASE(a_trigger_inside_devtensor_names_no_library_line) {
  // constant(values) has no options, so its location is devtensor's own: left out, not printed.
  auto t = dt::constant<float>({1, 2});
  BOOST_TEST(dt::Context::global().initialization_trigger() == "the first op (_EagerConst)");
}

BOOST_AUTO_TEST_SUITE_END()
