// The Dense kind: y = activation(x kernel + bias) over the last axis.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec::layer_kinds {

struct dense {
  static constexpr std::string_view keras_class = "Dense";
  struct settings {
    std::size_t units = 1;
    activation_kind activation = activation_kind::linear;
    bool use_bias = true;
    weight_settings weights = {};
  };
  using state = detail::no_state;
  /// The pre-activation x kernel + bias, for activations whose gradient needs it.
  template <class C>
  struct saved {
    value_buffer<C> pre_activation;
  };

  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    if (input.empty()) throw std::invalid_argument("Dense needs inputs with a feature axis.");
    std::vector<std::size_t> output(input.begin(), input.end());
    output.back() = s.units;
    return output;
  }
  static std::vector<detail::weight_spec> weights(const settings& s, std::span<const std::size_t> input) {
    std::vector<detail::weight_spec> specs{
        {"kernel", {input.back(), s.units}, s.weights.kernel_initializer, s.weights.kernel_regularizer}};
    if (s.use_bias) specs.push_back({"bias", {s.units}, s.weights.bias_initializer, s.weights.bias_regularizer});
    return specs;
  }

  template <class C, class V>
  static void forward(const detail::forward_args<dense, C, V>& a) {
    const std::size_t in = a.shape.last();
    std::span<C> pre_activation;
    if (a.saved && keeps_pre_activation(a.settings.activation)) {
      a.saved->pre_activation.resize(a.y.size());
      pre_activation = a.saved->pre_activation;
    }
    detail::dense_forward<C>(a.x, a.x.size() / in, in, a.weights[0].read, bias(a.settings.use_bias, a.weights),
                             a.settings.units, a.settings.activation, a.y, pre_activation);
  }

  template <class C, class V>
  static void backward(const detail::backward_args<dense, C, V>& a) {
    const std::size_t in = a.shape.last(), units = a.settings.units;
    const std::span<const C> dz = activation_input_gradient(a.settings.activation, a.saved, a.y, a.dy, units);
    detail::dense_backward<C, V>(a.x, a.x.size() / in, in, a.weights[0].read, units, dz, a.weight_gradients[0],
                                 a.settings.use_bias ? a.weight_gradients[1] : std::span<V>(), a.dx);
  }

  static void write_config(const settings& s, nlohmann::ordered_json& config) {
    config["units"] = s.units;
    config["activation"] = activation_name(s.activation);
    config["use_bias"] = s.use_bias;
    detail::write_weight_settings(s.weights, config);
  }
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.units = read.positive("units");
    s.activation = detail::read_activation(read);
    s.use_bias = read.boolean("use_bias", true);
    s.weights = detail::read_weight_settings(read);
    read.unsupported("lora_rank");
    return s;
  }

  // Shared with Conv2D, whose math is Dense's over im2col rows.
  static bool keeps_pre_activation(activation_kind kind) {
    return kind != activation_kind::linear && kind != activation_kind::relu && kind != activation_kind::softmax;
  }
  template <class C, class V>
  static std::span<const C> bias(bool use_bias, std::span<const detail::weight_ref<V, C>> weights) {
    return use_bias ? weights[1].read : std::span<const C>();
  }
  /// dz = dy act'(z), in a scratch buffer (dy itself for linear).
  template <class C>
  static std::span<const C> activation_input_gradient(activation_kind kind, const saved<C>& saved, std::span<const C> y,
                                                      std::span<const C> dy, std::size_t units) {
    if (kind == activation_kind::linear) return dy;
    const std::span<C> dz = detail::scratch_buffer<C, detail::activation_gradient_buffer>(dy.size());
    const std::span<const C> at = keeps_pre_activation(kind) ? std::span<const C>(saved.pre_activation) : y;
    detail::activation_gradient<C>(kind, at, y, dy, dz, units);
    return dz;
  }
};

}  // namespace mixprec::layer_kinds
