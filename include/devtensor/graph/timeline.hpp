#pragma once
/// @file timeline.hpp
/// @brief What a traced run records — TensorFlow 1's StepStats: per device, each node's start,
/// duration, inputs and outputs with the memory they took — timeline::Timeline, which turns it into Chrome's trace
/// format (open it in Perfetto or chrome://tracing) as tensorflow/python/client/timeline.py does, and the profiler that
/// collects the traced runs of graphs between start and stop.
///
///     v1::RunMetadata metadata;
///     sess.run({sum}, {}, {}, {.trace_level = v1::RunOptions::FULL_TRACE}, &metadata);
///     std::ofstream("timeline.json") << dt::timeline::Timeline(metadata.step_stats).generate_chrome_trace_format();

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/tensor/shape.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use
#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#endif

namespace devtensor {

/// One output a node made (TensorFlow's NodeOutput, its TensorDescription and AllocationDescription
/// flattened): its type, shape, and the bytes it asked of which allocator.
struct NodeOutput {
  std::int32_t slot = 0;
  std::string dtype;  // TensorFlow's enum name: "DT_FLOAT"
  Shape shape;
  std::int64_t requested_bytes = 0;
  std::string allocator_name;  // the device's: "cpu_bfc", "GPU_0_bfc"
};

/// One node's execution (TensorFlow's NodeExecStats): times in microseconds, the start since the
/// Unix epoch; `timeline_label` is TensorFlow's "name = Op(input, ...)".
struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::int64_t all_start_micros = 0;
  std::int64_t all_end_rel_micros = 0;
  std::vector<std::string> inputs = {};  // the producers' outputs: "node", "node:1"
  std::vector<Shape> output_shapes = {};
  std::string timeline_label = {};
  std::int64_t thread_id = 0;
  std::vector<NodeOutput> output = {};
};
/// The nodes that ran on one device, in the order they started.
struct DeviceStepStats {
  std::string device;
  std::vector<NodeExecStats> node_stats = {};
};
/// A run's execution, device by device (TensorFlow's StepStats).
struct StepStats {
  std::vector<DeviceStepStats> dev_stats = {};
};

namespace timeline {

/// TensorFlow's timeline.Timeline, its layout (checked against TensorFlow 2.21's): processes
/// "Allocators", then per device "<device> Compute" (its nodes) and "<device> Tensors" (empty
/// here); each node a complete event (`ph` "X", `cat` "Op", named by its op type, `args` its node
/// name, op and inputs `input0`...), and a data-flow arrow (`s` then `t`, `cat` "DataFlow", named by
/// the value) for each input made on another device or thread. Timestamps are microseconds since
/// the Unix epoch, as TensorFlow's. With `show_memory`, timeline.py's memory view too: each
/// output a tensor object in its device's "Tensors" process (created at its node's start, a
/// snapshot of its description, deleted after its last reader) and, per allocator, a counter
/// "Memory" in "Allocators" of the bytes its live outputs hold.
class DEVTENSOR_EXPORT Timeline {
 public:
  explicit Timeline(StepStats step_stats) : stats_(std::move(step_stats)) {}
  /// The trace as JSON: `{"traceEvents": [...]}`; `show_dataflow` draws the arrows,
  /// `show_memory` the tensors and the allocators' counters.
  [[nodiscard]] std::string generate_chrome_trace_format(bool show_dataflow = true, bool show_memory = false) const;

 private:
  StepStats stats_;
};

}  // namespace timeline

/// TensorFlow's `tf.profiler.experimental.start/stop`, for graphs: while it runs, every call of a
/// traced function (dt::function, fit's and evaluate's steps) and every Session::run is traced
/// node by node (as FULL_TRACE: one node after another, a GPU synchronised after each; a CUDA-graph
/// replay runs op by op meanwhile), and `stop` writes them all as one Chrome trace (timeline.hpp's
/// layout, its memory view included). Eager ops are not recorded. Off, a call pays one relaxed atomic load.
///
///     dt::profiler::start();
///     model.fit(x, y, {.epochs = 1});
///     dt::profiler::stop("fit_trace.json");   // open in Perfetto or chrome://tracing
namespace profiler {
/// @throws AlreadyExistsError "Another profiler is running." (TensorFlow's text).
void start();
/// Stops and writes the trace to `path`. @throws UnavailableError "Cannot export profiling
/// results. No profiler is running." (TensorFlow's text); InvalidArgumentError when the file
/// cannot be written (the profile is dropped either way).
void stop(const std::string& path);
namespace profiler_detail {
inline std::atomic<bool> running{false};
}  // namespace profiler_detail
/// Whether a profile is being taken.
[[nodiscard]] inline bool active() noexcept { return profiler_detail::running.load(std::memory_order_relaxed); }
/// Adds a traced run to the profile (what traced functions and sessions call); ignored when none
/// is being taken.
void add(StepStats stats);
}  // namespace profiler

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

