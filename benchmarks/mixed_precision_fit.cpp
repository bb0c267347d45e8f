// Milliseconds per fit step of an MLP (256 -> 512 -> 512 -> 10, batch 256, 8 steps an epoch, SGD,
// traced) under float32, mixed_bfloat16, mixed_float16 (loss scaled, as compile wraps it) and
// mixed_float16 unscaled, then of the distributed-training tutorial's convolutional network
// (Conv2D(32, 3, relu) on 28x28x1, MaxPooling2D, Flatten, Dense(64, relu), Dense(10), batch 64)
// under float32, mixed_bfloat16 and mixed_float16: benchmarks/RESULTS.md (issue 65);
// benchmarks/mixed_precision_fit.py is the same models in Keras. Not a Google Benchmark: fit's own
// loop is what is timed.
//   DEVTENSOR_CPU_THREADS=1 OPENBLAS_NUM_THREADS=1 ./mixed_precision_fit [epochs] [run]
#include <chrono>
#include <cstdio>
#include <string>
#include "devtensor/devtensor.hpp"
namespace dt = devtensor;
namespace nn = dt::nn;
int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 30;
  const std::string only = argc > 2 ? argv[2] : "";
  std::vector<float> xs(2048 * 256), ys(2048 * 10);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37) % 23) / 23.0f - 0.5f;
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>((i * 11) % 7) / 7.0f;
  const auto x = dt::constant<float>(xs, {2048, 256}), y = dt::constant<float>(ys, {2048, 10});
  for (const std::string run : {"float32", "mixed_bfloat16", "mixed_float16", "mixed_float16/unscaled"}) {
    const std::string policy = run.substr(0, run.find('/'));
    const bool unscaled = run.find('/') != std::string::npos;
    if (!only.empty() && run != only) continue;
    nn::clear_session();
    nn::mixed_precision::set_global_policy(policy);
    nn::Sequential m({nn::Dense(512, {.input_dim = 256, .activation = nn::Activation::relu}),
                      nn::Dense(512, {.activation = nn::Activation::relu}), nn::Dense(10, {.dtype = "float32"})});
    m.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.01},
              {.auto_scale_loss = !unscaled});
    (void)m.fit(x, y, {.epochs = 1, .batch_size = 256, .verbose = 0, .shuffle = false});  // trace, warm
    const auto start = std::chrono::steady_clock::now();
    (void)m.fit(x, y, {.epochs = steps, .batch_size = 256, .verbose = 0, .shuffle = false});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-24s %8.2f ms/step (%s)\n", run.c_str(), ms / (steps * 8), m.optimizer().name().c_str());
  }
  std::vector<float> images(512 * 28 * 28), labels(512 * 10, 0.0f);
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>((i * 37) % 23) / 23.0f;
  for (std::size_t i = 0; i < 512; ++i) labels[i * 10 + (i * 7) % 10] = 1.0f;
  const auto xi = dt::constant<float>(images, {512, 28, 28, 1}), yi = dt::constant<float>(labels, {512, 10});
  for (const std::string policy : {"float32", "mixed_bfloat16", "mixed_float16"}) {
    if (!only.empty() && "conv/" + policy != only) continue;
    nn::clear_session();
    nn::mixed_precision::set_global_policy(policy);
    nn::Sequential m({nn::Conv2D(32, {3, 3}, {.activation = nn::Activation::relu, .input_shape = {{28, 28, 1}}}),
                      nn::MaxPooling2D({2, 2}), nn::Flatten(), nn::Dense(64, {.activation = nn::Activation::relu}),
                      nn::Dense(10, {.dtype = "float32"})});
    m.compile(nn::losses::CategoricalCrossentropy{.from_logits = true}, nn::optimizers::SGD{.learning_rate = 0.01});
    (void)m.fit(xi, yi, {.epochs = 1, .batch_size = 64, .verbose = 0, .shuffle = false});  // trace, warm
    const auto start = std::chrono::steady_clock::now();
    (void)m.fit(xi, yi, {.epochs = steps / 3 + 1, .batch_size = 64, .verbose = 0, .shuffle = false});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-24s %8.2f ms/step (%s)\n", ("conv/" + policy).c_str(), ms / ((steps / 3 + 1) * 8),
                m.optimizer().name().c_str());
  }
}
