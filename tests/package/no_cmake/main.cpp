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
  // A float loss of double variables: the tape crosses a Cast, and the double gradients (which a
  // float-only program does not compile otherwise) come with it. d/dw sum((2w)^2) = 8w.
  const auto w = dt::Variable<double>(dt::constant<double>({0.5, -1.0}));
  dt::GradientTape mixed;
  const auto loss = dt::reduce_sum(dt::square(dt::cast<float>(dt::mul(w.value(), dt::scalar<double>(2.0)))));
  const auto gw = mixed.gradient(loss, w).to_vector();
  std::printf("mixed precision: dloss/dw = %g %g\n", gw[0], gw[1]);
  return g == std::vector<float>{2.0f, 4.0f, 6.0f} && y.item() == 14.0f && gw == std::vector<double>{4.0, -8.0} ? 0 : 1;
}
