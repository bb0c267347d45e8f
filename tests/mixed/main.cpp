#include <cstdio>
#include <cstring>
#include <iterator>

#include "flavour_probe.hpp"

int main() {
#if PROBE_WITH_NCCL
  const probe::Report reports[] = {probe::host_report(), probe::cudart_report(), probe::nvcc_report(),
                                   probe::nccl_report()};
  const bool nccl_linked = true;
#else
  const probe::Report reports[] = {probe::host_report(), probe::cudart_report(), probe::nvcc_report()};
  const bool nccl_linked = false;
#endif
  const char* expected_flavour[] = {"host", "cudart", "nvcc", "cudart"};
  const bool expected_gpu_kernel[] = {false, false, true, false};
  int failures = 0;
  for (std::size_t i = 0; i < std::size(reports); ++i) {
    const auto& r = reports[i];
    std::printf("%-6s gpu kernel %d, context %p, CUDA platform registered %d, NCCL kernel %d\n", r.flavour,
                r.gpu_kernel, r.context, r.cuda_platform_registered, r.nccl_available);
    if (std::strcmp(r.flavour, expected_flavour[i]) != 0) ++failures;
    if (r.gpu_kernel != expected_gpu_kernel[i]) ++failures;
    if (r.context != reports[0].context) ++failures;  // one Context for the whole program
    if (!r.cuda_platform_registered) ++failures;      // registered by the CUDA-flavoured TUs
    if (r.nccl_available != nccl_linked) ++failures;  // one NCCL TU makes it available to every TU
  }
  // A tensor made in the host TU, doubled in the nvcc TU, summed in the cudart TU.
  const float sum = probe::cudart_sum(probe::nvcc_twice(probe::host_make())).item();
  std::printf("host -> nvcc -> cudart tensor: sum %.1f (expected 12.0)\n", static_cast<double>(sum));
  if (sum != 12.0f) ++failures;
  std::printf(failures == 0 ? "mixed flavours: OK\n" : "mixed flavours: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
