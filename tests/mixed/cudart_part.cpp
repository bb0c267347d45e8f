#include "flavour_probe.hpp"
probe::Report probe::cudart_report() { return PROBE_REPORT; }
devtensor::Tensor<float> probe::cudart_sum(const devtensor::Tensor<float>& t) { return devtensor::reduce_sum(t); }
