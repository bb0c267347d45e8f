// devtensor's compiled mode (Note [Compiled mode] in include/devtensor/config.hpp): this translation
// unit holds, once per build tree, what user translation units of the compiled mode only declare:
// the CPU body of every devtensor op for every element type it declares, the gradient table, the
// Context's discovery and allocators, the Keras model's training loop, device-name parsing,
// tensor printing, the placer's slow paths and the error messages' construction.
//
// The CMake target devtensor::devtensor compiles it (a static library in the consumer's build
// tree: nothing prebuilt is installed) and defines DEVTENSOR_COMPILED for its users. Without CMake:
//   g++ -std=c++20 -O2 -I<prefix>/include [-DDEVTENSOR_WITH_CBLAS=1]
//       -c <prefix>/share/devtensor/src/devtensor.cpp -o devtensor.o
//   g++ -std=c++20 -O2 -DDEVTENSOR_COMPILED [-DDEVTENSOR_WITH_CBLAS=1] -I<prefix>/include
//       your.cpp devtensor.o [-lopenblas] -pthread
// Every translation unit of one program must agree on DEVTENSOR_WITH_CBLAS and
// DEVTENSOR_STRICT_PLACEMENT, as for any header-only build.

#define DEVTENSOR_COMPILING_LIBRARY 1

#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/op_list.hpp"

namespace devtensor::compiled_detail {

/// Op has a CPU body of the common signature for T (views and the variable updates have none).
template <class Op, class T>
constexpr bool has_cpu_body = has_kernel_v<Op, cpu_t, T>&& requires {
  static_cast<ops::Kernel*>(&Op::template cpu<T>);
};

template <class Op, class T>
void add_cpu_body(std::vector<ops::Kernel*>& out) {
  if constexpr (has_cpu_body<Op, T>) out.push_back(&Op::template cpu<T>);
}
template <class Op, class... Ts>
void add_cpu_bodies(std::vector<ops::Kernel*>& out, ops::TypeList<Ts...>) {
  (add_cpu_body<Op, Ts>(out), ...);
}

}  // namespace devtensor::compiled_detail

