// The cudnn component's code, compiled once per build tree by the host compiler
// (cmake/devtensorCudaComponent.cmake adds this object to every program that links
// devtensor::cudnn): float32 Conv2D and its two backprops on real GPUs through cuDNN 9, installed
// at start-up as the CUDA bodies' convolution engine (Note [A GPU convolution engine] in
// ops/cuda/convolution_engine.hpp). Without CMake: compile this file once (-I<cudnn>/include
// -I<cuda>/include) and link its object with libcudnn.so.9, setting a run path to its directory.
//
// The API is cuDNN's convolution API of descriptors (cudnnConvolutionForward and the two
// backward calls), which cuDNN 9 keeps and marks deprecated (its warnings are off unless
// CUDNN_WARN_DEPRECATED is defined) in favour of the graph API; PyTorch's and TensorFlow's older
// paths call the same functions. Activations are described as NHWC and read in place; cuDNN takes
// filters as KRSC (out, rows, cols, in), so the HWIO filter is transposed on the device by
// cudnnTransformTensor, and a filter's gradient back (a few hundred KB at most for these models).
// Algorithms come from cuDNN's heuristics (cudnnGetConvolution*Algorithm_v7: PyTorch's default,
// benchmark off), chosen once per geometry and kept (Note [cuDNN plans]).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/matmul_options.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/ops/cuda/convolution_engine.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::ops::cuda::cudnn_detail {
namespace {

/// cuDNN has no kernel for a configuration (or, while describing it, finds a parameter outside
/// its limits): the CUDA body runs instead.
struct Declined {};

void check(cudnnStatus_t status, const char* what, bool describing = false) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(status));
  if (category == CUDNN_STATUS_NOT_SUPPORTED || (describing && category == CUDNN_STATUS_BAD_PARAM)) throw Declined{};
  const std::string message = std::string("cuDNN call ") + what + " failed: " + cudnnGetErrorString(status);
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    throw ResourceExhaustedError(message);
  if (status == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED || status == CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    throw FailedPreconditionError(message +
                                  ": cuDNN's libraries (libcudnn_*.so.9) must all be in libcudnn.so.9's directory, "
                                  "of one version");
  throw InternalError(message);
}
#define DEVTENSOR_CUDNN_CHECK(call) check((call), #call)
#define DEVTENSOR_CUDNN_DESCRIBE(call) check((call), #call, /*describing=*/true)

