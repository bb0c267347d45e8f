#pragma once
/// @file summary.hpp
/// @brief model.summary() as Keras 3 prints it: a table drawn with box characters whose columns
/// take fixed shares of the line (Keras's positions), narrowed as the `rich` library narrows them,
/// cells wrapped at spaces and a word too long for its cell cut with "…".
///
/// The line is 88 characters for a chain of layers, 108 with the "Connected to" column, or the
/// terminal's width less 4 when that is narrower (COLUMNS, else the terminal, else 80: Python's
/// shutil.get_terminal_size), as Keras decides; SummaryOptions::line_length fixes it.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"

namespace devtensor {
namespace nn {

struct SummaryOptions {
  /// The table's width in characters; 0: Keras's default (see the file's comment).
  int line_length = 0;
};

namespace summary_detail {

/// What a summary shows: its rows and the parameter counts under the table.
struct SummaryTable {
  std::string model_name;
  bool connected_to = false;  // the fourth column
  std::vector<std::vector<std::string>> rows;
  std::int64_t trainable = 0;
  std::int64_t non_trainable = 0;
  /// A built optimizer's variables (its iteration count, int64, and learning rate, then its
  /// slots: Keras's "Optimizer params" line); 0 for none.
  std::int64_t optimizer_params = 0;
  std::int64_t optimizer_bytes = 0;
};

/// The terminal's columns as Python's shutil.get_terminal_size finds them (80 when unknown).
int terminal_columns();
/// 372.00 B, 1.50 KB, ...
std::string readable_memory_size(double bytes);
/// 1,234,567
std::string with_thousands(std::int64_t n);
/// `text` in lines of at most `width` characters: greedy at spaces, a word longer than the width
/// on its own line cut to width - 1 characters and "…".
std::vector<std::string> wrap(const std::string& text, int width);
void print(std::ostream& out, const SummaryTable& table, SummaryOptions options);

}  // namespace summary_detail

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION int summary_detail::terminal_columns() {
  if (const char* columns = std::getenv("COLUMNS")) {
    const int n = std::atoi(columns);
    if (n > 0) return n;
  }
  return 80;  // stdout is not asked: the summary goes to any ostream, and tests must not vary
}

DEVTENSOR_DEFINITION std::string summary_detail::readable_memory_size(double bytes) {
  static const char* const units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  char buffer[64];
  for (const char* unit : units) {
    if (bytes / 1024 < 1) {
      std::snprintf(buffer, sizeof buffer, "%.2f %s", bytes, unit);
      return buffer;
    }
    bytes /= 1024;
  }
  std::snprintf(buffer, sizeof buffer, "%.2f PB", bytes);
  return buffer;
}

DEVTENSOR_DEFINITION std::string summary_detail::with_thousands(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

DEVTENSOR_DEFINITION std::vector<std::string> summary_detail::wrap(const std::string& text, int width) {
  const auto w = static_cast<std::size_t>(width);
  std::vector<std::string> lines;
  std::string line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    std::size_t next = end;
    while (next < text.size() && text[next] == ' ') ++next;
    const std::string spaces = text.substr(end, next - end);
    if (!line.empty() && line.size() + word.size() > w) {
      lines.push_back(line);
      line.clear();
    }
    line += word + spaces;
    pos = next;
  }
  lines.push_back(line);
  for (auto& l : lines) {
    while (l.size() > w && !l.empty() && l.back() == ' ') l.pop_back();
    if (l.size() > w) l = l.substr(0, w - 1) + "\u2026";
  }
  return lines;
}

DEVTENSOR_DEFINITION void summary_detail::print(std::ostream& out, const SummaryTable& table, SummaryOptions options) {
  const std::vector<double> positions =
      table.connected_to ? std::vector<double>{0.3, 0.56, 0.74, 1.0} : std::vector<double>{0.45, 0.80, 1.0};
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  std::vector<bool> right{false, false, true};
  if (table.connected_to) {
    header.emplace_back("Connected to");
    right.push_back(false);
  }
  int line_length = options.line_length;
  if (line_length <= 0) line_length = std::min(table.connected_to ? 108 : 88, terminal_columns() - 4);
  const auto n = static_cast<int>(positions.size());
  // Keras's column widths, plus one space of padding each side...
  std::vector<int> widths;
  int current = 0;
  for (const double p : positions) {
    const int width = static_cast<int>(p * line_length) - current;
    if (width < 4) throw InvalidArgumentError("Insufficient console width to print summary.");
    widths.push_back(width + 2);
    current += width;
  }
  // ...then narrowed evenly to fit the line with its n + 1 borders (rich's ratio_reduce, rounding
  // halves to even as Python's round does).
  int total = 0;
  for (const int w : widths) total += w;
  int remaining = total - (line_length - (n + 1));
  if (remaining > 0) {
    int ratio_left = n;
    for (auto& w : widths) {
      const int take = std::min(w, static_cast<int>(std::nearbyint(static_cast<double>(remaining) / ratio_left)));
      w -= take;
      remaining -= take;
      --ratio_left;
    }
  }
  const auto rule = [&](const char* left, const char* fill, const char* middle, const char* right_end) {
    out << left;
    for (int c = 0; c < n; ++c) {
      for (int i = 0; i < widths[static_cast<std::size_t>(c)]; ++i) out << fill;
      out << (c + 1 < n ? middle : right_end);
    }
    out << "\n";
  };
  const auto row = [&](const std::vector<std::string>& cells, const char* bar) {
    std::vector<std::vector<std::string>> wrapped;
    std::size_t height = 1;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      wrapped.push_back(wrap(cells[c], widths[c] - 2));
      height = std::max(height, wrapped.back().size());
    }
    for (std::size_t l = 0; l < height; ++l) {
      out << bar;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const std::string text = l < wrapped[c].size() ? wrapped[c][l] : "";
        std::size_t shown = 0;  // characters, "…" being one
        for (const char ch : text) shown += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
        const std::string pad(
            static_cast<std::size_t>(widths[c] - 2) - std::min(shown, static_cast<std::size_t>(widths[c] - 2)), ' ');
        out << " " << (right[c] ? pad + text : text + pad) << " " << bar;
      }
      out << "\n";
    }
  };
  out << "Model: \"" << table.model_name << "\"\n";
  rule("\u250f", "\u2501", "\u2533", "\u2513");
  row(header, "\u2503");
  rule("\u2521", "\u2501", "\u2547", "\u2529");
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    if (r > 0) rule("\u251c", "\u2500", "\u253c", "\u2524");
    row(table.rows[r], "\u2502");
  }
  rule("\u2514", "\u2500", "\u2534", "\u2518");
  const auto count = [](std::int64_t params, std::int64_t bytes) {
    return with_thousands(params) + " (" + readable_memory_size(static_cast<double>(bytes)) + ")";
  };
  const std::int64_t weights = table.trainable + table.non_trainable;
  out << " Total params: " << count(weights + table.optimizer_params, 4 * weights + table.optimizer_bytes) << "\n";
  out << " Trainable params: " << count(table.trainable, 4 * table.trainable) << "\n";
  out << " Non-trainable params: " << count(table.non_trainable, 4 * table.non_trainable) << "\n";
  if (table.optimizer_params > 0)
    out << " Optimizer params: " << count(table.optimizer_params, table.optimizer_bytes) << "\n";
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
