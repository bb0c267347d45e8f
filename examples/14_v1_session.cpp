// Walkthrough 14: the GPU guide's TensorFlow 1 programs as they read (tf.compat.v1): graphs built
// first, run by a Session whose ConfigProto logs placement, limits GPU memory and turns soft
// placement on or off. Node names, the placement log and the errors are TensorFlow 2.21's.
//
//   TensorFlow                                            devtensor
//   config = tf.compat.v1.ConfigProto(...)                v1::ConfigProto config{...};
//   with graph.as_default():                              auto scope = graph.as_default();
//   a = tf.constant([...], shape=[2, 3], name='a')        dt::constant<float>({...}, {2, 3}, {.name = "a"})
//   with tf.device('/cpu:0'):                             dt::DeviceScope cpu("/cpu:0");
//   sess = tf.compat.v1.Session(graph=graph, config=...)  v1::Session sess(graph, config);
//   print(sess.run(c))                                    std::cout << sess.run(c);
#include <devtensor/graph.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;

namespace {
/// c = a · b, the guide's first graph.
dt::Tensor<float> matmul_graph() {
  auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {.name = "a"});
  auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}, {.name = "b"});
  return dt::matmul(a, b);
}
bool expected(const dt::Tensor<float>& t, const std::vector<float>& values) { return t.to_vector() == values; }
}  // namespace

int main() {
  bool ok = true;
  // Memory: grow on demand, up to 40% of each GPU (config.gpu_options.allow_growth = True;
  // per_process_gpu_memory_fraction = 0.4). They configure the process's GPUs, so they are given
  // before the first session creates the devices.
  v1::ConfigProto config{.log_device_placement = true};
  config.gpu_options.allow_growth = true;
  config.gpu_options.per_process_gpu_memory_fraction = 0.4;

  std::cout << "--- Logging device placement\n";
  v1::Graph logging;
  dt::Tensor<float> c;
  {
    auto scope = logging.as_default();
    c = matmul_graph();
  }
  v1::Session sess(logging, config);
  std::cout << sess.run(c) << "\n";
  ok = ok && expected(sess.run(c), {22, 28, 49, 64});

  std::cout << "--- Manual placement: the constants on the CPU, the MatMul where it runs best\n";
  v1::Graph manual;
  {
    auto scope = manual.as_default();
    dt::Tensor<float> a, b;
    {
      dt::DeviceScope cpu("/cpu:0");
      a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {.name = "a"});
      b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}, {.name = "b"});
    }
    c = dt::matmul(a, b);
  }
  v1::Session manual_sess(manual, config);
  std::cout << manual_sess.run(c) << "\n";

  std::cout << "--- A device that does not exist: /gpu:2\n";
  v1::Graph missing;
  {
    auto scope = missing.as_default();
    dt::DeviceScope gpu2("/gpu:2");
    c = matmul_graph();
  }
  try {
    v1::Session strict(missing, config);  // a v1 session's default: allow_soft_placement = False
    std::cout << strict.run(c) << "\n";
    ok = ok && dt::Context::global().devices().size() > 3;  // only where a GPU:2 exists
  } catch (const dt::InvalidArgumentError& e) {
    std::cout << "InvalidArgumentError: " << e.what() << "\n";
  }
  config.allow_soft_placement = true;
  v1::Session soft(missing, config);
  std::cout << soft.run(c) << "\n";
  ok = ok && expected(soft.run(c), {22, 28, 49, 64});

  std::cout << "--- Using multiple GPUs: a tower per GPU, summed with AddN on the CPU\n";
  v1::Graph towers;
  dt::Tensor<float> sum;
  {
    auto scope = towers.as_default();
    std::vector<dt::Tensor<float>> parts;
    for (const char* device : {"/gpu:0", "/gpu:1"}) {
      dt::DeviceScope s(device);
      auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
      auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2});
      parts.push_back(dt::matmul(a, b));
    }
    dt::DeviceScope cpu("/cpu:0");
    sum = dt::add_n(parts);
  }
  v1::Session towers_sess(towers, config);  // soft placement on: missing GPUs fall back
  std::cout << towers_sess.run(sum) << "\n";
  ok = ok && expected(towers_sess.run(sum), {44, 56, 98, 128});

  // TensorFlow 1's timeline: a run traced with FULL_TRACE, its step stats as Chrome trace JSON
  // (open it in Perfetto or chrome://tracing: one track per device, arrows where values cross).
  v1::RunMetadata metadata;
  (void)towers_sess.run({dt::AnyTensor(sum)}, {}, {}, {.trace_level = v1::RunOptions::FULL_TRACE}, &metadata);
  const auto trace = std::filesystem::temp_directory_path() / "devtensor_towers_timeline.json";
  std::ofstream(trace) << dt::timeline::Timeline(metadata.step_stats).generate_chrome_trace_format();
  std::cout << "timeline of a traced run on " << metadata.step_stats.dev_stats.size()
            << " device(s): " << trace.string() << "\n";
  return ok ? 0 : 1;
}
