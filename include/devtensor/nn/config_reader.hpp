#pragma once
/// @file config_reader.hpp
/// @brief Reading the fields of a Keras 3 config (a layer's, an optimizer's, a schedule's) with
/// typed errors that name the object and the field: config_detail::Reader, and the bounds that
/// keep a loaded model's shapes from overflowing. layer_config.hpp, compile_config.hpp and
/// model_config.hpp read through it.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "devtensor/core/error.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/mixed_precision.hpp"
#include "devtensor/ops/conv.hpp"

namespace devtensor::nn::saving {

/// JSON with its keys in the order written (Keras's order).
using Json = nlohmann::ordered_json;

namespace config_detail {

/// The largest integer argument a config may give (units, filters, a kernel size, a stride): what
/// keeps every shape computation from overflowing.
inline constexpr std::int64_t kMaxArgument = std::int64_t{1} << 31;
/// The most elements a tensor of a loaded model may have (a dimension of an Input, a Reshape).
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;

/// The elements of a shape, unknown dimensions as 1, saturating at kMaxElements + 1.
inline std::int64_t elements_of(const nn::PartialShape& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) {
    if (d > 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)) return kMaxElements + 1;
    if (d == 0) return 0;
  }
  return n;
}

/// Reads a config's fields, each error naming the layer and the field.
class Reader {
 public:
  /// `kind`: what the config describes, for errors ("layer", "optimizer", ...).
  Reader(const Json& config, std::string class_name, bool fresh_weights = true, std::string kind = "layer")
      : config_(config), class_(std::move(class_name)), kind_(std::move(kind)), fresh_weights_(fresh_weights) {
    if (!config_.is_object()) throw invalid("its \"config\" is not an object");
    name_ = string_or("name", "");
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  [[nodiscard]] bool has(const char* key) const { return config_.contains(key) && !config_.at(key).is_null(); }
  [[nodiscard]] const Json& at(const char* key) const {
    if (!config_.contains(key)) throw invalid("its config has no \"" + std::string(key) + "\"");
    return config_.at(key);
  }
  [[nodiscard]] std::int64_t integer(const char* key) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) throw invalid("\"" + std::string(key) + "\" is not an integer: " + v.dump());
    return in_range(key, v.get<std::int64_t>());
  }
  [[nodiscard]] double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const Json& v = config_.at(key);
    if (!v.is_number()) throw invalid("\"" + std::string(key) + "\" is not a number: " + v.dump());
    const double value = v.get<double>();
    // Every number a layer reads is used as a float32: one beyond its range would not convert.
    if (!(std::abs(value) <= static_cast<double>(std::numeric_limits<float>::max())))
      throw invalid("\"" + std::string(key) + "\" is " + v.dump() + ", beyond float32's range");
    return value;
  }
  [[nodiscard]] bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const Json& v = config_.at(key);
    if (!v.is_boolean()) throw invalid("\"" + std::string(key) + "\" is not true or false: " + v.dump());
    return v.get<bool>();
  }
  [[nodiscard]] std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const Json& v = config_.at(key);
    if (!v.is_string()) throw invalid("\"" + std::string(key) + "\" is not a string: " + v.dump());
    return v.get<std::string>();
  }
  /// An int or a list of ints (Keras's kernel_size=3 or (3, 3)).
  [[nodiscard]] std::vector<std::int64_t> ints(const char* key) const {
    const Json& v = at(key);
    if (v.is_number_integer()) return {in_range(key, v.get<std::int64_t>())};
    std::vector<std::int64_t> out;
    if (v.is_array())
      for (const auto& e : v) {
        if (!e.is_number_integer())
          throw invalid("\"" + std::string(key) + "\" is not a list of integers: " + v.dump());
        out.push_back(in_range(key, e.get<std::int64_t>()));
      }
    if (out.empty()) throw invalid("\"" + std::string(key) + "\" is not an integer or a list of them: " + v.dump());
    return out;
  }
  /// A shape: ints, null for unknown (-1).
  [[nodiscard]] nn::PartialShape shape(const char* key) const {
    const Json& v = at(key);
    if (!v.is_array()) throw invalid("\"" + std::string(key) + "\" is not a shape: " + v.dump());
    nn::PartialShape out;
    for (const auto& e : v) {
      if (e.is_null())
        out.push_back(-1);
      else if (e.is_number_integer() && e.get<std::int64_t>() >= 0)
        out.push_back(e.get<std::int64_t>());
      else
        throw invalid("\"" + std::string(key) + "\" is not a shape: " + v.dump());
    }
    if (elements_of(out) > kMaxElements)
      throw invalid("\"" + std::string(key) + "\" " + v.dump() + " has more than 2^40 elements");
    return out;
  }
  [[nodiscard]] nn::Activation activation() const {
    const Json& v = has("activation") ? at("activation") : Json("linear");
    const std::string name = v.is_string() ? v.get<std::string>()
                             : v.is_object() && v.contains("class_name") && v["class_name"].is_string()
                                 ? v["class_name"].get<std::string>()
                                 : v.dump();
    if (name == "linear" || name == "None") return nn::Activation::linear;
    if (name == "relu") return nn::Activation::relu;
    if (name == "sigmoid") return nn::Activation::sigmoid;
    if (name == "tanh") return nn::Activation::tanh;
    if (name == "softmax") return nn::Activation::softmax;
    throw UnimplementedError(where() + " uses the activation \"" + name +
                             "\", which devtensor does not have (it has linear, relu, sigmoid, tanh, softmax)");
  }
  /// The initializer under `key`, or `fallback` for none or one devtensor does not have.
  [[nodiscard]] nn::Initializer initializer(const char* key, nn::Initializer fallback) const {
    namespace ini = nn::initializers;
    if (!fresh_weights_) return ini::Zeros{};  // a weights file sets every value
    if (!has(key)) return fallback;
    const Json& v = config_.at(key);
    const std::string kind = v.is_string() ? v.get<std::string>()
                             : v.is_object() && v.contains("class_name") && v["class_name"].is_string()
                                 ? v["class_name"].get<std::string>()
                                 : std::string();
    const Json args = v.is_object() && v.contains("config") && v["config"].is_object() ? v["config"] : Json::object();
    const Reader r(args, kind);
    const auto seed = [&]() -> std::optional<std::uint64_t> {
      if (!r.has("seed")) return std::nullopt;
      return static_cast<std::uint64_t>(r.integer("seed"));
    };
    if (kind == "GlorotUniform" || kind == "glorot_uniform") return ini::GlorotUniform{seed()};
    if (kind == "Zeros" || kind == "zeros") return ini::Zeros{};
    if (kind == "Ones" || kind == "ones") return ini::Ones{};
    if (kind == "Constant") return ini::Constant{static_cast<float>(r.number_or("value", 0.0))};
    if (kind == "RandomUniform")
      return ini::RandomUniform{r.number_or("minval", -0.05), r.number_or("maxval", 0.05), seed()};
    if (kind == "RandomNormal") return ini::RandomNormal{r.number_or("mean", 0.0), r.number_or("stddev", 0.05), seed()};
    return fallback;
  }
  /// The dtype policy's name ("float32" when unset), checked as DTypePolicy checks it.
  [[nodiscard]] std::string policy() const {
    if (!has("dtype")) return "float32";
    const Json& v = config_.at("dtype");
    std::string policy = v.is_string() ? v.get<std::string>() : "";
    if (v.is_object() && v.contains("config") && v["config"].is_object() && v["config"].contains("name") &&
        v["config"]["name"].is_string())
      policy = v["config"]["name"].get<std::string>();
    if (policy.empty()) throw invalid("\"dtype\" is " + v.dump() + ", not a dtype policy");
    (void)nn::mixed_precision::DTypePolicy(policy, where());
    return policy;
  }
  /// Refuses a field that is set (not null, not `allowed`).
  void require_unset(const char* key, const Json& allowed = nullptr) const {
    if (has(key) && config_.at(key) != allowed)
      throw UnimplementedError(where() + " sets \"" + key + "\" to " + config_.at(key).dump() + ", which devtensor's " +
                               class_ + " does not have");
  }

  [[nodiscard]] std::int64_t in_range(const char* key, std::int64_t value) const {
    if (value > kMaxArgument || value < -kMaxArgument)
      throw invalid("\"" + std::string(key) + "\" is " + std::to_string(value) + ", beyond +-2^31");
    return value;
  }
  [[nodiscard]] std::string where() const { return kind_ + " \"" + name_ + "\" (" + class_ + ")"; }
  [[nodiscard]] InvalidArgumentError invalid(const std::string& what) const {
    return InvalidArgumentError("the config of " + where() + " is not Keras's: " + what);
  }

 private:
  const Json& config_;
  std::string class_;
  std::string kind_;
  bool fresh_weights_ = true;
  std::string name_;
};

inline SpatialInts spatial(const std::vector<std::int64_t>& v) { return SpatialInts(v); }

}  // namespace config_detail

}  // namespace devtensor::nn::saving
