// Weight initializers (Keras' names and formulas). Values are drawn in double and rounded once
// to the variable dtype, so a bfloat16 weight is the correctly rounded bfloat16 of its draw.
//
// An initializer is called as init(values, extents, default_seed). Without a seed (the
// default, Keras' seed=None) it uses default_seed, which layers derive from the weight's path
// ("dense_1/kernel"), so every weight of a model gets its own, reproducible draws; a seed given
// (0 included) is used as it is.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <array>

#include <nlohmann/json.hpp>

#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::initializers {

/// Keras' fan-in / fan-out of a weight shape: a 2-D [in, out] kernel, or a convolution kernel
/// [kh, kw, in, out] whose receptive field multiplies both.
struct fans {
  double in;
  double out;
};
inline fans compute_fans(std::span<const std::size_t> extents) {
  if (extents.empty()) return {1, 1};
  if (extents.size() == 1) return {static_cast<double>(extents[0]), static_cast<double>(extents[0])};
  double receptive = 1;
  for (std::size_t i = 0; i + 2 < extents.size(); ++i) receptive *= static_cast<double>(extents[i]);
  return {receptive * static_cast<double>(extents[extents.size() - 2]),
          receptive * static_cast<double>(extents[extents.size() - 1])};
}

/// A stable 64-bit hash (FNV-1a) of a weight's path, to seed its initializer.
constexpr std::uint64_t seed_for(std::string_view path) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : path) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

/// A seed, or none: drawn from the weight's path or the layer's name (Keras' seed=None).
using seed_type = std::optional<std::uint64_t>;

/// A seed as Keras writes it: none is null.
// (A template for the reason serialize is, below.)
template <class Deferred = void>
nlohmann::ordered_json seed_config(seed_type seed) {
  return seed ? nlohmann::ordered_json(*seed) : nlohmann::ordered_json(nullptr);
}

/// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)). The default for kernels.
struct glorot_uniform {
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t> extents, std::uint64_t default_seed) const {
    const fans f = compute_fans(extents);
    const double limit = std::sqrt(6.0 / (f.in + f.out));
    std::mt19937_64 rng(seed.value_or(default_seed));
    std::uniform_real_distribution<double> uniform(-limit, limit);
    for (double& v : values) v = uniform(rng);
  }
};

/// Normal(mean, stddev).
struct random_normal {
  double mean = 0.0;
  double stddev = 0.05;
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t>, std::uint64_t default_seed) const {
    std::mt19937_64 rng(seed.value_or(default_seed));
    std::normal_distribution<double> normal(mean, stddev);
    for (double& v : values) v = normal(rng);
  }
};

struct constant {
  double value = 0.0;
  void operator()(std::span<double> values, std::span<const std::size_t>, std::uint64_t) const {
    for (double& v : values) v = value;
  }
};

/// The default for biases.
struct zeros : constant {};
struct ones : constant {
  ones() : constant{1.0} {}
};

/// Uniform in [minval, maxval).
struct random_uniform {
  double minval = -0.05;
  double maxval = 0.05;
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t>, std::uint64_t default_seed) const {
    std::mt19937_64 rng(seed.value_or(default_seed));
    std::uniform_real_distribution<double> uniform(minval, maxval);
    for (double& v : values) v = uniform(rng);
  }
};

namespace detail {
/// Keras' VarianceScaling with a truncated normal: N(0, stddev) redrawn outside two standard
/// deviations, stddev corrected for the truncation (0.8796... is the truncated unit normal's).
inline void truncated_normal(std::span<double> values, double variance, std::uint64_t seed) {
  const double stddev = std::sqrt(variance) / 0.87962566103423978;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, stddev);
  for (double& v : values) do v = normal(rng); while (std::abs(v) > 2.0 * stddev);
}
}  // namespace detail

/// Truncated normal with variance 2 / (fan_in + fan_out).
struct glorot_normal {
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t> extents, std::uint64_t default_seed) const {
    const fans f = compute_fans(extents);
    detail::truncated_normal(values, 2.0 / (f.in + f.out), seed.value_or(default_seed));
  }
};

/// Uniform in [-limit, limit], limit = sqrt(6 / fan_in).
struct he_uniform {
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t> extents, std::uint64_t default_seed) const {
    const double limit = std::sqrt(6.0 / compute_fans(extents).in);
    std::mt19937_64 rng(seed.value_or(default_seed));
    std::uniform_real_distribution<double> uniform(-limit, limit);
    for (double& v : values) v = uniform(rng);
  }
};

/// Truncated normal with variance 2 / fan_in.
struct he_normal {
  seed_type seed = std::nullopt;
  void operator()(std::span<double> values, std::span<const std::size_t> extents, std::uint64_t default_seed) const {
    detail::truncated_normal(values, 2.0 / compute_fans(extents).in, seed.value_or(default_seed));
  }
};

