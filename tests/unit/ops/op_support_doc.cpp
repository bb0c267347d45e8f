// Generates docs/op_support.md from the ops' kernel tables, so the table users read cannot drift
// from the code. `op_support_doc` prints it; `op_support_doc --check FILE` fails when FILE differs.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>

#include <devtensor/devtensor.hpp>
#include <devtensor/ops/op_list.hpp>

namespace dt = devtensor;

namespace {

template <class Op, class T>
std::string cell() {
  std::string s;
  if (dt::has_kernel_v<Op, dt::cpu_t, T>) s += "CPU";
  if (dt::has_kernel_v<Op, dt::gpu_t, T>) s += s.empty() ? "GPU" : " GPU";
  return s.empty() ? "–" : s;
}

/// Where a real GPU's body comes from.
template <class Op>
std::string gpu_body() {
  const bool any = dt::has_kernel_v<Op, dt::gpu_t, float> || dt::has_kernel_v<Op, dt::gpu_t, double> ||
                   dt::has_kernel_v<Op, dt::gpu_t, std::int32_t> || dt::has_kernel_v<Op, dt::gpu_t, std::int64_t> ||
                   dt::has_kernel_v<Op, dt::gpu_t, bool> || dt::has_kernel_v<Op, dt::gpu_t, dt::float16> ||
                   dt::has_kernel_v<Op, dt::gpu_t, dt::bfloat16>;
  if (!any) return "–";
  if constexpr (dt::kernel_detail::declares_body<Op, float>) return "devtensor::cuda";
  return "copies (no kernel)";
}

template <class Op>
std::string row() {
  return "| `" + std::string(Op::name) + "` | " + cell<Op, float>() + " | " + cell<Op, double>() + " | " +
         cell<Op, std::int32_t>() + " | " + cell<Op, std::int64_t>() + " | " + cell<Op, bool>() + " | " +
         cell<Op, dt::float16>() + " | " + cell<Op, dt::bfloat16>() + " | " + gpu_body<Op>() + " | " +
         (dt::autodiff_detail::has_gradient_v<Op> ? "yes" : "–") + " |\n";
}

std::string generate() {
  std::string out =
      "# Op support\n\n"
      "Generated from the op definitions (`include/devtensor/ops/`, listed in `ops/op_list.hpp`)\n"
      "by `tests/unit/ops/op_support_doc.cpp`; a test fails when this file is out of date.\n\n"
      "Which element types have a kernel on which device type. **CPU**: always compiled, inline.\n"
      "**GPU**: the op declares a GPU kernel (simulated GPUs follow this, running the CPU body).\n"
      "**GPU body**: where a real GPU's body comes from: **devtensor::cuda**: compiled once per\n"
      "program in `src/devtensor_cuda.cu`, which the `devtensor::cuda` component adds to the build,\n"
      "and found through the kernel registry from every translation unit, `.cpp` or `.cu`; a program\n"
      "without it places these ops like ops without a GPU kernel (soft placement, one log line).\n"
      "**copies**: constants, reshape and identity need no kernel. Variables (VarHandleOp) live on\n"
      "real GPUs when the program contains that body; the ResourceApply* rows are the optimizers'\n"
      "fused updates (SGD, momentum, Adam), run on the variable's device.\n\n"
      "**Gradient**: GradientTape differentiates the op (float32 and float64; integer and bool\n"
      "tensors are never differentiated). Creation and random ops have no inputs to differentiate;\n"
      "GreaterEqual and Equal are piecewise constant and are not recorded.\n\n"
      "**float16, bfloat16**: computed in float32 and rounded once per element (Note [Sixteen-bit\n"
      "floats] in `core/half.hpp`); sums and MatMul accumulate in float32. Not differentiated yet.\n\n"
      "| op | float32 | float64 | int32 | int64 | bool | float16 | bfloat16 | GPU body | gradient |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  dt::ops::for_each_op(dt::ops::BuiltinOps{}, [&]<class Op>() { out += row<Op>(); });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string doc = generate();
  if (argc == 3 && std::string(argv[1]) == "--check") {
    std::ifstream in(argv[2]);
    std::stringstream current;
    current << in.rdbuf();
    if (current.str() == doc) return 0;
    std::cerr << argv[2] << " is out of date. Regenerate it with:\n  build/<preset>/tests/op_support_doc > " << argv[2]
              << "\n";
    return 1;
  }
  std::cout << doc;
  return 0;
}
