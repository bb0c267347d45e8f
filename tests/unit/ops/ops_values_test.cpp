// Every op's values against a double-precision reference, broadcasting, and shape/dtype errors.
#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cpu/convolution_engine.hpp"
#include "devtensor/ops/window_elements.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace nn = devtensor::nn;
using dt::InvalidArgumentError;

namespace {

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::is_integral_v<T> ? std::round(dist(rng) * 10) : dist(rng));
  return v;
}

template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, double rtol) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    BOOST_TEST(std::abs(g - want[i]) <= rtol * (1.0 + std::abs(want[i])),
               "element " << i << ": " << g << " vs " << want[i]);
  }
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

using FloatTypes = std::tuple<float, double>;
using NumericTypes = std::tuple<float, double, std::int32_t, std::int64_t>;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(ops_values, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(seed_matmul) {
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto c = dt::matmul(a, b);
  BOOST_TEST(c.shape() == (dt::Shape{2, 2}));
  BOOST_TEST(c.to_vector() == (std::vector<float>{22, 28, 49, 64}), boost::test_tools::per_element());
  BOOST_TEST(dt::add_n(std::vector{c, c}).to_vector() == (std::vector<float>{44, 56, 98, 128}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_against_reference, T, NumericTypes) {
  for (auto [m, k, n] : {std::tuple{1, 1, 1}, {3, 5, 4}, {17, 33, 9}, {64, 70, 65}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto av = random_values<T>(static_cast<std::size_t>(m * k), 1);
        const auto bv = random_values<T>(static_cast<std::size_t>(k * n), 2);
        auto a = dt::constant<T>(av, ta ? dt::Shape{k, m} : dt::Shape{m, k});
        auto b = dt::constant<T>(bv, tb ? dt::Shape{n, k} : dt::Shape{k, n});
        std::vector<double> want(static_cast<std::size_t>(m * n), 0.0);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j)
            for (int p = 0; p < k; ++p) {
              const double x = static_cast<double>(av[static_cast<std::size_t>(ta ? p * m + i : i * k + p)]);
              const double y = static_cast<double>(bv[static_cast<std::size_t>(tb ? j * k + p : p * n + j)]);
              want[static_cast<std::size_t>(i * n + j)] += x * y;
            }
        BOOST_TEST_CONTEXT("m=" << m << " k=" << k << " n=" << n << " ta=" << ta << " tb=" << tb) {
          check_close(dt::matmul(a, b, ta, tb).to_vector(), want, tolerance<T>() * k);
        }
      }
  }
}

BOOST_AUTO_TEST_CASE(matmul_batched_and_errors) {
  auto a = dt::constant<double>(random_values<double>(2 * 3 * 4, 3), {2, 3, 4});
  auto b = dt::constant<double>(random_values<double>(2 * 4 * 5, 4), {2, 4, 5});
  auto c = dt::matmul(a, b);
  BOOST_TEST(c.shape() == (dt::Shape{2, 3, 5}));
  auto c1 = dt::matmul(dt::slice(a, {1, 0, 0}, {1, 3, 4}), dt::slice(b, {1, 0, 0}, {1, 4, 5}));
  BOOST_TEST(dt::slice(c, {1, 0, 0}, {1, 3, 5}).to_vector() == c1.to_vector(), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(dt::matmul(dt::zeros<float>({2, 3}), dt::zeros<float>({2, 3})), InvalidArgumentError,
                             "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3] [Op:MatMul]");
  DEVTENSOR_CHECK_THROW_WITH(dt::matmul(dt::zeros<float>({3}), dt::zeros<float>({3, 1})), InvalidArgumentError,
                             "must be matrices of the same rank >= 2");
  DEVTENSOR_CHECK_THROW_WITH(dt::matmul(dt::zeros<float>({2, 2, 2}), dt::zeros<float>({3, 2, 2})), InvalidArgumentError,
                             "same batch dimensions");
  BOOST_TEST(dt::matmul(dt::zeros<float>({2, 0}), dt::zeros<float>({0, 3})).to_vector() == std::vector<float>(6, 0.0f),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(binary_ops_with_broadcasting, T, NumericTypes) {
  struct Case {
    dt::Shape a, b, out;
  };
  const Case cases[] = {{{2, 3}, {2, 3}, {2, 3}},          {{2, 3}, {3}, {2, 3}}, {{2, 1}, {1, 3}, {2, 3}},
                        {{4, 1, 3}, {2, 1}, {4, 2, 3}},    {{}, {2, 2}, {2, 2}},  {{3}, {}, {3}},
                        {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}}, {{0, 3}, {3}, {0, 3}}};
  for (const auto& c : cases) {
    const auto av = random_values<T>(static_cast<std::size_t>(c.a.num_elements()), 5, 1.0, 3.0);
    const auto bv = random_values<T>(static_cast<std::size_t>(c.b.num_elements()), 6, 1.0, 3.0);
    const auto a = dt::constant<T>(av, c.a);
    const auto b = dt::constant<T>(bv, c.b);
    // Reference: index arithmetic in double.
    const auto at = [&](const std::vector<T>& v, const dt::Shape& s, std::int64_t flat) {
      std::int64_t offset = 0, stride = 1, rest = flat;
      std::vector<std::int64_t> idx(c.out.rank());
      for (std::size_t d = c.out.rank(); d-- > 0;) {
        idx[d] = rest % c.out[d];
        rest /= c.out[d];
      }
      for (std::size_t d = s.rank(); d-- > 0;) {
        const auto od = d + c.out.rank() - s.rank();
        offset += (s[d] == 1 ? 0 : idx[od]) * stride;
        stride *= s[d];
      }
      return static_cast<double>(v[static_cast<std::size_t>(offset)]);
    };
    std::vector<double> add, sub, mul, div;
    for (std::int64_t i = 0; i < c.out.num_elements(); ++i) {
      const double x = at(av, c.a, i), y = at(bv, c.b, i);
      add.push_back(x + y);
      sub.push_back(x - y);
      mul.push_back(x * y);
      div.push_back(std::is_integral_v<T> ? std::floor(x / y) : x / y);
    }
    BOOST_TEST_CONTEXT(c.a.to_string() << " op " << c.b.to_string()) {
      BOOST_TEST((dt::add(a, b).shape() == c.out));
      check_close((a + b).to_vector(), add, tolerance<T>());
      check_close((a - b).to_vector(), sub, tolerance<T>());
      check_close((a * b).to_vector(), mul, tolerance<T>());
      check_close((a / b).to_vector(), div, tolerance<T>());
    }
  }
  DEVTENSOR_CHECK_THROW_WITH(dt::add(dt::zeros<T>({2, 3}), dt::zeros<T>({4})), InvalidArgumentError,
                             "Incompatible shapes: [2,3] vs. [4] [Op:AddV2]");
}

BOOST_AUTO_TEST_CASE(integer_division_floors_and_rejects_zero) {
  auto a = dt::constant<std::int32_t>({7, -7, 7, -7});
  auto b = dt::constant<std::int32_t>({2, 2, -2, -2});
  BOOST_TEST((a / b).to_vector() == (std::vector<std::int32_t>{3, -4, -4, 3}), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(a / dt::constant<std::int32_t>({1, 0, 1, 1}), InvalidArgumentError,
                             "Integer division by zero");
}

BOOST_AUTO_TEST_CASE(scalar_operators) {
  auto a = dt::constant<float>({1, 2, 3});
  BOOST_TEST((a + 1).to_vector() == (std::vector<float>{2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST((2 * a).to_vector() == (std::vector<float>{2, 4, 6}), boost::test_tools::per_element());
  BOOST_TEST((1 - a).to_vector() == (std::vector<float>{0, -1, -2}), boost::test_tools::per_element());
  BOOST_TEST((a / 2).to_vector() == (std::vector<float>{0.5f, 1, 1.5f}), boost::test_tools::per_element());
  BOOST_TEST((-a).to_vector() == (std::vector<float>{-1, -2, -3}), boost::test_tools::per_element());
  BOOST_TEST(dt::maximum(a, dt::scalar<float>(2)).to_vector() == (std::vector<float>{2, 2, 3}),
             boost::test_tools::per_element());
}

namespace {
/// What a user op's gradient does with a Scalar attribute, in a template over T.
template <class T, class Attrs>
std::pair<T, dt::Tensor<T>> read_attribute(const Attrs& attrs) {
  return {static_cast<T>(attrs.lo), dt::scalar<T>(attrs.lo)};  // no `.template as<T>()`
}
struct ClipAttrs {
  dt::ops::Scalar lo;
};
}  // namespace

BOOST_AUTO_TEST_CASE(scalar_attributes_convert_in_templates) {
  const ClipAttrs from_double{dt::ops::Scalar::of(2.75)};
  const auto [as_float, tensor] = read_attribute<float>(from_double);
  BOOST_TEST(as_float == 2.75f);
  BOOST_TEST(tensor.rank() == 0);
  BOOST_TEST(tensor.item() == 2.75f);
  // Converted as C++ converts: toward zero for integers, exact for the stored type.
  BOOST_TEST((read_attribute<std::int32_t>(from_double).first) == 2);
  const ClipAttrs big{dt::ops::Scalar::of(std::int64_t{1} << 40)};
  BOOST_TEST((read_attribute<std::int64_t>(big).first) == (std::int64_t{1} << 40));
  BOOST_TEST((read_attribute<double>(big).second.item()) == 1099511627776.0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unary_ops, T, FloatTypes) {
  const auto v = random_values<T>(257, 7, 0.1, 3.0);
  const auto x = dt::constant<T>(v);
  const auto ref = [&](auto f) {
    std::vector<double> out;
    for (T e : v) out.push_back(f(static_cast<double>(e)));
    return out;
  };
  check_close(dt::neg(x).to_vector(), ref([](double e) { return -e; }), tolerance<T>());
  check_close(dt::square(x).to_vector(), ref([](double e) { return e * e; }), tolerance<T>());
  check_close(dt::sqrt(x).to_vector(), ref([](double e) { return std::sqrt(e); }), tolerance<T>());
  check_close(dt::exp(x).to_vector(), ref([](double e) { return std::exp(e); }), tolerance<T>());
  check_close(dt::log(x).to_vector(), ref([](double e) { return std::log(e); }), tolerance<T>());
  check_close(dt::sigmoid(x).to_vector(), ref([](double e) { return 1 / (1 + std::exp(-e)); }), tolerance<T>());
  check_close(dt::tanh(x).to_vector(), ref([](double e) { return std::tanh(e); }), tolerance<T>());
  const auto y = dt::constant<T>({-1, 0, 2});
  BOOST_TEST(dt::relu(y).to_vector() == (std::vector<T>{0, 0, 2}), boost::test_tools::per_element());
  BOOST_TEST(dt::relu(dt::constant<std::int64_t>({-3, 4})).to_vector() == (std::vector<std::int64_t>{0, 4}),
             boost::test_tools::per_element());
}

// TensorFlow 2.21's values, printed by tests/reference/softplus.py: its thresholds (x itself, or
// e^x, near the ends) and log1p(e^x) between; the gradient is sigmoid(x). TensorFlow's CPU
// kernels flush subnormal results to zero (softplus(-100) in float32); devtensor keeps them.
BOOST_AUTO_TEST_CASE_TEMPLATE(softplus_matches_tensorflow, T, FloatTypes) {
  const std::vector<T> x{-100, -40, -20, -14, -13, -1, T(-1e-3), 0, T(1e-3), T(0.5), 1, 13, 14, 20, 40, 100};
  std::vector<double> want, want_gradient;
  if constexpr (std::is_same_v<T, float>) {
    want = {0.0,
            4.24835413113866e-18,
            2.06115369216775e-09,
            8.315287232107949e-07,
            2.260326937175705e-06,
            0.3132616877555847,
            0.6926472783088684,
            0.6931471824645996,
            0.6936473250389099,
            0.9740769267082214,
            1.31326162815094,
            13.000001907348633,
            14.0,
            20.0,
            40.0,
            100.0};
    want_gradient = {0.0,
                     4.248354544728966e-18,
                     2.0611541362569596e-09,
                     8.315280410897685e-07,
                     2.2603244360652752e-06,
                     0.26894140243530273,
                     0.4997499883174896,
                     0.5,
                     0.500249981880188,
                     0.622459352016449,
                     0.7310585379600525,
                     0.9999977350234985,
                     0.9999991655349731,
                     1.0,
                     1.0,
                     1.0};
  } else {
    want = {3.7200759760208356e-44,
            4.248354255291589e-18,
            2.061153620314381e-09,
            8.315283733837541e-07,
            2.2603268524403896e-06,
            0.3132616875182228,
            0.6926473055599401,
            0.6931471805599453,
            0.6936473055599401,
            0.9740769841801067,
            1.3132616875182228,
            13.000002260326852,
            14.000000831528373,
            20.000000002061153,
            40.0,
            100.0};
    want_gradient = {3.7200759760208356e-44,
                     4.248354255291589e-18,
                     2.0611536181902033e-09,
                     8.315280276641321e-07,
                     2.2603242979035742e-06,
                     0.2689414213699951,
                     0.49975000002083336,
                     0.5,
                     0.5002499999791666,
                     0.6224593312018546,
                     0.7310585786300049,
                     0.999997739675702,
                     0.9999991684719723,
                     0.9999999979388464,
                     1.0,
                     1.0};
  }
  const auto in = dt::constant<T>(x, dt::Shape{static_cast<std::int64_t>(x.size())});
  dt::GradientTape tape;
  tape.watch(in);
  const auto y = dt::softplus(in, {.name = "softplus"});
  const auto got = y.to_vector();
  const auto gradient = tape.gradient(y, in).to_vector();
  // A few ulps (libm's exp and log1p against Eigen's), or a subnormal where TensorFlow gives 0.
  const auto close = [](T got_value, double want_value) {
    return std::abs(static_cast<double>(got_value) - want_value) <=
           4 * std::numeric_limits<T>::epsilon() * std::abs(want_value) + std::numeric_limits<T>::min();
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    BOOST_TEST(close(got[i], want[i]), "softplus(" << x[i] << ") = " << got[i] << ", TensorFlow " << want[i]);
    BOOST_TEST(close(gradient[i], want_gradient[i]),
               "softplus'(" << x[i] << ") = " << gradient[i] << ", TensorFlow " << want_gradient[i]);
  }
  const auto special =
      dt::softplus(dt::constant<T>({std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                                    -std::numeric_limits<T>::infinity()}))
          .to_vector();
  BOOST_TEST(std::isnan(special[0]));
  BOOST_TEST(special[1] == std::numeric_limits<T>::infinity());
  BOOST_TEST(special[2] == T{0});
  BOOST_CHECK_THROW(dt::softplus(dt::Tensor<T>{}), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(add_n_against_reference, T, NumericTypes) {
  std::vector<dt::Tensor<T>> inputs;
  std::vector<double> want(30, 0.0);
  for (unsigned k = 0; k < 4; ++k) {
    const auto v = random_values<T>(30, 10 + k);
    inputs.push_back(dt::constant<T>(v, {5, 6}));
    for (std::size_t i = 0; i < 30; ++i) want[i] += static_cast<double>(v[i]);
  }
  check_close(dt::add_n(inputs).to_vector(), want, tolerance<T>());
  BOOST_TEST(dt::add_n(std::vector{inputs[0]}).to_vector() == inputs[0].to_vector(), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(dt::add_n(std::vector<dt::Tensor<T>>{}), InvalidArgumentError, "at least one input");
  DEVTENSOR_CHECK_THROW_WITH(dt::add_n(std::vector{inputs[0], dt::zeros<T>({6, 5})}), InvalidArgumentError,
                             "Shapes of all inputs must match: values[0].shape = [5,6] != values[1].shape = [6,5]");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reductions_against_reference, T, NumericTypes) {
  const dt::Shape shape{3, 4, 5};
  const auto v = random_values<T>(60, 20);
  const auto x = dt::constant<T>(v, shape);
  // Every subset of axes, with and without keepdims.
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<std::int64_t> axes;
    for (int d = 0; d < 3; ++d)
      if (mask & (1 << d)) axes.push_back(d == 2 ? -1 : d);  // a negative axis too
    std::vector<std::int64_t> out_dims, keep_dims;
    for (int d = 0; d < 3; ++d) {
      if (!(mask & (1 << d))) out_dims.push_back(shape[static_cast<std::size_t>(d)]);
      keep_dims.push_back((mask & (1 << d)) ? 1 : shape[static_cast<std::size_t>(d)]);
    }
    const dt::Shape out_shape(out_dims);
    std::vector<double> sum(static_cast<std::size_t>(out_shape.num_elements()), 0.0);
    std::vector<double> mx(sum.size(), -1e300);
    std::vector<double> count(sum.size(), 0.0);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j)
        for (std::int64_t k = 0; k < 5; ++k) {
          const std::int64_t idx[3] = {i, j, k};
          std::int64_t o = 0;
          for (int d = 0; d < 3; ++d)
            if (!(mask & (1 << d))) o = o * shape[static_cast<std::size_t>(d)] + idx[d];
          const double e = static_cast<double>(v[static_cast<std::size_t>(i * 20 + j * 5 + k)]);
          sum[static_cast<std::size_t>(o)] += e;
          mx[static_cast<std::size_t>(o)] = std::max(mx[static_cast<std::size_t>(o)], e);
          count[static_cast<std::size_t>(o)] += 1;
        }
    std::vector<double> mean(sum.size());
    for (std::size_t i = 0; i < sum.size(); ++i)
      mean[i] = std::is_integral_v<T> ? std::trunc(sum[i] / count[i]) : sum[i] / count[i];
    BOOST_TEST_CONTEXT("mask " << mask) {
      const auto s = dt::reduce_sum(x, axes);
      BOOST_TEST((s.shape() == out_shape));
      check_close(s.to_vector(), sum, tolerance<T>() * 10);
      check_close(dt::reduce_mean(x, axes).to_vector(), mean, tolerance<T>() * 10);
      check_close(dt::reduce_max(x, axes).to_vector(), mx, 0.0);
      BOOST_TEST((dt::reduce_sum(x, axes, true).shape() == dt::Shape(keep_dims)));
    }
  }
  BOOST_TEST(dt::reduce_sum(x).shape() == dt::Shape{});  // all axes
  DEVTENSOR_CHECK_THROW_WITH(dt::reduce_sum(x, 3), InvalidArgumentError, "Invalid reduction dimension");
  DEVTENSOR_CHECK_THROW_WITH(dt::reduce_sum(x, std::vector<std::int64_t>{1, -2}), InvalidArgumentError,
                             "specified more than once");
}

BOOST_AUTO_TEST_CASE(shape_ops) {
  auto x = dt::range<std::int32_t>(0, 24);
  BOOST_TEST(x.shape() == dt::Shape{24});
  auto r = dt::reshape(x, {2, -1, 4});
  BOOST_TEST(r.shape() == (dt::Shape{2, 3, 4}));
  BOOST_TEST(r.data() == x.data());  // same device: the buffer is shared
  DEVTENSOR_CHECK_THROW_WITH(dt::reshape(x, {5, 5}), InvalidArgumentError,
                             "Input to reshape is a tensor with 24 values, but the requested shape has 25");
  DEVTENSOR_CHECK_THROW_WITH(dt::reshape(x, {-1, -1}), InvalidArgumentError, "Only one input size may be -1");
  DEVTENSOR_CHECK_THROW_WITH(dt::reshape(x, {5, -1}), InvalidArgumentError, "a multiple of 5");

  auto t = dt::transpose(r, {2, 0, 1});
  BOOST_TEST(t.shape() == (dt::Shape{4, 2, 3}));
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t k = 0; k < 3; ++k) BOOST_TEST(t.at({i, j, k}) == r.at({j, k, i}));
  BOOST_TEST(dt::transpose(dt::reshape(x, {4, 6})).shape() == (dt::Shape{6, 4}));
  DEVTENSOR_CHECK_THROW_WITH(dt::transpose(r, {0, 0, 1}), InvalidArgumentError, "permutation");

  auto a = dt::reshape(dt::range<std::int32_t>(0, 6), {2, 3});
  auto b = dt::reshape(dt::range<std::int32_t>(6, 10), {2, 2});
  auto c = dt::concat(std::vector{a, b}, 1);
  BOOST_TEST(c.to_vector() == (std::vector<std::int32_t>{0, 1, 2, 6, 7, 3, 4, 5, 8, 9}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::concat(std::vector{a, a}, 0).shape() == (dt::Shape{4, 3}));
  DEVTENSOR_CHECK_THROW_WITH(
      dt::concat(std::vector{a, b}, 0), InvalidArgumentError,
      "ConcatOp : Dimension 1 in both shapes must be equal: shape[0] = [2,3] vs. shape[1] = [2,2]");

  auto parts = dt::split(c, std::vector<std::int64_t>{3, -1}, 1);
  BOOST_TEST_REQUIRE(parts.size() == 2u);
  BOOST_TEST(parts[0].to_vector() == a.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(parts[1].to_vector() == b.to_vector(), boost::test_tools::per_element());
  auto halves = dt::split(x, 2);
  BOOST_TEST(halves[1].at({0}) == 12);
  DEVTENSOR_CHECK_THROW_WITH(dt::split(x, 5), InvalidArgumentError,
                             "Number of ways to split should evenly divide the split dimension");
  DEVTENSOR_CHECK_THROW_WITH(dt::split(x, std::vector<std::int64_t>{3, 3}), InvalidArgumentError,
                             "Determined shape must either match input shape");

  auto s = dt::slice(r, {1, 1, 0}, {1, -1, 2});
  BOOST_TEST(s.shape() == (dt::Shape{1, 2, 2}));
  BOOST_TEST(s.to_vector() == (std::vector<std::int32_t>{16, 17, 20, 21}), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(dt::slice(r, {0, 0, 0}, {3, 1, 1}), InvalidArgumentError, "Expected size[0] in [0, 2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::slice(r, {0, 0}, {1, 1}), InvalidArgumentError, "1-D tensors of size 3");

  BOOST_TEST(dt::identity(x).data() == x.data());
}

BOOST_AUTO_TEST_CASE(cast_and_creation) {
  auto f = dt::constant<float>({-1.7f, 0.0f, 2.9f});
  BOOST_TEST(f.cast<std::int32_t>().to_vector() == (std::vector<std::int32_t>{-1, 0, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::cast<bool>(f).to_vector() == (std::vector<bool>{true, false, true}), boost::test_tools::per_element());
  BOOST_TEST(dt::cast<double>(dt::constant<bool>({true, false})).to_vector() == (std::vector<double>{1, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::fill<std::int64_t>({2, 2}, 7).to_vector() == std::vector<std::int64_t>(4, 7),
             boost::test_tools::per_element());
  BOOST_TEST(dt::ones<double>({3}).to_vector() == std::vector<double>(3, 1.0), boost::test_tools::per_element());
  BOOST_TEST(dt::constant<float>({5}, {2, 2}).to_vector() == std::vector<float>(4, 5.0f),
             boost::test_tools::per_element());
  BOOST_TEST(dt::range<double>(0, 1, 0.25).to_vector() == (std::vector<double>{0, 0.25, 0.5, 0.75}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::range<std::int64_t>(10, 0, -3).to_vector() == (std::vector<std::int64_t>{10, 7, 4, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::scalar<float>(3).item() == 3.0f);
  DEVTENSOR_CHECK_THROW_WITH(dt::constant<float>({1, 2, 3}, {2, 2}), InvalidArgumentError,
                             "3 values do not fit shape [2,2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::range<std::int32_t>(0, 5, 0), InvalidArgumentError, "Requires delta != 0");
  DEVTENSOR_CHECK_THROW_WITH(dt::range<std::int32_t>(5, 0, 1), InvalidArgumentError, "Requires start <= limit");
  DEVTENSOR_CHECK_THROW_WITH(dt::fill<float>(dt::Shape({-1, 2}), 0.f), InvalidArgumentError, "must be >= 0");
}

BOOST_AUTO_TEST_CASE(random_is_seeded_and_distributed) {
  auto u1 = dt::random_uniform<float>({1000}, {.minval = -1, .maxval = 3, .seed = 42});
  auto u2 = dt::random_uniform<float>({1000}, {.minval = -1, .maxval = 3, .seed = 42});
  BOOST_TEST(u1.to_vector() == u2.to_vector(), boost::test_tools::per_element());
  const auto v = u1.to_vector();
  BOOST_TEST(*std::min_element(v.begin(), v.end()) >= -1.0f);
  BOOST_TEST(*std::max_element(v.begin(), v.end()) < 3.0f);
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / 1000;
  BOOST_TEST(std::abs(mean - 1.0) < 0.15);
  auto n = dt::random_normal<double>({20000}, {.mean = 2, .stddev = 3, .seed = 7}).to_vector();
  const double nm = std::accumulate(n.begin(), n.end(), 0.0) / 20000;
  double var = 0;
  for (double e : n) var += (e - nm) * (e - nm);
  BOOST_TEST(std::abs(nm - 2.0) < 0.1);
  BOOST_TEST(std::abs(std::sqrt(var / 20000) - 3.0) < 0.1);
  BOOST_TEST(dt::random_uniform<float>({8}, {.seed = 1}).to_vector() !=
             dt::random_uniform<float>({8}, {.seed = 2}).to_vector());
  DEVTENSOR_CHECK_THROW_WITH(dt::random_uniform<float>({2}, {.minval = 1, .maxval = 1}), InvalidArgumentError,
                             "Need minval < maxval");
  DEVTENSOR_CHECK_THROW_WITH(dt::random_normal<float>({2}, {.stddev = -1}), InvalidArgumentError, "stddev");
}

// TensorFlow's seed rule (checked with TensorFlow 2.21 and Keras 3.15): after set_seed the unseeded
// draws repeat as a sequence; an op's own seed is combined with the global one; a Keras object's own
// seed is not; std::nullopt clears the global seed (as set_seed(None)). FreshContext clears it too.
BOOST_AUTO_TEST_CASE(the_global_seed_follows_tensorflows_rule) {
  const auto uniform = [](std::optional<std::uint64_t> seed = std::nullopt) {
    return dt::random_uniform<float>({16}, {.seed = seed}).to_vector();
  };
  BOOST_TEST(!dt::random::get_seed().has_value());
  BOOST_TEST(uniform() != uniform());  // no global seed: fresh each call and each run
  dt::random::set_seed(1);
  BOOST_TEST_REQUIRE(dt::random::get_seed().has_value());
  BOOST_TEST(*dt::random::get_seed() == 1u);
  const auto a = uniform(), b = uniform();
  const auto normal = dt::random_normal<double>({4}).to_vector();
  dt::random::set_seed(1);
  BOOST_TEST(uniform() == a, boost::test_tools::per_element());
  BOOST_TEST(uniform() == b, boost::test_tools::per_element());
  BOOST_TEST(dt::random_normal<double>({4}).to_vector() == normal, boost::test_tools::per_element());
  BOOST_TEST(a != b);
  dt::random::set_seed(2);
  BOOST_TEST(uniform() != a);
  // An op's own seed: alone without a global seed, combined with it when one is set.
  const auto own_1 = uniform(5);
  BOOST_TEST(uniform(5) == own_1, boost::test_tools::per_element());
  dt::random::set_seed(1);
  BOOST_TEST(uniform(5) != own_1);
  dt::random::set_seed(std::nullopt);
  const auto own_alone = uniform(5);
  BOOST_TEST(uniform(5) == own_alone, boost::test_tools::per_element());
  BOOST_TEST(own_alone != own_1);
  // Keras objects: their own seed whatever the global one; unseeded ones follow the sequence.
  const auto seeded = nn::initializers::GlorotUniform{.seed = 3}(dt::Shape({3, 2})).to_vector();
  nn::utils::set_random_seed(9);
  BOOST_TEST(nn::initializers::GlorotUniform{.seed = 3}(dt::Shape({3, 2})).to_vector() == seeded,
             boost::test_tools::per_element());
  const auto glorot = nn::initializers::GlorotUniform{}(dt::Shape({3, 2})).to_vector();
  const auto dense = nn::Dense(2, {.input_dim = 3}).trainable_variables()[0].value().to_vector();
  nn::utils::set_random_seed(9);
  BOOST_TEST(nn::initializers::GlorotUniform{}(dt::Shape({3, 2})).to_vector() == glorot,
             boost::test_tools::per_element());
  BOOST_TEST(nn::Dense(2, {.input_dim = 3}).trainable_variables()[0].value().to_vector() == dense,
             boost::test_tools::per_element());
  // A shuffle without a seed of its own repeats its order under the same global seed.
  const auto order = [] {
    std::vector<float> seen;
    const auto rows = dt::range<float>(0, 64, 1);
    for (const auto& [x] : dt::data::Dataset<float>::from_tensor_slices(rows).shuffle(64)) seen.push_back(x.item());
    return seen;
  };
  dt::random::set_seed(4);
  const auto first = order();
  dt::random::set_seed(4);
  BOOST_TEST(order() == first, boost::test_tools::per_element());
  dt::random::set_seed(5);
  BOOST_TEST(order() != first);
}

BOOST_AUTO_TEST_CASE(stateless_random_uniform_is_a_function_of_its_seeds) {
  // The seed tensor and the attribute seed determine the values; either changes them.
  const auto seven = dt::scalar<std::int64_t>(7);
  const auto a = dt::stateless_random_uniform<float>(dt::Shape({4000}), seven, 1).to_vector();
  BOOST_TEST(a == dt::stateless_random_uniform<float>(dt::Shape({4000}), seven, 1).to_vector(),
             boost::test_tools::per_element());
  BOOST_TEST(a != dt::stateless_random_uniform<float>(dt::Shape({4000}), dt::scalar<std::int64_t>(8), 1).to_vector());
  BOOST_TEST(a != dt::stateless_random_uniform<float>(dt::Shape({4000}), seven, 2).to_vector());
  BOOST_TEST(*std::min_element(a.begin(), a.end()) >= 0.0f);
  BOOST_TEST(*std::max_element(a.begin(), a.end()) < 1.0f);
  BOOST_TEST(std::abs(std::accumulate(a.begin(), a.end(), 0.0) / 4000 - 0.5) < 0.02);
  const auto d = dt::stateless_random_uniform<double>(dt::Shape({2, 3}), dt::constant<std::int64_t>({7}, {1}), 1);
  BOOST_TEST(d.shape() == dt::Shape({2, 3}));
  BOOST_TEST(d.to_vector()[0] == static_cast<double>(a[0]), boost::test_tools::tolerance(1e-6));  // the same stream
  DEVTENSOR_CHECK_THROW_WITH(dt::stateless_random_uniform<float>(dt::Shape({2}), dt::constant<std::int64_t>({1, 2}), 1),
                             InvalidArgumentError, "seed must have exactly one element, got shape [2]");
}

BOOST_AUTO_TEST_CASE(reductions_over_leading_axes_of_wide_rows) {
  // Kept axes after the reduced block, wider than one accumulator block (512): several tasks per
  // row, a partial last block (276 columns: groups of 8 and 4 single columns), before > 1, and
  // more rows than one panel (64) with a partial last panel. Every column adds its rows in order,
  // so the results equal a double-precision loop's exactly.
  for (const std::int64_t reduced : {7, 130}) {
    const std::int64_t before = 2, after = 1300;
    std::vector<float> v(static_cast<std::size_t>(before * reduced * after));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 101) - 50.0f;
    const auto x = dt::constant<float>(v, {before, reduced, after});
    const auto sum = dt::reduce_sum(x, 1).to_vector();
    const auto mean = dt::reduce_mean(x, 1).to_vector();
    const auto mx = dt::reduce_max(x, 1).to_vector();
    BOOST_TEST_REQUIRE(sum.size() == static_cast<std::size_t>(before * after));
    std::size_t wrong = 0;
    for (std::int64_t a = 0; a < before; ++a)
      for (std::int64_t b = 0; b < after; ++b) {
        double s = 0.0, m = -1e300;
        for (std::int64_t r = 0; r < reduced; ++r) {
          const double e = v[static_cast<std::size_t>((a * reduced + r) * after + b)];
          s += e;
          m = std::max(m, e);
        }
        const auto o = static_cast<std::size_t>(a * after + b);
        wrong += sum[o] != static_cast<float>(s) || mean[o] != static_cast<float>(s / static_cast<double>(reduced)) ||
                 mx[o] != static_cast<float>(m);
      }
    BOOST_TEST(wrong == 0u, "reduced " << reduced);
  }
  // An empty reduced axis: sums are 0, as before.
  BOOST_TEST(dt::reduce_sum(dt::zeros<float>({0, 3}), 0).to_vector() == std::vector<float>(3, 0.0f),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// Convolution and pooling (ops/conv.hpp) against TensorFlow 2.21 (tests/reference/conv.py makes
// the figures) and against a direct loop.
BOOST_AUTO_TEST_SUITE(conv)

namespace {

/// 0, 1, 2, ... in row-major order, scaled and shifted (conv.py's ramp).
dt::Tensor<double> ramp(const dt::Shape& shape, double scale, double shift = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / scale - shift;
  return dt::constant<double>(v, shape);
}

struct Figure {
  std::string name;
  std::vector<std::int64_t> shape;
  double sum, weighted;
};

/// Σ y and Σ y[i]·(i mod 7 + 1), compared with TensorFlow's.
void check_figure(const Figure& want, const dt::Tensor<double>& y, double rtol = 1e-10) {
  BOOST_TEST_CONTEXT(want.name) {
    BOOST_TEST(y.shape() == dt::Shape(want.shape));
    double sum = 0, weighted = 0;
    const auto v = y.to_vector();
    for (std::size_t i = 0; i < v.size(); ++i) {
      sum += v[i];
      weighted += v[i] * static_cast<double>(i % 7 + 1);
    }
    BOOST_TEST(std::abs(sum - want.sum) <= rtol * (1 + std::abs(want.sum)), sum << " vs " << want.sum);
    BOOST_TEST(std::abs(weighted - want.weighted) <= rtol * (1 + std::abs(want.weighted)),
               weighted << " vs " << want.weighted);
  }
}

/// Σ f(inputs)² differentiated by the tape.
template <class F>
std::vector<dt::Tensor<double>> grads_of_square(F f, std::vector<dt::Tensor<double>> inputs) {
  dt::GradientTape tape;
  for (const auto& x : inputs) tape.watch(x);
  const auto y = f(inputs);
  return tape.gradient(dt::reduce_sum(dt::mul(y, y)), inputs);
}

/// Conv2D by its definition, NHWC/HWIO, with the padding before given.
std::vector<double> direct_conv(const std::vector<double>& x, std::array<std::int64_t, 4> xs,
                                const std::vector<double>& w, std::array<std::int64_t, 4> ws,
                                std::array<std::int64_t, 4> ys, std::int64_t stride, std::int64_t dilation,
                                std::int64_t pad_top, std::int64_t pad_left) {
  std::vector<double> y(static_cast<std::size_t>(ys[0] * ys[1] * ys[2] * ys[3]), 0.0);
  for (std::int64_t n = 0; n < ys[0]; ++n)
    for (std::int64_t r = 0; r < ys[1]; ++r)
      for (std::int64_t c = 0; c < ys[2]; ++c)
        for (std::int64_t o = 0; o < ys[3]; ++o) {
          double s = 0;
          for (std::int64_t i = 0; i < ws[0]; ++i)
            for (std::int64_t j = 0; j < ws[1]; ++j) {
              const std::int64_t ir = r * stride - pad_top + i * dilation, ic = c * stride - pad_left + j * dilation;
              if (ir < 0 || ir >= xs[1] || ic < 0 || ic >= xs[2]) continue;
              for (std::int64_t k = 0; k < xs[3]; ++k)
                s += x[static_cast<std::size_t>(((n * xs[1] + ir) * xs[2] + ic) * xs[3] + k)] *
                     w[static_cast<std::size_t>(((i * ws[1] + j) * ws[2] + k) * ws[3] + o)];
            }
          y[static_cast<std::size_t>(((n * ys[1] + r) * ys[2] + c) * ys[3] + o)] = s;
        }
  return y;
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_and_gradients_are_tensorflows) {
  const std::vector<Figure> figures{
      {"conv SAME s1", {2, 5, 5, 4}, 357.4532, 1416.7092},
      {"conv VALID s2", {2, 2, 2, 4}, 111.8736, 434.4264},
      {"conv SAME s2", {2, 3, 3, 4}, 61.9556, 259.7742},
      {"conv SAME d2", {2, 5, 5, 4}, 335.4692, 1375.2036},
      {"conv explicit", {2, 6, 4, 4}, 66.5288, 302.8744},
      {"conv strides 1,2", {2, 5, 3, 4}, 187.6364, 747.7752},
      {"conv 1x1", {2, 5, 5, 4}, 31.61, 126.2444},
      {"conv NCHW", {2, 4, 3, 3}, 61.9556, 251.342},
      {"max_pool 3 s2 SAME", {2, 3, 3, 3}, 93.42, 369.28},
      {"max_pool 2 VALID", {2, 2, 2, 3}, 35.76, 137.38},
      {"avg_pool 3 s2 SAME", {2, 3, 3, 3}, 80.46, 318.85},
      {"avg_pool 2x3 s1 VALID", {2, 4, 3, 3}, 107.28, 425.19},
      {"max_pool NCHW", {2, 3, 3, 3}, 93.42, 364.88},
      {"bias_add NHWC", {2, 5, 5, 3}, 223.5, 888.24},
      {"bias_add NCHW", {2, 3, 5, 5}, 223.5, 886.62},
      {"grad conv SAME s2 input", {2, 5, 5, 3}, 1095.491832, 4570.456776},
      {"grad conv SAME s2 filter", {3, 3, 3, 4}, 2549.671152, 10091.185544},
      {"grad conv VALID d2 input", {2, 5, 5, 3}, 345.474708124, 1410.66498492},
      {"grad conv VALID d2 filter", {2, 3, 3, 4}, -4924.04810333, -19431.9673538},
      {"grad max_pool 3 s2 SAME", {2, 5, 5, 3}, 186.84, 782.84},
      {"grad avg_pool 3 s2 SAME", {2, 5, 5, 3}, 160.92, 658.793333333},
      {"grad bias_add value", {2, 5, 5, 3}, 447, 1776.48},
      {"grad bias_add bias", {3}, 447, 918},
  };
  const auto at = [&](std::string_view name) -> const Figure& {
    for (const auto& f : figures)
      if (f.name == name) return f;
    throw std::logic_error("no figure " + std::string(name));
  };
  const auto x = ramp({2, 5, 5, 3}, 50.0);
  const auto w = ramp({3, 3, 3, 4}, 100.0, 0.5);
  const auto x_nchw = dt::transpose(x, {0, 3, 1, 2});
  check_figure(at("conv SAME s1"), dt::conv2d(x, w, 1, "SAME"));
  check_figure(at("conv VALID s2"), dt::conv2d(x, w, 2, "VALID"));
  check_figure(at("conv SAME s2"), dt::conv2d(x, w, {2, 2}, "SAME"));
  check_figure(at("conv SAME d2"), dt::conv2d(x, w, 1, "SAME", {.dilations = 2}));
  check_figure(at("conv explicit"), dt::conv2d(x, w, 1, {{0, 0}, {1, 2}, {0, 1}, {0, 0}}));
  check_figure(at("conv strides 1,2"), dt::conv2d(x, w, {1, 2}, "SAME"));
  check_figure(at("conv 1x1"), dt::conv2d(x, dt::slice(w, {1, 1, 0, 0}, {1, 1, 3, 4}), 1, "VALID"));
  check_figure(at("conv NCHW"), dt::conv2d(x_nchw, w, {1, 1, 2, 2}, "SAME", {.data_format = "NCHW"}));
  check_figure(at("max_pool 3 s2 SAME"), dt::max_pool2d(x, 3, 2, "SAME"));
  check_figure(at("max_pool 2 VALID"), dt::max_pool2d(x, 2, 2, "VALID"));
  check_figure(at("avg_pool 3 s2 SAME"), dt::avg_pool2d(x, 3, 2, "SAME"));
  check_figure(at("avg_pool 2x3 s1 VALID"), dt::avg_pool2d(x, {2, 3}, 1, "VALID"));
  check_figure(at("max_pool NCHW"), dt::max_pool2d(x_nchw, 3, 2, "SAME", {.data_format = "NCHW"}));
  const auto b = ramp({3}, 10.0, 0.1);
  check_figure(at("bias_add NHWC"), dt::bias_add(x, b));
  check_figure(at("bias_add NCHW"), dt::bias_add(x_nchw, b, {.data_format = "NCHW"}));

  using Inputs = std::vector<dt::Tensor<double>>;
  auto g = grads_of_square([](const Inputs& in) { return dt::conv2d(in[0], in[1], 2, "SAME"); }, {x, w});
  check_figure(at("grad conv SAME s2 input"), g[0]);
  check_figure(at("grad conv SAME s2 filter"), g[1]);
  g = grads_of_square([](const Inputs& in) { return dt::conv2d(in[0], in[1], 1, "VALID", {.dilations = 2}); },
                      {x, dt::slice(w, {0, 0, 0, 0}, {2, 3, 3, 4})});
  check_figure(at("grad conv VALID d2 input"), g[0], 1e-6);  // TensorFlow's figure is float32's
  check_figure(at("grad conv VALID d2 filter"), g[1], 1e-6);
  g = grads_of_square([](const Inputs& in) { return dt::max_pool2d(in[0], 3, 2, "SAME"); }, {x});
  check_figure(at("grad max_pool 3 s2 SAME"), g[0]);
  g = grads_of_square([](const Inputs& in) { return dt::avg_pool2d(in[0], 3, 2, "SAME"); }, {x});
  check_figure(at("grad avg_pool 3 s2 SAME"), g[0]);
  g = grads_of_square([](const Inputs& in) { return dt::bias_add(in[0], in[1]); }, {x, b});
  check_figure(at("grad bias_add value"), g[0]);
  check_figure(at("grad bias_add bias"), g[1]);
}

BOOST_AUTO_TEST_CASE(conv2d_matches_its_definition_across_slices_strides_and_paddings) {
  // Shapes large enough that im2col takes several slices (ops/cpu/conv.hpp), in float and double.
  struct Case {
    std::array<std::int64_t, 4> x, w;
    std::int64_t stride, dilation;
    const char* padding;
  };
  const std::vector<Case> cases{{{2, 17, 19, 24}, {3, 3, 24, 8}, 1, 1, "SAME"},
                                {{3, 16, 16, 64}, {3, 3, 64, 5}, 2, 1, "SAME"},
                                {{1, 20, 13, 7}, {5, 2, 7, 3}, 3, 1, "VALID"},
                                {{2, 12, 12, 9}, {3, 3, 9, 4}, 1, 3, "SAME"},
                                {{2, 6, 6, 16}, {1, 1, 16, 8}, 1, 1, "VALID"}};
  unsigned seed = 7;
  for (const auto& c : cases) {
    const auto xv = random_values<double>(static_cast<std::size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]), seed++);
    const auto wv = random_values<double>(static_cast<std::size_t>(c.w[0] * c.w[1] * c.w[2] * c.w[3]), seed++);
    const auto y = dt::conv2d(dt::constant<double>(xv, dt::Shape(c.x)), dt::constant<double>(wv, dt::Shape(c.w)),
                              c.stride, c.padding, {.dilations = c.dilation});
    const auto yf = dt::conv2d(dt::constant<double>(xv, dt::Shape(c.x)).cast<float>(),
                               dt::constant<double>(wv, dt::Shape(c.w)).cast<float>(), c.stride, c.padding,
                               {.dilations = c.dilation});
    const std::array<std::int64_t, 4> ys{y.shape()[0], y.shape()[1], y.shape()[2], y.shape()[3]};
    const auto pad = [&](std::int64_t in, std::int64_t k, std::int64_t out) {
      const std::int64_t needed = (out - 1) * c.stride + (k - 1) * c.dilation + 1 - in;
      return std::string_view(c.padding) == "SAME" ? std::max<std::int64_t>(0, needed) / 2 : 0;
    };
    const auto want =
        direct_conv(xv, c.x, wv, c.w, ys, c.stride, c.dilation, pad(c.x[1], c.w[0], ys[1]), pad(c.x[2], c.w[1], ys[2]));
    BOOST_TEST_CONTEXT("input " << dt::Shape(c.x).to_string() << " filter " << dt::Shape(c.w).to_string()) {
      check_close(y.to_vector(), want, 1e-12);
      check_close(yf.to_vector(), want, 1e-4);
    }
  }
}

BOOST_AUTO_TEST_CASE(max_pool_gradients_go_to_each_windows_first_maximum) {
  // MaxPoolGrad against its definition, with many ties (values of 0, 1, 2): disjoint windows that
  // tile the input (2x2 stride 2), leave padding (SAME on odd sizes), leave rows and columns
  // unread (3x3 stride 3 over 10, a stride beyond the window), and overlapping ones (3x3 stride 2).
  struct Case {
    std::array<std::int64_t, 4> x;
    std::array<std::int64_t, 2> ksize, strides;
    const char* padding;
  };
  const std::vector<Case> cases{{{2, 6, 6, 5}, {2, 2}, {2, 2}, "VALID"},
                                {{2, 7, 5, 3}, {2, 2}, {2, 2}, "SAME"},
                                {{1, 10, 10, 4}, {3, 3}, {3, 3}, "VALID"},
                                {{1, 5, 6, 2}, {1, 3}, {2, 3}, "VALID"},
                                {{2, 7, 7, 3}, {3, 3}, {2, 2}, "SAME"}};
  unsigned seed = 77;
  for (const auto& c : cases) {
    const auto n = static_cast<std::size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]);
    std::vector<double> xv(n);
    for (std::size_t i = 0; i < n; ++i) xv[i] = static_cast<double>((i * 7 + i / 5) % 3);
    const auto x = dt::constant<double>(xv, dt::Shape(c.x));
    const dt::SpatialInts ksize{c.ksize[0], c.ksize[1]}, strides{c.strides[0], c.strides[1]};
    const auto y_shape = dt::max_pool2d(x, ksize, strides, c.padding).shape();
    const auto upstream = random_values<double>(static_cast<std::size_t>(y_shape.num_elements()), seed++);
    // The definition: each output's gradient to the first maximum of its window, row-major.
    const auto pad = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t out) {
      const std::int64_t needed = (out - 1) * s + k - in;
      return std::string_view(c.padding) == "SAME" ? std::max<std::int64_t>(0, needed) / 2 : 0;
    };
    const std::int64_t pad_top = pad(c.x[1], c.ksize[0], c.strides[0], y_shape[1]);
    const std::int64_t pad_left = pad(c.x[2], c.ksize[1], c.strides[1], y_shape[2]);
    std::vector<double> want(n, 0.0);
    const auto at = [&](std::int64_t b, std::int64_t r, std::int64_t col, std::int64_t d) {
      return static_cast<std::size_t>(((b * c.x[1] + r) * c.x[2] + col) * c.x[3] + d);
    };
    for (std::int64_t b = 0; b < c.x[0]; ++b)
      for (std::int64_t r = 0; r < y_shape[1]; ++r)
        for (std::int64_t col = 0; col < y_shape[2]; ++col)
          for (std::int64_t d = 0; d < c.x[3]; ++d) {
            std::optional<std::size_t> best;
            for (std::int64_t i = 0; i < c.ksize[0]; ++i)
              for (std::int64_t j = 0; j < c.ksize[1]; ++j) {
                const std::int64_t ir = r * c.strides[0] - pad_top + i, ic = col * c.strides[1] - pad_left + j;
                if (ir < 0 || ir >= c.x[1] || ic < 0 || ic >= c.x[2]) continue;
                if (!best || xv[*best] < xv[at(b, ir, ic, d)]) best = at(b, ir, ic, d);
              }
            want[*best] += upstream[static_cast<std::size_t>(((b * y_shape[1] + r) * y_shape[2] + col) * c.x[3] + d)];
          }
    BOOST_TEST_CONTEXT("input " << x.shape().to_string() << " ksize " << c.ksize[0] << "x" << c.ksize[1] << " strides "
                                << c.strides[0] << "x" << c.strides[1] << " " << c.padding) {
      dt::GradientTape tape;
      tape.watch(x);
      const auto loss = dt::reduce_sum(
          dt::mul(dt::max_pool2d(x, ksize, strides, c.padding), dt::constant<double>(upstream, y_shape)));
      check_close(tape.gradient(loss, std::vector{x})[0].to_vector(), want, 1e-12);
      const auto xf = x.cast<float>();
      dt::GradientTape float_tape;
      float_tape.watch(xf);
      const auto float_loss = dt::reduce_sum(dt::mul(dt::max_pool2d(xf, ksize, strides, c.padding),
                                                     dt::constant<double>(upstream, y_shape).cast<float>()));
      check_close(float_tape.gradient(float_loss, std::vector{xf})[0].to_vector(), want, 1e-6);
    }
  }
}

BOOST_AUTO_TEST_CASE(float_convolutions_through_onednn_and_im2col_agree_with_double) {
  // Float32 Conv2D and its backprops run through the convolution engine when the program links
  // devtensor::onednn (this one does where oneDNN was found: DEVTENSOR_WITH_ONEDNN), through
  // im2col otherwise or when switched off. Both against the double body, on geometries that take
  // each of the engine's roads: padding after the window that a stride leaves unread, asymmetric
  // and large explicit padding (its turned backprop input would need negative padding), dilation,
  // a 1x1 window, a first layer's single channel.
  struct Case {
    std::array<std::int64_t, 4> x, w;
    dt::SpatialInts strides;
    std::int64_t dilation;
    dt::Padding padding;
  };
  using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const std::vector<Case> cases{
      {{2, 9, 11, 16}, {3, 3, 16, 8}, {1, 1}, 1, "SAME"},
      {{2, 10, 10, 8}, {3, 3, 8, 12}, {2, 2}, 1, "SAME"},
      {{1, 13, 12, 5}, {5, 2, 5, 3}, {3, 3}, 1, "VALID"},
      {{2, 12, 12, 9}, {3, 3, 9, 4}, {1, 1}, 3, "SAME"},
      {{2, 6, 6, 16}, {1, 1, 16, 8}, {1, 1}, 1, "VALID"},
      {{3, 8, 7, 1}, {3, 3, 1, 32}, {1, 1}, 1, "VALID"},
      {{2, 7, 6, 4}, {3, 2, 4, 6}, {1, 1}, 1, Pads{{0, 0}, {2, 0}, {1, 3}, {0, 0}}},
      {{1, 5, 5, 3}, {3, 3, 3, 2}, {1, 1}, 1, Pads{{0, 0}, {3, 3}, {1, 1}, {0, 0}}},
      {{2, 9, 9, 6}, {3, 3, 6, 4}, {1, 2}, 1, "SAME"},
  };
  const dt::ops::cpu::ConvolutionEngine* engine = dt::ops::cpu::linked_convolution_engine();
#if DEVTENSOR_WITH_ONEDNN
  BOOST_TEST_REQUIRE(engine != nullptr);  // linking the component installs it
  BOOST_TEST(std::string(engine->name).starts_with("oneDNN 2."), engine->name);
#else
  BOOST_TEST(engine == nullptr);
#endif
  struct RestoreSwitch {
    ~RestoreSwitch() { dt::config::experimental::enable_onednn_opts(true); }
  } restore;
  unsigned seed = 31;
  for (const auto& c : cases) {
    const auto xv = random_values<double>(static_cast<std::size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]), seed++);
    const auto wv = random_values<double>(static_cast<std::size_t>(c.w[0] * c.w[1] * c.w[2] * c.w[3]), seed++);
    const auto x = dt::constant<double>(xv, dt::Shape(c.x));
    const auto w = dt::constant<double>(wv, dt::Shape(c.w));
    const dt::Conv2DOptions options{.dilations = c.dilation};
    const auto y = dt::conv2d(x, w, c.strides, c.padding, options);
    const auto dy =
        dt::constant<double>(random_values<double>(static_cast<std::size_t>(y.num_elements()), seed++), y.shape());
    const auto dx = dt::conv2d_backprop_input(x.shape(), w, dy, c.strides, c.padding, options);
    const auto dw = dt::conv2d_backprop_filter(x, w.shape(), dy, c.strides, c.padding, options);
    for (const bool onednn : {true, false}) {
      BOOST_TEST_CONTEXT("input " << x.shape().to_string() << " filter " << w.shape().to_string()
                                  << (onednn ? " (oneDNN switched on)" : " (switched off)")) {
        dt::config::experimental::enable_onednn_opts(onednn);
        BOOST_TEST((dt::ops::cpu::convolution_engine() != nullptr) == (onednn && engine != nullptr));
        const std::int64_t runs_before = engine != nullptr ? engine->runs() : 0;
        const auto xf = x.cast<float>();
        const auto wf = w.cast<float>();
        const auto dyf = dy.cast<float>();
        check_close(dt::conv2d(xf, wf, c.strides, c.padding, options).to_vector(), y.to_vector(), 1e-4);
        check_close(dt::conv2d_backprop_input(x.shape(), wf, dyf, c.strides, c.padding, options).to_vector(),
                    dx.to_vector(), 1e-4);
        check_close(dt::conv2d_backprop_filter(xf, w.shape(), dyf, c.strides, c.padding, options).to_vector(),
                    dw.to_vector(), 1e-4);
        // Each of the three ran through oneDNN when switched on (none declined), none when off.
        if (engine != nullptr) BOOST_TEST(engine->runs() - runs_before == (onednn ? 3 : 0));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_gpu_bodies_element_functions_agree_with_the_cpu_bodies) {
  // The CUDA bodies run one thread per element of ops/window_elements.hpp's functions; here the
  // host runs the same functions over every element (no GPU needed) and multiplies in double:
  // patches · filter is Conv2D, the gathered patch gradients of dy · filterᵀ are its input's
  // gradient, patchesᵀ · dy its filter's; the pools and their gradients element by element. The
  // CPU bodies' results are the reference, on geometries with padding before and after, strides,
  // dilation, a 1x1 window, windows larger than the input and overlapping windows.
  namespace window = dt::ops::window;
  struct Conv {
    std::array<std::int64_t, 4> x, w;
    dt::SpatialInts strides;
    std::int64_t dilation;
    dt::Padding padding;
  };
  using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const std::vector<Conv> convs{{{2, 9, 11, 3}, {3, 3, 3, 4}, {1, 1}, 1, "SAME"},
                                {{2, 10, 9, 2}, {3, 2, 2, 3}, {2, 3}, 1, "SAME"},
                                {{1, 12, 12, 2}, {3, 3, 2, 2}, {1, 1}, 3, "SAME"},
                                {{2, 5, 6, 4}, {1, 1, 4, 3}, {1, 1}, 1, "VALID"},
                                {{1, 7, 6, 2}, {3, 2, 2, 3}, {1, 1}, 1, Pads{{0, 0}, {2, 0}, {1, 3}, {0, 0}}}};
  unsigned seed = 91;
  for (const auto& c : convs) {
    const auto x = dt::constant<double>(
        random_values<double>(static_cast<std::size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]), seed++), dt::Shape(c.x));
    const auto w = dt::constant<double>(
        random_values<double>(static_cast<std::size_t>(c.w[0] * c.w[1] * c.w[2] * c.w[3]), seed++), dt::Shape(c.w));
    const dt::Conv2DOptions options{.dilations = c.dilation};
    const auto y = dt::conv2d(x, w, c.strides, c.padding, options);
    const auto dy =
        dt::constant<double>(random_values<double>(static_cast<std::size_t>(y.num_elements()), seed++), y.shape());
    const dt::ops::Window2D attrs = dt::conv_detail::window(c.strides, c.padding, c.dilation, false, "Conv2D", true);
    const dt::ops::WindowGeometry g = dt::ops::conv_geometry(attrs, x.shape(), w.shape(), "Conv2D");
    const std::int64_t positions = g.batch * g.out_rows * g.out_cols, k = window::patch_size(g), o = c.w[3];
    const auto xv = x.to_vector(), wv = w.to_vector(), dyv = dy.to_vector();
    std::vector<double> patches(static_cast<std::size_t>(positions * k));
    for (std::int64_t e = 0; e < positions * k; ++e)
      patches[static_cast<std::size_t>(e)] = window::patch_value(g, xv.data(), e);
    const auto product = [](const std::vector<double>& a, const std::vector<double>& b, std::int64_t m, std::int64_t n,
                            std::int64_t inner, bool ta, bool tb) {
      std::vector<double> out(static_cast<std::size_t>(m * n), 0.0);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t q = 0; q < inner; ++q)
            out[static_cast<std::size_t>(i * n + j)] += a[static_cast<std::size_t>(ta ? q * m + i : i * inner + q)] *
                                                        b[static_cast<std::size_t>(tb ? j * inner + q : q * n + j)];
      return out;
    };
    BOOST_TEST_CONTEXT("input " << x.shape().to_string() << " filter " << w.shape().to_string()) {
      check_close(product(patches, wv, positions, o, k, false, false), y.to_vector(), 1e-12);
      const auto dpatches = product(dyv, wv, positions, k, o, false, true);
      std::vector<double> dx(static_cast<std::size_t>(x.num_elements()));
      for (std::int64_t e = 0; e < x.num_elements(); ++e)
        dx[static_cast<std::size_t>(e)] = window::gathered_patch_gradient(g, dpatches.data(), e);
      check_close(dx, dt::conv2d_backprop_input(x.shape(), w, dy, c.strides, c.padding, options).to_vector(), 1e-12);
      check_close(product(patches, dyv, k, o, positions, true, false),
                  dt::conv2d_backprop_filter(x, w.shape(), dy, c.strides, c.padding, options).to_vector(), 1e-12);
      BOOST_TEST(window::is_pointwise(g) == (c.w[0] == 1 && c.w[1] == 1));
    }
  }
  // The pools, with ties (values 0, 1, 2) for the maxima; bit for bit: the same comparisons and the
  // same order of addition as the CPU bodies.
  struct Pool {
    std::array<std::int64_t, 4> x;
    std::array<std::int64_t, 2> ksize, strides;
    const char* padding;
  };
  const std::vector<Pool> pools{{{2, 6, 6, 3}, {2, 2}, {2, 2}, "VALID"},
                                {{2, 7, 5, 2}, {3, 3}, {2, 2}, "SAME"},
                                {{1, 4, 5, 2}, {6, 7}, {1, 2}, "SAME"},
                                {{1, 10, 9, 2}, {3, 2}, {3, 4}, "VALID"},
                                {{2, 5, 5, 1}, {3, 3}, {1, 1}, "SAME"}};
  for (const auto& c : pools) {
    const auto n = static_cast<std::size_t>(c.x[0] * c.x[1] * c.x[2] * c.x[3]);
    std::vector<double> xv(n);
    for (std::size_t i = 0; i < n; ++i) xv[i] = static_cast<double>((i * 7 + i / 5) % 3);
    const auto x = dt::constant<double>(xv, dt::Shape(c.x));
    const dt::SpatialInts ksize{c.ksize[0], c.ksize[1]}, strides{c.strides[0], c.strides[1]};
    dt::ops::PoolAttrs attrs{{c.ksize[0], c.ksize[1]},
                             dt::conv_detail::window(strides, c.padding, 1, false, "MaxPool", false)};
    const dt::ops::WindowGeometry g = dt::ops::pool_geometry(attrs, x.shape(), "MaxPool");
    const auto y = dt::max_pool2d(x, ksize, strides, c.padding);
    const auto mean = dt::avg_pool2d(x, ksize, strides, c.padding);
    const auto dyv = random_values<double>(static_cast<std::size_t>(y.num_elements()), seed++);
    const auto dy = dt::constant<double>(dyv, y.shape());
    BOOST_TEST_CONTEXT("pool over " << x.shape().to_string() << " ksize " << c.ksize[0] << "x" << c.ksize[1]
                                    << " strides " << c.strides[0] << "x" << c.strides[1] << " " << c.padding) {
      std::vector<double> maxima(static_cast<std::size_t>(y.num_elements())), means(maxima.size());
      for (std::int64_t e = 0; e < y.num_elements(); ++e) {
        maxima[static_cast<std::size_t>(e)] = window::pooled_max(g, xv.data(), e);
        means[static_cast<std::size_t>(e)] = window::pooled_mean(g, xv.data(), e);
      }
      BOOST_TEST(maxima == y.to_vector(), boost::test_tools::per_element());
      BOOST_TEST(means == mean.to_vector(), boost::test_tools::per_element());
      dt::GradientTape tape;
      tape.watch(x);
      const auto loss = dt::add(dt::reduce_sum(dt::mul(dt::max_pool2d(x, ksize, strides, c.padding), dy)),
                                dt::reduce_sum(dt::mul(dt::avg_pool2d(x, ksize, strides, c.padding), dy)));
      const auto want = tape.gradient(loss, std::vector{x})[0].to_vector();
      std::vector<double> got(n);
      for (std::int64_t e = 0; e < static_cast<std::int64_t>(n); ++e)
        got[static_cast<std::size_t>(e)] = window::gathered_max_gradient(g, xv.data(), dyv.data(), e) +
                                           window::gathered_mean_gradient(g, dyv.data(), e);
      check_close(got, want, 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_gpu_bodies_element_functions_round_sixteen_bits_as_the_cpu_bodies) {
  // float16 and bfloat16 pools: the GPU's per-element functions sum in float and round once
  // (window::WindowSum), as the CPU bodies' float run on widened copies: the maxima and means bit
  // for bit, the gradients (added in another grouping) within an ulp.
  namespace window = dt::ops::window;
  const auto run = [&]<class T>(float ulp) {
    const dt::Shape shape({2, 7, 5, 3});
    std::vector<float> xf(static_cast<std::size_t>(shape.num_elements()));
    for (std::size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>((i * 37 + i / 7) % 23) / 7.0f - 1.5f;
    const auto x = dt::constant<float>(xf, shape).template cast<T>();
    for (const auto& [k, s, padding] :
         {std::tuple{3, 1, "SAME"}, std::tuple{2, 2, "VALID"}, std::tuple{3, 2, "SAME"}}) {
      const dt::ops::PoolAttrs attrs{{k, k}, dt::conv_detail::window(s, padding, 1, false, "MaxPool", false)};
      const dt::ops::WindowGeometry g = dt::ops::pool_geometry(attrs, shape, "MaxPool");
      const auto xv = x.to_vector();
      const auto y = dt::max_pool2d(x, k, s, padding), mean = dt::avg_pool2d(x, k, s, padding);
      std::vector<T> maxima(static_cast<std::size_t>(y.num_elements())), means(maxima.size()), dyv(maxima.size());
      for (std::size_t e = 0; e < maxima.size(); ++e) {
        maxima[e] = window::pooled_max(g, xv.data(), static_cast<std::int64_t>(e));
        means[e] = window::pooled_mean(g, xv.data(), static_cast<std::int64_t>(e));
        dyv[e] = T(static_cast<float>(e % 9) / 4.0f - 1.0f);
      }
      const auto bits = [](const std::vector<T>& v) {
        std::vector<std::uint16_t> out;
        for (const T e : v) out.push_back(e.bits());
        return out;
      };
      BOOST_TEST_CONTEXT(dt::dtype_name<T>() << " " << k << "x" << k << " stride " << s << " " << padding) {
        BOOST_TEST(bits(maxima) == bits(y.to_vector()), boost::test_tools::per_element());
        BOOST_TEST(bits(means) == bits(mean.to_vector()), boost::test_tools::per_element());
        const auto dy = dt::constant<T>(dyv, y.shape());
        dt::GradientTape tape;
        tape.watch(x);
        const auto max_grad = tape.gradient(dt::reduce_sum(dt::mul(dt::max_pool2d(x, k, s, padding), dy)), x);
        dt::GradientTape mean_tape;
        mean_tape.watch(x);
        const auto mean_grad = mean_tape.gradient(dt::reduce_sum(dt::mul(dt::avg_pool2d(x, k, s, padding), dy)), x);
        const auto want_max = max_grad.to_vector(), want_mean = mean_grad.to_vector();
        for (std::int64_t e = 0; e < shape.num_elements(); ++e) {
          const auto i = static_cast<std::size_t>(e);
          const float got_max = static_cast<float>(window::gathered_max_gradient(g, xv.data(), dyv.data(), e));
          const float got_mean = static_cast<float>(window::gathered_mean_gradient(g, dyv.data(), e));
          BOOST_TEST(std::abs(got_max - static_cast<float>(want_max[i])) <=
                         ulp * std::max(1.0f, std::abs(static_cast<float>(want_max[i]))),
                     "max gradient " << e);
          BOOST_TEST(std::abs(got_mean - static_cast<float>(want_mean[i])) <=
                         ulp * std::max(1.0f, std::abs(static_cast<float>(want_mean[i]))),
                     "mean gradient " << e);
        }
      }
    }
  };
  run.template operator()<dt::float16>(0x1p-10f);
  run.template operator()<dt::bfloat16>(0x1p-7f);
}

BOOST_AUTO_TEST_CASE(onednn_switch_reads_tensorflows_environment_values) {
  using dt::config::experimental::onednn_detail::parse_bool;
  BOOST_TEST((parse_bool("0") == std::optional<bool>(false)));
  BOOST_TEST((parse_bool("false") == std::optional<bool>(false)));
  BOOST_TEST((parse_bool("FALSE") == std::optional<bool>(false)));
  BOOST_TEST((parse_bool("1") == std::optional<bool>(true)));
  BOOST_TEST((parse_bool("True") == std::optional<bool>(true)));
  BOOST_TEST(!parse_bool("off").has_value());  // not TensorFlow's boolean: the default (on) stays
  BOOST_TEST(!parse_bool("").has_value());
  BOOST_TEST(!parse_bool(nullptr).has_value());
}

BOOST_AUTO_TEST_CASE(bad_arguments_get_tensorflows_errors) {
  const auto x = dt::zeros<float>({2, 5, 5, 3});
  const auto w = dt::zeros<float>({3, 3, 3, 4});
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(dt::zeros<float>({5, 5, 3}), w, 1, "SAME"), InvalidArgumentError,
                             "input must be 4-dimensional[5,5,3] [Op:Conv2D]");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, dt::zeros<float>({3, 3, 3}), 1, "SAME"), InvalidArgumentError,
                             "filter must be 4-dimensional: [3,3,3]");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, dt::zeros<float>({3, 3, 2, 4}), 1, "SAME"), InvalidArgumentError,
                             "input depth must be evenly divisible by filter depth: 3 vs 2");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(dt::zeros<float>({2, 5, 5, 4}), dt::zeros<float>({3, 3, 2, 4}), 1, "SAME"),
                             dt::UnimplementedError, "Grouped convolutions (input depth 4, filter depth 2)");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, dt::zeros<float>({7, 3, 3, 4}), 1, "VALID"), InvalidArgumentError,
                             "Computed output size would be negative: -1 [input_size: 5, effective_filter_size: 7, "
                             "stride: 1]");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, {1, 0, 1, 1}, "SAME"), InvalidArgumentError,
                             "Stride must be > 0, but got 0");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, {2, 1, 1, 1}, "SAME"), dt::UnimplementedError,
                             "Current implementation does not yet support strides in the batch and depth dimensions.");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, {1, 1, 1}, "SAME"), InvalidArgumentError,
                             "strides should be of length 1, 2 or 4. Received: strides of length 3");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 1, "FULL"), InvalidArgumentError,
                             "Value for attr 'padding' of \"FULL\" is not in the list of allowed values: \"SAME\", "
                             "\"VALID\", \"EXPLICIT\"");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 1, "SAME", {.dilations = {1, 0, 1, 1}}), InvalidArgumentError,
                             "Dilated rates should be larger than 0.");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 2, "SAME", {.dilations = 2}), dt::UnimplementedError,
                             "does not yet support dilations with strides greater than 1");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 1, {{0, 0}, {-1, 1}, {2, 2}, {0, 0}}), InvalidArgumentError,
                             "All explicit paddings must be non-negative, got -1");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 1, {{1, 0}, {1, 1}, {2, 2}, {0, 0}}), InvalidArgumentError,
                             "Explicit padding of the batch or depth dimension is not supported");
  DEVTENSOR_CHECK_THROW_WITH(dt::conv2d(x, w, 1, "SAME", {.data_format = "NWHC"}), InvalidArgumentError,
                             "Invalid data_format: \"NWHC\"");
  DEVTENSOR_CHECK_THROW_WITH(dt::max_pool2d(dt::zeros<float>({5, 5, 3}), 2, 2, "VALID"), InvalidArgumentError,
                             "Input must be 4-dimensional [Op:MaxPool]");
  DEVTENSOR_CHECK_THROW_WITH(dt::max_pool2d(x, {1, 0, 2, 1}, 2, "VALID"), InvalidArgumentError,
                             "Sliding window ksize must be positive. The specified or inferred ksize is: 1,0,2,1");
  DEVTENSOR_CHECK_THROW_WITH(dt::avg_pool2d(x, {2, 2, 2, 1}, 1, "VALID"), dt::UnimplementedError,
                             "Pooling is not yet supported on the batch dimension.");
  DEVTENSOR_CHECK_THROW_WITH(dt::max_pool2d(x, 7, 1, "VALID"), InvalidArgumentError,
                             "Computed output size would be negative: -1 [input_size: 5, effective_filter_size: 7");
  // A window one larger than the input: no output, as TensorFlow's AvgPool (its CPU MaxPool aborts
  // the process there).
  BOOST_TEST(dt::max_pool2d(x, 6, 1, "VALID").shape() == dt::Shape({2, 0, 0, 3}));
  BOOST_TEST(dt::avg_pool2d(x, 6, 1, "VALID").shape() == dt::Shape({2, 0, 0, 3}));
  DEVTENSOR_CHECK_THROW_WITH(dt::max_pool2d(x, 2, 1, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}), InvalidArgumentError,
                             "is not in the list of allowed values: \"SAME\", \"VALID\" [Op:MaxPool]");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::bias_add(x, dt::zeros<float>({4})), InvalidArgumentError,
      "Must provide as many biases as the last dimension of the input tensor: [4] vs. [2,5,5,3]");
  DEVTENSOR_CHECK_THROW_WITH(dt::bias_add(x, dt::zeros<float>({3, 1})), InvalidArgumentError,
                             "Biases must be 1D: [3,1]");
  DEVTENSOR_CHECK_THROW_WITH(dt::bias_add(dt::zeros<float>({3}), dt::zeros<float>({3})), InvalidArgumentError,
                             "Input tensor must be at least 2D: [3]");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::conv2d_backprop_input(dt::Shape({2, 5, 5, 3}), w, dt::zeros<float>({2, 4, 5, 4}), 1, "SAME"),
      InvalidArgumentError,
      "out_backprop of shape [2,4,5,4] does not match the computed output "
      "[2,5,5,4]");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::conv2d_backprop_filter(x, dt::Shape({3, 3, 4}), dt::zeros<float>({2, 5, 5, 4}), 1, "SAME"),
      InvalidArgumentError, "filter_sizes must be 4-dimensional: [3,3,4]");
}

