// Op costs, each beside its reference in the same run:
//   eager add at n = 1 .. 10^6          vs  a raw loop on preallocated buffers (per-op overhead)
//   a no-op op through full dispatch     vs  a virtual call
//   a placement decision alone           vs  an unordered_map<string,int> lookup
//   matmul fp32/fp64 n = 64 .. 2048      vs  cblas_sgemm/dgemm on preallocated buffers
//   add at n = 10^7                      vs  the STREAM add loop
//   softmax over 512 rows of 1000        vs  a loop writing exp(x) once (TensorFlow: RESULTS.md)
// Run with OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX DEVTENSOR_CPU_THREADS=1 for 1-thread
// ratios (benchmarks/RESULTS.md); the OpenBLAS core in use is recorded in the JSON context.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include <devtensor/devtensor.hpp>
#include <devtensor/ops/cpu/convolution_engine.hpp>  // which engine runs Conv2D (the label)
#include <devtensor/ops/cpu/matmul.hpp>              // gemm_backend(): which GEMM the CPU matmul uses

#include "eight_ops.hpp"

#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
#include <cblas.h>
#endif

namespace dt = devtensor;

namespace {

struct NoOp {
  static constexpr std::string_view name = "NoOp";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, dt::cpu_t>;
};

const bool context_recorded = [] {
#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
  benchmark::AddCustomContext("openblas_corename", openblas_get_corename());
  benchmark::AddCustomContext("openblas_num_threads", std::to_string(openblas_get_num_threads()));
#endif
  benchmark::AddCustomContext("devtensor_cpu_threads",
                              std::to_string(dt::backend::cpu::ThreadPool::configured_threads()));
  benchmark::AddCustomContext("devtensor_gemm", dt::ops::cpu::gemm_backend());
  return true;
}();

}  // namespace

static void BM_EagerAdd(benchmark::State& state) {
  const auto n = state.range(0);
  auto a = dt::fill<float>({n}, 1.0f);
  auto b = dt::fill<float>({n}, 2.0f);
  for (auto _ : state) benchmark::DoNotOptimize(dt::add(a, b));
  state.SetBytesProcessed(state.iterations() * n * 12);
}
static void BM_RawAddLoop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 12);
}
BENCHMARK(BM_EagerAdd)->RangeMultiplier(10)->Range(1, 1000000);
BENCHMARK(BM_RawAddLoop)->RangeMultiplier(10)->Range(1, 1000000);

static void BM_NoOpDispatch(benchmark::State& state) {
  auto x = dt::scalar<float>(1.0f);
  for (auto _ : state) {
    const dt::Device& device = dt::place_op(dt::kernel_support<NoOp, float>);
    auto in = dt::to_device(x, device, NoOp::name);
    auto out = dt::Tensor<float>::empty(in.shape(), device, NoOp::name);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_NoOpDispatch);

struct Base {
  virtual ~Base() = default;
  virtual int f(int) const = 0;
};
struct Derived final : Base {
  int f(int x) const override { return x + 1; }
};
static void BM_Reference_VirtualCall(benchmark::State& state) {
  std::unique_ptr<Base> p = std::make_unique<Derived>();
  benchmark::DoNotOptimize(p);
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(x = p->f(x));
}
BENCHMARK(BM_Reference_VirtualCall);

static void BM_PlacementDecision(benchmark::State& state) {
  (void)dt::config::list_logical_devices();
  for (auto _ : state) benchmark::DoNotOptimize(dt::place_op(dt::kernel_support<dt::ops::Add, float>));
}
BENCHMARK(BM_PlacementDecision);

static void BM_Reference_MapLookup(benchmark::State& state) {
  std::unordered_map<std::string, int> map;
  for (int i = 0; i < 316; ++i) map["/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i)] = i;
  const std::string key = "/job:localhost/replica:0/task:0/device:CPU:7";
  for (auto _ : state) benchmark::DoNotOptimize(map.find(key));
}
BENCHMARK(BM_Reference_MapLookup);

template <class T>
static void BM_MatMul(benchmark::State& state) {
  const auto n = state.range(0);
  auto a = dt::random_uniform<T>({n, n}, {.seed = 1});
  auto b = dt::random_uniform<T>({n, n}, {.seed = 2});
  for (auto _ : state) benchmark::DoNotOptimize(dt::matmul(a, b));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}
#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
template <class T>
static void BM_Cblas(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<T> a(size, T(0.5)), b(size, T(0.25)), c(size);
  for (auto _ : state) {
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(n) * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Cblas<float>)->RangeMultiplier(2)->Range(64, 2048)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cblas<double>)->RangeMultiplier(2)->Range(64, 2048)->Unit(benchmark::kMicrosecond);
#endif
BENCHMARK(BM_MatMul<float>)->RangeMultiplier(2)->Range(64, 2048)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatMul<double>)->RangeMultiplier(2)->Range(64, 2048)->Unit(benchmark::kMicrosecond);

static void BM_Add10M(benchmark::State& state) {
  const std::int64_t n = 10'000'000;
  auto a = dt::fill<float>({n}, 1.0f);
  auto b = dt::fill<float>({n}, 2.0f);
  for (auto _ : state) benchmark::DoNotOptimize(dt::add(a, b));
  state.SetBytesProcessed(state.iterations() * n * 12);
}
static void BM_StreamAdd10M(benchmark::State& state) {
  const std::size_t n = 10'000'000;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 12);
}
BENCHMARK(BM_Add10M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamAdd10M)->Unit(benchmark::kMillisecond);

