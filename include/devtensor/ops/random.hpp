#pragma once
/// @file random.hpp
/// @brief Seeded random tensors: random_uniform and random_normal.
///
/// Values come from a counter-based generator (SplitMix64 over seed and element index), so a seed
/// gives the same tensor on every device, thread count and run. Without a seed each call draws a
/// fresh seed from a process-wide sequence.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // only entropy_seed's body (Note [Compiled mode])
#include <random>
#endif

namespace devtensor {

struct UniformOptions {
  double minval = 0.0;
  double maxval = 1.0;
  std::optional<std::uint64_t> seed = std::nullopt;
};
struct NormalOptions {
  double mean = 0.0;
  double stddev = 1.0;
  std::optional<std::uint64_t> seed = std::nullopt;
};

/// SplitMix64: a seed (or a counter) mixed into 64 well-spread bits; every random op and the
/// dataset shuffle derive their streams with it.
DEVTENSOR_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

namespace detail {
/// A seed from the random device. Out of line: <random> is ~8 700 lines of templates that every
/// translation unit including ops would parse (tensors.hpp alone: 2.69 -> 2.61 s).
std::uint64_t entropy_seed();
#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::uint64_t entropy_seed() { return std::random_device{}(); }
#endif

/// The global seed (tf.random.set_seed) and the sequence of op seeds it starts. Without a global
/// seed the sequence starts from the random device, so unseeded programs differ run to run.
struct GlobalSeed {
  std::mutex mutex;
  std::optional<std::uint64_t> seed;
  std::uint64_t next = entropy_seed();  // the next op seed's index in the sequence
};
inline GlobalSeed& global_seed_state() {
  static GlobalSeed state;
  return state;
}
}  // namespace detail

/// A seed for a Keras object or an op that was given none: the next of the global seed's sequence
/// (the same sequence on every run of a program after `random::set_seed`), else a fresh one.
inline std::uint64_t next_seed() {
  auto& state = detail::global_seed_state();
  const std::lock_guard lock(state.mutex);
  return splitmix64(state.seed.value_or(0x5EEDULL) ^ splitmix64(state.next++));
}

namespace random {

/// TensorFlow's `tf.random.set_seed` (and Keras's `set_random_seed`): makes every random op,
/// initializer, Dropout and shuffle that is given no seed of its own draw from a sequence that
/// starts anew here, so a program gives the same values on every run; `std::nullopt` clears it.
/// Ops given a seed of their own combine it with the global one (TensorFlow's rule); Keras objects
/// given one (initializers, Dropout) use it alone, as in Keras.
inline void set_seed(std::optional<std::uint64_t> seed) {
  auto& state = detail::global_seed_state();
  const std::lock_guard lock(state.mutex);
  state.seed = seed;
  state.next = seed ? 0 : detail::entropy_seed();
}

/// The global seed, if one is set.
[[nodiscard]] inline std::optional<std::uint64_t> get_seed() {
  auto& state = detail::global_seed_state();
  const std::lock_guard lock(state.mutex);
  return state.seed;
}

/// Where the global sequence stands: the global seed (if set) and the index of its next draw.
/// What a checkpoint of a training saves (BackupAndRestore), so that a resumed run draws what the
/// uninterrupted one would have drawn.
struct GlobalState {
  std::optional<std::uint64_t> seed;
  std::uint64_t next = 0;
  friend bool operator==(const GlobalState&, const GlobalState&) = default;
};
[[nodiscard]] inline GlobalState global_state() {
  auto& state = detail::global_seed_state();
  const std::lock_guard lock(state.mutex);
  return {state.seed, state.next};
}
/// Puts the global sequence back where `saved` was (the seed included).
inline void set_global_state(const GlobalState& saved) {
  auto& state = detail::global_seed_state();
  const std::lock_guard lock(state.mutex);
  state.seed = saved.seed;
  state.next = saved.next;
}

/// The seed an op draws with, by TensorFlow's rule (random_seed.get_seed): its own seed combined
/// with the global one when both are set; its own alone without a global seed; the next of the
/// global sequence (or a fresh one) without one of its own.
[[nodiscard]] inline std::uint64_t op_seed(std::optional<std::uint64_t> own) {
  if (!own) return next_seed();
  const std::optional<std::uint64_t> global = get_seed();
  return global ? splitmix64(*global ^ splitmix64(*own ^ 0xC0FFEEULL)) : *own;
}

}  // namespace random

namespace detail {
/// A double in [0, 1) from 53 random bits.
DEVTENSOR_HOST_DEVICE constexpr double unit_uniform(std::uint64_t seed, std::uint64_t i) noexcept {
  return static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 11) * 0x1.0p-53;
}
/// Element i of a uniform tensor in [minval, minval + span): the same on every device.
template <class T>
struct UniformValue {
  std::uint64_t seed;
  double minval;
  double maxval;
  DEVTENSOR_HOST_DEVICE T operator()(std::int64_t i) const {
    const T v = static_cast<T>(minval + (maxval - minval) * unit_uniform(seed, static_cast<std::uint64_t>(i)));
    return v < static_cast<T>(maxval) ? v : static_cast<T>(minval);  // float rounding
  }
};
/// Element i of a normal tensor (Box-Muller over pairs of elements).
template <class T>
struct NormalValue {
  std::uint64_t seed;
  double mean;
  double stddev;
  DEVTENSOR_HOST_DEVICE T operator()(std::int64_t i) const {
    constexpr double kTwoPi = 6.283185307179586;
    const auto pair = static_cast<std::uint64_t>(i / 2);
    const double u1 = 1.0 - unit_uniform(seed, 2 * pair);  // (0, 1]
    const double u2 = unit_uniform(seed, 2 * pair + 1);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double z = (i % 2 == 0) ? r * std::cos(kTwoPi * u2) : r * std::sin(kTwoPi * u2);
    return static_cast<T>(mean + stddev * z);
  }
};

}  // namespace detail

