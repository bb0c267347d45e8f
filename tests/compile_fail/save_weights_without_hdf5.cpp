// A program that calls model.save_weights / load_weights without devtensor's hdf5 component does
// not compile, and the error names the component (it used to fail at run time, after training).
// The control is the same call where the component is linked (devtensor::hdf5 defines this).
#ifndef DEVTENSOR_EXPECT_FAILURE
#define DEVTENSOR_WITH_HDF5 1
#endif
#include <devtensor/nn/model.hpp>
void save_and_reload(devtensor::nn::Model& model) {
  model.save_weights("model.weights.h5");
  model.load_weights("model.weights.h5");
}
int main() {}
