#pragma once
/// @file nccl.hpp
/// @brief Checked NCCL calls and a clique of communicators over distinct GPUs of this process
/// (ncclCommInitAll), for the strategies' all-reduce. Needs the devtensor::nccl component.
///
/// NCCL refuses two ranks on one GPU, so a clique takes distinct CUDA ordinals; logical GPUs that
/// share a physical GPU use a copy-based all-reduce instead (SPEC.md §5.2).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"

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

}  // namespace devtensor::backend::cuda