/// A cuDNN descriptor, destroyed with its owner.
template <class Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class Owned {
 public:
  Owned() { check(Create(&handle_), "cudnnCreate*Descriptor"); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { (void)Destroy(handle_); }
  [[nodiscard]] Handle get() const noexcept { return handle_; }

 private:
  Handle handle_ = nullptr;
};
using TensorDescriptor = Owned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Owned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Owned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

// One cuDNN handle per (GPU, stream), used under its own mutex and never destroyed (as the cuBLAS
// handles, backend/cuda/cublas.hpp: static destructors would race the CUDA runtime's teardown).
struct HandleEntry {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};
class Handles {
 public:
  static Handles& global() {
    static auto* handles = new Handles();
    return *handles;
  }
  std::pair<cudnnHandle_t, std::unique_lock<std::mutex>> acquire(int ordinal, cudaStream_t stream) {
    HandleEntry* entry = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto& slot = entries_[{ordinal, stream}];
      if (!slot) {
        auto created = std::make_unique<HandleEntry>();
        backend::cuda::DeviceGuard guard(ordinal);
        DEVTENSOR_CUDNN_CHECK(cudnnCreate(&created->handle));
        DEVTENSOR_CUDNN_CHECK(cudnnSetStream(created->handle, stream));
        slot = std::move(created);
      }
      entry = slot.get();
    }
    std::unique_lock lock(entry->mutex);
    return {entry->handle, std::move(lock)};
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<int, cudaStream_t>, std::unique_ptr<HandleEntry>> entries_;
};

// Note [cuDNN plans]
// A plan is the four descriptors of one convolution (input, filter, output, the convolution with
// its math type) and the algorithm cuDNN's heuristics rank first among those it can run with the
// math allowed: TF32 tensor cores while config::experimental::enable_tensor_float_32_execution is
// on (the default, as TensorFlow's), CUDNN_FMA_MATH once it is off, so a GPU result matches the
// CPU's to float32 accuracy, as the cuBLAS GEMMs). Plans are kept per (direction, GPU, TF32, geometry) — a training
// loop asks the same few convolutions again at every step — and a geometry cuDNN cannot express (SAME padding that pads
// more after than before: cuDNN pads symmetrically) is kept as declined.

enum class Direction : std::int64_t { forward, backprop_input, backprop_filter };

struct Descriptors {
  TensorDescriptor input, output;
  FilterDescriptor filter;
  ConvolutionDescriptor convolution;
};

struct Plan {
  Descriptors descriptors;
  // The filter seen in both layouts, for the HWIO <-> KRSC transposes each call makes.
  TensorDescriptor hwio_view, krsc_view;
  bool usable = false;
  int algorithm = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  std::size_t workspace_bytes = 0;
};

using Key = std::array<std::int64_t, 18>;
Key key_of(Direction direction, int ordinal, bool tf32, const WindowGeometry& g, std::int64_t out_depth) {
  return {static_cast<std::int64_t>(direction),
          ordinal,
          tf32 ? 1 : 0,
          out_depth,
          g.batch,
          g.in_rows,
          g.in_cols,
          g.channels,
          g.k_rows,
          g.k_cols,
          g.out_rows,
          g.out_cols,
          g.pad_top,
          g.pad_left,
          g.stride_rows,
          g.stride_cols,
          g.dil_rows,
          g.dil_cols};
}

int as_int(std::int64_t v) {
  if (v > INT32_MAX) throw Declined{};  // cuDNN's descriptors take int sizes
  return static_cast<int>(v);
}

/// The math a result of the heuristics may use: FMA only, or TF32 tensor cores too (never the
/// down-conversion to half precision).
bool allowed(cudnnMathType_t math, bool tf32) {
  return tf32 ? math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : math == CUDNN_FMA_MATH;
}

/// The most workspace an algorithm may ask for (TensorFlow's default limit, 4 GiB).
constexpr std::size_t kWorkspaceLimit = std::size_t{4} << 30;

/// Describes the convolution; false when cuDNN's output size differs from TensorFlow's (padding
/// cuDNN cannot express).
bool describe(Descriptors& d, const WindowGeometry& g, std::int64_t out_depth, bool tf32) {
  DEVTENSOR_CUDNN_DESCRIBE(cudnnSetTensor4dDescriptor(d.input.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                      as_int(g.batch), as_int(g.channels), as_int(g.in_rows),
                                                      as_int(g.in_cols)));
  DEVTENSOR_CUDNN_DESCRIBE(cudnnSetFilter4dDescriptor(d.filter.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                                      as_int(out_depth), as_int(g.channels), as_int(g.k_rows),
                                                      as_int(g.k_cols)));
  DEVTENSOR_CUDNN_DESCRIBE(cudnnSetConvolution2dDescriptor(
      d.convolution.get(), as_int(g.pad_top), as_int(g.pad_left), as_int(g.stride_rows), as_int(g.stride_cols),
      as_int(g.dil_rows), as_int(g.dil_cols), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DEVTENSOR_CUDNN_DESCRIBE(
      cudnnSetConvolutionMathType(d.convolution.get(), tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  std::array<int, 4> out{};
  DEVTENSOR_CUDNN_DESCRIBE(cudnnGetConvolution2dForwardOutputDim(d.convolution.get(), d.input.get(), d.filter.get(),
                                                                 &out[0], &out[1], &out[2], &out[3]));
  if (out != std::array<int, 4>{as_int(g.batch), as_int(out_depth), as_int(g.out_rows), as_int(g.out_cols)})
    return false;
  DEVTENSOR_CUDNN_DESCRIBE(cudnnSetTensor4dDescriptor(d.output.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                      as_int(g.batch), as_int(out_depth), as_int(g.out_rows),
                                                      as_int(g.out_cols)));
  return true;
}

/// The first result of the heuristics that succeeded, uses allowed math and fits the workspace
/// limit: its algorithm, math and workspace. False when none.
template <class Perf>
bool choose(Plan& plan, const std::vector<Perf>& results, int returned, bool tf32) {
  for (int i = 0; i < returned; ++i) {
    const Perf& r = results[static_cast<std::size_t>(i)];
    if (r.status != CUDNN_STATUS_SUCCESS || !allowed(r.mathType, tf32) || r.memory > kWorkspaceLimit) continue;
    DEVTENSOR_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.descriptors.convolution.get(), r.mathType));
    plan.algorithm = static_cast<int>(r.algo);
    plan.workspace_bytes = r.memory;
    return true;
  }
  return false;
}

/// The filter as cuDNN describes it: [out_depth, k_rows, k_cols, channels] (KRSC) seen as a 4-D
/// tensor (n = out, c = in, h = rows, w = cols) with the strides of either layout.
void set_filter_view(cudnnTensorDescriptor_t view, const WindowGeometry& g, std::int64_t out_depth, bool hwio) {
  const int o = as_int(out_depth), i = as_int(g.channels), h = as_int(g.k_rows), w = as_int(g.k_cols);
  if (hwio)
    DEVTENSOR_CUDNN_DESCRIBE(cudnnSetTensor4dDescriptorEx(view, CUDNN_DATA_FLOAT, o, i, h, w, 1, o, w * i * o, i * o));
  else
    DEVTENSOR_CUDNN_DESCRIBE(cudnnSetTensor4dDescriptorEx(view, CUDNN_DATA_FLOAT, o, i, h, w, h * w * i, 1, w * i, i));
}

void make_plan(Plan& plan, cudnnHandle_t handle, Direction direction, const WindowGeometry& g, std::int64_t out_depth,
               bool tf32) {
  Descriptors& d = plan.descriptors;
  if (!describe(d, g, out_depth, tf32)) return;
  set_filter_view(plan.hwio_view.get(), g, out_depth, /*hwio=*/true);
  set_filter_view(plan.krsc_view.get(), g, out_depth, /*hwio=*/false);
  int count = 0;
  int returned = 0;
  switch (direction) {
    case Direction::forward: {
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<std::size_t>(count));
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.input.get(), d.filter.get(),
                                                                   d.convolution.get(), d.output.get(), count,
                                                                   &returned, results.data()));
      plan.usable = choose(plan, results, returned, tf32);
      if (plan.usable)
        DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            handle, d.input.get(), d.filter.get(), d.convolution.get(), d.output.get(),
            static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm), &plan.workspace_bytes));
      return;
    }
    case Direction::backprop_input: {
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(static_cast<std::size_t>(count));
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.filter.get(), d.output.get(),
                                                                        d.convolution.get(), d.input.get(), count,
                                                                        &returned, results.data()));
      plan.usable = choose(plan, results, returned, tf32);
      if (plan.usable)
        DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, d.filter.get(), d.output.get(), d.convolution.get(), d.input.get(),
            static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm), &plan.workspace_bytes));
      return;
    }
    case Direction::backprop_filter: {
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(static_cast<std::size_t>(count));
      DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.input.get(), d.output.get(),
                                                                          d.convolution.get(), d.filter.get(), count,
                                                                          &returned, results.data()));
      plan.usable = choose(plan, results, returned, tf32);
      if (plan.usable)
        DEVTENSOR_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, d.input.get(), d.output.get(), d.convolution.get(), d.filter.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm), &plan.workspace_bytes));
      return;
    }
  }
}

