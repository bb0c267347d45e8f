#pragma once
/// @file layer_config.hpp
/// @brief Keras 3's serialized form of each layer devtensor has: the config Keras writes
/// (`{"module", "class_name", "config", "registered_name", "build_config"}`) and the layer a
/// config describes.
///
/// Written as Keras 3.15 writes it, key for key, so that `keras.models.load_model` rebuilds the
/// same layer. Read as Keras reads it, with what devtensor's layers cannot be refused by name:
/// a class devtensor does not have, an activation it does not know, a dtype policy other than
/// float32, mixed_float16 and mixed_bfloat16 (every layer takes those), Conv2D groups, BatchNormalization
/// renorm, a channels_first Flatten, Dropout's noise_shape. `trainable` is written and read (a frozen layer stays
/// frozen). Read past without effect: regularizers and constraints (devtensor's layers have none), initializers
/// devtensor does not have (the layer's default then: the weights a file loads replace them anyway).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "devtensor/core/error.hpp"
#include "devtensor/nn/config_reader.hpp"
#include "devtensor/nn/conv_layers.hpp"
#include "devtensor/nn/core_layers.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/layers.hpp"
#include "devtensor/nn/merging.hpp"
#include "devtensor/nn/normalization.hpp"
#include "devtensor/nn/reshaping_layers.hpp"

