// backend::cpu::WorkerThreads, the threads under the inter-op team and a MirroredStrategy's
// replicas: which workers a batch wakes and with which index, that their writes are the caller's
// after wait(), growing between batches, batches back to back (polling and sleeping), and an
// empty batch.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <functional>
#include <vector>

#include "devtensor/backend/cpu/worker_threads.hpp"

namespace cpu = devtensor::backend::cpu;

BOOST_AUTO_TEST_SUITE(worker_threads)

BOOST_AUTO_TEST_CASE(a_batch_wakes_its_first_workers_with_their_indices) {
  cpu::WorkerThreads threads(3);
  BOOST_TEST(threads.size() == 3);
  // Plain ints, one per index: wait() must order the workers' writes before the reads (TSan
  // checks it in CI's threads stage).
  std::vector<int> calls(6, 0);
  const std::function<void(int)> task = [&](int index) { ++calls[static_cast<std::size_t>(index)]; };
  threads.start(2, task, 1);  // workers 0 and 1, as indices 1 and 2 (the caller takes index 0)
  threads.wait();
  BOOST_TEST(calls == (std::vector<int>{0, 1, 1, 0, 0, 0}), boost::test_tools::per_element());
  threads.start(3, task, 3);
  threads.wait();
  BOOST_TEST(calls == (std::vector<int>{0, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_empty_batch_returns_at_once) {
  cpu::WorkerThreads threads(2);
  int calls = 0;
  const std::function<void(int)> task = [&](int) { ++calls; };
  threads.start(0, task);
  threads.wait();
  BOOST_TEST(calls == 0);
  cpu::WorkerThreads none(0);  // a pool of no threads starts and stops
  none.start(0, task);
  none.wait();
  BOOST_TEST(none.size() == 0);
}

BOOST_AUTO_TEST_CASE(a_pool_grows_between_batches) {
  cpu::WorkerThreads threads(0, {.spin = true});  // the inter-op team starts empty
  std::vector<int> calls(4, 0);
  const std::function<void(int)> task = [&](int index) { ++calls[static_cast<std::size_t>(index)]; };
  threads.grow(1);
  threads.start(1, task);
  threads.wait();
  threads.grow(3);
  threads.grow(2);  // never shrinks
  BOOST_TEST(threads.size() == 3);
  threads.start(3, task, 1);  // the new workers take indices 2 and 3
  threads.wait();
  BOOST_TEST(calls == (std::vector<int>{1, 1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(batches_run_back_to_back_polling_or_sleeping) {
  for (const bool spin : {false, true}) {
    BOOST_TEST_CONTEXT("spin " << spin) {
      cpu::WorkerThreads threads(2, {.spin = spin});
      std::vector<long> sums(2, 0);
      const std::function<void(int)> task = [&](int index) { sums[static_cast<std::size_t>(index)] += index + 1; };
      for (int batch = 0; batch < 2000; ++batch) {
        threads.start(2, task);
        threads.wait();
      }
      BOOST_TEST(sums[0] == 2000);
      BOOST_TEST(sums[1] == 4000);
    }
  }
}

BOOST_AUTO_TEST_CASE(spin_until_returns_what_it_saw) {
  int polls = 0;
  BOOST_TEST(cpu::spin_until([&] { return ++polls == 3; }));
  BOOST_TEST(polls == 3);
  BOOST_TEST(!cpu::spin_until([] { return false; }));  // gives up after kSpin
}

BOOST_AUTO_TEST_SUITE_END()