BOOST_AUTO_TEST_CASE(the_backprops_are_the_gradients_and_traced_steps_agree_with_eager) {
  // conv2d_backprop_input/filter called directly equal the tape's gradients of conv2d.
  const auto x = dt::random_normal<double>({2, 7, 6, 3}, {.seed = 3});
  const auto w = dt::random_normal<double>({3, 2, 3, 5}, {.seed = 4});
  const auto dy = dt::random_normal<double>({2, 4, 3, 5}, {.seed = 5});
  dt::GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  const auto y = dt::conv2d(x, w, 2, "SAME");
  BOOST_TEST(y.shape() == dt::Shape({2, 4, 3, 5}));
  const auto g = tape.gradient(dt::reduce_sum(dt::mul(y, dy)), std::vector{x, w});
  check_close(dt::conv2d_backprop_input(x.shape(), w, dy, 2, "SAME").to_vector(), g[0].to_vector(), 1e-12);
  check_close(dt::conv2d_backprop_filter(x, w.shape(), dy, 2, "SAME").to_vector(), g[1].to_vector(), 1e-12);
  // NCHW backprops are the NHWC ones transposed.
  const auto to_nchw = [](const dt::Tensor<double>& t) { return dt::transpose(t, {0, 3, 1, 2}); };
  check_close(dt::conv2d_backprop_input(dt::Shape({2, 3, 7, 6}), w, to_nchw(dy), 2, "SAME", {.data_format = "NCHW"})
                  .to_vector(),
              to_nchw(g[0]).to_vector(), 1e-12);
  check_close(
      dt::conv2d_backprop_filter(to_nchw(x), w.shape(), to_nchw(dy), 2, "SAME", {.data_format = "NCHW"}).to_vector(),
      g[1].to_vector(), 1e-12);
  // The adjoint identities <conv2d(x, w), dy> = <x, backprop_input(w, dy)> = <w, backprop_filter(x,
  // dy)>, where the input's gradient is a convolution with the turned filter (stride 1, 16
  // channels or more): SAME with dilations, and explicit padding past the window (pad' < 0).
  const auto dot = [](const dt::Tensor<double>& a, const dt::Tensor<double>& b) {
    return dt::reduce_sum(dt::mul(a, b)).item();
  };
  struct Adjoint {
    dt::Padding padding;
    std::int64_t dilation;
  };
  for (const auto& [padding, dilation] :
       {Adjoint{"SAME", 2}, Adjoint{"VALID", 1}, Adjoint{dt::Padding({{0, 0}, {3, 0}, {0, 2}, {0, 0}}), 1}}) {
    const auto xs = dt::random_normal<double>({2, 6, 5, 17}, {.seed = 11});
    const auto ws = dt::random_normal<double>({2, 3, 17, 4}, {.seed = 12});
    const auto ys = dt::conv2d(xs, ws, 1, padding, {.dilations = dilation});
    const auto dys = dt::random_normal<double>(ys.shape(), {.seed = 13});
    const double forward = dot(ys, dys);
    const double through_input =
        dot(xs, dt::conv2d_backprop_input(xs.shape(), ws, dys, 1, padding, {.dilations = dilation}));
    const double through_filter =
        dot(ws, dt::conv2d_backprop_filter(xs, ws.shape(), dys, 1, padding, {.dilations = dilation}));
    BOOST_TEST(std::abs(through_input - forward) <= 1e-10 * (1 + std::abs(forward)), padding.kind());
    BOOST_TEST(std::abs(through_filter - forward) <= 1e-10 * (1 + std::abs(forward)), padding.kind());
  }
  // A traced function: values agree with eager.
  auto f = dt::function([](const dt::Tensor<float>& in, const dt::Tensor<float>& k) {
    return dt::max_pool2d(dt::relu(dt::conv2d(in, k, 1, "SAME")), 2, 2, "VALID");
  });
  const auto xf = x.cast<float>();
  const auto wf = w.cast<float>();
  check_close(
      f(xf, wf).to_vector(),
      [&] {
        const auto e = dt::max_pool2d(dt::relu(dt::conv2d(xf, wf, 1, "SAME")), 2, 2, "VALID").to_vector();
        return std::vector<double>(e.begin(), e.end());
      }(),
      1e-6);
  // A TF1 graph with an unknown batch: the shape functions keep it unknown, TensorFlow's static
  // shape, and any batch runs.
  namespace v1 = dt::compat::v1;
  v1::Graph graph;
  dt::Tensor<float> p, out;
  {
    auto scope = graph.as_default();
    p = v1::placeholder<float>({-1, 7, 6, 3});
    out = dt::avg_pool2d(dt::bias_add(dt::conv2d(p, wf, 2, "SAME"), dt::ones<float>({5})), 2, 1, "VALID");
  }
  BOOST_TEST(out.shape().to_python() == "(None, 3, 2, 5)");
  v1::Session session(graph);
  const auto eager = dt::avg_pool2d(dt::bias_add(dt::conv2d(xf, wf, 2, "SAME"), dt::ones<float>({5})), 2, 1, "VALID");
  const auto ran = session.run(out, {{p, xf}});
  BOOST_TEST(ran.shape() == dt::Shape({2, 3, 2, 5}));
  BOOST_TEST(ran.to_vector() == eager.to_vector(), boost::test_tools::per_element());
}

