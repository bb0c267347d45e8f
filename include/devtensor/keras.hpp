#pragma once
/// @file keras.hpp
/// @brief Topic header: Keras. Sequential and functional models, fit/evaluate/predict (traced,
/// and under MirroredStrategy), callbacks, summaries, TensorBoard, plus a model's pieces (layers.hpp:
/// layers, losses, metrics, optimizers, schedules, initializers, datasets, the eager core). Keras
/// weights files: link devtensor::hdf5 (included then).

#include "devtensor/layers.hpp"
#include "devtensor/nn/backup_and_restore.hpp"
#include "devtensor/nn/callbacks.hpp"
#include "devtensor/nn/functional.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/merging.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/progress.hpp"
#include "devtensor/nn/sequential.hpp"
#include "devtensor/nn/summary.hpp"
#include "devtensor/nn/tensorboard.hpp"

#if defined(DEVTENSOR_WITH_HDF5)
#include "devtensor/hdf5/weights.hpp"
#endif
