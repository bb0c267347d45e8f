#pragma once
/// @file model_config.hpp
/// @brief Keras 3's config of a whole model (what `model.to_json()` returns and a `.keras`
/// archive's config.json holds): Sequential and Functional models, models inside models, shared
/// layers; and the model a config describes.
///
/// A Functional config lists the layers in the model's order, each with its name and its
/// `inbound_nodes` (one per call of the layer in this model, numbered from 0 in this model; the
/// tensors a call takes as `{"class_name": "__keras_tensor__", "config": {"shape", "dtype",
/// "keras_history": [layer, node, tensor]}}`, a list of them for a merge), then `input_layers`
/// and `output_layers` (a bare triple for one, a list of triples otherwise). A Sequential's lists
/// its InputLayer and then its layers. Reading also takes Keras 2's node form (`[[[layer, node,
/// tensor, kwargs], ...]]`). Every class a config names that devtensor does not have is listed in
/// one UnimplementedError; a config whose nodes do not form a graph is an InvalidArgumentError.
/// compile_config: nn/compile_config.hpp's (written here; read by the loader, which compiles).

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/nn/compile_config.hpp"
#include "devtensor/nn/functional.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/layer_config.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/sequential.hpp"

namespace devtensor::nn::saving {

/// The model's serialized form (module, class_name, config, registered_name, build_config,
/// compile_config). @throws FailedPreconditionError before the model is built.
[[nodiscard]] Json model_to_config(const Model& model);

/// The model `serialized` describes, built, with fresh weights; a Sequential as a Sequential.
/// `max_weights`: the most weights (float32 values) its layers may create; a config that asks for
/// more is an InvalidArgumentError before anything is allocated (a loader passes what its weights
/// file can hold). `fresh_weights` false: the layers start at zeros, for a weights file to set.
[[nodiscard]] std::shared_ptr<Model> model_from_config(const Json& serialized,
                                                       std::int64_t max_weights = std::int64_t{1} << 31,
                                                       bool fresh_weights = true);

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

namespace config_detail {

/// The calls of each layer inside a graph, in node-index order, and their numbers in the graph.
struct GraphNodes {
  std::map<const LayerBase*, std::vector<const LayerNode*>> of_layer;
  std::map<const LayerNode*, int> number;
};

inline GraphNodes graph_nodes(const layer_detail::FunctionalGraph& graph) {
  GraphNodes out;
  std::set<const LayerNode*> seen;
  std::vector<const LayerNode*> stack;
  for (const auto& t : graph.outputs()) stack.push_back(t.node().get());
  for (const auto& t : graph.inputs()) stack.push_back(t.node().get());
  while (!stack.empty()) {
    const LayerNode* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    out.of_layer[node->layer.get()].push_back(node);
    for (const auto& in : node->inputs) stack.push_back(in.node().get());
  }
  for (auto& [layer, nodes] : out.of_layer) {
    std::sort(nodes.begin(), nodes.end(), [](const auto* a, const auto* b) { return a->node_index < b->node_index; });
    for (std::size_t i = 0; i < nodes.size(); ++i) out.number[nodes[i]] = static_cast<int>(i);
  }
  return out;
}

inline Json history(const KerasTensor& t, const GraphNodes& nodes) {
  return Json::array({t.node()->layer->name(), nodes.number.at(t.node().get()), t.index()});
}

inline Json tensor_json(const KerasTensor& t, const GraphNodes& nodes) {
  return Json{
      {"class_name", "__keras_tensor__"},
      {"config", Json{{"shape", shape_json(t.shape())}, {"dtype", "float32"}, {"keras_history", history(t, nodes)}}}};
}

inline Json endpoints(const std::vector<KerasTensor>& tensors, const GraphNodes& nodes) {
  if (tensors.size() == 1) return history(tensors[0], nodes);
  Json out = Json::array();
  for (const auto& t : tensors) out.push_back(history(t, nodes));
  return out;
}

inline std::vector<PartialShape> first_call_shapes(const LayerBase& layer, const GraphNodes& nodes) {
  std::vector<PartialShape> shapes;
  const auto it = nodes.of_layer.find(&layer);
  if (it != nodes.of_layer.end() && !it->second.empty())
    for (const auto& in : it->second.front()->inputs) shapes.push_back(in.shape());
  return shapes;
}

inline Json graph_to_config(const layer_detail::FunctionalGraph& graph);

/// A layer of a graph: its config, a model inside the model as a model.
inline Json layer_entry(const LayerBase& layer, const GraphNodes& nodes) {
  const auto shapes = first_call_shapes(layer, nodes);
  if (const auto* inner = dynamic_cast<const layer_detail::FunctionalGraph*>(&layer)) {
    Json out = graph_to_config(*inner);
    if (!shapes.empty())
      out["build_config"] = Json{{"input_shape", shapes.size() == 1 ? shape_json(shapes[0]) : Json()}};
    return out;
  }
  return layer_to_config(layer, shapes);
}

/// A graph as Keras serializes a model (without build_config and compile_config).
inline Json graph_to_config(const layer_detail::FunctionalGraph& graph) {
  const GraphNodes nodes = graph_nodes(graph);
  const bool sequential = graph.type_name() == "Sequential";
  Json layers = Json::array();
  for (const auto& layer : graph.layers()) {
    Json entry = layer_entry(*layer, nodes);
    if (!sequential) {
      entry["name"] = layer->name();
      Json inbound = Json::array();
      const auto it = nodes.of_layer.find(layer.get());
      if (!dynamic_cast<const layer_detail::InputLayer*>(layer.get()) && it != nodes.of_layer.end())
        for (const LayerNode* node : it->second) {
          Json args = Json::array();
          for (const auto& in : node->inputs) args.push_back(tensor_json(in, nodes));
          // Keras records the mask its call passes to a layer whose call takes one (of devtensor's,
          // BatchNormalization).
          const Json kwargs = layer->type_name() == "BatchNormalization" ? Json{{"mask", nullptr}} : Json::object();
          inbound.push_back(Json{{"args", node->inputs.size() == 1 ? args : Json::array({args})}, {"kwargs", kwargs}});
        }
      entry["inbound_nodes"] = std::move(inbound);
    }
    layers.push_back(std::move(entry));
  }
  Json config{{"name", graph.name()}, {"trainable", graph.trainable()}};
  if (sequential) {
    config["dtype"] = dtype_policy();
    config["layers"] = std::move(layers);
    config["build_input_shape"] = shape_json(graph.inputs().front().shape());
    return keras_object("keras", "Sequential", std::move(config));
  }
  config["layers"] = std::move(layers);
  config["input_layers"] = endpoints(graph.inputs(), nodes);
  config["output_layers"] = endpoints(graph.outputs(), nodes);
  Json out = keras_object("keras.src.models.functional", "Functional", std::move(config));
  out["registered_name"] = "Functional";
  return out;
}

/// Every class the config names that devtensor cannot rebuild, as `Class ("name")`.
inline void unsupported_classes(const Json& layers, std::vector<std::string>& out) {
  if (!layers.is_array()) return;
  const auto& known = known_layer_classes();
  for (const auto& layer : layers) {
    if (!layer.is_object() || !layer.contains("class_name") || !layer["class_name"].is_string()) continue;
    const std::string kind = layer["class_name"].get<std::string>();
    const bool model = kind == "Sequential" || kind == "Functional" || kind == "Model";
    if (model && layer.contains("config") && layer["config"].is_object() && layer["config"].contains("layers"))
      unsupported_classes(layer["config"]["layers"], out);
    else if (!model && std::find(known.begin(), known.end(), kind) == known.end()) {
      const Json& config = layer.contains("config") ? layer["config"] : Json();
      const std::string name = config.is_object() && config.contains("name") && config["name"].is_string()
                                   ? config["name"].get<std::string>()
                                   : "?";
      out.push_back(kind + " (\"" + name + "\")");
    }
  }
}

/// What a config may still allocate: its layers' weights are counted before each is built, and
/// every tensor a layer takes must have at most kMaxElements elements.
struct Budget {
  std::int64_t weights_left;
  std::int64_t weights_allowed;
  /// Whether the layers draw their initial weights (model_from_json), or a weights file will set them.
  bool fresh_weights = true;

