// Walkthrough 3: device scopes. A scope requests a device for the ops inside it; nested scopes
// merge with override semantics, as TensorFlow's `with tf.device(...)` does.
#include <devtensor/tensors.hpp>

#include <cstdio>
#include <thread>

namespace dt = devtensor;

static void show(const char* label) {
  std::printf("%-40s -> '%s'\n", label, dt::current_device_spec().to_string().c_str());
}

int main() {
  show("no scope");
  {
    dt::DeviceScope gpu1("/gpu:1");
    show("DeviceScope(\"/gpu:1\")");
    {
      dt::DeviceScope job("/job:worker/task:2");
      show("  nested DeviceScope(\"/job:worker/task:2\")");
      {
        dt::DeviceScope cpu(dt::cpu, 0);
        show("    nested DeviceScope(dt::cpu, 0)");
      }
    }
    {
      dt::DeviceScope reset(std::nullopt);
      show("  DeviceScope(std::nullopt) resets");
    }
  }
  {
    dt::DeviceScope local("GPU:0");
    show("DeviceScope(\"GPU:0\") (local form)");
  }
  // Scopes are per thread.
  dt::DeviceScope outer("/cpu:0");
  std::thread([] { show("another thread sees its own stack"); }).join();
  show("this thread");

  // Names print canonically and merge like TensorFlow's DeviceNameUtils.
  auto a = dt::DeviceSpec::parse("/job:w/device:CPU:0");
  auto b = dt::DeviceSpec::parse("/gpu:1");
  std::printf("\n'%s' overridden by '%s' = '%s'\n", a.to_string().c_str(), b.to_string().c_str(),
              a.overridden_by(b).to_string().c_str());
  std::printf("soft merge = '%s'\n", a.merged(b, /*allow_soft_placement=*/true).to_string().c_str());
  try {
    (void)a.merged(b);
  } catch (const dt::InvalidArgumentError& e) {
    std::printf("strict merge: %s\n", e.what());
  }
  try {
    dt::DeviceScope bad("/gpu:one");
  } catch (const dt::InvalidArgumentError& e) {
    std::printf("bad scope: %s\n", e.what());
  }
  return 0;
}
