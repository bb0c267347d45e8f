#pragma once
/// @file row_chunks.hpp
/// @brief How a GPU reduction cuts long rows into chunks (Note [Two passes for long rows] in
/// ops/cuda/reduce.cuh): one definition for the reduction kernel and for fused chains that end in
/// a reduction (ops/fused_chain.hpp), so that both add the same elements in the same order.

#include <cstdint>

namespace devtensor::ops {

/// Threads per block of a GPU reduction.
inline constexpr std::int64_t kReduceThreads = 256;

/// Chunks per row of a GPU reduction of `rows` rows of `row` elements: one when there are enough
/// rows to fill a GPU, else up to 1024 chunks of at least 8 elements a thread.
constexpr std::int64_t reduction_chunks(std::int64_t rows, std::int64_t row) {
  constexpr std::int64_t per_chunk = kReduceThreads * 8;
  if (rows >= 1024 || row <= per_chunk) return 1;
  const std::int64_t chunks = (row + per_chunk - 1) / per_chunk;
  return chunks < 1024 ? chunks : 1024;
}

}  // namespace devtensor::ops