  /// Checks a call of `layer` on `shapes` before it is made (and the layer built).
  void before_call(const LayerBase& layer, const std::vector<PartialShape>& shapes) {
    for (const auto& s : shapes)
      if (elements_of(s) > kMaxElements)
        throw InvalidArgumentError("layer \"" + layer.name() + "\" would take a tensor of shape " + python_shape(s) +
                                   ", more than 2^40 elements");
    if (layer.built()) return;
    const std::int64_t n = weights_of(layer, shapes);
    if (n > weights_left)
      throw InvalidArgumentError("layer \"" + layer.name() + "\" (" + layer.type_name() + ") would create " +
                                 (n > kMaxElements ? "more than 2^40" : std::to_string(n)) + " weights, beyond the " +
                                 std::to_string(weights_allowed) +
                                 " the model may hold (what its weights file holds, or model_from_json's bound)");
    weights_left -= n;
  }

  /// The weights `layer` creates when built for `shapes` (saturating past kMaxElements).
  static std::int64_t weights_of(const LayerBase& layer, const std::vector<PartialShape>& shapes) {
    namespace ld = layer_detail;
    if (shapes.empty() || shapes[0].empty()) return 0;
    const PartialShape& s = shapes[0];
    const auto product = [](std::initializer_list<std::int64_t> factors) {
      std::int64_t n = 1;
      for (const auto f : factors)
        if (f < 0 || __builtin_mul_overflow(n, f, &n) || n > kMaxElements) return kMaxElements + 1;
      return n;
    };
    const auto channels = [&](const std::string& format) {
      return format == "channels_first" && s.size() > 1 ? s[1] : s.back();
    };
    // Exactly what the weights file holds for the layer (a bias only with use_bias, BN's beta and
    // gamma only with center and scale): a file just big enough is never refused.
    if (const auto* dense = dynamic_cast<const ld::DenseLayer*>(&layer))
      return product({s.back() + (dense->options().use_bias ? 1 : 0), dense->units()});
    if (const auto* conv = dynamic_cast<const ld::Conv2DLayer*>(&layer))
      return product({product({conv->kernel_size()[0], conv->kernel_size()[1], channels(conv->options().data_format)}) +
                          (conv->options().use_bias ? 1 : 0),
                      conv->filters()});
    if (const auto* depthwise = dynamic_cast<const ld::DepthwiseConv2DLayer*>(&layer))
      return product({product({depthwise->kernel_size()[0], depthwise->kernel_size()[1]}) +
                          (depthwise->options().use_bias ? 1 : 0),
                      channels(depthwise->options().data_format), depthwise->options().depth_multiplier});
    if (const auto* bn = dynamic_cast<const ld::BatchNormalizationLayer*>(&layer)) {
      const auto& o = bn->options();
      const auto axis = o.axis < 0 ? o.axis + static_cast<std::int64_t>(s.size()) : o.axis;
      const std::int64_t vectors = 2 + (o.center ? 1 : 0) + (o.scale ? 1 : 0);
      return axis >= 0 && axis < static_cast<std::int64_t>(s.size())
                 ? product({vectors, s[static_cast<std::size_t>(axis)]})
                 : 0;
    }
    return 0;
  }
};

/// A tensor reference: [layer, node, tensor] from Keras 3's __keras_tensor__ or Keras 2's list.
struct TensorRef {
  std::string layer;
  int node = 0;
  int tensor = 0;
};

inline TensorRef tensor_ref(const Json& v, const std::string& where) {
  const Json* triple = &v;
  if (v.is_object() && v.contains("config") && v["config"].is_object() && v["config"].contains("keras_history"))
    triple = &v["config"]["keras_history"];
  if (!triple->is_array() || triple->size() < 3 || !(*triple)[0].is_string() || !(*triple)[1].is_number_integer() ||
      !(*triple)[2].is_number_integer())
    throw InvalidArgumentError(where + ": " + v.dump().substr(0, 200) +
                               " is not a tensor reference ([layer, node, tensor])");
  return {(*triple)[0].get<std::string>(), (*triple)[1].get<int>(), (*triple)[2].get<int>()};
}

/// The tensors one inbound node takes.
inline std::vector<TensorRef> node_inputs(const Json& node, const std::string& where) {
  std::vector<TensorRef> out;
  if (node.is_array()) {  // Keras 2: [[layer, node, tensor, kwargs], ...]
    for (const auto& t : node) out.push_back(tensor_ref(t, where));
    return out;
  }
  if (!node.is_object() || !node.contains("args") || !node["args"].is_array() || node["args"].empty())
    throw InvalidArgumentError(where + ": an inbound node is not {\"args\": [...], \"kwargs\": {...}}");
  const Json& args = node["args"];
  if (args.size() != 1)
    throw UnimplementedError(where + " is called with " + std::to_string(args.size()) +
                             " positional arguments; devtensor's layers take one (a tensor or a list)");
  if (args[0].is_array() && !args[0].empty() && !args[0][0].is_string()) {
    for (const auto& t : args[0]) out.push_back(tensor_ref(t, where));
  } else {
    out.push_back(tensor_ref(args[0], where));
  }
  return out;
}

inline std::vector<TensorRef> endpoint_refs(const Json& v, const std::string& where) {
  if (v.is_array() && !v.empty() && v[0].is_string()) return {tensor_ref(v, where)};
  std::vector<TensorRef> out;
  if (v.is_array())
    for (const auto& t : v) out.push_back(tensor_ref(t, where));
  if (out.empty())
    throw InvalidArgumentError(where + " is not a list of [layer, node, tensor]: " + v.dump().substr(0, 200));
  return out;
}

inline std::shared_ptr<Model> model_of(const Json& serialized, Budget& budget);

/// A layer entry: a layer, or a model inside the model (as the layer it is).
inline std::shared_ptr<LayerBase> layer_of(const Json& entry, std::vector<std::shared_ptr<Model>>& inner_models,
                                           Budget& budget) {
  const std::string kind = entry.value("class_name", std::string());
  if (kind == "Sequential" || kind == "Functional" || kind == "Model") {
    inner_models.push_back(model_of(entry, budget));
    return inner_models.back()->impl();
  }
  return layer_from_config(entry, budget.fresh_weights);
}

inline std::shared_ptr<Model> sequential_of(const Json& config, Budget& budget) {
  const std::string name = config.value("name", std::string());
  std::vector<std::shared_ptr<Model>> inner_models;
  std::vector<Layer> layers;
  std::optional<PartialShape> batch_shape;
  for (const auto& entry : config.at("layers")) {
    if (entry.value("class_name", std::string()) == "InputLayer") {
      batch_shape = Reader(entry.value("config", Json::object()), "InputLayer").shape("batch_shape");
      continue;
    }
    layers.emplace_back(layer_of(entry, inner_models, budget));
  }
  if (!batch_shape && config.contains("build_input_shape") && config["build_input_shape"].is_array())
    batch_shape = Reader(config, "Sequential").shape("build_input_shape");
  if (batch_shape) {  // the chain's shapes and weights, checked before any layer is built
    PartialShape shape = *batch_shape;
    for (const auto& layer : layers) {
      budget.before_call(layer.get(), {shape});
      shape = layer->output_shapes({shape}).at(0);
    }
  }
  auto model = std::make_shared<Sequential>(std::move(layers), name);
  if (batch_shape && !model->built()) (void)(*model)(input_with_batch_shape(*batch_shape));
  return model;
}

inline std::shared_ptr<Model> functional_of(const Json& config, Budget& budget) {
  const std::string name = config.value("name", std::string());
  std::vector<std::shared_ptr<Model>> inner_models;
  struct Pending {
    std::string name;
    std::shared_ptr<LayerBase> layer;
    std::size_t node;
    std::vector<TensorRef> inputs;
  };
  std::map<std::string, std::vector<std::vector<KerasTensor>>> made;  // a layer's calls' outputs
  std::vector<Pending> pending;
  for (const auto& entry : config.at("layers")) {
    const std::string kind = entry.value("class_name", std::string());
    const std::string layer_name = entry.contains("name") && entry["name"].is_string()
                                       ? entry["name"].get<std::string>()
                                       : Reader(entry.value("config", Json::object()), kind).name();
    if (made.contains(layer_name))
      throw InvalidArgumentError("model \"" + name + "\": two layers are named \"" + layer_name +
                                 "\"; all layer names in a model must be unique");
    made[layer_name];
    if (kind == "InputLayer") {
      const Json input_config = entry.value("config", Json::object());
      const Reader r(input_config, kind);
      made[layer_name].push_back({input_with_batch_shape(
          r.has("batch_shape") ? r.shape("batch_shape") : r.shape("batch_input_shape"), layer_name)});
      continue;
    }
    const auto layer = layer_of(entry, inner_models, budget);
    const std::string where = "layer \"" + layer_name + "\" of model \"" + name + "\"";
    const Json nodes = entry.value("inbound_nodes", Json::array());
    for (std::size_t k = 0; k < nodes.size(); ++k)
      pending.push_back({layer_name, layer, k, node_inputs(nodes[k], where)});
  }
  // Keras's order: a call is made once the tensors it takes exist and the layer's earlier calls were.
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      auto& calls = made[it->name];
      bool ready = calls.size() == it->node;
      for (const auto& ref : it->inputs) {
        const auto found = made.find(ref.layer);
        ready =
            ready && found != made.end() && ref.node >= 0 && static_cast<std::size_t>(ref.node) < found->second.size();
      }
      if (!ready) {
        ++it;
        continue;
      }
      std::vector<KerasTensor> inputs;
      for (const auto& ref : it->inputs) {
        const auto& outputs = made.at(ref.layer)[static_cast<std::size_t>(ref.node)];
        if (ref.tensor < 0 || static_cast<std::size_t>(ref.tensor) >= outputs.size())
          throw InvalidArgumentError("model \"" + name + "\": layer \"" + it->layer->name() + "\" takes tensor " +
                                     std::to_string(ref.tensor) + " of " + ref.layer + "'s call " +
                                     std::to_string(ref.node) + ", which has " + std::to_string(outputs.size()));
        inputs.push_back(outputs[static_cast<std::size_t>(ref.tensor)]);
      }
      std::vector<PartialShape> shapes;
      for (const auto& t : inputs) shapes.push_back(t.shape());
      budget.before_call(*it->layer, shapes);
      calls.push_back(call_symbolic(it->layer, inputs));
      it = pending.erase(it);
      progress = true;
    }
    if (!progress) {
      const auto& p = pending.front();
      std::string needs;
      for (const auto& ref : p.inputs)
        needs += (needs.empty() ? "" : ", ") + ref.layer + "[" + std::to_string(ref.node) + "]";
      throw InvalidArgumentError("model \"" + name + "\": the layers' calls do not form a graph: call " +
                                 std::to_string(p.node) + " of layer \"" + p.name + "\" takes " + needs +
                                 ", which no layer's call makes");
    }
  }
  const auto tensors = [&](const char* key) {
    std::vector<KerasTensor> out;
    for (const auto& ref : endpoint_refs(config.at(key), "model \"" + name + "\"'s " + key)) {
      const auto found = made.find(ref.layer);
      if (found == made.end() || ref.node < 0 || static_cast<std::size_t>(ref.node) >= found->second.size() ||
          ref.tensor < 0 ||
          static_cast<std::size_t>(ref.tensor) >= found->second[static_cast<std::size_t>(ref.node)].size())
        throw InvalidArgumentError("model \"" + name + "\"'s " + key + " name " + ref.layer + "[" +
                                   std::to_string(ref.node) + "][" + std::to_string(ref.tensor) +
                                   "], which the model does not have");
      out.push_back(found->second[static_cast<std::size_t>(ref.node)][static_cast<std::size_t>(ref.tensor)]);
    }
    return out;
  };
  return std::make_shared<Model>(tensors("input_layers"), tensors("output_layers"), ModelOptions{.name = name});
}

