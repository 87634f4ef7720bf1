// The Dropout kind: the identity at inference; in training, each element is zeroed with
// probability `rate` and the others scaled by 1 / (1 - rate) (rounded once to the compute dtype),
// the choices drawn from the layer's own generator, seeded by `seed` or, when it is 0 (Keras'
// None), by a hash of the layer's name: runs repeat, and two unseeded Dropout layers draw
// different masks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/kind.hpp>

namespace mixprec::layer_kinds {

struct dropout : detail::weightless_kind {
  static constexpr std::string_view keras_class = "Dropout";
  struct settings {
    double rate = 0.5;
    initializers::seed_type seed = std::nullopt;  // none: from the layer's name
  };
  /// The output may be the input's own buffer.
  static constexpr bool in_place = true;
  struct state {
    std::mt19937_64 generator;
  };
  static state initial_state(const settings& s, std::string_view layer_name) {
    return {std::mt19937_64(s.seed.value_or(initializers::seed_for(layer_name)))};
  }
  /// Which elements were kept.
  template <class C>
  struct saved {
    std::vector<bool> kept;
  };

  /// Keras' range, 1 included (everything dropped: zeros, and no gradient).
  static void check(const settings& s) {
    if (!(s.rate >= 0.0 && s.rate <= 1.0))
      throw std::invalid_argument("Dropout: rate must be in [0, 1]; got " + detail::number_text(s.rate) + ".");
  }
  /// What kept elements are multiplied by: 1 / (1 - rate) (none are kept at rate 1).
  static double kept_scale(const settings& s) { return s.rate < 1.0 ? 1.0 / (1.0 - s.rate) : 0.0; }
  static std::vector<std::size_t> output_shape(const settings&, std::span<const std::size_t> input) {
    return {input.begin(), input.end()};
  }

  template <class C, class V>
  static void forward(const detail::forward_args<dropout, C, V>& a) {
    if (!a.training) {
      if (a.y.data() != a.x.data()) std::copy(a.x.begin(), a.x.end(), a.y.begin());
      return;
    }
    std::bernoulli_distribution keep(1.0 - a.settings.rate);
    const double scale = kept_scale(a.settings);
    if (a.saved) a.saved->kept.assign(a.x.size(), false);
    for (std::size_t i = 0; i < a.x.size(); ++i) {
      const bool kept = keep(a.state.generator);
      a.y[i] = kept ? cast<C>(static_cast<double>(cast<double>(a.x[i])) * scale) : cast<C>(0);
      if (a.saved) a.saved->kept[i] = kept;
    }
  }

  template <class C, class V>
  static void backward(const detail::backward_args<dropout, C, V>& a) {
    if (a.dx.empty()) return;
    const double scale = kept_scale(a.settings);
    for (std::size_t i = 0; i < a.dy.size(); ++i)
      a.dx[i] = a.saved.kept[i] ? cast<C>(static_cast<double>(cast<double>(a.dy[i])) * scale) : cast<C>(0);
  }

  template <class Json>
  static void write_config(const settings& s, Json& config) {
    config["rate"] = s.rate;
    config["seed"] = initializers::seed_config(s.seed);
    config["noise_shape"] = nullptr;
  }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.rate = read.number("rate");
    s.seed = read.optional_non_negative("seed");  // null or absent: from the layer's name
    read.unsupported("noise_shape");
    try {
      check(s);
    } catch (const std::invalid_argument& error) {
      read.fail(error.what());
    }
    return s;
  }
};

}  // namespace mixprec::layer_kinds
