// Every op with a GPU kernel, on a real GPU, against the CPU result on random inputs; placement
// on real GPUs; copies between host, GPU and logical GPUs. Runs only where a CUDA device exists.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cuda/convolution_engine.hpp"
#include "devtensor/ops/fused_chain.hpp"  // ops::FusedGemm
#include "devtensor_test.hpp"

namespace dt = devtensor;

namespace {

constexpr const char* kGpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";

template <class T>
dt::Tensor<T> random_input(const dt::Shape& shape, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
  dt::DeviceScope cpu("/cpu:0");
  if constexpr (std::is_floating_point_v<T>) {
    return dt::random_uniform<T>(shape, {.minval = lo, .maxval = hi, .seed = seed});
  } else {
    return dt::cast<T>(dt::random_uniform<double>(shape, {.minval = -50.0, .maxval = 50.0, .seed = seed}));
  }
}

/// Runs `op` on the CPU and on GPU:0 and compares the results elementwise.
template <class F>
void expect_gpu_matches_cpu(F op, double tolerance = 1e-5) {
  const auto on_cpu = [&] {
    dt::DeviceScope scope("/cpu:0");
    return op();
  }();
  const auto on_gpu = [&] {
    dt::DeviceScope scope("/gpu:0");
    return op();
  }();
  BOOST_TEST(on_gpu.device() == kGpu0);
  BOOST_TEST_REQUIRE(on_gpu.shape() == on_cpu.shape());
  const auto expected = on_cpu.to_vector();
  const auto actual = on_gpu.to_vector();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = static_cast<double>(expected[i]);
    const double a = static_cast<double>(actual[i]);
    if (std::abs(e - a) > tolerance * (1.0 + std::abs(e))) {
      BOOST_ERROR("element " << i << ": GPU " << a << " vs CPU " << e);
      return;
    }
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_ops, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(elementwise_binary_ops_with_broadcasting) {
  const std::vector<std::pair<dt::Shape, dt::Shape>> shapes = {
      {{1000}, {1000}}, {{(1 << 20) + 3}, {(1 << 20) + 3}}, {{4099}, {}}, {{33, 65}, {65}}, {{4, 1, 7}, {3, 1}},
      {{}, {5, 6}},     {{2, 3, 4, 5}, {1, 3, 1, 5}}};
  std::uint64_t seed = 1;
  for (const auto& [sa, sb] : shapes) {
    const auto a = random_input<float>(sa, seed++);
    const auto b = random_input<float>(sb, seed++, 0.5, 3.0);
    expect_gpu_matches_cpu([&] { return dt::add(a, b); });
    expect_gpu_matches_cpu([&] { return dt::sub(a, b); });
    expect_gpu_matches_cpu([&] { return dt::mul(a, b); });
    expect_gpu_matches_cpu([&] { return dt::div(a, b); });
    expect_gpu_matches_cpu([&] { return dt::maximum(a, b); });
    expect_gpu_matches_cpu([&] { return dt::minimum(a, b); });
    expect_gpu_matches_cpu([&] { return dt::grad_ops::relu_grad(a, b); });
    expect_gpu_matches_cpu([&] { return dt::grad_ops::greater_equal(a, b); });
    expect_gpu_matches_cpu([&] { return dt::grad_ops::equal(a, a); });
  }
  const auto x = random_input<double>({257, 3}, 99);
  const auto y = random_input<double>({3}, 98, 0.5, 2.0);
  expect_gpu_matches_cpu([&] { return dt::grad_ops::sigmoid_grad(x, y); }, 1e-12);
  expect_gpu_matches_cpu([&] { return dt::grad_ops::tanh_grad(x, y); }, 1e-12);
  expect_gpu_matches_cpu([&] { return dt::grad_ops::sqrt_grad(y, x); }, 1e-12);
}

BOOST_AUTO_TEST_CASE(integer_ops_and_floor_division) {
  const auto a = random_input<std::int32_t>({40, 7}, 3);
  auto b = random_input<std::int64_t>({7}, 4);
  const auto a64 = dt::cast<std::int64_t>(a);
  b = dt::add(dt::abs(b), dt::scalar<std::int64_t>(1));  // no zero divisors
  expect_gpu_matches_cpu([&] { return dt::add(a, a); }, 0);
  expect_gpu_matches_cpu([&] { return dt::mul(a64, b); }, 0);
  expect_gpu_matches_cpu([&] { return dt::div(a64, b); }, 0);
  expect_gpu_matches_cpu([&] { return dt::div(dt::neg(a64), b); }, 0);
  dt::DeviceScope gpu("/gpu:0");
  const auto zero = dt::constant<std::int64_t>({3, 0, 1});
  DEVTENSOR_CHECK_THROW_WITH(dt::div(dt::constant<std::int64_t>({1, 2, 3}), zero), dt::InvalidArgumentError,
                             "Integer division by zero");
}

BOOST_AUTO_TEST_CASE(edge_values_give_the_cpu_results) {
  // Issue 13's defined results, computed by the CUDA kernels: INT_MIN // -1 wraps, integer sums
  // wrap, float -> int casts saturate with NaN -> 0, ranges across the whole int32 range.
  constexpr std::int32_t lo = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t hi = std::numeric_limits<std::int32_t>::max();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  expect_gpu_matches_cpu(
      [&] {
        return dt::div(dt::constant<std::int32_t>({lo, 7, -7}), dt::constant<std::int32_t>({-1, -2, 2}));
      },
      0);
  expect_gpu_matches_cpu(
      [&] {
        return dt::constant<std::int64_t>({std::numeric_limits<std::int64_t>::min()}) /
               dt::constant<std::int64_t>({-1});
      },
      0);
  expect_gpu_matches_cpu([&] { return dt::reduce_sum(dt::fill<std::int32_t>({3, 4096}, hi), 1); }, 0);
  expect_gpu_matches_cpu([&] { return dt::reduce_sum(dt::fill<std::int32_t>({1 << 20}, hi)); }, 0);  // two passes
  expect_gpu_matches_cpu(
      [&] {
        return dt::add_n(std::vector{dt::fill<std::int32_t>({5}, hi), dt::fill<std::int32_t>({5}, hi)});
      },
      0);
  expect_gpu_matches_cpu(
      [&] {
        return dt::cast<std::int32_t>(dt::constant<float>({nan, inf, -inf, 1e20f, -3.9f}));
      },
      0);
  expect_gpu_matches_cpu([&] { return dt::cast<std::int64_t>(dt::constant<double>({nan, 1e300, -1e300, 9.2e18})); }, 0);
  expect_gpu_matches_cpu([&] { return dt::range<std::int32_t>(lo, hi, hi); }, 0);
  dt::DeviceScope scope("/gpu:0");
  BOOST_TEST(dt::cast<std::int32_t>(dt::constant<float>({nan, inf, -inf})).to_vector() ==
                 (std::vector<std::int32_t>{0, hi, lo}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::div(dt::constant<std::int32_t>({lo}), dt::constant<std::int32_t>({-1})).item() == lo);
}

BOOST_AUTO_TEST_CASE(elementwise_unary_ops) {
  const auto a = random_input<float>({3, 1000}, 5);
  const auto p = random_input<double>({999}, 6, 0.01, 4.0);
  expect_gpu_matches_cpu([&] { return dt::neg(a); });
  expect_gpu_matches_cpu([&] { return dt::abs(a); });
  expect_gpu_matches_cpu([&] { return dt::square(a); });
  expect_gpu_matches_cpu([&] { return dt::relu(a); });
  expect_gpu_matches_cpu([&] { return dt::sigmoid(a); });
  expect_gpu_matches_cpu([&] { return dt::tanh(a); });
  expect_gpu_matches_cpu([&] { return dt::exp(a); });
  expect_gpu_matches_cpu([&] { return dt::sqrt(p); }, 1e-12);
  expect_gpu_matches_cpu([&] { return dt::log(p); }, 1e-12);
  expect_gpu_matches_cpu([&] { return dt::exp(p); }, 1e-12);
}

BOOST_AUTO_TEST_CASE(add_n_cast_fill_range) {
  const auto a = random_input<float>({513}, 7);
  const auto b = random_input<float>({513}, 8);
  const auto c = random_input<float>({513}, 9);
  expect_gpu_matches_cpu([&] { return dt::add_n(std::vector{a, b, c}); });
  expect_gpu_matches_cpu([&] { return dt::add_n(std::vector{a}); });
  expect_gpu_matches_cpu([&] { return dt::cast<std::int32_t>(dt::mul(a, dt::scalar<float>(10.0F))); }, 0);
  expect_gpu_matches_cpu([&] { return dt::cast<double>(a); }, 1e-7);
  expect_gpu_matches_cpu([&] { return dt::cast<float>(dt::cast<bool>(a)); }, 0);
  expect_gpu_matches_cpu([] { return dt::fill<double>({7, 9}, 2.5); }, 0);
  expect_gpu_matches_cpu([] { return dt::zeros<std::int64_t>({100000}); }, 0);
  expect_gpu_matches_cpu([] { return dt::range<std::int32_t>(-7, 1000, 3); }, 0);
  expect_gpu_matches_cpu([] { return dt::range<float>(0.5F, 10.0F, 0.25F); });
}

BOOST_AUTO_TEST_CASE(random_ops_give_the_cpu_values) {
  expect_gpu_matches_cpu([] { return dt::random_uniform<float>({1001}, {.minval = -1, .maxval = 3, .seed = 42}); }, 0);
  expect_gpu_matches_cpu([] { return dt::random_uniform<double>({64, 3}, {.seed = 7}); }, 0);
  expect_gpu_matches_cpu([] { return dt::random_normal<double>({1001}, {.mean = 1, .stddev = 2, .seed = 5}); }, 1e-12);
  expect_gpu_matches_cpu([] { return dt::random_normal<float>({10}, {.seed = 5}); }, 1e-6);
}

BOOST_AUTO_TEST_CASE(reductions_over_every_axis_set) {
  const auto a = random_input<float>({6, 5, 300}, 10);
  const auto big = random_input<double>({3, 200000}, 11);  // the two-pass path
  const auto ints = random_input<std::int32_t>({50, 40}, 12);
  using Axes = std::optional<std::vector<std::int64_t>>;
  for (const Axes& axes : {Axes{}, Axes{{0}}, Axes{{1}}, Axes{{2}}, Axes{{0, 2}}, Axes{{-1, 0}}, Axes{{0, 1, 2}}})
    for (bool keep : {false, true}) {
      expect_gpu_matches_cpu([&] { return dt::reduce_sum(a, axes, keep); }, 1e-5);
      expect_gpu_matches_cpu([&] { return dt::reduce_mean(a, axes, keep); }, 1e-5);
      expect_gpu_matches_cpu([&] { return dt::reduce_max(a, axes, keep); }, 0);
    }
  expect_gpu_matches_cpu([&] { return dt::reduce_sum(big); }, 1e-10);
  expect_gpu_matches_cpu([&] { return dt::reduce_mean(big, 1); }, 1e-10);
  expect_gpu_matches_cpu([&] { return dt::reduce_max(big, 0); }, 0);
  expect_gpu_matches_cpu([&] { return dt::reduce_sum(ints, 0); }, 0);
  expect_gpu_matches_cpu([&] { return dt::reduce_mean(ints, 1); }, 0);
  expect_gpu_matches_cpu([&] { return dt::reduce_max(ints); }, 0);
  expect_gpu_matches_cpu([] { return dt::reduce_sum(dt::zeros<float>({4, 0}), 1); }, 0);
}

// The mean of nothing on the GPU body: NaN for floating types, 0 for integers, as on the CPU and in
// TensorFlow (expect_gpu_matches_cpu cannot see it: a NaN compares false with anything).
BOOST_AUTO_TEST_CASE(the_mean_of_nothing_is_nan_for_floats_and_zero_for_integers) {
  dt::DeviceScope scope("/gpu:0");
  const auto floats = dt::reduce_mean(dt::zeros<float>({4, 0}), 1);
  const auto doubles = dt::reduce_mean(dt::zeros<double>({0}));
  const auto ints = dt::reduce_mean(dt::zeros<std::int32_t>({3, 0}), 1);
  BOOST_TEST(floats.device() == kGpu0);
  for (float v : floats.to_vector()) BOOST_TEST(std::isnan(v));
  BOOST_TEST(std::isnan(doubles.item()));
  BOOST_TEST(ints.to_vector() == (std::vector<std::int32_t>{0, 0, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(matmul_through_cublas) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto a = random_input<float>(ta ? dt::Shape{37, 19} : dt::Shape{19, 37}, 13);
      const auto b = random_input<float>(tb ? dt::Shape{23, 37} : dt::Shape{37, 23}, 14);
      expect_gpu_matches_cpu([&] { return dt::matmul(a, b, ta, tb); }, 1e-4);
      const auto da = random_input<double>(ta ? dt::Shape{3, 8, 5} : dt::Shape{3, 5, 8}, 15);
      const auto db = random_input<double>(tb ? dt::Shape{3, 6, 8} : dt::Shape{3, 8, 6}, 16);
      expect_gpu_matches_cpu([&] { return dt::matmul(da, db, ta, tb); }, 1e-12);
    }
  const auto empty_k = [] { return dt::matmul(dt::ones<float>({3, 0}), dt::ones<float>({0, 4})); };
  expect_gpu_matches_cpu(empty_k, 0);
  // Integer matmul has no cuBLAS kernel: it falls back to the CPU (soft placement).
  dt::DeviceScope gpu("/gpu:0");
  const auto ints = dt::matmul(dt::ones<std::int32_t>({2, 2}), dt::ones<std::int32_t>({2, 2}));
  BOOST_TEST(ints.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  BOOST_TEST(ints.to_vector() == (std::vector<std::int32_t>{2, 2, 2, 2}));
}

/// The largest error of a float matmul against a double-precision reference, each element's error
/// relative to Σ_k |a_ik b_kj| (the sum's condition): fp32 rounding gives ~1e-7 to 1e-6 here (k·u
/// = 1.5e-5 is its worst case); TF32's 10-bit mantissas give ~1e-4.
double matmul_error_vs_double(const dt::Tensor<float>& a, const dt::Tensor<float>& b) {
  const auto c = [&] {
    dt::DeviceScope gpu("/gpu:0");
    return dt::matmul(a, b);
  }();
  BOOST_TEST(c.device() == kGpu0);
  const auto av = a.to_vector();
  const auto bv = b.to_vector();
  const auto cv = c.to_vector();
  const std::size_t n = 256;
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0;
      double magnitude = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const double p = static_cast<double>(av[i * n + k]) * static_cast<double>(bv[k * n + j]);
        exact += p;
        magnitude += std::abs(p);
      }
      worst = std::max(worst, std::abs(static_cast<double>(cv[i * n + j]) - exact) / magnitude);
    }
  return worst;
}

BOOST_AUTO_TEST_CASE(tf32_can_be_enabled_and_disabled) {
  BOOST_TEST(!dt::config::experimental::tensor_float_32_execution_enabled());  // gpu_main.cpp's
  const auto a = random_input<float>({256, 256}, 17);
  const auto b = random_input<float>({256, 256}, 18);
  const double fp32 = matmul_error_vs_double(a, b);
  dt::config::experimental::enable_tensor_float_32_execution(true);
  const double tf32 = matmul_error_vs_double(a, b);
  dt::config::experimental::enable_tensor_float_32_execution(false);
  BOOST_TEST_MESSAGE("matmul error vs double: fp32 " << fp32 << ", tf32 " << tf32);
  BOOST_TEST(fp32 < 1e-5);  // a bound fp32 meets and TF32 cannot
  BOOST_TEST(tf32 > 1e-5);
  BOOST_TEST(tf32 < 1e-2);
}

BOOST_AUTO_TEST_CASE(sixteen_bit_floats_compute_as_on_the_cpu) {
  // float16 and bfloat16 on GPU:0 against the CPU: the elementwise bodies compute the same float
  // function and round once (within a unit of the 16-bit type: the device's expf may differ from
  // glibc's by an ulp of float); sums and MatMul (cublasGemmEx, CUBLAS_COMPUTE_32F) add in float.
  const auto x = random_input<float>({64, 96}, 41);
  const auto y = random_input<float>({96, 32}, 42);
  const auto check = [&]<class T>(double unit) {
    const auto a = dt::cast<T>(x);
    const auto b = dt::cast<T>(y);
    expect_gpu_matches_cpu([&] { return dt::add(a, a); }, 0);
    expect_gpu_matches_cpu([&] { return dt::maximum(a, dt::neg(a)); }, 0);
    expect_gpu_matches_cpu([&] { return dt::cast<T>(dt::cast<float>(a)); }, 0);
    expect_gpu_matches_cpu([&] { return dt::cast<dt::bfloat16>(a); }, 0);
    expect_gpu_matches_cpu([&] { return dt::transpose(a); }, 0);
    expect_gpu_matches_cpu([&] { return dt::mul(a, dt::sigmoid(a)); }, 2 * unit);
    expect_gpu_matches_cpu([&] { return dt::tanh(dt::exp(a)); }, 2 * unit);
    expect_gpu_matches_cpu([&] { return dt::softplus(a); }, 2 * unit);
    expect_gpu_matches_cpu([&] { return dt::reduce_sum(a, std::vector<std::int64_t>{1}); }, 2 * unit);
    expect_gpu_matches_cpu([&] { return dt::reduce_mean(a, std::vector<std::int64_t>{0}); }, 2 * unit);
    expect_gpu_matches_cpu([&] { return dt::matmul(a, b); }, 4 * unit);
    expect_gpu_matches_cpu([&] { return dt::matmul(a, a, false, true); }, 4 * unit);
  };
  check.template operator()<dt::float16>(1.0 / 1024);
  check.template operator()<dt::bfloat16>(1.0 / 128);
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  const auto a = random_input<float>({4, 5, 6}, 19);
  const auto b = random_input<float>({4, 2, 6}, 20);
  expect_gpu_matches_cpu([&] { return dt::transpose(a); }, 0);
  expect_gpu_matches_cpu([&] { return dt::transpose(a, {1, 0, 2}); }, 0);
  expect_gpu_matches_cpu([&] { return dt::concat(std::vector{a, b, a}, 1); }, 0);
  expect_gpu_matches_cpu([&] { return dt::concat(std::vector{a, a}, 0); }, 0);
  expect_gpu_matches_cpu([&] { return dt::split(a, std::vector<std::int64_t>{1, 3, 2}, 2)[1]; }, 0);
  expect_gpu_matches_cpu([&] { return dt::split(a, 5, 1)[4]; }, 0);
  expect_gpu_matches_cpu([&] { return dt::slice(a, {1, 2, 0}, {2, -1, 3}); }, 0);
  expect_gpu_matches_cpu([&] { return dt::broadcast_to(b, {3, 4, 2, 6}); }, 0);
  expect_gpu_matches_cpu([] { return dt::broadcast_to(dt::scalar<double>(4.0), {5, 5}); }, 0);
  expect_gpu_matches_cpu([&] { return dt::pad(b, {{1, 0}, {0, 2}, {3, 3}}); }, 0);
  expect_gpu_matches_cpu([&] { return dt::reshape(a, {-1, 6}); }, 0);
  expect_gpu_matches_cpu([&] { return dt::identity(a); }, 0);
  const auto flags = dt::cast<bool>(random_input<std::int32_t>({3, 4}, 21));
  expect_gpu_matches_cpu([&] { return dt::cast<std::int32_t>(dt::transpose(flags)); }, 0);
}

BOOST_AUTO_TEST_CASE(convolutions_pools_and_bias_through_cudnn_and_cublas) {
  // Conv2D and its backprops on GPU:0 against the CPU, float32 through the cudnn component's
  // engine (where this program links it: DEVTENSOR_WITH_CUDNN) and through the patches + cuBLAS
  // body with the engine uninstalled, float64 through the patches; the pools, BiasAdd and
  // BiasAddGrad. Geometries: ResNet's 3x3 SAME, stride 2, dilation, 1x1, the first layer's single
  // channel, and SAME padding that pads more after than before (cuDNN declines it: the body runs).
  namespace cuda_ops = dt::ops::cuda;
  const cuda_ops::ConvolutionEngine* linked = cuda_ops::convolution_engine();
#if DEVTENSOR_WITH_CUDNN
  BOOST_TEST_REQUIRE(linked != nullptr);
  BOOST_TEST(std::string(linked->name).starts_with("cuDNN 9."), linked->name);
#else
  BOOST_TEST(linked == nullptr);
#endif
  struct Restore {
    const cuda_ops::ConvolutionEngine* engine;
    ~Restore() { cuda_ops::install_convolution_engine(engine); }
  } restore{linked};
  struct Case {
    dt::Shape x, w;
    dt::SpatialInts strides;
    std::int64_t dilation;
    const char* padding;
    bool cudnn_takes_it;
  };
  const std::vector<Case> cases{{{4, 14, 14, 16}, {3, 3, 16, 32}, {1, 1}, 1, "SAME", true},
                                {{2, 9, 9, 8}, {3, 3, 8, 4}, {2, 2}, 1, "VALID", true},
                                {{2, 12, 12, 6}, {3, 3, 6, 5}, {1, 1}, 2, "SAME", true},
                                {{3, 7, 7, 16}, {1, 1, 16, 24}, {1, 1}, 1, "VALID", true},
                                {{8, 28, 28, 1}, {3, 3, 1, 32}, {1, 1}, 1, "VALID", true},
                                {{2, 10, 10, 4}, {2, 2, 4, 3}, {1, 1}, 1, "SAME", false}};
  std::uint64_t seed = 300;
  for (const auto& c : cases) {
    for (const bool engine : {true, false}) {
      BOOST_TEST_CONTEXT("input " << c.x.to_string() << " filter " << c.w.to_string() << " " << c.padding
                                  << (engine ? " (engine)" : " (patches + cuBLAS)")) {
        cuda_ops::install_convolution_engine(engine ? linked : nullptr);
        const std::int64_t runs_before = linked != nullptr ? linked->runs() : 0;
        const dt::Conv2DOptions options{.dilations = c.dilation};
        const auto x = random_input<float>(c.x, seed++);
        const auto w = random_input<float>(c.w, seed++);
        const auto y_shape = dt::conv2d(x, w, c.strides, c.padding, options).shape();
        const auto dy = random_input<float>(y_shape, seed++);
        expect_gpu_matches_cpu([&] { return dt::conv2d(x, w, c.strides, c.padding, options); }, 1e-4);
        expect_gpu_matches_cpu([&] { return dt::conv2d_backprop_input(c.x, w, dy, c.strides, c.padding, options); },
                               1e-4);
        expect_gpu_matches_cpu([&] { return dt::conv2d_backprop_filter(x, c.w, dy, c.strides, c.padding, options); },
                               1e-4);
        if (linked != nullptr) BOOST_TEST(linked->runs() - runs_before == (engine && c.cudnn_takes_it ? 3 : 0));
        const auto xd = x.cast<double>();
        const auto wd = w.cast<double>();
        const auto dyd = dy.cast<double>();
        expect_gpu_matches_cpu([&] { return dt::conv2d(xd, wd, c.strides, c.padding, options); }, 1e-12);
        expect_gpu_matches_cpu([&] { return dt::conv2d_backprop_input(c.x, wd, dyd, c.strides, c.padding, options); },
                               1e-12);
        expect_gpu_matches_cpu([&] { return dt::conv2d_backprop_filter(xd, c.w, dyd, c.strides, c.padding, options); },
                               1e-12);
      }
    }
  }
  // Pools (bit for bit: ops/window_elements.hpp adds in the CPU's order) and the bias.
  const auto x = random_input<float>({4, 13, 11, 8}, seed++);
  for (const auto& [k, s, padding] : std::vector<std::tuple<std::int64_t, std::int64_t, const char*>>{
           {2, 2, "VALID"}, {3, 2, "SAME"}, {3, 1, "SAME"}, {5, 3, "VALID"}}) {
    BOOST_TEST_CONTEXT("pool " << k << "x" << k << " stride " << s << " " << padding) {
      expect_gpu_matches_cpu([&] { return dt::max_pool2d(x, k, s, padding); }, 0.0);
      expect_gpu_matches_cpu([&] { return dt::avg_pool2d(x, k, s, padding); }, 0.0);
      const auto dy = random_input<float>(dt::max_pool2d(x, k, s, padding).shape(), seed++);
      const auto pooled_gradient = [&](bool average) {
        dt::GradientTape tape;
        tape.watch(x);
        const auto pooled = average ? dt::avg_pool2d(x, k, s, padding) : dt::max_pool2d(x, k, s, padding);
        return tape.gradient(dt::reduce_sum(dt::mul(pooled, dy)), std::vector{x})[0];
      };
      expect_gpu_matches_cpu([&] { return pooled_gradient(false); }, 1e-6);
      expect_gpu_matches_cpu([&] { return pooled_gradient(true); }, 1e-6);
    }
  }
  const auto bias = random_input<float>({8}, seed++);
  expect_gpu_matches_cpu([&] { return dt::bias_add(x, bias); }, 0.0);
  expect_gpu_matches_cpu(
      [&] {  // BiasAddGrad
        dt::GradientTape tape;
        tape.watch(bias);
        return tape.gradient(dt::reduce_sum(dt::mul(dt::bias_add(x, bias), x)), std::vector{bias})[0];
      },
      1e-5);
}

BOOST_AUTO_TEST_CASE(ops_are_placed_on_the_real_gpu_and_logged) {
  dt::debugging::set_log_device_placement(true);
  const auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  const auto c = dt::matmul(a, b);
  BOOST_TEST(a.device() == kGpu0);
  BOOST_TEST(c.device() == kGpu0);
  BOOST_TEST(c.to_vector() == (std::vector<float>{22, 28, 49, 64}));
  BOOST_TEST(log.count("Executing op MatMul in device " + std::string(kGpu0)) == 1u);
  static_assert(dt::has_kernel_v<dt::ops::Add, dt::gpu_t, float>);
  static_assert(!dt::has_kernel_v<dt::ops::MatMul, dt::gpu_t, std::int32_t>);
}

BOOST_AUTO_TEST_CASE(copies_between_host_gpu_and_logical_gpus) {
  const auto gpus = dt::config::list_physical_devices("GPU");
  dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 512}, {.memory_limit_mb = 512}});
  const auto host = random_input<float>({1 << 20}, 22);
  dt::Tensor<float> on0;
  dt::Tensor<float> on1;
  {
    dt::DeviceScope s("/gpu:0");
    on0 = dt::identity(host);
  }
  {
    dt::DeviceScope s("/gpu:1");
    on1 = dt::mul(on0, dt::scalar<float>(2.0F));  // GPU:0 -> GPU:1, ordered by events
  }
  BOOST_TEST(on1.device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  const auto h = host.to_vector();
  const auto r = on1.to_vector();
  bool same = true;
  for (std::size_t i = 0; i < h.size(); ++i) same = same && r[i] == 2.0F * h[i];
  BOOST_TEST(same);
  BOOST_TEST(on0.at({12345}) == h[12345]);
}

BOOST_AUTO_TEST_CASE(two_logical_gpus_from_two_threads) {
  const auto gpus = dt::config::list_physical_devices("GPU");
  dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 256}, {.memory_limit_mb = 256}});
  std::vector<double> sums(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int g = 0; g < 2; ++g)
    threads.emplace_back([&, g] {
      try {
        dt::DeviceScope s("/gpu:" + std::to_string(g));
        auto x = dt::fill<float>({256, 256}, 1.0F / 256.0F);
        const auto w = dt::fill<float>({256, 256}, 1.0F / 256.0F);
        for (int i = 0; i < 50; ++i) x = dt::matmul(x, w);  // stays 1/256, exactly
        sums[static_cast<std::size_t>(g)] = static_cast<double>(dt::reduce_mean(x).item());
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(g)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(errors[0] == "");
  BOOST_TEST(errors[1] == "");
  BOOST_TEST(sums[0] == 1.0 / 256.0);
  BOOST_TEST(sums[1] == 1.0 / 256.0);
}

// Note [Fused chains on a GPU]: a traced chain with a scalar and a bias runs as one fused launch
// and gives eager execution's values (the same functors; tolerance for FMA contraction).
BOOST_AUTO_TEST_CASE(elementwise_chains_fuse_into_one_launch) {
  dt::DeviceScope scope("/gpu:0");
  const auto body = [](const dt::Tensor<float>& x, const dt::Tensor<float>& bias) {
    const auto y = dt::relu(x + bias) * 2.0f;
    return dt::tanh(dt::square(y - x) + dt::sigmoid(x)) / 3.0f;
  };
  auto f = dt::function(body);
  const auto x = random_input<float>({1000, 37}, 8);
  const auto bias = random_input<float>({37}, 9);
  const auto fused = f(x, bias).to_vector();
  const auto ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedElementwise") == 1);
  const auto eager = body(x, bias).to_vector();
  BOOST_TEST_REQUIRE(fused.size() == eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i)
    if (std::abs(fused[i] - eager[i]) > 1e-6f * (1 + std::abs(eager[i]))) {
      BOOST_ERROR("element " << i << ": fused " << fused[i] << " vs eager " << eager[i]);
      break;
    }
}

// Double chains (4 lanes a thread) over sizes that end in a partial strip, with scalar operands and
// a result read again two steps later (kept in a slot): eager's values.
BOOST_AUTO_TEST_CASE(double_chains_of_every_size_give_eager_values) {
  dt::DeviceScope scope("/gpu:0");
  const auto body = [](const dt::Tensor<double>& x) {
    const auto y = dt::exp(x * 0.5) - x;
    return dt::tanh(dt::square(y)) * y + x + 1.0;
  };
  auto f = dt::function(body);
  for (const std::int64_t n : {1, 5, 1023, 1025, (1 << 20) + 5}) {
    const auto x = random_input<double>({n}, static_cast<std::uint64_t>(n));
    const auto fused = f(x).to_vector();
    const auto eager = body(x).to_vector();
    BOOST_TEST_REQUIRE(fused.size() == eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i)
      if (std::abs(fused[i] - eager[i]) > 1e-12 * (1 + std::abs(eager[i]))) {
        BOOST_ERROR("n " << n << ", element " << i << ": fused " << fused[i] << " vs eager " << eager[i]);
        break;
      }
  }
  const auto ops = f.get_concrete_function(random_input<double>({5}, 5))->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedElementwise") == 1);
}

// A Sum or Mean over trailing axes ends the chain (`_FusedReduction`): many short rows (a block
// each), and one long row cut into chunks (two passes), in float and double: the values of the
// unfused graph's reduction on the same GPU, which adds the same elements in the same order.
BOOST_AUTO_TEST_CASE(reductions_fuse_into_the_chain_kernel) {
  dt::DeviceScope scope("/gpu:0");
  const auto check = [](const auto& fused, const auto& eager, double tolerance) {
    BOOST_TEST_REQUIRE(fused.size() == eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i)
      if (std::abs(fused[i] - eager[i]) > tolerance * (1 + std::abs(eager[i]))) {
        BOOST_ERROR("element " << i << ": fused " << fused[i] << " vs unfused " << eager[i]);
        break;
      }
  };
  const auto row_means = [](const dt::Tensor<float>& x, const dt::Tensor<float>& bias) {
    return dt::reduce_mean(dt::square(x - bias), {1});
  };
  auto f = dt::function(row_means);
  const auto x = random_input<float>({4096, 300}, 13);
  const auto bias = random_input<float>({300}, 14);
  check(f(x, bias).to_vector(), row_means(x, bias).to_vector(), 1e-6);
  const auto ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedReduction") == 1);

  const auto total = [](const dt::Tensor<double>& v) { return dt::reduce_sum(dt::relu(v * 0.5 - 0.25)); };
  auto g = dt::function(total);
  for (const std::int64_t n : {1, 2049, (1 << 22) + 7}) {
    const auto v = random_input<double>({n}, static_cast<std::uint64_t>(n) + 15);
    check(g(v).to_vector(), total(v).to_vector(), 1e-12);
  }
}

// MatMul + BiasAdd + Relu is one fused node (one cuBLASLt call with its epilogue, Note [GEMM
// epilogues]; the fake GPU's tests check which path runs), with eager execution's values.
BOOST_AUTO_TEST_CASE(matmul_bias_relu_fuses_into_gemm_and_chain) {
  dt::DeviceScope scope("/gpu:0");
  const auto body = [](const dt::Tensor<float>& x, const dt::Tensor<float>& w, const dt::Tensor<float>& bias) {
    return dt::relu(dt::matmul(x, w) + bias);
  };
  auto f = dt::function(body);
  const auto x = random_input<float>({256, 64}, 10);
  const auto w = random_input<float>({64, 48}, 11);
  const auto bias = random_input<float>({48}, 12);
  const auto fused = f(x, w, bias).to_vector();
  const auto ops = f.get_concrete_function(x, w, bias)->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedMatMul") == 1);
  BOOST_TEST(std::count(ops.begin(), ops.end(), "MatMul") == 0);
  const auto eager = body(x, w, bias).to_vector();
  BOOST_TEST_REQUIRE(fused.size() == eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i)
    if (std::abs(fused[i] - eager[i]) > 1e-5f * (1 + std::abs(eager[i]))) {
      BOOST_ERROR("element " << i << ": fused " << fused[i] << " vs eager " << eager[i]);
      break;
    }
}

// Note [GEMM epilogues] on cuBLASLt itself: it has an algorithm for Dense's problems in float and
// double, either operand transposed, with each epilogue; the product plus bias, clamped, equals
// eager execution's MatMul, AddV2 and Relu to the GEMM's rounding, and a NaN in the product is
// clamped to 0 as devtensor's Relu clamps it (kept without the Relu).
template <class T>
void check_gemm_epilogue(bool transpose_a, bool transpose_b, bool with_bias, bool relu, std::int64_t m, std::int64_t n,
                         std::int64_t k, std::uint64_t seed) {
  BOOST_TEST_CONTEXT("m " << m << ", n " << n << ", k " << k << ", transposes " << transpose_a << transpose_b
                          << ", bias " << with_bias << ", relu " << relu << ", " << sizeof(T) * 8 << " bits") {
    dt::DeviceScope scope("/gpu:0");
    auto a_values = random_input<T>(transpose_a ? dt::Shape{k, m} : dt::Shape{m, k}, seed).to_vector();
    a_values[0] = std::numeric_limits<T>::quiet_NaN();  // a NaN product in row 0 (column 0 when transposed)
    const auto a = dt::constant<T>(a_values, transpose_a ? dt::Shape{k, m} : dt::Shape{m, k});
    const dt::Shape b_shape = transpose_b ? dt::Shape{n, k} : dt::Shape{k, n};
    const auto b = dt::constant<T>(random_input<T>(b_shape, seed + 1).to_vector(), b_shape);  // on the GPU
    const auto bias = dt::constant<T>(random_input<T>({n}, seed + 2).to_vector(), {n});
    auto want = dt::matmul(a, b, transpose_a, transpose_b);
    if (with_bias) want = want + bias;
    if (relu) want = dt::relu(want);
    const auto out = dt::square(want);  // a buffer of its own, each element to be overwritten
    dt::ops::FusedGemm call;
    call.dtype = dt::dtype_enum<T>();
    call.transpose_a = transpose_a;
    call.transpose_b = transpose_b;
    call.relu = relu;
    call.m = m;
    call.n = n;
    call.k = k;
    call.a = a.storage()->data;
    call.b = b.storage()->data;
    call.bias = with_bias ? bias.storage()->data : nullptr;
    call.out = out.storage()->data;
    const dt::Device& gpu = *out.storage()->device;
    for (const auto* operand : {&a, &b, &bias}) BOOST_TEST_REQUIRE(operand->device() == kGpu0);
    BOOST_TEST_REQUIRE(dt::ops::gpu_fused_chain()->gemm(call, gpu.platform_ordinal, gpu.stream));
    const auto expected = want.to_vector();
    const auto got = out.to_vector();
    const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const double e = static_cast<double>(expected[i]);
      const double g = static_cast<double>(got[i]);
      if (std::isnan(e) != std::isnan(g) || std::abs(e - g) > tolerance * (1.0 + std::abs(e))) {
        BOOST_ERROR("element " << i << ": cuBLASLt " << g << " vs eager " << e);
        return;
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gemm_epilogues_run_on_cublaslt) {
  BOOST_TEST_REQUIRE((dt::ops::gpu_fused_chain() && dt::ops::gpu_fused_chain()->gemm));
  std::uint64_t seed = 40;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      check_gemm_epilogue<float>(ta, tb, true, true, 256, 48, 64, seed += 3);
      check_gemm_epilogue<double>(ta, tb, true, true, 33, 17, 129, seed += 3);
    }
  check_gemm_epilogue<float>(false, false, true, false, 1000, 1000, 333, seed += 3);
  check_gemm_epilogue<float>(false, false, false, true, 7, 5, 3, seed += 3);
  check_gemm_epilogue<double>(false, true, true, false, 64, 256, 1, seed += 3);
}

// A traced training step replayed as a CUDA graph (Note [CUDA-graph replay]): the capture succeeds
// (no fallback warning), replays allocate nothing on the GPU, and losses and weights follow the
// op-by-op function's (the same kernels on the same values; cuBLAS may choose another algorithm
// under capture, hence a tolerance). With SGD, and with Adam, whose step size the GPU computes from
// its own step count (ops::AdamStepSize), so that each replay takes its own.
template <class Optimizer>
void check_training_step_replays(const Optimizer& optimizer_settings) {
  const auto run = [&](bool cuda_graph, std::int64_t* allocations) {
    dt::DeviceScope scope("/gpu:0");
    dt::Variable<float> w(dt::random_uniform<float>({64, 32}, {.minval = -0.5, .maxval = 0.5, .seed = 3}));
    dt::Variable<float> b(dt::zeros<float>({32}));
    const Optimizer optimizer = [&] {
      Optimizer fresh = optimizer_settings;  // slots of its own
      fresh.slots = std::make_shared<typename decltype(fresh.slots)::element_type>();
      return fresh;
    }();
    auto step = dt::function(
        [&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
          dt::GradientTape tape;
          const auto loss = dt::reduce_mean(dt::square(dt::relu(dt::matmul(x, w.value()) + b.value()) - y));
          optimizer.apply_gradients(tape.gradient(loss, std::vector{w, b}), {w, b});
          return loss;
        },
        {.name = "train_step", .cuda_graph = cuda_graph});
    const auto x1 = random_input<float>({128, 64}, 5), x2 = random_input<float>({128, 64}, 6);
    const auto y = random_input<float>({128, 32}, 7);
    std::vector<float> losses;
    const auto& gpu = *w.component(0).storage()->device;
    std::int64_t before = 0;
    for (int i = 0; i < 8; ++i) {
      if (i == 3) before = gpu.allocator->stats().num_allocs;
      losses.push_back(step(i % 2 ? x2 : x1, y).item());
    }
    *allocations = gpu.allocator->stats().num_allocs - before;
    if (cuda_graph)
      BOOST_TEST(
          (step.get_concrete_function(x1, y)->cuda_graph()->stage() == dt::graph::CudaGraphReplay::Stage::replay));
    BOOST_TEST(optimizer.iterations() == 8);
    auto weights = w.to_vector();
    for (float v : b.to_vector()) weights.push_back(v);
    return std::pair{losses, weights};
  };
  std::int64_t plain_allocations = 0, replay_allocations = 0;
  const auto plain = run(false, &plain_allocations);
  const auto replayed = run(true, &replay_allocations);
  BOOST_TEST(replay_allocations == 0);  // five replays
  BOOST_TEST(plain_allocations > 0);
  for (std::size_t i = 0; i < plain.first.size(); ++i)
    BOOST_TEST(std::abs(replayed.first[i] - plain.first[i]) <= 1e-5f * (1 + std::abs(plain.first[i])));
  for (std::size_t i = 0; i < plain.second.size(); ++i)
    BOOST_TEST(std::abs(replayed.second[i] - plain.second[i]) <= 1e-5f * (1 + std::abs(plain.second[i])));
}

BOOST_AUTO_TEST_CASE(a_training_step_replays_as_a_cuda_graph) {
  check_training_step_replays(dt::nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9});
  BOOST_TEST(log.count("CUDA graph") == 0);
}

BOOST_AUTO_TEST_CASE(an_adam_training_step_replays_as_a_cuda_graph) {
  check_training_step_replays(dt::nn::optimizers::Adam{.learning_rate = 0.01});
  BOOST_TEST(log.count("CUDA graph") == 0);
}

BOOST_AUTO_TEST_SUITE_END()
