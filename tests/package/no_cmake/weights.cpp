// Built without CMake by no_cmake.sh with the hdf5 component's flags, as README's one-liner says:
// save_weights and load_weights compile only with -DDEVTENSOR_WITH_HDF5, and <devtensor/keras.hpp>
// then brings the weights-file code; with -DDEVTENSOR_WITH_KERAS_ARCHIVE, the component's object
// (src/devtensor_keras_archive.cpp compiled once) and -lzip also model.save and nn::load_model.
#include <devtensor/keras.hpp>

#include <cstdio>
#include <string>

namespace dt = devtensor;
namespace nn = dt::nn;

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/no_cmake.weights.h5";
  nn::Sequential model;
  model.add(nn::Dense(2, {.input_dim = 3}));
  const auto before = model.trainable_variables()[0].value().to_vector();
  model.save_weights(path);
  model.trainable_variables()[0].assign(dt::zeros<float>(dt::Shape({3, 2})));
  model.load_weights(path);
  bool same = model.trainable_variables()[0].value().to_vector() == before;
  std::printf("weights file %s: %s\n", path.c_str(), same ? "saved and read back" : "DIFFERENT");
#if defined(DEVTENSOR_WITH_KERAS_ARCHIVE)  // the keras_archive component's line: the whole model
  const std::string archive = std::string(argc > 1 ? argv[1] : ".") + "/no_cmake.keras";
  model.save(archive);
  const bool whole = nn::load_model(archive)->trainable_variables()[0].value().to_vector() == before;
  std::printf("model file %s: %s\n", archive.c_str(), whole ? "saved and read back" : "DIFFERENT");
  same = same && whole;
#endif
  return same ? 0 : 1;
}
