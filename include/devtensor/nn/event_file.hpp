#pragma once
/// @file event_file.hpp
/// @brief TensorBoard's event files written and read without a protobuf library: TFRecord framing
/// with masked CRC-32C around the few messages of event.proto, summary.proto, tensor.proto and
/// graph.proto that summaries use (tf.summary's scalar and histogram as TensorFlow 2 writes them,
/// a graph with each node's device). Note [Events without protobuf].
///
///     dt::summary::FileWriter writer("logs/train");
///     writer.scalar("epoch_loss", 0.25, /*step=*/3);
///     for (const auto& event : dt::summary::read_events(writer.path())) ...

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/proto_wire.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include <unistd.h>
#endif

// Note [Events without protobuf]
// An event file needs six small messages, all of them fields of fixed number and wire type; a
// protobuf dependency (a library, a code generator, generated sources to keep in step with
// TensorBoard's .proto files) would cost every user a package and a build step for ~150 lines of
// encoding. The encoder below writes what TensorFlow 2.21's summary writer writes, field for field
// (checked by decoding TensorFlow's own file: tests/reference/tensorboard_events.py); TensorBoard's reader
// reads devtensor's files (the same script's fixture). Unknown fields are skipped when reading, as
// protobuf does, so files TensorFlow writes read too.