namespace ops {

/// Random values from a counter-based generator: element i of seed s is the same on every device.
/// On TensorFlow's list of ops never pinned to the host.
template <class Self, template <class> class Value>
struct RandomOp : OpTable<FloatTypes, FloatTypes>, Builtin {
  static constexpr bool never_pin_to_host = true;
  struct Attrs {
    Shape shape;
    std::uint64_t seed = 0;
    double p0 = 0;  // minval, or the mean
    double p1 = 1;  // maxval, or the standard deviation
  };
  static const Shape& output_shape(const Attrs& attrs) noexcept { return attrs.shape; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};
struct RandomUniform : RandomOp<RandomUniform, detail::UniformValue> {
  static constexpr std::string_view name = "RandomUniform";
};
struct RandomStandardNormal : RandomOp<RandomStandardNormal, detail::NormalValue> {
  static constexpr std::string_view name = "RandomStandardNormal";
};

/// Uniform values in [0, 1) of element type `dtype`, a function of the attribute seed and of the
/// int64 seed tensor (one element) it takes as input: the same inputs give the same values, and a
/// graph fed a new seed tensor per run draws anew (what Dropout uses in traced training steps;
/// TensorFlow's StatelessRandomUniform with the seed as data). T is the seed's element type.
struct StatelessRandomUniform : OpTable<TypeList<std::int64_t>, TypeList<std::int64_t>>, Builtin {
  static constexpr std::string_view name = "StatelessRandomUniform";
  static constexpr bool never_pin_to_host = true;
  static constexpr OpTraits traits{.differentiable = false};
  struct Attrs {
    Shape shape;
    std::uint64_t seed = 0;
    DType dtype = DType::DT_FLOAT;
  };
  /// @throws InvalidArgumentError unless the seed tensor has one element.
  static const Shape& output_shape(const Attrs& attrs, const Shape& seed) {
    if (seed.num_elements() != 1)
      throw InvalidArgumentError("seed must have exactly one element, got shape " + seed.to_string() +
                                 " [Op:StatelessRandomUniform]");
    return attrs.shape;
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

using RandomOps = TypeList<RandomUniform, RandomStandardNormal, StatelessRandomUniform>;

}  // namespace ops

namespace random {
/// random_uniform drawn with `seed` as it is, whatever the global seed (what Keras's initializers
/// do with a seed of their own). @throws InvalidArgumentError when minval >= maxval or either is not finite.
template <Floating T>
Tensor<T> uniform_with_seed(const Shape& shape, std::uint64_t seed, double minval, double maxval,
                            const OpOptions& op_options = {}) {
  if (!std::isfinite(minval) || !std::isfinite(maxval) || !std::isfinite(maxval - minval) ||
      std::fabs(minval) > static_cast<double>(std::numeric_limits<T>::max()) ||
      std::fabs(maxval) > static_cast<double>(std::numeric_limits<T>::max()))
    throw InvalidArgumentError(
        "Requires minval and maxval to be finite values of the type, with a finite "
        "difference: minval " +
        number_string(minval) + ", maxval " + number_string(maxval) + " [Op:RandomUniform]");
  if (!(minval < maxval))
    throw InvalidArgumentError("Need minval < maxval: " + std::to_string(minval) + " >= " + std::to_string(maxval) +
                               " [Op:RandomUniform]");
  return run_op<ops::RandomUniform, T>(op_options, {shape, seed, minval, maxval});  // the same values on every device
}
/// random_normal drawn with `seed` as it is, whatever the global seed. @throws InvalidArgumentError for a negative
/// stddev.
template <Floating T>
Tensor<T> normal_with_seed(const Shape& shape, std::uint64_t seed, double mean, double stddev,
                           const OpOptions& op_options = {}) {
  if (!(stddev >= 0.0))
    throw InvalidArgumentError("stddev must be >= 0, got " + std::to_string(stddev) + " [Op:RandomStandardNormal]");
  return run_op<ops::RandomStandardNormal, T>(op_options, {shape, seed, mean, stddev});  // the CPU's, to rounding
}
}  // namespace random

/// Uniform values in [minval, maxval), seeded by TensorFlow's rule (`random::op_seed`).
/// @throws InvalidArgumentError when minval >= maxval.
template <Floating T>
Tensor<T> random_uniform(const Shape& shape, UniformOptions options = {}, const OpOptions& op_options = {}) {
  return random::uniform_with_seed<T>(shape, random::op_seed(options.seed), options.minval, options.maxval, op_options);
}

/// Normal values (Box-Muller), seeded by TensorFlow's rule. @throws InvalidArgumentError for a
/// negative stddev.
template <Floating T>
Tensor<T> random_normal(const Shape& shape, NormalOptions options = {}, const OpOptions& op_options = {}) {
  return random::normal_with_seed<T>(shape, random::op_seed(options.seed), options.mean, options.stddev, op_options);
}

/// Uniform values in [0, 1) drawn from `seed` (a one-element int64 tensor, possibly a graph's
/// argument) mixed with `attr_seed`: a stateless op, so a traced graph fed a new seed draws anew.
/// @throws InvalidArgumentError for a seed of more than one element.
template <Floating T>
Tensor<T> stateless_random_uniform(const Shape& shape, const Tensor<std::int64_t>& seed, std::uint64_t attr_seed,
                                   const OpOptions& op_options = {}) {
  return run_op<ops::StatelessRandomUniform, T>(op_options, {shape, attr_seed, dtype_enum<T>()}, seed);
}

}  // namespace devtensor

#if DEVTENSOR_CPU_KERNEL_BODIES
namespace devtensor::ops {
template <class Self, template <class> class Value>
template <class T>
void RandomOp<Self, Value>::cpu(const KernelContext& ctx) {
  const auto& a = ctx.attr<Attrs>();
  const Value<T> value{a.seed, a.p0, a.p1};
  T* o = ctx.output<T>();
  for (std::int64_t i = 0, n = a.shape.num_elements(); i < n; ++i) o[i] = value(i);
}

template <class T>
void StatelessRandomUniform::cpu(const KernelContext& ctx) {
  const auto& a = ctx.attr<Attrs>();
  const std::uint64_t seed = splitmix64(a.seed ^ splitmix64(static_cast<std::uint64_t>(ctx.input<T>(0)[0])));
  const auto fill = [&]<class U>(U* o) {
    const detail::UniformValue<U> value{seed, 0.0, 1.0};
    for (std::int64_t i = 0, n = a.shape.num_elements(); i < n; ++i) o[i] = value(i);
  };
  if (a.dtype == DType::DT_DOUBLE)
    fill(ctx.output<double>());
  else
    fill(ctx.output<float>());
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops {
template <class Self, template <class> class Value>
template <class T>
void RandomOp<Self, Value>::cuda(const KernelContext& ctx) {
  const auto& a = ctx.attr<Attrs>();
  cuda::generate(ctx.device, ctx.output<T>(), a.shape.num_elements(), Value<T>{a.seed, a.p0, a.p1});
}

namespace random_detail {
/// Element i of StatelessRandomUniform: the seed tensor is read on the device.
template <class U>
struct StatelessUniformValue {
  const std::int64_t* seed_tensor;
  std::uint64_t seed;
  __device__ U operator()(std::int64_t i) const {
    const std::uint64_t mixed = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(*seed_tensor)));
    return detail::UniformValue<U>{mixed, 0.0, 1.0}(i);
  }
};
}  // namespace random_detail

template <class T>
void StatelessRandomUniform::cuda(const KernelContext& ctx) {
  const auto& a = ctx.attr<Attrs>();
  const std::int64_t n = a.shape.num_elements();
  if (a.dtype == DType::DT_DOUBLE)
    cuda::generate(ctx.device, ctx.output<double>(), n,
                   random_detail::StatelessUniformValue<double>{ctx.input<T>(0), a.seed});
  else
    cuda::generate(ctx.device, ctx.output<float>(), n,
                   random_detail::StatelessUniformValue<float>{ctx.input<T>(0), a.seed});
}
}  // namespace devtensor::ops
#endif
