#pragma once
/// @file compile_config.hpp
/// @brief Keras 3's compile config (`model.get_compile_config()`, the "compile_config" of a
/// `.keras` archive's config.json): the optimizer, losses, loss weights and metrics compile() was
/// given; and the compile() call a config describes.
///
/// Written as Keras 3.15 writes it, key for key: the optimizer (SGD, Adam) with its learning rate
/// as a float32 value or a schedule's config (the five of schedules.hpp), a loss made from an
/// identifier as that identifier ("mse"), a loss object as its config, several losses as a list,
/// metrics as a list (a list of lists per output). A loss, optimizer or schedule of the program's
/// own type has no Keras config: the model is then saved without a compile config, with a WARNING
/// that names it (Keras then loads it uncompiled).
///
/// Read as Keras reads it, one loss for all outputs or a list or a dict by output name (loss
/// weights and metrics likewise). What devtensor does not have is refused, everything at once in one
/// UnimplementedError: an optimizer other than SGD and Adam, a loss or metric devtensor lacks,
/// weight decay, gradient clipping, EMA, loss-scale factors, gradient accumulation, weighted
/// metrics. Read past without effect: steps_per_execution and jit_compile (devtensor decides how
/// its steps run), the optimizer's and the schedules' names.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/nn/layer_config.hpp"
#include "devtensor/nn/loss_scale_optimizer.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/nn/schedules.hpp"
#include "devtensor/nn/training_options.hpp"

