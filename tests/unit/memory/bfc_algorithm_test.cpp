// Tests that pin the BFC algorithm: rounding and bins, best fit, split rules,
// coalescing, region growth, preallocation, limits, alignment, stats, release, backpedal, OOM.
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "devtensor/memory/bfc.hpp"
#include "devtensor_test.hpp"
#include "test_sub_allocator.hpp"

using namespace devtensor::memory;
using devtensor::test::SubAllocatorLog;
using devtensor::test::TestSubAllocator;

namespace {
using devtensor::test::KiB;
using devtensor::test::MiB;

template <class Policy = Growth>
struct Fixture {
  devtensor::test::LogCapture quiet;  // OOM tests log dumps; keep them out of the test output
  std::shared_ptr<SubAllocatorLog> sub = std::make_shared<SubAllocatorLog>();
  BFCAllocator<Policy, TestSubAllocator> bfc;
  explicit Fixture(std::size_t limit, BFCOptions options = {})
      : bfc(TestSubAllocator(sub), [&] {
          options.name = "test_bfc";
          options.limit = limit;
          options.retry_timeout = std::chrono::milliseconds(0);
          return options;
        }()) {}
  void check() { BOOST_TEST(bfc.check_invariants() == ""); }
};

char* as_char(void* p) { return static_cast<char*>(p); }
}  // namespace

BOOST_AUTO_TEST_SUITE(bfc_algorithm)

BOOST_AUTO_TEST_CASE(rounding_and_bins) {
  BOOST_TEST(rounded_bytes(0) == 256u);
  BOOST_TEST(rounded_bytes(1) == 256u);
  BOOST_TEST(rounded_bytes(256) == 256u);
  BOOST_TEST(rounded_bytes(257) == 512u);
  BOOST_TEST(rounded_bytes(1000) == 1024u);
  BOOST_TEST(rounded_bytes(SIZE_MAX) == 0u);  // overflow is reported, not wrapped
  BOOST_TEST(bin_for_size(0) == 0);
  BOOST_TEST(bin_for_size(256) == 0);
  BOOST_TEST(bin_for_size(511) == 0);
  BOOST_TEST(bin_for_size(512) == 1);
  BOOST_TEST(bin_for_size(1023) == 1);
  BOOST_TEST(bin_for_size(1024) == 2);
  BOOST_TEST(bin_for_size(128 * MiB) == 19);
  BOOST_TEST(bin_for_size(256 * MiB) == 20);
  BOOST_TEST(bin_for_size(SIZE_MAX / 2) == 20);
  BOOST_TEST(bin_size(0) == 256u);
  BOOST_TEST(bin_size(20) == 256 * MiB);
  BOOST_TEST(Preallocate::initial_region_bytes(100 * MiB + 1) == 100 * MiB + 256);
  BOOST_TEST(Growth::initial_region_bytes(100 * MiB) == 2 * MiB);
  BOOST_TEST(Growth::initial_region_bytes(1000) == 1024u);
}

BOOST_AUTO_TEST_CASE(human_readable_numbers) {
  BOOST_TEST(human_readable_bytes(0) == "0B");
  BOOST_TEST(human_readable_bytes(1023) == "1023B");
  BOOST_TEST(human_readable_bytes(1024) == "1.0KiB");
  BOOST_TEST(human_readable_bytes(1536) == "1.5KiB");
  BOOST_TEST(human_readable_bytes(1024 * 1024 - 1) == "1024.0KiB");
  BOOST_TEST(human_readable_bytes(1024 * 1024) == "1.00MiB");
  BOOST_TEST(human_readable_bytes(3 * 512 * 1024 * 1024LL) == "1.50GiB");
  BOOST_TEST(human_readable_bytes(-2048) == "-2.0KiB");
}

BOOST_AUTO_TEST_CASE(construction_allocates_nothing) {
  Fixture<Preallocate> f(64 * MiB);
  BOOST_TEST(f.bfc.region_count() == 0u);
  BOOST_TEST(f.sub->requests.empty());
  BOOST_TEST(f.bfc.stats().pool_bytes == 0);
  BOOST_TEST(f.bfc.stats().bytes_limit == static_cast<std::int64_t>(64 * MiB));
  BOOST_TEST(f.bfc.occupancy_map() == "<allocator contains no memory>");
}

