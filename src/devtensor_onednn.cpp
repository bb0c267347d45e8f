// The onednn component's code, compiled once per build tree (cmake/devtensorOnednnComponent.cmake
// adds this object to every program that links devtensor::onednn): float32 Conv2D and its two
// backprops on CPUs through oneDNN 2.x's JIT convolutions, installed at start-up as the CPU
// bodies' convolution engine (Note [A convolution engine] in ops/cpu/convolution_engine.hpp). A
// program's own translation units never see oneDNN's headers. Without CMake: compile this file
// once with -fopenmp and link its object, libdnnl and libgomp.
//
// oneDNN reads the NHWC activations in place (TensorFlow's oneDNN kernels do the same) and picks
// its own layout for the filter (`any`): the HWIO filter is reordered into it, a few KB, and a
// filter's gradient back out of it. Primitives are made once per geometry and kept (Note [Plans]).
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "devtensor/ops/cpu/convolution_engine.hpp"

namespace devtensor::ops::cpu::onednn_detail {
namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;

// Note [Plans]
// Making a primitive descriptor walks oneDNN's implementations and JIT-compiles the chosen one:
// 0.3-1 ms, as long as a small convolution. So each (direction, geometry, threads) gets a Plan
// once — the primitive, the reorders of the filter, the scratchpad's size — and keeps it; a
// geometry oneDNN declines is remembered as declined, so the im2col body runs without asking
// again. Primitives are executed with a scratchpad of the caller's (scratchpad_mode::user), so one
// Plan serves threads that run the same convolution at once.

enum class Direction : std::int64_t { forward, backprop_input, backprop_filter };

using Key = std::array<std::int64_t, 17>;

Key key_of(Direction direction, const WindowGeometry& g, std::int64_t out_depth, int threads) {
  return {static_cast<std::int64_t>(direction),
          threads,
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

struct KeyHash {
  std::size_t operator()(const Key& key) const noexcept {
    std::size_t h = 1469598103934665603ULL;  // FNV-1a over the fields
    for (const std::int64_t field : key) h = (h ^ static_cast<std::size_t>(field)) * 1099511628211ULL;
    return h;
  }
};

struct Plan {
  bool usable = false;  // false: oneDNN declined the geometry; the im2col body runs
  dnnl::primitive primitive;
  memory::desc activations_in, activations_out;  // NHWC, as the caller's buffers
  memory::desc user_filter;                      // HWIO, as the caller's filter (or its turned copy)
  memory::desc filter;                           // the primitive's layout of it
  std::optional<dnnl::reorder> filter_reorder;   // user_filter -> filter (forward), or back (filter gradient)
  memory::desc scratchpad;
  bool turned = false;  // backprop_input as a forward convolution of dy with the turned filter
};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// The padding after an axis that makes oneDNN's output size (in + before + after − extent) /
/// stride + 1 equal `out`: TensorFlow's windows may leave input rows unread at the end (VALID with a
/// stride), which oneDNN expresses as a padding the division floors away. Null when no
/// non-negative padding does (a window that is not a convolution oneDNN takes).
std::optional<std::int64_t> padding_after(std::int64_t in, std::int64_t out, std::int64_t window, std::int64_t stride,
                                          std::int64_t dilation, std::int64_t before) {
  const std::int64_t extent = (window - 1) * dilation + 1;
  const std::int64_t after = std::max<std::int64_t>(0, (out - 1) * stride + extent - in - before);
  if (before < 0 || (in + before + after - extent) / stride + 1 != out) return std::nullopt;
  return after;
}

/// oneDNN's description of a convolution over `g` (NHWC activations, a filter of any layout).
struct Descriptors {
  memory::desc src, filter_any, dst;
  Dims strides, dilates, padding_before, padding_after;
};

std::optional<Descriptors> describe(const WindowGeometry& g, std::int64_t out_depth) {
  const auto rows_after = padding_after(g.in_rows, g.out_rows, g.k_rows, g.stride_rows, g.dil_rows, g.pad_top);
  const auto cols_after = padding_after(g.in_cols, g.out_cols, g.k_cols, g.stride_cols, g.dil_cols, g.pad_left);
  if (!rows_after || !cols_after) return std::nullopt;
  const auto f32 = memory::data_type::f32;
  return Descriptors{
      .src = memory::desc({g.batch, g.channels, g.in_rows, g.in_cols}, f32, Tag::nhwc),
      .filter_any = memory::desc({out_depth, g.channels, g.k_rows, g.k_cols}, f32, Tag::any),
      .dst = memory::desc({g.batch, out_depth, g.out_rows, g.out_cols}, f32, Tag::nhwc),
      .strides = {g.stride_rows, g.stride_cols},
      .dilates = {g.dil_rows - 1, g.dil_cols - 1},  // oneDNN counts the gaps
      .padding_before = {g.pad_top, g.pad_left},
      .padding_after = {*rows_after, *cols_after},
  };
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_descriptor(const Descriptors& d, dnnl::prop_kind kind) {
  const dnnl::convolution_forward::desc desc(kind, dnnl::algorithm::convolution_direct, d.src, d.filter_any, d.dst,
                                             d.strides, d.dilates, d.padding_before, d.padding_after);
  return {desc, user_scratchpad(), cpu_engine()};
}

/// The HWIO filter of `g` as oneDNN describes it: dims (O, I, H, W), layout hwio.
memory::desc hwio(const WindowGeometry& g, std::int64_t out_depth) {
  return {{out_depth, g.channels, g.k_rows, g.k_cols}, memory::data_type::f32, Tag::hwio};
}

/// The reorder between the caller's filter layout and the primitive's; none when they agree.
std::optional<dnnl::reorder> reorder_between(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
}

Plan make_forward(const WindowGeometry& g, std::int64_t out_depth) {
  const auto d = describe(g, out_depth);
  if (!d) return {};
  const auto pd = forward_descriptor(*d, dnnl::prop_kind::forward_inference);
  Plan plan{.usable = true,
            .primitive = dnnl::convolution_forward(pd),
            .activations_in = d->src,
            .activations_out = d->dst,
            .user_filter = hwio(g, out_depth),
            .filter = pd.weights_desc(),
            .filter_reorder = reorder_between(hwio(g, out_depth), pd.weights_desc()),
            .scratchpad = pd.scratchpad_desc()};
  return plan;
}

Plan make_backprop_input(const WindowGeometry& g, std::int64_t out_depth) {
  // Strides of 1: the turned forward convolution (oneDNN 2.6's brgemm forward, 21.4 ms at the
  // issue's case, against 22.7 ms for its backward-data primitive).
  if (g.stride_rows == 1 && g.stride_cols == 1) {
    const WindowGeometry t = turned_geometry(g, out_depth);
    if (t.pad_top >= 0 && t.pad_left >= 0) {
      Plan plan = make_forward(t, g.channels);
      if (plan.usable) {
        plan.turned = true;
        return plan;
      }
    }
  }
  const auto d = describe(g, out_depth);
  if (!d) return {};
  const auto hint = forward_descriptor(*d, dnnl::prop_kind::forward_training);
  const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d->src, d->filter_any, d->dst,
                                                   d->strides, d->dilates, d->padding_before, d->padding_after);
  const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
  Plan plan{.usable = true,
            .primitive = dnnl::convolution_backward_data(pd),
            .activations_in = d->dst,
            .activations_out = d->src,
            .user_filter = hwio(g, out_depth),
            .filter = pd.weights_desc(),
            .filter_reorder = reorder_between(hwio(g, out_depth), pd.weights_desc()),
            .scratchpad = pd.scratchpad_desc()};
  return plan;
}

Plan make_backprop_filter(const WindowGeometry& g, std::int64_t out_depth) {
  const auto d = describe(g, out_depth);
  if (!d) return {};
  const auto hint = forward_descriptor(*d, dnnl::prop_kind::forward_training);
  const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d->src, d->filter_any,
                                                      d->dst, d->strides, d->dilates, d->padding_before,
                                                      d->padding_after);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
  Plan plan{.usable = true,
            .primitive = dnnl::convolution_backward_weights(pd),
            .activations_in = d->src,
            .activations_out = d->dst,
            .user_filter = hwio(g, out_depth),
            .filter = pd.diff_weights_desc(),
            .filter_reorder = reorder_between(pd.diff_weights_desc(), hwio(g, out_depth)),
            .scratchpad = pd.scratchpad_desc()};
  return plan;
}

/// oneDNN's OpenMP runtime runs a primitive on the calling thread's team: its size is this
/// thread's OpenMP setting, which follows the intra-op setting (set before a primitive is made
/// too: oneDNN divides the work by it then).
void use_threads(int threads) {
  if (threads > 0 && omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

/// The plan for (direction, g), made on first use (Note [Plans]). Null when oneDNN declines.
std::shared_ptr<const Plan> plan_for(Direction direction, const WindowGeometry& g, std::int64_t out_depth,
                                     int threads) {
  static const dnnl::engine& engine = cpu_engine();  // made first, so destroyed after the plans at exit
  static std::mutex mutex;
  static std::unordered_map<Key, std::shared_ptr<const Plan>, KeyHash> plans;
  (void)engine;
  constexpr std::size_t kMaxPlans = 256;  // a program's geometries; beyond, start over
  const Key key = key_of(direction, g, out_depth, threads);
  std::lock_guard lock(mutex);
  if (const auto found = plans.find(key); found != plans.end()) return found->second;
  Plan plan;
  try {
    use_threads(threads);
    switch (direction) {
      case Direction::forward: plan = make_forward(g, out_depth); break;
      case Direction::backprop_input: plan = make_backprop_input(g, out_depth); break;
      case Direction::backprop_filter: plan = make_backprop_filter(g, out_depth); break;
    }
  } catch (const dnnl::error&) {
    plan = Plan{};  // unimplemented or invalid for oneDNN: the im2col body takes it
  }
  if (plans.size() >= kMaxPlans) plans.clear();
  return plans.emplace(key, std::make_shared<const Plan>(std::move(plan))).first->second;
}

/// oneDNN takes no empty dimension and counts in int64: the geometries it is asked about.
bool worth_asking(const WindowGeometry& g, std::int64_t out_depth) {
  return g.batch > 0 && g.in_rows > 0 && g.in_cols > 0 && g.channels > 0 && g.out_rows > 0 && g.out_cols > 0 &&
         out_depth > 0;
}

memory wrap(const memory::desc& desc, const float* data) {
  return {desc, cpu_engine(), const_cast<float*>(data)};  // NOLINT(cppcoreguidelines-pro-type-const-cast): read only
}

/// Runs a forward or backprop_input plan: activations_in and the filter to activations_out.
bool run_with_filter(const Plan& plan, const float* in, const float* user_filter, float* out, int threads) {
  use_threads(threads);
  dnnl::stream stream(cpu_engine());
  memory user = wrap(plan.user_filter, user_filter);
  memory filter = user;
  if (plan.filter_reorder) {
    filter = memory(plan.filter, cpu_engine());
    plan.filter_reorder->execute(stream, user, filter);
  }
  const memory scratchpad(plan.scratchpad, cpu_engine());
  plan.primitive.execute(stream, {{DNNL_ARG_SRC, wrap(plan.activations_in, in)},
                                  {DNNL_ARG_WEIGHTS, filter},
                                  {DNNL_ARG_DST, wrap(plan.activations_out, out)},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad}});
  stream.wait();
  return true;
}

std::atomic<std::int64_t> convolutions_run{0};
std::int64_t runs() { return convolutions_run.load(std::memory_order_relaxed); }

/// f(), or false when oneDNN fails at run time (a scratchpad it cannot allocate): the im2col body
/// then writes the whole output.
template <class F>
bool or_decline(F&& f) {
  try {
    const bool ran = f();
    if (ran) convolutions_run.fetch_add(1, std::memory_order_relaxed);
    return ran;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool run_forward(const WindowGeometry& g, const float* input, const float* filter, std::int64_t out_depth, float* out,
                 int threads) {
  if (!worth_asking(g, out_depth)) return false;
  const auto plan = plan_for(Direction::forward, g, out_depth, threads);
  if (!plan->usable) return false;
  return run_with_filter(*plan, input, filter, out, threads);
}

bool run_backprop_input(const WindowGeometry& g, const float* filter, const float* dy, std::int64_t out_depth,
                        float* dx, int threads) {
  if (!worth_asking(g, out_depth)) return false;
  const auto plan = plan_for(Direction::backprop_input, g, out_depth, threads);
  if (!plan->usable) return false;
  if (plan->turned) {
    std::vector<float> turned(static_cast<std::size_t>(g.k_rows * g.k_cols * g.channels * out_depth));
    turn_filter(g, filter, out_depth, turned.data());  // Note [The turned convolution]
    return run_with_filter(*plan, dy, turned.data(), dx, threads);
  }
  use_threads(threads);
  dnnl::stream stream(cpu_engine());
  memory user = wrap(plan->user_filter, filter);
  memory weights = user;
  if (plan->filter_reorder) {
    weights = memory(plan->filter, cpu_engine());
    plan->filter_reorder->execute(stream, user, weights);
  }
  const memory scratchpad(plan->scratchpad, cpu_engine());
  plan->primitive.execute(stream, {{DNNL_ARG_DIFF_DST, wrap(plan->activations_in, dy)},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_DIFF_SRC, wrap(plan->activations_out, dx)},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
  stream.wait();
  return true;
}

bool run_backprop_filter(const WindowGeometry& g, const float* input, const float* dy, std::int64_t out_depth,
                         float* dfilter, int threads) {
  if (!worth_asking(g, out_depth)) return false;
  const auto plan = plan_for(Direction::backprop_filter, g, out_depth, threads);
  if (!plan->usable) return false;
  use_threads(threads);
  dnnl::stream stream(cpu_engine());
  memory user = wrap(plan->user_filter, dfilter);
  memory weights = plan->filter_reorder ? memory(plan->filter, cpu_engine()) : user;
  const memory scratchpad(plan->scratchpad, cpu_engine());
  plan->primitive.execute(stream, {{DNNL_ARG_SRC, wrap(plan->activations_in, input)},
                                   {DNNL_ARG_DIFF_DST, wrap(plan->activations_out, dy)},
                                   {DNNL_ARG_DIFF_WEIGHTS, weights},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
  if (plan->filter_reorder) plan->filter_reorder->execute(stream, weights, user);
  stream.wait();
  return true;
}

bool forward(const WindowGeometry& g, const float* input, const float* filter, std::int64_t out_depth, float* out,
             int threads) {
  return or_decline([&] { return run_forward(g, input, filter, out_depth, out, threads); });
}
bool backprop_input(const WindowGeometry& g, const float* filter, const float* dy, std::int64_t out_depth, float* dx,
                    int threads) {
  return or_decline([&] { return run_backprop_input(g, filter, dy, out_depth, dx, threads); });
}
bool backprop_filter(const WindowGeometry& g, const float* input, const float* dy, std::int64_t out_depth,
                     float* dfilter, int threads) {
  return or_decline([&] { return run_backprop_filter(g, input, dy, out_depth, dfilter, threads); });
}

#define DEVTENSOR_ONEDNN_TEXT(x) #x
#define DEVTENSOR_ONEDNN_VERSION(major, minor, patch) \
  "oneDNN " DEVTENSOR_ONEDNN_TEXT(major) "." DEVTENSOR_ONEDNN_TEXT(minor) "." DEVTENSOR_ONEDNN_TEXT(patch)
constexpr ConvolutionEngine kEngine{
    .name = DEVTENSOR_ONEDNN_VERSION(DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH),
    .forward = forward,
    .backprop_input = backprop_input,
    .backprop_filter = backprop_filter,
    .runs = runs};

}  // namespace

// Installed before main; referenced so that a static library holding this object still runs it.
extern const bool installed;
const bool installed = (install_convolution_engine(&kEngine), true);

}  // namespace devtensor::ops::cpu::onednn_detail
