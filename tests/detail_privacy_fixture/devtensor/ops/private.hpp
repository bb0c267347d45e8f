#pragma once
/// @file private.hpp
/// @brief A fixture for headers.detail_private_caught: a folder's private helper.
namespace devtensor::op_detail {
inline int helper() { return 1; }
}  // namespace devtensor::op_detail