namespace devtensor::nn::saving {

/// The compile config of `model`: an empty object for a model not compiled (as Keras writes it),
/// or for one whose loss, optimizer or schedule has no Keras config; `undescribed` then names them.
[[nodiscard]] Json compile_to_config(const Model& model, std::vector<std::string>& undescribed);

/// What compile() is given.
struct CompileCall {
  std::vector<Loss> losses;
  std::optional<Optimizer> optimizer;
  CompileOptions options;
};

/// The compile() call `config` describes for a model whose outputs come from `output_names`
/// (in order); nullopt for an empty or null config (a model saved uncompiled).
/// @throws UnimplementedError naming everything devtensor does not have; InvalidArgumentError for
/// a config that is not Keras's or values the optimizer refuses.
[[nodiscard]] std::optional<CompileCall> compile_from_config(const Json& config,
                                                             const std::vector<std::string>& output_names);

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

namespace compile_detail {

using config_detail::keras_object;

/// Keras keeps numbers such as the learning rate in float32 variables and writes their values.
inline double as_float32(double value) { return static_cast<double>(static_cast<float>(value)); }

inline Json schedule_config(const LearningRate& rate) {
  namespace s = schedules;
  const auto object = [](const char* name, Json config) {
    return keras_object("keras.optimizers.schedules", name, std::move(config));
  };
  if (const auto* e = rate.schedule_as<s::ExponentialDecay>())
    return object("ExponentialDecay", Json{{"initial_learning_rate", e->initial_learning_rate},
                                           {"decay_steps", e->decay_steps},
                                           {"decay_rate", e->decay_rate},
                                           {"staircase", e->staircase},
                                           {"name", "ExponentialDecay"}});
  if (const auto* p = rate.schedule_as<s::PiecewiseConstantDecay>())
    return object("PiecewiseConstantDecay",
                  Json{{"boundaries", p->boundaries}, {"values", p->values}, {"name", "PiecewiseConstant"}});
  if (const auto* c = rate.schedule_as<s::CosineDecay>())
    return object("CosineDecay", Json{{"initial_learning_rate", c->initial_learning_rate},
                                      {"decay_steps", c->decay_steps},
                                      {"alpha", c->alpha},
                                      {"name", "CosineDecay"},
                                      {"warmup_target", c->warmup_target ? Json(*c->warmup_target) : Json()},
                                      {"warmup_steps", c->warmup_steps}});
  if (const auto* i = rate.schedule_as<s::InverseTimeDecay>())
    return object("InverseTimeDecay", Json{{"initial_learning_rate", i->initial_learning_rate},
                                           {"decay_steps", i->decay_steps},
                                           {"decay_rate", i->decay_rate},
                                           {"staircase", i->staircase},
                                           {"name", "InverseTimeDecay"}});
  if (const auto* p = rate.schedule_as<s::PolynomialDecay>())
    return object("PolynomialDecay", Json{{"initial_learning_rate", p->initial_learning_rate},
                                          {"decay_steps", p->decay_steps},
                                          {"end_learning_rate", p->end_learning_rate},
                                          {"power", p->power},
                                          {"cycle", p->cycle},
                                          {"name", "PolynomialDecay"}});
  return nullptr;
}

/// The settings every Keras optimizer's config has, at the values devtensor's optimizers have.
inline Json optimizer_base(const std::string& name, Json learning_rate) {
  return Json{{"name", name},
              {"learning_rate", std::move(learning_rate)},
              {"weight_decay", nullptr},
              {"clipnorm", nullptr},
              {"global_clipnorm", nullptr},
              {"clipvalue", nullptr},
              {"use_ema", false},
              {"ema_momentum", 0.99},
              {"ema_overwrite_frequency", nullptr},
              {"loss_scale_factor", nullptr},
              {"gradient_accumulation_steps", nullptr}};
}

inline Json optimizer_config(const Optimizer& optimizer, std::vector<std::string>& undescribed) {
  const auto rate = [&](const LearningRate& given) -> Json {
    if (!given.is_schedule()) return as_float32(optimizer.learning_rate());  // its value now, as Keras's variable
    Json schedule = schedule_config(given);
    if (schedule.is_null())
      undescribed.push_back("the learning-rate schedule of " + optimizer.name() + " (a type of the program's own)");
    return schedule;
  };
  if (const auto* sgd = optimizer.target<optimizers::SGD>()) {
    Json config = optimizer_base("sgd", rate(sgd->learning_rate));
    config["momentum"] = sgd->momentum;
    config["nesterov"] = sgd->nesterov;
    return keras_object("keras.optimizers", "SGD", std::move(config));
  }
  if (const auto* adam = optimizer.target<optimizers::Adam>()) {
    Json config = optimizer_base("adam", rate(adam->learning_rate));
    config["beta_1"] = adam->beta_1;
    config["beta_2"] = adam->beta_2;
    config["epsilon"] = adam->epsilon;
    config["amsgrad"] = adam->amsgrad;
    return keras_object("keras.optimizers", "Adam", std::move(config));
  }
  if (const auto* lso = optimizer.target<optimizers::LossScaleOptimizer>()) {
    Json inner = optimizer_config(lso->inner_optimizer, undescribed);
    if (inner.is_null()) return nullptr;
    return keras_object("keras.optimizers", "LossScaleOptimizer",
                        Json{{"name", "loss_scale_optimizer"},
                             {"inner_optimizer", std::move(inner)},
                             {"initial_scale", lso->initial_scale},
                             {"dynamic_growth_steps", lso->dynamic_growth_steps}});
  }
  undescribed.push_back("the optimizer " + optimizer.name() + " (a type of the program's own)");
  return nullptr;
}

inline Json reduction_json(Reduction reduction) {
  switch (reduction) {
    case Reduction::NONE: return nullptr;
    case Reduction::SUM: return "sum";
    case Reduction::AUTO:
    case Reduction::SUM_OVER_BATCH_SIZE: break;
  }
  return "sum_over_batch_size";
}

inline Json loss_config(const Loss& loss, std::vector<std::string>& undescribed) {
  namespace l = losses;
  if (!loss.identifier().empty()) return loss.identifier();
  const auto object = [&](const char* class_name, Json extra) {
    Json config{{"name", loss.name()}, {"reduction", reduction_json(loss.reduction())}};
    config.update(extra);
    return keras_object("keras.losses", class_name, std::move(config));
  };
  if (loss.target<l::MeanSquaredError>()) return object("MeanSquaredError", Json::object());
  if (const auto* b = loss.target<l::BinaryCrossentropy>())
    return object("BinaryCrossentropy",
                  Json{{"from_logits", b->from_logits}, {"label_smoothing", b->label_smoothing}, {"axis", -1}});
  if (const auto* c = loss.target<l::CategoricalCrossentropy>())
    return object("CategoricalCrossentropy",
                  Json{{"from_logits", c->from_logits}, {"label_smoothing", c->label_smoothing}, {"axis", -1}});
  if (const auto* s = loss.target<l::SparseCategoricalCrossentropy>())
    return object("SparseCategoricalCrossentropy", Json{{"from_logits", s->from_logits}, {"ignore_class", nullptr}});
  undescribed.push_back("the loss " + loss.name() + " (a type of the program's own)");
  return nullptr;
}

/// What a config gives for each output: one value for all, a list in the outputs' order, or a
/// dict by output name (missing names: `missing`). `what` names the field in errors.
inline std::vector<Json> per_output(const Json& value, const std::vector<std::string>& outputs, const char* what,
                                    const Json& missing) {
  if (value.is_object() && !value.contains("class_name")) {
    for (const auto& [key, unused] : value.items())
      if (std::find(outputs.begin(), outputs.end(), key) == outputs.end())
        throw InvalidArgumentError(std::string("the compile config's \"") + what + "\" names \"" + key +
                                   "\", which is not one of the model's outputs");
    std::vector<Json> out;
    for (const auto& name : outputs) out.push_back(value.contains(name) ? value[name] : missing);
    return out;
  }
  if (value.is_array()) return {value.begin(), value.end()};
  return {value};
}

/// The identifier or class name of a Keras object given as a string or as its serialized form.
inline std::string identifier_of(const Json& value, const char* what) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("class_name") && value["class_name"].is_string())
    return value["class_name"].get<std::string>();
  throw InvalidArgumentError(std::string("the compile config's ") + what +
                             " is not an identifier or a Keras object: " + value.dump().substr(0, 200));
}

