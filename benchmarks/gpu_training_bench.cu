// Training on one GPU, the step issue 15 measures against PyTorch eager (benchmarks/torch_mlp_step.py
// runs the same model and step; scripts/gpu-check runs both in the same session and prints the
// ratios): an MLP 1024 -> H -> H -> 1 (ReLU, MSE), batch 256, H = 256 and 4096; and issue 62's
// convolutional tutorial model (BM_ConvTutorialStep, beside benchmarks/torch_conv_tutorial_step.py;
// BM_ConvTutorialStepBf16 under mixed_bfloat16, beside the script's autocast step).
//   BM_MlpStep_Tape<SGD|Adam>/H  GradientTape + apply_gradients, data resident on GPU:0;
//   BM_MlpStep_Fit/H             Sequential::fit over 8 host batches per epoch (host data, as
//                                Keras users pass NumPy arrays): one iteration is 8 steps; the
//                                step traced (Keras's default); BM_MlpStep_FitEager: run_eagerly;
//                                BM_MlpStep_FitResident: traced, over batches already on the GPU;
//                                BM_MlpStep_FitResidentBf16: the same under mixed_bfloat16
//                                (issue 65, beside PyTorch's torch.autocast(dtype=torch.bfloat16)).
//   BM_MlpStep_TracedSGD/H       the tape step as a dt::function, op by op;
//   BM_MlpStep_CudaGraphSGD/H    the same replayed as a CUDA graph (FunctionOptions::cuda_graph).
// Each iteration ends with a stream synchronisation (the PyTorch script synchronises per step
// too), so the time is a step's latency, not launch throughput. Without a GPU it prints
// "skipped" and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <string>
#include <vector>

#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cuda/convolution_engine.hpp"

namespace dt = devtensor;
namespace nn = devtensor::nn;

namespace {

constexpr std::int64_t kBatch = 256;
constexpr std::int64_t kIn = 1024;
constexpr double kLearningRate = 0.01;

void synchronize_gpu0() {
  for (const auto& d : dt::Context::global().devices())
    if (d.is_gpu && !d.simulated) {
      DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(dt::backend::cuda::stream_of(d)));
      return;
    }
}

struct Mlp {
  std::vector<dt::Variable<float>> vars;
  explicit Mlp(std::int64_t hidden) {
    std::uint64_t seed = 1;
    const auto w = [&](std::int64_t in, std::int64_t out) {
      const double limit = std::sqrt(6.0 / static_cast<double>(in + out));  // Glorot uniform, as both frameworks
      return dt::Variable<float>(
          dt::random_uniform<float>({in, out}, {.minval = -limit, .maxval = limit, .seed = seed++}));
    };
    const auto b = [](std::int64_t n) { return dt::Variable<float>(dt::zeros<float>({n})); };
    vars = {w(kIn, hidden), b(hidden), w(hidden, hidden), b(hidden), w(hidden, 1), b(1)};
  }
  template <class Optimizer>
  dt::Tensor<float> step(const Optimizer& optimizer, const dt::Tensor<float>& x, const dt::Tensor<float>& y) const {
    dt::GradientTape tape;
    const auto h1 = dt::relu(dt::add(dt::matmul(x, vars[0].value()), vars[1].value()));
    const auto h2 = dt::relu(dt::add(dt::matmul(h1, vars[2].value()), vars[3].value()));
    const auto p = dt::add(dt::matmul(h2, vars[4].value()), vars[5].value());
    auto loss = dt::reduce_mean(dt::square(dt::sub(p, y)));
    optimizer.apply_gradients(tape.gradient(loss, vars), vars);
    return loss;
  }
};

