// BFC allocator benchmarks, each beside its references in the same run:
//   random allocations (RMM's pattern: 73 % allocate, random frees, uniform sizes up to
//   64 KiB / 1 MiB / 16 MiB, live bytes capped at 1 GiB) vs glibc malloc/free and new[]/delete[];
//   a training-step replay (persistent weights, LIFO activations, varying batch) reporting
//   peak pool bytes / peak bytes in use; threaded allocate/free at 1 and 2 threads vs malloc.
// Memory is never touched: this measures the allocators, not page faults.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <devtensor/memory/bfc.hpp>

namespace mem = devtensor::memory;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kLiveCap = std::size_t{1} << 30;
constexpr int kOps = 20000;

struct Op {
  bool allocate;
  std::size_t bytes;   // allocate
  std::size_t victim;  // free: index into the live list, modulo its size
};

// One fixed sequence per maximum size, so every allocator replays exactly the same operations.
const std::vector<Op>& random_ops(std::size_t max_bytes) {
  static std::vector<std::pair<std::size_t, std::vector<Op>>> cache;
  for (auto& [m, ops] : cache)
    if (m == max_bytes) return ops;
  std::mt19937_64 rng(1234);
  std::vector<Op> ops;
  std::size_t live = 0;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < kOps; ++i) {
    const std::size_t bytes = 1 + rng() % max_bytes;
    const bool allocate = (rng() % 100 < 73 && live + bytes <= kLiveCap) || sizes.empty();
    if (allocate) {
      ops.push_back({true, bytes, 0});
      sizes.push_back(bytes);
      live += bytes;
    } else {
      const std::size_t victim = rng();
      const std::size_t index = victim % sizes.size();
      live -= sizes[index];
      sizes[index] = sizes.back();
      sizes.pop_back();
      ops.push_back({false, 0, victim});
    }
  }
  cache.emplace_back(max_bytes, std::move(ops));
  return cache.back().second;
}

template <class Alloc, class Free>
void replay(benchmark::State& state, Alloc&& alloc, Free&& free_fn) {
  const auto& ops = random_ops(static_cast<std::size_t>(state.range(0)));
  std::vector<void*> live;
  live.reserve(ops.size());
  for (auto _ : state) {
    for (const Op& op : ops) {
      if (op.allocate) {
        live.push_back(alloc(op.bytes));
      } else {
        const std::size_t index = op.victim % live.size();
        free_fn(live[index]);
        live[index] = live.back();
        live.pop_back();
      }
    }
    for (void* p : live) free_fn(p);
    live.clear();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(ops.size()));
}

mem::BFCOptions options(std::size_t limit) {
  mem::BFCOptions o;
  o.name = "bench";
  o.limit = limit;
  o.retry_timeout = std::chrono::milliseconds(0);
  return o;
}

}  // namespace

static void BM_RandomAllocations_BFC(benchmark::State& state) {
  mem::BFCAllocator<mem::Growth, mem::HostSubAllocator> bfc(mem::HostSubAllocator{}, options(std::size_t{8} << 30));
  replay(
      state, [&](std::size_t n) { return bfc.allocate(n); }, [&](void* p) { bfc.deallocate(p); });
  state.counters["pool_MiB"] = static_cast<double>(bfc.stats().peak_pool_bytes) / kMiB;
}
static void BM_RandomAllocations_Malloc(benchmark::State& state) {
  replay(
      state, [](std::size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); });
}
static void BM_RandomAllocations_NewDelete(benchmark::State& state) {
  replay(
      state, [](std::size_t n) { return static_cast<void*>(new char[n]); },
      [](void* p) { delete[] static_cast<char*>(p); });
}
BENCHMARK(BM_RandomAllocations_BFC)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomAllocations_Malloc)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomAllocations_NewDelete)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->Unit(benchmark::kMicrosecond);

// A training step: 12 persistent weight tensors, then per step a forward pass allocating one
// activation per layer (sizes scale with the batch), a backward pass freeing them in reverse
// while allocating and freeing gradients, and the batch varies from step to step.
static void BM_TrainingReplay_BFC(benchmark::State& state) {
  mem::BFCAllocator<mem::Growth, mem::HostSubAllocator> bfc(mem::HostSubAllocator{}, options(std::size_t{8} << 30));
  const std::size_t layers = 12;
  const std::size_t batches[] = {64, 48, 64, 32, 56, 64};
  std::vector<void*> weights;
  for (std::size_t l = 0; l < layers; ++l) weights.push_back(bfc.allocate((l % 3 + 1) * 256 * 1024));
  std::vector<void*> activations;
  for (auto _ : state) {
    for (std::size_t batch : batches) {
      for (std::size_t l = 0; l < layers; ++l) activations.push_back(bfc.allocate(batch * (l % 4 + 1) * 16 * 1024));
      for (std::size_t l = layers; l-- > 0;) {
        void* grad = bfc.allocate(batch * (l % 4 + 1) * 16 * 1024);
        void* weight_grad = bfc.allocate((l % 3 + 1) * 256 * 1024);
        bfc.deallocate(activations.back());
        activations.pop_back();
        bfc.deallocate(grad);
        bfc.deallocate(weight_grad);
      }
    }
  }
  for (void* w : weights) bfc.deallocate(w);
  const auto s = bfc.stats();
  state.counters["peak_pool_over_peak_in_use"] =
      static_cast<double>(s.peak_pool_bytes) / static_cast<double>(s.peak_bytes_in_use);
  state.counters["peak_in_use_MiB"] = static_cast<double>(s.peak_bytes_in_use) / kMiB;
}
BENCHMARK(BM_TrainingReplay_BFC)->Unit(benchmark::kMicrosecond);

// TensorFlow's threaded pattern: each thread allocates and frees random sizes up to 1 MiB.
static mem::BFCAllocator<mem::Growth, mem::HostSubAllocator>& shared_bfc() {
  static mem::BFCAllocator<mem::Growth, mem::HostSubAllocator> bfc(mem::HostSubAllocator{},
                                                                   options(std::size_t{8} << 30));
  return bfc;
}
template <class Alloc, class Free>
void threaded(benchmark::State& state, Alloc&& alloc, Free&& free_fn) {
  std::mt19937 rng(static_cast<unsigned>(state.thread_index()) + 1u);
  std::vector<void*> held(64, nullptr);
  for (auto _ : state) {
    auto& slot = held[rng() % held.size()];
    if (slot) free_fn(slot);
    slot = alloc(1 + rng() % (1 << 20));
  }
  for (void* p : held)
    if (p) free_fn(p);
  state.SetItemsProcessed(state.iterations());
}
static void BM_Threaded_BFC(benchmark::State& state) {
  auto& bfc = shared_bfc();
  threaded(
      state, [&](std::size_t n) { return bfc.allocate(n); }, [&](void* p) { bfc.deallocate(p); });
}
static void BM_Threaded_Malloc(benchmark::State& state) {
  threaded(
      state, [](std::size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); });
}
BENCHMARK(BM_Threaded_BFC)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_Threaded_Malloc)->Threads(1)->Threads(2)->UseRealTime();
