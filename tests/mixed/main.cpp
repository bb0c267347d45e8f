#include <cstdio>
#include <iterator>

#include "probe.hpp"

int main() {
  const probe::Report reports[] = {probe::host_report(), probe::nvcc_report()};
#if PROBE_WITH_NCCL
  const bool nccl_linked = true;
#else
  const bool nccl_linked = false;
#endif
  const bool gpus = !devtensor::config::list_physical_devices("GPU").empty();
  const std::string expected_device =
      std::string("/job:localhost/replica:0/task:0/device:") + (gpus ? "GPU:0" : "CPU:0");
  int failures = 0;
  for (const auto& r : reports) {
    std::printf("%-9s AddV2 slot %p, GPU body %d, context %p, CUDA platform %d, NCCL kernel %d, add on %s\n", r.part,
                r.add_slot, r.add_gpu_body, r.context, r.cuda_platform, r.nccl_available, r.add_device.c_str());
    if (r.add_slot != reports[0].add_slot) ++failures;  // one registry slot for the whole program
    if (r.context != reports[0].context) ++failures;    // one Context
    if (!r.add_gpu_body) ++failures;                    // the kernel TU registered it for everyone
    if (!r.cuda_platform) ++failures;
    if (r.nccl_available != nccl_linked) ++failures;
    if (r.add_device != expected_device) ++failures;  // the same placement from .cpp and .cu
  }
  // A tensor made in the host TU, doubled in the nvcc TU, summed in the host TU.
  const float sum = probe::host_sum(probe::nvcc_twice(probe::host_make())).item();
  std::printf("host -> nvcc -> host tensor: sum %.1f (expected 12.0)\n", static_cast<double>(sum));
  if (sum != 12.0f) ++failures;
  std::printf(failures == 0 ? "one program, one registry: OK\n" : "one program, one registry: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
