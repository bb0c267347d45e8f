// The Context's side of the CUDA backend, through the recording GPU platform of
// fake_gpu_platform.hpp: one stream per logical real GPU at its virtual device's priority, streams
// destroyed with the Context, copies routed to the platform with the right streams and ordinals.
// The CUDA implementation of the same interface runs in tests/gpu on a real GPU.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace cfg = devtensor::config;

namespace {
auto& recorder = dt::test::fake_gpu_recorder();
}  // namespace

BOOST_FIXTURE_TEST_SUITE(platform_streams, dt::test::FakeGpuPlatform)

BOOST_AUTO_TEST_CASE(each_logical_gpu_gets_a_stream_at_its_priority) {
  const auto gpus = cfg::list_physical_devices("GPU");
  BOOST_TEST_REQUIRE(gpus.size() == 1u);
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 64, .experimental_priority = -2},
                                                  {.memory_limit_mb = 64, .experimental_priority = 0}});
  const auto& devices = dt::Context::global().devices();
  BOOST_TEST_REQUIRE(recorder.created.size() == 2u);
  BOOST_TEST(recorder.created[0].second == -2);
  BOOST_TEST(recorder.created[1].second == 0);
  std::vector<void*> streams;
  for (const auto& d : devices) {
    if (d.is_gpu)
      streams.push_back(d.stream);
    else
      BOOST_TEST(d.stream == nullptr);
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
  const auto& devices = dt::Context::global().devices();
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
    // identity needs no kernel body (a copy): it runs on GPU:1, its input copied GPU:0 -> GPU:1
    // with both streams named.
    on1 = dt::identity(on0);
  }
  BOOST_TEST(on1.device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  const auto& last = recorder.copies.back();
  BOOST_TEST(last.src_stream == gpu0.stream);
  BOOST_TEST(last.dst_stream == on1.device_info().stream);
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
  auto on_gpu1 = dt::Tensor<float>::empty({3}, devices[static_cast<std::size_t>(gpu1_logical_index)], "test");
  BOOST_TEST_REQUIRE(on_gpu1.device_info().stream == gpu1_stream);
  dt::copy_bytes(on_gpu1.mutable_data(), on_gpu1.device_info(), on0.data(), gpu0, 3 * sizeof(float));
  const auto& d2d = recorder.copies.back();
  BOOST_TEST(d2d.src_stream == gpu0.stream);
  BOOST_TEST(d2d.dst_stream == gpu1_stream);
  BOOST_TEST(d2d.src_ordinal == 0);
  BOOST_TEST(d2d.dst_ordinal == 0);  // two logical GPUs on one physical GPU
}

BOOST_AUTO_TEST_SUITE_END()
