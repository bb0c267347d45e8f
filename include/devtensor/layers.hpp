#pragma once
/// @file layers.hpp
/// @brief Topic header: a model's pieces without the model. Layers (core, convolution, pooling,
/// normalization, reshaping), losses, metrics, optimizers and learning-rate schedules,
/// initializers, datasets, plus the eager core (tensors.hpp): what a custom training loop
/// (GradientTape and an optimizer's apply_gradients) uses. <devtensor/keras.hpp> adds models
/// (Sequential, functional), fit/evaluate/predict, callbacks, summaries, TensorBoard and files.

#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/conv_layers.hpp"
#include "devtensor/nn/core_layers.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/layers.hpp"
#include "devtensor/nn/loss_scale_optimizer.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/normalization.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/nn/reshaping_layers.hpp"
#include "devtensor/nn/schedules.hpp"
#include "devtensor/tensors.hpp"