namespace devtensor {

/// Every CPU body of every devtensor op, for every element type it declares. Naming them here
/// instantiates them in this translation unit, which emits each one; the user translation units,
/// which see their declarations only, call these definitions. (External, so that it is compiled.)
std::vector<ops::Kernel*> compiled_cpu_bodies() {
  std::vector<ops::Kernel*> out;
  [&]<class... Ops>(ops::TypeList<Ops...>) {
    (compiled_detail::add_cpu_bodies<Ops>(out, ops::AllTypes{}), ...);
  }(ops::BuiltinOps{});
  return out;
}

// NumPy's printing, for every element type.
template std::string format_values<float>(const Tensor<float>&, const PrintOptions&);
template std::string format_values<double>(const Tensor<double>&, const PrintOptions&);
template std::string format_values<std::int32_t>(const Tensor<std::int32_t>&, const PrintOptions&);
template std::string format_values<std::int64_t>(const Tensor<std::int64_t>&, const PrintOptions&);
template std::string format_values<bool>(const Tensor<bool>&, const PrintOptions&);
template std::string format_values<float16>(const Tensor<float16>&, const PrintOptions&);
template std::string format_values<bfloat16>(const Tensor<bfloat16>&, const PrintOptions&);

// The built-in losses' bodies, for each floating type.
template std::pair<Tensor<float>, Tensor<float>> nn::loss_detail::align<float>(const Tensor<float>&,
                                                                               const Tensor<float>&, std::string_view);
template std::pair<Tensor<double>, Tensor<double>> nn::loss_detail::align<double>(const Tensor<double>&,
                                                                                  const Tensor<double>&,
                                                                                  std::string_view);
template Tensor<float> nn::loss_detail::reduce<float>(const Tensor<float>&, nn::Reduction);
template Tensor<double> nn::loss_detail::reduce<double>(const Tensor<double>&, nn::Reduction);
template Tensor<float> nn::losses::MeanSquaredError::per_example<float>(const Tensor<float>&,
                                                                        const Tensor<float>&) const;
template Tensor<double> nn::losses::MeanSquaredError::per_example<double>(const Tensor<double>&,
                                                                          const Tensor<double>&) const;
template Tensor<float> nn::losses::BinaryCrossentropy::per_example<float>(const Tensor<float>&,
                                                                          const Tensor<float>&) const;
template Tensor<double> nn::losses::BinaryCrossentropy::per_example<double>(const Tensor<double>&,
                                                                            const Tensor<double>&) const;
template Tensor<float> nn::losses::CategoricalCrossentropy::per_example<float>(const Tensor<float>&,
                                                                               const Tensor<float>&) const;
template Tensor<double> nn::losses::CategoricalCrossentropy::per_example<double>(const Tensor<double>&,
                                                                                 const Tensor<double>&) const;
template Tensor<float> nn::losses::SparseCategoricalCrossentropy::per_example<float>(const Tensor<float>&,
                                                                                     const Tensor<float>&) const;
template Tensor<double> nn::losses::SparseCategoricalCrossentropy::per_example<double>(const Tensor<double>&,
                                                                                       const Tensor<double>&) const;

// The distributed losses' helpers.
template Tensor<float> nn::compute_average_loss<float>(const Tensor<float>&, std::optional<std::int64_t>);
template Tensor<double> nn::compute_average_loss<double>(const Tensor<double>&, std::optional<std::int64_t>);
template Tensor<float> nn::scale_regularization_loss<float>(const Tensor<float>&);
template Tensor<double> nn::scale_regularization_loss<double>(const Tensor<double>&);

// The gradient tables, installed by the first GradientTape::gradient of each type.
template void autodiff_detail::install_gradients<autodiff_detail::GradientOps, float>();
template void autodiff_detail::install_gradients<autodiff_detail::GradientOps, double>();
template void autodiff_detail::install_gradients<autodiff_detail::GradientOps, float16>();
template void autodiff_detail::install_gradients<autodiff_detail::GradientOps, bfloat16>();
template void autodiff_detail::install_builtin_gradients<float>();
template void autodiff_detail::install_builtin_gradients<double>();
template void autodiff_detail::install_builtin_gradients<float16>();
template void autodiff_detail::install_builtin_gradients<bfloat16>();

// GradientTape::gradient over the floating types (the target's and the sources').
#define DEVTENSOR_GRADIENT(T, U)                                                                                  \
  template std::vector<Tensor<U>> GradientTape::gradient<T, U>(const Tensor<T>&, const std::vector<Tensor<U>>&,   \
                                                               GradientOptions);                                  \
  template std::vector<Tensor<U>> GradientTape::gradient<T, U>(const Tensor<T>&, const std::vector<Variable<U>>&, \
                                                               GradientOptions);                                  \
  template std::vector<Tensor<U>> GradientTape::gradient<T, U>(const Tensor<T>&, const std::vector<Tensor<U>>&,   \
                                                               const Tensor<T>&, GradientOptions);
#define DEVTENSOR_GRADIENTS_TO(T) \
  DEVTENSOR_GRADIENT(T, float)    \
  DEVTENSOR_GRADIENT(T, double)   \
  DEVTENSOR_GRADIENT(T, float16)  \
  DEVTENSOR_GRADIENT(T, bfloat16)
DEVTENSOR_GRADIENTS_TO(float)
DEVTENSOR_GRADIENTS_TO(double)
DEVTENSOR_GRADIENTS_TO(float16)
DEVTENSOR_GRADIENTS_TO(bfloat16)
#undef DEVTENSOR_GRADIENTS_TO
#undef DEVTENSOR_GRADIENT

// FusedBatchNormV3's and FusedBatchNormGradV3's loops (ops/batch_norm_ops.hpp).
#define DEVTENSOR_BATCH_NORM(T)                                                                                      \
  template void ops::batch_norm_detail::forward<T>(const T*, const T*, const T*, const T*, const T*,                 \
                                                   ops::batch_norm_detail::Layout, double, double, bool, T*, T*, T*, \
                                                   T*, T*);                                                          \
  template void ops::batch_norm_detail::backward<T>(const T*, const T*, const T*, const T*, const T*,                \
                                                    ops::batch_norm_detail::Layout, double, bool, T*, T*, T*);
DEVTENSOR_BATCH_NORM(float)
DEVTENSOR_BATCH_NORM(double)
#undef DEVTENSOR_BATCH_NORM

}  // namespace devtensor
