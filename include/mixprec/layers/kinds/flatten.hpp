// The Flatten kind: (batch, d1, d2, ...) -> (batch, d1 d2 ...); the values are untouched.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/limits.hpp>

#include <mixprec/layers/kind.hpp>

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

  static void write_config(const settings&, nlohmann::ordered_json& config) { config["data_format"] = "channels_last"; }
  static settings read_config(detail::config_reader& read) {
    static constexpr std::array<std::string_view, 1> formats{"channels_last"};
    read.choice("data_format", formats);
    return {};
  }
};

}  // namespace mixprec::layer_kinds
