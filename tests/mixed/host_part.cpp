// Compiled by the host compiler against devtensor::devtensor only: no CUDA header anywhere.
#include "probe.hpp"
probe::Report probe::host_report() { return make_report("host .cpp"); }
devtensor::Tensor<float> probe::host_make() { return devtensor::constant<float>({1, 2, 3}); }
devtensor::Tensor<float> probe::host_sum(const devtensor::Tensor<float>& t) { return devtensor::reduce_sum(t); }