template <class Optimizer>
void BM_MlpStep_Tape(benchmark::State& state) {
  dt::DeviceScope gpu("/gpu:0");
  const Mlp mlp(state.range(0));
  const auto x = dt::random_normal<float>({kBatch, kIn}, {.seed = 11});
  const auto y = dt::random_normal<float>({kBatch, 1}, {.seed = 12});
  const Optimizer optimizer{.learning_rate = kLearningRate};
  for (int i = 0; i < 3; ++i) mlp.step(optimizer, x, y);  // warm-up: pool regions, cuBLAS handle
  synchronize_gpu0();
  for (auto _ : state) {
    benchmark::DoNotOptimize(mlp.step(optimizer, x, y));
    synchronize_gpu0();
  }
  state.counters["variables_on_gpu"] = mlp.vars[0].component(0).host_memory() ? 0 : 1;
  state.SetItemsProcessed(state.iterations() * kBatch);
}

const dt::Device& gpu0() {
  for (const auto& d : dt::Context::global().devices())
    if (d.is_gpu && !d.simulated) return d;
  throw dt::NotFoundError("no GPU");
}

// The tape step traced (dt::function): op by op through the executor, or replayed as a CUDA graph
// (issue 30; PyTorch's reference: torch_mlp_step.py's torch_MlpStepGraph_SGD). Counters: whether
// the graph replays (1) or fell back (0, with a WARNING in the output), and the GPU allocator's
// allocations per step (0 is the goal of a replay).
void mlp_step_traced(benchmark::State& state, bool cuda_graph) {
  dt::DeviceScope gpu("/gpu:0");
  const Mlp mlp(state.range(0));
  const auto x = dt::random_normal<float>({kBatch, kIn}, {.seed = 11});
  const auto y = dt::random_normal<float>({kBatch, 1}, {.seed = 12});
  const nn::optimizers::SGD optimizer{.learning_rate = kLearningRate};
  auto step = dt::function(
      [&](const dt::Tensor<float>& xs, const dt::Tensor<float>& ys) { return mlp.step(optimizer, xs, ys); },
      {.name = "train_step", .cuda_graph = cuda_graph});
  for (int i = 0; i < 3; ++i) step(x, y);  // warm-up, then the capture
  synchronize_gpu0();
  const auto allocations_before = gpu0().allocator->stats().num_allocs;
  for (auto _ : state) {
    benchmark::DoNotOptimize(step(x, y));
    synchronize_gpu0();
  }
  const auto* replay = step.get_concrete_function(x, y)->cuda_graph();
  state.counters["replayed"] = replay && replay->stage() == dt::graph::CudaGraphReplay::Stage::replay ? 1 : 0;
  state.counters["allocs_per_step"] = static_cast<double>(gpu0().allocator->stats().num_allocs - allocations_before) /
                                      static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * kBatch);
}
void BM_MlpStep_TracedSGD(benchmark::State& state) { mlp_step_traced(state, false); }
void BM_MlpStep_CudaGraphSGD(benchmark::State& state) { mlp_step_traced(state, true); }

// fit's step beside the tape loop's: FitEager / Fit splits the executor's share of the difference,
// Fit / FitResident the host batches' (slicing, the pageable 1 MiB upload per step; bench_gpu's
// BM_Upload* time the upload alone).
void mlp_step_fit(benchmark::State& state, bool run_eagerly, bool resident = false, const char* policy = "float32") {
  const std::int64_t hidden = state.range(0);
  constexpr std::int64_t kSteps = 8;
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host(resident ? "/gpu:0" : "/cpu:0");
    x = dt::random_normal<float>({kBatch * kSteps, kIn}, {.seed = 11});
    y = dt::random_normal<float>({kBatch * kSteps, 1}, {.seed = 12});
  }
  dt::DeviceScope gpu("/gpu:0");
  nn::mixed_precision::set_global_policy(policy);  // the layers constructed next take it
  nn::Sequential model({nn::Dense(hidden, {.input_dim = kIn, .activation = nn::Activation::relu}),
                        nn::Dense(hidden, {.activation = nn::Activation::relu}), nn::Dense(1, {.dtype = "float32"})});
  nn::mixed_precision::set_global_policy("float32");
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = kLearningRate});
  model.set_run_eagerly(run_eagerly);
  const auto data = dt::data::Dataset<float, float>::from_tensor_slices(x, y).batch(kBatch);
  model.fit(data, {.epochs = 1, .verbose = 0});  // warm-up
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.fit(data, {.epochs = 1, .verbose = 0}).loss.back());
    synchronize_gpu0();
  }
  state.SetItemsProcessed(state.iterations() * kBatch * kSteps);
}
void BM_MlpStep_Fit(benchmark::State& state) { mlp_step_fit(state, false); }  // traced, Keras's default
void BM_MlpStep_FitEager(benchmark::State& state) { mlp_step_fit(state, true); }
void BM_MlpStep_FitResident(benchmark::State& state) { mlp_step_fit(state, false, true); }
void BM_MlpStep_FitResidentBf16(benchmark::State& state) { mlp_step_fit(state, false, true, "mixed_bfloat16"); }