// tests/reference/depthwise.py: tf.nn.depthwise_conv2d (TensorFlow's own kernels) on value i of
// [2, 5, 5, 3], ((i * 5) % 11 - 5) / 4, with the filter value i of [3, 3, 3, 2], ((i * 7) % 13 - 6) / 8,
// and the gradients of sum(y * v), v_i = i % 5 - 2. Multiples of 1/32: the figures are exact.
BOOST_AUTO_TEST_CASE(depthwise_values_and_gradients_are_tensorflows) {
  const std::vector<Figure> figures{
      {"depthwise same y", {2, 5, 5, 6}, -0.28125, -0.25},    {"depthwise same dx", {2, 5, 5, 3}, -13.0, -16.5},
      {"depthwise same dw", {3, 3, 3, 2}, -10.25, -32.5},     {"depthwise valid2 y", {2, 2, 2, 6}, -1.0625, 13.09375},
      {"depthwise valid2 dx", {2, 5, 5, 3}, -3.125, 2.125},   {"depthwise valid2 dw", {3, 3, 3, 2}, 8.5, 76.0},
      {"depthwise explicit y", {2, 6, 4, 6}, 1.125, 30.3125}, {"depthwise explicit dx", {2, 5, 5, 3}, -3.75, 3.375},
      {"depthwise explicit dw", {3, 3, 3, 2}, 20.75, 99.5},
  };
  const auto modular = [](const dt::Shape& shape, std::size_t a, int b, int c, double d) {
    std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<double>(static_cast<int>((i * a) % static_cast<std::size_t>(b)) - c) / d;
    return dt::constant<double>(v, shape);
  };
  const auto x = modular(dt::Shape({2, 5, 5, 3}), 5, 11, 5, 4.0);
  const auto w = modular(dt::Shape({3, 3, 3, 2}), 7, 13, 6, 8.0);
  struct Case {
    const char* name;
    dt::SpatialInts strides;
    dt::Padding padding;
  };
  const std::vector<Case> cases{
      {"same", 1, "SAME"}, {"valid2", 2, "VALID"}, {"explicit", 1, {{0, 0}, {1, 2}, {0, 1}, {0, 0}}}};
  std::size_t figure = 0;
  for (const auto& c : cases) {
    dt::GradientTape tape;
    tape.watch(x);
    tape.watch(w);
    const auto y = dt::depthwise_conv2d(x, w, c.strides, c.padding);
    std::vector<double> v(static_cast<std::size_t>(y.num_elements()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int>(i % 5) - 2);
    const auto grads = tape.gradient(dt::reduce_sum(dt::mul(y, dt::constant<double>(v, y.shape()))),
                                     std::vector<dt::Tensor<double>>{x, w});
    check_figure(figures[figure++], y);
    check_figure(figures[figure++], grads[0]);
    check_figure(figures[figure++], grads[1]);
  }
  // NCHW: the same values, transposed around the op.
  const auto nchw = dt::depthwise_conv2d(dt::transpose(x, {0, 3, 1, 2}), w, 1, "SAME", {.data_format = "NCHW"});
  BOOST_TEST(dt::transpose(nchw, {0, 2, 3, 1}).to_vector() == dt::depthwise_conv2d(x, w, 1, "SAME").to_vector(),
             boost::test_tools::per_element());
  // Dilations (TensorFlow reaches them through space_to_batch; devtensor's kernel takes them):
  // a 2x2 window of rate 2 is the 3x3 window with zeros between its taps.
  const auto taps = dt::slice(w, {0, 0, 0, 0}, {2, 2, 3, 2});
  const auto spread = [&] {
    std::vector<double> f(3 * 3 * 3 * 2, 0.0);
    const auto small = taps.to_vector();
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 2; ++j)
        for (std::size_t k = 0; k < 6; ++k) f[((i * 2) * 3 + j * 2) * 6 + k] = small[(i * 2 + j) * 6 + k];
    return dt::constant<double>(f, dt::Shape({3, 3, 3, 2}));
  }();
  BOOST_TEST(dt::depthwise_conv2d(x, taps, 1, "VALID", {.dilations = 2}).to_vector() ==
                 dt::depthwise_conv2d(x, spread, 1, "VALID").to_vector(),
             boost::test_tools::per_element());
  // TensorFlow's texts.
  DEVTENSOR_CHECK_THROW_WITH((void)dt::depthwise_conv2d(x, dt::zeros<double>({3, 3, 4, 2}), 1, "SAME"),
                             dt::InvalidArgumentError,
                             "input and filter must have the same depth: 3 vs 4 [Op:DepthwiseConv2dNative]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::depthwise_conv2d(dt::zeros<double>({5, 5, 3}), w, 1, "SAME"),
                             dt::InvalidArgumentError, "input must be 4-dimensional[5,5,3]");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)dt::depthwise_conv2d(x, w, {1, 2, 1, 1}, "SAME"), dt::InvalidArgumentError,
      "Current implementation only supports equal length strides in the row and column dimensions.");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::depthwise_conv2d(x, w, {2, 1, 1, 1}, "SAME"), dt::UnimplementedError,
                             "Current implementation does not yet support strides in the batch and depth dimensions.");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)dt::depthwise_conv2d(x, dt::zeros<double>({7, 3, 3, 2}), 1, "VALID"), dt::InvalidArgumentError,
      "Computed output size would be negative: -1 [input_size: 5, effective_filter_size: 7, stride: 1]");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)dt::depthwise_conv2d_backprop_input(dt::Shape({2, 5, 5, 3}), w, dt::zeros<double>({2, 5, 5, 5}), 1, "SAME"),
      dt::InvalidArgumentError, "DepthwiseConv2DBackpropInput: depth_multiplier * in_depth not equal to out_depth");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::depthwise_conv2d_backprop_filter(x, dt::Shape({3, 3, 3, 2}),
                                                                        dt::zeros<double>({2, 5, 5, 5}), 1, "SAME"),
                             dt::InvalidArgumentError,
                             "DepthwiseConv2DBackpropFilter: depth_multiplier * in_depth not equal to out_depth");
  // Empty filters and inputs: empty results, no window visited.
  BOOST_TEST(dt::depthwise_conv2d(x, dt::zeros<double>({3, 3, 3, 0}), 1, "SAME").shape() == dt::Shape({2, 5, 5, 0}));
  BOOST_TEST(dt::depthwise_conv2d(dt::zeros<double>({0, 5, 5, 3}), w, 1, "SAME").shape() == dt::Shape({0, 5, 5, 6}));
  // Traced with an unknown batch: the shape function keeps it, the values are eager's.
  auto traced = dt::function([&](const dt::Tensor<double>& t) { return dt::depthwise_conv2d(t, w, 2, "SAME"); },
                             {.input_signature = std::vector{dt::TensorSpec::of<double>({-1, 5, 5, 3})}});
  BOOST_TEST(traced(x).to_vector() == dt::depthwise_conv2d(x, w, 2, "SAME").to_vector(),
             boost::test_tools::per_element());
}

