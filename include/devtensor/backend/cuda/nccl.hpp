#pragma once
/// @file nccl.hpp
/// @brief Checked NCCL calls, a clique of communicators over distinct GPUs of this process
/// (ncclCommInitAll), and the all-reduce kernel NcclAllReduce runs (registered by including this
/// header, which devtensor.hpp does under the devtensor::nccl component). Needs that component.
///
/// NCCL refuses two ranks on one GPU, so a clique takes distinct CUDA ordinals; logical GPUs that
/// share a physical GPU use a copy-based all-reduce instead (SPEC.md §5.2).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/physical.hpp"

namespace devtensor::backend::cuda {

/// Throws when an NCCL call failed: "NCCL call <what> failed: <ncclGetErrorString> (<last error>)".
inline void check_nccl(ncclResult_t result, std::string_view what) {
  if (result == ncclSuccess) return;
  std::string message = "NCCL call " + std::string(what) + " failed: " + ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(nullptr); last && *last) message += std::string(" (") + last + ")";
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: throw InvalidArgumentError(message);
    case ncclSystemError:
    case ncclUnhandledCudaError: throw InternalError(message);
    default: throw InternalError(message);
  }
}

}  // namespace devtensor::backend::cuda

#define DEVTENSOR_NCCL_CHECK(call) ::devtensor::backend::cuda::check_nccl((call), #call)

namespace devtensor::backend::cuda {

/// One communicator per GPU of a single-process clique. Move-only; destroys its communicators.
class NcclClique {
 public:
  /// @throws InvalidArgumentError for an empty list or a GPU named twice.
  explicit NcclClique(std::vector<int> ordinals) : ordinals_(std::move(ordinals)) {
    if (ordinals_.empty()) throw InvalidArgumentError("An NCCL clique needs at least one GPU");
    for (std::size_t i = 0; i < ordinals_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (ordinals_[i] == ordinals_[j])
          throw InvalidArgumentError("GPU " + std::to_string(ordinals_[i]) +
                                     " appears twice in an NCCL clique; NCCL needs distinct GPUs (use "
                                     "HierarchicalCopyAllReduce or ReductionToOneDevice for logical GPUs "
                                     "that share a physical one)");
    comms_.resize(ordinals_.size(), nullptr);
    DEVTENSOR_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(comms_.size()), ordinals_.data()));
  }
  NcclClique(const NcclClique&) = delete;
  NcclClique& operator=(const NcclClique&) = delete;
  NcclClique(NcclClique&& other) noexcept
      : ordinals_(std::move(other.ordinals_)), comms_(std::move(other.comms_)) {}
  NcclClique& operator=(NcclClique&&) = delete;
  ~NcclClique() {
    for (ncclComm_t comm : comms_)
      if (comm)
        if (ncclResult_t r = ncclCommDestroy(comm); r != ncclSuccess)
          log(LogSeverity::error, std::string("ncclCommDestroy failed: ") + ncclGetErrorString(r));
  }

  [[nodiscard]] std::size_t size() const noexcept { return comms_.size(); }
  [[nodiscard]] const std::vector<int>& ordinals() const noexcept { return ordinals_; }

  /// In-place or out-of-place sum (or other op) of `count` elements across the clique: rank i
  /// reads send[i] and writes recv[i] on streams[i]. One grouped launch.
  void all_reduce(std::span<const void* const> send, std::span<void* const> recv, std::size_t count,
                  ncclDataType_t type, ncclRedOp_t op, std::span<const cudaStream_t> streams) const {
    if (send.size() != size() || recv.size() != size() || streams.size() != size())
      throw InvalidArgumentError("all_reduce needs one buffer pair and one stream per GPU of the clique (" +
                                 std::to_string(size()) + ")");
    DEVTENSOR_NCCL_CHECK(ncclGroupStart());
    ncclResult_t result = ncclSuccess;
    for (std::size_t i = 0; i < size() && result == ncclSuccess; ++i)
      result = ncclAllReduce(send[i], recv[i], count, type, op, comms_[i], streams[i]);
    const ncclResult_t end = ncclGroupEnd();
    check_nccl(result, "ncclAllReduce");
    check_nccl(end, "ncclGroupEnd");
  }

 private:
  std::vector<int> ordinals_;
  std::vector<ncclComm_t> comms_;
};

/// NCCL's type for a devtensor dtype name. @throws InvalidArgumentError for bool.
inline ncclDataType_t nccl_type(std::string_view dtype) {
  if (dtype == "DT_FLOAT") return ncclFloat32;
  if (dtype == "DT_DOUBLE") return ncclFloat64;
  if (dtype == "DT_INT32") return ncclInt32;
  if (dtype == "DT_INT64") return ncclInt64;
  throw InvalidArgumentError("NCCL all-reduce does not support " + std::string(dtype) +
                             "; reduce it with ReductionToOneDevice");
}

/// The registered kernel: one clique per set of GPUs, created on first use and kept for the
/// process (communicators are expensive to build, and destroying them while the CUDA runtime
/// unloads at exit is unsafe, so the cache is deliberately never destroyed). A clique's calls
/// are serialised: NCCL communicators are not thread-safe.
inline void nccl_all_reduce_sum(std::string_view dtype, std::size_t count, std::span<const void* const> send,
                                std::span<void* const> recv, std::span<const int> ordinals,
                                std::span<void* const> streams) {
  struct Entry {
    std::mutex mutex;
    NcclClique clique;
    explicit Entry(std::vector<int> gpus) : clique(std::move(gpus)) {}
  };
  static auto* const cache = new std::map<std::vector<int>, std::unique_ptr<Entry>>();
  static std::mutex cache_mutex;
  const ncclDataType_t type = nccl_type(dtype);
  std::vector<int> key(ordinals.begin(), ordinals.end());
  Entry* entry = nullptr;
  {
    std::lock_guard lock(cache_mutex);
    auto found = cache->find(key);
    if (found == cache->end())  // Entry throws for a GPU named twice: nothing is cached then
      found = cache->emplace(key, std::make_unique<Entry>(key)).first;
    entry = found->second.get();
  }
  std::vector<cudaStream_t> cuda_streams;
  for (void* s : streams) cuda_streams.push_back(static_cast<cudaStream_t>(s));
  std::lock_guard lock(entry->mutex);
  entry->clique.all_reduce(send, recv, count, type, ncclSum, cuda_streams);
}

inline constexpr ::devtensor::detail::GpuAllReduceKernel nccl_kernel{"NCCL", &nccl_all_reduce_sum};

/// Registers the NCCL kernel once per program, from whichever NCCL TU initialises first.
inline const bool nccl_kernel_registered = [] {
  ::devtensor::detail::register_gpu_all_reduce_kernel(&nccl_kernel);
  return true;
}();

}  // namespace devtensor::backend::cuda