inline std::shared_ptr<Model> model_of(const Json& serialized, Budget& budget) {
  const std::string kind = serialized.value("class_name", std::string());
  if (!serialized.contains("config") || !serialized["config"].is_object() || !serialized["config"].contains("layers") ||
      !serialized["config"]["layers"].is_array())
    throw InvalidArgumentError("the config of a " + kind +
                               " model has no list of layers (\"config\": {\"layers\": [...]})");
  const Json& config = serialized["config"];
  auto model = kind == "Sequential" ? sequential_of(config, budget) : functional_of(config, budget);
  if (!Reader(config, kind, true, "model").boolean_or("trainable", true)) model->set_trainable(false);
  return model;
}

}  // namespace config_detail

inline Json model_to_config(const Model& model) {
  const auto graph = std::dynamic_pointer_cast<const layer_detail::FunctionalGraph>(model.impl());
  if (!graph) throw InternalError("model \"" + model.name() + "\" has no graph of layers");
  Json out = config_detail::graph_to_config(*graph);
  // The model's own policy, as Keras writes it. (Keras does not read it back: a loaded model takes
  // the global policy, and so decides on loss scaling at compile; devtensor's too.)
  if (graph->type_name() == "Sequential")
    out["config"]["dtype"] = config_detail::dtype_policy(model.dtype_policy().name());
  out["build_config"] =
      Json{{"input_shape",
            graph->type_name() == "Sequential" ? config_detail::shape_json(graph->inputs().front().shape()) : Json()}};
  std::vector<std::string> undescribed;
  out["compile_config"] = compile_to_config(model, undescribed);
  if (!undescribed.empty()) {
    std::string list;
    for (const auto& u : undescribed) list += (list.empty() ? "" : ", ") + u;
    log(LogSource::python_logger, LogSeverity::warning,
        "model \"" + model.name() + "\" is saved without its compile config: Keras has no config for " + list +
            ". It loads uncompiled; compile it again after loading.");
  }
  return out;
}

