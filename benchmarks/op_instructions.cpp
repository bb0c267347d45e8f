// Instruction counts per op, for callgrind (benchmarks/RESULTS.md, issue 13): wall-clock medians
// on a shared VM cannot resolve a few instructions, callgrind's counts repeat exactly.
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null ./op_instructions 10000 1   (and 30000)
// (count(30000) - count(10000)) / 20000 is the cost of one op. Modes: 1 = add of two 1-element
// float tensors, 2 = int32 add of 1000 elements + reduce_sum, 0 = both.
#include <cstdlib>

#include "devtensor/devtensor.hpp"

namespace dt = devtensor;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int mode = argc > 2 ? std::atoi(argv[2]) : 0;
  const auto a = dt::constant<float>({1.0f});
  const auto b = dt::constant<float>({2.0f});
  const auto ia = dt::fill<std::int32_t>({1000}, 3);
  const auto ib = dt::fill<std::int32_t>({1000}, 4);
  float sink = 0;
  for (int i = 0; i < 1000; ++i) {  // warm: allocator regions, placement cache, thread pool
    const auto c = dt::add(a, b);
    const auto d = dt::add(ia, ib);
  }
  if (mode != 2)
    for (int i = 0; i < iters; ++i) sink += dt::add(a, b).data()[0];
  if (mode != 1)
    for (int i = 0; i < iters; ++i) sink += static_cast<float>(dt::reduce_sum(dt::add(ia, ib)).data()[0]);
  return sink > 0 ? 0 : 1;
}
