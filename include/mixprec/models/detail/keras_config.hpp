// What both model kinds write the same way: Keras 3's Sequential config, {"module": "keras",
// "class_name": "Sequential", "config": {"name", "layers": [InputLayer, ...]}} (what
// RuntimeModel::from_config reads), and Keras' rule for layer names.
#pragma once

#include <cstddef>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mixprec::detail {

/// Keras' naming of layers: `base` if it is free, else the first of base_1, base_2, ... that is
/// (so x_1, x, x become x_1, x, x_2 and weight paths stay unique).
inline std::string first_free_name(const std::string& base, const std::set<std::string>& taken) {
  std::string name = base;
  for (std::size_t n = 1; taken.contains(name); ++n) name = base + "_" + std::to_string(n);
  return name;
}

/// A layer's entry in the config's "layers".
template <class Deferred = void>
nlohmann::ordered_json keras_layer_entry(std::string_view class_name, nlohmann::ordered_json config) {
  return {{"module", "keras.layers"}, {"class_name", class_name}, {"config", std::move(config)}};
}

/// The model's config: its dtype policy (serialized, as Keras writes a model's; null: none to
/// write), an InputLayer of the input's dtype and shape past the batch axis (which the config
/// writes null), then the layers' entries.
template <class Deferred = void>
nlohmann::ordered_json sequential_config(std::string name, const nlohmann::ordered_json& model_dtype,
                                         std::span<const std::size_t> input_shape, std::string_view input_dtype,
                                         nlohmann::ordered_json layers) {
  nlohmann::ordered_json batch_shape = nlohmann::ordered_json::array({nullptr});
  for (std::size_t e : input_shape) batch_shape.push_back(e);
  const nlohmann::ordered_json input_layer = {
      {"class_name", "InputLayer"},
      {"config", {{"batch_shape", batch_shape}, {"dtype", input_dtype}, {"name", "input_layer"}}}};
  layers.insert(layers.begin(), input_layer);
  nlohmann::ordered_json config = {{"name", std::move(name)}};
  if (!model_dtype.is_null()) config["dtype"] = model_dtype;
  config["layers"] = std::move(layers);
  return {{"module", "keras"}, {"class_name", "Sequential"}, {"config", std::move(config)}, {"registered_name", nullptr}};
}

}  // namespace mixprec::detail
