#pragma once
/// @file weights.hpp
/// @brief Keras 3's weights files (`model.save_weights("x.weights.h5")` / `load_weights`) for
/// devtensor's models, through the HDF5 C library. Include it (and link devtensor::hdf5) to give
/// Model::save_weights and load_weights their bodies.
///
/// The layout is Keras 3's, which TensorFlow 2.21 writes and reads:
///
///     /layers/<key>/vars/0, /1, ...   a layer's variables (Dense: kernel, bias), float32
///     /layers/<key>/vars @name        the layer's own name ("hidden")
///     /layers/<key>/layers/...        a model inside the model, the same way down
///     /vars @name                     the model's name
///
/// <key> is the layer class's default name (dense, input_layer, concatenate, ...) made unique in
/// the order of the model's tracked layers (dense, dense_1, ...), whatever names the user gave.
/// Loading checks the whole file against the model before it changes anything: a missing or extra
/// layer or variable, a shape or a type that differs is an InvalidArgumentError naming the first
/// path that does not match (and the shapes); a file that is not HDF5, truncated or damaged is an
/// InvalidArgumentError; a missing file a NotFoundError.
///
/// A compiled model also saves its optimizer's state, as Keras does:
///
///     /optimizer/vars @name           "sgd", "adam"
///     /optimizer/vars/0               iterations (int64 scalar)
///     /optimizer/vars/1               the learning rate (float32 scalar; none for a schedule)
///     /optimizer/vars/2, ...          the slots (Adam: m, v of each variable in turn; then v_hat),
///                                     once the optimizer has run (Keras builds them at its first step)
///
/// and a LossScaleOptimizer's as Keras 3's: /optimizer/vars/0..3 its own iterations and learning
/// rate (unused, 0), step counter and scale, then the inner optimizer's variables from /4, which
/// /optimizer/inner_optimizer/vars holds as well (read from there);
///
/// so the file is a checkpoint: loading it into a model compiled alike restores the step count, the
/// slots and the learning rate (a number's; a schedule's follows from the step count), and training
/// resumes as if uninterrupted, bit for bit. A model that is not compiled skips the optimizer's state, as Keras.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/hdf5/file.hpp"
#include "devtensor/nn/functional.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/loss_scale_optimizer.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/ops/creation.hpp"

namespace devtensor::nn::weights_io {

/// "InputLayer" -> "input_layer": Keras's default name of a layer class.
inline std::string snake_case(const std::string& type) {
  // Keras's to_snake_case: "_" before a capital that starts a lower-case run ("MaxPooling2D" ->
  // "max_pooling2d"), then between a lower-case letter and a capital; "Conv2D" stays "conv2d".
  const auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  const auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  std::string first;
  for (std::size_t i = 0; i < type.size(); ++i) {
    if (i > 0 && upper(type[i]) && i + 1 < type.size() && lower(type[i + 1]) && first.back() != '_') first += '_';
    first += type[i];
  }
  std::string out;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (i > 0 && upper(first[i]) && lower(first[i - 1])) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(first[i])));
  }
  return out;
}

/// A variable the file holds, where it holds it.
struct Entry {
  std::string group;  // "/layers/dense/vars"
  std::string index;  // "0"
  Variable<float> variable;
};

/// Keys for `layers`, in order: the class's default name, then _1, _2, ... for the next ones.
inline std::vector<std::string> keys_of(const std::vector<std::shared_ptr<LayerBase>>& layers) {
  std::map<std::string, int> seen;
  std::vector<std::string> keys;
  for (const auto& layer : layers) {
    const std::string base = snake_case(layer->type_name());
    const int n = seen[base]++;
    keys.push_back(n == 0 ? base : base + "_" + std::to_string(n));
  }
  return keys;
}

/// Every variable of `layers` under `prefix` ("" for the root), as the file lays them out.
inline void collect(const std::vector<std::shared_ptr<LayerBase>>& layers, const std::string& prefix,
                    std::vector<Entry>& out, std::vector<std::pair<std::string, const LayerBase*>>& groups) {
  const auto keys = keys_of(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string path = prefix + "/layers/" + keys[i];
    groups.emplace_back(path, layers[i].get());
    const auto nested = tracked_sublayers(*layers[i]);
    if (!nested.empty()) {
      collect(nested, path, out, groups);
      continue;  // a model's variables are its layers'
    }
    const auto vars = layers[i]->variables();
    for (std::size_t v = 0; v < vars.size(); ++v) out.push_back({path + "/vars", std::to_string(v), vars[v]});
  }
}

