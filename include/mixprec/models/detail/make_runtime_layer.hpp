// The definition of detail::make_runtime_layer: reads a layer config and instantiates the
// layer's compiled form for its policy, once (runtime_layer_factory.hpp says where this is
// compiled).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <mixprec/core/policy.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/models/detail/runtime_layer_factory.hpp>
#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/runtime/dtype_policy.hpp>

namespace mixprec::detail {

/// A compute dtype / variable dtype pair layers can run.
template <class P>
concept runtime_layer_policy = FloatDTypePolicyType<P> && ComputeDType<typename P::compute_dtype> &&
                               ComputeDType<typename P::variable_dtype>;

/// Instantiates Layer<compute, variable> (or Layer<compute>) for the policy, once.
template <template <class...> class Layer, bool WithVariableDtype, class... Args>
std::unique_ptr<RuntimeLayer> instantiate(const DTypePolicy& policy, const layer_site& site, const Args&... args) {
  return policy.visit([&]<class P>(const P&) -> std::unique_ptr<RuntimeLayer> {
    if constexpr (runtime_layer_policy<P>) {
      using C = typename P::compute_dtype;
      if constexpr (WithVariableDtype)
        return std::make_unique<Layer<C, typename P::variable_dtype>>(site.name, policy, args...);
      else
        return std::make_unique<Layer<C>>(site.name, policy, args...);
    } else {
      throw site.error("the dtype policy '" + std::string(P::name) +
                       "' is not supported: layers compute in float16, bfloat16, float32 or float64 (quantized "
                       "layers are not available).");
    }
  });
}

/// Reading a layer config, with errors that name the layer and the setting.
class config_reader {
 public:
  config_reader(const nlohmann::json& config, const layer_site& site) : config_(config), site_(site) {}

  std::size_t positive(const char* key) const {
    const auto& value = at(key);
    if (!value.is_number_integer() || value.get<long long>() <= 0)
      throw site_.error("'" + std::string(key) + "' must be a positive integer; got " + value.dump() + ".");
    return value.get<std::size_t>();
  }
  /// A positive integer, or a pair of them ([2, 3] or 2 for both).
  std::pair<std::size_t, std::size_t> pair(const char* key, std::optional<std::pair<std::size_t, std::size_t>> fallback = {}) const {
    const auto it = config_.find(key);
    if ((it == config_.end() || it->is_null()) && fallback) return *fallback;
    const auto& value = at(key);
    const auto one = [&](const nlohmann::json& v) {
      if (!v.is_number_integer() || v.get<long long>() <= 0)
        throw site_.error("'" + std::string(key) + "' must be a positive integer or a pair of them; got " + value.dump() + ".");
      return v.get<std::size_t>();
    };
    if (value.is_array() && value.size() == 2) return {one(value[0]), one(value[1])};
    const std::size_t both = one(value);
    return {both, both};
  }
  double number(const char* key, double fallback) const {
    const auto it = config_.find(key);
    if (it == config_.end()) return fallback;
    if (!it->is_number()) throw site_.error("'" + std::string(key) + "' must be a number; got " + it->dump() + ".");
    return it->get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    const auto it = config_.find(key);
    if (it == config_.end()) return fallback;
    if (!it->is_boolean()) throw site_.error("'" + std::string(key) + "' must be true or false; got " + it->dump() + ".");
    return it->get<bool>();
  }
  activation_kind activation(const char* key = "activation") const {
    const auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return activation_kind::linear;
    if (!it->is_string()) throw site_.error("'" + std::string(key) + "' must be an activation name; got " + it->dump() + ".");
    if (auto kind = find_activation(it->get_ref<const std::string&>())) return *kind;
    std::string known;
    for (auto name : activation_names) known += (known.empty() ? "" : ", ") + std::string(name);
    throw site_.error("unknown activation '" + it->get<std::string>() + "'; known: " + known + ".");
  }
  bool same_padding() const {
    const auto it = config_.find("padding");
    if (it == config_.end() || *it == "valid") return false;
    if (*it == "same") return true;
    throw site_.error("'padding' must be \"valid\" or \"same\"; got " + it->dump() + ".");
  }
  void require(const char* key, const nlohmann::json& expected, const char* why) const {
    const auto it = config_.find(key);
    if (it != config_.end() && !it->is_null() && *it != expected)
      throw site_.error("'" + std::string(key) + "' = " + it->dump() + " is not supported: " + why + ".");
  }

