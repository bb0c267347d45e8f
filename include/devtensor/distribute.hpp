#pragma once
/// @file distribute.hpp
/// @brief Topic header: data parallelism on one machine. MirroredStrategy with its cross-device ops,
/// distributed values and variables, distributed datasets, plus the eager core (tensors.hpp).
/// Across processes: <devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp> (the
/// mpi component); parameter servers: <devtensor/coordinator.hpp>.

#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/mirrored_strategy.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/tensors.hpp"