// tests/reference/lrn.py: tf.nn.lrn and its gradient (LRNGrad) on value i of [2, 2, 1, 7],
// ((i * 5) % 11 - 5) / 4, with TensorFlow's defaults, the CIFAR-10 tutorial's arguments and beta 1.
BOOST_AUTO_TEST_CASE(lrn_and_its_gradient_are_tensorflows) {
  std::vector<float> values(28), weights(28);
  for (std::size_t i = 0; i < 28; ++i) {
    values[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
    weights[i] = static_cast<float>(static_cast<int>(i % 3) - 1);
  }
  const auto x = dt::constant<float>(values, {2, 2, 1, 7});
  const auto w = dt::constant<float>(weights, {2, 2, 1, 7});
  struct Case {
    const char* name;
    dt::LrnOptions options;
    std::vector<float> lrn, grad;
  };
  const std::vector<Case> cases{
      {"defaults",
       {},
       {-0.53605628,
        0,
        0.510310411,
        -0.102062076,
        0.408248305,
        -0.204124153,
        0.356034487,
        -0.356034487,
        0.204124153,
        -0.408248305,
        0.102062076,
        -0.510310411,
        0,
        0.53605628,
        -0.130188912,
        0.461880207,
        -0.230940104,
        0.346410155,
        -0.346410155,
        0.230940104,
        -0.464990556,
        0.109108947,
        -0.533001781,
        0,
        0.533001781,
        -0.106600359,
        0.426401436,
        -0.214422509},
       {-0.220561981,    0,
        0.30025667,      -0.386649966,
        -0.0863933265,   0.451444983,
        -0.46556887,     0.0127577558,
        0.39974314,      -0.391237974,
        -0.00425258465,  0.429511249,
        -0.408248305,    -0.0212629363,
        0.524246097,     -0.375303447,
        -0.0432883687,   0.526812792,
        -0.526812792,    0.0432883687,
        0.413719296,     -0.426394641,
        -0.000913154334, 0.426401436,
        -0.425488263,    -0.000182628632,
        0.427131951,     -0.418818951}},
      {"cifar10",
       {.depth_radius = 4, .bias = 1.0f, .alpha = static_cast<float>(0.001 / 9.0), .beta = 0.75f},
       {-1.24956393,
        0,
        1.24947941,
        -0.249895886,
        0.999583542,
        -0.49985683,
        0.749785244,
        -0.749785244,
        0.49985683,
        -0.999583542,
        0.249895886,
        -1.24947941,
        0,
        1.24956393,
        -0.249949217,
        0.999776065,
        -0.499846429,
        0.749769628,
        -0.749769628,
        0.499849021,
        -0.999781251,
        0.249932319,
        -1.2495575,
        0,
        1.24953151,
        -0.249906301,
        0.999630392,
        -0.499880224},
       {-0.999078751,    0,
        0.999271333,     -0.999521077,
        -0.000249726756, 0.999734402,
        -0.999744833,    3.1238611e-05,
        0.999692798,     -0.999541938,
        -1.0412863e-05,  0.999635577,
        -0.999630392,    5.20327303e-05,
        0.999807298,     -0.999817669,
        -6.24936511e-05, 0.999786496,
        -0.999786496,    4.16701878e-05,
        0.999864459,     -0.99966681,
        -0.000104085702, 0.999625206,
        -0.999625266,    4.54565452e-09,
        0.999588728,     -0.999739587}},
      {"beta1",
       {.depth_radius = 2, .bias = 2.0f, .alpha = 0.5f, .beta = 1.0f},
       {-0.350877166,
        0,
        0.305343509,
        -0.0727272704,
        0.268907577,
        -0.170212761,
        0.258064508,
        -0.258064508,
        0.170212761,
        -0.268907577,
        0.0727272704,
        -0.305343509,
        0,
        0.350877166,
        -0.0941176489,
        0.340425521,
        -0.155339807,
        0.226415098,
        -0.226415098,
        0.156862751,
        -0.344086021,
        0.088888891,
        -0.347826064,
        0,
        0.305343509,
        -0.0727272704,
        0.290909082,
        -0.188235298},
       {-0.0643523037,  0,
        0.00147907808,  -0.281459093,
        0.0509964116,   0.277633458,
        -0.234030157,   0.0976920426,
        0.275297493,    -0.213239253,
        -0.0139170829,  0.241429254,
        -0.278260857,   0.0932346582,
        0.338640064,    -0.25745517,
        -0.00730930269, 0.28627634,
        -0.288155586,   -0.00915413722,
        0.294042587,    -0.347654343,
        -0.132740825,   0.275862068,
        -0.256825268,   0.0202263556,
        0.210003659,    -0.298724025}},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      dt::GradientTape tape;
      tape.watch(x);
      const auto y = dt::local_response_normalization(x, c.options);
      const auto dx = tape.gradient(dt::reduce_sum(dt::mul(y, w)), x);
      const auto got_y = y.to_vector(), got_dx = dx.to_vector();
      for (std::size_t i = 0; i < 28; ++i) {
        BOOST_TEST(std::abs(got_y[i] - c.lrn[i]) <= 2e-6f * (1 + std::abs(c.lrn[i])), "lrn " << i);
        BOOST_TEST(std::abs(got_dx[i] - c.grad[i]) <= 2e-6f * (1 + std::abs(c.grad[i])), "grad " << i);
      }
    }
  }
  BOOST_TEST(dt::lrn(x).to_vector() == dt::local_response_normalization(x).to_vector(),
             boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((void)dt::lrn(dt::zeros<float>({2, 3, 4})), dt::InvalidArgumentError,
                             "in must be 4-dimensional [Op:LRN]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::lrn(x, {.depth_radius = -1}), dt::InvalidArgumentError,
                             "depth_radius = -1 larger than int max [Op:LRN]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<dt::ops::LRNGrad>({}, x, dt::zeros<float>({2, 2, 1, 6}), x),
                             dt::InvalidArgumentError,
                             "input_grads, input_image, and out_image should have the same shape [Op:LRNGrad]");
  // Traced with an unknown batch: the same values.
  auto traced = dt::function([](const dt::Tensor<float>& t) { return dt::lrn(t, {.depth_radius = 2}); },
                             {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 2, 1, 7})}});
  BOOST_TEST(traced(x).to_vector() == dt::lrn(x, {.depth_radius = 2}).to_vector(), boost::test_tools::per_element());
}