BOOST_AUTO_TEST_CASE(zero_bytes_and_oversized) {
  Fixture<> f(8 * MiB);
  BOOST_TEST(f.bfc.allocate(0) == nullptr);
  BOOST_TEST(f.bfc.try_allocate(0) == nullptr);
  BOOST_TEST(f.bfc.stats().num_allocs == 0);
  BOOST_TEST(f.bfc.try_allocate(8 * MiB + 1) == nullptr);
  BOOST_TEST(f.bfc.try_allocate(SIZE_MAX) == nullptr);
  BOOST_TEST(f.bfc.try_allocate(SIZE_MAX - 100) == nullptr);
  DEVTENSOR_CHECK_THROW_WITH(f.bfc.allocate(9 * MiB), devtensor::ResourceExhaustedError,
                             "The request alone exceeds the limit of 8.00MiB");
  BOOST_CHECK_THROW(f.bfc.allocate(SIZE_MAX), devtensor::ResourceExhaustedError);
  f.check();
}

BOOST_AUTO_TEST_CASE(requested_versus_allocated) {
  Fixture<> f(8 * MiB);
  void* p = f.bfc.allocate(10);
  BOOST_TEST(f.bfc.requested_size(p) == 10u);
  BOOST_TEST(f.bfc.allocated_size(p) == 256u);
  BOOST_TEST(f.bfc.stats().bytes_in_use == 256);  // chunk sizes, not requested sizes
  BOOST_CHECK_THROW((void)f.bfc.requested_size(as_char(p) + 256), devtensor::InvalidArgumentError);
  f.bfc.deallocate(p);
  BOOST_CHECK_THROW((void)f.bfc.allocated_size(p), devtensor::InvalidArgumentError);
  f.bfc.deallocate(nullptr);  // no-op
  f.check();
}

BOOST_AUTO_TEST_CASE(best_fit_by_size_then_address) {
  // One 2 MiB region: carve free holes of 1 KiB, 4 KiB, 2 KiB and 1 KiB separated by in-use chunks.
  Fixture<> f(2 * MiB);
  void* a = f.bfc.allocate(1 * KiB);
  void* s1 = f.bfc.allocate(256);
  void* c = f.bfc.allocate(4 * KiB);
  void* s2 = f.bfc.allocate(256);
  void* e = f.bfc.allocate(2 * KiB);
  void* s3 = f.bfc.allocate(256);
  void* g = f.bfc.allocate(1 * KiB);
  void* s4 = f.bfc.allocate(256);
  for (void* p : {a, c, e, g}) f.bfc.deallocate(p);
  f.check();
  // 1.5 KiB (1536): the 2 KiB hole is the smallest that fits; 2048 < 2 x 1536 so it is not split.
  void* x = f.bfc.allocate(1536);
  BOOST_TEST(x == e);
  BOOST_TEST(f.bfc.allocated_size(x) == 2 * KiB);
  // 1 KiB: two holes of exactly 1 KiB; the lower address wins.
  void* y = f.bfc.allocate(1000);
  BOOST_TEST(y == std::min(a, g));
  BOOST_TEST(f.bfc.allocated_size(y) == 1 * KiB);
  // 3 KiB: the 4 KiB hole; 4096 < 6144, slack 1 KiB < 128 MiB: no split.
  void* z = f.bfc.allocate(3 * KiB);
  BOOST_TEST(z == c);
  BOOST_TEST(f.bfc.allocated_size(z) == 4 * KiB);
  BOOST_TEST(f.bfc.requested_size(z) == 3 * KiB);
  for (void* p : {s1, s2, s3, s4, x, y, z}) f.bfc.deallocate(p);
  f.check();
}

