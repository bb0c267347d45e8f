// libFuzzer target over the public op API (issue 13). The input bytes are a small program: an
// element type, a pool of tensors (shapes and values drawn from small numbers and from the edges
// of int64 and float: 2^31, 2^40, 2^62, INT64_MAX/MIN, -1, NaN, ±inf, denormals, empty and
// undefined tensors), then up to 12 ops on the pool, each on the CPU, on a simulated GPU or
// wherever the placer puts it, sometimes under a GradientTape, sometimes a chain of them traced
// into a v1 graph (optimised: fused) and compared with its eager run. Every result is read back. The ops
// are those of the op list (ops/op_list.hpp), picked by their index there: a new op is fuzzed
// from the day it joins the list (fuzz_op refuses to compile until it knows how to call it).
//
// Property: the only outcome besides success is a devtensor::Error. Any other exception aborts
// with the op's name; ASan, UBSan (float-cast-overflow included) and signals abort by
// themselves. Memory is capped (host 16 MiB, simulated GPU 16 MiB, no allocation retry), so a
// request that can never fit fails fast rather than paging, and each op's work stays small.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/op_list.hpp"

namespace dt = devtensor;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kMaxPool = 8;
constexpr int kMaxOps = 12;
constexpr std::int64_t kMaxReadBack = std::int64_t{1} << 16;