class Plans {
 public:
  static Plans& global() {
    static auto* plans = new Plans();  // holds descriptors: never destroyed, as the handles
    return *plans;
  }
  /// The plan for this convolution, made on first use with `handle` (a handle of the same GPU).
  std::shared_ptr<const Plan> get(cudnnHandle_t handle, Direction direction, int ordinal, const WindowGeometry& g,
                                  std::int64_t out_depth, bool tf32) {
    const Key key = key_of(direction, ordinal, tf32, g, out_depth);
    {
      std::lock_guard lock(mutex_);
      if (const auto found = plans_.find(key); found != plans_.end()) return found->second;
    }
    auto plan = std::make_shared<Plan>();
    try {
      make_plan(*plan, handle, direction, g, out_depth, tf32);
    } catch (const Declined&) {
      plan->usable = false;
    }
    std::lock_guard lock(mutex_);
    if (plans_.size() >= kMostPlans) plans_.clear();  // shapes that never repeat: start again
    return plans_.emplace(key, std::move(plan)).first->second;
  }

 private:
  static constexpr std::size_t kMostPlans = 1024;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Plan>> plans_;
};

std::atomic<std::int64_t> run_count{0};
std::int64_t runs() { return run_count.load(std::memory_order_relaxed); }

/// A device buffer of `bytes` from the device's allocator (stream-ordered: free again when the
/// body returns, reusable by the next op on the same stream).
std::shared_ptr<TensorStorage> device_buffer(const Device& device, std::size_t bytes, std::string_view op) {
  return allocate_storage(device, bytes, Shape{static_cast<std::int64_t>(bytes)}, "uint8", op);
}

/// dst = src with the filter's layout changed (HWIO -> KRSC when `to_krsc`, else back).
void transform_filter(cudnnHandle_t handle, const Plan& plan, const float* src, float* dst, bool to_krsc) {
  const float one = 1.0F, zero = 0.0F;
  DEVTENSOR_CUDNN_CHECK(cudnnTransformTensor(handle, &one, (to_krsc ? plan.hwio_view : plan.krsc_view).get(), src,
                                             &zero, (to_krsc ? plan.krsc_view : plan.hwio_view).get(), dst));
}

