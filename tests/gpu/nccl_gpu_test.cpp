// NcclAllReduce on real GPUs: the kernel registered by backend/cuda/nccl.hpp (this TU links the
// devtensor::nccl component), cliques of one GPU (every GPU machine) and of two (when there are
// two), dtypes, packing, and the refusal of two logical GPUs on one physical GPU.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

static_assert(DEVTENSOR_WITH_NCCL);

namespace {

/// Replica r's value: base + r, as T, on GPU r.
template <class T>
ds::PerReplica<dt::Tensor<T>> on_gpus(int replicas, const std::vector<T>& base) {
  ds::PerReplica<dt::Tensor<T>> out;
  for (int r = 0; r < replicas; ++r) {
    std::vector<T> v = base;
    for (auto& x : v) x = static_cast<T>(x + static_cast<T>(r));
    dt::DeviceScope scope("/gpu:" + std::to_string(r));
    out.values.push_back(dt::constant<T>(v));
  }
  return out;
}

/// The expected sum over `replicas` of on_gpus' values.
template <class T>
std::vector<T> expected_sum(int replicas, const std::vector<T>& base) {
  std::vector<T> out(base.size(), T{0});
  for (int r = 0; r < replicas; ++r)
    for (std::size_t i = 0; i < base.size(); ++i) out[i] = static_cast<T>(out[i] + base[i] + static_cast<T>(r));
  return out;
}

ds::Destinations gpu_indices(int replicas) {
  std::vector<const dt::Device*> out;
  const auto& devices = dt::Context::global().devices();
  for (std::size_t i = 0; i < devices.size() && static_cast<int>(out.size()) < replicas; ++i)
    if (devices[i].is_gpu) out.push_back(&devices[i]);
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_nccl, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(the_kernel_is_registered_and_chosen_by_default) {
  BOOST_TEST(ds::NcclAllReduce::available());
  ds::MirroredStrategy strategy;                                                   // every GPU
  BOOST_TEST(strategy.cross_device_ops().chosen_name() == "CollectiveAllReduce");  // AUTO: NCCL here
}

BOOST_AUTO_TEST_CASE(sums_on_every_gpu_in_every_dtype) {
  const int replicas = static_cast<int>(dt::config::list_physical_devices("GPU").size() >= 2 ? 2 : 1);
  BOOST_TEST_MESSAGE("NCCL clique of " << replicas << " GPU(s)");
  const auto destinations = gpu_indices(replicas);
  const std::vector<float> f{1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  const auto floats = ds::NcclAllReduce{.num_packs = 0}.batch_reduce(ds::ReduceOp::SUM,
                                                                     std::vector{on_gpus(replicas, f)}, destinations);
  const std::vector<double> d{0.125, 1e10, -3.0};
  const auto doubles =
      ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::MEAN, std::vector{on_gpus(replicas, d)}, destinations);
  const std::vector<std::int32_t> i{1, 2, 3, 1 << 20};
  const auto ints =
      ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{on_gpus(replicas, i)}, destinations);
  const std::vector<std::int64_t> l{std::int64_t{1} << 40, -5};
  const auto longs =
      ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{on_gpus(replicas, l)}, destinations);
  auto mean_d = expected_sum(replicas, d);
  for (auto& x : mean_d) x /= replicas;
  for (int r = 0; r < replicas; ++r) {
    const auto k = static_cast<std::size_t>(r);
    BOOST_TEST(floats[0][k].device_info().platform_ordinal == r);
    BOOST_TEST(floats[0][k].to_vector() == expected_sum(replicas, f), boost::test_tools::per_element());
    BOOST_TEST(doubles[0][k].to_vector() == mean_d, boost::test_tools::per_element());
    BOOST_TEST(ints[0][k].to_vector() == expected_sum(replicas, i), boost::test_tools::per_element());
    BOOST_TEST(longs[0][k].to_vector() == expected_sum(replicas, l), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(packs_split_and_join_back_with_large_tensors) {
  const int replicas = static_cast<int>(dt::config::list_physical_devices("GPU").size() >= 2 ? 2 : 1);
  const auto destinations = gpu_indices(replicas);
  std::vector<float> big(1 << 20);
  for (std::size_t k = 0; k < big.size(); ++k) big[k] = static_cast<float>(k % 1000);
  const std::vector<float> small{1, 2, 3};
  const auto out = ds::NcclAllReduce{.num_packs = 3}.batch_reduce(
      ds::ReduceOp::SUM, std::vector{on_gpus(replicas, big), on_gpus(replicas, small)}, destinations);
  for (int r = 0; r < replicas; ++r) {
    const auto k = static_cast<std::size_t>(r);
    BOOST_TEST(out[0][k].to_vector() == expected_sum(replicas, big), boost::test_tools::per_element());
    BOOST_TEST(out[1][k].to_vector() == expected_sum(replicas, small), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(logical_gpus_sharing_a_gpu_are_refused_with_advice) {
  const auto gpu = dt::config::list_physical_devices("GPU")[0];
  dt::config::set_logical_device_configuration(gpu, {{.memory_limit_mb = 256}, {.memory_limit_mb = 256}});
  ds::MirroredStrategy strategy;  // TensorFlow's default for virtual GPUs: the ring, not NCCL
  BOOST_TEST(strategy.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  DEVTENSOR_CHECK_THROW_WITH((void)ds::NcclAllReduce{}.batch_reduce(
                                 ds::ReduceOp::SUM, std::vector{on_gpus(2, std::vector<float>{1})}, gpu_indices(2)),
                             dt::InvalidArgumentError, "appears twice in an NCCL clique");
}

// CompileOptions::cuda_graph under a MirroredStrategy (Note [CUDA-graph replay], "Several GPUs"):
// every replica's traced step and the all-reduce are one graph over the GPUs. With two GPUs the
// all-reduce is NCCL's, inside the graph; on one, two logical GPUs share it and the ring sums. No
// fallback warning, and the losses and weights follow the traced step run op by op.
BOOST_AUTO_TEST_CASE(a_mirrored_fit_replays_as_one_cuda_graph) {
  const auto gpus = dt::config::list_physical_devices("GPU");
  if (gpus.size() < 2)
    dt::config::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 512}, {.memory_limit_mb = 512}});
  BOOST_TEST_MESSAGE("replicas on " << (gpus.size() < 2 ? "two logical GPUs of one GPU" : "two GPUs"));
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host("/cpu:0");
    x = dt::random_uniform<float>({64, 8}, {.minval = -1, .maxval = 1, .seed = 21});
    y = dt::reduce_sum(x, 1, true) * 0.5f + 1.0f;
  }
  const auto train = [&](bool cuda_graph) {
    dt::nn::clear_session();
    ds::MirroredStrategy strategy({"/gpu:0", "/gpu:1"});
    std::optional<dt::nn::Sequential> model;
    {
      auto guard = strategy.scope();
      model.emplace(std::vector<dt::nn::Layer>{
          dt::nn::Dense(16, {.input_dim = 8,
                             .activation = dt::nn::Activation::relu,
                             .kernel_initializer = dt::nn::initializers::GlorotUniform{.seed = 5}}),
          dt::nn::Dense(1, {.kernel_initializer = dt::nn::initializers::GlorotUniform{.seed = 6}})});
      model->compile(dt::nn::losses::MeanSquaredError{},
                     dt::nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9}, {.cuda_graph = cuda_graph});
    }
    auto values = model->fit(x, y, {.epochs = 3, .batch_size = 16, .verbose = 0}).loss;
    for (const auto& v : model->trainable_variables())
      for (std::size_t c = 0; c < v.num_components(); ++c)
        for (float w : v.component(c).to_vector()) values.push_back(w);
    return values;
  };
  const auto plain = train(false);
  const auto replayed = train(true);
  BOOST_TEST(log.count("CUDA graph") == 0);
  BOOST_TEST_REQUIRE(replayed.size() == plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i)
    BOOST_TEST(std::abs(replayed[i] - plain[i]) <= 1e-5f * (1 + std::abs(plain[i])), "value " << i);
  BOOST_TEST(plain[2] < plain[0]);
}

// The communicator MultiWorkerMirroredStrategy uses between processes (non-blocking, created
// with the chief's unique id), exercised inside one process: all its ranks here, so it sums like
// the clique; then a clique that waits for a rank no process will ever join, which must time out
// and abort instead of hanging, and refuse later calls.
BOOST_AUTO_TEST_CASE(the_cross_process_communicator_sums_and_times_out) {
  const dt::GpuAllReduceKernel* kernel = dt::gpu_all_reduce_kernel();
  BOOST_TEST_REQUIRE(ds::cdo_detail::NcclEngine::available_across_processes());
  const int replicas = static_cast<int>(gpu_indices(2).size());
  auto clique = [&](int ranks, double timeout) {
    dt::GpuCliqueAcrossProcesses c;
    kernel->new_unique_id(c.unique_id);
    c.num_ranks = ranks;
    c.first_rank = 0;
    c.timeout_seconds = timeout;
    return c;
  };
  const std::vector<float> base{1, 2, 3, 4, 5};
  const auto parts = on_gpus(replicas, base).values;
  const auto whole = clique(replicas, 30.0);
  const auto summed = ds::cdo_detail::NcclEngine::all_reduce_across_processes(parts, whole, "test sum");
  for (const auto& s : summed)
    BOOST_TEST(s.to_vector() == expected_sum(replicas, base), boost::test_tools::per_element());
  const auto again =
      ds::cdo_detail::NcclEngine::all_reduce_across_processes(summed, whole, "test sum again");  // cached
  for (const auto& s : again) BOOST_TEST(s.to_vector()[0] == static_cast<float>(replicas) * summed[0].to_vector()[0]);

  // One rank more than this process has: creating the communicator waits for it, then gives up.
  const auto missing = clique(replicas + 1, 1.5);
  const auto began = std::chrono::steady_clock::now();
  DEVTENSOR_CHECK_THROW_WITH(
      (void)ds::cdo_detail::NcclEngine::all_reduce_across_processes(parts, missing, "a lonely sum"),
      dt::DeadlineExceededError, "the creation of the NCCL communicator did not complete within 1.5");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  BOOST_TEST(waited >= 1.5);
  BOOST_TEST(waited < 10.0);
  DEVTENSOR_CHECK_THROW_WITH(
      (void)ds::cdo_detail::NcclEngine::all_reduce_across_processes(parts, missing, "a second try"),
      dt::FailedPreconditionError, "creating this worker's NCCL communicator failed earlier");
  // The device is still usable afterwards.
  const auto after = ds::cdo_detail::NcclEngine::all_reduce_across_processes(parts, whole, "after the abort");
  BOOST_TEST(after[0].to_vector() == expected_sum(replicas, base), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
