// devtensor's compiled mode (Note [Compiled mode] in include/devtensor/config.hpp): this translation
// unit holds, once per build tree, what user translation units of the compiled mode only declare:
// the CPU body of every devtensor op for every element type it declares, the gradient table, the
// Context's discovery and allocators, the Keras model's training loop.
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

#include <array>
#include <cstddef>
#include <span>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/op_list.hpp"

namespace devtensor::compiled_detail {

/// Op's CPU body for T, when Op has one of the common signature (views and the variable updates
/// have none). Taking its address instantiates and emits it here; the user translation units,
/// which see its declaration only, call this definition.
template <class Op, class T>
constexpr ops::Kernel* cpu_body() noexcept {
  if constexpr (has_kernel_v<Op, cpu_t, T> && requires { static_cast<ops::Kernel*>(&Op::template cpu<T>); })
    return &Op::template cpu<T>;
  else
    return nullptr;
}

template <class Op>
constexpr std::size_t count_cpu_bodies() noexcept {
  return []<class... Ts>(ops::TypeList<Ts...>) {
    return ((cpu_body<Op, Ts>() != nullptr ? 1u : 0u) + ... + 0u);
  }(ops::AllTypes{});
}

template <class... Ops>
constexpr auto collect_cpu_bodies(ops::TypeList<Ops...>) noexcept {
  constexpr std::size_t n = (count_cpu_bodies<Ops>() + ... + 0u);
  std::array<ops::Kernel*, n> out{};
  std::size_t i = 0;
  const auto add = [&]<class Op>() {
    []<class... Ts>(ops::TypeList<Ts...>, auto& bodies, std::size_t& k) {
      ((cpu_body<Op, Ts>() != nullptr ? void(bodies[k++] = cpu_body<Op, Ts>()) : void()), ...);
    }(ops::AllTypes{}, out, i);
  };
  (add.template operator()<Ops>(), ...);
  return out;
}

}  // namespace devtensor::compiled_detail

namespace devtensor {

/// Every CPU body of every devtensor op: external, so that the compiler emits each one.
extern const std::span<ops::Kernel* const> compiled_cpu_bodies;
constexpr auto kCompiledCpuBodies = compiled_detail::collect_cpu_bodies(ops::BuiltinOps{});
const std::span<ops::Kernel* const> compiled_cpu_bodies{kCompiledCpuBodies};

// The gradient table, installed by the first GradientTape::gradient.
template void autodiff_detail::install_gradients<autodiff_detail::GradientOps>();

}  // namespace devtensor