/// The group at an absolute path ("/layers/dense/vars"), opened from the root.
inline hdf5::Group open_path(const hdf5::Group& root, const std::string& path) {
  hdf5::Group group = root.group(path.substr(1, path.find('/', 1) - 1));
  std::size_t start = path.find('/', 1);
  while (start != std::string::npos) {
    const std::size_t end = path.find('/', start + 1);
    group = group.group(path.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1));
    start = end;
  }
  return group;
}

inline void write_layers(hdf5::Group& parent, const std::vector<std::shared_ptr<LayerBase>>& layers) {
  hdf5::Group container = parent.create_group("layers");
  const auto keys = keys_of(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    hdf5::Group group = container.create_group(keys[i]);
    const auto nested = tracked_sublayers(*layers[i]);
    if (!nested.empty()) write_layers(group, nested);
    hdf5::Group vars = group.create_group("vars");
    vars.set_string_attribute("name", layers[i]->name());
    if (!nested.empty()) continue;
    const auto variables = layers[i]->variables();
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const Tensor<float> value = variables[v].value();
      vars.write_floats(std::to_string(v), value.shape().dims_vector(), value.to_vector());
    }
  }
}

/// An optimizer's variables into `vars` from index `first`, as Keras numbers them: iterations, the
/// learning rate (Keras keeps a variable only for a number; a schedule is a function of
/// iterations), then the slots once it has stepped (before, it is not built in Keras's sense).
inline void write_optimizer_vars(hdf5::Group& vars, const Optimizer& optimizer,
                                 const std::vector<Variable<float>>& trainable, std::size_t first = 0) {
  vars.write_int64(std::to_string(first), optimizer.iterations());
  std::size_t next = first + 1;
  if (!optimizer.learning_rate_is_schedule())
    vars.write_floats(std::to_string(next++), {}, {static_cast<float>(optimizer.learning_rate())});
  if (optimizer.iterations() == 0) return;
  const auto slots = optimizer.slot_values(trainable);
  for (std::size_t i = 0; i < slots.size(); ++i)
    vars.write_floats(std::to_string(next + i), slots[i].shape().dims_vector(), slots[i].to_vector());
}

