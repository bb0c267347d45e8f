#pragma once
// The float32 GPU bodies of devtensor's ops, as host functions over the fake GPU platform's
// "device memory" (host memory): registered in the kernel registry for one test, they let a
// host-compiled program run the GPU code paths (placement on a real GPU, device-resident
// variables, the optimizers' fused updates, stream-ordered copies) without a GPU. Each op's GPU
// body is its own CPU body, so results equal a CPU run; the op list says which ops there are.
#include <atomic>
#include <cstdint>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/cpu/matmul.hpp"
#include "devtensor/ops/fused_chain.hpp"  // FusedChainProgram, FusedGemm, GpuFusedChain
#include "devtensor/ops/op_list.hpp"
#include "fake_gpu_platform.hpp"

namespace devtensor::test {
namespace fake_kernels {

using kernels::Device;

inline void assign(const Device&, float* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
/// Launches of each fused update, for tests that count them. A launch while the device's stream
/// is captured is recorded, with its arguments, for the graph's replays (fake_gpu_platform.hpp).
template <class Update>
inline std::atomic<std::int64_t> update_launches{0};
template <class Update>
void apply_update(const Device& device, const Update& update, std::int64_t n) {
  ++update_launches<Update>;
  const auto run = [update, n] {
    for (std::int64_t i = 0; i < n; ++i) update(i);
  };
  record_device_work(device.stream, run);
  run();
}

/// Fused elementwise chains (ops/fused_chain.hpp): the CUDA kernel's threads run one after another
/// on the host, through the same function. Blocks of 32 threads and half as many blocks as tiles
/// make every path of its indexing run: partial strips, lanes a block apart, the grid-stride loop.
inline std::atomic<std::int64_t> chain_launches{0};
template <class T>
void run_chain_threads(const ops::FusedChainProgram& program) {
  constexpr std::int64_t threads = 32;
  const std::int64_t tiles = ops::fused_chain::blocks_for<T>(program.n, threads, program.n + 1);
  const std::int64_t blocks = (tiles + 1) / 2;
  for (std::int64_t block = 0; block < blocks; ++block)
    for (std::int64_t thread = 0; thread < threads; ++thread)
      ops::fused_chain::run_thread<T>(program, block, thread, threads, blocks);
}
/// A chain reduction: each block's threads' sums added in thread order (the GPU adds them as a
/// tree, so the last bits may differ), then the chunks of each row, and the mean's division.
template <class T>
void run_reduction_blocks(const ops::FusedChainProgram& program) {
  namespace chain = ops::fused_chain;
  const std::int64_t rows = program.n / program.row;
  for (std::int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (std::int64_t chunk = 0; chunk < program.chunks; ++chunk) {
      double block_sum = 0;
      for (std::int64_t thread = 0; thread < ops::kReduceThreads; ++thread)
        block_sum += chain::reduce_thread<T>(program, row * program.chunks + chunk, thread, ops::kReduceThreads);
      if (program.chunks > 1) static_cast<double*>(program.partials)[row * program.chunks + chunk] = block_sum;
      sum += block_sum;
    }
    static_cast<T*>(program.output)[row] = chain::finish_row<T>(program, sum);
  }
}
inline void run_chain(const ops::FusedChainProgram& program, int, void*) {
  ++chain_launches;
  const bool reduces = program.row > 0;
  if (program.dtype == DType::DT_DOUBLE && reduces)
    run_reduction_blocks<double>(program);
  else if (program.dtype == DType::DT_DOUBLE)
    run_chain_threads<double>(program);
  else if (reduces)
    run_reduction_blocks<float>(program);
  else
    run_chain_threads<float>(program);
}
/// GEMMs with epilogues (Note [GEMM epilogues] in ops/fused_chain.hpp): the CPU GEMM that the fake
/// MatMul runs, then the bias add and the Relu by their ops' own functors, so results equal the
/// unfused graph's bit for bit. With `gemm_epilogues` false it has no algorithm for any problem,
/// as cuBLASLt may answer, and queues nothing.
inline std::atomic<std::int64_t> gemm_launches{0};
inline std::atomic<bool> gemm_epilogues{true};
inline bool run_gemm(const ops::FusedGemm& gemm, int, void*) {
  if (!gemm_epilogues || gemm.dtype != DType::DT_FLOAT) return false;
  ++gemm_launches;
  auto* out = static_cast<float*>(gemm.out);
  ops::cpu::gemm(gemm.transpose_a, gemm.transpose_b, gemm.m, gemm.n, gemm.k, static_cast<const float*>(gemm.a),
                 static_cast<const float*>(gemm.b), out);
  const auto* bias = static_cast<const float*>(gemm.bias);
  for (std::int64_t i = 0; i < gemm.m * gemm.n; ++i) {
    if (bias) out[i] = ops::Add{}(out[i], bias[i % gemm.n]);
    if (gemm.relu) out[i] = ops::Relu{}(out[i]);
  }
  return true;
}
inline constexpr ops::GpuFusedChain chain{"fake_gpu_kernels.hpp", &run_chain, &run_gemm};

}  // namespace fake_kernels

/// Registers the bodies above as the GPU kernels for float, and the chain kernel, for the lifetime
/// of the object.
class FakeGpuKernels {
 public:
  FakeGpuKernels() {
    namespace k = fake_kernels;
    ops::for_each_op(ops::BuiltinOps{}, [this]<class Op>() {
      if constexpr (ops::DataOp<Op> && has_kernel_v<Op, gpu_t, float> && has_kernel_v<Op, cpu_t, float>)
        add<Op>(&Op::template cpu<float>);
    });
    add<ops::VarHandleOp>(&k::assign);
    add<ops::ApplyGradientDescent>(&k::apply_update<ops::GradientDescentUpdate<float>>);
    add<ops::ApplyKerasMomentum>(&k::apply_update<ops::KerasMomentumUpdate<float>>);
    add<ops::ApplyAdam>(&k::apply_update<ops::AdamUpdate<float>>);
    add<ops::AdamStepSize>(&k::apply_update<ops::AdamStepSizeUpdate<float>>);
    add<ops::AccumulateWeighted>(&k::apply_update<ops::WeightedAccumulateUpdate<float>>);
    previous_chain_ = ops::register_gpu_fused_chain(&k::chain);
  }
  FakeGpuKernels(const FakeGpuKernels&) = delete;
  FakeGpuKernels& operator=(const FakeGpuKernels&) = delete;
  ~FakeGpuKernels() {
    for (auto& remove : removers_) remove();
    ops::register_gpu_fused_chain(previous_chain_);
  }

 private:
  std::vector<bool (*)()> removers_;
  const ops::GpuFusedChain* previous_chain_ = nullptr;

  template <class Op>
  void add(kernel_body_t<Op, float>* body) {
    if (register_kernel<Op, gpu_t, float>(body, "fake_gpu_kernels.hpp"))
      removers_.push_back(&unregister_kernel<Op, gpu_t, float>);
  }
};

}  // namespace devtensor::test
