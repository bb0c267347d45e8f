#pragma once
/// @file nest.hpp
/// @brief A traced function's arguments and results as nested structures (TensorFlow's tf.nest):
/// tensors are the leaves (placeholders going in, fetches coming out); tuples, pairs, vectors and
/// PerReplica/Mirrored values nest; variables count by identity, numbers and strings by value.

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::function_detail {

/// Makes the traced graph's stand-ins: a placeholder (`_Arg`) per tensor, in argument order, of
/// the trace's shapes (which may have unknown dimensions).
class ArgMaker {
 public:
  ArgMaker(graph::Graph& graph, const std::vector<std::string>& names, const std::vector<Shape>& shapes)
      : graph_(graph), names_(names), shapes_(shapes) {}
  template <Element T>
  Tensor<T> placeholder(const Tensor<T>& like) {
    const std::string name = edges_.size() < names_.size() ? names_[edges_.size()] : "x";
    // On the argument's device (part of the signature), as TensorFlow places a function's _Arg.
    std::optional<DeviceScope> on_its_device;
    if (!like.symbolic()) (void)on_its_device.emplace(like.device_info().spec);  // nodiscard type
    const Shape& shape = edges_.size() < shapes_.size() ? shapes_[edges_.size()] : like.shape();
    auto p = graph::add_placeholder(graph_, name, dtype_enum<T>(), shape, graph::graph_ops::Arg);
    edges_.push_back({p.storage->symbolic->node, p.storage->symbolic->output});
    return p.template as<T>();
  }
  [[nodiscard]] std::vector<graph::Edge> take_edges() { return std::move(edges_); }

 private:
  graph::Graph& graph_;
  const std::vector<std::string>& names_;
  const std::vector<Shape>& shapes_;
  std::vector<graph::Edge> edges_;
};

/// A function's arguments and results as nested structures (TensorFlow's tf.nest): tensors are
/// the leaves that become placeholders (arguments) and fetches (results); tuples, pairs and
/// vectors nest; variables count by identity; numbers and strings by value.
template <class X>
struct Nest {
  static void key(const X& x, std::string& k) {
    if constexpr (std::is_arithmetic_v<X>)
      k += std::to_string(x) + ";";
    else if constexpr (std::is_same_v<X, std::string>)
      k += "'" + x + "';";
    else
      static_assert(sizeof(X) == 0,
                    "traced function arguments are tensors, variables, numbers, strings and tuples, "
                    "pairs or vectors of them");
  }
  static void flatten(const X&, std::vector<AnyTensor>&) {}
  static X stand_in(const X& x, ArgMaker&) { return x; }
  static X rebuild(const X& like, const std::vector<AnyTensor>&, std::size_t&) { return like; }
};
template <Element T>
struct Nest<Tensor<T>> {
  static void key(const Tensor<T>& t, std::string& k) {
    if (!t.defined()) throw InvalidArgumentError("A traced function was called with an undefined tensor");
    // The shape is matched apart (it may be relaxed: reduce_retracing, input_signature); its rank
    // is part of the key.
    k += dtype_name<T>();
    k += '/';
    k += std::to_string(t.rank());
    k += '@';
    k += t.device();
    k += ';';
  }
  static void flatten(const Tensor<T>& t, std::vector<AnyTensor>& out) { out.emplace_back(t); }
  static Tensor<T> stand_in(const Tensor<T>& t, ArgMaker& make) { return make.placeholder(t); }
  static Tensor<T> rebuild(const Tensor<T>&, const std::vector<AnyTensor>& values, std::size_t& i) {
    return values.at(i++).template as<T>();
  }
};
template <Element T>
struct Nest<Variable<T>> {
  static void key(const Variable<T>& v, std::string& k) { k += "variable " + std::to_string(v.handle_id()) + ";"; }
  static void flatten(const Variable<T>&, std::vector<AnyTensor>&) {}
  static Variable<T> stand_in(const Variable<T>& v, ArgMaker&) { return v; }  // captured by handle
  static Variable<T> rebuild(const Variable<T>& like, const std::vector<AnyTensor>&, std::size_t&) { return like; }
};
template <class... Xs>
struct Nest<std::tuple<Xs...>> {
  using X = std::tuple<Xs...>;
  static void key(const X& x, std::string& k) {
    k += "(";
    std::apply([&](const auto&... e) { (Nest<std::decay_t<decltype(e)>>::key(e, k), ...); }, x);
    k += ")";
  }
  static void flatten(const X& x, std::vector<AnyTensor>& out) {
    std::apply([&](const auto&... e) { (Nest<std::decay_t<decltype(e)>>::flatten(e, out), ...); }, x);
  }
  static X stand_in(const X& x, ArgMaker& make) {
    return std::apply([&](const auto&... e) { return X{Nest<std::decay_t<decltype(e)>>::stand_in(e, make)...}; }, x);
  }
  static X rebuild(const X& like, const std::vector<AnyTensor>& values, std::size_t& i) {
    return std::apply([&](const auto&... e) { return X{Nest<std::decay_t<decltype(e)>>::rebuild(e, values, i)...}; },
                      like);
  }
};
template <class A, class B>
struct Nest<std::pair<A, B>> {
  using X = std::pair<A, B>;
  static void key(const X& x, std::string& k) {
    k += "(";
    Nest<A>::key(x.first, k);
    Nest<B>::key(x.second, k);
    k += ")";
  }
  static void flatten(const X& x, std::vector<AnyTensor>& out) {
    Nest<A>::flatten(x.first, out);
    Nest<B>::flatten(x.second, out);
  }
  static X stand_in(const X& x, ArgMaker& make) {
    A first = Nest<A>::stand_in(x.first, make);  // in order: first, then second
    return X{std::move(first), Nest<B>::stand_in(x.second, make)};
  }
  static X rebuild(const X& like, const std::vector<AnyTensor>& values, std::size_t& i) {
    A first = Nest<A>::rebuild(like.first, values, i);
    return X{std::move(first), Nest<B>::rebuild(like.second, values, i)};
  }
};
/// PerReplica and Mirrored values (a distributed dataset's batches, strategy.run's results): their
/// components, one per replica.
template <template <class> class Distributed, class E>
requires std::same_as<Distributed<E>, distribute::PerReplica<E>> ||
    std::same_as<Distributed<E>, distribute::Mirrored<E>>
struct Nest<Distributed<E>> {
  using X = Distributed<E>;
  static void key(const X& x, std::string& k) {
    k += "<";
    for (const auto& e : x.values) Nest<E>::key(e, k);
    k += ">";
  }
  static void flatten(const X& x, std::vector<AnyTensor>& out) {
    for (const auto& e : x.values) Nest<E>::flatten(e, out);
  }
  static X stand_in(const X& x, ArgMaker& make) {
    X out;
    for (const auto& e : x.values) out.values.push_back(Nest<E>::stand_in(e, make));
    return out;
  }
  static X rebuild(const X& like, const std::vector<AnyTensor>& values, std::size_t& i) {
    X out;
    for (const auto& e : like.values) out.values.push_back(Nest<E>::rebuild(e, values, i));
    return out;
  }
};

template <class E>
struct Nest<std::vector<E>> {
  using X = std::vector<E>;
  static void key(const X& x, std::string& k) {
    k += "[";
    for (const auto& e : x) Nest<E>::key(e, k);
    k += "]";
  }
  static void flatten(const X& x, std::vector<AnyTensor>& out) {
    for (const auto& e : x) Nest<E>::flatten(e, out);
  }
  static X stand_in(const X& x, ArgMaker& make) {
    X out;
    for (const auto& e : x) out.push_back(Nest<E>::stand_in(e, make));
    return out;
  }
  static X rebuild(const X& like, const std::vector<AnyTensor>& values, std::size_t& i) {
    X out;
    for (const auto& e : like) out.push_back(Nest<E>::rebuild(e, values, i));
    return out;
  }
};

}  // namespace devtensor::function_detail