namespace {

/// tests/reference/fused_batch_norm.txt: a line per output, "<case> <what> v, v, ..." or
/// "<what> <ErrorType> <TensorFlow's text>" (tests/reference/fused_batch_norm.py wrote it).
std::map<std::string, std::string> fused_batch_norm_reference() {
  std::ifstream in(DEVTENSOR_REFERENCE_DIR "/fused_batch_norm.txt");
  BOOST_TEST_REQUIRE(in.good(), "cannot read " DEVTENSOR_REFERENCE_DIR "/fused_batch_norm.txt");
  std::map<std::string, std::string> lines;
  for (std::string line; std::getline(in, line);) {
    const auto values = line.find(": ");
    if (values != std::string::npos) lines[line.substr(0, values)] = line.substr(values + 2);
  }
  return lines;
}
std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  for (std::string field; std::getline(in, field, ',');) out.push_back(std::stod(field));
  return out;
}

}  // namespace

// FusedBatchNormV3 and its gradient against TensorFlow 2.21: x is value i of [2, 3, 2, 4],
// ((i * 7) % 13 - 6) / 4; scale, offset, mean and variance per channel; the loss sum(y * w).
BOOST_AUTO_TEST_CASE(fused_batch_norm_and_its_gradient_are_tensorflows) {
  const auto reference = fused_batch_norm_reference();
  const auto want = [&](const std::string& key) {
    BOOST_TEST_REQUIRE(reference.count(key) == 1, "no reference line " << key);
    return numbers(reference.at(key));
  };
  std::vector<float> xs(48), ws(48);
  for (std::size_t i = 0; i < 48; ++i) {
    xs[i] = static_cast<float>(static_cast<int>((i * 7) % 13) - 6) / 4.0f;
    ws[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  }
  const auto x_nhwc = dt::constant<float>(xs, {2, 3, 2, 4});
  const auto w_nhwc = dt::constant<float>(ws, {2, 3, 2, 4});
  const auto scale = dt::constant<float>({1, 1.25f, 1.5f, 1.75f});
  const auto offset = dt::constant<float>({-1, -0.5f, 0, 0.5f});
  const auto mean = dt::constant<float>({-0.25f, -0.125f, 0, 0.125f});
  const auto variance = dt::constant<float>({0.5f, 0.75f, 1, 1.25f});
  const auto empty = dt::constant<float>(std::vector<float>{});
  struct Case {
    std::string name;
    dt::ops::FusedBatchNormV3::Attrs attrs;
    bool with_statistics;
  };
  const std::vector<Case> cases{{"train", {.epsilon = 0.001f}, false},
                                {"train_avg", {.epsilon = 0.001f, .exponential_avg_factor = 0.3f}, true},
                                {"inference", {.epsilon = 0.001f, .is_training = false}, true},
                                {"train_nchw", {.epsilon = 0.001f, .channels_first = true}, false}};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const auto x = c.attrs.channels_first ? dt::transpose(x_nhwc, {0, 3, 1, 2}) : x_nhwc;
      const auto w = c.attrs.channels_first ? dt::transpose(w_nhwc, {0, 3, 1, 2}) : w_nhwc;
      dt::GradientTape tape;
      tape.watch(x);
      tape.watch(scale);
      tape.watch(offset);
      const auto out = dt::run_op<dt::ops::FusedBatchNormV3>(
          c.attrs, x, scale, offset, c.with_statistics ? mean : empty, c.with_statistics ? variance : empty);
      const auto grads = tape.gradient(dt::reduce_sum(dt::mul(out[0], w)), std::vector{x, scale, offset});
      const char* outputs[] = {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"};
      for (std::size_t k = 0; k < 5; ++k) check_close(out[k].to_vector(), want(c.name + " " + outputs[k]), 2e-6);
      BOOST_TEST(out[0].shape() == x.shape());
      BOOST_TEST(out[5].shape() == dt::Shape({0}));  // reserve_space_3: empty on CPUs
      check_close(grads[0].to_vector(), want(c.name + " dx"), 2e-6);
      check_close(grads[1].to_vector(), want(c.name + " dscale"), 2e-6);
      check_close(grads[2].to_vector(), want(c.name + " doffset"), 2e-6);
    }
  }
  // tf.compat.v1.nn.fused_batch_norm: (y, mean, variance), no mean or variance given when training.
  const auto [y, running_mean, running_variance] = dt::fused_batch_norm(x_nhwc, scale, offset);
  check_close(y.to_vector(), want("train y"), 2e-6);
  check_close(running_mean.to_vector(), want("train batch_mean"), 2e-6);
  check_close(running_variance.to_vector(), want("train batch_variance"), 2e-6);
  const auto inferred = dt::fused_batch_norm(x_nhwc, scale, offset, mean, variance, {.is_training = false});
  check_close(inferred.y.to_vector(), want("inference y"), 2e-6);
  DEVTENSOR_CHECK_THROW_WITH((void)dt::fused_batch_norm(x_nhwc, scale, offset, {}, {}, {.data_format = "NCDHW"}),
                             dt::InvalidArgumentError, "NCDHW");
  // TensorFlow's texts for shapes that do not pair (the lines after "<what> InvalidArgumentError").
  using Op = dt::ops::FusedBatchNormV3;
  const auto error_of = [&](const std::string& what) {
    std::string text = reference.at(what);
    text = text.substr(text.find("}} ") + 3);                    // after TensorFlow's function-node prefix
    if (text.ends_with(" name:")) text.resize(text.size() - 6);  // and before its empty node name
    return text;
  };
  const auto vector3 = dt::constant<float>({1, 2, 3});
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({}, dt::zeros<float>({3, 2, 4}), scale, offset, empty, empty),
                             dt::InvalidArgumentError, error_of("rank 3"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({}, x_nhwc, vector3, offset, empty, empty), dt::InvalidArgumentError,
                             error_of("scale"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({}, x_nhwc, scale, dt::constant<float>({1, 2}), empty, empty),
                             dt::InvalidArgumentError, error_of("offset"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({.is_training = false}, x_nhwc, scale, offset, empty, variance),
                             dt::InvalidArgumentError, error_of("inference mean"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({.is_training = false}, x_nhwc, scale, offset, mean, empty),
                             dt::InvalidArgumentError, error_of("inference variance"));
  DEVTENSOR_CHECK_THROW_WITH(
      (void)dt::run_op<Op>({.exponential_avg_factor = 0.5f}, x_nhwc, scale, offset, empty, empty),
      dt::InvalidArgumentError, error_of("avg without mean"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<Op>({}, x_nhwc, dt::zeros<float>({2, 2}), offset, empty, empty),
                             dt::InvalidArgumentError, error_of("scale rank"));
  DEVTENSOR_CHECK_THROW_WITH((void)dt::run_op<dt::ops::FusedBatchNormGradV3>({}, x_nhwc, dt::zeros<float>({2, 3, 2, 5}),
                                                                             scale, mean, variance, empty),
                             dt::InvalidArgumentError, error_of("grad shapes"));
  // Traced with an unknown batch, its gradient taken in the trace: the eager values.
  const auto step = [&](const dt::Tensor<float>& t) {
    dt::GradientTape inner;
    inner.watch(t);
    const auto normalised = dt::fused_batch_norm(t, scale, offset);
    return inner.gradient(dt::reduce_sum(dt::mul(normalised.y, w_nhwc)), t);
  };
  auto traced = dt::function(step, {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3, 2, 4})}});
  BOOST_TEST(traced(x_nhwc).to_vector() == step(x_nhwc).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(selection)

namespace {

/// An output of TensorFlow's: shape and every value, row-major (tests/reference/selection.py).
template <class V>
struct Expected {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<V> values;
};

template <class V, class T>
void check_expected(const Expected<V>& want, const dt::Tensor<T>& got) {
  BOOST_TEST_CONTEXT(want.name) {
    BOOST_TEST(got.shape() == dt::Shape(want.shape));
    const auto v = got.to_vector();
    BOOST_TEST_REQUIRE(v.size() == want.values.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      BOOST_TEST(std::abs(static_cast<double>(v[i]) - static_cast<double>(want.values[i])) <=
                     1e-14 * (1 + std::abs(static_cast<double>(want.values[i]))),
                 "element " << i << ": " << v[i] << " vs " << want.values[i]);
  }
}

template <class V>
const Expected<V>& expected(const std::vector<Expected<V>>& all, std::string_view name) {
  for (const auto& e : all)
    if (e.name == name) return e;
  throw std::logic_error("no figure named " + std::string(name));
}

// selection.py's output, pasted.
const std::vector<Expected<std::int64_t>> kIndices = {
    {"argmax x 0", {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}},
    {"argmin x 0", {3, 4}, {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1}},
    {"argmax x 1", {2, 4}, {0, 0, 1, 1, 2, 2, 2, 2}},
    {"argmin x 1", {2, 4}, {2, 2, 2, 0, 1, 1, 1, 1}},
    {"argmax x 2", {2, 3}, {1, 2, 0, 0, 0, 0}},
    {"argmin x 2", {2, 3}, {0, 1, 2, 0, 0, 3}},
    {"argmax x -1", {2, 3}, {1, 2, 0, 0, 0, 0}},
    {"argmin x -1", {2, 3}, {0, 1, 2, 0, 0, 3}},
    {"argmax n 0", {3}, {1, 1, 1}},
    {"argmin n 0", {3}, {0, 0, 0}},
    {"argmax n 1", {2}, {0, 0}},
    {"argmin n 1", {2}, {1, 1}},
    {"one_hot int32", {3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 0}},
};
const std::vector<Expected<double>> kValues = {
    {"one_hot -1", {2, 3, 4}, {2.5,  -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, -0.5,
                               -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, -0.5, -0.5}},
    {"one_hot 0", {4, 2, 3}, {2.5,  -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5,
                              -0.5, -0.5, -0.5, 2.5,  2.5,  -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, -0.5}},
    {"one_hot 1", {2, 4, 3}, {2.5,  -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 2.5,  -0.5,
                              -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 2.5,  2.5,  -0.5, -0.5, -0.5, -0.5}},
    {"one_hot 2", {2, 3, 4}, {2.5,  -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, -0.5,
                              -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, 2.5,  -0.5, -0.5, -0.5, -0.5, -0.5}},
    {"where", {2, 4, 3}, {1.5, 20, 1.5, -2, 20, -2, 3.25, 20, 3.25, 4,  20, 4,
                          10,  20, 1.5, 10, 20, -2, 10,   20, 3.25, 10, 20, 4}},
    {"where dx", {4, 1}, {-1, 0.125, 1.25, 2.375}},
    {"where dy", {3}, {4.25, 3.5, 0}},
    {"l2_loss", {}, {1.9489795918367347}},
    {"l2_loss dx",
     {3, 4},
     {-0.5, -0.35714285714285715, -0.2142857142857143, -0.071428571428571452, 0.071428571428571397, 0.2142857142857143,
      0.3571428571428571, 0.5, 0.64285714285714279, 0.78571428571428581, 0.9285714285714286, 1.0714285714285714}},
};

constexpr float kFloatInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kLowest = std::numeric_limits<float>::lowest();
// selection.py's X and N.
dt::Tensor<float> x_input() {
  return dt::constant<float>(
      {1,    5,    5,    2,    kNan,       2,       9,       9,          -1,        -1, -3,        kNan,
       kNan, kNan, kNan, kNan, -kFloatInf, kLowest, kLowest, -kFloatInf, kFloatInf, 0,  kFloatInf, -2},
      dt::Shape{2, 3, 4});
}

// index_ops.py's output, pasted.
const std::vector<Expected<double>> kGather = {
    {"axis 0", {2, 2, 4}, {1, 1.25, 1.5, 1.75, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 0, 0.25, 0.5, 0.75}},
    {"axis 0 grad",
     {3, 4},
     {0.30000000000000004, 0.5, 0.69999999999999996, 0.89999999999999991, 3, 3.4000000000000004, 3.7999999999999998,
      4.2000000000000002, -0.5, -0.29999999999999999, -0.099999999999999978, 0.099999999999999978}},
    {"axis 1", {3, 3}, {-0.25, -1, -0.25, 0.75, 0, 0.75, 1.75, 1, 1.75}},
    {"axis 1 grad",
     {3, 4},
     {-0.29999999999999999, 0, 0, -0.59999999999999998, 0.30000000000000004, 0, 0, 0.59999999999999998,
      0.89999999999999991, 0, 0, 1.8}},
    {"axis -1 scalar index", {3}, {-0.5, 0.5, 1.5}},
    {"axis -1 scalar index grad",
     {3, 4},
     {0, 0, -0.5, 0, 0, 0, -0.29999999999999999, 0, 0, 0, -0.099999999999999978, 0}},
    {"3d axis 1",
     {2, 2, 2, 2},
     {1.3333333333333333, 1.6666666666666667, 1.3333333333333333, 1.6666666666666667, 0, 0.33333333333333331,
      0.66666666666666663, 1, 3.3333333333333335, 3.6666666666666665, 3.3333333333333335, 3.6666666666666665, 2,
      2.3333333333333335, 2.6666666666666665, 3}},
    {"3d axis 1 grad",
     {2, 3, 2},
     {0.30000000000000004, 0.5, 0.69999999999999996, 0.89999999999999991, -0.59999999999999998, -0.20000000000000001,
      1.8999999999999999, 2.1000000000000001, 2.2999999999999998, 2.5, 2.6000000000000001, 3}},
    {"segment sum", {3, 2}, {3, 4, 0, 0, 1, 1.5}},
    {"segment sum grad",
     {4, 2},
     {-0.5, -0.29999999999999999, 0.30000000000000004, 0.5, 0, 0, -0.5, -0.29999999999999999}},
    {"sparse ce", {4}, {1.3119014326242004, 0.91190143262420043, 1.1119014326242005, 0.9119014326242002}},
    {"sparse ce grad",
     {4, 3},
     {0.36534625041113111, -0.16446646114445335, -0.20087978926667771, -0.080792249753321346, -0.098679876686672011,
      0.17947212643999336, -0.026930749917773781, 0.067106707771109317, -0.040175957853335539, 0.026930749917773781,
      0.032893292228890661, -0.059824042146664445}},
    {"sparse ce 3d", {1, 2}, {2.3493893831100858, 1.3493893831100858}},
};

dt::Tensor<double> ramp(const dt::Shape& shape, double scale, double shift = 0.0) {
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / scale - shift;
  return dt::constant<double>(v, shape);
}

}  // namespace

BOOST_AUTO_TEST_CASE(gather_and_its_gradient_match_tensorflow_on_every_axis) {
  const auto p = ramp({3, 4}, 4.0, 1.0);
  const auto q = ramp({2, 3, 2}, 3.0);
  // index_ops.py's cases: values, and the gradient of Σ gather(p) · ramp.
  const auto check = [](const std::string& name, const dt::Tensor<double>& params, const auto& indices,
                        std::int64_t axis) {
    dt::GradientTape tape;
    tape.watch(params);
    const auto y = dt::gather(params, indices, axis);
    const auto loss = dt::reduce_sum(dt::mul(y, ramp(y.shape(), 5.0, 0.5)));
    check_expected(expected(kGather, name), y);
    check_expected(expected(kGather, name + " grad"), tape.gradient(loss, params));
  };
  check("axis 0", p, dt::constant<std::int64_t>({2, 0, 1, 1}, dt::Shape{2, 2}), 0);
  check("axis 1", p, dt::constant<std::int32_t>({3, 0, 3}), 1);
  check("axis -1 scalar index", p, dt::scalar<std::int64_t>(2), -1);
  check("3d axis 1", q, dt::constant<std::int64_t>({2, 2, 0, 1}, dt::Shape{2, 2}), 1);
  check_expected(Expected<std::int64_t>{"int32", {3, 2}, {5, 6, 5, 6, 1, 2}},
                 dt::gather(dt::constant<std::int32_t>({1, 2, 3, 4, 5, 6}, dt::Shape{3, 2}),
                            dt::constant<std::int64_t>({2, 2, 0})));
  // unsorted_segment_sum (a negative id dropped) and its gradient.
  const auto data = ramp({4, 2}, 2.0);
  dt::GradientTape tape;
  tape.watch(data);
  const auto s = dt::unsorted_segment_sum(data, dt::constant<std::int64_t>({0, 2, -1, 0}), 3);
  const auto loss = dt::reduce_sum(dt::mul(s, ramp(s.shape(), 5.0, 0.5)));
  check_expected(expected(kGather, "segment sum"), s);
  check_expected(expected(kGather, "segment sum grad"), tape.gradient(loss, data));
  // Empty slices: nothing to copy, the indices still checked (UBSan saw a null memcpy here).
  BOOST_TEST(dt::gather(dt::zeros<double>({3, 0}), dt::constant<std::int64_t>({1, 2})).shape() == dt::Shape({2, 0}));
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(dt::zeros<double>({3, 0}), dt::constant<std::int64_t>({3})),
                             InvalidArgumentError, "indices[0] = 3 is not in [0, 3)");
  // TensorFlow's texts.
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int64_t>({2, 0, 1, 5}, dt::Shape{2, 2})),
                             InvalidArgumentError, "indices[1,1] = 5 is not in [0, 3) [Op:GatherV2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int32_t>({-1})), InvalidArgumentError,
                             "indices[0] = -1 is not in [0, 3) [Op:GatherV2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int32_t>({1}), 2), InvalidArgumentError,
                             "Shape must be at least rank 3 but is rank 2 [Op:GatherV2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int32_t>({1}), -3), InvalidArgumentError,
                             "Shape must be at least rank 3 but is rank 2 [Op:GatherV2]");
  // The extreme axes (found by the fuzzer: axis + 1 overflowed).
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int32_t>({1}), std::numeric_limits<std::int64_t>::max()),
                             InvalidArgumentError, "Shape must be at least rank 9223372036854775808 but is rank 2");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(p, dt::constant<std::int32_t>({1}), std::numeric_limits<std::int64_t>::min()),
                             InvalidArgumentError, "Shape must be at least rank 9223372036854775808 but is rank 2");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(dt::scalar<double>(3), dt::constant<std::int32_t>({0})), InvalidArgumentError,
                             "params must be at least 1 dimensional [Op:GatherV2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::unsorted_segment_sum(data, dt::constant<std::int64_t>({0, 5, 1, 0}), 3),
                             InvalidArgumentError, "segment_ids[1] = 5 is out of range [0, 3) [Op:UnsortedSegmentSum]");
  DEVTENSOR_CHECK_THROW_WITH(dt::gather(dt::Tensor<double>(), dt::constant<std::int32_t>({0})), InvalidArgumentError,
                             "GatherV2");
}

