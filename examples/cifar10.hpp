// CIFAR-10's binary format (https://www.cs.toronto.edu/~kriz/cifar.html, "the binary version"):
// a file is records of 3073 bytes, a label byte (0-9) then 32x32 pixels of red, green and blue in
// turn, each plane row-major. Read for example 19 as TensorFlow's CIFAR-10 tutorial reads it
// (cifar10_input.py: the depth-major record turned to [32, 32, 3], cropped to 24x24 at the
// centre, standardised per image), and written, for a file made from the shipped digits.
#pragma once

#include <devtensor/tensors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cifar10 {

inline constexpr std::int64_t kSide = 32, kDepth = 3;
inline constexpr std::int64_t kImageBytes = kSide * kSide * kDepth;
inline constexpr std::int64_t kRecordBytes = 1 + kImageBytes;
inline constexpr std::int64_t kCropped = 24;  // the tutorial's IMAGE_SIZE

/// Records as they are stored: each image's bytes depth-major ([3, 32, 32]), and its label.
struct Records {
  std::vector<std::uint8_t> images;
  std::vector<std::int32_t> labels;
  [[nodiscard]] std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
};

/// Every record of a CIFAR-10 binary file. @throws devtensor::NotFoundError for a file that
/// cannot be opened; devtensor::DataLossError for a size that is not whole records or a label
/// above 9 (the file is not CIFAR-10's binary version, or is truncated).
inline Records read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw devtensor::NotFoundError("cannot open " + path +
                                   ": pass the path of a CIFAR-10 binary batch (data_batch_1.bin)");
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto size = static_cast<std::int64_t>(bytes.size());
  if (size == 0 || size % kRecordBytes != 0)
    throw devtensor::DataLossError(
        path + " is not a CIFAR-10 binary batch: " + std::to_string(size) +
        " bytes is not a whole number of 3073-byte records (a label byte and 32x32x3 pixels)");
  Records records;
  records.images.reserve(static_cast<std::size_t>(size / kRecordBytes * kImageBytes));
  for (std::int64_t at = 0; at < size; at += kRecordBytes) {
    const std::uint8_t label = bytes[static_cast<std::size_t>(at)];
    if (label > 9)
      throw devtensor::DataLossError(path + ": record " + std::to_string(at / kRecordBytes) + " has label " +
                                     std::to_string(label) + ", not 0-9: not a CIFAR-10 binary batch");
    records.labels.push_back(label);
    const auto first = bytes.begin() + static_cast<std::ptrdiff_t>(at + 1);
    records.images.insert(records.images.end(), first, first + kImageBytes);
  }
  return records;
}

/// Writes records in the binary format (images depth-major, as stored).
inline void write_records(const std::string& path, const Records& records) {
  std::ofstream out(path, std::ios::binary);
  for (std::int64_t r = 0; r < records.size(); ++r) {
    out.put(static_cast<char>(records.labels[static_cast<std::size_t>(r)]));
    out.write(reinterpret_cast<const char*>(records.images.data() + r * kImageBytes), kImageBytes);
  }
  if (!out) throw devtensor::UnavailableError("cannot write " + path);
}

/// Images [first, first + count) as the tutorial's inputs: HWC, the centre 24x24, each image
/// standardised (tf.image.per_image_standardization: (x − mean) / max(stddev, 1/√N)).
inline std::vector<float> inputs(const Records& records, std::int64_t first, std::int64_t count) {
  const std::int64_t offset = (kSide - kCropped) / 2, n = kCropped * kCropped * kDepth;
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(count * n));
  for (std::int64_t i = first; i < first + count; ++i) {
    const std::uint8_t* image = records.images.data() + (i % records.size()) * kImageBytes;
    const auto begin = out.size();
    for (std::int64_t r = 0; r < kCropped; ++r)
      for (std::int64_t c = 0; c < kCropped; ++c)
        for (std::int64_t d = 0; d < kDepth; ++d)
          out.push_back(static_cast<float>(image[(d * kSide + r + offset) * kSide + c + offset]));
    double sum = 0, squares = 0;
    for (auto k = begin; k < out.size(); ++k) {
      sum += out[k];
      squares += static_cast<double>(out[k]) * out[k];
    }
    const double mean = sum / static_cast<double>(n);
    const double stddev = std::sqrt(std::max(0.0, squares / static_cast<double>(n) - mean * mean));
    const double scale = std::max(stddev, 1.0 / std::sqrt(static_cast<double>(n)));
    for (auto k = begin; k < out.size(); ++k) out[k] = static_cast<float>((out[k] - mean) / scale);
  }
  return out;
}

/// Labels [first, first + count).
inline std::vector<std::int32_t> labels(const Records& records, std::int64_t first, std::int64_t count) {
  std::vector<std::int32_t> out;
  for (std::int64_t i = first; i < first + count; ++i)
    out.push_back(records.labels[static_cast<std::size_t>(i % records.size())]);
  return out;
}

}  // namespace cifar10
