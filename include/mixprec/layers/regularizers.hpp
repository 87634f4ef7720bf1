// Weight regularizers (Keras' l1, l2, l1_l2). They run in the variable dtype, as in Keras: every
// step of the sum is rounded to the weight's own dtype.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include <mixprec/core/cast.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::regularizers {

/// factor * sum(|w|)
struct l1 {
  double factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    T total = cast<T>(0);
    for (const T& v : w) total = T(total + (v < cast<T>(0) ? T(-v) : v));
    return T(cast<T>(factor) * total);
  }
  /// gradient += loss_scale * factor * sign(w) (0 at w = 0, as Keras' gradient of |w|), in T.
  template <class T>
  void add_gradient(std::span<const T> w, std::span<T> gradient, float loss_scale = 1.0f) const {
    const T f = cast<T>(factor * loss_scale), zero = cast<T>(0);
    for (std::size_t i = 0; i < w.size(); ++i)
      gradient[i] = T(gradient[i] + (w[i] > zero ? f : w[i] < zero ? T(-f) : zero));
  }
};

/// factor * sum(w^2)
struct l2 {
  double factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    T total = cast<T>(0);
    for (const T& v : w) total = T(total + T(v * v));
    return T(cast<T>(factor) * total);
  }
  /// gradient += loss_scale * 2 factor w, in T.
  template <class T>
  void add_gradient(std::span<const T> w, std::span<T> gradient, float loss_scale = 1.0f) const {
    const T twice = cast<T>(2.0 * factor * loss_scale);  // the scale joins the factor: one rounding
    for (std::size_t i = 0; i < w.size(); ++i) gradient[i] = T(gradient[i] + T(twice * w[i]));
  }
};

/// l1 * sum(|w|) + l2 * sum(w^2)
struct l1_l2 {
  double l1_factor = 0.01;
  double l2_factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    return T(l1{l1_factor}(w) + l2{l2_factor}(w));
  }
  template <class T>
  void add_gradient(std::span<const T> w, std::span<T> gradient, float loss_scale = 1.0f) const {
    l1{l1_factor}.add_gradient(w, gradient, loss_scale);
    l2{l2_factor}.add_gradient(w, gradient, loss_scale);
  }
};

/// Any of them (for run-time configuration).
using any = std::variant<l1, l2, l1_l2>;

/// Keras 3's serialized form: {"module": "keras.regularizers", "class_name": "L2",
/// "config": {"l2": 0.01}, "registered_name": null}.
// (A template only so that a TU compiles it where it writes a config.)
template <class Deferred = void>
nlohmann::ordered_json serialize(const any& regularizer) {
  const auto [class_name, config] = std::visit(
      [](const auto& r) -> std::pair<const char*, nlohmann::ordered_json> {
        using R = std::remove_cvref_t<decltype(r)>;
        if constexpr (std::is_same_v<R, l1>) return {"L1", {{"l1", r.factor}}};
        else if constexpr (std::is_same_v<R, l2>) return {"L2", {{"l2", r.factor}}};
        else return {"L1L2", {{"l1", r.l1_factor}, {"l2", r.l2_factor}}};
      },
      regularizer);
  return {{"module", "keras.regularizers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

/// A regularizer from its Keras form: a serialized object or a name ("l1", "l2", "l1_l2", with
/// Keras' default factor 0.01).
template <class Deferred = void>
any get(const nlohmann::json& identifier) {
  mixprec::detail::check_json_depth(identifier, "The regularizer config");
  std::string class_name;
  nlohmann::json config = nlohmann::json::object();
  if (identifier.is_string()) {
    class_name = identifier.get<std::string>();
    if (class_name == "l1") class_name = "L1";
    else if (class_name == "l2") class_name = "L2";
    else if (class_name == "l1_l2") return l1_l2{0.01, 0.01};  // tf.keras' l1_l2(): 0.01 each (the class' own defaults are 0)
  } else if (identifier.is_object() && identifier.contains("class_name") && identifier["class_name"].is_string()) {
    class_name = identifier["class_name"].get<std::string>();
    if (identifier.contains("config")) config = identifier["config"];
  } else {
    throw std::invalid_argument("Could not interpret regularizer identifier: " + mixprec::detail::shown(identifier));
  }
  mixprec::detail::config_reader read(config, "regularizer " + mixprec::detail::quote_for_message(class_name));
  any result;
  if (class_name == "L1") result = l1{read.number("l1", 0.01)};
  else if (class_name == "L2") result = l2{read.number("l2", 0.01)};
  else if (class_name == "L1L2") result = l1_l2{read.number("l1", 0.0), read.number("l2", 0.0)};
  else throw std::invalid_argument("Unknown regularizer: " + mixprec::detail::shown(class_name) + ". Known: L1, L2, L1L2.");
  read.finish();
  return result;
}

}  // namespace mixprec::regularizers

namespace mixprec {
template <class R>
concept RegularizerType = std::is_same_v<R, regularizers::l1> || std::is_same_v<R, regularizers::l2> ||
                          std::is_same_v<R, regularizers::l1_l2> || std::is_same_v<R, regularizers::any>;
}  // namespace mixprec