namespace devtensor::summary {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`, as TFRecord frames use.
[[nodiscard]] std::uint32_t crc32c(std::string_view data) noexcept;
/// TFRecord's masked CRC-32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
[[nodiscard]] std::uint32_t masked_crc32c(std::string_view data) noexcept;

/// A graph node as TensorBoard's graph view shows it (graph.proto's NodeDef): its name, op type,
/// inputs ("node", "node:1"; "^node" for a control input) and the device it runs on.
struct GraphNode {
  std::string name;
  std::string op;
  std::vector<std::string> inputs = {};
  std::string device = {};
  friend bool operator==(const GraphNode&, const GraphNode&) = default;
};

/// One summary value as read back: its tag, the plugin its metadata names ("scalars",
/// "histograms"), its tensor's dtype (TensorFlow's DataType number: 1 float, 2 double, 7 string),
/// shape and numbers (a legacy simple_value reads as a float scalar).
struct SummaryValue {
  std::string tag;
  std::string plugin = {};
  int dtype = 0;
  std::vector<std::int64_t> shape = {};
  std::vector<double> values = {};
};

/// One event as read back (event.proto's Event): the file's version record, a graph, or a summary.
struct Event {
  double wall_time = 0.0;
  std::int64_t step = 0;
  std::string file_version = {};
  bool has_graph = false;
  std::vector<GraphNode> graph = {};
  std::vector<SummaryValue> values = {};
};

/// tf.summary.histogram's buckets: `buckets` rows [left edge, right edge, count] over the finite
/// values of `data` (equal widths from min to max; all of one value: every edge that value and
/// the count in the last row; no data: zeros). Fewer than one bucket gives none.
[[nodiscard]] std::vector<std::array<double, 3>> histogram_buckets(std::span<const double> data, int buckets = 30);

/// Writes one event file (TensorFlow 2's `tf.summary.create_file_writer`): in `log_dir`, created
/// with its parents, a new file named `events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2` that
/// starts with the "brain.Event:2" version record. Copies share the file; calls may come from
/// several threads. Written through a buffer: `flush` (or `close`, or the last copy's end) puts it
/// on disk, as TensorBoard reads it.
class DEVTENSOR_EXPORT FileWriter {
 public:
  /// @throws InvalidArgumentError when the folder or the file cannot be made (the reason said).
  explicit FileWriter(const std::string& log_dir);

  /// tf.summary.scalar: a float32 scalar tensor under the "scalars" plugin.
  void scalar(std::string_view tag, double value, std::int64_t step);
  /// tf.summary.histogram: `histogram_buckets(data, buckets)` as a [buckets, 3] float64 tensor
  /// under the "histograms" plugin.
  void histogram(std::string_view tag, std::span<const double> data, std::int64_t step, int buckets = 30);
  /// tf.summary.graph: the nodes as a GraphDef event, each with its device.
  void graph(const std::vector<GraphNode>& nodes);

  /// Puts what was written on disk. @throws InvalidArgumentError when the write failed.
  void flush();
  /// Flushes and closes; later writes are FailedPreconditionError. Closing twice is harmless.
  void close();
  [[nodiscard]] const std::string& path() const noexcept;

 private:
  struct State;
  std::shared_ptr<State> state_;
  void write_record(std::string_view data);  // with the state's lock held
  void write_event(std::int64_t step, std::string_view fields);
};

/// Every event of an event file, in order (what TensorBoard's loader reads).
/// @throws NotFoundError when the file cannot be opened; DataLossError for a record cut short
/// ("truncated record at <offset>"), a checksum that does not match ("corrupted record at
/// <offset>") or a message that does not decode.
[[nodiscard]] std::vector<Event> read_events(const std::string& path);

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::uint32_t crc32c(std::string_view data) noexcept {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFU;
  for (const char ch : data) crc = table[(crc ^ static_cast<unsigned char>(ch)) & 0xFFU] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

DEVTENSOR_DEFINITION std::uint32_t masked_crc32c(std::string_view data) noexcept {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

DEVTENSOR_DEFINITION std::vector<std::array<double, 3>> histogram_buckets(std::span<const double> data, int buckets) {
  if (buckets < 1) return {};
  const auto count = static_cast<std::size_t>(buckets);
  std::vector<std::array<double, 3>> rows(count, {0.0, 0.0, 0.0});
  double low = INFINITY, high = -INFINITY, finite = 0;
  for (const double v : data)
    if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v), finite += 1;
  if (finite == 0) return rows;
  if (high == low) {  // TensorBoard's single value: every edge the value, the count in the last row
    for (auto& row : rows) row = {high, high, 0.0};
    rows.back()[2] = finite;
    return rows;
  }
  const double width = (high - low) / static_cast<double>(count);
  for (std::size_t i = 0; i < count; ++i)
    rows[i] = {low + static_cast<double>(i) * width, i + 1 == count ? high : low + static_cast<double>(i + 1) * width,
               0.0};
  for (const double v : data) {
    if (!std::isfinite(v)) continue;
    const auto index = std::min(count - 1, static_cast<std::size_t>(std::floor((v - low) / width)));
    rows[index][2] += 1;
  }
  return rows;
}

namespace summary_detail {

/// TensorFlow's DataType numbers that summaries use.
inline constexpr int kFloat = 1, kDouble = 2;

/// A tensor.proto TensorProto of `dtype` and `shape` whose content is `raw` (little-endian values).
inline ProtoWriter tensor_proto(int dtype, std::span<const std::int64_t> shape, std::string_view raw) {
  ProtoWriter dims;
  for (const auto d : shape) dims.message(2, ProtoWriter().varint(1, static_cast<std::uint64_t>(d)));
  ProtoWriter tensor;
  tensor.varint(1, static_cast<std::uint64_t>(dtype)).message(2, dims);
  if (!raw.empty()) tensor.bytes(4, raw);
  return tensor;
}

/// A Summary of one value: `tag`, its tensor and the plugin its metadata names.
inline ProtoWriter summary_of(std::string_view tag, const ProtoWriter& tensor, std::string_view plugin) {
  ProtoWriter value;
  value.bytes(1, tag).message(8, tensor).message(9, ProtoWriter().message(1, ProtoWriter().bytes(1, plugin)));
  return ProtoWriter().message(1, value);
}

inline SummaryValue read_value(std::string_view data) {
  SummaryValue out;
  ProtoReader value(data);
  while (value.next()) {
    if (value.field() == 1 && value.wire_type() == 2) {
      out.tag = std::string(value.bytes());
    } else if (value.field() == 2 && value.wire_type() == 5) {  // simple_value
      const std::uint32_t bits = value.fixed32();
      float f;
      std::memcpy(&f, &bits, 4);
      out.dtype = kFloat;
      out.values = {static_cast<double>(f)};
    } else if (value.field() == 8 && value.wire_type() == 2) {
      ProtoReader tensor(value.bytes());
      std::string_view content;
      while (tensor.next()) {
        if (tensor.field() == 1 && tensor.wire_type() == 0) {
          out.dtype = static_cast<int>(tensor.varint());
        } else if (tensor.field() == 2 && tensor.wire_type() == 2) {
          ProtoReader shape(tensor.bytes());
          while (shape.next()) {
            if (shape.field() != 2 || shape.wire_type() != 2) {
              shape.skip();
              continue;
            }
            ProtoReader dim(shape.bytes());
            std::int64_t size = 0;
            while (dim.next()) {
              if (dim.field() == 1 && dim.wire_type() == 0)
                size = static_cast<std::int64_t>(dim.varint());
              else
                dim.skip();
            }
            out.shape.push_back(size);
          }
        } else if (tensor.field() == 4 && tensor.wire_type() == 2) {
          content = tensor.bytes();
        } else if ((tensor.field() == 5 || tensor.field() == 6) && tensor.wire_type() == 2) {
          content = tensor.bytes();  // float_val / double_val, packed: the same bytes as the content
        } else {
          tensor.skip();
        }
      }
      const std::size_t size = out.dtype == kFloat ? 4 : out.dtype == kDouble ? 8 : 0;
      if (size != 0 && content.size() % size != 0)
        throw DataLossError("tensor content of " + std::to_string(content.size()) +
                            " bytes is not a whole number of values");
      for (std::size_t i = 0; size != 0 && i < content.size(); i += size) {
        if (size == 4) {
          float f;
          std::memcpy(&f, content.data() + i, 4);
          out.values.push_back(static_cast<double>(f));
        } else {
          double d;
          std::memcpy(&d, content.data() + i, 8);
          out.values.push_back(d);
        }
      }
    } else if (value.field() == 9 && value.wire_type() == 2) {
      ProtoReader metadata(value.bytes());
      while (metadata.next()) {
        if (metadata.field() != 1 || metadata.wire_type() != 2) {
          metadata.skip();
          continue;
        }
        ProtoReader plugin(metadata.bytes());
        while (plugin.next()) {
          if (plugin.field() == 1 && plugin.wire_type() == 2)
            out.plugin = std::string(plugin.bytes());
          else
            plugin.skip();
        }
      }
    } else {
      value.skip();
    }
  }
  return out;
}

inline std::vector<GraphNode> read_graph(std::string_view data) {
  std::vector<GraphNode> nodes;
  ProtoReader graph(data);
  while (graph.next()) {
    if (graph.field() != 1 || graph.wire_type() != 2) {
      graph.skip();
      continue;
    }
    ProtoReader node(graph.bytes());
    GraphNode& out = nodes.emplace_back();
    while (node.next()) {
      if (node.wire_type() != 2) {
        node.skip();
        continue;
      }
      switch (node.field()) {
        case 1: out.name = std::string(node.bytes()); break;
        case 2: out.op = std::string(node.bytes()); break;
        case 3: out.inputs.emplace_back(node.bytes()); break;
        case 4: out.device = std::string(node.bytes()); break;
        default: node.skip();
      }
    }
  }
  return nodes;
}

inline Event read_event(std::string_view data) {
  Event event;
  ProtoReader reader(data);
  while (reader.next()) {
    const int field = reader.field(), wire = reader.wire_type();
    if (field == 1 && wire == 1) {
      const std::uint64_t bits = reader.fixed64();
      std::memcpy(&event.wall_time, &bits, 8);
    } else if (field == 2 && wire == 0) {
      event.step = static_cast<std::int64_t>(reader.varint());
    } else if (field == 3 && wire == 2) {
      event.file_version = std::string(reader.bytes());
    } else if (field == 4 && wire == 2) {
      event.has_graph = true;
      event.graph = read_graph(reader.bytes());
    } else if (field == 5 && wire == 2) {
      ProtoReader summary(reader.bytes());
      while (summary.next()) {
        if (summary.field() == 1 && summary.wire_type() == 2)
          event.values.push_back(read_value(summary.bytes()));
        else
          summary.skip();
      }
    } else {
      reader.skip();
    }
  }
  return event;
}

}  // namespace summary_detail

struct FileWriter::State {
  std::mutex mutex;
  std::string path;
  std::FILE* file = nullptr;
  ~State() {
    if (file) std::fclose(file);  // flushes; a failure here has no one left to tell
  }
};

DEVTENSOR_DEFINITION FileWriter::FileWriter(const std::string& log_dir) : state_(std::make_shared<State>()) {
  namespace fs = std::filesystem;
  const fs::path folder(log_dir.empty() ? "." : log_dir);
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw InvalidArgumentError("Could not create the summary folder '" + log_dir + "': " + error.message());
  static std::atomic<int> files_made{0};  // TensorFlow 2's per-process counter: no two files alike
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now).count()));
  state_->path = (folder / ("events.out.tfevents." + std::string(seconds) + "." + host + "." +
                            std::to_string(::getpid()) + "." + std::to_string(files_made.fetch_add(1)) + ".v2"))
                     .string();
  state_->file = std::fopen(state_->path.c_str(), "wb");
  if (!state_->file)
    throw InvalidArgumentError("Could not create the event file '" + state_->path + "': " + std::strerror(errno));
  // The version record, in whole seconds, with the writer's name (TensorFlow's source metadata).
  summary_detail::ProtoWriter version;
  version.fixed64(1, std::floor(std::chrono::duration<double>(now).count()))
      .bytes(3, "brain.Event:2")
      .message(10, summary_detail::ProtoWriter().bytes(1, "devtensor"));
  const std::lock_guard lock(state_->mutex);
  write_record(version.data());
  std::fflush(state_->file);
}

DEVTENSOR_DEFINITION const std::string& FileWriter::path() const noexcept { return state_->path; }

DEVTENSOR_DEFINITION void FileWriter::write_record(std::string_view data) {
  if (!state_->file)
    throw FailedPreconditionError("The event file '" + state_->path +
                                  "' is closed: make a new FileWriter to write more");
  // TFRecord: length, masked CRC of the length's 8 bytes, the data, masked CRC of the data.
  char header[12];
  const std::uint64_t length = data.size();
  std::memcpy(header, &length, 8);
  const std::uint32_t length_crc = masked_crc32c(std::string_view(header, 8));
  std::memcpy(header + 8, &length_crc, 4);
  const std::uint32_t data_crc = masked_crc32c(data);
  if (std::fwrite(header, 1, 12, state_->file) != 12 ||
      std::fwrite(data.data(), 1, data.size(), state_->file) != data.size() ||
      std::fwrite(&data_crc, 1, 4, state_->file) != 4)
    throw InvalidArgumentError("Could not write to the event file '" + state_->path + "': " + std::strerror(errno));
}

DEVTENSOR_DEFINITION void FileWriter::write_event(std::int64_t step, std::string_view fields) {
  const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  summary_detail::ProtoWriter event;
  event.fixed64(1, wall);
  if (step != 0) event.varint(2, static_cast<std::uint64_t>(step));  // proto3 leaves out a zero
  std::string data = event.data();
  data.append(fields);
  const std::lock_guard lock(state_->mutex);
  write_record(data);
}

DEVTENSOR_DEFINITION void FileWriter::scalar(std::string_view tag, double value, std::int64_t step) {
  const auto f = static_cast<float>(value);
  char raw[4];
  std::memcpy(raw, &f, 4);
  const auto summary =
      summary_detail::summary_of(tag, summary_detail::tensor_proto(summary_detail::kFloat, {}, {raw, 4}), "scalars");
  write_event(step, summary_detail::ProtoWriter().message(5, summary).data());
}

DEVTENSOR_DEFINITION void FileWriter::histogram(std::string_view tag, std::span<const double> data, std::int64_t step,
                                                int buckets) {
  const auto rows = histogram_buckets(data, buckets);
  std::string raw(rows.size() * 3 * sizeof(double), '\0');
  if (!rows.empty()) std::memcpy(raw.data(), rows.data(), raw.size());
  const std::array<std::int64_t, 2> shape{static_cast<std::int64_t>(rows.size()), 3};
  const auto summary =
      summary_detail::summary_of(tag, summary_detail::tensor_proto(summary_detail::kDouble, shape, raw), "histograms");
  write_event(step, summary_detail::ProtoWriter().message(5, summary).data());
}

DEVTENSOR_DEFINITION void FileWriter::graph(const std::vector<GraphNode>& nodes) {
  summary_detail::ProtoWriter graph;
  for (const auto& n : nodes) {
    summary_detail::ProtoWriter node;
    node.bytes(1, n.name).bytes(2, n.op);
    for (const auto& input : n.inputs) node.bytes(3, input);
    if (!n.device.empty()) node.bytes(4, n.device);
    graph.message(1, node);
  }
  write_event(0, summary_detail::ProtoWriter().bytes(4, graph.data()).data());
}

DEVTENSOR_DEFINITION void FileWriter::flush() {
  const std::lock_guard lock(state_->mutex);
  if (state_->file && std::fflush(state_->file) != 0)
    throw InvalidArgumentError("Could not write to the event file '" + state_->path + "': " + std::strerror(errno));
}

DEVTENSOR_DEFINITION void FileWriter::close() {
  const std::lock_guard lock(state_->mutex);
  if (!state_->file) return;
  const bool failed = std::fclose(state_->file) != 0;
  state_->file = nullptr;
  if (failed)
    throw InvalidArgumentError("Could not close the event file '" + state_->path + "': " + std::strerror(errno));
}

DEVTENSOR_DEFINITION std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError("Could not open the event file '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string_view all(bytes);
  std::vector<Event> events;
  std::size_t at = 0;
  while (at < all.size()) {
    if (all.size() - at < 12) throw DataLossError("truncated record at " + std::to_string(at) + " in " + path);
    std::uint64_t length;
    std::uint32_t length_crc;
    std::memcpy(&length, all.data() + at, 8);
    std::memcpy(&length_crc, all.data() + at + 8, 4);
    if (masked_crc32c(all.substr(at, 8)) != length_crc)
      throw DataLossError("corrupted record at " + std::to_string(at) + " in " + path);
    if (length > all.size() - at - 12 || all.size() - at - 12 - length < 4)
      throw DataLossError("truncated record at " + std::to_string(at) + " in " + path);
    const auto data = all.substr(at + 12, static_cast<std::size_t>(length));
    std::uint32_t data_crc;
    std::memcpy(&data_crc, all.data() + at + 12 + length, 4);
    if (masked_crc32c(data) != data_crc)
      throw DataLossError("corrupted record at " + std::to_string(at) + " in " + path);
    events.push_back(summary_detail::read_event(data));
    at += 12 + static_cast<std::size_t>(length) + 4;
  }
  return events;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::summary