inline std::shared_ptr<Model> model_from_config(const Json& serialized, std::int64_t max_weights, bool fresh_weights) {
  if (!serialized.is_object() || !serialized.contains("class_name") || !serialized["class_name"].is_string())
    throw InvalidArgumentError("a model config is an object with a \"class_name\" (Sequential, Functional); got " +
                               serialized.dump().substr(0, 200));
  const std::string kind = serialized["class_name"].get<std::string>();
  if (kind != "Sequential" && kind != "Functional" && kind != "Model")
    throw UnimplementedError("the config describes a " + kind +
                             "; devtensor rebuilds Sequential and Functional models");
  std::vector<std::string> missing;
  if (serialized.contains("config") && serialized["config"].is_object() && serialized["config"].contains("layers"))
    config_detail::unsupported_classes(serialized["config"]["layers"], missing);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw UnimplementedError("the model uses " + std::to_string(missing.size()) +
                             " layer(s) devtensor does not have: " + list + ". devtensor rebuilds " +
                             [] {
                               std::string known;
                               for (const auto& k : known_layer_classes()) known += (known.empty() ? "" : ", ") + k;
                               return known;
                             }() +
                             ", and models of them");
  }
  config_detail::Budget budget{max_weights, max_weights, fresh_weights};
  try {
    return config_detail::model_of(serialized, budget);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("the model config is not what Keras writes: ") + e.what());
  }
}

}  // namespace devtensor::nn::saving