// Graph mode (issue 29): ten elementwise ops on 1-element tensors, eager and as a v1 graph run by
// a Session (placed once, executable cached; each run feeds the placeholder and fetches the end),
// and as a traced function (issue 29's goal: replay <= 0.5x eager).
namespace {
template <class T>
dt::Tensor<T> ten_ops(const dt::Tensor<T>& x) {
  auto y = dt::relu(x);
  y = dt::add(y, x);
  y = dt::mul(y, x);
  y = dt::sub(y, x);
  y = dt::square(y);
  y = dt::add(y, x);
  y = dt::abs(y);
  y = dt::mul(y, x);
  y = dt::neg(y);
  return dt::add(y, x);
}
}  // namespace
static void BM_Eager10Ops(benchmark::State& state) {
  auto x = dt::constant<float>({1.5f});
  for (auto _ : state) benchmark::DoNotOptimize(ten_ops(x));
}
static void BM_Session10Ops(benchmark::State& state) {
  namespace v1 = dt::compat::v1;
  auto x = dt::constant<float>({1.5f});
  v1::Graph graph;
  dt::Tensor<float> in, out;
  {
    auto scope = graph.as_default();
    in = v1::placeholder<float>({1}, {.name = "x"});
    out = ten_ops(in);
  }
  v1::Session session(graph, {.allow_soft_placement = true});
  for (auto _ : state) benchmark::DoNotOptimize(session.run(out, {{in, x}}));
}
static void BM_Function10Ops(benchmark::State& state) {
  auto x = dt::constant<float>({1.5f});
  auto f = dt::function([](const dt::Tensor<float>& t) { return ten_ops(t); });
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
}
BENCHMARK(BM_Eager10Ops);
BENCHMARK(BM_Session10Ops);
BENCHMARK(BM_Function10Ops);

// Graph optimisations (issue 30): a chain of 8 elementwise ops on 2^24 floats, eager (8 passes
// over memory), traced and fused into one pass, and traced with fusion off, beside one STREAM
// triad pass (a = b + s c: two reads and a write, the chain reads one array and writes one);
// MatMul + bias + Relu at 1024 traced (one _FusedMatMul) beside the bare cblas_sgemm above.
namespace {
constexpr std::int64_t kChainElements = std::int64_t{1} << 24;
using dt::bench::eight_ops;
void set_remapping(bool on) { dt::config::optimizer::set_experimental_options({.remapping = on}); }
}  // namespace
static void BM_Chain8_Eager(benchmark::State& state) {
  auto x = dt::random_uniform<float>({kChainElements}, {.seed = 3});
  for (auto _ : state) benchmark::DoNotOptimize(eight_ops(x));
  state.SetBytesProcessed(state.iterations() * kChainElements * 8);
}
static void BM_Chain8_Traced(benchmark::State& state) {
  set_remapping(state.range(0) != 0);
  auto x = dt::random_uniform<float>({kChainElements}, {.seed = 3});
  auto f = dt::function(eight_ops);
  benchmark::DoNotOptimize(f(x));  // traced and optimised before the timing
  set_remapping(true);
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
  state.SetBytesProcessed(state.iterations() * kChainElements * 8);
}
static void BM_StreamTriad(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(kChainElements);
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  const float s = 3.0f;
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kChainElements * 12);
}
BENCHMARK(BM_Chain8_Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chain8_Traced)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);  // 1: fused, 0: remapping off
BENCHMARK(BM_StreamTriad)->Unit(benchmark::kMillisecond);

