// Device-name and scope costs, each beside a reference doing the least comparable work:
//   parse a full name         vs  copying the same string into a std::string (one allocation)
//   push+pop a DeviceScope    vs  push+pop of a thread_local std::vector (the bare stack)
//   current_device_spec()     vs  copying a DeviceSpec
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <devtensor/devtensor.hpp>

namespace dt = devtensor;

static constexpr const char* kName = "/job:localhost/replica:0/task:0/device:GPU:1";

static void BM_DeviceSpecParse(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(dt::DeviceSpec::parse(kName));
}
BENCHMARK(BM_DeviceSpecParse);

static void BM_Reference_StringCopy(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::string(kName));
}
BENCHMARK(BM_Reference_StringCopy);

static void BM_DeviceScopePushPop(benchmark::State& state) {
  const auto spec = dt::DeviceSpec::parse("/gpu:1");
  for (auto _ : state) {
    dt::DeviceScope scope(spec);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DeviceScopePushPop);

static void BM_Reference_ThreadLocalVectorPushPop(benchmark::State& state) {
  thread_local std::vector<dt::DeviceSpec> stack;
  const auto spec = dt::DeviceSpec::parse("/job:localhost/replica:0/task:0/device:GPU:1");
  for (auto _ : state) {
    stack.push_back(spec);
    benchmark::ClobberMemory();
    stack.pop_back();
  }
}
BENCHMARK(BM_Reference_ThreadLocalVectorPushPop);

static void BM_CurrentDeviceSpec(benchmark::State& state) {
  dt::DeviceScope scope("/gpu:1");
  for (auto _ : state) benchmark::DoNotOptimize(dt::current_device_spec());
}
BENCHMARK(BM_CurrentDeviceSpec);

static void BM_Reference_DeviceSpecCopy(benchmark::State& state) {
  const auto spec = dt::DeviceSpec::parse(kName);
  for (auto _ : state) {
    dt::DeviceSpec copy = spec;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_Reference_DeviceSpecCopy);
