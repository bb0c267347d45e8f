// The Context's side of the CUDA backend, through a recording GPU platform (host memory posing as
// device memory): one stream per logical real GPU at its virtual device's priority, streams
// destroyed with the Context, copies routed to the platform with the right streams and ordinals.
// The CUDA implementation of the same interface runs in tests/gpu on a real GPU.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace cfg = devtensor::config;

namespace {

struct Copy {
  int dst_ordinal;
  void* dst_stream;
  int src_ordinal;
  void* src_stream;
};

struct Recorder {
  std::vector<std::pair<void*, int>> created;  // stream token, priority
  std::vector<void*> destroyed;
  std::vector<Copy> copies;
  int next_token = 1;
};
Recorder recorder;

const dt::detail::GpuPlatform fake{
    "fake",
    [](std::string*) { return 1; },
    [](int, dt::detail::GpuPlatformDevice* out, std::string*) {
      out->name = "Fake GPU";
      out->pci_bus_id = "0000:00:00.0";
      out->compute_capability_major = 9;
      out->total_memory = std::uint64_t{4} << 30;
      out->free_memory = std::uint64_t{4} << 30;
      out->least_stream_priority = 0;
      out->greatest_stream_priority = -5;
      return true;
    },
    [](int, std::size_t bytes) noexcept { return std::malloc(bytes); },
    [](int, void* p) noexcept { std::free(p); },
    [](int) noexcept { return std::uint64_t{4} << 30; },
    [](int, int priority, std::string*) noexcept {
      void* token = reinterpret_cast<void*>(static_cast<std::uintptr_t>(recorder.next_token++) << 4);
      recorder.created.emplace_back(token, priority);
      return token;
    },
    [](int, void* stream) noexcept { recorder.destroyed.push_back(stream); },
    [](int, void*, std::string*) noexcept { return true; },
    [](void* dst, int dst_ordinal, void* dst_stream, const void* src, int src_ordinal, void* src_stream,
       std::size_t bytes, std::string*) noexcept {
      recorder.copies.push_back({dst_ordinal, dst_stream, src_ordinal, src_stream});
      std::memcpy(dst, src, bytes);
      return true;
    }};

/// Registers the recording platform for one test and takes it away again.
struct FakePlatform : dt::test::FreshContext {
  const dt::detail::GpuPlatform* previous = dt::Context::global().gpu_platform();
  FakePlatform() {
    recorder = {};
    dt::Context::global().register_gpu_platform(&fake);
    dt::testing::reset_context();
  }
  ~FakePlatform() {
    dt::testing::reset_context();
    dt::Context::global().register_gpu_platform(previous);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(platform_streams, FakePlatform)

BOOST_AUTO_TEST_CASE(each_logical_gpu_gets_a_stream_at_its_priority) {
  const auto gpus = cfg::list_physical_devices("GPU");
  BOOST_TEST_REQUIRE(gpus.size() == 1u);
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 64, .experimental_priority = -2},
                                                  {.memory_limit_mb = 64, .experimental_priority = 0}});
  const auto& devices = dt::Context::global().logical_devices();
  BOOST_TEST_REQUIRE(recorder.created.size() == 2u);
  BOOST_TEST(recorder.created[0].second == -2);
  BOOST_TEST(recorder.created[1].second == 0);
  std::vector<void*> streams;
  for (const auto& d : devices) {
    if (d.is_gpu) streams.push_back(d.stream);
    else BOOST_TEST(d.stream == nullptr);
  }
  BOOST_TEST_REQUIRE(streams.size() == 2u);
  BOOST_TEST(streams[0] == recorder.created[0].first);
  BOOST_TEST(streams[1] == recorder.created[1].first);
  dt::testing::reset_context();  // a new process, as far as devices go: the streams go too
  BOOST_TEST(recorder.destroyed.size() == 2u);
}

BOOST_AUTO_TEST_CASE(default_priority_is_cudas_default) {
  (void)cfg::list_logical_devices("GPU");
  BOOST_TEST_REQUIRE(recorder.created.size() == 1u);
  BOOST_TEST(recorder.created[0].second == 0);
}

BOOST_AUTO_TEST_CASE(copies_name_the_streams_of_their_devices) {
  const auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 64}, {.memory_limit_mb = 64}});
  const auto& devices = dt::Context::global().logical_devices();
  dt::Tensor<float> on0;
  {
    dt::DeviceScope scope("/gpu:0");
    on0 = dt::constant<float>({1, 2, 3});  // host -> GPU:0, on GPU:0's stream
  }
  BOOST_TEST_REQUIRE(recorder.copies.size() == 1u);
  const auto& gpu0 = on0.device_info();
  BOOST_TEST(recorder.copies[0].dst_ordinal == 0);
  BOOST_TEST(recorder.copies[0].dst_stream == gpu0.stream);
  BOOST_TEST(recorder.copies[0].src_ordinal == -1);
  BOOST_TEST(recorder.copies[0].src_stream == nullptr);

  BOOST_TEST(on0.to_vector() == (std::vector<float>{1, 2, 3}));  // GPU:0 -> host on GPU:0's stream
  BOOST_TEST_REQUIRE(recorder.copies.size() == 2u);
  BOOST_TEST(recorder.copies[1].src_stream == gpu0.stream);
  BOOST_TEST(recorder.copies[1].dst_stream == nullptr);
  BOOST_TEST(recorder.copies[1].dst_ordinal == -1);

  dt::Tensor<float> on1;
  {
    dt::DeviceScope scope("/gpu:1");
    // A host TU has no GPU kernels: soft placement runs identity on the CPU, so its input is
    // copied GPU:0 -> host on GPU:0's stream.
    on1 = dt::identity(on0);
  }
  BOOST_TEST(on1.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  const auto& last = recorder.copies.back();
  BOOST_TEST(last.src_stream == gpu0.stream);
  BOOST_TEST(last.dst_stream == nullptr);
  BOOST_TEST(on1.to_vector() == (std::vector<float>{1, 2, 3}));
  const void* gpu1_stream = nullptr;
  int gpu1_logical_index = -1;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].is_gpu && devices[i].index == 1) {
      gpu1_stream = devices[i].stream;
      gpu1_logical_index = static_cast<int>(i);
    }
  BOOST_TEST(gpu1_stream != gpu0.stream);

  // Device to device: the platform gets both ordinals and both streams.
  auto on_gpu1 = dt::Tensor<float>::empty({3}, gpu1_logical_index, "test");
  BOOST_TEST_REQUIRE(on_gpu1.device_info().stream == gpu1_stream);
  dt::detail::copy_bytes(on_gpu1.mutable_data(), on_gpu1.device_info(), on0.data(), gpu0, 3 * sizeof(float));
  const auto& d2d = recorder.copies.back();
  BOOST_TEST(d2d.src_stream == gpu0.stream);
  BOOST_TEST(d2d.dst_stream == gpu1_stream);
  BOOST_TEST(d2d.src_ordinal == 0);
  BOOST_TEST(d2d.dst_ordinal == 0);  // two logical GPUs on one physical GPU
}

BOOST_AUTO_TEST_SUITE_END()
