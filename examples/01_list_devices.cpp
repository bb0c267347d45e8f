// Walkthrough 1: what devices does this machine have?
//   ./01_list_devices                                  # the CPU (and real GPUs in a CUDA build)
//   DEVTENSOR_SIMULATED_GPUS=2x16GiB ./01_list_devices  # plus two simulated 16 GiB GPUs
#include <devtensor/tensors.hpp>

#include <cstdio>

namespace dt = devtensor;

int main() {
  // Physical devices: listing them does not initialise anything.
  std::printf("Physical devices:\n");
  for (const auto& d : dt::config::list_physical_devices()) std::printf("  %s\n", d.repr().c_str());

  // Logical devices: this initialises the context and freezes the configuration.
  std::printf("Logical devices:\n");
  for (const auto& d : dt::config::list_logical_devices())
    std::printf("  LogicalDevice(name='%s', device_type='%s')\n", d.name.c_str(), d.device_type.c_str());

  // device_lib: the attributes TensorFlow's device_lib.list_local_devices() shows.
  std::printf("Local devices:\n");
  for (const auto& d : dt::device_lib::list_local_devices()) {
    std::printf("  name: \"%s\"\n  device_type: \"%s\"\n  memory_limit: %llu\n", d.name.c_str(), d.device_type.c_str(),
                static_cast<unsigned long long>(d.memory_limit));
    if (!d.physical_device_desc.empty())
      std::printf("  physical_device_desc: \"%s\"\n", d.physical_device_desc.c_str());
  }
  std::printf("Initialised by: %s\n", dt::Context::global().initialization_trigger().c_str());
  return 0;
}
