#pragma once
/// @file coordinator.hpp
/// @brief Topic header: asynchronous parameter-server training (the mpi component):
/// ParameterServerStrategy and ClusterCoordinator, with RemoteValue and per-worker datasets, plus
/// Keras's layers, losses and optimizers that its steps use (keras.hpp).

#include "devtensor/coordinator/cluster_coordinator.hpp"
#include "devtensor/coordinator/parameter_server_strategy.hpp"
#include "devtensor/coordinator/remote_value.hpp"
#include "devtensor/keras.hpp"