/// Any of them, chosen at run time (layer settings, Keras configs).
using any = std::variant<glorot_uniform, glorot_normal, he_uniform, he_normal, random_normal, random_uniform, zeros,
                         ones, constant>;

/// Keras 3's serialized form: {"module": "keras.initializers", "class_name": "GlorotUniform",
/// "config": {"seed": null}, "registered_name": null}.
// (A template only so that a TU compiles it, a std::visit over nine initializers building JSON,
// where it writes a config.)
template <class Deferred = void>
nlohmann::ordered_json serialize(const any& initializer) {
  const auto [class_name, config] = std::visit(
      [&](const auto& i) -> std::pair<const char*, nlohmann::ordered_json> {
        using I = std::remove_cvref_t<decltype(i)>;
        if constexpr (std::is_same_v<I, glorot_uniform>) return {"GlorotUniform", {{"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, glorot_normal>) return {"GlorotNormal", {{"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, he_uniform>) return {"HeUniform", {{"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, he_normal>) return {"HeNormal", {{"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, random_normal>)
          return {"RandomNormal", {{"mean", i.mean}, {"stddev", i.stddev}, {"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, random_uniform>)
          return {"RandomUniform", {{"minval", i.minval}, {"maxval", i.maxval}, {"seed", seed_config(i.seed)}}};
        else if constexpr (std::is_same_v<I, zeros>) return {"Zeros", nlohmann::ordered_json::object()};
        else if constexpr (std::is_same_v<I, ones>) return {"Ones", nlohmann::ordered_json::object()};
        else return {"Constant", {{"value", i.value}}};
      },
      initializer);
  return {{"module", "keras.initializers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

/// An initializer from its Keras form: a serialized object or a name ("glorot_uniform",
/// "zeros", "he_normal", ...). Unknown classes and settings are std::invalid_argument.
template <class Deferred = void>
any get(const nlohmann::json& identifier) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> names{{
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"}, {"random_normal", "RandomNormal"}, {"random_uniform", "RandomUniform"},
      {"zeros", "Zeros"}, {"ones", "Ones"}, {"constant", "Constant"}}};
  mixprec::detail::check_json_depth(identifier, "The initializer config");
  std::string class_name;
  nlohmann::json config = nlohmann::json::object();
  if (identifier.is_string()) {
    class_name = identifier.get<std::string>();
    for (const auto& [snake, camel] : names)
      if (class_name == snake) class_name = camel;
  } else if (identifier.is_object() && identifier.contains("class_name") && identifier["class_name"].is_string()) {
    class_name = identifier["class_name"].get<std::string>();
    if (identifier.contains("config")) config = identifier["config"];
  } else {
    throw std::invalid_argument("Could not interpret initializer identifier: " + mixprec::detail::shown(identifier));
  }
  mixprec::detail::config_reader read(config, "initializer " + mixprec::detail::quote_for_message(class_name));
  const auto seed = [&] { return read.optional_non_negative("seed"); };
  any result;
  if (class_name == "GlorotUniform") result = glorot_uniform{seed()};
  else if (class_name == "GlorotNormal") result = glorot_normal{seed()};
  else if (class_name == "HeUniform") result = he_uniform{seed()};
  else if (class_name == "HeNormal") result = he_normal{seed()};
  else if (class_name == "RandomNormal") result = random_normal{read.number("mean", 0.0), read.number("stddev", 0.05), seed()};
  else if (class_name == "RandomUniform")
    result = random_uniform{read.number("minval", -0.05), read.number("maxval", 0.05), seed()};
  else if (class_name == "Zeros") result = zeros{};
  else if (class_name == "Ones") result = ones{};
  else if (class_name == "Constant") result = constant{read.number("value", 0.0)};
  else {
    std::string known;
    for (const auto& [snake, camel] : names) known += (known.empty() ? "" : ", ") + std::string(camel);
    throw std::invalid_argument("Unknown initializer: " + mixprec::detail::shown(class_name) + ". Known: " + known + ".");
  }
  read.finish();
  return result;
}

}  // namespace mixprec::initializers

#include <mixprec/core/cast.hpp>
#include <mixprec/core/limits.hpp>
#include <vector>

namespace mixprec::detail {
/// A weight's initial values: drawn in double by `initializer` for `shape`, seeded from the
/// weight's path, rounded once to V.
template <class V, class Initializer>
std::vector<V> initial_values(const Initializer& initializer, const std::vector<std::size_t>& shape,
                              std::string_view path) {
  const std::size_t size = checked_product(shape, path);
  std::vector<double> draws(size);
  const auto draw = [&](const auto& init) {
    init(std::span(draws), std::span<const std::size_t>(shape), initializers::seed_for(path));
  };
  if constexpr (requires { initializer.index(); }) std::visit(draw, initializer);
  else draw(initializer);
  std::vector<V> values(size);
  for (std::size_t i = 0; i < size; ++i) values[i] = cast<V>(draws[i]);
  return values;
}
}  // namespace mixprec::detail
