#pragma once
/// @file graph.hpp
/// @brief Topic header: graphs. Traced functions (dt::function, TensorFlow's tf.function) and
/// TensorFlow 1's face (compat::v1: Graph, Session, placeholder, v1 variables), plus the eager core
/// (tensors.hpp) whose ops build the graphs.

#include "devtensor/graph/executor.hpp"
#include "devtensor/graph/function.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/graph/session.hpp"
#include "devtensor/graph/variables.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/tensors.hpp"
