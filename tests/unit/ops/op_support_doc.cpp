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

namespace dt = devtensor;

namespace {

template <class Op, class T>
std::string cell() {
  std::string s;
  if (dt::has_kernel_v<Op, dt::cpu_t, T>) s += "CPU";
  if (dt::cuda_build_has_kernel_v<Op, T>) s += s.empty() ? "GPU" : " GPU";
  return s.empty() ? "–" : s;
}

/// Which translation-unit flavours have the op's GPU kernel (config.hpp).
template <class Op>
std::string gpu_builds() {
  if constexpr (std::is_same_v<Op, dt::ops::VarHandleOp>) return "simulated GPUs only";
  const bool any = dt::cuda_build_has_kernel_v<Op, float> || dt::cuda_build_has_kernel_v<Op, double> ||
                   dt::cuda_build_has_kernel_v<Op, std::int32_t> || dt::cuda_build_has_kernel_v<Op, std::int64_t> ||
                   dt::cuda_build_has_kernel_v<Op, bool>;
  if (!any) return "–";
  return Op::gpu_kernel_kind == dt::ops::GpuKernelKind::library ? "nvcc, cudart" : "nvcc";
}

template <class Op>
std::string row() {
  return "| `" + std::string(Op::name) + "` | " + cell<Op, float>() + " | " + cell<Op, double>() + " | " +
         cell<Op, std::int32_t>() + " | " + cell<Op, std::int64_t>() + " | " + cell<Op, bool>() + " | " +
         gpu_builds<Op>() + " | " + (dt::has_gradient(Op::name) ? "yes" : "–") + " |\n";
}

template <class... Ops>
std::string rows() {
  return (row<Ops>() + ...);
}

std::string generate() {
  namespace o = dt::ops;
  std::string out =
      "# Op support\n\n"
      "Generated from the kernel tables in `include/devtensor/ops/op_types.hpp` by\n"
      "`tests/unit/ops/op_support_doc.cpp`; a test fails when this file is out of date.\n\n"
      "Which element types have a kernel on which device type. **CPU**: always compiled.\n"
      "**GPU**: a kernel in a full CUDA build (what simulated GPUs follow for placement). In a given\n"
      "translation unit a real-GPU kernel exists only where it is compiled, as the **GPU kernel in**\n"
      "column says: **nvcc**: hand-written CUDA kernels (`include/devtensor/ops/cuda/*.cuh`), in `.cu`\n"
      "files linking `devtensor::cuda`; **nvcc, cudart**: library calls (cuBLAS matmul, copies and\n"
      "views), also in host-compiled files linking `devtensor::cuda`. Elsewhere a real-GPU request\n"
      "falls back to the CPU, statically. Variables (VarHandleOp) are not placed on real GPUs yet.\n\n"
      "**Gradient**: GradientTape differentiates the op (float32 and float64; integer and bool\n"
      "tensors are never differentiated). Creation and random ops have no inputs to differentiate;\n"
      "GreaterEqual and Equal are piecewise constant and are not recorded.\n\n"
      "| op | float32 | float64 | int32 | int64 | bool | GPU kernel in | gradient |\n"
      "|---|---|---|---|---|---|---|---|\n";
  out += rows<o::EagerConst, o::Fill, o::Range, o::Add, o::Sub, o::Mul, o::RealDiv, o::FloorDiv, o::Maximum,
              o::Minimum, o::Neg, o::Abs, o::Square, o::Sqrt, o::Exp, o::Log, o::Relu, o::Sigmoid, o::Tanh,
              o::AddN, o::MatMul, o::Sum, o::Mean, o::Max, o::Reshape, o::Transpose, o::ConcatV2, o::Split,
              o::Slice, o::Identity, o::BroadcastTo, o::Pad, o::Cast, o::RandomUniform,
              o::RandomStandardNormal, o::ReluGrad, o::SigmoidGrad, o::TanhGrad, o::SqrtGrad,
              o::GreaterEqual, o::Equal, o::VarHandleOp>();
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
    std::cerr << argv[2] << " is out of date. Regenerate it with:\n  build/<preset>/tests/op_support_doc > "
              << argv[2] << "\n";
    return 1;
  }
  std::cout << doc;
  return 0;
}