BOOST_AUTO_TEST_CASE(split_rules) {
  {
    Fixture<> f(2 * MiB);
    void* big = f.bfc.allocate(4 * KiB);
    void* guard = f.bfc.allocate(256);
    f.bfc.deallocate(big);
    void* p = f.bfc.allocate(1 * KiB);  // 4096 >= 2 x 1024: split
    BOOST_TEST(p == big);
    BOOST_TEST(f.bfc.allocated_size(p) == 1 * KiB);
    void* q = f.bfc.allocate(3 * KiB);  // the 3 KiB tail fits exactly, right after p
    BOOST_TEST(as_char(q) == as_char(p) + 1 * KiB);
    f.bfc.deallocate(p);
    f.bfc.deallocate(q);
    f.bfc.deallocate(guard);
    f.check();
  }
  {
    // fragmentation_fraction: split once the slack reaches fraction x limit (here 1 KiB).
    BFCOptions options;
    options.fragmentation_fraction = 1.0 / 2048;
    Fixture<> f(2 * MiB, options);
    void* big = f.bfc.allocate(4 * KiB);
    void* guard = f.bfc.allocate(256);
    f.bfc.deallocate(big);
    void* p = f.bfc.allocate(3 * KiB);  // slack 1 KiB >= 1 KiB: split
    BOOST_TEST(f.bfc.allocated_size(p) == 3 * KiB);
    f.bfc.deallocate(p);
    f.bfc.deallocate(guard);
    f.check();
  }
}

BOOST_AUTO_TEST_CASE(coalescing_with_both_neighbours) {
  Fixture<> f(2 * MiB);
  void* a = f.bfc.allocate(1 * KiB);
  void* b = f.bfc.allocate(1 * KiB);
  void* c = f.bfc.allocate(1 * KiB);
  void* d = f.bfc.allocate(1 * KiB);  // keeps the tail apart
  f.bfc.deallocate(a);
  f.bfc.deallocate(c);
  f.check();
  f.bfc.deallocate(b);  // merges with a (before) and c (after)
  f.check();
  void* abc = f.bfc.allocate(3 * KiB);
  BOOST_TEST(abc == a);  // freeing returns the lowest address again
  BOOST_TEST(f.bfc.allocated_size(abc) == 3 * KiB);
  f.bfc.deallocate(abc);
  f.bfc.deallocate(d);
  f.check();
  // Everything free: one chunk covers the whole region again.
  void* all = f.bfc.allocate(2 * MiB);
  BOOST_TEST(all == a);
  f.bfc.deallocate(all);
}

BOOST_AUTO_TEST_CASE(growth_sequence_of_regions) {
  Fixture<Growth> f(64 * MiB);
  void* p1 = f.bfc.allocate(1 * KiB);  // first region: 2 MiB; next: 4 MiB
  BOOST_TEST(f.bfc.current_region_allocation_bytes() == 4 * MiB);
  void* p2 = f.bfc.allocate(3 * MiB);   // 3 MiB fits in 4 MiB; next: 8 MiB
  void* p3 = f.bfc.allocate(10 * MiB);  // 10 MiB > 8 MiB: doubled to 16 MiB, not doubled again
  BOOST_TEST(f.bfc.current_region_allocation_bytes() == 16 * MiB);
  BOOST_TEST(f.sub->successes == (std::vector<std::size_t>{2 * MiB, 4 * MiB, 16 * MiB}),
             boost::test_tools::per_element());
  void* p4 = f.bfc.allocate(30 * MiB);  // > 16 MiB: 32 MiB (42 MiB are left)
  BOOST_TEST(f.sub->successes.back() == 32 * MiB);
  // 64 - 54 = 10 MiB left: the next region (32 MiB by doubling) is capped by the limit.
  void* p5 = f.bfc.allocate(9 * MiB);
  BOOST_TEST(f.sub->successes.back() == 10 * MiB);
  BOOST_TEST(f.bfc.stats().pool_bytes == static_cast<std::int64_t>(64 * MiB));
  BOOST_TEST(f.bfc.try_allocate(7 * MiB) == nullptr);  // largest free chunk 6 MiB, limit reached
  for (void* p : {p1, p2, p3, p4, p5}) f.bfc.deallocate(p);
  f.check();
}

BOOST_AUTO_TEST_CASE(preallocate_never_creates_a_second_region) {
  Fixture<Preallocate> f(8 * MiB);
  std::vector<void*> held;
  while (void* p = f.bfc.try_allocate(300 * KiB)) held.push_back(p);
  BOOST_TEST(f.bfc.region_count() == 1u);
  BOOST_TEST(f.sub->successes == std::vector<std::size_t>{8 * MiB}, boost::test_tools::per_element());
  BOOST_TEST(f.bfc.stats().pool_bytes == static_cast<std::int64_t>(8 * MiB));
  BOOST_TEST(held.size() == (8 * MiB) / (300 * KiB));
  for (void* p : held) f.bfc.deallocate(p);
  f.check();
}