/// What `make(id)` gives for a Keras identifier, or nullopt with "the <what> "<id>"" added to
/// `missing` when devtensor does not know it (make throws InvalidArgumentError only for that).
template <class Make>
auto known_identifier(const std::string& id, const char* what, std::vector<std::string>& missing, Make make)
    -> std::optional<decltype(make(id))> {
  try {
    return make(id);
  } catch (const InvalidArgumentError&) {
    missing.push_back(std::string("the ") + what + " \"" + id + "\"");
    return std::nullopt;
  }
}

inline const Json& config_of(const Json& value) {
  static const Json empty = Json::object();
  return value.is_object() && value.contains("config") && value["config"].is_object() ? value["config"] : empty;
}

inline Reduction reduction_of(const config_detail::Reader& r, std::vector<std::string>& missing) {
  if (r.at("reduction").is_null()) return Reduction::NONE;
  const std::string name = r.string_or("reduction", "sum_over_batch_size");
  if (name == "sum_over_batch_size") return Reduction::AUTO;
  if (name == "sum") return Reduction::SUM;
  if (name == "none") return Reduction::NONE;
  missing.push_back("the loss reduction \"" + name + "\"");
  return Reduction::AUTO;
}

inline std::optional<Loss> loss_of(const Json& value, std::vector<std::string>& missing) {
  namespace l = losses;
  const std::string id = identifier_of(value, "loss");
  if (value.is_string()) return known_identifier(id, "loss", missing, [](const std::string& i) { return Loss(i); });
  const config_detail::Reader r(config_of(value), id, true, "loss");
  if (r.has("axis") && r.at("axis") != Json(-1)) missing.push_back("the " + id + " axis " + r.at("axis").dump());
  if (r.has("ignore_class")) missing.push_back("the " + id + " ignore_class " + r.at("ignore_class").dump());
  const bool has_reduction = config_of(value).contains("reduction");
  const Reduction reduction = has_reduction ? reduction_of(r, missing) : Reduction::AUTO;
  if (id == "MeanSquaredError") return Loss(l::MeanSquaredError{reduction});
  if (id == "BinaryCrossentropy")
    return Loss(
        l::BinaryCrossentropy{r.boolean_or("from_logits", false), r.number_or("label_smoothing", 0.0), reduction});
  if (id == "CategoricalCrossentropy")
    return Loss(
        l::CategoricalCrossentropy{r.boolean_or("from_logits", false), r.number_or("label_smoothing", 0.0), reduction});
  if (id == "SparseCategoricalCrossentropy")
    return Loss(l::SparseCategoricalCrossentropy{r.boolean_or("from_logits", false), reduction});
  missing.push_back("the loss " + id);
  return std::nullopt;
}

