#pragma once
/// @file keras.hpp
/// @brief Topic header: Keras. Layers, Sequential and functional models, losses, metrics,
/// optimizers and learning-rate schedules, initializers, callbacks, fit/evaluate/predict (traced,
/// and under MirroredStrategy), datasets, plus the eager core (tensors.hpp). Keras weights files: link devtensor::hdf5
/// (included then).

#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/backup_and_restore.hpp"
#include "devtensor/nn/callbacks.hpp"
#include "devtensor/nn/conv_layers.hpp"
#include "devtensor/nn/core_layers.hpp"
#include "devtensor/nn/functional.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/layers.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/merging.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/normalization.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/nn/progress.hpp"
#include "devtensor/nn/reshaping_layers.hpp"
#include "devtensor/nn/schedules.hpp"
#include "devtensor/nn/sequential.hpp"
#include "devtensor/nn/summary.hpp"
#include "devtensor/nn/tensorboard.hpp"
#include "devtensor/tensors.hpp"

#if defined(DEVTENSOR_WITH_HDF5)
#include "devtensor/hdf5/weights.hpp"
#endif