BOOST_AUTO_TEST_CASE(alignment) {
  Fixture<> f(4 * MiB);
  std::vector<void*> held;
  for (std::size_t align : {1u, 64u, 256u, 512u, 1024u, 2048u, 4096u}) {
    for (int i = 0; i < 5; ++i) {
      void* p = f.bfc.allocate(100 + 300 * static_cast<std::size_t>(i), align);
      BOOST_TEST(reinterpret_cast<std::uintptr_t>(p) % std::max<std::size_t>(align, 256) == 0u);
      held.push_back(p);
      f.check();
    }
  }
  for (void* p : held) f.bfc.deallocate(p);
  f.check();
  for (std::size_t bad : {0u, 3u, 8192u, 96u})
    DEVTENSOR_CHECK_THROW_WITH(f.bfc.allocate(64, bad), devtensor::InvalidArgumentError,
                               "alignment must be a power of two no larger than 4096");
  BOOST_TEST(f.bfc.try_allocate(64, 8192) == nullptr);
}

BOOST_AUTO_TEST_CASE(stats_and_clear_stats) {
  Fixture<> f(8 * MiB);
  void* a = f.bfc.allocate(1000);  // 1 KiB chunk
  void* b = f.bfc.allocate(5 * KiB);
  auto s = f.bfc.stats();
  BOOST_TEST(s.num_allocs == 2);
  BOOST_TEST(s.bytes_in_use == static_cast<std::int64_t>(6 * KiB));
  BOOST_TEST(s.peak_bytes_in_use == static_cast<std::int64_t>(6 * KiB));
  BOOST_TEST(s.largest_alloc_size == static_cast<std::int64_t>(5 * KiB));
  BOOST_TEST(s.pool_bytes == static_cast<std::int64_t>(2 * MiB));
  BOOST_TEST(s.largest_free_block_bytes == static_cast<std::int64_t>(2 * MiB - 6 * KiB));
  f.bfc.deallocate(b);
  s = f.bfc.stats();
  BOOST_TEST(s.bytes_in_use == static_cast<std::int64_t>(1 * KiB));
  BOOST_TEST(s.peak_bytes_in_use == static_cast<std::int64_t>(6 * KiB));  // freeing keeps the peak
  f.bfc.clear_stats();
  s = f.bfc.stats();
  BOOST_TEST(s.num_allocs == 0);
  BOOST_TEST(s.peak_bytes_in_use == static_cast<std::int64_t>(1 * KiB));
  BOOST_TEST(s.largest_alloc_size == 0);
  BOOST_TEST(s.pool_bytes == static_cast<std::int64_t>(2 * MiB));
  BOOST_TEST(s.peak_pool_bytes == static_cast<std::int64_t>(2 * MiB));
  f.bfc.deallocate(a);
}

BOOST_AUTO_TEST_CASE(fragmentation_metric) {
  Fixture<> f(2 * MiB);
  BOOST_TEST(f.bfc.fragmentation() == 0.0);
  void* a = f.bfc.allocate(512 * KiB);
  void* b = f.bfc.allocate(512 * KiB);
  void* c = f.bfc.allocate(512 * KiB);
  BOOST_TEST(f.bfc.fragmentation() == 0.0);  // one free block: 512 KiB at the end
  f.bfc.deallocate(b);                       // free: 512 KiB hole + 512 KiB tail = 1 MiB
  BOOST_TEST(f.bfc.fragmentation() == 0.5, boost::test_tools::tolerance(1e-12));
  f.bfc.deallocate(a);  // 1 MiB hole + 512 KiB tail
  BOOST_TEST(f.bfc.fragmentation() == (0.5 * MiB) / (1.5 * MiB), boost::test_tools::tolerance(1e-12));
  f.bfc.deallocate(c);
  BOOST_TEST(f.bfc.fragmentation() == 0.0);
}

