#pragma once
/// @file coordinator.hpp
/// @brief Topic header: asynchronous parameter-server training (the mpi component):
/// ParameterServerStrategy and ClusterCoordinator, with RemoteValue and per-worker datasets, plus
/// the layers, losses and optimizers that its steps use (layers.hpp). Keras models and fit:
/// include <devtensor/keras.hpp> too.

#include "devtensor/coordinator/cluster_coordinator.hpp"
#include "devtensor/coordinator/parameter_server_strategy.hpp"
#include "devtensor/coordinator/remote_value.hpp"
#include "devtensor/layers.hpp"
