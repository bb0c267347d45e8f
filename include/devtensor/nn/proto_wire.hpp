#pragma once
/// @file proto_wire.hpp
/// @brief Protocol buffers' wire format, the part TensorBoard's event files need (event_file.hpp,
/// Note [Events without protobuf]): fields written in order (varint, fixed64, length-delimited),
/// and read one by one, with a message cut short or a varint past 10 bytes a DataLossError.

#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use
#include <cstring>
#endif

namespace devtensor::summary {

namespace summary_detail {

/// Protocol buffers' wire format, for the messages above: fields appended in order.
class ProtoWriter {
 public:
  ProtoWriter& varint(int field, std::uint64_t value);
  ProtoWriter& fixed64(int field, double value);
  ProtoWriter& bytes(int field, std::string_view value);
  ProtoWriter& message(int field, const ProtoWriter& value) { return bytes(field, value.data_); }
  [[nodiscard]] const std::string& data() const noexcept { return data_; }

 private:
  std::string data_;
  void raw_varint(std::uint64_t value);
  void key(int field, int wire_type) {
    raw_varint(static_cast<std::uint64_t>(field) << 3 | static_cast<unsigned>(wire_type));
  }
};

/// Reads fields one by one; a length or varint past the end is DataLossError.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view data) noexcept : data_(data) {}
  /// The next field's number and wire type; false at the end.
  bool next();
  [[nodiscard]] int field() const noexcept { return field_; }
  [[nodiscard]] std::uint64_t varint();
  [[nodiscard]] std::uint64_t fixed64();
  [[nodiscard]] std::uint32_t fixed32();
  [[nodiscard]] std::string_view bytes();
  /// Skips the current field's value (any wire type but groups).
  void skip();
  [[nodiscard]] int wire_type() const noexcept { return wire_; }

 private:
  std::string_view data_;
  std::size_t at_ = 0;
  int field_ = 0;
  int wire_ = 0;
  std::string_view take(std::size_t n);
};

}  // namespace summary_detail

#if DEVTENSOR_HEADER_DEFINITIONS
namespace summary_detail {

DEVTENSOR_DEFINITION void ProtoWriter::raw_varint(std::uint64_t value) {
  while (value >= 0x80) {
    data_ += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  data_ += static_cast<char>(value);
}
DEVTENSOR_DEFINITION ProtoWriter& ProtoWriter::varint(int field, std::uint64_t value) {
  key(field, 0);
  raw_varint(value);
  return *this;
}
DEVTENSOR_DEFINITION ProtoWriter& ProtoWriter::fixed64(int field, double value) {
  key(field, 1);
  char raw[8];
  std::memcpy(raw, &value, 8);  // little-endian hosts only (as every platform devtensor builds for)
  data_.append(raw, 8);
  return *this;
}
DEVTENSOR_DEFINITION ProtoWriter& ProtoWriter::bytes(int field, std::string_view value) {
  key(field, 2);
  raw_varint(value.size());
  data_.append(value);
  return *this;
}

DEVTENSOR_DEFINITION std::string_view ProtoReader::take(std::size_t n) {
  if (n > data_.size() - at_)
    throw DataLossError("a message of the event file is cut short: " + std::to_string(n) + " bytes wanted at offset " +
                        std::to_string(at_) + " of " + std::to_string(data_.size()));
  const auto out = data_.substr(at_, n);
  at_ += n;
  return out;
}
DEVTENSOR_DEFINITION bool ProtoReader::next() {
  if (at_ == data_.size()) return false;
  const std::uint64_t k = varint();
  field_ = static_cast<int>(k >> 3);
  wire_ = static_cast<int>(k & 7);
  return true;
}
DEVTENSOR_DEFINITION std::uint64_t ProtoReader::varint() {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const auto byte = static_cast<unsigned char>(take(1)[0]);
    value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
  throw DataLossError("a varint of the event file runs past 10 bytes at offset " + std::to_string(at_));
}
DEVTENSOR_DEFINITION std::uint64_t ProtoReader::fixed64() {
  std::uint64_t v;
  std::memcpy(&v, take(8).data(), 8);
  return v;
}
DEVTENSOR_DEFINITION std::uint32_t ProtoReader::fixed32() {
  std::uint32_t v;
  std::memcpy(&v, take(4).data(), 4);
  return v;
}
DEVTENSOR_DEFINITION std::string_view ProtoReader::bytes() {
  const std::uint64_t n = varint();
  if (n > data_.size())
    throw DataLossError("a length of " + std::to_string(n) +
                        " bytes in the event file is longer "
                        "than its message (" +
                        std::to_string(data_.size()) + " bytes)");
  return take(static_cast<std::size_t>(n));
}
DEVTENSOR_DEFINITION void ProtoReader::skip() {
  switch (wire_) {
    case 0: (void)varint(); return;
    case 1: (void)take(8); return;
    case 2: (void)bytes(); return;
    case 5: (void)take(4); return;
    default:
      throw DataLossError("wire type " + std::to_string(wire_) + " of field " + std::to_string(field_) +
                          " is not one event files use");
  }
}

}  // namespace summary_detail
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::summary