BOOST_AUTO_TEST_CASE(release_of_fully_free_regions) {
  Fixture<Growth> f(64 * MiB);
  void* a = f.bfc.allocate(1 * MiB);  // region 2 MiB
  void* b = f.bfc.allocate(3 * MiB);  // region 4 MiB
  void* c = f.bfc.allocate(6 * MiB);  // region 8 MiB
  BOOST_TEST(f.bfc.region_count() == 3u);
  const auto peak = f.bfc.stats().peak_bytes_in_use;
  f.bfc.deallocate(a);
  f.bfc.deallocate(c);
  const std::size_t released = f.bfc.release_free_regions();
  BOOST_TEST(released == 10 * MiB);
  BOOST_TEST(f.bfc.region_count() == 1u);
  const auto s = f.bfc.stats();
  BOOST_TEST(s.pool_bytes == static_cast<std::int64_t>(4 * MiB));
  // b untouched; it holds its whole 4 MiB region (4 MiB < 2 x 3 MiB: not split).
  BOOST_TEST(s.bytes_in_use == static_cast<std::int64_t>(4 * MiB));
  BOOST_TEST(s.peak_bytes_in_use == peak);
  BOOST_TEST(s.bytes_limit == static_cast<std::int64_t>(64 * MiB));
  BOOST_TEST(f.sub->outstanding == 4 * MiB);
  BOOST_TEST(f.bfc.release_free_regions() == 0u);  // nothing else is fully free
  std::memset(b, 1, 3 * MiB);                      // still usable
  f.bfc.deallocate(b);
  BOOST_TEST(f.bfc.release_free_regions() == 4 * MiB);
  BOOST_TEST(f.sub->outstanding == 0u);
  f.check();
  void* again = f.bfc.allocate(1 * KiB);  // re-extends by the normal rules
  BOOST_TEST(again != nullptr);
  f.bfc.deallocate(again);
}

// Growth mode fragments the pool into regions that cannot serve one large request; releasing the
// free regions and growing again can.
BOOST_AUTO_TEST_CASE(growth_fragmentation_release_and_regrow) {
  Fixture<Growth> f(16 * MiB);
  void* a = f.bfc.allocate(1 * KiB);  // 2 MiB
  void* b = f.bfc.allocate(3 * MiB);  // 4 MiB
  void* c = f.bfc.allocate(7 * MiB);  // 8 MiB; pool 14 MiB of 16
  for (void* p : {a, b, c}) f.bfc.deallocate(p);
  BOOST_TEST(f.bfc.try_allocate(12 * MiB) == nullptr);  // 14 MiB free, but at most 8 MiB in one piece
  BOOST_TEST(f.bfc.release_free_regions() == 14 * MiB);
  void* big = f.bfc.allocate(12 * MiB);
  BOOST_TEST(big != nullptr);
  BOOST_TEST(f.bfc.region_count() == 1u);
  f.bfc.deallocate(big);
  f.check();
}

BOOST_AUTO_TEST_CASE(garbage_collection_does_it_automatically) {
  BFCOptions options;
  options.garbage_collection = true;
  Fixture<Growth> f(16 * MiB, options);
  devtensor::test::LogCapture log;  // after the fixture's own capture, so it sees the lines
  void* a = f.bfc.allocate(1 * KiB);
  void* b = f.bfc.allocate(3 * MiB);
  void* c = f.bfc.allocate(7 * MiB);
  void* keep = f.bfc.allocate(512 * KiB);  // in the 2 MiB region: that one must stay
  for (void* p : {a, b, c}) f.bfc.deallocate(p);
  void* big = f.bfc.allocate(13 * MiB);  // 16 - 2 = 14 MiB can be regrown once 4 + 8 go back
  BOOST_TEST(big != nullptr);
  BOOST_TEST(log.count("Garbage collection: deallocate free memory regions (i.e., allocations) so "
                       "that we can re-allocate a larger region to avoid OOM due to memory "
                       "fragmentation.") == 1u);
  BOOST_TEST(f.bfc.region_count() == 2u);
  f.bfc.deallocate(big);
  f.bfc.deallocate(keep);
  f.check();
}

