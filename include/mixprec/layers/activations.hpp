// Activations as layer options (Dense<64, activations::relu>) and by Keras name at run time.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <type_traits>

namespace mixprec {

/// The activations layers know, by Keras name. gelu is Keras' "gelu", the exact x Phi(x)
/// (gelu(approximate=False), its default); gelu_approximate is mixprec's name for Keras'
/// gelu(approximate=True), the tanh approximation, which Keras configs cannot name by a string.
enum class activation_kind { linear, relu, gelu, gelu_approximate, sigmoid, tanh, exponential, softmax };

inline constexpr std::array<std::string_view, 8> activation_names{
    "linear", "relu", "gelu", "gelu_approximate", "sigmoid", "tanh", "exponential", "softmax"};

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
/// Exact: x Phi(x) = 0.5 x erfc(-x / sqrt(2)), Phi the standard normal CDF.
using gelu = tag<activation_kind::gelu>;
/// Keras' gelu(approximate=True): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
using gelu_approximate = tag<activation_kind::gelu_approximate>;
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