// A reduction over the trailing axis of a chain's result: sum((x - y)^2) over each row of 4096,
// 4096 rows (2^24 floats in x and in y): eager (Sub, Square, Sum: three passes over memory),
// traced with fusion off, traced (one _FusedReduction pass), beside the same arithmetic as one
// plain loop (a double sum per row, as the reduction kernel keeps it).
namespace {
constexpr std::int64_t kDistanceRows = 4096, kDistanceCols = 4096;
dt::Tensor<float> squared_distance(const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
  return dt::reduce_sum(dt::square(x - y), 1);
}
}  // namespace
static void BM_SquaredDistance(benchmark::State& state) {  // 0: eager, 1: traced, fusion off, 2: traced
  const auto mode = state.range(0);
  auto x = dt::random_uniform<float>({kDistanceRows, kDistanceCols}, {.seed = 3});
  auto y = dt::random_uniform<float>({kDistanceRows, kDistanceCols}, {.seed = 4});
  set_remapping(mode == 2);
  auto f = dt::function(squared_distance);
  if (mode > 0) benchmark::DoNotOptimize(f(x, y));  // traced and optimised before the timing
  set_remapping(true);
  for (auto _ : state) benchmark::DoNotOptimize(mode == 0 ? squared_distance(x, y) : f(x, y));
  state.SetBytesProcessed(state.iterations() * kDistanceRows * kDistanceCols * 8);
}
static void BM_SquaredDistanceLoop(benchmark::State& state) {
  const auto x = dt::random_uniform<float>({kDistanceRows, kDistanceCols}, {.seed = 3}).to_vector();
  const auto y = dt::random_uniform<float>({kDistanceRows, kDistanceCols}, {.seed = 4}).to_vector();
  std::vector<float> out(static_cast<std::size_t>(kDistanceRows));
  for (auto _ : state) {
    for (std::size_t r = 0, i = 0; r < out.size(); ++r) {
      double sum = 0;
      for (std::int64_t c = 0; c < kDistanceCols; ++c, ++i) {
        const float d = x[i] - y[i];
        sum += static_cast<double>(d * d);
      }
      out[r] = static_cast<float>(sum);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kDistanceRows * kDistanceCols * 8);
}
BENCHMARK(BM_SquaredDistance)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SquaredDistanceLoop)->Unit(benchmark::kMillisecond);

namespace {
dt::Tensor<float> dense_relu(const dt::Tensor<float>& x, const dt::Tensor<float>& w, const dt::Tensor<float>& b) {
  return dt::relu(dt::matmul(x, w) + b);
}
}  // namespace
static void BM_DenseRelu(benchmark::State& state) {  // 0: eager, 1: traced (_FusedMatMul)
  const std::int64_t n = 1024;
  auto x = dt::random_uniform<float>({n, n}, {.seed = 1});
  auto w = dt::random_uniform<float>({n, n}, {.seed = 2});
  auto b = dt::random_uniform<float>({n}, {.seed = 4});
  auto f = dt::function(dense_relu);
  for (auto _ : state) benchmark::DoNotOptimize(state.range(0) != 0 ? f(x, w, b) : dense_relu(x, w, b));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(n * n * n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DenseRelu)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// Softmax over rows of `classes` (a classifier's output layer), beside the floor of any softmax
// that takes one exp per element: a loop writing exp(x) once. Ours reads each row three times
// (max; exp and sum; divide) and the ratio is the cost of the stable algorithm's extra passes.
static void BM_Softmax(benchmark::State& state) {
  const std::int64_t rows = state.range(0), classes = state.range(1);
  auto x = dt::random_normal<float>({rows, classes}, {.seed = 5});
  for (auto _ : state) benchmark::DoNotOptimize(dt::softmax(x));
  state.SetItemsProcessed(state.iterations() * rows * classes);
}
static void BM_ExpLoop(benchmark::State& state) {
  const std::int64_t rows = state.range(0), classes = state.range(1);
  const auto input = dt::random_normal<float>({rows, classes}, {.seed = 5}).to_vector();
  std::vector<float> out(input.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < input.size(); ++i) out[i] = std::exp(input[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * rows * classes);
}
BENCHMARK(BM_Softmax)->Args({32, 10})->Args({512, 1000})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExpLoop)->Args({32, 10})->Args({512, 1000})->Unit(benchmark::kMicrosecond);

// Conv2D and its two backprops at batch 32, 32x32x64 -> 64 filters 3x3 SAME (float32), beside the
// one GEMM of the same size im2col turns the forward into: [32·32·32, 576] · [576, 64] on
// preallocated buffers (the floor of an im2col body). The second argument: 1 through oneDNN where
// this program links devtensor::onednn (the label names the engine), 0 the im2col bodies.
// TensorFlow's figures for the same shapes: benchmarks/tf_conv_bench.py, in the same session
// (RESULTS.md).
static void BM_Conv2D(benchmark::State& state) {  // 0: forward, 1: backprop input, 2: backprop filter
  dt::config::experimental::enable_onednn_opts(state.range(1) != 0);
  const auto* engine = dt::ops::cpu::convolution_engine();
  state.SetLabel(engine != nullptr ? std::string(engine->name) : "im2col");
  const auto x = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 1});
  const auto w = dt::random_normal<float>({3, 3, 64, 64}, {.seed = 2});
  const auto dy = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 3});
  for (auto _ : state) {
    if (state.range(0) == 0)
      benchmark::DoNotOptimize(dt::conv2d(x, w, 1, "SAME"));
    else if (state.range(0) == 1)
      benchmark::DoNotOptimize(dt::conv2d_backprop_input(x.shape(), w, dy, 1, "SAME"));
    else
      benchmark::DoNotOptimize(dt::conv2d_backprop_filter(x, w.shape(), dy, 1, "SAME"));
  }
  dt::config::experimental::enable_onednn_opts(true);
}
BENCHMARK(BM_Conv2D)->ArgsProduct({{0, 1, 2}, {1, 0}})->Unit(benchmark::kMillisecond);