BOOST_AUTO_TEST_CASE(backpedal_once_when_the_sub_allocator_fails) {
  Fixture<Preallocate> f(8 * MiB);
  f.sub->capacity = 5 * MiB;  // the device has less than the limit
  void* p = f.bfc.allocate(1 * KiB);
  BOOST_TEST_REQUIRE(p != nullptr);
  // 8 MiB, then x0.9 rounded to 256 B until it fits: 7.2, 6.48, 5.83, 5.24, 4.72 MiB.
  BOOST_TEST(f.sub->requests.size() == 6u);
  BOOST_TEST(f.sub->requests[0] == 8 * MiB);
  for (std::size_t i = 1; i < f.sub->requests.size(); ++i) {
    BOOST_TEST(f.sub->requests[i] % 256 == 0u);
    BOOST_TEST(f.sub->requests[i] <= f.sub->requests[i - 1] * 9 / 10);
  }
  BOOST_TEST(f.sub->successes.size() == 1u);
  BOOST_TEST(f.sub->successes[0] <= 5 * MiB);
  // Only backpedal once: a later failure of the sub-allocator gives up at once.
  void* filler = f.bfc.allocate(static_cast<std::size_t>(f.bfc.stats().largest_free_block_bytes));
  f.sub->fail_always = true;
  const auto before = f.sub->requests.size();
  BOOST_TEST(f.bfc.try_allocate(1 * MiB) == nullptr);  // 3.28 MiB of the limit are left
  BOOST_TEST(f.sub->requests.size() == before + 1);
  f.bfc.deallocate(filler);
  f.bfc.deallocate(p);
  f.check();
}

BOOST_AUTO_TEST_CASE(backpedal_terminates_with_a_sub_allocator_that_always_fails) {
  Fixture<Preallocate> f(8 * MiB);
  f.sub->fail_always = true;
  BOOST_TEST(f.bfc.try_allocate(1 * MiB) == nullptr);
  BOOST_TEST(f.sub->requests.size() == 20u);  // 8 MiB x 0.9^k for k = 0..19, then below 1 MiB
  BOOST_TEST(f.bfc.region_count() == 0u);
}

BOOST_AUTO_TEST_CASE(injected_failures_leave_the_allocator_consistent) {
  BFCOptions options;
  options.garbage_collection = true;
  Fixture<Growth> f(32 * MiB, options);
  f.sub->fail_probability = 0.3;
  std::mt19937 rng(42);
  std::vector<void*> live;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 100 < 60) {
      const std::size_t bytes = 1 + rng() % (rng() % 10 == 0 ? 6 * MiB : 64 * KiB);
      if (void* p = f.bfc.try_allocate(bytes, std::size_t{1} << (rng() % 13))) live.push_back(p);
    } else {
      const std::size_t i = rng() % live.size();
      f.bfc.deallocate(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 97 == 0) {
      const std::string broken = f.bfc.check_invariants();
      BOOST_TEST_REQUIRE(broken == "", "step " << step << ": " << broken);
    }
    if (step % 500 == 0) f.bfc.release_free_regions();
  }
  for (void* p : live) f.bfc.deallocate(p);
  f.check();
  BOOST_TEST(f.bfc.stats().bytes_in_use == 0);
  f.bfc.release_free_regions();
  BOOST_TEST(f.sub->outstanding == 0u);  // nothing leaked
  BOOST_TEST(f.bfc.region_count() == 0u);
}

BOOST_AUTO_TEST_CASE(oom_logs_and_error) {
  Fixture<Preallocate> f(8 * MiB);
  devtensor::test::LogCapture log;
  void* held = f.bfc.allocate(6 * MiB);
  try {
    (void)f.bfc.allocate(4 * MiB, 256, {.retry_on_failure = false, .op_name = "MatMul"});
    BOOST_FAIL("expected ResourceExhaustedError");
  } catch (const devtensor::ResourceExhaustedError& e) {
    const std::string m = e.what();
    BOOST_TEST(devtensor::test::contains(m, "ran out of memory trying to allocate 4.00MiB"));
    // 6 MiB took the whole 8 MiB region (8 < 2 x 6, slack < 128 MiB): in use counts chunk sizes.
    BOOST_TEST(devtensor::test::contains(m, "Allocator test_bfc: limit 8.00MiB, in use 8.00MiB"));
    BOOST_TEST(devtensor::test::contains(m, "reduce the batch size"));
  }
  BOOST_TEST(log.count("Allocator (test_bfc) ran out of memory trying to allocate 4.00MiB (rounded "
                       "to 4194304)requested by op MatMul") == 1u);
  BOOST_TEST(log.count("If the cause is memory fragmentation maybe the environment variable "
                       "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. ") == 1u);
  BOOST_TEST(log.count("Current allocation summary follows.") == 2u);
  BOOST_TEST(log.count("BFCAllocator dump for test_bfc") == 1u);
  f.bfc.deallocate(held);
}

