#pragma once
/// @file error.hpp
/// @brief Convenience path for <devtensor/core/error.hpp>.
#include "devtensor/core/error.hpp"
