#pragma once
/// @file signature.hpp
/// @brief A traced function's signature (tf.function's): TensorSpec for `input_signature`, a call's
/// tensors matched against the traces made so far, and TensorFlow's retracing warning.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor {

/// A tensor argument's type and shape (TensorFlow's tf.TensorSpec), for `input_signature`. The
/// shape may have unknown dimensions (kUnknownDim, TensorFlow's None).
struct TensorSpec {
  Shape shape;
  DType dtype = DType::DT_FLOAT;
  std::string name;

  template <Element T>
  static TensorSpec of(Shape shape, std::string name = {}) {
    return {std::move(shape), dtype_enum<T>(), std::move(name)};
  }
  /// `TensorSpec::of<float>({-1, 3})`: any number of rows of 3 (tf.TensorSpec([None, 3])).
  template <Element T>
  static TensorSpec of(std::initializer_list<std::int64_t> dims, std::string name = {}) {
    return {Shape::partial(dims), dtype_enum<T>(), std::move(name)};
  }
  /// TensorSpec(shape=(2,), dtype=tf.float32, name=None), as TensorFlow prints it.
  [[nodiscard]] std::string to_string() const {
    return "TensorSpec(shape=" + shape.to_python() + ", dtype=tf." + std::string(dtype_name(dtype)) +
           ", name=" + (name.empty() ? std::string("None") : "'" + name + "'") + ")";
  }
};

namespace function_detail {

/// Checks one tensor argument against its TensorSpec (TensorFlow's binding error, as text).
std::string mismatch(const AnyTensor& t, const TensorSpec& spec);

/// The trace among `traces` whose shapes the call's `tensors` have: one with exactly those shapes
/// first, else the first whose unknown dimensions cover them; nullptr when none.
template <class Traces>
const typename Traces::value_type* match(const Traces& traces, const std::vector<AnyTensor>& tensors) {
  using Entry = typename Traces::value_type;
  const auto matches = [&](const Entry& e, bool exactly) {
    if (e.shapes.size() != tensors.size()) return false;
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (exactly ? e.shapes[i] != tensors[i].shape : !tensors[i].shape.is_compatible_with(e.shapes[i])) return false;
    return true;
  };
  for (bool exactly : {true, false})
    for (const auto& e : traces)
      if (matches(e, exactly)) return &e;
  return nullptr;
}

/// The latest trace's shapes `traced` with the dimensions that differ from the call's unknown
/// (reduce_retracing).
std::vector<Shape> relaxed_shapes(const std::vector<Shape>& traced, const std::vector<AnyTensor>& tensors);

/// TensorFlow's frequent-tracing detector: warns (TensorFlow's text, at most twice per function)
/// when 5 or more of the recent calls traced; the window keeps at most 5 calls before the oldest
/// trace in it.
class RetracingDetector {
 public:
  void called(bool traced, const std::string& name);

 private:
  std::deque<int> calls_per_trace_;  // calls since each recent trace, that one included
  int calls_ = 0;
  int warnings_ = 0;
};

}  // namespace function_detail

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION std::vector<Shape> function_detail::relaxed_shapes(const std::vector<Shape>& traced,
                                                                        const std::vector<AnyTensor>& tensors) {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Shape& now = tensors[i].shape;
    // Ranks are part of the signature's key, so a trace of the same key has the same rank.
    std::vector<std::int64_t> dims = now.dims_vector();
    if (i < traced.size() && traced[i].rank() == now.rank())
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (traced[i][d] != dims[d]) dims[d] = kUnknownDim;
    shapes.push_back(Shape::partial(dims));
  }
  return shapes;
}

DEVTENSOR_DEFINITION std::string function_detail::mismatch(const AnyTensor& t, const TensorSpec& spec) {
  if (t.dtype == spec.dtype && t.shape.is_compatible_with(spec.shape)) return {};
  return "Can not cast " + TensorSpec{t.shape, t.dtype, {}}.to_string() + " to " + spec.to_string();
}

DEVTENSOR_DEFINITION void function_detail::RetracingDetector::called(bool traced, const std::string& name) {
  constexpr int kThreshold = 5;
  constexpr int kMaxWarnings = 2;
  ++calls_;
  if (!traced) {
    if (calls_per_trace_.empty()) calls_per_trace_.push_back(0);
    ++calls_per_trace_.back();
    return;
  }
  calls_per_trace_.push_back(1);
  while (!calls_per_trace_.empty() && calls_ - calls_per_trace_.front() > kThreshold) {
    calls_ -= calls_per_trace_.front();
    calls_per_trace_.pop_front();
  }
  if (warnings_ >= kMaxWarnings || static_cast<int>(calls_per_trace_.size()) < kThreshold) return;
  ++warnings_;
  log(LogSeverity::warning,
      std::to_string(calls_per_trace_.size()) + " out of the last " + std::to_string(calls_) + " calls to <function " +
          name +
          "> triggered tf.function retracing. Tracing is expensive and the excessive number of tracings could be due "
          "to "
          "(1) creating @tf.function repeatedly in a loop, (2) passing tensors with different shapes, (3) passing "
          "Python "
          "objects instead of tensors. For (1), please define your @tf.function outside of the loop. For (2), "
          "@tf.function has reduce_retracing=True option that can avoid unnecessary retracing. For (3), please refer "
          "to "
          "https://www.tensorflow.org/guide/function#controlling_retracing and "
          "https://www.tensorflow.org/api_docs/python/tf/function for  more details.");
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
