// compile() takes an nn::Optimizer; a LossScaleOptimizer does not become one, because fit does
// not scale the loss yet (it would divide unscaled gradients by the scale), and the error says
// where it works. The control is the same line with its inner optimizer.
#include <devtensor/nn/optimizers.hpp>
void compile_it() {
  namespace optimizers = devtensor::nn::optimizers;
#ifdef DEVTENSOR_EXPECT_FAILURE
  const devtensor::nn::Optimizer optimizer = optimizers::LossScaleOptimizer{.inner_optimizer = optimizers::SGD{}};
#else
  const devtensor::nn::Optimizer optimizer = optimizers::SGD{};
#endif
  (void)optimizer;
}
int main() {}
