// Thread safety: random operations from 4 threads never hand out overlapping memory and leave
// consistent stats; concurrent growth and release.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "devtensor/memory/bfc.hpp"
#include "devtensor_test.hpp"
#include "test_sub_allocator.hpp"

using namespace devtensor::memory;

namespace {
using devtensor::test::KiB;
using devtensor::test::MiB;

struct Allocation {
  unsigned char* p;
  std::size_t bytes;
  unsigned char tag;
};
}  // namespace

BOOST_AUTO_TEST_SUITE(bfc_threads)

// Each thread fills its allocations with its own tag and checks them before freeing: an overlap
// with any other live allocation would overwrite a tag. Workers only record; the main thread checks.
BOOST_AUTO_TEST_CASE(random_operations_from_four_threads) {
  auto sub = std::make_shared<devtensor::test::SubAllocatorLog>();
  BFCOptions options;
  options.name = "threads";
  options.limit = 48 * MiB;
  options.garbage_collection = true;
  options.retry_timeout = std::chrono::milliseconds(0);
  BFCAllocator<Growth, devtensor::test::TestSubAllocator> bfc(devtensor::test::TestSubAllocator(sub), options);

  constexpr int kThreads = 4;
  std::atomic<int> corrupted{0};
  std::atomic<int> allocated{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
      std::vector<Allocation> live;
      for (int step = 0; step < 4000; ++step) {
        if (live.empty() || rng() % 100 < 55) {
          const std::size_t bytes = 1 + rng() % (rng() % 20 == 0 ? 2 * MiB : 16 * KiB);
          auto* p = static_cast<unsigned char*>(bfc.try_allocate(bytes, std::size_t{1} << (rng() % 13)));
          if (!p) continue;
          const auto tag = static_cast<unsigned char>(t * 50 + step % 50 + 1);
          std::memset(p, tag, bytes);
          live.push_back({p, bytes, tag});
          ++allocated;
        } else {
          const std::size_t i = rng() % live.size();
          const auto& a = live[i];
          for (std::size_t k = 0; k < a.bytes; k += 97)
            if (a.p[k] != a.tag) ++corrupted;
          if (a.p[a.bytes - 1] != a.tag) ++corrupted;
          bfc.deallocate(a.p);
          live[i] = live.back();
          live.pop_back();
        }
        if (t == 0 && step % 1000 == 999) bfc.release_free_regions();
      }
      for (const auto& a : live) bfc.deallocate(a.p);
    });
  }
  for (auto& th : threads) th.join();
  BOOST_TEST(corrupted.load() == 0);
  BOOST_TEST(allocated.load() > 1000);
  BOOST_TEST(bfc.check_invariants() == "");
  const auto stats = bfc.stats();
  BOOST_TEST(stats.bytes_in_use == 0);
  BOOST_TEST(stats.num_allocs == allocated.load());
  BOOST_TEST(stats.pool_bytes <= static_cast<std::int64_t>(48 * MiB));
  bfc.release_free_regions();
  BOOST_TEST(sub->outstanding == 0u);
}

BOOST_AUTO_TEST_CASE(concurrent_growth_stays_within_the_limit) {
  BFCOptions options;
  options.name = "growth";
  options.limit = 64 * MiB;
  options.retry_timeout = std::chrono::milliseconds(0);
  BFCAllocator<Growth, HostSubAllocator> bfc(HostSubAllocator{}, options);
  std::vector<std::thread> threads;
  std::vector<std::vector<void*>> held(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      while (void* p = bfc.try_allocate(3 * MiB)) held[static_cast<std::size_t>(t)].push_back(p);
    });
  for (auto& th : threads) th.join();
  std::size_t count = 0;
  for (auto& h : held) count += h.size();
  const auto stats = bfc.stats();
  BOOST_TEST(stats.pool_bytes <= static_cast<std::int64_t>(64 * MiB));
  BOOST_TEST(count >= 16u);  // at least 48 MiB of 3 MiB blocks fit in 64 MiB of growing regions
  BOOST_TEST(bfc.check_invariants() == "");
  for (auto& h : held)
    for (void* p : h) bfc.deallocate(p);
  BOOST_TEST(bfc.stats().bytes_in_use == 0);
}

BOOST_AUTO_TEST_SUITE_END()
