// The Keras config entries of each layer kind, shared by the compile-time layers and the
// runtime model's, so that Sequential::get_config() and RuntimeModel::get_config() agree.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include <mixprec/layers/activations.hpp>

namespace mixprec::detail {

inline nlohmann::ordered_json dense_config(std::size_t units, activation_kind activation, bool use_bias) {
  return {{"units", units}, {"activation", activation_name(activation)}, {"use_bias", use_bias}};
}

inline nlohmann::ordered_json activation_config(activation_kind activation) {
  return {{"activation", activation_name(activation)}};
}

inline nlohmann::ordered_json flatten_config() { return {{"data_format", "channels_last"}}; }

/// Conv2D (size_key "kernel_size") and MaxPooling2D ("pool_size").
inline nlohmann::ordered_json window_config(const char* size_key, std::size_t height, std::size_t width,
                                            std::size_t stride_height, std::size_t stride_width, bool same) {
  return {{size_key, {height, width}},
          {"strides", {stride_height, stride_width}},
          {"padding", same ? "same" : "valid"},
          {"data_format", "channels_last"}};
}

inline nlohmann::ordered_json conv2d_config(std::size_t filters, std::size_t height, std::size_t width,
                                            std::size_t stride_height, std::size_t stride_width, bool same,
                                            activation_kind activation, bool use_bias) {
  auto config = window_config("kernel_size", height, width, stride_height, stride_width, same);
  config["filters"] = filters;
  config["activation"] = activation_name(activation);
  config["use_bias"] = use_bias;
  return config;
}

inline nlohmann::ordered_json batch_normalization_config(double momentum, double epsilon) {
  return {{"axis", -1}, {"momentum", momentum}, {"epsilon", epsilon}, {"center", true}, {"scale", true}};
}

inline nlohmann::ordered_json dropout_config(double rate, std::uint64_t seed) { return {{"rate", rate}, {"seed", seed}}; }

}  // namespace mixprec::detail
