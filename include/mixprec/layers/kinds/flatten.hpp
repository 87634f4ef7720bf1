// The Flatten kind: (batch, d1, d2, ...) -> (batch, d1 d2 ...); the values are untouched.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/limits.hpp>

#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/kinds/dense.hpp>

namespace mixprec::layer_kinds {

struct flatten : detail::weightless_kind {
  static constexpr std::string_view keras_class = "Flatten";
  struct settings {};
  /// The output may be the input's own buffer.
  static constexpr bool in_place = true;
  using state = detail::no_state;
  template <class C>
  using saved = detail::nothing_saved<C>;

  static std::vector<std::size_t> output_shape(const settings&, std::span<const std::size_t> input) {
    return {detail::checked_product(input, "Flatten's output")};
  }

  template <class C, class V>
  static void forward(const detail::forward_args<flatten, C, V>& a) {
    if (a.y.data() != a.x.data()) std::copy(a.x.begin(), a.x.end(), a.y.begin());
  }
  template <class C, class V>
  static void backward(const detail::backward_args<flatten, C, V>& a) {
    if (!a.dx.empty()) std::copy(a.dy.begin(), a.dy.end(), a.dx.begin());
  }

  /// The output is lent as it is (kind.hpp's lent_output): a 16-bit Dense above writes its input
  /// gradient over it. The gradient is copied over the output the layer below lends, as that
  /// layer's pre-activation gradient (dense::write_lent_gradient): no buffer of the input's size.
  static std::optional<kernels::activation> lendable_activation(const settings&) { return kernels::activation::linear; }
  template <class C>
  static bool writes_gradient_over_input(const settings&) {
    return true;
  }
  template <class C, class V>
  static void backward_over_input(const detail::backward_args<flatten, C, V>& a, const detail::lent_output<C>& below) {
    dense::write_lent_gradient<C, C>(std::span<const C>(a.dy), below.activation, below.values);
  }

  template <class Json>
  static void write_config(const settings&, Json& config) { config["data_format"] = "channels_last"; }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    static constexpr std::array<std::string_view, 1> formats{"channels_last"};
    read.choice("data_format", formats);
    return {};
  }
};

}  // namespace mixprec::layer_kinds
