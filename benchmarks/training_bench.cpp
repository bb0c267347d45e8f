// One training step of a small MLP (32 -> 64 -> 64 -> 1, ReLU, MSE, SGD) three ways, same run:
//   BM_TrainStep_Manual  the forward pass, hand-derived gradients and the update, written with ops;
//   BM_TrainStep_Tape    the same forward pass and update, gradients from GradientTape;
//   BM_TrainStep_Keras   the same model as nn::Sequential, Sequential::train_step (op by op);
//   BM_TrainStep_KerasTraced  the same, train_on_batch: the step fit runs, traced (issue 30);
//   BM_TrainStep_Traced  BM_TrainStep_Tape's step traced by dt::function (issue 29: not slower);
//   BM_TrainStep_Classifier  a softmax classifier's train_on_batch with "accuracy" (issue 31);
//   BM_TrainStep_ConvTutorial  the "Distributed training with Keras" model's train_on_batch at
//     batch 64 of 28x28x1 (TensorFlow's tf.function step: benchmarks/tf_conv_bench.py).
// Tape / Manual is the tape's overhead; Keras / Manual adds the layer and loss machinery.
// Keras's fit over host data, 8 batches of 256 per epoch (one iteration is one epoch):
//   BM_FitEpoch/0  over Dataset::from_tensor_slices(x, y).batch(256);
//   BM_FitEpoch/1  fit(x, y) without shuffling; BM_FitEpoch/2  fit(x, y), shuffled (Keras's default);
//   the reference: 8 × BM_TrainStep_KerasTraced/256 (train_on_batch on a batch made beforehand).
// The input pipeline alone, a pass of 8 batches of 256 rows of 1024 floats and one float:
//   BM_DatasetPass/0  from_tensor_slices(x, y).batch(256); /1 the same shuffled (buffer 2048);
//   /2 from_tensors(a row of x, a row of y).repeat(2048).batch(256): a tensor per element, stacked;
//   /3 /0 prefetched (AUTOTUNE): the hand-over between the pipeline's thread and the reader's;
//   BM_DatasetPass_Memcpy  the reference: memcpy of the same bytes.
// The optimizer update alone, one variable of N floats, three ways:
//   BM_AdamUpdate_Loop      the reference: Keras's Adam formulas as one plain C++ loop over vectors;
//   BM_AdamUpdate_Fused     nn::optimizers::Adam::apply_gradients (ResourceApplyAdam, in place);
//   BM_AdamUpdate_Composed  the same update written with devtensor's elementwise ops.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <devtensor/devtensor.hpp>
#include <devtensor/ops/cpu/convolution_engine.hpp>  // which engine runs Conv2D (the label)

namespace dt = devtensor;

