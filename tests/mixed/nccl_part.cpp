// Built with the devtensor::nccl component: including devtensor.hpp registers the NCCL kernel.
#include "flavour_probe.hpp"
probe::Report probe::nccl_report() { return PROBE_REPORT; }
