#pragma once
/// @file devtensor.hpp
/// @brief The umbrella header: everything devtensor offers in this translation unit's flavour.

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/device_lib.hpp"
#include "devtensor/device/physical.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/bfc.hpp"
#include "devtensor/memory/info.hpp"
#include "devtensor/memory/policies.hpp"
#include "devtensor/memory/stats.hpp"
#include "devtensor/memory/sub_allocators.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/matmul.hpp"
#include "devtensor/ops/op_types.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/random.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/print.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/version.hpp"

#if DEVTENSOR_CUDA_RUNTIME
#include "devtensor/backend/cuda/platform.hpp"
#endif
