#pragma once
/// @file reaches_in.hpp
/// @brief A fixture for headers.detail_private_caught: another folder's private helper used.
#include "devtensor/ops/private.hpp"
inline int twice() { return 2 * devtensor::op_detail::helper(); }