namespace devtensor::nn::saving {

/// A layer's serialized form. `input_shapes`: the shapes of its first call (build_config), one
/// per input; empty when the layer was not called.
[[nodiscard]] Json layer_to_config(const nn::LayerBase& layer, const std::vector<nn::PartialShape>& input_shapes);

/// The layer `serialized` describes (not built). `fresh_weights`: its initializers as the config
/// says; false when a weights file will set every weight (zeros then: no random numbers drawn for
/// values about to be replaced). @throws UnimplementedError for a class or an argument devtensor
/// does not have (the message names them), InvalidArgumentError for a config that is not what
/// Keras writes.
[[nodiscard]] std::shared_ptr<nn::LayerBase> layer_from_config(const Json& serialized, bool fresh_weights = true);

/// The classes layer_from_config rebuilds.
[[nodiscard]] const std::vector<std::string>& known_layer_classes();

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

namespace config_detail {

inline Json keras_object(const std::string& module, const std::string& class_name, Json config) {
  return Json{
      {"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}};
}

inline Json dtype_policy(const std::string& name = "float32") {
  return keras_object("keras", "DTypePolicy", Json{{"name", name}});
}

inline Json shape_json(const nn::PartialShape& shape) {
  Json out = Json::array();
  for (const auto d : shape) out.push_back(d < 0 ? Json(nullptr) : Json(d));
  return out;
}

inline Json pair_json(const std::vector<std::int64_t>& v) {
  return v.size() == 1 ? Json::array({v[0], v[0]}) : Json(v);
}

inline const char* activation_name(nn::Activation a) {
  switch (a) {
    case nn::Activation::relu: return "relu";
    case nn::Activation::sigmoid: return "sigmoid";
    case nn::Activation::tanh: return "tanh";
    case nn::Activation::softmax: return "softmax";
    case nn::Activation::linear: break;
  }
  return "linear";
}

inline Json initializer_json(const nn::Initializer& init) {
  namespace ini = nn::initializers;
  const auto seed = [](const std::optional<std::uint64_t>& s) { return s ? Json(*s) : Json(nullptr); };
  if (const auto* g = init.target<ini::GlorotUniform>())
    return keras_object("keras.initializers", "GlorotUniform",
                        Json{{"seed", seed(g->seed)}, {"input_axes", nullptr}, {"output_axes", nullptr}});
  if (init.target<ini::Zeros>()) return keras_object("keras.initializers", "Zeros", Json::object());
  if (init.target<ini::Ones>()) return keras_object("keras.initializers", "Ones", Json::object());
  if (const auto* c = init.target<ini::Constant>())
    return keras_object("keras.initializers", "Constant", Json{{"value", static_cast<double>(c->value)}});
  if (const auto* u = init.target<ini::RandomUniform>())
    return keras_object("keras.initializers", "RandomUniform",
                        Json{{"minval", u->minval}, {"maxval", u->maxval}, {"seed", seed(u->seed)}});
  if (const auto* n = init.target<ini::RandomNormal>())
    return keras_object("keras.initializers", "RandomNormal",
                        Json{{"mean", n->mean}, {"stddev", n->stddev}, {"seed", seed(n->seed)}});
  return nullptr;  // a function of the user's: Keras then uses the layer's default
}

/// The fields every layer's config starts with.
inline Json base_config(const nn::LayerBase& layer) {
  return Json{
      {"name", layer.name()}, {"trainable", layer.trainable()}, {"dtype", dtype_policy(layer.dtype_policy().name())}};
}

}  // namespace config_detail

inline const std::vector<std::string>& known_layer_classes() {
  static const std::vector<std::string> classes{"InputLayer",
                                                "Dense",
                                                "Dropout",
                                                "Activation",
                                                "Flatten",
                                                "Add",
                                                "Concatenate",
                                                "Conv2D",
                                                "DepthwiseConv2D",
                                                "MaxPooling2D",
                                                "AveragePooling2D",
                                                "GlobalAveragePooling2D",
                                                "GlobalMaxPooling2D",
                                                "BatchNormalization",
                                                "Reshape",
                                                "ZeroPadding2D",
                                                "Rescaling"};
  return classes;
}

inline Json layer_to_config(const nn::LayerBase& layer, const std::vector<nn::PartialShape>& input_shapes) {
  using namespace config_detail;
  namespace ld = nn::layer_detail;
  Json config = base_config(layer);
  bool has_build_config = true;  // as Keras: the layers that define build() record their input shape
  if (const auto* input = dynamic_cast<const ld::InputLayer*>(&layer)) {
    config = Json{{"batch_shape", shape_json(input->batch_shape())},
                  {"dtype", "float32"},
                  {"sparse", false},
                  {"ragged", false},
                  {"name", layer.name()},
                  {"optional", false}};
    has_build_config = false;
  } else if (const auto* dense = dynamic_cast<const ld::DenseLayer*>(&layer)) {
    const auto& o = dense->options();
    config["units"] = dense->units();
    config["activation"] = activation_name(o.activation);
    config["use_bias"] = o.use_bias;
    config["kernel_initializer"] = initializer_json(o.kernel_initializer);
    config["bias_initializer"] = initializer_json(o.bias_initializer);
    for (const char* key :
         {"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint", "quantization_config"})
      config[key] = nullptr;
  } else if (const auto* dropout = dynamic_cast<const ld::DropoutLayer*>(&layer)) {
    config["rate"] = dropout->rate();
    config["seed"] = nullptr;
    config["noise_shape"] = nullptr;
    has_build_config = false;
  } else if (const auto* activation = dynamic_cast<const ld::ActivationLayer*>(&layer)) {
    config["activation"] = activation_name(activation->activation());
    has_build_config = false;
  } else if (dynamic_cast<const ld::FlattenLayer*>(&layer)) {
    config["data_format"] = "channels_last";
  } else if (dynamic_cast<const ld::AddLayer*>(&layer)) {
  } else if (const auto* concatenate = dynamic_cast<const ld::ConcatenateLayer*>(&layer)) {
    config["axis"] = concatenate->axis();
  } else if (const auto* conv = dynamic_cast<const ld::Conv2DLayer*>(&layer)) {
    const auto& o = conv->options();
    config["filters"] = conv->filters();
    config["kernel_size"] = conv->kernel_size();
    config["strides"] = pair_json(o.strides.values());
    config["padding"] = o.padding;
    config["data_format"] = o.data_format;
    config["dilation_rate"] = pair_json(o.dilation_rate.values());
    config["groups"] = 1;
    config["activation"] = activation_name(o.activation);
    config["use_bias"] = o.use_bias;
    config["kernel_initializer"] = initializer_json(o.kernel_initializer);
    config["bias_initializer"] = initializer_json(o.bias_initializer);
    for (const char* key :
         {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"})
      config[key] = nullptr;
  } else if (const auto* depthwise = dynamic_cast<const ld::DepthwiseConv2DLayer*>(&layer)) {
    const auto& o = depthwise->options();
    config["depth_multiplier"] = o.depth_multiplier;
    config["kernel_size"] = depthwise->kernel_size();
    config["strides"] = pair_json(o.strides.values());
    config["padding"] = o.padding;
    config["data_format"] = o.data_format;
    config["dilation_rate"] = pair_json(o.dilation_rate.values());
    config["activation"] = activation_name(o.activation);
    config["use_bias"] = o.use_bias;
    config["depthwise_initializer"] = initializer_json(o.depthwise_initializer);
    config["bias_initializer"] = initializer_json(o.bias_initializer);
    for (const char* key : {"depthwise_regularizer", "bias_regularizer", "activity_regularizer", "depthwise_constraint",
                            "bias_constraint"})
      config[key] = nullptr;
  } else if (const auto* pool = dynamic_cast<const ld::Pooling2DLayer*>(&layer)) {
    config["pool_size"] = pool->pool_size();
    config["padding"] = pool->options().padding;
    config["strides"] = pool->strides();
    config["data_format"] = pool->options().data_format;
    has_build_config = false;
  } else if (const auto* global = dynamic_cast<const ld::GlobalPooling2DLayer*>(&layer)) {
    config["data_format"] = global->options().data_format;
    config["keepdims"] = global->options().keepdims;
    has_build_config = false;
  } else if (const auto* bn = dynamic_cast<const ld::BatchNormalizationLayer*>(&layer)) {
    const auto& o = bn->options();
    config["axis"] = o.axis;
    config["momentum"] = o.momentum;
    config["epsilon"] = o.epsilon;
    config["center"] = o.center;
    config["scale"] = o.scale;
    config["beta_initializer"] = initializer_json(o.beta_initializer);
    config["gamma_initializer"] = initializer_json(o.gamma_initializer);
    config["moving_mean_initializer"] = initializer_json(o.moving_mean_initializer);
    config["moving_variance_initializer"] = initializer_json(o.moving_variance_initializer);
    for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"})
      config[key] = nullptr;
    config["synchronized"] = false;
    config["renorm"] = false;
    config["renorm_clipping"] = nullptr;
    config["renorm_momentum"] = 0.99;
  } else if (const auto* reshape = dynamic_cast<const ld::ReshapeLayer*>(&layer)) {
    config["target_shape"] = reshape->target_shape();
    has_build_config = false;
  } else if (const auto* padding = dynamic_cast<const ld::ZeroPadding2DLayer*>(&layer)) {
    const auto& s = padding->sides();
    config["padding"] = Json::array({Json::array({s[0], s[1]}), Json::array({s[2], s[3]})});
    config["data_format"] = padding->options().data_format;
  } else if (const auto* rescaling = dynamic_cast<const ld::RescalingLayer*>(&layer)) {
    config["scale"] = rescaling->scale();
    config["offset"] = rescaling->options().offset;
  } else {
    throw UnimplementedError("devtensor cannot yet write the config of layer \"" + layer.name() + "\" (" +
                             layer.type_name() + ") in a .keras archive");
  }
  Json out = keras_object("keras.layers", layer.type_name(), std::move(config));
  if (has_build_config && !input_shapes.empty()) {
    Json shapes = Json::array();
    for (const auto& s : input_shapes) shapes.push_back(shape_json(s));
    out["build_config"] = Json{{"input_shape", input_shapes.size() == 1 ? shapes[0] : shapes}};
  }
  return out;
}

namespace config_detail {
inline std::shared_ptr<nn::LayerBase> make_layer(const Json& serialized, bool fresh_weights);
}  // namespace config_detail

inline std::shared_ptr<nn::LayerBase> layer_from_config(const Json& serialized, bool fresh_weights) {
  auto layer = config_detail::make_layer(serialized, fresh_weights);
  if (serialized.contains("config") && serialized["config"].is_object() &&
      !config_detail::Reader(serialized["config"], layer->type_name()).boolean_or("trainable", true))
    layer->set_trainable(false);
  return layer;
}

inline std::shared_ptr<nn::LayerBase> config_detail::make_layer(const Json& serialized, bool fresh_weights) {
  using namespace config_detail;
  namespace ld = nn::layer_detail;
  if (!serialized.is_object() || !serialized.contains("class_name") || !serialized["class_name"].is_string())
    throw InvalidArgumentError("a layer's entry is not what Keras writes (an object with a \"class_name\"): " +
                               serialized.dump().substr(0, 200));
  const std::string kind = serialized["class_name"].get<std::string>();
  static const Json empty = Json::object();
  const Json& config = serialized.contains("config") ? serialized["config"] : empty;
  const Reader r(config, kind, fresh_weights);
  if (kind == "InputLayer") {
    const nn::PartialShape shape = r.has("batch_shape") ? r.shape("batch_shape") : r.shape("batch_input_shape");
    if (r.boolean_or("sparse", false) || r.boolean_or("ragged", false))
      throw UnimplementedError(r.where() + " takes sparse or ragged tensors, which devtensor does not have");
    if (r.string_or("dtype", "float32") != "float32")
      throw UnimplementedError(r.where() + " takes " + r.string_or("dtype", "") + "; devtensor's models take float32");
    return nn::input_with_batch_shape(shape, r.name()).node()->layer;
  }
  const std::string policy = r.policy();  // every layer takes a mixed precision policy
  if (kind == "Dense") {
    for (const char* key : {"lora_rank", "quantization_config"}) r.require_unset(key);
    nn::DenseOptions o{
        .activation = r.activation(), .use_bias = r.boolean_or("use_bias", true), .name = r.name(), .dtype = policy};
    o.kernel_initializer = r.initializer("kernel_initializer", o.kernel_initializer);
    o.bias_initializer = r.initializer("bias_initializer", o.bias_initializer);
    return nn::Dense(r.integer("units"), std::move(o)).impl();
  }
  if (kind == "Dropout") {
    r.require_unset("noise_shape");
    nn::DropoutOptions o{.name = r.name(), .dtype = policy};
    if (r.has("seed")) o.seed = static_cast<std::uint64_t>(r.integer("seed"));
    return nn::Dropout(r.number_or("rate", 0.0), std::move(o)).impl();
  }
  if (kind == "Activation") return nn::ActivationLayer(r.activation(), {.name = r.name(), .dtype = policy}).impl();
  if (kind == "Flatten") {
    r.require_unset("data_format", "channels_last");
    return nn::Flatten({.name = r.name(), .dtype = policy}).impl();
  }
  if (kind == "Add") return nn::Add({.name = r.name(), .dtype = policy}).impl();
  if (kind == "Concatenate")
    return nn::Concatenate(r.has("axis") ? r.integer("axis") : -1, {.name = r.name(), .dtype = policy}).impl();
  if (kind == "Conv2D") {
    r.require_unset("groups", 1);
    nn::Conv2DOptions o{
        .strides = spatial(r.ints("strides")),
        .padding = r.string_or("padding", "valid"),
        .data_format = r.string_or("data_format", "channels_last"),
        .dilation_rate = spatial(r.has("dilation_rate") ? r.ints("dilation_rate") : std::vector<std::int64_t>{1}),
        .activation = r.activation(),
        .use_bias = r.boolean_or("use_bias", true),
        .name = r.name(),
        .dtype = policy};
    o.kernel_initializer = r.initializer("kernel_initializer", o.kernel_initializer);
    o.bias_initializer = r.initializer("bias_initializer", o.bias_initializer);
    return nn::Conv2D(r.integer("filters"), spatial(r.ints("kernel_size")), std::move(o)).impl();
  }
  if (kind == "DepthwiseConv2D") {
    nn::DepthwiseConv2DOptions o{
        .strides = spatial(r.ints("strides")),
        .padding = r.string_or("padding", "valid"),
        .depth_multiplier = r.has("depth_multiplier") ? r.integer("depth_multiplier") : 1,
        .data_format = r.string_or("data_format", "channels_last"),
        .dilation_rate = spatial(r.has("dilation_rate") ? r.ints("dilation_rate") : std::vector<std::int64_t>{1}),
        .activation = r.activation(),
        .use_bias = r.boolean_or("use_bias", true),
        .name = r.name(),
        .dtype = policy};
    o.depthwise_initializer = r.initializer("depthwise_initializer", o.depthwise_initializer);
    o.bias_initializer = r.initializer("bias_initializer", o.bias_initializer);
    return nn::DepthwiseConv2D(spatial(r.ints("kernel_size")), std::move(o)).impl();
  }
  if (kind == "MaxPooling2D" || kind == "AveragePooling2D") {
    nn::Pooling2DOptions o{.padding = r.string_or("padding", "valid"),
                           .data_format = r.string_or("data_format", "channels_last"),
                           .name = r.name(),
                           .dtype = policy};
    if (r.has("strides")) o.strides = spatial(r.ints("strides"));
    const SpatialInts pool = spatial(r.has("pool_size") ? r.ints("pool_size") : std::vector<std::int64_t>{2});
    return kind == "MaxPooling2D" ? nn::MaxPooling2D(pool, std::move(o)).impl()
                                  : nn::AveragePooling2D(pool, std::move(o)).impl();
  }
  if (kind == "GlobalAveragePooling2D" || kind == "GlobalMaxPooling2D") {
    nn::GlobalPooling2DOptions o{.data_format = r.string_or("data_format", "channels_last"),
                                 .keepdims = r.boolean_or("keepdims", false),
                                 .name = r.name(),
                                 .dtype = policy};
    return kind == "GlobalMaxPooling2D" ? nn::GlobalMaxPooling2D(std::move(o)).impl()
                                        : nn::GlobalAveragePooling2D(std::move(o)).impl();
  }
  if (kind == "BatchNormalization") {
    r.require_unset("renorm", false);
    const auto axis = r.has("axis") ? r.ints("axis") : std::vector<std::int64_t>{-1};
    if (axis.size() != 1)
      throw UnimplementedError(r.where() + " normalises over several axes " + config["axis"].dump() +
                               "; devtensor's BatchNormalization takes one");
    nn::BatchNormalizationOptions o{.axis = axis[0],
                                    .momentum = r.number_or("momentum", 0.99),
                                    .epsilon = r.number_or("epsilon", 1e-3),
                                    .center = r.boolean_or("center", true),
                                    .scale = r.boolean_or("scale", true),
                                    .name = r.name(),
                                    .dtype = policy};
    o.beta_initializer = r.initializer("beta_initializer", o.beta_initializer);
    o.gamma_initializer = r.initializer("gamma_initializer", o.gamma_initializer);
    o.moving_mean_initializer = r.initializer("moving_mean_initializer", o.moving_mean_initializer);
    o.moving_variance_initializer = r.initializer("moving_variance_initializer", o.moving_variance_initializer);
    return nn::BatchNormalization(std::move(o)).impl();
  }
  if (kind == "Reshape") {
    const auto target = r.ints("target_shape");
    if (elements_of(target) > kMaxElements) throw r.invalid("\"target_shape\" has more than 2^40 elements");
    return nn::Reshape(target, {.name = r.name(), .dtype = policy}).impl();
  }
  if (kind == "ZeroPadding2D") {
    const Json& p = r.at("padding");
    const auto pair = [&](const Json& v) -> std::pair<std::int64_t, std::int64_t> {
      if (v.is_number_integer()) return {v.get<std::int64_t>(), v.get<std::int64_t>()};
      if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
        return {v[0].get<std::int64_t>(), v[1].get<std::int64_t>()};
      throw r.invalid("\"padding\" is not an int, two ints or two pairs: " + p.dump());
    };
    const auto rows = p.is_array() && p.size() == 2 ? pair(p[0]) : pair(p);
    const auto cols = p.is_array() && p.size() == 2 ? pair(p[1]) : pair(p);
    return nn::ZeroPadding2D(
               nn::Padding2D{rows, cols},
               {.data_format = r.string_or("data_format", "channels_last"), .name = r.name(), .dtype = policy})
        .impl();
  }
  if (kind == "Rescaling")
    return nn::Rescaling(r.number_or("scale", 1.0),
                         {.offset = r.number_or("offset", 0.0), .name = r.name(), .dtype = policy})
        .impl();
  throw UnimplementedError("layer \"" + r.name() + "\" is a " + kind + ", which devtensor does not have");
}

}  // namespace devtensor::nn::saving
