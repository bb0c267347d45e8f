#include "flavour_probe.hpp"
probe::Report probe::host_report() { return PROBE_REPORT; }
devtensor::Tensor<float> probe::host_make() { return devtensor::constant<float>({1, 2, 3}); }