namespace timeline_detail {
/// `text` as a JSON string, quotes included.
inline std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

/// TensorFlow's text of a TensorDescription, as timeline.py shows it (its quotes removed).
inline std::string tensor_description(const NodeOutput& output) {
  std::string text = "dtype: " + output.dtype + "\nshape {\n";
  for (const auto d : output.shape.dims_vector()) text += "  dim {\n    size: " + std::to_string(d) + "\n  }\n";
  return text + "}\nallocation_description {\n  requested_bytes: " + std::to_string(output.requested_bytes) +
         "\n  allocator_name: " + output.allocator_name + "\n}\n";
}
}  // namespace timeline_detail

DEVTENSOR_DEFINITION std::string timeline::Timeline::generate_chrome_trace_format(bool show_dataflow,
                                                                                  bool show_memory) const {
  using timeline_detail::quoted;
  // timeline.py's processes: "Allocators" first, then per device its "Compute" and "Tensors".
  std::vector<std::string> events{
      "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": \"Allocators\"}}"};
  // The outputs that took memory, as timeline.py's tensor trackers: made at the node's start,
  // unreferenced at its end and just before each reader's end.
  struct Tracked {
    std::string name, allocator;
    std::size_t pid;
    std::int64_t created, last_unref, bytes;
  };
  std::vector<Tracked> tensors;
  const auto event_head = [&](const char* ph, const char* cat, const std::string& name, std::size_t pid,
                              std::int64_t tid, std::int64_t ts) {
    return std::string("{\"ph\": \"") + ph + "\", \"cat\": \"" + cat + "\", \"name\": " + quoted(name) +
           ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + std::to_string(ts);
  };
  struct Ran {
    const NodeExecStats* node;
    std::size_t pid;
  };
  std::vector<Ran> ran;  // every node, in the order they started
  for (std::size_t d = 0; d < stats_.dev_stats.size(); ++d) {
    const auto& device = stats_.dev_stats[d];
    const std::size_t pid = 2 * d + 1;
    events.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid) +
                     ", \"args\": {\"name\": " + quoted(device.device + " Compute") + "}}");
    events.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + std::to_string(pid + 1) +
                     ", \"args\": {\"name\": " + quoted(device.device + " Tensors") + "}}");
    for (const auto& node : device.node_stats) {
      std::string args = "{\"name\": " + quoted(node.node_name) + ", \"op\": " + quoted(node.op);
      for (std::size_t i = 0; i < node.inputs.size(); ++i)
        args += ", \"input" + std::to_string(i) + "\": " + quoted(node.inputs[i]);
      events.push_back("{\"ph\": \"X\", \"cat\": \"Op\", \"name\": " + quoted(node.op) +
                       ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(node.thread_id) +
                       ", \"ts\": " + std::to_string(node.all_start_micros) +
                       ", \"dur\": " + std::to_string(node.all_end_rel_micros) + ", \"args\": " + args + "}}");
      ran.push_back({&node, pid});
    }
  }
  // An input is the latest output of its name made before its reader started: a profile repeats
  // the same node names once per run, and each run's readers read their own run's values.
  std::stable_sort(ran.begin(), ran.end(),
                   [](const Ran& a, const Ran& b) { return a.node->all_start_micros < b.node->all_start_micros; });
  struct Made {
    std::size_t pid;
    std::int64_t tid, end;
    std::optional<std::size_t> tensor;  // its tracker, when it took memory
  };
  std::unordered_map<std::string, Made> latest;
  std::size_t flow = 0;
  for (const Ran& r : ran) {
    const NodeExecStats* node = r.node;  // (not a structured binding: lambdas below capture it)
    const std::size_t pid = r.pid;
    const std::int64_t end = node->all_start_micros + node->all_end_rel_micros;
    for (const auto& input : node->inputs) {
      const auto from = latest.find(input);
      if (from == latest.end()) continue;
      const Made& m = from->second;
      if (m.tensor) tensors[*m.tensor].last_unref = std::max(tensors[*m.tensor].last_unref, end - 1);
      if (!show_dataflow || (m.pid == pid && m.tid == node->thread_id)) continue;
      const std::string id = std::to_string(flow++);
      events.push_back(event_head("s", "DataFlow", input, m.pid, m.tid, m.end) + ", \"id\": " + id + "}");
      events.push_back(event_head("t", "DataFlow", input, pid, node->thread_id, node->all_start_micros) +
                       ", \"id\": " + id + "}");
    }
    const auto name_of = [&](std::size_t slot) {
      return slot == 0 ? node->node_name : node->node_name + ":" + std::to_string(slot);
    };
    for (std::size_t k = 0; k < std::max<std::size_t>(1, node->output_shapes.size()); ++k)
      latest[name_of(k)] = Made{pid, node->thread_id, end, std::nullopt};
    for (const auto& output : node->output) {
      const std::string name = name_of(static_cast<std::size_t>(output.slot));
      const auto id = std::to_string(tensors.size());
      latest[name].tensor = tensors.size();
      tensors.push_back({name, output.allocator_name, pid + 1, node->all_start_micros, end, output.requested_bytes});
      if (!show_memory) continue;
      events.push_back(event_head("N", "Tensor", name, pid + 1, node->thread_id, node->all_start_micros) +
                       ", \"id\": " + id + "}");
      events.push_back(event_head("O", "Tensor", name, pid + 1, node->thread_id, end - 1) + ", \"id\": " + id +
                       ", \"args\": {\"snapshot\": {\"tensor_description\": " +
                       quoted(timeline_detail::tensor_description(output)) + "}}}");
    }
  }
  if (show_memory) {
    // Per allocator, the bytes its live outputs hold after each allocation and release, in time order.
    std::vector<std::string> allocators;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      events.push_back(event_head("D", "Tensor", t.name, t.pid, 0, t.last_unref) + ", \"id\": " + std::to_string(i) +
                       "}");
      if (std::find(allocators.begin(), allocators.end(), t.allocator) == allocators.end())
        allocators.push_back(t.allocator);
    }
    for (const auto& allocator : allocators) {
      std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> changes;
      for (const auto& t : tensors)
        if (t.allocator == allocator) {
          changes.emplace_back(t.created, t.bytes, t.name);
          changes.emplace_back(t.last_unref, -t.bytes, t.name);
        }
      std::sort(changes.begin(), changes.end());
      std::int64_t total = 0;
      for (const auto& [time, bytes, name] : changes) {
        total += bytes;
        events.push_back(event_head("C", "Memory", allocator, 0, 0, time) + ", \"args\": {" + quoted(allocator) + ": " +
                         std::to_string(total) + "}}");
      }
    }
  }
  std::string out = "{\"traceEvents\": [";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? ",\n" : "\n") + events[i];
  return out + "\n]}\n";
}

