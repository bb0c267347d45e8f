// Walkthrough 16: a classifier on real data, Keras-style. 1797 handwritten digits (8×8 pixels,
// examples/data/digits.csv, UCI's data set as scikit-learn ships it) train a functional model —
// Dense, Dropout, a softmax over the 10 digits — with the last 20 % held out for validation and
// accuracy reported per epoch. Keras's callbacks steer it: the learning rate halves when the
// validation loss stalls, training stops when it stops improving (the best epoch's weights
// restored), and the best epoch is checkpointed as a Keras 3 weights file (TensorFlow loads it
// with model.load_weights), which a fresh model reloads with the same validation accuracy; every
// epoch's logs go to a CSV file and to TensorBoard's event files (with the traced step's graph and
// weight histograms). The trained model is then saved whole as Keras 3 saves one (digits.keras:
// keras.models.load_model reads it) and loaded back, predicting the same. Needs the
// devtensor::keras_archive component (HDF5, libzip, nlohmann_json).
#include <devtensor/keras.hpp>  // with devtensor::keras_archive linked: model.save, nn::load_model

#include "digits.hpp"

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace dt = devtensor;
namespace nn = dt::nn;

namespace {
nn::Model make_classifier() {
  auto pixels = nn::Input({64}, {.name = "pixels"});
  auto hidden = nn::Dense(64, {.activation = nn::Activation::relu,
                               .kernel_initializer = nn::initializers::GlorotUniform{.seed = 1}})(pixels);
  auto dropped = nn::Dropout(0.2, {.seed = 2})(hidden);
  auto digit = nn::Dense(10, {.activation = nn::Activation::softmax,
                              .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}})(dropped);
  nn::Model model(pixels, digit, {.name = "digits"});
  model.compile("sparse_categorical_crossentropy", nn::optimizers::Adam{.learning_rate = 0.01},
                {.metrics = {"accuracy"}});
  return model;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string data = argc > 1 ? argv[1] : DEVTENSOR_EXAMPLES_DATA_DIR "/digits.csv";
  const auto [x, y] = read_digits(data);
  std::cout << "digits: " << x.shape()[0] << " images of 8x8 pixels\n";

  auto model = make_classifier();
  model.summary();
  const auto folder = std::filesystem::temp_directory_path() / "devtensor_digits";
  std::filesystem::create_directories(folder);
  const auto file = (folder / "best.weights.h5").string();
  const auto logs = std::filesystem::temp_directory_path() / "devtensor_digits_logs";  // kept: tensorboard --logdir
  nn::callbacks::EarlyStopping early{.monitor = "val_loss", .patience = 4, .verbose = 1, .restore_best_weights = true};
  nn::callbacks::ModelCheckpoint best{
      .filepath = file, .monitor = "val_loss", .save_best_only = true, .save_weights_only = true};
  const auto history = model.fit(
      x, y,
      {.epochs = 30,
       .batch_size = 32,
       .verbose = 2,
       .seed = 4,
       .validation_split = 0.2,
       .callbacks = {
           nn::callbacks::ReduceLROnPlateau{.monitor = "val_loss", .factor = 0.5, .patience = 2, .verbose = 1}, early,
           best, nn::callbacks::CSVLogger{.filename = (folder / "training.csv").string()},
           nn::callbacks::TensorBoard{.log_dir = logs.string(), .histogram_freq = 5},
           // Killed part way? Run it again: fit resumes at the last epoch's end.
           nn::callbacks::BackupAndRestore{.backup_dir = (folder / "backup").string()}}});
  const double val_accuracy = history.metrics.at("val_accuracy").at(static_cast<std::size_t>(early.best_epoch()));
  std::cout << "validation accuracy at the best of " << history.loss.size() << " epochs (" << early.best_epoch() + 1
            << "): " << val_accuracy << "; the learning rate ended at " << history.metrics.at("learning_rate").back()
            << "\n";

  // The checkpoint of the best epoch, loaded into a fresh model.
  auto reloaded = make_classifier();
  reloaded.load_weights(file);
  const std::int64_t n = x.shape()[0];
  const auto held_out = n - static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - 0.2));  // fit's split
  const auto x_val = dt::slice(x, {n - held_out, 0}, {held_out, 64});
  const auto y_val = dt::slice(y, {n - held_out}, {held_out});
  const auto before = model.evaluate(x_val, y_val, {.verbose = 0});
  const auto after = reloaded.evaluate(x_val, y_val, {.verbose = 0});
  std::cout << "best epoch's weights saved to " << file << " and reloaded: validation accuracy "
            << after.metrics.at("accuracy") << " (the trained model's: " << before.metrics.at("accuracy") << ")\n";

  // The whole model, architecture and weights, as a Keras 3 archive; loaded back, it predicts alike.
  const auto archive = (folder / "digits.keras").string();
  model.save(archive);
  const auto restored = nn::load_model(archive);
  const bool same = restored->predict(x_val).to_vector() == model.predict(x_val).to_vector();
  std::cout << "saved to " << archive << " (" << std::filesystem::file_size(archive) << " bytes) and loaded back as \""
            << restored->name() << "\" (" << restored->layers().size() << " layers, " << restored->count_params()
            << " parameters): " << (same ? "the same" : "other") << " predictions\n";
  std::cout << "TensorBoard: tensorboard --logdir " << logs.string() << "\n";
  std::filesystem::remove_all(folder);
  return val_accuracy > 0.9 && after.metrics.at("accuracy") == before.metrics.at("accuracy") && same ? 0 : 1;
}