BOOST_AUTO_TEST_CASE(sparse_softmax_cross_entropy_and_its_gradient_match_tensorflow) {
  const auto logits = ramp({4, 3}, 5.0, 1.0);
  const auto labels = dt::constant<std::int32_t>({0, 2, 1, 2});
  dt::GradientTape tape;
  tape.watch(logits);
  const auto ce = dt::sparse_softmax_cross_entropy_with_logits(labels, logits);
  const auto loss = dt::reduce_sum(dt::mul(ce, ramp(ce.shape(), 5.0, 0.5)));
  check_expected(expected(kGather, "sparse ce"), ce);
  check_expected(expected(kGather, "sparse ce grad"), tape.gradient(loss, logits));
  check_expected(expected(kGather, "sparse ce 3d"),
                 dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int64_t>({0, 5}, dt::Shape{1, 2}),
                                                              dt::reshape(ramp({12}, 5.0, 1.0), {1, 2, 6})));
  // Large logits stay finite (shifted by the row's maximum); a NaN makes its row NaN.
  const auto big = dt::sparse_softmax_cross_entropy_with_logits(
      dt::constant<std::int64_t>({1, 1}), dt::constant<float>({1000, 0, 7, 0, 1000, 7}, dt::Shape{2, 3}));
  BOOST_TEST(big.to_vector()[0] == 1000.0f);
  BOOST_TEST(big.to_vector()[1] == 0.0f);
  const auto nan = dt::sparse_softmax_cross_entropy_with_logits(
      dt::constant<std::int64_t>({1}),
      dt::constant<float>({1000, 0, std::numeric_limits<float>::quiet_NaN()}, dt::Shape{1, 3}));
  BOOST_TEST(std::isnan(nan.item()));
  // TensorFlow's texts.
  DEVTENSOR_CHECK_THROW_WITH(
      dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int32_t>({0, 5, 1, 2}), logits),
      InvalidArgumentError,
      "Received a label value of 5 which is outside the valid range of [0, 3).  Label values: "
      "0 5 1 2 [Op:SparseSoftmaxCrossEntropyWithLogits]");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int32_t>({0, -1, 1, 2}), logits),
      InvalidArgumentError, "Received a label value of -1 which is outside the valid range of [0, 3)");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int32_t>({0, 1, 2}), logits), InvalidArgumentError,
      "`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
      "labels.shape=(3,) and logits.shape=(4, 3)");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int32_t>({0, 1, 2, 0}, dt::Shape{4, 1}), logits),
      InvalidArgumentError,
      "`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: labels.shape=(4, 1) of rank 2 and "
      "logits.shape=(4, 3) of rank 2");
  DEVTENSOR_CHECK_THROW_WITH(
      dt::sparse_softmax_cross_entropy_with_logits(dt::constant<std::int32_t>({0}), dt::zeros<double>({1, 0})),
      InvalidArgumentError, "Must have at least one class, but got logits shape [1,0]");
  // In a TF1 graph with an unknown batch, and traced with its gradient: the eager values.
  namespace v1 = dt::compat::v1;
  v1::Graph graph;
  dt::Tensor<double> x, y;
  dt::Tensor<std::int32_t> l;
  {
    auto scope = graph.as_default();
    x = v1::placeholder<double>({-1, 3});
    l = v1::placeholder<std::int32_t>({-1});
    y = dt::sparse_softmax_cross_entropy_with_logits(l, x);
  }
  BOOST_TEST(y.shape().to_python() == "(None,)");
  v1::Session session(graph);
  check_expected(expected(kGather, "sparse ce"), session.run(y, {{x, logits}, {l, labels}}));
  const auto step = [](const dt::Tensor<double>& z, const dt::Tensor<std::int32_t>& k) {
    dt::GradientTape t;
    t.watch(z);
    return t.gradient(dt::reduce_mean(dt::sparse_softmax_cross_entropy_with_logits(k, z)), z);
  };
  auto traced = dt::function(step);
  check_close(traced(logits, labels).to_vector(), step(logits, labels).to_vector(), 1e-12);
}