namespace {

constexpr std::int64_t kIn = 32;
constexpr std::int64_t kHidden = 64;
constexpr float kLearningRate = 0.01f;

struct Mlp {
  std::vector<dt::Variable<float>> vars;  // W1 b1 W2 b2 W3 b3
  explicit Mlp(std::uint64_t seed) {
    auto w = [&](std::int64_t in, std::int64_t out) {
      return dt::Variable<float>(
          dt::random_uniform<float>(dt::Shape({in, out}), {.minval = -0.2, .maxval = 0.2, .seed = seed++}));
    };
    auto b = [](std::int64_t n) { return dt::Variable<float>(dt::zeros<float>(dt::Shape({n}))); };
    vars = {w(kIn, kHidden), b(kHidden), w(kHidden, kHidden), b(kHidden), w(kHidden, 1), b(1)};
  }
};

struct Batch {
  dt::Tensor<float> x;
  dt::Tensor<float> y;
  explicit Batch(std::int64_t n)
      : x(dt::random_normal<float>(dt::Shape({n, kIn}), {.seed = 1})),
        y(dt::random_normal<float>(dt::Shape({n, 1}), {.seed = 2})) {}
};

void update(const std::vector<dt::Variable<float>>& vars, const std::vector<dt::Tensor<float>>& grads) {
  const auto lr = dt::scalar<float>(kLearningRate);
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign_sub(dt::mul(grads[i], lr));
}

void BM_TrainStep_Manual(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  Mlp mlp(10);
  Batch batch(state.range(0));
  const auto& v = mlp.vars;
  const auto scale = dt::scalar<float>(2.0f / static_cast<float>(state.range(0)));
  for (auto _ : state) {
    const auto w1 = v[0].value(), b1 = v[1].value(), w2 = v[2].value(), b2 = v[3].value(), w3 = v[4].value(),
               b3 = v[5].value();
    const auto h1 = dt::relu(dt::add(dt::matmul(batch.x, w1), b1));
    const auto h2 = dt::relu(dt::add(dt::matmul(h1, w2), b2));
    const auto p = dt::add(dt::matmul(h2, w3), b3);
    const auto diff = dt::sub(p, batch.y);
    const auto loss = dt::reduce_mean(dt::square(diff));
    // Backward by hand: d loss / d p = 2 (p - y) / n.
    const auto dp = dt::mul(diff, scale);
    const auto dz2 = dt::grad_ops::relu_grad(dt::matmul(dp, w3, false, true), h2);
    const auto dz1 = dt::grad_ops::relu_grad(dt::matmul(dz2, w2, false, true), h1);
    update(v, {dt::matmul(batch.x, dz1, true, false), dt::reduce_sum(dz1, 0), dt::matmul(h1, dz2, true, false),
               dt::reduce_sum(dz2, 0), dt::matmul(h2, dp, true, false), dt::reduce_sum(dp, 0)});
    benchmark::DoNotOptimize(loss.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_TrainStep_Traced(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  Mlp mlp(10);
  Batch batch(state.range(0));
  const auto& v = mlp.vars;
  auto step = dt::function([&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    dt::GradientTape tape;
    const auto h1 = dt::relu(dt::add(dt::matmul(x, v[0].value()), v[1].value()));
    const auto h2 = dt::relu(dt::add(dt::matmul(h1, v[2].value()), v[3].value()));
    const auto p = dt::add(dt::matmul(h2, v[4].value()), v[5].value());
    const auto loss = dt::reduce_mean(dt::square(dt::sub(p, y)));
    update(v, tape.gradient(loss, v));
    return loss;
  });
  for (auto _ : state) benchmark::DoNotOptimize(step(batch.x, batch.y));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_TrainStep_Tape(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  Mlp mlp(10);
  Batch batch(state.range(0));
  const auto& v = mlp.vars;
  for (auto _ : state) {
    dt::GradientTape tape;
    const auto h1 = dt::relu(dt::add(dt::matmul(batch.x, v[0].value()), v[1].value()));
    const auto h2 = dt::relu(dt::add(dt::matmul(h1, v[2].value()), v[3].value()));
    const auto p = dt::add(dt::matmul(h2, v[4].value()), v[5].value());
    const auto loss = dt::reduce_mean(dt::square(dt::sub(p, batch.y)));
    update(v, tape.gradient(loss, v));
    benchmark::DoNotOptimize(loss.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

/// The same MLP as a Keras model.
dt::nn::Sequential keras_mlp() {
  dt::nn::Sequential model({dt::nn::Dense(kHidden, {.input_dim = kIn, .activation = dt::nn::Activation::relu}),
                            dt::nn::Dense(kHidden, {.activation = dt::nn::Activation::relu}), dt::nn::Dense(1)});
  model.compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = kLearningRate});
  return model;
}

void BM_TrainStep_Keras(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  auto model = keras_mlp();
  Batch batch(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(model.train_step(batch.x, batch.y).first);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_TrainStep_KerasTraced(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  auto model = keras_mlp();
  Batch batch(state.range(0));
  benchmark::DoNotOptimize(model.train_on_batch(batch.x, batch.y));  // traced before the timing
  for (auto _ : state) benchmark::DoNotOptimize(model.train_on_batch(batch.x, batch.y));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_FitEpoch(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  constexpr std::int64_t kBatch = 256, kSteps = 8;
  auto model = keras_mlp();
  const Batch data(kBatch * kSteps);
  const auto dataset = dt::data::Dataset<float, float>::from_tensor_slices(data.x, data.y).batch(kBatch);
  const auto source = state.range(0);
  const auto epoch = [&] {
    if (source == 0) return model.fit(dataset, {.epochs = 1, .verbose = 0});
    return model.fit(data.x, data.y,
                     {.epochs = 1, .batch_size = kBatch, .verbose = 0, .shuffle = source == 2, .seed = 1});
  };
  epoch();  // traced before the timing
  for (auto _ : state) benchmark::DoNotOptimize(epoch().loss.back());
  state.SetItemsProcessed(state.iterations() * kBatch * kSteps);
}

constexpr std::int64_t kPipelineRows = 2048, kPipelineBatch = 256, kPipelineFeatures = 1024;

void BM_DatasetPass(benchmark::State& state) {
  const auto x = dt::random_normal<float>(dt::Shape({kPipelineRows, kPipelineFeatures}), {.seed = 1});
  const auto y = dt::random_normal<float>(dt::Shape({kPipelineRows, 1}), {.seed = 2});
  auto dataset = dt::data::Dataset<float, float>::from_tensor_slices(x, y);
  if (state.range(0) == 1) dataset = dataset.shuffle(kPipelineRows, 1);
  if (state.range(0) == 2)
    dataset = dt::data::Dataset<float, float>::from_tensors(
                  dt::random_normal<float>(dt::Shape({kPipelineFeatures}), {.seed = 3}),
                  dt::random_normal<float>(dt::Shape({1}), {.seed = 4}))
                  .repeat(kPipelineRows);
  auto batches = dataset.batch(kPipelineBatch);
  if (state.range(0) == 3) batches = batches.prefetch(dt::data::AUTOTUNE);
  for (auto _ : state)
    for (const auto& [xb, yb] : batches) benchmark::DoNotOptimize(xb.data());
  state.SetBytesProcessed(state.iterations() * kPipelineRows * (kPipelineFeatures + 1) * 4);
}
void BM_DatasetPass_Memcpy(benchmark::State& state) {
  const std::vector<float> x(kPipelineRows * kPipelineFeatures, 1.0f), y(kPipelineRows, 2.0f);
  std::vector<float> xb(kPipelineBatch * kPipelineFeatures), yb(kPipelineBatch);
  for (auto _ : state)
    for (std::int64_t b = 0; b < kPipelineRows; b += kPipelineBatch) {
      std::memcpy(xb.data(), x.data() + b * kPipelineFeatures, xb.size() * sizeof(float));
      std::memcpy(yb.data(), y.data() + b, yb.size() * sizeof(float));
      benchmark::DoNotOptimize(xb.data());
      benchmark::DoNotOptimize(yb.data());
      benchmark::ClobberMemory();
    }
  state.SetBytesProcessed(state.iterations() * kPipelineRows * (kPipelineFeatures + 1) * 4);
}

// A classifier's step (issue 31): 64 features -> Dense(128, relu) -> Dense(10, softmax), sparse
// categorical cross-entropy, SGD, "accuracy" computed every step, as Keras's train_on_batch does;
// range(1): 1 traced (fit's default), 0 op by op. TensorFlow's numbers: benchmarks/RESULTS.md.
void BM_TrainStep_Classifier(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  dt::nn::Sequential model({dt::nn::Dense(128, {.input_dim = 64, .activation = dt::nn::Activation::relu}),
                            dt::nn::Dense(10, {.activation = dt::nn::Activation::softmax})});
  model.compile("sparse_categorical_crossentropy", dt::nn::optimizers::SGD{.learning_rate = kLearningRate},
                {.metrics = {"accuracy"}, .run_eagerly = state.range(1) == 0});
  const auto n = state.range(0);
  const auto x = dt::random_normal<float>(dt::Shape({n, 64}), {.seed = 1});
  std::vector<float> classes(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<float>((i * 7) % 10);
  const auto labels = dt::constant<float>(classes, dt::Shape({n}));
  benchmark::DoNotOptimize(model.train_on_batch(x, labels));  // traced before the timing
  for (auto _ : state) benchmark::DoNotOptimize(model.train_on_batch(x, labels));
  state.SetItemsProcessed(state.iterations() * n);
}

constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-7;

void BM_AdamUpdate_Loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> w(n, 0.5f), g(n, 0.01f), m(n, 0.0f), v(n, 0.0f);
  std::int64_t t = 0;
  for (auto _ : state) {
    ++t;
    const auto alpha =
        static_cast<float>(kLearningRate * std::sqrt(1 - std::pow(kBeta2, t)) / (1 - std::pow(kBeta1, t)));
    const auto b1 = static_cast<float>(1 - kBeta1), b2 = static_cast<float>(1 - kBeta2),
               eps = static_cast<float>(kEpsilon);
    float* __restrict wp = w.data();
    float* __restrict mp = m.data();
    float* __restrict vp = v.data();
    const float* __restrict gp = g.data();
    for (std::size_t i = 0; i < n; ++i) {
      mp[i] += (gp[i] - mp[i]) * b1;
      vp[i] += (gp[i] * gp[i] - vp[i]) * b2;
      wp[i] -= (mp[i] * alpha) / (std::sqrt(vp[i]) + eps);
    }
    benchmark::DoNotOptimize(wp);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 7 * 4);  // 4 reads, 3 writes
}
void BM_AdamUpdate_Fused(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  const dt::Shape shape({state.range(0)});
  const std::vector<dt::Variable<float>> vars{dt::Variable<float>(dt::fill<float>(shape, 0.5f))};
  const std::vector<dt::Tensor<float>> grads{dt::fill<float>(shape, 0.01f)};
  const dt::nn::optimizers::Adam adam{.learning_rate = kLearningRate};
  for (auto _ : state) adam.apply_gradients(grads, vars);
  state.SetBytesProcessed(state.iterations() * state.range(0) * 7 * 4);
}
void BM_AdamUpdate_Composed(benchmark::State& state) {
  dt::DeviceScope cpu("/cpu:0");
  const dt::Shape shape({state.range(0)});
  const dt::Variable<float> w(dt::fill<float>(shape, 0.5f));
  const auto g = dt::fill<float>(shape, 0.01f);
  auto m = dt::zeros<float>(shape), v = dt::zeros<float>(shape);
  const auto b1 = dt::scalar<float>(static_cast<float>(1 - kBeta1)),
             b2 = dt::scalar<float>(static_cast<float>(1 - kBeta2));
  const auto eps = dt::scalar<float>(static_cast<float>(kEpsilon));
  std::int64_t t = 0;
  for (auto _ : state) {
    ++t;
    const auto alpha = dt::scalar<float>(
        static_cast<float>(kLearningRate * std::sqrt(1 - std::pow(kBeta2, t)) / (1 - std::pow(kBeta1, t))));
    m = dt::add(m, dt::mul(dt::sub(g, m), b1));
    v = dt::add(v, dt::mul(dt::sub(dt::square(g), v), b2));
    w.assign_sub(dt::div(dt::mul(m, alpha), dt::add(dt::sqrt(v), eps)));
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 7 * 4);
}

}  // namespace

// TensorFlow's tutorial model (Conv2D(32, 3, relu), MaxPooling2D, Flatten, Dense(64, relu),
// Dense(10)), SparseCategoricalCrossentropy from logits, Adam, "accuracy": one traced step. The
// argument: 1 with oneDNN's convolutions where the program links devtensor::onednn, 0 without.
void BM_TrainStep_ConvTutorial(benchmark::State& state) {
  namespace nn = dt::nn;
  dt::config::experimental::enable_onednn_opts(state.range(0) != 0);
  const auto* engine = dt::ops::cpu::convolution_engine();
  state.SetLabel(engine != nullptr ? std::string(engine->name) : "im2col");
  dt::DeviceScope cpu("/cpu:0");
  nn::Sequential model(
      {nn::Conv2D(32, 3, {.activation = nn::Activation::relu, .input_shape = nn::PartialShape{28, 28, 1}}),
       nn::MaxPooling2D(), nn::Flatten(), nn::Dense(64, {.activation = nn::Activation::relu}), nn::Dense(10)});
  model.compile(nn::losses::SparseCategoricalCrossentropy{.from_logits = true}, nn::optimizers::Adam{},
                {.metrics = {"accuracy"}});
  const auto x = dt::random_uniform<float>(dt::Shape({64, 28, 28, 1}), {.seed = 1});
  std::vector<float> classes(64);
  for (std::size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<float>((i * 7) % 10);
  const auto labels = dt::constant<float>(classes, dt::Shape({64}));
  benchmark::DoNotOptimize(model.train_on_batch(x, labels));  // traced before the timing
  for (auto _ : state) benchmark::DoNotOptimize(model.train_on_batch(x, labels));
  dt::config::experimental::enable_onednn_opts(true);
}

BENCHMARK(BM_AdamUpdate_Loop)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_AdamUpdate_Fused)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_AdamUpdate_Composed)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_TrainStep_Manual)->Arg(8)->Arg(64)->Arg(512);
BENCHMARK(BM_TrainStep_Tape)->Arg(8)->Arg(64)->Arg(512);
BENCHMARK(BM_TrainStep_Keras)->Arg(8)->Arg(64)->Arg(512);
BENCHMARK(BM_TrainStep_KerasTraced)->Arg(8)->Arg(64)->Arg(256)->Arg(512);
BENCHMARK(BM_FitEpoch)->DenseRange(0, 2);
BENCHMARK(BM_DatasetPass)->Arg(0)->Arg(1)->Arg(2)->Arg(3);
BENCHMARK(BM_DatasetPass_Memcpy);
BENCHMARK(BM_TrainStep_Traced)->Arg(8)->Arg(64)->Arg(512);
BENCHMARK(BM_TrainStep_Classifier)->ArgsProduct({{8, 64, 512}, {0, 1}});
BENCHMARK(BM_TrainStep_ConvTutorial)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
