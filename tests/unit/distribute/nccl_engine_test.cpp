// NcclAllReduce's host side without a GPU: two "real" GPUs from the recording platform
// (fake_gpu_platform.hpp) and a stand-in for the NCCL kernel that sums the host buffers behind
// them. What is checked is what devtensor hands NCCL: one grouped call per pack, the element
// count, the dtype, each rank's ordinal and stream, and where the results land. The real kernel
// (backend/cuda/nccl.hpp) runs in tests/gpu on a GPU machine.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "distribute_test_support.hpp"
#include "fake_gpu_kernels.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

namespace {

struct KernelCall {
  std::string dtype;
  std::size_t count;
  std::vector<int> ordinals;
  std::vector<void*> streams;
};
std::vector<KernelCall> kernel_calls;

template <class T>
void sum_into(std::size_t count, std::span<const void* const> send, std::span<void* const> recv) {
  std::vector<T> total(count, T{0});
  for (const void* s : send)
    for (std::size_t i = 0; i < count; ++i) total[i] += static_cast<const T*>(s)[i];
  for (void* r : recv)
    for (std::size_t i = 0; i < count; ++i) static_cast<T*>(r)[i] = total[i];
}

const dt::GpuAllReduceKernel stand_in{
    "stand-in", [](std::string_view dtype, std::size_t count, std::span<const void* const> send,
                   std::span<void* const> recv, std::span<const int> ordinals, std::span<void* const> streams) {
      kernel_calls.push_back(
          {std::string(dtype), count, {ordinals.begin(), ordinals.end()}, {streams.begin(), streams.end()}});
      if (dtype == "DT_FLOAT")
        sum_into<float>(count, send, recv);
      else if (dtype == "DT_DOUBLE")
        sum_into<double>(count, send, recv);
      else
        throw dt::InvalidArgumentError("stand-in: " + std::string(dtype));
    }};

/// Two fake GPUs; the stand-in kernel is installed by `install()` and always removed afterwards.
struct TwoGpus : dt::test::FakeGpuPlatform {
  const dt::GpuAllReduceKernel* previous = dt::gpu_all_reduce_kernel();
  TwoGpus() : FakeGpuPlatform(2) {
    kernel_calls.clear();
    dt::register_gpu_all_reduce_kernel(nullptr);
  }
  TwoGpus(const TwoGpus&) = delete;
  TwoGpus& operator=(const TwoGpus&) = delete;
  ~TwoGpus() { dt::register_gpu_all_reduce_kernel(previous); }
  static void install() { dt::register_gpu_all_reduce_kernel(&stand_in); }
};

template <class T>
ds::PerReplica<dt::Tensor<T>> on_gpus(const std::vector<std::vector<T>>& values) {
  ds::PerReplica<dt::Tensor<T>> out;
  for (std::size_t r = 0; r < values.size(); ++r) {
    dt::DeviceScope scope("/gpu:" + std::to_string(r));
    out.values.push_back(dt::constant<T>(values[r]));
  }
  return out;
}

const std::vector<std::string> gpus{"/gpu:0", "/gpu:1"};
using dt::test::devices_at;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(nccl_engine, TwoGpus)

BOOST_AUTO_TEST_CASE(without_the_kernel_nccl_is_unavailable_and_says_how_to_get_it) {
  BOOST_TEST(!ds::NcclAllReduce::available());
  ds::MirroredStrategy strategy;  // the default: every GPU
  BOOST_TEST(strategy.num_replicas_in_sync() == 2);
  // CollectiveAllReduce(AUTO) without NCCL: the ring, here with device ops (split, add, concat).
  BOOST_TEST(strategy.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  BOOST_TEST(strategy.cross_device_ops().chosen_description() == "CollectiveAllReduce (RING)");
  BOOST_TEST(
      (strategy.cross_device_ops().collective_options()->implementation() == ds::CommunicationImplementation::AUTO));
  const auto summed = strategy.reduce_to(ds::ReduceOp::SUM, on_gpus<float>({{1, 2, 3}, {10, 20, 30}}));
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(summed[r].device() == "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(r));
    BOOST_TEST(summed[r].to_vector() == (std::vector<float>{11, 22, 33}), boost::test_tools::per_element());
  }
  DEVTENSOR_CHECK_THROW_WITH((void)ds::NcclAllReduce{}.reduce(ds::ReduceOp::SUM, on_gpus<float>({{1}, {2}}), gpus),
                             dt::UnimplementedError, "with the devtensor::nccl component");
  BOOST_TEST(kernel_calls.empty());
}

BOOST_AUTO_TEST_CASE(with_the_kernel_the_default_on_distinct_real_gpus_is_nccl) {
  install();
  BOOST_TEST(ds::NcclAllReduce::available());
  ds::MirroredStrategy strategy;  // CollectiveAllReduce(AUTO): NCCL on distinct real GPUs
  BOOST_TEST(strategy.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  BOOST_TEST(strategy.cross_device_ops().chosen_description() == "CollectiveAllReduce (NCCL)");
  BOOST_TEST(
      (strategy.cross_device_ops().collective_options()->implementation() == ds::CommunicationImplementation::AUTO));
  const auto per_replica = strategy.run([] {
    const auto r = static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group);
    return dt::constant<float>({r, 10 * r + 1});
  });
  const auto mean = strategy.reduce_to(ds::ReduceOp::MEAN, per_replica);
  BOOST_TEST_REQUIRE(mean.size() == 2u);
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(mean[r].device() == "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(r));
    BOOST_TEST(mean[r].to_vector() == (std::vector<float>{0.5f, 6.0f}), boost::test_tools::per_element());
  }
  BOOST_TEST_REQUIRE(kernel_calls.size() == 1u);
}

// TensorFlow's shortcut: one replica needs no collective. On a one-GPU machine the default
// strategy makes no NCCL communicator (which costs GPU memory another process may hold) and the
// reduced values are the replica's own tensors, for every member of the family.
BOOST_AUTO_TEST_CASE(one_replica_makes_no_collective_call) {
  install();
  ds::MirroredStrategy strategy({"/gpu:1"});
  const auto values = strategy.run([] { return dt::constant<float>({1, 2, 3}); });
  const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{values, values});
  const auto means = strategy.batch_reduce_to(ds::ReduceOp::MEAN, std::vector{values});
  BOOST_TEST_REQUIRE(sums.size() == 2u);
  for (const auto& reduced : {sums[0], sums[1], means[0]}) {
    BOOST_TEST_REQUIRE(reduced.size() == 1u);
    BOOST_TEST(reduced[0].device() == "/job:localhost/replica:0/task:0/device:GPU:1");
    BOOST_TEST(reduced[0].to_vector() == (std::vector<float>{1, 2, 3}), boost::test_tools::per_element());
  }
  const auto one = devices_at({2});
  const auto on_gpu1 = ds::PerReplica<dt::Tensor<float>>{{values.values[0]}};
  BOOST_TEST(ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{on_gpu1}, one)[0].primary().to_vector() ==
                 (std::vector<float>{1, 2, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(
      ds::CollectiveAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{on_gpu1}, one)[0].primary().to_vector() ==
          (std::vector<float>{1, 2, 3}),
      boost::test_tools::per_element());
  BOOST_TEST(kernel_calls.empty());
}

BOOST_AUTO_TEST_CASE(each_pack_is_one_call_with_every_ranks_ordinal_and_stream) {
  install();
  const auto& devices = dt::Context::global().devices();
  std::vector<void*> streams;
  for (const auto& d : devices)
    if (d.is_gpu) streams.push_back(d.stream);
  BOOST_TEST_REQUIRE(streams.size() == 2u);
  // Three tensors of 3 + 4 + 1 = 8 elements in 3 packs: 2, 2 and the remainder 4.
  const std::vector values{on_gpus<float>({{1, 2, 3}, {10, 20, 30}}), on_gpus<float>({{1, 1, 1, 1}, {2, 2, 2, 2}}),
                           on_gpus<float>({{5}, {6}})};
  const auto out = ds::NcclAllReduce{.num_packs = 3}.batch_reduce(ds::ReduceOp::SUM, values, devices_at({1, 2}));
  BOOST_TEST_REQUIRE(kernel_calls.size() == 3u);
  BOOST_TEST(kernel_calls[0].count == 2u);
  BOOST_TEST(kernel_calls[1].count == 2u);
  BOOST_TEST(kernel_calls[2].count == 4u);
  for (const auto& call : kernel_calls) {
    BOOST_TEST(call.dtype == "DT_FLOAT");
    BOOST_TEST(call.ordinals == (std::vector<int>{0, 1}), boost::test_tools::per_element());
    BOOST_TEST(call.streams == streams, boost::test_tools::per_element());
  }
  BOOST_TEST_REQUIRE(out.size() == 3u);
  for (std::size_t r = 0; r < 2; ++r) {
    BOOST_TEST(out[0][r].to_vector() == (std::vector<float>{11, 22, 33}), boost::test_tools::per_element());
    BOOST_TEST(out[1][r].to_vector() == (std::vector<float>{3, 3, 3, 3}), boost::test_tools::per_element());
    BOOST_TEST(out[2][r].to_vector() == (std::vector<float>{11}), boost::test_tools::per_element());
    BOOST_TEST(out[1][r].device_info().is_gpu);
  }
  // Doubles go as DT_DOUBLE; num_packs = 0 reduces each tensor on its own.
  kernel_calls.clear();
  const auto doubles = ds::NcclAllReduce{.num_packs = 0}.batch_reduce(
      ds::ReduceOp::SUM, std::vector{on_gpus<double>({{0.5}, {0.25}}), on_gpus<double>({{1, 2}, {3, 4}})},
      devices_at({1, 2}));
  BOOST_TEST_REQUIRE(kernel_calls.size() == 2u);
  BOOST_TEST(kernel_calls[0].dtype == "DT_DOUBLE");
  BOOST_TEST(doubles[0][1].item() == 0.75);
  BOOST_TEST(doubles[1][0].to_vector() == (std::vector<double>{4, 6}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_seeds_model_trains_on_two_real_gpus_through_nccl) {
  // The whole real-GPU path a host translation unit takes: mirrored variables in GPU memory,
  // kernels falling back to the CPU, gradients all-reduced by the (stand-in) NCCL kernel, and
  // variable updates staged through the host.
  install();
  ds::MirroredStrategy strategy;
  BOOST_TEST_REQUIRE(strategy.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  std::optional<dt::nn::Sequential> model;
  {
    auto guard = strategy.scope();
    model.emplace(std::vector<dt::nn::Layer>{dt::nn::Dense(1, {.input_dim = 1})});
    model->compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = 0.2});
  }
  auto data_set = dt::data::Dataset<float, float>::from_tensors(dt::constant<float>({1}), dt::constant<float>({1}))
                      .repeat(40)
                      .batch(10);
  const auto history = model->fit(data_set, {.epochs = 2, .verbose = 0});
  BOOST_TEST(history.loss[1] < history.loss[0]);
  BOOST_TEST(kernel_calls.size() >= 8u);  // one all-reduce per step: 2 epochs of 4 steps
  const auto kernel = model->trainable_variables()[0];
  BOOST_TEST(kernel.component(1).device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  BOOST_TEST(!kernel.component(1).device_info().host_memory());
  BOOST_TEST(kernel.component(0).to_vector() == kernel.component(1).to_vector(), boost::test_tools::per_element());
  // Cross-replica writes reach GPU memory too.
  kernel.assign_add(dt::fill<float>(kernel.shape(), 1.0f));
  BOOST_TEST(kernel.component(1).to_vector() == kernel.component(0).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(with_gpu_bodies_a_mirrored_fit_stays_on_the_gpus) {
  // The program has GPU bodies (host functions posing as them): every op, the variables'
  // components, the optimizer's fused update and the all-reduce run on the two GPUs, and fit reads
  // the loss from a GPU once per epoch. The replicas' results equal a CPU run's.
  install();
  auto& recorder = dt::test::fake_gpu_recorder();
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host("/cpu:0");
    x = dt::constant<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8, 1});
    y = dt::constant<float>({3, 5, 7, 9, 11, 13, 15, 17}, {8, 1});
  }
  const auto data_set = dt::data::Dataset<float, float>::from_tensor_slices(x, y).batch(4);
  const auto train = [&](const std::vector<std::string>& devices, std::size_t& to_host) {
    dt::nn::clear_session();
    ds::MirroredStrategy strategy(devices);
    std::optional<dt::nn::Sequential> model;
    {
      auto guard = strategy.scope();
      model.emplace(std::vector<dt::nn::Layer>{
          dt::nn::Dense(1, {.input_dim = 1, .kernel_initializer = dt::nn::initializers::Constant{0.5f}})});
      model->compile(dt::nn::losses::MeanSquaredError{},
                     dt::nn::optimizers::SGD{.learning_rate = 0.01, .momentum = 0.9});
    }
    std::size_t before = 0;
    {
      std::lock_guard lock(recorder.mutex);
      before = recorder.copies.size();
    }
    auto history = model->fit(data_set, {.epochs = 3, .verbose = 0});
    to_host = 0;
    {
      std::lock_guard lock(recorder.mutex);
      for (std::size_t i = before; i < recorder.copies.size(); ++i)
        to_host += recorder.copies[i].dst_ordinal < 0 && recorder.copies[i].src_ordinal >= 0 ? 1u : 0u;
    }
    const auto kernel = model->trainable_variables()[0];
    for (std::size_t c = 0; c < kernel.num_components(); ++c) history.loss.push_back(kernel.component(c).item());
    return history.loss;
  };
  dt::test::FakeGpuKernels kernels;
  std::size_t gpu_reads = 0, cpu_reads = 0;
  const auto on_gpus = train({"/gpu:0", "/gpu:1"}, gpu_reads);
  BOOST_TEST(kernel_calls.size() >= 6u);  // the gradients went through the (stand-in) NCCL kernel
  BOOST_TEST(gpu_reads == 3u);            // one loss read per epoch, nothing else
  const auto on_cpu = train({"/cpu:0"}, cpu_reads);
  BOOST_TEST_REQUIRE(on_gpus.size() == 5u);  // 3 epoch losses, 2 components
  BOOST_TEST(on_gpus[3] == on_gpus[4]);      // identical replicas
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(std::abs(on_gpus[i] - on_cpu[i]) <= 1e-5 * (1 + std::abs(on_cpu[i])), "value " << i);
}

// CompileOptions::cuda_graph under a MirroredStrategy over two GPUs: the traced step (both
// replicas' passes, the NCCL all-reduce, the mirrored update, the loss's reduction) is one CUDA
// graph over both GPUs, captured at the second step and replayed after; the losses and weights are
// the traced step's, bit for bit. The fake platform replays by running the step again, so the
// stand-in NCCL kernel is called as often.
BOOST_AUTO_TEST_CASE(a_mirrored_fit_replays_as_one_cuda_graph_over_the_gpus) {
  install();
  auto& recorder = dt::test::fake_gpu_recorder();
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host("/cpu:0");
    x = dt::constant<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8, 1});
    y = dt::constant<float>({3, 5, 7, 9, 11, 13, 15, 17}, {8, 1});
  }
  const auto data_set = dt::data::Dataset<float, float>::from_tensor_slices(x, y).batch(4);
  const auto train = [&](bool cuda_graph) {
    dt::nn::clear_session();
    ds::MirroredStrategy strategy({"/gpu:0", "/gpu:1"});
    std::optional<dt::nn::Sequential> model;
    {
      auto guard = strategy.scope();
      model.emplace(std::vector<dt::nn::Layer>{
          dt::nn::Dense(4, {.input_dim = 1,
                            .activation = dt::nn::Activation::relu,
                            .kernel_initializer = dt::nn::initializers::GlorotUniform{.seed = 5}}),
          dt::nn::Dense(1, {.kernel_initializer = dt::nn::initializers::Constant{0.5f}})});
      model->compile(dt::nn::losses::MeanSquaredError{},
                     dt::nn::optimizers::SGD{.learning_rate = 0.001, .momentum = 0.5}, {.cuda_graph = cuda_graph});
    }
    auto losses = model->fit(data_set, {.epochs = 3, .verbose = 0}).loss;
    for (const auto& v : model->trainable_variables())
      for (std::size_t c = 0; c < v.num_components(); ++c)
        for (float w : v.component(c).to_vector()) losses.push_back(w);
    return losses;
  };
  dt::test::FakeGpuKernels kernels;
  const auto traced = train(false);
  const auto calls = kernel_calls.size();
  BOOST_TEST(recorder.captures == 0);
  const auto replayed = train(true);
  BOOST_TEST(replayed == traced, boost::test_tools::per_element());
  BOOST_TEST(replayed[2] < replayed[0]);
  BOOST_TEST(kernel_calls.size() == 2 * calls);
  BOOST_TEST(recorder.captures == 1);
  BOOST_TEST(recorder.launches == 4);  // 6 steps: a warm-up, the capture, 4 replays
  BOOST_TEST(log.count("CUDA graph") == 0);
}

