#pragma once
/// @file callback_utils.hpp
/// @brief What Keras's callbacks (callbacks.hpp) share: Python's text for numbers and checkpoint
/// paths (Keras prints and names files with them), the monitored value's direction and its
/// improvement test (Keras's MonitorCallback), and files written whole or not at all.

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/nn/callback.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use, out of the compiled mode's users' way
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <unistd.h>
#endif

namespace devtensor {
namespace nn {
namespace callbacks {

/// When a callback saves (ModelCheckpoint's, BackupAndRestore's save_freq): "epoch", or every so
/// many batches. @throws InvalidArgumentError for another text or fewer than 1 batch.
struct SaveFrequency {
  SaveFrequency(const char* every);   // NOLINT: implicit, as Keras's save_freq="epoch"
  SaveFrequency(std::int64_t every);  // NOLINT: implicit, as save_freq=100
  SaveFrequency(int every) : SaveFrequency(static_cast<std::int64_t>(every)) {}  // NOLINT
  std::int64_t batches = 0;                                                      // 0: every epoch
};

namespace callbacks_detail {

/// Counts the batches since a callback last saved, on across epochs (Keras's
/// _batches_seen_since_last_saving): a batch index that did not grow starts a new epoch.
struct BatchCounter {
  std::int64_t since = 0;
  std::optional<std::int64_t> last;
  /// Counts up to `batch` (its index in the epoch); true when `every` batches have passed since
  /// the last time it said so.
  bool due(std::int64_t batch, std::int64_t every) {
    since += !last || batch <= *last ? batch + 1 : batch - *last;
    last = batch;
    if (since < every) return false;
    since = 0;
    return true;
  }
};

/// Python's repr of a float (the shortest text that reads back, fixed from 1e-4 up to 1e16,
/// else scientific as "1e-05"): how Keras's messages and CSV files print numbers.
std::string python_float(double value);

/// Python's `template.format(epoch=..., batch=..., **logs)` for the fields ModelCheckpoint's
/// paths use: `{name}` and `{name:[0][width][.precision][d|f|e|g|%]}`; `{{` and `}}` are braces.
/// Integers are `epoch` and `batch` (when given). @throws InvalidArgumentError naming a field
/// that is not there (Keras's KeyError text) or a format it cannot apply.
std::string format_path(std::string_view path_template, int epoch, std::optional<std::int64_t> batch, const Logs& logs);

/// What EarlyStopping, ModelCheckpoint and ReduceLROnPlateau share (Keras's MonitorCallback): the
/// direction of the monitored value and whether a value improves on the best.
struct Monitor {
  bool less = true;
  bool decided = false;
  /// mode "min"/"max", or "auto": less for "loss" and "..._loss" (after "val_"), greater for
  /// accuracies. @throws InvalidArgumentError for "auto" on another name (Keras's text).
  void decide(std::string_view callback, const std::string& monitor, std::string_view mode);
  /// monitor_op(current - min_delta, reference) with min_delta's sign of the direction; no
  /// reference is always improved on.
  [[nodiscard]] bool improves(double current, std::optional<double> reference, double min_delta) const {
    if (!reference) return true;
    const double delta = std::abs(min_delta);
    return less ? current + delta < *reference : current - delta > *reference;
  }
};
/// Keras's warning for an unknown mode ("auto" is used instead).
void warn_unknown_mode(std::string_view callback, std::string_view mode);
/// Writes a file through `write(temporary path)` and renames it to `path` (creating its folder).
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace callbacks_detail

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION SaveFrequency::SaveFrequency(const char* every) {
  if (every == nullptr || std::string_view(every) != "epoch")
    throw InvalidArgumentError(std::string("Unrecognized save_freq: ") + (every ? every : "(null)") +
                               ". Expected save_freq are 'epoch' or integer values");
}

DEVTENSOR_DEFINITION SaveFrequency::SaveFrequency(std::int64_t every) : batches(every) {
  if (every < 1)
    throw InvalidArgumentError("Unrecognized save_freq: " + std::to_string(every) +
                               ". Expected save_freq are 'epoch' or integer values (a number of batches >= 1)");
}

DEVTENSOR_DEFINITION std::string callbacks_detail::python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific).ptr;
  const std::string text(buffer, end);  // "-d.ddde±XX"
  const auto e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exponent = std::stoi(text.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {  // scientific: "1e-05", "1.5e+16"
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const auto whole = static_cast<std::size_t>(exponent + 1);
  if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0') + ".0";
  return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

DEVTENSOR_DEFINITION std::string callbacks_detail::format_path(std::string_view path_template, int epoch,
                                                               std::optional<std::int64_t> batch, const Logs& logs) {
  const auto key_error = [&](const std::string& reason) {
    return InvalidArgumentError("Failed to format this callback filepath: \"" + std::string(path_template) +
                                "\". Reason: " + reason);
  };
  std::string out;
  for (std::size_t i = 0; i < path_template.size(); ++i) {
    const char c = path_template[i];
    if ((c == '{' || c == '}') && i + 1 < path_template.size() && path_template[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') throw key_error("Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const auto close = path_template.find('}', i);
    if (close == std::string_view::npos) throw key_error("Single '{' encountered in format string");
    const std::string_view field = path_template.substr(i + 1, close - i - 1);
    i = close;
    const auto colon = field.find(':');
    const std::string name(field.substr(0, colon));
    const std::string_view spec = colon == std::string_view::npos ? std::string_view{} : field.substr(colon + 1);
    std::optional<std::int64_t> integer;
    std::optional<double> real;
    if (name == "epoch")
      integer = epoch + 1;
    else if (name == "batch" && batch && !log_value(logs, "batch"))
      integer = *batch + 1;
    else if (const auto v = log_value(logs, name))
      real = *v;
    else
      throw key_error("'" + name + "'");
    // [0][width][.precision][type]
    std::size_t p = 0;
    bool zero = false;
    if (p < spec.size() && spec[p] == '0') {
      zero = true;
      ++p;
    }
    int width = 0;
    while (p < spec.size() && spec[p] >= '0' && spec[p] <= '9') width = width * 10 + (spec[p++] - '0');
    int precision = -1;
    if (p < spec.size() && spec[p] == '.') {
      precision = 0;
      ++p;
      while (p < spec.size() && spec[p] >= '0' && spec[p] <= '9') precision = precision * 10 + (spec[p++] - '0');
    }
    const char type = p < spec.size() ? spec[p++] : '\0';
    if (p != spec.size() || (type && std::string_view("dfFeEgG%").find(type) == std::string_view::npos))
      throw key_error("the format '" + std::string(spec) + "' of field '" + name +
                      "' is not one of [0][width][.precision][d|f|e|g|%]");
    std::string text;
    char buffer[128];
    if (type == 'd') {
      if (!integer) throw key_error("Unknown format code 'd' for object of type 'float' (field '" + name + "')");
      std::snprintf(buffer, sizeof buffer, zero ? "%0*lld" : "%*lld", width, static_cast<long long>(*integer));
      text = buffer;
    } else if (type == '\0' && precision < 0) {
      text = integer ? std::to_string(*integer) : python_float(*real);
      if (static_cast<int>(text.size()) < width)
        text.insert(0, static_cast<std::size_t>(width) - text.size(), zero ? '0' : ' ');
    } else {
      const double v = integer ? static_cast<double>(*integer) : *real;
      const int digits = precision < 0 ? 6 : precision;
      const char conversion = type == '\0' ? 'g' : type == '%' ? 'f' : type;
      const std::string format = std::string("%") + (zero ? "0" : "") + "*.*" + conversion;
      std::snprintf(buffer, sizeof buffer, format.c_str(), type == '%' ? 0 : width, digits, type == '%' ? v * 100 : v);
      text = buffer;
      if (type == '%') text += "%";
    }
    out += text;
  }
  return out;
}

DEVTENSOR_DEFINITION void callbacks_detail::Monitor::decide(std::string_view callback, const std::string& monitor,
                                                            std::string_view mode) {
  decided = true;
  if (mode == "min" || mode == "max") {
    less = mode == "min";
    return;
  }
  const std::string_view name = std::string_view(monitor).substr(monitor.rfind("val_", 0) == 0 ? 4 : 0);
  const auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (name == "loss" || ends_with("_loss")) {
    less = true;
    return;
  }
  if (name == "acc" || ends_with("accuracy") || ends_with("_acc")) {
    less = false;
    return;
  }
  decided = false;
  throw InvalidArgumentError(std::string(callback) + " callback received monitor=" + monitor +
                             ", but Keras isn't able to automatically determine whether that metric should be "
                             "maximized or minimized. Pass `mode='max'` in order to monitor based on the highest "
                             "metric value, or pass `mode='min'` in order to use the lowest value.");
}

DEVTENSOR_DEFINITION void callbacks_detail::warn_unknown_mode(std::string_view callback, std::string_view mode) {
  if (mode != "auto" && mode != "min" && mode != "max")
    log(LogSource::python_logger, LogSeverity::warning,
        std::string(callback) + " mode '" + std::string(mode) + "' is unknown, fallback to auto mode.");
}

DEVTENSOR_DEFINITION void callbacks_detail::write_atomically(const std::string& path,
                                                             const std::function<void(const std::string&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  if (fs::is_directory(target))
    throw InvalidArgumentError(
        "Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an "
        "existing directory: " +
        path);
  // Beside the target (the same file system, so the rename is atomic), ending as it does.
  const fs::path temporary = target.parent_path() / ("." + target.filename().string() + ".tmp" +
                                                     std::to_string(::getpid()) + "-" + target.filename().string());
  try {
    write(temporary.string());
    fs::rename(temporary, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace callbacks
}  // namespace nn
}  // namespace devtensor
