#pragma once
/// @file grad_ops.hpp
/// @brief The kernels gradients use that are not user ops (grad_ops::relu_grad, sigmoid_grad,
/// tanh_grad, sqrt_grad, greater_equal, equal): defined with the elementwise ops.

#include "devtensor/ops/elementwise.hpp"