// TensorFlow's "Distributed training with Keras" model (Conv2D(32, 3, relu), MaxPooling2D, Flatten,
// Dense(64, relu), Dense(10); SparseCategoricalCrossentropy from logits, Adam, accuracy) on GPU:0,
// train_on_batch at batch 64 of 28x28x1 with the batch on the GPU (issue 62's goal: <= 1.0x
// PyTorch eager, benchmarks/torch_conv_tutorial_step.py). The label names the convolution engine:
// cuDNN where this program links devtensor::cudnn, else the patches + cuBLAS bodies.
// Under mixed_bfloat16 (BM_ConvTutorialStepBf16) the logits layer stays float32, as Keras's guide
// writes a mixed-precision model's last layer.
void conv_tutorial_step(benchmark::State& state, const char* policy) {
  dt::DeviceScope gpu("/gpu:0");
  const auto* engine = dt::ops::cuda::convolution_engine();
  state.SetLabel(engine != nullptr ? std::string(engine->name) : "patches + cuBLAS");
  nn::mixed_precision::set_global_policy(policy);
  nn::Sequential model(
      {nn::Conv2D(32, 3, {.activation = nn::Activation::relu, .input_shape = nn::PartialShape{28, 28, 1}}),
       nn::MaxPooling2D(), nn::Flatten(), nn::Dense(64, {.activation = nn::Activation::relu}),
       nn::Dense(10, {.dtype = "float32"})});
  nn::mixed_precision::set_global_policy("float32");
  model.compile(nn::losses::SparseCategoricalCrossentropy{.from_logits = true}, nn::optimizers::Adam{},
                {.metrics = {"accuracy"}});
  const auto x = dt::random_uniform<float>({64, 28, 28, 1}, {.seed = 1});
  std::vector<float> classes(64);
  for (std::size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<float>((i * 7) % 10);
  const auto labels = dt::constant<float>(classes, dt::Shape({64}));
  for (int i = 0; i < 3; ++i) benchmark::DoNotOptimize(model.train_on_batch(x, labels));  // traced, warm
  synchronize_gpu0();
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.train_on_batch(x, labels));
    synchronize_gpu0();
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
void BM_ConvTutorialStep(benchmark::State& state) { conv_tutorial_step(state, "float32"); }
void BM_ConvTutorialStepBf16(benchmark::State& state) { conv_tutorial_step(state, "mixed_bfloat16"); }

}  // namespace

BENCHMARK(BM_ConvTutorialStep)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvTutorialStepBf16)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_Tape<nn::optimizers::SGD>)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_Tape<nn::optimizers::Adam>)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_TracedSGD)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_CudaGraphSGD)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_Fit)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_FitEager)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_FitResident)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep_FitResidentBf16)->Arg(256)->Arg(4096)->UseRealTime()->Unit(benchmark::kMicrosecond);

// main: gpu_bench_main.cpp (skips without a CUDA device).