BOOST_AUTO_TEST_CASE(distributed_variables_combine_their_components_on_the_gpu) {
  // Replica writes to a mirrored variable (MEAN), and a sync-on-read variable (SUM) written in
  // replicas and read across them: the components are combined by device kernels, no host trip.
  dt::test::FakeGpuKernels kernels;
  auto& recorder = dt::test::fake_gpu_recorder();
  ds::MirroredStrategy strategy(gpus);
  std::optional<dt::Variable<float>> mirrored, on_read;
  {
    auto guard = strategy.scope();
    mirrored.emplace(dt::constant<float>({1, 2}), dt::VariableOptions{.aggregation = dt::VariableAggregation::MEAN});
    on_read.emplace(dt::constant<float>({0, 0}),
                    dt::VariableOptions{.synchronization = dt::VariableSynchronization::ON_READ,
                                        .aggregation = dt::VariableAggregation::SUM});
  }
  std::size_t before = 0;
  {
    std::lock_guard lock(recorder.mutex);
    before = recorder.copies.size();
  }
  strategy.run([&] {
    const auto id = static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group);
    const auto delta = dt::fill<float>(dt::Shape({2}), id + 1);  // replica 0 adds 1, replica 1 adds 2
    mirrored->assign_add(delta);
    on_read->assign(delta);
    return 0;
  });
  const auto aggregated = on_read->value();             // cross-replica: the SUM of the components
  on_read->assign(dt::fill<float>(dt::Shape({2}), 8));  // cross-replica SUM assign: 4 per component
  std::size_t to_host = 0;
  {
    std::lock_guard lock(recorder.mutex);
    for (std::size_t i = before; i < recorder.copies.size(); ++i)
      to_host += recorder.copies[i].dst_ordinal < 0 && recorder.copies[i].src_ordinal >= 0 ? 1u : 0u;
  }
  BOOST_TEST(to_host == 0u);
  BOOST_TEST(aggregated.to_vector() == (std::vector<float>{3, 3}), boost::test_tools::per_element());
  BOOST_TEST(!aggregated.device_info().host_memory());
  for (std::size_t c = 0; c < 2; ++c) {
    BOOST_TEST(mirrored->component(c).to_vector() == (std::vector<float>{2.5f, 3.5f}),
               boost::test_tools::per_element());
    BOOST_TEST(on_read->component(c).to_vector() == (std::vector<float>{4, 4}), boost::test_tools::per_element());
  }
  BOOST_TEST(on_read->value().to_vector() == (std::vector<float>{8, 8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(values_off_the_gpus_are_refused_or_fall_back) {
  install();
  ds::PerReplica<dt::Tensor<float>> on_cpu;
  {
    dt::DeviceScope scope("/cpu:0");
    on_cpu.values = {dt::constant<float>({1}), dt::constant<float>({2})};
  }
  // Destinations that are the values' devices: NCCL would be asked to reduce host memory.
  DEVTENSOR_CHECK_THROW_WITH(
      (void)ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{on_cpu}, devices_at({0, 0})),
      dt::InvalidArgumentError,
      "NcclAllReduce needs real GPUs, but a value is on /job:localhost/replica:0/task:0/device:CPU:0");
  // Destinations that differ from the values' devices: TensorFlow's fallback, no NCCL call.
  const auto out =
      ds::NcclAllReduce{}.reduce(ds::ReduceOp::SUM, on_gpus<float>({{1}, {2}}), std::vector<std::string>{"/cpu:0"});
  BOOST_TEST(out[0].item() == 3.0f);
  BOOST_TEST(out[0].device() == "/job:localhost/replica:0/task:0/device:CPU:0");
  BOOST_TEST(kernel_calls.empty());
}

// The across-workers entry of CollectiveAllReduce (MultiWorkerMirroredStrategy's NCCL path; the
// multi-process tests run it): refused without a clique, with values off their replicas' devices,
// and with a kernel that cannot cross processes.
BOOST_AUTO_TEST_CASE(all_reduce_across_workers_refuses_what_it_cannot_do) {
  install();  // an in-process kernel only
  const auto values = std::vector{on_gpus<float>({{1, 2}, {3, 4}})};
  const ds::Destinations devices{&values[0].values[0].device_info(), &values[0].values[1].device_info()};
  DEVTENSOR_CHECK_THROW_WITH(
      (void)ds::CollectiveAllReduce{}.all_reduce_across_workers(ds::ReduceOp::SUM, values, devices, "x"),
      dt::FailedPreconditionError, "has no NCCL clique across workers");
  auto clique = std::make_shared<dt::GpuCliqueAcrossProcesses>();
  clique->num_ranks = 4;
  const ds::CollectiveAllReduce across(ds::CommunicationOptions(), clique);
  BOOST_TEST(across.spans_workers());
  BOOST_TEST(!ds::cdo_detail::NcclEngine::available_across_processes());
  const ds::Destinations swapped{&devices[1], &devices[0]};
  DEVTENSOR_CHECK_THROW_WITH((void)across.all_reduce_across_workers(ds::ReduceOp::SUM, values, swapped, "x"),
                             dt::InvalidArgumentError, "needs each replica's value on its own device");
  DEVTENSOR_CHECK_THROW_WITH((void)across.all_reduce_across_workers(ds::ReduceOp::SUM, values, devices, "x"),
                             dt::UnimplementedError, "The all-reduce kernel 'stand-in' cannot cross processes");
  BOOST_TEST(kernel_calls.empty());
}

BOOST_AUTO_TEST_SUITE_END()
