// The walkthrough's digits (examples/data/digits.csv: 1797 rows of 64 pixels 0-16 and the digit),
// read for examples 16 and 18.
#pragma once

#include <devtensor/tensors.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

/// The digits: pixels scaled to [0, 1] as [n, 64], and the digits as class indices [n].
inline std::pair<devtensor::Tensor<float>, devtensor::Tensor<float>> read_digits(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw devtensor::NotFoundError("cannot open " + path + " (pass the path of examples/data/digits.csv)");
  std::vector<float> pixels, digits;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    for (int column = 0; std::getline(fields, field, ','); ++column)
      (column < 64 ? pixels : digits).push_back(column < 64 ? std::stof(field) / 16.0f : std::stof(field));
  }
  const auto n = static_cast<std::int64_t>(digits.size());
  return {devtensor::constant<float>(pixels, {n, 64}), devtensor::constant<float>(digits, {n})};
}
