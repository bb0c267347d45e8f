// Built without CMake by no_cmake.sh, header-only and in compiled mode, as README's one-liners say.
#include <devtensor/devtensor.hpp>

#include <cstdio>

namespace dt = devtensor;

int main() {
  const auto x = dt::Variable<float>(dt::constant({1.0f, 2.0f, 3.0f}));
  dt::GradientTape tape;
  const auto y = dt::reduce_sum(dt::matmul(dt::reshape(x.value(), {1, 3}), dt::reshape(x.value(), {3, 1})));
  const auto g = tape.gradient(y, x).to_vector();  // d(x·x)/dx = 2x
  std::printf("y = %g, dy/dx = %g %g %g on %s\n", static_cast<double>(y.item()), static_cast<double>(g[0]),
              static_cast<double>(g[1]), static_cast<double>(g[2]), y.device().c_str());
  return g == std::vector<float>{2.0f, 4.0f, 6.0f} && y.item() == 14.0f ? 0 : 1;
}