BOOST_AUTO_TEST_CASE(oom_advice_names_fragmentation) {
  Fixture<Preallocate> f(4 * MiB);
  void* a = f.bfc.allocate(1 * MiB);
  void* b = f.bfc.allocate(1 * MiB);
  void* c = f.bfc.allocate(1 * MiB);
  void* d = f.bfc.allocate(1 * MiB);
  f.bfc.deallocate(a);
  f.bfc.deallocate(c);  // 2 MiB free in two 1 MiB holes
  DEVTENSOR_CHECK_THROW_WITH(f.bfc.allocate(2 * MiB, 256, {.retry_on_failure = false}),
                             devtensor::ResourceExhaustedError, "this is fragmentation");
  f.bfc.deallocate(b);
  f.bfc.deallocate(d);
}

BOOST_AUTO_TEST_CASE(try_allocate_failure_logs_at_most_ten_times) {
  Fixture<> f(1 * MiB);
  devtensor::test::LogCapture log;
  for (int i = 0; i < 15; ++i) BOOST_TEST(f.bfc.try_allocate(2 * MiB) == nullptr);
  BOOST_TEST(log.count("with freed_by_count=0. The caller indicates that this is not a failure, but "
                       "this may mean that there could be performance gains if more memory were "
                       "available.") <= 10u);
}

BOOST_AUTO_TEST_CASE(retry_waits_for_another_thread_to_free) {
  BFCOptions options;
  options.name = "retrying";
  options.limit = 4 * MiB;
  options.retry_timeout = std::chrono::milliseconds(5000);
  BFCAllocator<Preallocate, HostSubAllocator> bfc(HostSubAllocator{}, options);
  void* held = bfc.allocate(3 * MiB);
  std::thread freer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    bfc.deallocate(held);
  });
  const auto start = std::chrono::steady_clock::now();
  void* p = bfc.allocate(2 * MiB);  // waits until the other thread frees
  const auto waited = std::chrono::steady_clock::now() - start;
  freer.join();
  BOOST_TEST(p != nullptr);
  BOOST_TEST(waited >= std::chrono::milliseconds(90));
  BOOST_TEST(waited < std::chrono::milliseconds(4000));
  bfc.deallocate(p);
  // Without a free, it gives up after the timeout.
  options.retry_timeout = std::chrono::milliseconds(50);
  BFCAllocator<Preallocate, HostSubAllocator> impatient(HostSubAllocator{}, options);
  void* all = impatient.allocate(4 * MiB);
  BOOST_CHECK_THROW(impatient.allocate(1 * MiB), devtensor::ResourceExhaustedError);
  impatient.deallocate(all);
}

BOOST_AUTO_TEST_CASE(a_request_beyond_the_whole_limit_fails_at_once) {
  // Beyond TensorFlow: no amount of freeing makes 8 MiB fit under a 4 MiB limit, so the 10 s
  // retry is skipped; a request that could fit once memory is freed still waits (test above).
  devtensor::test::LogCapture quiet;
  BFCOptions options;
  options.name = "impatient_only_when_hopeless";
  options.limit = 4 * MiB;
  options.retry_timeout = std::chrono::milliseconds(10000);
  BFCAllocator<Growth, HostSubAllocator> bfc(HostSubAllocator{}, options);
  void* held = bfc.allocate(1 * MiB);
  for (std::size_t bytes : {8 * MiB, std::size_t{1} << 62, SIZE_MAX}) {
    const auto start = std::chrono::steady_clock::now();
    DEVTENSOR_CHECK_THROW_WITH(bfc.allocate(bytes, 256, {.retry_on_failure = true, .op_name = "Fill"}),
                               devtensor::ResourceExhaustedError, "The request alone exceeds the limit of 4.00MiB");
    BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count() <
               2000);
  }
  BOOST_TEST(bfc.check_invariants() == "");
  bfc.deallocate(held);
}