/// Runs one convolution: the handle of the device's stream, the plan, the workspace and the
/// filter in cuDNN's layout; `call` queues the convolution itself.
template <class Call>
bool run(Direction direction, const Device& device, const WindowGeometry& g, std::int64_t out_depth,
         std::string_view op, Call&& call) {
  const bool tf32 = config::experimental::tensor_float_32_execution_enabled();
  backend::cuda::DeviceGuard guard(device.platform_ordinal);
  auto [handle, lock] = Handles::global().acquire(device.platform_ordinal, backend::cuda::stream_of(device));
  const auto plan = Plans::global().get(handle, direction, device.platform_ordinal, g, out_depth, tf32);
  if (!plan->usable) return false;
  const auto workspace = device_buffer(device, plan->workspace_bytes, op);
  const auto filter =
      device_buffer(device, static_cast<std::size_t>(g.k_rows * g.k_cols * g.channels * out_depth) * sizeof(float), op);
  call(handle, *plan, workspace->data, static_cast<float*>(filter->data));
  run_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

/// A convolution cuDNN declines (or whose buffers do not fit) runs the CUDA body.
template <class F>
bool or_decline(F&& f) {
  try {
    return f();
  } catch (const Declined&) {
    return false;
  } catch (const ResourceExhaustedError&) {
    return false;  // the workspace did not fit: the patches body needs less
  }
}

bool forward(const Device& device, const WindowGeometry& g, const float* input, const float* filter,
             std::int64_t out_depth, float* out) {
  return or_decline([&] {
    return run(Direction::forward, device, g, out_depth, "Conv2D",
               [&](cudnnHandle_t handle, const Plan& plan, void* workspace, float* krsc) {
                 const Descriptors& d = plan.descriptors;
                 transform_filter(handle, plan, filter, krsc, /*to_krsc=*/true);
                 const float one = 1.0F, zero = 0.0F;
                 DEVTENSOR_CUDNN_CHECK(cudnnConvolutionForward(
                     handle, &one, d.input.get(), input, d.filter.get(), krsc, d.convolution.get(),
                     static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm), workspace, plan.workspace_bytes, &zero,
                     d.output.get(), out));
               });
  });
}

bool backprop_input(const Device& device, const WindowGeometry& g, const float* filter, const float* dy,
                    std::int64_t out_depth, float* dx) {
  return or_decline([&] {
    return run(Direction::backprop_input, device, g, out_depth, "Conv2DBackpropInput",
               [&](cudnnHandle_t handle, const Plan& plan, void* workspace, float* krsc) {
                 const Descriptors& d = plan.descriptors;
                 transform_filter(handle, plan, filter, krsc, /*to_krsc=*/true);
                 const float one = 1.0F, zero = 0.0F;
                 DEVTENSOR_CUDNN_CHECK(cudnnConvolutionBackwardData(
                     handle, &one, d.filter.get(), krsc, d.output.get(), dy, d.convolution.get(),
                     static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm), workspace, plan.workspace_bytes, &zero,
                     d.input.get(), dx));
               });
  });
}

bool backprop_filter(const Device& device, const WindowGeometry& g, const float* input, const float* dy,
                     std::int64_t out_depth, float* dfilter) {
  return or_decline([&] {
    return run(Direction::backprop_filter, device, g, out_depth, "Conv2DBackpropFilter",
               [&](cudnnHandle_t handle, const Plan& plan, void* workspace, float* krsc) {
                 const Descriptors& d = plan.descriptors;
                 const float one = 1.0F, zero = 0.0F;
                 DEVTENSOR_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
                     handle, &one, d.input.get(), input, d.output.get(), dy, d.convolution.get(),
                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm), workspace, plan.workspace_bytes,
                     &zero, d.filter.get(), krsc));
                 transform_filter(handle, plan, krsc, dfilter, /*to_krsc=*/false);
               });
  });
}

#define DEVTENSOR_CUDNN_TEXT(x) #x
#define DEVTENSOR_CUDNN_VERSION_NAME(major, minor, patch) \
  "cuDNN " DEVTENSOR_CUDNN_TEXT(major) "." DEVTENSOR_CUDNN_TEXT(minor) "." DEVTENSOR_CUDNN_TEXT(patch)
constexpr ConvolutionEngine kEngine{.name = DEVTENSOR_CUDNN_VERSION_NAME(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL),
                                    .forward = forward,
                                    .backprop_input = backprop_input,
                                    .backprop_filter = backprop_filter,
                                    .runs = runs};

}  // namespace

// Installed before main; referenced so that a static library holding this object still runs it.
extern const bool installed;
const bool installed = (install_convolution_engine(&kEngine), true);

}  // namespace devtensor::ops::cuda::cudnn_detail