inline LearningRate learning_rate_of(const Json& value, std::vector<std::string>& missing) {
  namespace s = schedules;
  if (value.is_number()) {
    const Json wrapped{{"learning_rate", value}};
    return config_detail::Reader(wrapped, "learning rate", true, "optimizer").number_or("learning_rate", 0.0);
  }
  const std::string id = identifier_of(value, "learning rate");
  const config_detail::Reader r(config_of(value), id, true, "learning-rate schedule");
  if (id == "ExponentialDecay")
    return s::ExponentialDecay{r.number_or("initial_learning_rate", 0.0), r.integer("decay_steps"),
                               r.number_or("decay_rate", 0.0), r.boolean_or("staircase", false)};
  if (id == "InverseTimeDecay")
    return s::InverseTimeDecay{r.number_or("initial_learning_rate", 0.0), r.integer("decay_steps"),
                               r.number_or("decay_rate", 0.0), r.boolean_or("staircase", false)};
  if (id == "PolynomialDecay")
    return s::PolynomialDecay{r.number_or("initial_learning_rate", 0.0), r.integer("decay_steps"),
                              r.number_or("end_learning_rate", 0.0001), r.number_or("power", 1.0),
                              r.boolean_or("cycle", false)};
  if (id == "CosineDecay") {
    std::optional<double> target;
    if (r.has("warmup_target")) target = r.number_or("warmup_target", 0.0);
    return s::CosineDecay{r.number_or("initial_learning_rate", 0.0), r.integer("decay_steps"),
                          r.number_or("alpha", 0.0), target, r.has("warmup_steps") ? r.integer("warmup_steps") : 0};
  }
  if (id == "PiecewiseConstantDecay") {
    s::PiecewiseConstantDecay p;
    const Json& boundaries = r.at("boundaries");
    const Json& values = r.at("values");
    if (!boundaries.is_array() || !values.is_array() || boundaries.size() > 10'000 || values.size() > 10'000)
      throw r.invalid("\"boundaries\" and \"values\" are not lists (of at most 10 000)");
    for (const auto& b : boundaries) p.boundaries.push_back(config_detail::Reader(Json{{"b", b}}, id).integer("b"));
    for (const auto& v : values) p.values.push_back(config_detail::Reader(Json{{"v", v}}, id).number_or("v", 0.0));
    return p;
  }
  missing.push_back("the learning-rate schedule " + id);
  return 0.001;
}

inline std::optional<Optimizer> optimizer_of(const Json& value, std::vector<std::string>& missing) {
  const std::string id = identifier_of(value, "optimizer");
  if (value.is_string())
    return known_identifier(id, "optimizer", missing, [](const std::string& i) { return Optimizer(i); });
  const config_detail::Reader r(config_of(value), id, true, "optimizer");
  if (id == "LossScaleOptimizer") {
    if (!r.has("inner_optimizer")) throw r.invalid("it has no \"inner_optimizer\"");
    auto inner = optimizer_of(r.at("inner_optimizer"), missing);
    if (!inner) return std::nullopt;
    // (Optimizer's constructor validates: InvalidArgumentError for a scale or growth Keras refuses.)
    return Optimizer(optimizers::LossScaleOptimizer{
        .inner_optimizer = std::move(*inner),
        .initial_scale = r.number_or("initial_scale", 32768.0),
        .dynamic_growth_steps = r.has("dynamic_growth_steps") ? r.integer("dynamic_growth_steps") : 2000});
  }
  // Settings that change the update, which devtensor's optimizers do not have.
  for (const char* key : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "loss_scale_factor",
                          "gradient_accumulation_steps", "ema_overwrite_frequency"})
    if (r.has(key)) missing.push_back("the " + id + " setting " + key + "=" + r.at(key).dump());
  if (r.boolean_or("use_ema", false)) missing.push_back("the " + id + " setting use_ema=true");
  if (id != "SGD" && id != "Adam") {
    missing.push_back("the optimizer " + id);
    return std::nullopt;
  }
  const std::size_t before = missing.size();
  LearningRate rate = r.has("learning_rate") ? learning_rate_of(r.at("learning_rate"), missing)
                                             : LearningRate(id == "SGD" ? 0.01 : 0.001);
  if (missing.size() != before) return std::nullopt;
  if (id == "SGD")
    return Optimizer(optimizers::SGD{std::move(rate), r.number_or("momentum", 0.0), r.boolean_or("nesterov", false)});
  return Optimizer(optimizers::Adam{std::move(rate), r.number_or("beta_1", 0.9), r.number_or("beta_2", 0.999),
                                    r.number_or("epsilon", 1e-7), r.boolean_or("amsgrad", false)});
}

/// A metric's identifier devtensor knows (a string, or a metric object by its class name).
inline std::optional<std::string> metric_of(const Json& value, std::vector<std::string>& missing) {
  return known_identifier(identifier_of(value, "metric"), "metric", missing, [](const std::string& id) {
    (void)metric_by_name(id);
    return id;
  });
}

inline std::vector<std::string> metric_list(const Json& value, std::vector<std::string>& missing) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  for (const auto& m : value.is_array() ? value : Json::array({value}))
    if (auto id = metric_of(m, missing)) out.push_back(*id);
  return out;
}

}  // namespace compile_detail

