// The keras_archive component's code, compiled once per build tree (cmake/devtensorKerasArchiveComponent.cmake
// adds this object to every program that links devtensor::keras_archive): the bodies of model.save,
// to_json, nn::load_model and model_from_json, installed at start-up. A program's own translation
// units then need neither nlohmann_json nor libzip nor these templates (+10 s per TU that included
// them). Without CMake: compile this file once with the component's flags and link its object.
#include "devtensor/saving/keras_archive.hpp"

namespace devtensor::nn::saving {
// Referenced so that a static library holding this object still runs its installer.
const bool& keras_archive_installed = installed;
}  // namespace devtensor::nn::saving