// DepthwiseConv2dNative and its backprops at a MobileNet-like layer: batch 32, 32x32x64, 3x3,
// multiplier 1, SAME (float32); and LRN with its gradient at the CIFAR-10 tutorial's norm1
// ([32, 12, 12, 64], depth_radius 4, beta 0.75). TensorFlow's figures: benchmarks/tf_conv_bench.py.
static void BM_DepthwiseConv2D(benchmark::State& state) {  // 0: forward, 1: backprop input, 2: backprop filter
  const auto x = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 1});
  const auto w = dt::random_normal<float>({3, 3, 64, 1}, {.seed = 2});
  const auto dy = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 3});
  for (auto _ : state) {
    if (state.range(0) == 0)
      benchmark::DoNotOptimize(dt::depthwise_conv2d(x, w, 1, "SAME"));
    else if (state.range(0) == 1)
      benchmark::DoNotOptimize(dt::depthwise_conv2d_backprop_input(x.shape(), w, dy, 1, "SAME"));
    else
      benchmark::DoNotOptimize(dt::depthwise_conv2d_backprop_filter(x, w.shape(), dy, 1, "SAME"));
  }
}
BENCHMARK(BM_DepthwiseConv2D)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
static void BM_LRN(benchmark::State& state) {  // 0: LRN, 1: LRNGrad
  const dt::LrnOptions options{.depth_radius = 4, .bias = 1.0f, .alpha = 0.001f / 9.0f, .beta = 0.75f};
  const auto x = dt::random_normal<float>({32, 12, 12, 64}, {.seed = 1});
  const auto y = dt::lrn(x, options);
  const auto dy = dt::random_normal<float>({32, 12, 12, 64}, {.seed = 3});
  const dt::ops::LrnAttrs attrs{options.depth_radius, options.bias, options.alpha, options.beta};
  for (auto _ : state) {
    if (state.range(0) == 0)
      benchmark::DoNotOptimize(dt::lrn(x, options));
    else
      benchmark::DoNotOptimize(dt::run_op<dt::ops::LRNGrad>(attrs, dy, x, y));
  }
}
BENCHMARK(BM_LRN)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
// FusedBatchNormV3 (training) and FusedBatchNormGradV3 at the Conv2D case's activations
// ([32, 32, 32, 64], NHWC, float32); TensorFlow's figures: benchmarks/tf_conv_bench.py.
static void BM_FusedBatchNorm(benchmark::State& state) {  // 0: FusedBatchNormV3, 1: FusedBatchNormGradV3
  const auto x = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 1});
  const auto dy = dt::random_normal<float>({32, 32, 32, 64}, {.seed = 3});
  const auto scale = dt::random_normal<float>({64}, {.seed = 4});
  const auto offset = dt::random_normal<float>({64}, {.seed = 5});
  const auto empty = dt::constant<float>(std::vector<float>{});
  const dt::ops::FusedBatchNormV3::Attrs attrs{.epsilon = 0.001f};
  const auto out = dt::run_op<dt::ops::FusedBatchNormV3>(attrs, x, scale, offset, empty, empty);
  for (auto _ : state) {
    if (state.range(0) == 0)
      benchmark::DoNotOptimize(dt::run_op<dt::ops::FusedBatchNormV3>(attrs, x, scale, offset, empty, empty));
    else
      benchmark::DoNotOptimize(
          dt::run_op<dt::ops::FusedBatchNormGradV3>({.epsilon = 0.001f}, dy, x, scale, out[3], out[4], out[5]));
  }
}
BENCHMARK(BM_FusedBatchNorm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
static void BM_Conv2DGemmFloor(benchmark::State& state) {
  std::vector<float> patches(32768 * 576, 0.5f), filter(576 * 64, 0.25f), out(32768 * 64);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 32768, 64, 576, 1.0f, patches.data(), 576, filter.data(), 64,
                0.0f, out.data(), 64);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Conv2DGemmFloor)->Unit(benchmark::kMillisecond);
#endif
