// Activations as layer options (Dense<64, activations::relu>) and by Keras name at run time.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <type_traits>

namespace mixprec {

/// The activations layers know, by Keras name.
enum class activation_kind { linear, relu, gelu, sigmoid, tanh, exponential, softmax };

inline constexpr std::array<std::string_view, 7> activation_names{"linear", "relu",        "gelu",   "sigmoid",
                                                                  "tanh",   "exponential", "softmax"};

inline constexpr std::string_view activation_name(activation_kind kind) {
  return activation_names[static_cast<std::size_t>(kind)];
}

/// Keras' name -> activation (nullopt for names it does not know). "None" / "" mean linear.
constexpr std::optional<activation_kind> find_activation(std::string_view name) {
  if (name.empty() || name == "None") return activation_kind::linear;
  for (std::size_t i = 0; i < activation_names.size(); ++i)
    if (activation_names[i] == name) return static_cast<activation_kind>(i);
  return std::nullopt;
}

namespace activations {
template <activation_kind Kind>
struct tag {
  static constexpr activation_kind kind = Kind;
  static constexpr std::string_view name = activation_name(Kind);
};
using linear = tag<activation_kind::linear>;
using relu = tag<activation_kind::relu>;
/// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
using gelu = tag<activation_kind::gelu>;
using sigmoid = tag<activation_kind::sigmoid>;
using tanh = tag<activation_kind::tanh>;
using exponential = tag<activation_kind::exponential>;
/// Over the last axis, max-subtracted, accumulated in float32.
using softmax = tag<activation_kind::softmax>;
}  // namespace activations

namespace detail {
template <class T>
struct is_activation : std::false_type {};
template <activation_kind K>
struct is_activation<activations::tag<K>> : std::true_type {};
}  // namespace detail

template <class T>
concept ActivationType = detail::is_activation<T>::value;

}  // namespace mixprec