inline Json compile_to_config(const Model& model, std::vector<std::string>& undescribed) {
  using namespace compile_detail;
  if (!model.compiled()) return Json::object();
  const std::size_t before = undescribed.size();
  const CompileOptions& options = model.compile_options();
  // The optimizer compile() was given, as Keras's compile config (not the LossScaleOptimizer compile
  // wrapped it in, which compile makes again when the model's policy is mixed_float16).
  const auto* wrapper = model.optimizer().target<optimizers::LossScaleOptimizer>();
  Json optimizer = optimizer_config(
      wrapper && model.optimizer_wrapped_for_loss_scaling() ? wrapper->inner_optimizer : model.optimizer(),
      undescribed);
  Json loss = Json::array();
  for (const auto& l : model.losses()) loss.push_back(loss_config(l, undescribed));
  if (loss.size() == 1) loss = Json(loss[0]);
  Json metrics = nullptr;
  if (!options.metrics.empty()) metrics = options.metrics;
  if (!options.output_metrics.empty()) metrics = options.output_metrics;
  if (undescribed.size() != before) return Json::object();
  return Json{{"optimizer", std::move(optimizer)},
              {"loss", std::move(loss)},
              {"loss_weights", options.loss_weights.empty() ? Json() : Json(options.loss_weights)},
              {"metrics", std::move(metrics)},
              {"weighted_metrics", nullptr},
              {"run_eagerly", model.run_eagerly()},
              {"steps_per_execution", 1},
              {"jit_compile", false}};
}

inline std::optional<CompileCall> compile_from_config(const Json& config,
                                                      const std::vector<std::string>& output_names) {
  using namespace compile_detail;
  if (config.is_null() || (config.is_object() && config.empty())) return std::nullopt;
  if (!config.is_object())
    throw InvalidArgumentError("the compile config is not an object: " + config.dump().substr(0, 200));
  std::vector<std::string> missing;
  CompileCall call;
  if (config.contains("optimizer") && !config["optimizer"].is_null())
    call.optimizer = optimizer_of(config["optimizer"], missing);
  else
    missing.push_back("the optimizer rmsprop (Keras's default, the config naming none)");
  if (!config.contains("loss") || config["loss"].is_null())
    throw UnimplementedError(
        "the compile config has no loss (a model that computes its own loss); devtensor compiles "
        "models with a loss per output");
  const bool several = output_names.size() > 1;
  for (const auto& l : per_output(config["loss"], output_names, "loss", nullptr)) {
    if (l.is_null()) throw InvalidArgumentError("the compile config gives no loss for one of the outputs");
    if (auto loss = loss_of(l, missing)) call.losses.push_back(std::move(*loss));
  }
  if (config.contains("loss_weights") && !config["loss_weights"].is_null())
    for (const auto& w : per_output(config["loss_weights"], output_names, "loss_weights", 1.0)) {
      if (!w.is_number()) throw InvalidArgumentError("the compile config's loss_weights are not numbers: " + w.dump());
      call.options.loss_weights.push_back(w.get<double>());
    }
  if (config.contains("metrics") && !config["metrics"].is_null()) {
    const Json& metrics = config["metrics"];
    const bool by_output = (metrics.is_object() && !metrics.contains("class_name")) ||
                           (metrics.is_array() && !metrics.empty() && (metrics[0].is_array() || metrics[0].is_null()));
    if (by_output)
      for (const auto& m : per_output(metrics, output_names, "metrics", nullptr))
        call.options.output_metrics.push_back(metric_list(m, missing));
    else
      call.options.metrics = metric_list(metrics, missing);
    if (by_output && !several) {  // one output: its list is the model's metrics
      call.options.metrics =
          call.options.output_metrics.empty() ? std::vector<std::string>{} : call.options.output_metrics[0];
      call.options.output_metrics.clear();
    }
  }
  if (config.contains("weighted_metrics") && !config["weighted_metrics"].is_null() &&
      !(config["weighted_metrics"].is_array() && config["weighted_metrics"].empty()))
    missing.push_back("weighted_metrics " + config["weighted_metrics"].dump());
  if (config.contains("run_eagerly") && config["run_eagerly"].is_boolean())
    call.options.run_eagerly = config["run_eagerly"].get<bool>();
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw UnimplementedError("the compile config uses what devtensor does not have: " + list +
                             ". Load the model with nn::LoadModelOptions{.compile = false} and compile it with what "
                             "devtensor has (optimizers SGD, Adam; losses mse, binary, categorical and sparse "
                             "categorical cross-entropy; metrics accuracy, mae, mse)");
  }
  return call;
}

}  // namespace devtensor::nn::saving