inline std::string lowercase(std::string name) {
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

/// Writes the model's variables (and its optimizer's state, when `with_optimizer`) under `root`.
/// A LossScaleOptimizer's as Keras 3 writes them: /optimizer/vars holds its own iterations and
/// learning rate (unused: 0), its step counter and scale, then the inner optimizer's variables,
/// which /optimizer/inner_optimizer/vars holds too.
inline void write_model(const Model& model, hdf5::Group& root, bool with_optimizer = true) {
  write_layers(root, model.tracked_layers());
  root.create_group("vars").set_string_attribute("name", model.name());
  if (!with_optimizer || !model.compiled()) return;
  const Optimizer& optimizer = model.optimizer();
  const auto trainable = model.trainable_variables();
  hdf5::Group group = root.create_group("optimizer");
  hdf5::Group vars = group.create_group("vars");
  const auto* lso = optimizer.target<optimizers::LossScaleOptimizer>();
  if (!lso) {
    vars.set_string_attribute("name", lowercase(optimizer.name()));
    write_optimizer_vars(vars, optimizer, trainable);
    return;
  }
  hdf5::Group inner = group.create_group("inner_optimizer").create_group("vars");
  inner.set_string_attribute("name", lowercase(lso->inner_optimizer.name()));
  write_optimizer_vars(inner, lso->inner_optimizer, trainable);
  vars.set_string_attribute("name", "loss_scale_optimizer");
  vars.write_int64("0", 0);
  vars.write_floats("1", {}, {0.0f});
  // Keras builds the counter and the scale at the first step: before it, neither is written.
  bool built = false;
  {
    std::lock_guard lock(lso->state->mutex);
    built = lso->state->built;
  }
  if (built) {
    vars.write_int64("2", lso->step_counter());
    vars.write_floats("3", {}, {static_cast<float>(lso->dynamic_scale())});
  }
  write_optimizer_vars(vars, lso->inner_optimizer, trainable, built ? 4 : 2);
}

inline void save(const Model& model, const std::string& path) {
  if (!model.built())
    throw FailedPreconditionError("save_weights: the model \"" + model.name() +
                                  "\" has not been built yet, so it has "
                                  "no variables to save. Call it on a batch of data first.");
  hdf5::Group root = hdf5::create_file(path);
  write_model(model, root);
}

/// Reads the variables under `root` into the model's, checked whole first. `source`: what errors
/// begin with ("load_weights: x.weights.h5").
inline void read_model(Model& model, const hdf5::Group& root, const std::string& source) {
  std::vector<Entry> entries;
  std::vector<std::pair<std::string, const LayerBase*>> groups;
  collect(model.tracked_layers(), "", entries, groups);
  const auto mismatch = [&](const std::string& what) {
    return InvalidArgumentError(source + " does not match model \"" + model.name() + "\": " + what +
                                ". Nothing was loaded.");
  };
  // The layout first: every layer group of the model, no other, each with as many variables.
  std::map<std::string, std::vector<std::string>> layer_children;
  const auto check_layers = [&](const std::string& prefix) {
    std::vector<std::string> expected;
    for (const auto& [group_path, layer] : groups)
      if (group_path.rfind(prefix + "/layers/", 0) == 0 && group_path.find('/', prefix.size() + 8) == std::string::npos)
        expected.push_back(group_path.substr(prefix.size() + 8));
    if (expected.empty()) return;
    hdf5::Group container = [&] {
      try {
        return open_path(root, prefix + "/layers");
      } catch (const InvalidArgumentError&) {
        throw mismatch("it has no group " + prefix + "/layers");
      }
    }();
    for (const auto& child : container.children())
      if (std::find(expected.begin(), expected.end(), child) == expected.end())
        throw mismatch("it has a layer " + prefix + "/layers/" + child + " that the model does not have");
  };
  check_layers("");
  for (const auto& group : groups) {
    const std::string& group_path = group.first;  // not a structured binding: the lambdas below capture it
    const LayerBase* layer = group.second;
    if (!tracked_sublayers(*layer).empty()) {
      check_layers(group_path);
      continue;
    }
    const auto variables = layer->variables();
    hdf5::Group vars = [&] {
      try {
        return open_path(root, group_path + "/vars");
      } catch (const InvalidArgumentError&) {
        throw mismatch("it has no group " + group_path + "/vars (for layer \"" + layer->name() + "\")");
      }
    }();
    const auto stored = vars.children();
    if (stored.size() != variables.size())
      throw mismatch("Layer '" + layer->name() + "' expected " + std::to_string(variables.size()) +
                     " variables, but received " + std::to_string(stored.size()) + " variables during loading (" +
                     group_path + "/vars)");
  }
  // Then the values, read and checked before any variable changes.
  std::vector<Tensor<float>> values;
  for (const auto& entry : entries) {
    const hdf5::Group vars = open_path(root, entry.group);
    const std::string where = entry.group + "/" + entry.index;
    std::pair<std::vector<std::int64_t>, std::vector<float>> data;
    const Shape expected = entry.variable.shape();
    // The shape first: the values are read only into the variable's size.
    std::vector<std::int64_t> stored;
    try {
      stored = vars.dataset_shape(entry.index);
    } catch (const InvalidArgumentError& e) {
      throw mismatch(e.what());
    }
    if (stored != expected.dims_vector())
      throw mismatch(where + " has shape " + Shape::partial(stored).to_python() + ", but variable " +
                     entry.variable.name() + " has shape " + expected.to_python());
    try {
      data = vars.read_floats(entry.index, static_cast<std::uint64_t>(expected.num_elements()));
    } catch (const InvalidArgumentError& e) {
      throw mismatch(e.what());
    }
    values.push_back(constant<float>(data.second, expected));
  }
  // The optimizer's state, checked as well before anything changes.
  std::optional<std::pair<std::int64_t, std::vector<Tensor<float>>>> optimizer_state;
  std::optional<double> learning_rate;
  std::optional<std::pair<std::int64_t, float>> loss_scale;  // a LossScaleOptimizer's counter and scale
  if (model.compiled() && root.has("optimizer")) {
    const auto trainable = model.trainable_variables();
    const auto expected = model.optimizer().slot_values(trainable);
    // A LossScaleOptimizer's file: the inner optimizer's state is under inner_optimizer (what a
    // model with the inner optimizer alone, or a LossScaleOptimizer around it, restores).
    const bool scaled = root.group("optimizer").has("inner_optimizer");
    const std::string path = scaled ? "/optimizer/inner_optimizer/vars" : "/optimizer/vars";
    // Its own counter and scale exist once it has stepped: then /optimizer/vars holds 4 more than
    // the inner optimizer's variables, else 2 (Keras's unbuilt LossScaleOptimizer).
    const auto holds = [&](const std::string& at) -> std::size_t {
      try {
        return open_path(root, at).children().size();
      } catch (const InvalidArgumentError&) {
        return 0;  // missing: reported below
      }
    };
    if (scaled && model.optimizer().target<optimizers::LossScaleOptimizer>() &&
        holds("/optimizer/vars") == holds("/optimizer/inner_optimizer/vars") + 4) {
      try {
        const hdf5::Group own = open_path(root, "/optimizer/vars");
        const auto [shape, scale] = own.read_floats("3", 1);
        if (scale.size() != 1) throw InvalidArgumentError("/optimizer/vars/3 (the loss scale) is not one number");
        const std::int64_t counter = own.read_int64("2");
        if (!(scale[0] > 0) || !std::isfinite(scale[0]) || counter < 0)
          throw InvalidArgumentError("/optimizer/vars/2 and /3 (the loss scale's step counter " +
                                     std::to_string(counter) + " and scale " + std::to_string(scale[0]) +
                                     ") are not a count and a positive finite scale");
        loss_scale.emplace(counter, scale[0]);
      } catch (const InvalidArgumentError& e) {
        throw mismatch(e.what());
      }
    }
    const hdf5::Group vars = [&] {
      try {
        return open_path(root, path);
      } catch (const InvalidArgumentError&) {
        throw mismatch("it has an /optimizer group without " + path);
      }
    }();
    const bool has_rate = !model.optimizer().learning_rate_is_schedule();
    const std::size_t first_slot = has_rate ? 2 : 1;
    // An optimizer saved before its first step has no slots yet (Keras's unbuilt optimizer): its
    // count and rate load into one that has not run either, as zeros.
    const bool unbuilt = vars.children().size() == first_slot && model.optimizer().iterations() == 0;
    if (!unbuilt && vars.children().size() != expected.size() + first_slot)
      throw mismatch(
          path + " holds " + std::to_string(vars.children().size()) + " variables, but the model's " +
          model.optimizer().name() + " keeps " + std::to_string(expected.size() + first_slot) +
          (has_rate ? " (iterations, learning rate, slots)" : " (iterations, slots; its learning rate is a schedule)") +
          " for its " + std::to_string(trainable.size()) + " trainable variables");
    std::vector<Tensor<float>> slots;
    try {
      const std::int64_t iterations = vars.read_int64("0");
      if (has_rate) {
        const auto [shape, data] = vars.read_floats("1", 1);
        if (data.size() != 1) throw InvalidArgumentError(path + "/1 (the learning rate) is not one number");
        learning_rate = data[0];
      }
      if (unbuilt) slots = expected;  // zeros: nothing to read
      for (std::size_t i = 0; !unbuilt && i < expected.size(); ++i) {
        const std::string index = std::to_string(i + first_slot);
        if (vars.dataset_shape(index) != expected[i].shape().dims_vector())
          throw InvalidArgumentError(path + "/" + index + " has shape " +
                                     Shape::partial(vars.dataset_shape(index)).to_python() +
                                     ", but the slot it restores has shape " + expected[i].shape().to_python());
        auto [shape, data] = vars.read_floats(index, static_cast<std::uint64_t>(expected[i].shape().num_elements()));
        if (shape != expected[i].shape().dims_vector())
          throw InvalidArgumentError(path + "/" + index + " has shape " + Shape::partial(shape).to_python() +
                                     ", but the slot it restores has shape " + expected[i].shape().to_python());
        slots.push_back(constant<float>(data, expected[i].shape()));
      }
      optimizer_state.emplace(iterations, std::move(slots));
    } catch (const InvalidArgumentError& e) {
      throw mismatch(e.what());
    }
  }
  for (std::size_t i = 0; i < entries.size(); ++i) entries[i].variable.assign(values[i]);
  if (optimizer_state)
    model.optimizer().restore(model.trainable_variables(), optimizer_state->first, optimizer_state->second);
  if (loss_scale)
    model.optimizer().target<optimizers::LossScaleOptimizer>()->restore_scale(loss_scale->second, loss_scale->first);
  // The learning rate too, as Keras's variable is (a ReduceLROnPlateau's reduction resumes).
  if (learning_rate && static_cast<float>(model.optimizer().learning_rate()) != static_cast<float>(*learning_rate))
    model.optimizer().set_learning_rate(*learning_rate);
}

inline void load(Model& model, const std::string& path) {
  if (!model.built())
    throw FailedPreconditionError("load_weights: the model \"" + model.name() +
                                  "\" has not been built yet; build it "
                                  "(call it on a batch of data) so that its variables exist, then load.");
  read_model(model, hdf5::open_file(path), "load_weights: " + path);
}

/// Installs save and load as Model::save_weights and load_weights (once per program, at start-up).
inline const bool installed = [] {
  hooks().save = &save;
  hooks().load = &load;
  return true;
}();

}  // namespace devtensor::nn::weights_io