BOOST_AUTO_TEST_CASE(gather_in_graphs_keeps_unknown_batches_and_differentiates) {
  // A TF1 graph: an embedding lookup of a (None,) batch of ids.
  namespace v1 = dt::compat::v1;
  const auto table = dt::constant<float>({0, 1, 10, 11, 20, 21, 30, 31}, dt::Shape{4, 2});
  v1::Graph graph;
  dt::Tensor<std::int64_t> ids;
  dt::Tensor<float> rows;
  {
    auto scope = graph.as_default();
    ids = v1::placeholder<std::int64_t>({-1});
    rows = dt::gather(table, ids);
  }
  BOOST_TEST(rows.shape().to_python() == "(None, 2)");
  v1::Session session(graph);
  BOOST_TEST(session.run(rows, {{ids, dt::constant<std::int64_t>({3, 0, 3})}}).to_vector() ==
                 (std::vector<float>{30, 31, 0, 1, 30, 31}),
             boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((void)session.run(rows, {{ids, dt::constant<std::int64_t>({4})}}), InvalidArgumentError,
                             "indices[0] = 4 is not in [0, 4)");
  // A traced step: the gradient with respect to the table (rows gathered twice add up), as eager.
  const auto step = [](const dt::Tensor<float>& t, const dt::Tensor<std::int32_t>& i) {
    dt::GradientTape tape;
    tape.watch(t);
    const auto y = dt::gather(t, i);
    return tape.gradient(dt::reduce_sum(dt::mul(y, y)), t);
  };
  auto traced = dt::function(step);
  const auto i = dt::constant<std::int32_t>({1, 3, 1});
  BOOST_TEST(traced(table, i).to_vector() == step(table, i).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(step(table, i).to_vector() == (std::vector<float>{0, 0, 40, 44, 0, 0, 60, 62}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(argmax_and_argmin_match_tensorflow_with_ties_nan_and_infinities) {
  const auto x = x_input();
  for (const std::int64_t axis : {0, 1, 2, -1}) {
    const auto a = std::to_string(axis);
    const auto max = dt::argmax(x, axis);
    static_assert(std::is_same_v<decltype(max), const dt::Tensor<std::int64_t>>);
    check_expected(expected(kIndices, "argmax x " + a), max);
    check_expected(expected(kIndices, "argmin x " + a), dt::argmin(x, axis));
    check_expected(expected(kIndices, "argmax x " + a), dt::argmax<std::int32_t>(x, axis));
  }
  const auto n = dt::constant<std::int32_t>({3, -7, 3, 8, 0, 8}, dt::Shape{2, 3});
  for (const std::int64_t axis : {0, 1}) {
    const auto a = std::to_string(axis);
    const auto max = dt::argmax<std::int32_t>(n, axis);
    static_assert(std::is_same_v<decltype(max), const dt::Tensor<std::int32_t>>);
    check_expected(expected(kIndices, "argmax n " + a), max);
    check_expected(expected(kIndices, "argmin n " + a), dt::argmin<std::int32_t>(n, axis));
    check_expected(expected(kIndices, "argmin n " + a), dt::argmin(n.cast<std::int64_t>(), axis));
  }
  BOOST_TEST(dt::argmax(x).shape() == dt::Shape({3, 4}));  // tf.math.argmax's axis=None is 0
  // In double, float's lowest is no longer the type's lowest: it beats -inf.
  BOOST_TEST(dt::argmax(dt::constant<double>({-kFloatInf, kLowest})).item() == 1);
  // An axis with many elements, the best twice: the first, in a row and along an inner axis.
  std::vector<float> wide(3000, 0.5f);
  wide[1700] = wide[2900] = 2.0f;
  BOOST_TEST(dt::argmax(dt::constant<float>(wide)).item() == 1700);
  BOOST_TEST(dt::argmax(dt::constant<float>(wide, dt::Shape{1000, 3}), 0).to_vector() ==
                 (std::vector<std::int64_t>{0, 0, 566}),
             boost::test_tools::per_element());
  // An empty output needs no values; an empty reduced axis has no answer.
  BOOST_TEST(dt::argmax(dt::zeros<float>({0, 3}), 1).shape() == dt::Shape({0}));
  DEVTENSOR_CHECK_THROW_WITH(dt::argmax(dt::zeros<float>({0, 3}), 0), InvalidArgumentError,
                             "Reduction axis 0 is empty in shape [0,3] [Op:ArgMax]");
  DEVTENSOR_CHECK_THROW_WITH(dt::argmin(x, 3), InvalidArgumentError,
                             "Expected dimension in the range [-3, 3), but got 3 [Op:ArgMin]");
  DEVTENSOR_CHECK_THROW_WITH(dt::argmax(x, -4), InvalidArgumentError,
                             "Expected dimension in the range [-3, 3), but got -4 [Op:ArgMax]");
  DEVTENSOR_CHECK_THROW_WITH(dt::argmax(dt::scalar<float>(3)), InvalidArgumentError,
                             "Expected dimension in the range [0, 0), but got 0 [Op:ArgMax]");
  DEVTENSOR_CHECK_THROW_WITH(dt::argmax(dt::Tensor<float>()), InvalidArgumentError, "ArgMax");
}

BOOST_AUTO_TEST_CASE(one_hot_matches_tensorflow_on_every_axis_and_out_of_range_indices) {
  const auto indices = dt::constant<std::int64_t>({0, 3, -1, 2, 2, 5}, dt::Shape{2, 3});
  for (const std::int64_t axis : {-1, 0, 1, 2})
    check_expected(expected(kValues, "one_hot " + std::to_string(axis)),
                   dt::one_hot<double>(indices, 4, {.on_value = 2.5, .off_value = -0.5, .axis = axis}));
  check_expected(expected(kIndices, "one_hot int32"),
                 dt::one_hot<std::int32_t>(dt::constant<std::int32_t>({1, 0, 7}), 3));
  const auto floats = dt::one_hot(dt::constant<std::int32_t>({2}), 3);  // float, 1 and 0 by default
  static_assert(std::is_same_v<decltype(floats), const dt::Tensor<float>>);
  BOOST_TEST(floats.to_vector() == (std::vector<float>{0, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(dt::one_hot(dt::constant<std::int32_t>({2, 0}), 0).shape() == dt::Shape({2, 0}));
  DEVTENSOR_CHECK_THROW_WITH(dt::one_hot(indices, -1), InvalidArgumentError,
                             "depth must be non-negative, got: -1 [Op:OneHot]");
  DEVTENSOR_CHECK_THROW_WITH(dt::one_hot(indices, 4, {.axis = -2}), InvalidArgumentError,
                             "Expected axis to be -1 or between [0, 3).  But received: -2 [Op:OneHot]");
  DEVTENSOR_CHECK_THROW_WITH(dt::one_hot(indices, 4, {.axis = 3}), InvalidArgumentError,
                             "Expected axis to be -1 or between [0, 3).  But received: 3 [Op:OneHot]");
}

BOOST_AUTO_TEST_CASE(where_broadcasts_three_ways_and_its_gradient_matches_tensorflow) {
  const auto condition = dt::constant<bool>({true, false, true, false, false, true}, dt::Shape{2, 1, 3});
  const auto x = dt::constant<double>({1.5, -2.0, 3.25, 4.0}, dt::Shape{4, 1});
  const auto y = dt::constant<double>({10.0, 20.0, 30.0});
  check_expected(expected(kValues, "where"), dt::where(condition, x, y));
  std::vector<double> w(24);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i) / 8.0 - 1.0;
  const auto weights = dt::constant<double>(w, dt::Shape{2, 4, 3});
  dt::GradientTape tape({.persistent = true});
  tape.watch(x);
  tape.watch(y);
  const auto out = dt::reduce_sum(dt::mul(dt::where(condition, x, y), weights));
  check_expected(expected(kValues, "where dx"), tape.gradient(out, x));
  check_expected(expected(kValues, "where dy"), tape.gradient(out, y));
  // Every element type; a scalar condition picks a whole tensor.
  BOOST_TEST(dt::where(dt::scalar<bool>(false), dt::constant<std::int32_t>({1, 2}), dt::constant<std::int32_t>({3, 4}))
                     .to_vector() == (std::vector<std::int32_t>{3, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(dt::where(condition, dt::scalar<bool>(false), dt::scalar<bool>(true)).to_vector() ==
                 (std::vector<bool>{false, true, false, true, true, false}),
             boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(
      dt::where(dt::constant<bool>({true, false}), dt::constant<float>({1, 2, 3}), dt::constant<float>({4, 5, 6})),
      InvalidArgumentError, "condition [2], then [3], and else [3] must be broadcastable [Op:SelectV2]");
  DEVTENSOR_CHECK_THROW_WITH(dt::where(dt::Tensor<bool>(), x, y), InvalidArgumentError, "SelectV2");
}

BOOST_AUTO_TEST_CASE(l2_loss_and_its_gradient_match_tensorflow) {
  std::vector<double> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / 7.0 - 0.5;
  const auto r = dt::constant<double>(v, dt::Shape{3, 4});
  dt::GradientTape tape;
  tape.watch(r);
  const auto loss = dt::l2_loss(r);
  check_expected(expected(kValues, "l2_loss"), loss);
  check_expected(expected(kValues, "l2_loss dx"), tape.gradient(loss, r));
  BOOST_TEST(dt::l2_loss(dt::zeros<float>({0})).item() == 0.0f);
}

BOOST_AUTO_TEST_CASE(selection_ops_in_graphs_keep_unknown_batches_and_equal_eager) {
  namespace v1 = dt::compat::v1;
  v1::Graph graph;
  dt::Tensor<float> p, picked, hot, chosen;
  dt::Tensor<std::int64_t> best;
  {
    auto scope = graph.as_default();
    p = v1::placeholder<float>({-1, 4});
    best = dt::argmax(p, 1);
    hot = dt::one_hot(best, 4);
    chosen = dt::where(dt::constant<bool>({true, false, false, true}), p, dt::scalar<float>(0));
    picked = dt::l2_loss(dt::mul(hot, p));
  }
  BOOST_TEST(best.shape().to_python() == "(None,)");
  BOOST_TEST(hot.shape().to_python() == "(None, 4)");
  BOOST_TEST(chosen.shape().to_python() == "(None, 4)");
  v1::Session session(graph);
  const auto feed = dt::constant<float>({1, 7, 3, 2, 9, 0, 9, -1, 4, 4, 5, 5}, dt::Shape{3, 4});
  BOOST_TEST(session.run(best, {{p, feed}}).to_vector() == (std::vector<std::int64_t>{1, 0, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(session.run(chosen, {{p, feed}}).to_vector() ==
                 dt::where(dt::constant<bool>({true, false, false, true}), feed, dt::scalar<float>(0)).to_vector(),
             boost::test_tools::per_element());
  BOOST_TEST(session.run(picked, {{p, feed}}).item() == (49.0f + 81.0f + 25.0f) / 2);
  // Traced: the same values as eager.
  auto f = dt::function(
      [](const dt::Tensor<float>& in) { return dt::one_hot<float>(dt::argmin(in, 1), 4, {.on_value = 3}); });
  BOOST_TEST(f(feed).to_vector() == dt::one_hot<float>(dt::argmin(feed, 1), 4, {.on_value = 3}).to_vector(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