BOOST_AUTO_TEST_CASE(memory_dump_format) {
  Fixture<Growth> f(1 * MiB);
  void* a = f.bfc.allocate(512 * KiB);  // exactly half of the one 1 MiB region, fully requested
  void* b = f.bfc.allocate(100);
  const std::string dump = f.bfc.memory_dump(300);
  BOOST_TEST(devtensor::test::contains(dump, "BFCAllocator dump for test_bfc\n"));
  BOOST_TEST(devtensor::test::contains(dump,
                                       "Bin (256): \tTotal Chunks: 1, Chunks in use: 1. 256B "
                                       "allocated for chunks. 256B in use in bin. 100B "
                                       "client-requested in use in bin.\n"));
  BOOST_TEST(devtensor::test::contains(dump, "Bin (262144): \tTotal Chunks: 1, Chunks in use: 0."));
  BOOST_TEST(devtensor::test::contains(dump,
                                       "Bin (524288): \tTotal Chunks: 1, Chunks in use: 1. "
                                       "512.0KiB allocated for chunks."));
  BOOST_TEST(devtensor::test::contains(dump, "Bin for 512B was 512B, Chunk State: \n"));
  BOOST_TEST(devtensor::test::contains(dump, "Next region of size 1048576\n"));
  BOOST_TEST(devtensor::test::contains(dump, "InUse at "));
  BOOST_TEST(devtensor::test::contains(dump, "Free  at "));
  BOOST_TEST(devtensor::test::contains(dump, "     Summary of in-use Chunks by size: \n"));
  BOOST_TEST(devtensor::test::contains(dump, "1 Chunks of size 256 totalling 256B\n"));
  BOOST_TEST(devtensor::test::contains(dump, "1 Chunks of size 524288 totalling 512.0KiB\n"));
  BOOST_TEST(devtensor::test::contains(dump, "Sum Total of in-use chunks: 512.2KiB\n"));
  BOOST_TEST(devtensor::test::contains(dump,
                                       "total_region_allocated_bytes_: 1048576 memory_limit_: "
                                       "1048576 available bytes: 0 curr_region_allocation_bytes_: 2097152\n"));
  BOOST_TEST(devtensor::test::contains(dump, "Stats: \nLimit: "));
  BOOST_TEST(devtensor::test::contains(dump, " 1048576\nInUse: "));
  const std::string map = f.bfc.occupancy_map();
  BOOST_TEST(map.size() == 100u);
  BOOST_TEST(map.substr(0, 50) == std::string(50, '*'));
  BOOST_TEST(map[50] == '*');  // the 100 requested bytes of b
  BOOST_TEST(map.substr(51) == std::string(49, '_'));
  BOOST_TEST(devtensor::test::contains(dump, map));
  f.bfc.deallocate(a);
  f.bfc.deallocate(b);
}

BOOST_AUTO_TEST_CASE(memory_dump_file) {
  const auto dir = std::filesystem::temp_directory_path() / ("devtensor_dump_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    devtensor::test::ScopedEnv env("TF_BFC_MEMORY_DUMP", (dir / "dump").string());
    Fixture<> f(1 * MiB);
    BOOST_TEST(f.bfc.try_allocate(2 * MiB) == nullptr);
  }
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    BOOST_TEST(devtensor::test::contains(entry.path().filename().string(), "dump_test_bfc."));
  }
  BOOST_TEST(files == 1u);
  std::filesystem::remove_all(dir);
}

namespace {
// Runs `body` in a child process and returns its termination signal (0 if it exited).
template <class F>
int signal_of_child(F body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);
    devtensor::set_log_sink([](devtensor::LogSeverity, std::string_view) {});
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}
}  // namespace

BOOST_AUTO_TEST_CASE(freeing_a_foreign_pointer_aborts) {
  BOOST_TEST(signal_of_child([] {
               Fixture<> f(1 * MiB);
               void* p = f.bfc.allocate(256);
               int local = 0;
               f.bfc.deallocate(&local);
               (void)p;
             }) == SIGABRT);
  BOOST_TEST(signal_of_child([] {
               Fixture<> f(1 * MiB);
               void* p = f.bfc.allocate(256);
               f.bfc.deallocate(p);
               f.bfc.deallocate(p);  // double free
             }) == SIGABRT);
}

BOOST_AUTO_TEST_SUITE_END()
