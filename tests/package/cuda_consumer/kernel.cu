// The nvcc flavour of the same program.
#include <devtensor/devtensor.hpp>

const char* nvcc_flavour() { return DEVTENSOR_FLAVOUR_NAME; }