/// Reads the input front to back; past the end every read is 0.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  [[nodiscard]] bool done() const { return pos_ >= size_; }
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  /// 0 .. n-1.
  std::size_t pick(std::size_t n) { return byte() % n; }
  bool flip() { return byte() & 1; }
  std::int64_t raw64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return static_cast<std::int64_t>(v);
  }

  /// A dimension, size, index, axis or count: small most of the time, an edge value otherwise.
  std::int64_t size_like() {
    static constexpr std::int64_t kEdges[] = {-1,
                                              -2,
                                              kMax,
                                              kMin,
                                              kMax - 1,
                                              kMin + 1,
                                              std::int64_t{1} << 31,
                                              (std::int64_t{1} << 31) - 1,
                                              std::int64_t{1} << 32,
                                              std::int64_t{1} << 40,
                                              std::int64_t{1} << 62,
                                              kMax / 2,
                                              kMax / 3,
                                              1000};
    const std::uint8_t b = byte();
    if (b < 200) return b % 6;
    if (b < 250) return kEdges[b % std::size(kEdges)];
    return raw64();
  }

  /// size_like() shifted down by `by` (wrapping, so that the edges stay edges): axes may be negative.
  std::int64_t size_like_minus(std::int64_t by) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(size_like()) - static_cast<std::uint64_t>(by));
  }

  template <class T>
  T value() {
    const std::uint8_t b = byte();
    if constexpr (std::is_same_v<T, bool>) {
      return b & 1;
    } else if constexpr (std::is_floating_point_v<T>) {
      using L = std::numeric_limits<T>;
      static constexpr T kEdges[] = {T{0},
                                     -T{0},
                                     T{1},
                                     T{-1},
                                     T{0.5},
                                     L::quiet_NaN(),
                                     L::infinity(),
                                     -L::infinity(),
                                     L::max(),
                                     L::lowest(),
                                     L::denorm_min(),
                                     L::min(),
                                     T(1e20),
                                     T(-1e20),
                                     T(2147483648.0),
                                     T(-2147483904.0),
                                     T(9.2233720368547758e18),
                                     T(-9.2233720368547758e18)};
      if (b < 128) return static_cast<T>(static_cast<int>(b % 16) - 8) / T{2};
      return kEdges[b % std::size(kEdges)];
    } else {
      using L = std::numeric_limits<T>;
      static constexpr T kEdges[] = {T{0},
                                     T{1},
                                     T{-1},
                                     T{2},
                                     T{-2},
                                     T{7},
                                     L::max(),
                                     L::min(),
                                     static_cast<T>(L::max() - 1),
                                     static_cast<T>(L::min() + 1)};
      if (b < 128) return static_cast<T>(static_cast<int>(b % 16) - 8);
      return kEdges[b % std::size(kEdges)];
    }
  }

  std::vector<std::int64_t> dims(std::size_t max_rank = 4) {
    const std::size_t rank = byte() == 255 ? 7 : pick(max_rank + 1);  // 7: a shape stored on the heap
    std::vector<std::int64_t> d(rank);
    for (auto& x : d) x = size_like();
    return d;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

[[noreturn]] void violated(const std::string& what, const char* op) {
  std::fprintf(stderr, "ops fuzz: %s in %s\n", what.c_str(), op);
  std::abort();
}

/// Reads every element back to the host: ASan sees any element the kernel did not own.
template <class T>
void read_back(const dt::Tensor<T>& t, const char* op) {
  if (!t.defined()) return;
  std::int64_t n = 1;
  for (auto d : t.shape().dims()) n = d == 0 ? 0 : (n > kMaxReadBack / d ? kMaxReadBack + 1 : n * d);
  if (n != t.num_elements() && n <= kMaxReadBack) violated("num_elements disagrees with the shape", op);
  if (t.num_elements() > kMaxReadBack) return;
  const auto v = t.to_vector();
  if (static_cast<std::int64_t>(v.size()) != t.num_elements()) violated("to_vector has the wrong size", op);
  // Printing (NumPy's rules) handles every value: nan, infinities, denormals, extremes.
  const std::string text = dt::format_values(t);
  if (t.rank() > 0 && (text.empty() || text.front() != '[' || text.back() != ']'))
    violated("format_values is not a bracketed array", op);
  bool long_axis = false;  // NumPy summarises only the axes longer than 2 * 3 edge items
  for (auto d : t.shape().dims()) long_axis = long_axis || d > 6;
  if (t.num_elements() > 1000 && long_axis && text.find("...") == std::string::npos)
    violated("a large tensor with a long axis printed whole", op);
}

template <class T>
using Pool = std::vector<dt::Tensor<T>>;

template <class T>
const dt::Tensor<T>& operand(Reader& in, const Pool<T>& pool) {
  static const dt::Tensor<T> undefined;
  const std::size_t i = in.pick(pool.size() + 1);
  return i < pool.size() ? pool[i] : undefined;  // sometimes an undefined tensor
}

template <class T>
dt::Tensor<T> make_tensor(Reader& in) {
  switch (in.pick(5)) {
    case 0: {  // small constant with decoded values
      std::vector<std::int64_t> d = in.dims(3);
      for (auto& x : d) x = x < 0 ? 1 : x % 5;
      std::int64_t n = 1;
      for (auto x : d) n *= x;
      std::vector<T> values(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = in.value<T>();
      return dt::constant<T>(values, dt::Shape(d));
    }
    case 1: return dt::fill<T>(dt::Shape(in.dims()), in.value<T>());  // any shape: edges included
    case 2: return dt::constant<T>(std::vector<T>{in.value<T>()}, dt::Shape(in.dims()));
    case 3:
      if constexpr (dt::Numeric<T>)
        return dt::range<T>(in.value<T>(), in.value<T>(), in.value<T>());
      else
        return dt::scalar<T>(in.value<T>());
    default:
      if constexpr (dt::Floating<T>)
        return in.flip() ? dt::random_uniform<T>(
                               dt::Shape(in.dims(2)),
                               {.minval = in.value<double>(), .maxval = in.value<double>(), .seed = in.byte()})
                         : dt::random_normal<T>(
                               dt::Shape(in.dims(2)),
                               {.mean = in.value<double>(), .stddev = in.value<double>(), .seed = in.byte()});
      else
        return dt::ones<T>(dt::Shape(in.dims(2)));
  }
}

template <class T, class U>
std::optional<dt::Tensor<T>> cast_to(Reader& in, const dt::Tensor<T>& x) {
  auto y = in.flip() ? dt::cast<U>(x) : x.template cast<U>();
  read_back(y, "Cast");
  return std::nullopt;
}

template <class T>
std::optional<std::vector<std::int64_t>> draw_axes(Reader& in) {
  std::optional<std::vector<std::int64_t>> ax;
  if (in.flip()) {
    ax.emplace();
    for (std::size_t i = in.pick(4); i > 0; --i) ax->push_back(in.size_like_minus(2));
  }
  return ax;
}

template <class Op>
constexpr bool is_optimizer_update =
    std::is_same_v<Op, dt::ops::ApplyGradientDescent> || std::is_same_v<Op, dt::ops::ApplyKerasMomentum> ||
    std::is_same_v<Op, dt::ops::ApplyAdam>;

/// Strides, ksize or dilations as TensorFlow takes them: an int, 2 ints or 4 (of any size).
inline dt::SpatialInts draw_spatial(Reader& in) {
  switch (in.pick(4)) {
    case 0: return in.size_like();
    case 1: return {in.size_like(), in.size_like()};
    case 2: return {1, in.size_like(), in.size_like(), 1};
    default: {
      std::vector<std::int64_t> v(in.pick(6));
      for (auto& x : v) x = in.size_like_minus(1);
      return v;
    }
  }
}
inline dt::Padding draw_padding(Reader& in) {
  switch (in.pick(5)) {
    case 0: return "SAME";
    case 1: return "VALID";
    case 2: return "same";  // refused: TensorFlow's values are upper case
    default: {
      std::vector<std::pair<std::int64_t, std::int64_t>> p(in.flip() ? 4 : in.pick(6));
      for (auto& [before, after] : p) before = in.size_like_minus(1), after = in.size_like_minus(1);
      if (in.flip() && p.size() == 4) p[0] = p[3] = {0, 0};
      return p;
    }
  }
}

template <class Op>
constexpr bool is_conv_op = dt::ops::ConvOps::contains<Op> || dt::ops::DepthwiseOps::contains<Op>;

/// The convolution and pooling ops through their public functions, with drawn windows. A work
/// budget: a call whose outputs times window taps exceed 2^26 is not made (those shapes' checks
/// ran already: the shape function is asked first, and its errors are the call's).
template <class Op, class T>
std::optional<dt::Tensor<T>> fuzz_conv(Reader& in, const dt::Tensor<T>& a, const dt::Tensor<T>& b) {
  namespace ops = dt::ops;
  const auto strides = draw_spatial(in);
  const auto padding = draw_padding(in);
  const bool nchw = in.pick(8) == 0;
  const dt::Conv2DOptions conv{.data_format = nchw ? "NCHW" : "NHWC", .dilations = in.flip() ? draw_spatial(in) : 1};
  const dt::PoolOptions pool{.data_format = conv.data_format};
  constexpr double kBudget = double(1 << 26);
  const auto count = [](const dt::Shape& s) { return static_cast<double>(s.num_elements()); };
  if constexpr (std::is_same_v<Op, ops::Conv2D> || std::is_same_v<Op, ops::Conv2DBackpropInput> ||
                std::is_same_v<Op, ops::Conv2DBackpropFilter>) {
    if (a.defined() && b.defined() && a.rank() == 4 && b.rank() == 4 && b.shape()[3] > 0) {
      try {  // outputs x (filter elements / out depth) multiply-adds
        const auto window = dt::conv_detail::window(strides, padding, conv.dilations, false, "Conv2D", true);
        const auto out = ops::Conv2D::output_shape(window, a.shape(), b.shape());
        if (count(out) * (count(b.shape()) / static_cast<double>(b.shape()[3])) > kBudget) return std::nullopt;
      } catch (const dt::Error&) {  // the call below fails alike
      }
    }
    if constexpr (std::is_same_v<Op, ops::Conv2D>) {
      return dt::conv2d(a, b, strides, padding, conv);
    } else if constexpr (std::is_same_v<Op, ops::Conv2DBackpropInput>) {
      const auto y = dt::conv2d(a, b, strides, padding, conv);  // a consistent out_backprop, or a wrong one
      return dt::conv2d_backprop_input(a.shape(), b, in.flip() ? y : a, strides, padding, conv);
    } else {
      const auto y = dt::conv2d(a, b, strides, padding, conv);
      return dt::conv2d_backprop_filter(a, in.flip() ? b.shape() : dt::Shape(in.dims()), in.flip() ? y : b, strides,
                                        padding, conv);
    }
  } else if constexpr (dt::ops::DepthwiseOps::contains<Op>) {
    if (a.defined() && b.defined() && a.rank() == 4 && b.rank() == 4) {
      try {  // output positions x window taps
        const auto window =
            dt::conv_detail::window(strides, padding, conv.dilations, false, "DepthwiseConv2dNative", true);
        const auto out = ops::DepthwiseConv2dNative::output_shape(window, a.shape(), b.shape());
        const double positions =
            static_cast<double>(out[0]) * static_cast<double>(out[1]) * static_cast<double>(out[2]);
        if (positions * static_cast<double>(b.shape()[0]) * static_cast<double>(b.shape()[1]) *
                std::max(1.0, static_cast<double>(out[3])) >
            kBudget)
          return std::nullopt;
      } catch (const dt::Error&) {  // the call below fails alike
      }
    }
    if constexpr (std::is_same_v<Op, ops::DepthwiseConv2dNative>) {
      return dt::depthwise_conv2d(a, b, strides, padding, conv);
    } else if constexpr (std::is_same_v<Op, ops::DepthwiseConv2dNativeBackpropInput>) {
      const auto y = dt::depthwise_conv2d(a, b, strides, padding, conv);
      return dt::depthwise_conv2d_backprop_input(a.shape(), b, in.flip() ? y : a, strides, padding, conv);
    } else {
      const auto y = dt::depthwise_conv2d(a, b, strides, padding, conv);
      return dt::depthwise_conv2d_backprop_filter(a, in.flip() ? b.shape() : dt::Shape(in.dims()), in.flip() ? y : b,
                                                  strides, padding, conv);
    }
  } else if constexpr (std::is_same_v<Op, ops::BiasAdd>) {
    return dt::bias_add(a, b, pool);
  } else if constexpr (std::is_same_v<Op, ops::BiasAddGrad>) {
    dt::GradientTape tape;
    tape.watch(b);
    const auto z = dt::bias_add(a, b, pool);
    return tape.gradient(dt::reduce_sum(z), b);
  } else {
    const auto ksize = draw_spatial(in);
    // A pool visits only the taps inside its input: outputs (at most the input's elements) times
    // the input's rows x columns bounds the work.
    if (a.defined() && a.rank() == 4 &&
        count(a.shape()) * static_cast<double>(a.shape()[1]) * static_cast<double>(a.shape()[2]) > kBudget)
      return std::nullopt;
    if constexpr (std::is_same_v<Op, ops::MaxPool>)
      return dt::max_pool2d(a, ksize, strides, padding, pool);
    else if constexpr (std::is_same_v<Op, ops::AvgPool>)
      return dt::avg_pool2d(a, ksize, strides, padding, pool);
    else {  // the gradients, through the tape
      dt::GradientTape tape;
      tape.watch(a);
      const auto y = std::is_same_v<Op, ops::MaxPoolGrad> ? dt::max_pool2d(a, ksize, strides, padding, pool)
                                                          : dt::avg_pool2d(a, ksize, strides, padding, pool);
      return tape.gradient(dt::reduce_sum(dt::mul(y, y)), a);
    }
  }
}

/// One run of op `Op` of the op list (ops/op_list.hpp) on operands a and b, with attributes drawn
/// from the input. Attribute-free ops (the elementwise family) go through run_op, the path their
/// public functions take; ops with attributes through their public functions, which derive the
/// attributes as users' calls do. A new op in the op list that fits neither fails to compile here
/// (the static_assert at the end): the fuzzer covers every op by construction.
template <class Op, class T>
std::optional<dt::Tensor<T>> fuzz_op(Reader& in, const dt::Tensor<T>& a, const dt::Tensor<T>& b) {
  namespace ops = dt::ops;
  using Attrs = typename Op::Attrs;
  constexpr bool typed = dt::has_kernel_v<Op, dt::cpu_t, T> || dt::has_kernel_v<Op, dt::gpu_t, T>;
  constexpr bool unary = requires(const Attrs& at, const dt::Shape& x) { Op::output_shape(at, x); };
  constexpr bool binary = requires(const Attrs& at, const dt::Shape& x) { Op::output_shape(at, x, x); };
  constexpr bool list = requires(const Attrs& at, std::span<const dt::Shape> x) { Op::output_shape(at, x); };
  if constexpr (!typed) {
    return std::nullopt;  // the public functions do not take this element type
  } else if constexpr (std::is_same_v<Op, ops::MatMul>) {
    // A work budget: a valid product of 2^30 multiply-adds is slow under ASan, not wrong.
    const bool ta = in.flip(), tb = in.flip();
    const double cost = static_cast<double>(a.num_elements()) * static_cast<double>(b.num_elements());
    if (a.defined() && b.defined() && a.rank() >= 2 && b.rank() >= 2 && cost >= 1e9)
      return dt::matmul(dt::reshape(a, {-1}), b);  // still exercise the shape checks
    return dt::matmul(a, b, ta, tb);
  } else if constexpr (std::is_same_v<Op, ops::Sum> || std::is_same_v<Op, ops::Mean> || std::is_same_v<Op, ops::Max>) {
    const auto axes = draw_axes<T>(in);
    const bool keep = in.flip();
    if constexpr (std::is_same_v<Op, ops::Sum>)
      return dt::reduce_sum(a, axes, keep);
    else if constexpr (std::is_same_v<Op, ops::Mean>)
      return dt::reduce_mean(a, axes, keep);
    else
      return in.flip() ? dt::reduce_max(a, axes, keep) : dt::reduce_max(a, in.size_like_minus(2), keep);
  } else if constexpr (std::is_same_v<Op, ops::Softmax> || std::is_same_v<Op, ops::LogSoftmax>) {
    if (in.flip()) return dt::run_op<Op>({}, a);
    const std::int64_t axis = in.size_like_minus(2);  // any axis: out of range too
    if constexpr (std::is_same_v<Op, ops::Softmax>)
      return dt::softmax(a, axis);
    else
      return dt::log_softmax(a, axis);
  } else if constexpr (std::is_same_v<Op, ops::LRN> || std::is_same_v<Op, ops::LRNGrad>) {
    // Any radius, negative and huge too; a work budget on the window sums (elements x window).
    const dt::LrnOptions options{.depth_radius = in.size_like_minus(2),
                                 .bias = in.value<float>(),
                                 .alpha = in.value<float>(),
                                 .beta = in.value<float>()};
    if (a.defined() && a.rank() == 4 &&
        static_cast<double>(a.num_elements()) * static_cast<double>(std::min<std::int64_t>(
                                                    std::max<std::int64_t>(options.depth_radius, 0), a.shape()[3])) >
            double(1 << 26))
      return std::nullopt;
    if constexpr (std::is_same_v<Op, ops::LRN>) {
      return dt::lrn(a, options);
    } else {
      dt::GradientTape tape;
      tape.watch(a);
      const auto y = dt::lrn(a, options);
      return tape.gradient(dt::reduce_sum(dt::mul(y, y)), a);
    }
  } else if constexpr (std::is_same_v<Op, ops::EagerConst> || std::is_same_v<Op, ops::Fill> ||
                       std::is_same_v<Op, ops::RandomUniform> || std::is_same_v<Op, ops::RandomStandardNormal>) {
    return make_tensor<T>(in);  // constant, fill, random_uniform, random_normal by the input
  } else if constexpr (std::is_same_v<Op, ops::Range>) {
    return dt::range<T>(in.value<T>(), in.value<T>(), in.value<T>());
  } else if constexpr (std::is_same_v<Op, ops::Reshape>) {
    return dt::reshape(a, in.dims());
  } else if constexpr (std::is_same_v<Op, ops::Identity>) {
    return dt::identity(a);
  } else if constexpr (std::is_same_v<Op, ops::Transpose>) {
    std::vector<std::int64_t> perm;
    if (in.flip())
      for (std::size_t i = in.pick(5); i > 0; --i) perm.push_back(in.size_like_minus(1));
    return dt::transpose(a, perm);
  } else if constexpr (std::is_same_v<Op, ops::ConcatV2>) {
    return dt::concat(std::vector{a, b}, in.size_like_minus(2));
  } else if constexpr (std::is_same_v<Op, ops::Split>) {
    std::vector<dt::Tensor<T>> parts;
    if (in.flip()) {
      std::vector<std::int64_t> sizes;
      for (std::size_t i = in.pick(4); i > 0; --i) sizes.push_back(in.size_like());
      parts = dt::split(a, sizes, in.size_like_minus(1));
    } else {
      // Non-positive counts must fail; positive ones stay small: an empty axis splits into any
      // number of empty pieces, and 2^31 of them is a request for 2^31 tensors.
      const std::int64_t num = in.size_like();
      const int pieces = num > 64 ? static_cast<int>(num % 64) : num < -1 ? -1 : static_cast<int>(num);
      parts = dt::split(a, pieces, in.size_like_minus(1));
    }
    for (const auto& p : parts) read_back(p, "Split");
    if (parts.empty()) return std::nullopt;
    return parts.back();
  } else if constexpr (std::is_same_v<Op, ops::Slice>) {
    std::vector<std::int64_t> begin, size;
    const std::size_t rank = in.flip() ? a.rank() : in.pick(5);
    for (std::size_t i = 0; i < rank; ++i) {
      begin.push_back(in.size_like());
      size.push_back(in.size_like_minus(1));
    }
    return dt::slice(a, begin, size);
  } else if constexpr (std::is_same_v<Op, ops::BroadcastTo>) {
    return dt::broadcast_to(a, dt::Shape(in.dims()));
  } else if constexpr (std::is_same_v<Op, ops::Pad>) {
    std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
    const std::size_t rank = in.flip() ? a.rank() : in.pick(5);
    for (std::size_t i = 0; i < rank; ++i) paddings.emplace_back(in.size_like(), in.size_like());
    return dt::pad(a, paddings);
  } else if constexpr (std::is_same_v<Op, ops::Cast>) {
    switch (in.pick(5)) {
      case 0: return cast_to<T, float>(in, a);
      case 1: return cast_to<T, double>(in, a);
      case 2: return cast_to<T, std::int32_t>(in, a);
      case 3: return cast_to<T, std::int64_t>(in, a);
      default: return cast_to<T, bool>(in, a);
    }
  } else if constexpr (std::is_same_v<Op, ops::VarHandleOp>) {
    dt::Variable<T> v(a);  // the variable's buffer and its device copy, then an assignment
    if (in.flip()) v.assign(b);
    return v.value();
  } else if constexpr (is_optimizer_update<Op>) {
    if constexpr (dt::Floating<T> && std::is_same_v<T, float>) {  // the Keras optimizers train float variables
      std::vector<dt::Variable<float>> vars{dt::Variable<float>(a)};
      const std::vector<dt::Tensor<float>> grads{b};
      if constexpr (std::is_same_v<Op, ops::ApplyGradientDescent>) {
        dt::nn::optimizers::SGD{.learning_rate = in.value<double>()}.apply_gradients(grads, vars);
      } else if constexpr (std::is_same_v<Op, ops::ApplyKerasMomentum>) {
        dt::nn::optimizers::SGD{.learning_rate = in.value<double>(), .momentum = in.value<double>()}.apply_gradients(
            grads, vars);
      } else {
        dt::nn::optimizers::Adam{.learning_rate = in.value<double>()}.apply_gradients(grads, vars);
      }
      return vars[0].value();
    }
    return std::nullopt;
  } else if constexpr (is_conv_op<Op>) {
    if constexpr (dt::Floating<T>)
      return fuzz_conv<Op, T>(in, a, b);
    else
      return std::nullopt;
  } else if constexpr (std::is_same_v<Op, ops::ArgMax> || std::is_same_v<Op, ops::ArgMin>) {
    // Indices, not T: read back here.
    const std::int64_t axis = in.size_like_minus(2);
    const bool wide = in.flip();
    if constexpr (std::is_same_v<Op, ops::ArgMax>) {
      if (wide)
        read_back(dt::argmax(a, axis), "ArgMax");
      else
        read_back(dt::argmax<std::int32_t>(a, axis), "ArgMax");
    } else {
      if (wide)
        read_back(dt::argmin(a, axis), "ArgMin");
      else
        read_back(dt::argmin<std::int32_t>(a, axis), "ArgMin");
    }
    return std::nullopt;
  } else if constexpr (std::is_same_v<Op, ops::OneHot>) {
    // A work budget: a depth that makes more than 2^22 valid outputs is cut (an overflowing one
    // still reaches the shape function).
    std::int64_t depth = in.size_like_minus(1);
    const std::int64_t n = a.defined() ? std::max<std::int64_t>(1, a.num_elements()) : 1;
    if (depth > (std::int64_t{1} << 22) / n && depth <= kMax / n) depth %= 64;
    return dt::one_hot<T>(a, depth,
                          {.on_value = in.value<T>(), .off_value = in.value<T>(), .axis = in.size_like_minus(1)});
  } else if constexpr (std::is_same_v<Op, ops::SelectV2>) {
    // The condition: the first operand's truth, or a scalar.
    const auto condition = in.flip() ? dt::cast<bool>(a) : dt::scalar<bool>(in.flip());
    return dt::where(condition, in.flip() ? a : b, b);
  } else if constexpr (std::is_same_v<Op, ops::StatelessRandomUniform>) {
    // Its seed is a (one-element) int64 tensor; its output float or double.
    const dt::Shape shape(in.dims());
    const auto seed = static_cast<std::uint64_t>(in.value<std::int64_t>());
    if (in.flip())
      read_back(dt::stateless_random_uniform<float>(shape, a, seed), "StatelessRandomUniform");
    else
      read_back(dt::stateless_random_uniform<double>(shape, a, seed), "StatelessRandomUniform");
    return std::nullopt;
  } else if constexpr (std::is_same_v<Op, ops::AccumulateWeighted> || std::is_same_v<Op, ops::AdamStepSize>) {
    return std::nullopt;  // fit's loss tracker, Adam's step size on a GPU: not reachable from the public API on a CPU
  } else if constexpr (std::is_empty_v<Attrs> && unary) {
    return dt::run_op<Op>({}, a);
  } else if constexpr (std::is_empty_v<Attrs> && binary) {
    if (in.flip()) return dt::run_op<Op>({}, a, b);
    if constexpr (std::is_same_v<Op, ops::Add>)
      return a + b;  // the operators' spellings
    else if constexpr (std::is_same_v<Op, ops::Sub>)
      return a - b;
    else if constexpr (std::is_same_v<Op, ops::Mul>)
      return a * b;
    else if constexpr (std::is_same_v<Op, ops::RealDiv>)
      return a / b;
    else
      return dt::run_op<Op>({}, b, a);
  } else if constexpr (std::is_empty_v<Attrs> && list) {
    return dt::run_op_list<Op, T>({}, std::vector{a, b, a});
  } else {
    static_assert(sizeof(Op) == 0, "an op of the op list that the fuzzer does not know how to call: add its case");
  }
}

/// Actions besides the ops of the op list: host reads, input pipelines, a traced op, gather (and
/// its gradient's op: ops whose indices are integers beside values of any type), batch
/// normalisation (five inputs, six outputs).
constexpr std::size_t kExtraActions = 5;

/// gather and unsorted_segment_sum with drawn indices (edge values included) and axes.
template <class T>
void fuzz_gather(Reader& in, const dt::Tensor<T>& a) {
  std::vector<std::int64_t> values(in.pick(6));
  for (auto& v : values) v = in.size_like_minus(1);
  const auto indices = dt::constant<std::int64_t>(values);
  if (in.flip()) {
    read_back(dt::gather(a, indices, in.size_like_minus(2)), "GatherV2");
  } else if constexpr (dt::Numeric<T>) {
    // A work budget: the output has num_segments slices of a row each.
    const std::int64_t segments = in.size_like_minus(1);
    read_back(dt::unsorted_segment_sum(a, indices, segments > 64 ? segments % 64 : segments), "UnsortedSegmentSum");
  }
}

/// fused_batch_norm (FusedBatchNormV3, and its gradient's op under a tape) on drawn operands of any
/// shape (most are refused), with drawn flags and epsilons.
template <class T>
void fuzz_batch_norm(Reader& in, const dt::Tensor<T>& a, const dt::Tensor<T>& b) {
  if constexpr (dt::Floating<T>) {
    const auto empty = dt::constant<T>(std::vector<T>{});
    const auto statistics = in.flip() ? b : empty;
    const dt::FusedBatchNormOptions options{.epsilon = in.flip() ? 0.001f : in.value<float>(),
                                            .data_format = in.flip() ? "NHWC" : "NCHW",
                                            .is_training = in.flip(),
                                            .exponential_avg_factor = in.flip() ? 1.0f : in.value<float>()};
    dt::GradientTape tape;
    tape.watch(a);
    const auto out = dt::fused_batch_norm(a, b, b, statistics, statistics, options);
    read_back(out.y, "FusedBatchNormV3");
    read_back(out.mean, "FusedBatchNormV3");
    read_back(out.variance, "FusedBatchNormV3");
    read_back(tape.gradient(dt::reduce_sum(out.y), a), "FusedBatchNormGradV3");
  }
}

/// Same values, NaN equal to NaN (bitwise for the kernels that both paths run).
template <class T>
bool same_values(const dt::Tensor<T>& x, const dt::Tensor<T>& y) {
  if (x.shape() != y.shape()) return false;
  if (x.num_elements() > kMaxReadBack) return true;
  const auto a = x.to_vector();
  const auto b = y.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    }
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// A chain of 1 to 4 ops of the op list, each on the previous result and on `b` or that result
/// again, run eagerly and traced into a v1 graph on the same attributes, fed the same operands:
/// when both succeed and no op assigns a variable, the values agree (graph mode runs the same
/// kernels; its optimiser fuses elementwise chains into nodes that apply the same scalar
/// functions: graph/optimizer.hpp).
template <class T>
void traced_op(Reader& in, const dt::Tensor<T>& a, const dt::Tensor<T>& b) {
  namespace v1 = dt::compat::v1;
  using Ops = dt::ops::BuiltinOps;
  if (!a.defined() || !b.defined()) return;
  const std::size_t steps = 1 + in.pick(4);
  // Applies the chain to (x, y), reading picks and attributes from `reader`.
  std::string names;
  bool random = false;
  // An assignment or update is an op of its own in a v1 graph: a read that does not depend on it
  // runs without it (TensorFlow 1's semantics), where eager execution has applied it already.
  bool stateful = false;
  const auto chain = [&](Reader& reader, const dt::Tensor<T>& x,
                         const dt::Tensor<T>& y) -> std::optional<dt::Tensor<T>> {
    std::optional<dt::Tensor<T>> value = x;
    names.clear();
    for (std::size_t s = 0; s < steps && value; ++s) {
      const std::size_t pick = reader.pick(Ops::size);
      const dt::Tensor<T> second = reader.flip() ? y : *value;
      const dt::Tensor<T> first = *value;
      std::size_t i = 0;
      dt::ops::for_each_op(Ops{}, [&]<class Op>() {
        if (i++ != pick) return;
        names += (names.empty() ? "" : " -> ") + std::string(Op::name);
        random = random || Op::name.starts_with("Random");
        stateful = stateful || std::is_same_v<Op, dt::ops::VarHandleOp> || is_optimizer_update<Op>;
        value = fuzz_op<Op, T>(reader, first, second);
      });
    }
    return value;
  };
  Reader replay = in;  // the graph's ops read the same picks and attributes
  std::optional<dt::Tensor<T>> eager;
  try {
    eager = chain(replay, a, b);
  } catch (const dt::Error&) {
    eager.reset();
  }
  v1::Graph graph;
  dt::Tensor<T> pa, pb;
  std::optional<dt::Tensor<T>> symbolic;
  {
    auto scope = graph.as_default();
    pa = v1::placeholder<T>(a.shape(), {.name = "a"});
    pb = v1::placeholder<T>(b.shape(), {.name = "b"});
    try {
      symbolic = chain(in, pa, pb);
    } catch (const dt::Error&) {
      return;  // refused while building (a shape function, an op that needs values)
    }
  }
  if (!symbolic || !symbolic->symbolic()) return;
  dt::Tensor<T> traced;
  try {
    v1::Session session(graph, {.allow_soft_placement = true});
    traced = session.run(*symbolic, {{pa, a}, {pb, b}});
  } catch (const dt::Error&) {
    return;  // the graph keeps its feeds alive: it may run out of the fuzzer's small memory first
  }
  read_back(traced, names.c_str());
  if (eager && !random && !stateful && !same_values(*eager, traced))
    violated("the traced chain's values differ from eager execution", names.c_str());
}

/// One op of the op list (or an extra action) on the pool; its result joins the pool.
template <class T>
void run_op(Reader& in, Pool<T>& pool) {
  using Ops = dt::ops::BuiltinOps;
  const auto& a = operand(in, pool);
  const auto& b = operand(in, pool);
  std::optional<dt::Tensor<T>> out;
  const char* name = "?";
  const std::size_t pick = in.pick(Ops::size + kExtraActions);
  if (pick < Ops::size) {
    std::size_t i = 0;
    dt::ops::for_each_op(Ops{}, [&]<class Op>() {
      if (i++ != pick) return;
      name = Op::name.data();  // a literal: null-terminated
      out = fuzz_op<Op, T>(in, a, b);
    });
  } else if (pick == Ops::size) {
    name = "host reads";
    if (in.flip()) {
      (void)a.item();
    } else {
      std::vector<std::int64_t> index;
      for (std::size_t i = in.pick(4); i > 0; --i) index.push_back(in.size_like_minus(1));
      switch (index.size()) {
        case 0: (void)a.at({}); break;
        case 1: (void)a.at({index[0]}); break;
        case 2: (void)a.at({index[0], index[1]}); break;
        default: (void)a.at({index[0], index[1], index[2]}); break;
      }
    }
  } else if (pick == Ops::size + 4) {
    name = "batch norm";
    fuzz_batch_norm(in, a, b);
  } else if (pick == Ops::size + 3) {
    name = "gather";
    fuzz_gather(in, a);
  } else if (pick == Ops::size + 2) {
    name = "traced op";
    traced_op(in, a, b);
  } else {
    name = "dataset";
    using Dataset = dt::data::Dataset<T>;
    auto ds = in.flip() ? Dataset::from_tensor_slices(a) : Dataset::from_tensors(a);
    // Edge counts for repeat and batch (their cardinality arithmetic); take keeps the work
    // bounded: a batch of 2^62 elements would buffer them all, in TensorFlow too.
    ds = ds.repeat(in.size_like_minus(1)).take(static_cast<std::int64_t>(in.pick(6))).batch(in.size_like(), in.flip());
    if (in.flip()) ds = ds.concatenate(ds);
    int seen = 0;
    for (const auto& [batch] : ds) {
      read_back(batch, name);
      if (++seen == 4) break;
    }
  }
  if (out) {
    read_back(*out, name);
    if (pool.size() < kMaxPool)
      pool.push_back(*out);
    else
      pool[in.pick(kMaxPool)] = *out;
  }
}

/// A gradient through whatever the last op recorded (floating types only).
template <class T>
void maybe_gradient(Reader& in, Pool<T>& pool) {
  if constexpr (dt::Floating<T>) {
    if (pool.empty() || !in.flip()) return;
    dt::GradientTape tape;
    const auto& x = pool[in.pick(pool.size())];
    tape.watch(x);
    Pool<T> local{x};
    run_op(in, local);
    const auto y = local.back();
    const auto g = tape.gradient(dt::reduce_sum(y), x);
    read_back(g, "gradient");
  }
}

template <class T>
void run_program(Reader& in) {
  Pool<T> pool;
  for (std::size_t i = 1 + in.pick(3); i > 0; --i) {
    try {
      pool.push_back(make_tensor<T>(in));
    } catch (const dt::Error&) {
    }
  }
  for (int step = 0; step < kMaxOps && !in.done(); ++step) {
    static const char* const kDevices[] = {"/cpu:0", "/gpu:0", "/device:GPU:0", ""};
    const char* device = kDevices[in.pick(std::size(kDevices))];
    try {
      std::optional<dt::DeviceScope> scope;
      if (*device) scope.emplace(device);
      if (in.flip())
        maybe_gradient(in, pool);
      else
        run_op(in, pool);
    } catch (const dt::Error&) {
      // The one allowed failure.
    } catch (const std::exception& e) {
      violated(std::string("a non-devtensor exception: ") + e.what(), device);
    }
  }
}

void initialize() {
  // Quiet: OOM reports log the allocator's whole dump.
  static dt::ScopedLogSink quiet([](dt::LogSeverity, std::string_view) {});
  dt::config::experimental::set_host_memory_limit(16 * dt::kMiB);
  dt::config::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(0));
  dt::config::set_simulated_gpus(1, dt::kGiB);
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("GPU").at(0),
                                               {{.memory_limit_mb = 16}});
  (void)dt::config::list_logical_devices("GPU");  // initialise now, not inside the first input
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool initialized = (initialize(), true);
  (void)initialized;
  Reader in(data, size);
  switch (in.pick(5)) {
    case 0: run_program<float>(in); break;
    case 1: run_program<double>(in); break;
    case 2: run_program<std::int32_t>(in); break;
    case 3: run_program<std::int64_t>(in); break;
    default: run_program<bool>(in); break;
  }
  return 0;
}