namespace profiler {
namespace profiler_detail {
struct Profile {
  std::mutex mutex;
  StepStats stats;
};
inline Profile& profile() {
  static Profile p;
  return p;
}
}  // namespace profiler_detail

DEVTENSOR_DEFINITION void start() {
  auto& p = profiler_detail::profile();
  const std::lock_guard lock(p.mutex);
  if (profiler_detail::running.load()) throw AlreadyExistsError("Another profiler is running.");
  p.stats = {};
  profiler_detail::running.store(true);
}

DEVTENSOR_DEFINITION void add(StepStats stats) {
  auto& p = profiler_detail::profile();
  const std::lock_guard lock(p.mutex);
  if (!profiler_detail::running.load()) return;
  for (auto& device : stats.dev_stats) {
    auto into = std::find_if(p.stats.dev_stats.begin(), p.stats.dev_stats.end(),
                             [&](const DeviceStepStats& d) { return d.device == device.device; });
    if (into == p.stats.dev_stats.end()) into = p.stats.dev_stats.insert(p.stats.dev_stats.end(), {device.device});
    for (auto& node : device.node_stats) into->node_stats.push_back(std::move(node));
  }
}

DEVTENSOR_DEFINITION void stop(const std::string& path) {
  StepStats stats;
  {
    auto& p = profiler_detail::profile();
    const std::lock_guard lock(p.mutex);
    if (!profiler_detail::running.load())
      throw UnavailableError("Cannot export profiling results. No profiler is running.");
    profiler_detail::running.store(false);
    stats = std::move(p.stats);
    p.stats = {};
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << timeline::Timeline(std::move(stats)).generate_chrome_trace_format(true, true);
  out.close();
  if (!out) throw InvalidArgumentError("Could not write the profile to '" + path + "': check that its folder exists");
}
}  // namespace profiler

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