 private:
  const nlohmann::json& at(const char* key) const {
    const auto it = config_.find(key);
    if (it == config_.end()) throw site_.error("the config lacks '" + std::string(key) + "'.");
    return *it;
  }
  const nlohmann::json& config_;
  const layer_site& site_;
};

MIXPREC_KERNEL_API std::unique_ptr<RuntimeLayer> make_runtime_layer(const nlohmann::json& config,
                                                                    const DTypePolicy& policy, const layer_site& site) {
  const config_reader read(config, site);
  const std::string& kind = site.class_name;
  if (kind == "Dense")
    return instantiate<RuntimeDense, true>(policy, site, read.positive("units"), read.activation(),
                                           read.flag("use_bias", true));
  if (kind == "Activation") return instantiate<RuntimeActivation, false>(policy, site, read.activation(), false);
  if (kind == "Softmax") {
    read.require("axis", -1, "only the last axis");
    return instantiate<RuntimeActivation, false>(policy, site, activation_kind::softmax, true);
  }
  if (kind == "Flatten") {
    read.require("data_format", "channels_last", "only channels_last");
    return instantiate<RuntimeFlatten, false>(policy, site);
  }
  if (kind == "Conv2D" || kind == "MaxPooling2D") {
    read.require("data_format", "channels_last", "only channels_last (NHWC)");
    const bool conv = kind == "Conv2D";
    const auto [h, w] = read.pair(conv ? "kernel_size" : "pool_size", conv ? std::nullopt : std::optional(std::pair<std::size_t, std::size_t>{2, 2}));
    const auto [sh, sw] = read.pair("strides", conv ? std::pair<std::size_t, std::size_t>{1, 1} : std::pair{h, w});
    const window_settings window{h, w, sh, sw, read.same_padding()};
    if (!conv) return instantiate<RuntimeMaxPooling2D, false>(policy, site, window);
    read.require("dilation_rate", nlohmann::json::array({1, 1}), "no dilation");
    read.require("groups", 1, "a single group");
    return instantiate<RuntimeConv2D, true>(policy, site, read.positive("filters"), window, read.activation(),
                                            read.flag("use_bias", true));
  }
  if (kind == "BatchNormalization") {
    read.require("axis", -1, "only the last axis");
    read.require("center", true, "beta is always used");
    read.require("scale", true, "gamma is always used");
    const double momentum = read.number("momentum", 0.99), epsilon = read.number("epsilon", 1e-3);
    if (!(momentum >= 0 && momentum <= 1)) throw site.error("'momentum' must be in [0, 1].");
    if (!(epsilon > 0)) throw site.error("'epsilon' must be positive.");
    return instantiate<RuntimeBatchNormalization, true>(policy, site, momentum, epsilon);
  }
  if (kind == "Dropout") {
    const double rate = read.number("rate", -1);
    if (!(rate >= 0 && rate < 1)) throw site.error("'rate' must be in [0, 1).");
    const double seed = read.number("seed", 0);
    return instantiate<RuntimeDropout, false>(policy, site, rate, static_cast<std::uint64_t>(seed < 0 ? 0 : seed));
  }
  throw site.error("unknown layer class. Known: Dense, Activation, Softmax, Flatten, Conv2D, MaxPooling2D, "
                   "BatchNormalization, Dropout (and InputLayer first).");
}

}  // namespace mixprec::detail
