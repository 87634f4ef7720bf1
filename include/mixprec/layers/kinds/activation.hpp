// The Activation and Softmax kinds (Softmax: over the last axis). Element-wise activations
// compute in float32 and round once to the compute dtype; softmax subtracts the row maximum and
// sums in float32. Backward: dy act'(x), softmax's from its output.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/kind.hpp>

namespace mixprec::layer_kinds {

struct activation : detail::weightless_kind {
  static constexpr std::string_view keras_class = "Activation";
  struct settings {
    kernels::activation function = kernels::activation::linear;
  };
  /// The output may be the input's own buffer.
  static constexpr bool in_place = true;
  using state = detail::no_state;
  template <class C>
  using saved = detail::nothing_saved<C>;

  static std::vector<std::size_t> output_shape(const settings&, std::span<const std::size_t> input) {
    return {input.begin(), input.end()};
  }

  template <class C, class V, class Kind>
  static void forward(const detail::forward_args<Kind, C, V>& a) {
    detail::activate<C>(a.settings.function, a.x, a.y, a.shape.last());
  }
  template <class C, class V, class Kind>
  static void backward(const detail::backward_args<Kind, C, V>& a) {
    if (!a.dx.empty()) detail::activation_gradient<C>(a.settings.function, a.x, a.y, a.dy, a.dx, a.shape.last());
  }

  template <class Json>
  static void write_config(const settings& s, Json& config) {
    config["activation"] = kernels::activation_name(s.function);
  }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) { return {detail::read_activation(read)}; }
};

/// Keras' Softmax layer: the activation kind with softmax, over the last axis.
struct softmax : activation {
  static constexpr std::string_view keras_class = "Softmax";
  struct settings : activation::settings {
    settings() : activation::settings{kernels::activation::softmax} {}
    /// The axis as a config gives it: -1, or the last axis's index counting the batch axis.
    std::int64_t axis = -1;
  };
  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    detail::check_last_axis(s.axis, input, "Softmax runs over");
    return {input.begin(), input.end()};
  }
  template <class Json>
  static void write_config(const settings& s, Json& config) { config["axis"] = s.axis; }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.axis = read.integer("axis", -1);
    return s;
  }
};

}  // namespace mixprec::layer_kinds
