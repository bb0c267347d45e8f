#include <devtensor/devtensor.hpp>

int main() { return devtensor::KernelRegistry::global().contains({"MatMul", "GPU", "DT_FLOAT"}) ? 0 : 1; }
