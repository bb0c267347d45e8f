// data::Dataset: sources, repeat, batch (remainders), shuffle determinism, take, cardinality, errors;
// datasets of rows (Note [Datasets of rows]) batch as tensors per element do, copying rows at once;
// a Dataset's erased pipeline (AnyDataset) is the same pipeline with its dtypes as values; prefetch
// (Note [Prefetching]) keeps the elements, their order and errors.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../../../examples/cifar10.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_platform.hpp"

#include <unistd.h>

namespace dt = devtensor;
using dt::data::Dataset;

namespace {

/// The first component of every element, flattened, one vector per element.
template <class D>
std::vector<std::vector<float>> firsts(const D& ds) {
  std::vector<std::vector<float>> out;
  for (const auto& element : ds) out.push_back(std::get<0>(element).to_vector());
  return out;
}

Dataset<float> range_dataset(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return Dataset<float>::from_tensor_slices(dt::constant<float>(v, {n}));
}

std::vector<float> flat(const std::vector<std::vector<float>>& rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(dataset, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(from_tensors_is_one_element_of_tuples) {
  auto ds = Dataset<float, std::int32_t>::from_tensors(dt::constant<float>({1}), dt::constant<std::int32_t>({7, 8}));
  BOOST_TEST(ds.cardinality() == 1);
  int count = 0;
  for (const auto& [x, y] : ds) {
    BOOST_TEST(x.to_vector() == std::vector<float>({1}), boost::test_tools::per_element());
    BOOST_TEST(y.to_vector() == std::vector<std::int32_t>({7, 8}), boost::test_tools::per_element());
    ++count;
  }
  BOOST_TEST(count == 1);
}

BOOST_AUTO_TEST_CASE(from_tensor_slices_slices_the_first_dimension) {
  auto x = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto y = dt::constant<std::int64_t>({10, 20, 30}, {3});
  auto ds = Dataset<float, std::int64_t>::from_tensor_slices(x, y);
  BOOST_TEST(ds.cardinality() == 3);
  std::vector<std::int64_t> labels;
  for (const auto& [row, label] : ds) {
    BOOST_TEST(row.shape() == dt::Shape({2}));
    BOOST_TEST(label.shape() == dt::Shape({}));
    BOOST_TEST(row.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
    labels.push_back(label.item());
  }
  BOOST_TEST(labels == std::vector<std::int64_t>({10, 20, 30}), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((Dataset<float, std::int64_t>::from_tensor_slices(x, dt::constant<std::int64_t>({1, 2}))),
                             dt::InvalidArgumentError, "Dimensions 3 and 2 are not compatible");
  DEVTENSOR_CHECK_THROW_WITH(Dataset<float>::from_tensor_slices(dt::scalar<float>(1)), dt::InvalidArgumentError,
                             "rank >= 1");
  DEVTENSOR_CHECK_THROW_WITH(Dataset<float>::from_tensors(dt::Tensor<float>()), dt::InvalidArgumentError,
                             "undefined tensor");
  // A graph's tensor has no rows to slice yet: said at once, not when the dataset is iterated.
  dt::compat::v1::Graph g;
  auto scope = g.as_default();
  const auto symbolic = dt::constant<float>({1, 2}, {2}, {.name = "s"});
  BOOST_REQUIRE(symbolic.symbolic());
  DEVTENSOR_CHECK_THROW_WITH(Dataset<float>::from_tensor_slices(symbolic), dt::InvalidArgumentError,
                             "Tensor 's:0' is symbolic: it is an output of a graph node and has no values while the "
                             "graph is being built, so from_tensor_slices cannot read it");
}

BOOST_AUTO_TEST_CASE(repeat_counts_and_forever) {
  auto ds = range_dataset(3);
  BOOST_TEST(flat(firsts(ds.repeat(2))) == std::vector<float>({0, 1, 2, 0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(ds.repeat(2).cardinality() == 6);
  BOOST_TEST(ds.repeat().cardinality() == dt::data::INFINITE_CARDINALITY);
  BOOST_TEST(ds.repeat(0).cardinality() == 0);
  BOOST_TEST(firsts(ds.repeat(0)).empty());
  BOOST_TEST(flat(firsts(ds.repeat().take(7))) == std::vector<float>({0, 1, 2, 0, 1, 2, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(ds.repeat().take(7).cardinality() == 7);
  BOOST_TEST(firsts(range_dataset(0).repeat()).empty());  // an empty dataset repeated forever ends
  DEVTENSOR_CHECK_THROW_WITH((void)ds.repeat(-2), dt::InvalidArgumentError, "count must be >= -1");
}

BOOST_AUTO_TEST_CASE(batch_stacks_and_keeps_or_drops_the_remainder) {
  auto ds = range_dataset(7);
  auto batches = firsts(ds.batch(3));
  BOOST_TEST(batches.size() == 3u);
  BOOST_TEST(batches[2] == std::vector<float>({6}), boost::test_tools::per_element());
  BOOST_TEST(ds.batch(3).cardinality() == 3);
  BOOST_TEST(ds.batch(3, true).cardinality() == 2);
  BOOST_TEST(firsts(ds.batch(3, true)).size() == 2u);
  for (const auto& [b] : ds.batch(3, true)) BOOST_TEST(b.shape() == dt::Shape({3}));
  DEVTENSOR_CHECK_THROW_WITH((void)ds.batch(0), dt::InvalidArgumentError, "batch_size must be greater than zero");
}

BOOST_AUTO_TEST_CASE(the_seeds_pipeline_makes_ten_batches_of_ten) {
  auto ds =
      Dataset<float, float>::from_tensors(dt::constant<float>({1}), dt::constant<float>({1})).repeat(100).batch(10);
  BOOST_TEST(ds.cardinality() == 10);
  int n = 0;
  for (const auto& [x, y] : ds) {
    BOOST_TEST(x.shape() == dt::Shape({10, 1}));
    BOOST_TEST(y.shape() == dt::Shape({10, 1}));
    ++n;
  }
  BOOST_TEST(n == 10);
}

BOOST_AUTO_TEST_CASE(concatenate_and_batching_elements_of_different_shapes) {
  auto a = Dataset<float>::from_tensors(dt::constant<float>({1, 2}));
  auto b = Dataset<float>::from_tensors(dt::constant<float>({3, 4, 5}));
  auto both = a.concatenate(b);
  BOOST_TEST(both.cardinality() == 2);
  BOOST_TEST(flat(firsts(both)) == std::vector<float>({1, 2, 3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(a.repeat().concatenate(b).cardinality() == dt::data::INFINITE_CARDINALITY);
  DEVTENSOR_CHECK_THROW_WITH((void)*both.batch(2).begin(), dt::InvalidArgumentError,
                             "Cannot batch tensors with different shapes in component 0. First element had shape [2] "
                             "and element 1 had shape [3].");
}

BOOST_AUTO_TEST_CASE(shuffle_is_a_permutation_reproducible_with_a_seed) {
  auto ds = range_dataset(20);
  const auto once = flat(firsts(ds.shuffle(5, 42)));
  auto sorted = once;
  std::sort(sorted.begin(), sorted.end());
  BOOST_TEST(sorted == flat(firsts(ds)), boost::test_tools::per_element());
  BOOST_TEST(once != flat(firsts(ds)));  // 20 elements in order by chance: 1 in ~10^6 seeds
  BOOST_TEST(flat(firsts(ds.shuffle(5, 42))) == once, boost::test_tools::per_element());  // same seed, same order
  BOOST_TEST(flat(firsts(ds.shuffle(5, 43))) != once);

  // reshuffle_each_iteration: passes differ, but the sequence of passes is reproducible.
  const auto shuffled = ds.shuffle(20, 7);
  const auto pass1 = flat(firsts(shuffled));
  const auto pass2 = flat(firsts(shuffled));
  BOOST_TEST(pass1 != pass2);
  const auto again = ds.shuffle(20, 7);
  BOOST_TEST(flat(firsts(again)) == pass1, boost::test_tools::per_element());
  BOOST_TEST(flat(firsts(again)) == pass2, boost::test_tools::per_element());
  const auto fixed = ds.shuffle(20, 7, /*reshuffle_each_iteration=*/false);
  BOOST_TEST(flat(firsts(fixed)) == flat(firsts(fixed)), boost::test_tools::per_element());

  // A buffer of 1 keeps the order; repeat() over a shuffle reshuffles every repetition.
  BOOST_TEST(flat(firsts(ds.shuffle(1, 3))) == flat(firsts(ds)), boost::test_tools::per_element());
  const auto two_epochs = flat(firsts(ds.shuffle(20, 9).repeat(2)));
  BOOST_TEST(std::vector<float>(two_epochs.begin(), two_epochs.begin() + 20) !=
             std::vector<float>(two_epochs.begin() + 20, two_epochs.end()));
  DEVTENSOR_CHECK_THROW_WITH((void)ds.shuffle(0), dt::InvalidArgumentError, "buffer_size must be greater than zero");
}

BOOST_AUTO_TEST_CASE(take_limits_and_a_dataset_can_be_iterated_again) {
  auto ds = range_dataset(5).take(3);
  BOOST_TEST(ds.cardinality() == 3);
  BOOST_TEST(flat(firsts(ds)) == std::vector<float>({0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(flat(firsts(ds)) == std::vector<float>({0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(range_dataset(5).take(-1).cardinality() == 5);
  BOOST_TEST(range_dataset(5).take(9).cardinality() == 5);
  DEVTENSOR_CHECK_THROW_WITH((void)range_dataset(5).take(-3), dt::InvalidArgumentError, "count must be >= -1");
}

// A dataset of rows (from_tensor_slices and what take, repeat and shuffle make of it) batches
// straight from its sources; the same elements as tensors, made element by element (concatenate
// with nothing turns a dataset of rows into one of tensors), batch to the same values.
BOOST_AUTO_TEST_CASE(batches_of_rows_equal_batches_of_the_same_elements_as_tensors) {
  std::vector<float> features(6 * 23);
  for (std::size_t i = 0; i < features.size(); ++i) features[i] = static_cast<float>(i) * 0.5f;
  std::vector<std::int64_t> labels(23);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = 100 + static_cast<std::int64_t>(i);
  const auto rows = Dataset<float, std::int64_t>::from_tensor_slices(dt::constant<float>(features, {23, 2, 3}),
                                                                     dt::constant<std::int64_t>(labels, {23}));
  const auto tensors = rows.concatenate(rows.take(0));
  const auto batched = [](const auto& ds) {
    std::vector<std::pair<std::vector<float>, std::vector<std::int64_t>>> out;
    for (const auto& [x, y] : ds) {
      BOOST_TEST(x.rank() == 3);
      BOOST_TEST(x.shape()[0] == y.shape()[0]);
      BOOST_TEST(x.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
      out.emplace_back(x.to_vector(), y.to_vector());
    }
    return out;
  };
  const auto pipelines = {
      +[](const Dataset<float, std::int64_t>& ds) { return ds.batch(5); },
      +[](const Dataset<float, std::int64_t>& ds) { return ds.batch(5, true); },
      +[](const Dataset<float, std::int64_t>& ds) { return ds.shuffle(7, 42).batch(4); },
      +[](const Dataset<float, std::int64_t>& ds) { return ds.shuffle(23, 3).repeat(2).take(40).batch(9); },
      +[](const Dataset<float, std::int64_t>& ds) { return ds.take(11).repeat().take(30).batch(8, true); },
      +[](const Dataset<float, std::int64_t>& ds) { return ds.repeat(3).shuffle(10, 5).batch(16); },
  };
  for (const auto pipeline : pipelines) {
    const auto from_rows = batched(pipeline(rows));
    BOOST_TEST(!from_rows.empty());
    BOOST_TEST((from_rows == batched(pipeline(tensors))));
    BOOST_TEST(pipeline(rows).cardinality() == pipeline(tensors).cardinality());
  }
  // The first batch of five, in order.
  const auto first = batched(rows.batch(5)).front();
  BOOST_TEST(first.first == std::vector<float>(features.begin(), features.begin() + 30),
             boost::test_tools::per_element());
  BOOST_TEST(first.second == std::vector<std::int64_t>({100, 101, 102, 103, 104}), boost::test_tools::per_element());
  // Reshuffling passes too: the second pass of a shuffled dataset of rows is the tensors' second pass.
  const auto shuffled_rows = rows.shuffle(23, 8).batch(23);
  const auto shuffled_tensors = tensors.shuffle(23, 8).batch(23);
  (void)batched(shuffled_rows);
  (void)batched(shuffled_tensors);
  BOOST_TEST((batched(shuffled_rows) == batched(shuffled_tensors)));
}

BOOST_AUTO_TEST_CASE(a_batch_of_rows_is_one_allocation_per_component) {
  const auto x = dt::random_normal<float>({64, 8}, {.seed = 1});
  const auto y = dt::random_normal<float>({64}, {.seed = 2});
  const auto& cpu = x.device_info();
  const auto ds = Dataset<float, float>::from_tensor_slices(x, y).shuffle(64, 1).batch(16);
  const auto before = cpu.allocator->stats().num_allocs;
  int batches = 0;
  for (const auto& [xb, yb] : ds) {
    BOOST_TEST(xb.shape() == dt::Shape({16, 8}));
    ++batches;
  }
  BOOST_TEST(batches == 4);
  BOOST_TEST(cpu.allocator->stats().num_allocs - before == 8u);  // a tensor per row would be 136
}

BOOST_AUTO_TEST_CASE(an_erased_dataset_is_the_same_pipeline_with_dtypes_as_values) {
  auto x = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto y = dt::constant<std::int64_t>({10, 20, 30}, {3});
  const auto ds = Dataset<float, std::int64_t>::from_tensor_slices(x, y).batch(2);
  const dt::data::AnyDataset& erased = ds.erased();
  BOOST_TEST(erased.cardinality() == 2);
  BOOST_TEST(erased.batch_size().value_or(0) == 2);
  auto pass = erased.open();
  const auto first = pass();
  BOOST_REQUIRE(first.has_value());
  BOOST_REQUIRE(first->size() == 2u);
  BOOST_TEST(((*first)[0].dtype == dt::DType::DT_FLOAT));
  BOOST_TEST(((*first)[1].dtype == dt::DType::DT_INT64));
  BOOST_TEST((*first)[0].as<float>().to_vector() == std::vector<float>({1, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST((*first)[1].as<std::int64_t>().to_vector() == std::vector<std::int64_t>({10, 20}),
             boost::test_tools::per_element());
  const auto last = pass();
  BOOST_REQUIRE(last.has_value());
  BOOST_TEST((*last)[0].shape == dt::Shape({1, 2}));
  BOOST_TEST(!pass().has_value());
  // Transforming the erased dataset is transforming the typed one.
  BOOST_TEST(erased.repeat(3).cardinality() == ds.repeat(3).cardinality());
  DEVTENSOR_CHECK_THROW_WITH((void)erased.take(-2), dt::InvalidArgumentError, "count must be >= -1");
  // fit's adapter takes erased datasets too, and checks what Dataset's types said.
  const auto batches = dt::nn::data_adapter::Batches::from_dataset(erased, 1);
  DEVTENSOR_CHECK_THROW_WITH((void)batches.open()(), dt::InvalidArgumentError,
                             "fit and evaluate take datasets of float32 components, got int64 in component 1");
}

BOOST_AUTO_TEST_CASE(prefetch_gives_the_same_elements_in_the_same_order) {
  const auto x = dt::random_normal<float>({40, 3}, {.seed = 1});
  const auto y = dt::random_normal<float>({40}, {.seed = 2});
  // Each its own shuffle, so each numbers its own passes.
  const auto make = [&] { return Dataset<float, float>::from_tensor_slices(x, y).shuffle(16, 5).batch(6); };
  const auto ds = make();
  const auto ahead = make().prefetch(dt::data::AUTOTUNE);
  BOOST_TEST(ahead.cardinality() == ds.cardinality());
  BOOST_TEST(ahead.batch_size().value_or(0) == 6);
  // Two passes each: a reshuffling pass is numbered on the reader's thread, so the orders match.
  for (int pass = 0; pass < 2; ++pass) {
    BOOST_TEST(firsts(ahead) == firsts(ds));
  }
  BOOST_TEST(firsts(make().prefetch(0)) == firsts(make()));
  BOOST_TEST(firsts(make().prefetch(5).repeat(2)) == firsts(make().repeat(2)));
  // Elements, rather than rows, once prefetched: batching them is batching the tensors.
  BOOST_TEST(firsts(Dataset<float, float>::from_tensor_slices(x, y).prefetch(3).batch(7)) ==
             firsts(Dataset<float, float>::from_tensor_slices(x, y).batch(7)));
  DEVTENSOR_CHECK_THROW_WITH((void)make().prefetch(-2), dt::InvalidArgumentError,
                             "prefetch: buffer_size must be >= 0, or AUTOTUNE (-1) to let devtensor choose, got -2");
}

BOOST_AUTO_TEST_CASE(prefetch_runs_ahead_of_the_reader_by_its_buffer) {
  const auto x = dt::random_normal<float>({64, 8}, {.seed = 1});
  const auto& cpu = x.device_info();
  const auto ds = Dataset<float>::from_tensor_slices(x).batch(4).prefetch(3);
  const auto allocations = [&, before = cpu.allocator->stats().num_allocs] {
    return cpu.allocator->stats().num_allocs - before;
  };
  auto it = ds.begin();  // reads the first batch; the thread makes three more meanwhile, and stops
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (allocations() < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(allocations() == 4u);  // one batch read, three ahead: no more
  ++it;
  const auto rows = x.to_vector();
  BOOST_TEST(std::get<0>(*it).to_vector() == std::vector<float>(rows.begin() + 32, rows.begin() + 64),
             boost::test_tools::per_element());  // the second batch: rows 4 to 7
}

BOOST_AUTO_TEST_CASE(prefetch_passes_errors_in_their_place_and_stops_when_the_reader_does) {
  auto a = Dataset<float>::from_tensors(dt::constant<float>({1, 2}));
  auto b = Dataset<float>::from_tensors(dt::constant<float>({3, 4, 5}));
  const auto ds = a.repeat(3).concatenate(b).batch(2).prefetch(2);  // [a a], then [a b] fails
  auto it = ds.begin();
  BOOST_TEST(std::get<0>(*it).to_vector() == std::vector<float>({1, 2, 1, 2}), boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH(++it, dt::InvalidArgumentError, "Cannot batch tensors with different shapes");
  ++it;  // after the error the pass has ended
  BOOST_TEST((it == std::default_sentinel));
  // A reader that stops early: the forever-repeating pass's thread stops and is joined.
  int read = 0;
  for (const auto& [row] : a.repeat().prefetch(2)) {
    BOOST_TEST(row.to_vector() == std::vector<float>({1, 2}), boost::test_tools::per_element());
    if (++read == 3) break;
  }
  BOOST_TEST(read == 3);
}

BOOST_AUTO_TEST_CASE(fit_over_a_prefetched_dataset_trains_as_over_the_dataset) {
  namespace nn = dt::nn;
  const auto x = dt::random_normal<float>({64, 4}, {.seed = 1});
  const auto y = dt::random_normal<float>({64, 1}, {.seed = 2});
  auto make_model = [] {
    nn::Sequential model(
        {nn::Dense(1, {.input_dim = 4, .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}})});
    model.compile("mse", nn::optimizers::SGD{.learning_rate = 0.05});
    return model;
  };
  // Each its own shuffle: the same orders, pass by pass.
  const auto make_dataset = [&] { return Dataset<float, float>::from_tensor_slices(x, y).shuffle(64, 7).batch(16); };
  const auto ahead = make_model().fit(make_dataset().prefetch(dt::data::AUTOTUNE), {.epochs = 3, .verbose = 0});
  const auto plain = make_model().fit(make_dataset(), {.epochs = 3, .verbose = 0});
  BOOST_TEST(ahead.loss == plain.loss, boost::test_tools::per_element());
  // A batch the pipeline cannot make fails fit with the pipeline's error.
  auto broken =
      Dataset<float, float>::from_tensors(dt::constant<float>({1, 2, 3, 4}, {1, 4}), dt::constant<float>({1}, {1, 1}))
          .concatenate(Dataset<float, float>::from_tensors(dt::constant<float>({1, 2, 3, 4, 5}, {1, 5}),
                                                           dt::constant<float>({1}, {1, 1})))
          .batch(2)
          .prefetch(1);
  DEVTENSOR_CHECK_THROW_WITH((void)make_model().fit(broken, {.epochs = 1, .verbose = 0}), dt::InvalidArgumentError,
                             "Cannot batch tensors with different shapes");
}

BOOST_AUTO_TEST_CASE(elements_come_from_the_host_even_for_gpu_tensors) {
  dt::config::set_simulated_gpus(1);
  auto x = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(dt::test::contains(x.device(), "GPU:0"));
  for (const auto& [row] : Dataset<float>::from_tensor_slices(x).batch(2))
    BOOST_TEST(row.device() == "/job:localhost/replica:0/task:0/device:CPU:0");
}

// A pipeline that reads a GPU's memory is not prefetched: its copies would queue on the GPU's
// stream from a thread of their own, which a CUDA graph being captured there forbids.
BOOST_AUTO_TEST_CASE(a_pipeline_that_reads_device_memory_is_not_prefetched) {
  dt::test::FakeGpuPlatform platform(1);
  const auto x = [] {
    dt::DeviceScope gpu("/GPU:0");
    return dt::constant<float>({1, 2, 3, 4}, {2, 2});
  }();
  BOOST_REQUIRE(!x.host_memory());
  const auto on_host = [] {
    dt::DeviceScope cpu("/cpu:0");
    return dt::constant<float>({1, 2}, {2, 1});
  }();
  BOOST_TEST(!Dataset<float>::from_tensor_slices(on_host).erased().reads_device_memory());
  BOOST_TEST(Dataset<float>::from_tensor_slices(x).erased().reads_device_memory());
  BOOST_TEST(Dataset<float>::from_tensors(on_host)
                 .concatenate(Dataset<float>::from_tensors(x))
                 .erased()
                 .reads_device_memory());
  const auto& cpu = on_host.device_info();
  const auto before = cpu.allocator->stats().num_allocs;
  const auto ahead = Dataset<float>::from_tensor_slices(x).repeat().batch(1).prefetch(4);
  auto it = ahead.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(cpu.allocator->stats().num_allocs - before == 1u);  // the batch read, nothing ahead
}

// map (tf.data's Dataset.map): elements of new types from a function of the components, before or
// after batch, shuffled or prefetched; the function's errors reach the reader in the element's
// place; its ops run on the host CPU even where a GPU is the default.
BOOST_AUTO_TEST_CASE(map_makes_new_elements_from_a_function_of_the_components) {
  const auto x = dt::constant<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  const auto labels = dt::constant<std::int64_t>({0, 2, 1, 2});
  const auto slices = Dataset<float, std::int64_t>::from_tensor_slices(x, labels);
  // A pair: the features scaled, the labels one-hot.
  const auto mapped = slices.map([](const dt::Tensor<float>& features, const dt::Tensor<std::int64_t>& label) {
    return std::pair{dt::mul(features, dt::scalar<float>(0.5f)), dt::one_hot(label, 3)};
  });
  static_assert(std::is_same_v<decltype(mapped), const Dataset<float, float>>);
  BOOST_TEST(mapped.cardinality() == 4);
  std::vector<float> features, hot;
  for (const auto& [f, h] : mapped.batch(3)) {
    const auto fv = f.to_vector(), hv = h.to_vector();
    features.insert(features.end(), fv.begin(), fv.end());
    hot.insert(hot.end(), hv.begin(), hv.end());
  }
  BOOST_TEST(features == std::vector<float>({0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4}), boost::test_tools::per_element());
  BOOST_TEST(hot == std::vector<float>({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}), boost::test_tools::per_element());
  // One tensor, and a tuple of three, after batch: the batch size is no longer known statically.
  const auto sums = slices.batch(2).map(
      [](const dt::Tensor<float>& f, const dt::Tensor<std::int64_t>&) { return dt::reduce_sum(f, std::int64_t{1}); });
  static_assert(std::is_same_v<decltype(sums), const Dataset<float>>);
  BOOST_TEST(flat(firsts(sums)) == std::vector<float>({3, 7, 11, 15}), boost::test_tools::per_element());
  BOOST_TEST(!sums.batch_size().has_value());
  BOOST_TEST(slices.batch(2).batch_size().value_or(0) == 2);
  const auto three = slices.map([](const dt::Tensor<float>& f, const dt::Tensor<std::int64_t>& l) {
    return std::tuple{f, l, dt::argmax(f)};
  });
  static_assert(std::is_same_v<decltype(three), const Dataset<float, std::int64_t, std::int64_t>>);
  for (const auto& [f, l, best] : three) BOOST_TEST(best.item() == 1);
  // Shuffled and prefetched: the same elements as mapping the shuffled dataset by hand.
  std::vector<std::vector<float>> by_hand;
  for (const auto& [f, l] : slices.shuffle(4, 5)) by_hand.push_back(dt::mul(f, dt::scalar<float>(0.5f)).to_vector());
  const auto shuffled = firsts(slices.shuffle(4, 5)
                                   .map([](const dt::Tensor<float>& f, const dt::Tensor<std::int64_t>&) {
                                     return dt::mul(f, dt::scalar<float>(0.5f));
                                   })
                                   .prefetch(2));
  BOOST_TEST(flat(shuffled) == flat(by_hand), boost::test_tools::per_element());
  BOOST_TEST((flat(by_hand) != flat(firsts(mapped))));  // it did shuffle
  // Errors: the function's own, in the element's place (also through prefetch), and an undefined
  // tensor returned.
  const auto failing = slices.map([](const dt::Tensor<float>& f, const dt::Tensor<std::int64_t>& l) {
    if (l.item() == 1) throw dt::InvalidArgumentError("label 1 is not allowed here");
    return f;
  });
  for (const auto& ds : {failing, failing.prefetch(2)}) {
    auto it = ds.begin();
    ++it;  // labels 0, 2: fine
    DEVTENSOR_CHECK_THROW_WITH(++it, dt::InvalidArgumentError, "label 1 is not allowed here");
  }
  const auto undefined =
      slices.map([](const dt::Tensor<float>&, const dt::Tensor<std::int64_t>&) { return dt::Tensor<float>(); });
  DEVTENSOR_CHECK_THROW_WITH((void)undefined.begin(), dt::InvalidArgumentError,
                             "Dataset.map: the function returned an undefined tensor for component 0");
}

BOOST_AUTO_TEST_CASE(map_runs_its_function_on_the_host_cpu) {
  // A simulated GPU is the default device, but the function's ops run on the host CPU.
  dt::config::set_simulated_gpus(1);
  const auto x = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  BOOST_TEST(dt::test::contains(dt::mul(x, x).device(), "GPU:0"));
  const auto on_host =
      Dataset<float>::from_tensor_slices(x).map([](const dt::Tensor<float>& f) { return dt::mul(f, f); });
  for (const auto& [squared] : on_host) BOOST_TEST(dt::test::contains(squared.device(), "CPU:0"));
}

BOOST_AUTO_TEST_SUITE_END()

// Walkthrough 19's reader of CIFAR-10's binary format (examples/cifar10.hpp), on files made here in
// that format: records read back byte for byte, the tutorial's inputs (the centre 24x24, HWC,
// standardised per image), and the typed errors of files that are not whole CIFAR-10 records.
BOOST_AUTO_TEST_SUITE(cifar10_reader)

BOOST_AUTO_TEST_CASE(records_read_back_and_become_the_tutorials_inputs) {
  const auto dir = std::filesystem::temp_directory_path() / ("devtensor_cifar10_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  cifar10::Records records;
  for (std::int32_t r = 0; r < 3; ++r) {
    records.labels.push_back(r * 4);
    for (std::int64_t k = 0; k < cifar10::kImageBytes; ++k)
      records.images.push_back(static_cast<std::uint8_t>((k * 7 + r * 31) % 251));
  }
  const auto file = (dir / "batch.bin").string();
  cifar10::write_records(file, records);
  BOOST_TEST(std::filesystem::file_size(file) == 3u * 3073u);
  const auto back = cifar10::read_records(file);
  BOOST_TEST(back.labels == records.labels, boost::test_tools::per_element());
  BOOST_TEST(back.images == records.images, boost::test_tools::per_element());

  // Image 1's input: pixel (row 0, column 0, green) of the crop is stored at plane 1, row 4, column 4.
  const auto x = cifar10::inputs(back, 1, 1);
  BOOST_TEST_REQUIRE(x.size() == 24u * 24u * 3u);
  double sum = 0, squares = 0;
  for (const float v : x) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  BOOST_TEST(std::abs(sum / static_cast<double>(x.size())) < 1e-5);
  BOOST_TEST(std::abs(squares / static_cast<double>(x.size()) - 1.0) < 1e-4);
  const auto raw = [&](std::int64_t plane, std::int64_t row, std::int64_t col) {
    return static_cast<double>(
        records.images[static_cast<std::size_t>(cifar10::kImageBytes + (plane * 32 + row) * 32 + col)]);
  };
  // Standardisation is affine: the order of two pixels and their ratio of differences survive it.
  const double a = raw(1, 4, 4), b = raw(0, 4, 4), c = raw(2, 27, 27);
  BOOST_TEST(std::abs((x[1] - x[0]) / (x[24 * 24 * 3 - 1] - x[0]) - (a - b) / (c - b)) < 1e-5);
  BOOST_TEST(cifar10::labels(back, 2, 2) == (std::vector<std::int32_t>{8, 0}), boost::test_tools::per_element());

  std::ofstream(dir / "short.bin", std::ios::binary) << std::string(3072, '\1');
  DEVTENSOR_CHECK_THROW_WITH(cifar10::read_records((dir / "short.bin").string()), dt::DataLossError,
                             "3072 bytes is not a whole number of 3073-byte records");
  std::ofstream(dir / "label.bin", std::ios::binary) << std::string(1, '\12') << std::string(3072, '\0');
  DEVTENSOR_CHECK_THROW_WITH(cifar10::read_records((dir / "label.bin").string()), dt::DataLossError,
                             "record 0 has label 10, not 0-9");
  DEVTENSOR_CHECK_THROW_WITH(cifar10::read_records((dir / "missing.bin").string()), dt::NotFoundError, "cannot open");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
