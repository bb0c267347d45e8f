// Walkthrough 2: configure devices before the context initialises: two virtual CPUs (what a
// MirroredStrategy on CPU uses), two simulated GPUs, the first split into two logical GPUs with
// 1 GiB each, growth on the second, and what happens when you configure too late.
#include <devtensor/tensors.hpp>

#include <cstdio>

namespace dt = devtensor;

int main() {
  dt::config::set_simulated_gpus(2, 8 * dt::kGiB);  // or DEVTENSOR_SIMULATED_GPUS=2x8GiB

  auto cpu = dt::config::list_physical_devices("CPU")[0];
  dt::config::set_logical_device_configuration(cpu, {{}, {}});

  auto gpus = dt::config::list_physical_devices("GPU");
  dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 1024}, {.memory_limit_mb = 1024}});

  for (const auto& d : dt::device_lib::list_local_devices())
    std::printf("%-14s %-4s memory_limit %6llu MiB  %s\n", d.name.c_str(), d.device_type.c_str(),
                static_cast<unsigned long long>(d.memory_limit >> 20), d.physical_device_desc.c_str());

  // The context is initialised now; a different configuration is refused, with the reason.
  try {
    dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 2048}});
  } catch (const dt::FailedPreconditionError& e) {
    std::printf("\nToo late: %s\n", e.what());
  }
  // The same configuration again is accepted silently.
  dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 1024}, {.memory_limit_mb = 1024}});
  // Every physical GPU is one logical GPU, except the first, split in two (on a machine with real
  // GPUs the simulated ones come after them).
  return dt::config::list_logical_devices("GPU").size() == gpus.size() + 1 ? 0 : 1;
}
