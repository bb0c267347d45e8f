// A program that calls model.save, to_json, nn::load_model or model_from_json without devtensor's
// keras_archive component does not compile, and the error names the component (not an
// UnimplementedError at run time). The control is the same calls where the component is linked
// (devtensor::keras_archive defines this).
#ifndef DEVTENSOR_EXPECT_FAILURE
#define DEVTENSOR_WITH_KERAS_ARCHIVE 1
#endif
#include <devtensor/nn/model.hpp>
void save_and_reload(const devtensor::nn::Model& model) {
  model.save("model.keras");
  const auto reloaded = devtensor::nn::load_model("model.keras");
  const auto rebuilt = devtensor::nn::model_from_json(model.to_json());
  (void)reloaded;
  (void)rebuilt;
}
int main() {}
