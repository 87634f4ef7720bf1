// The one activation enum of mixprec: the elementwise kernels (kernels::activate,
// activation_backward, bias_activation) and the layers (Dense<64, activations::relu>, "activation"
// in a Keras config) both name their activation with it.
//
//   std::optional<kernels::activation> a = kernels::find_activation("gelu");  // Keras' name -> enum
//   kernels::activation_name(*a) == "gelu";                                    // enum -> Keras' name
//
// softmax is in the enum because layers name it like the others, but it runs over rows
// (kernels::softmax_rows): the elementwise kernels reject it (is_elementwise).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mixprec::kernels {

/// gelu is Keras' "gelu", the exact x Phi(x) (gelu(approximate=False), its default);
/// gelu_approximate is mixprec's name for Keras' gelu(approximate=True), the tanh approximation,
/// which Keras configs cannot name by a string.
enum class activation {
  linear, relu, gelu, gelu_approximate, sigmoid, tanh, exponential, softmax,
  exp [[deprecated("use mixprec::kernels::activation::exponential")]] = exponential  // the former name
};

/// Every activation's name, in the enum's order (Keras' names, and "gelu_approximate").
inline constexpr std::array<std::string_view, 8> activation_names{
    "linear", "relu", "gelu", "gelu_approximate", "sigmoid", "tanh", "exponential", "softmax"};

/// Whether `a` is one of the enum's activations (a value cast from an integer may be none).
constexpr bool is_activation(activation a) {
  return static_cast<std::size_t>(a) < activation_names.size();
}

/// Whether the elementwise kernels compute `a`: every activation but softmax, a row operation.
constexpr bool is_elementwise(activation a) {
  switch (a) {
    case activation::linear:
    case activation::relu:
    case activation::gelu:
    case activation::gelu_approximate:
    case activation::sigmoid:
    case activation::tanh:
    case activation::exponential: return true;
    case activation::softmax: return false;
  }
  return false;  // a value outside the enum
}

namespace detail {
[[noreturn]] inline void throw_not_an_activation(activation a, const char* what) {
  throw std::invalid_argument(std::string(what) + ": " + std::to_string(static_cast<int>(a)) +
                              " is not an activation (0 to " + std::to_string(activation_names.size() - 1) + ").");
}
}  // namespace detail

/// The name of `a`; throws std::invalid_argument for a value outside the enum.
constexpr std::string_view activation_name(activation a) {
  if (!is_activation(a)) detail::throw_not_an_activation(a, "activation_name");
  return activation_names[static_cast<std::size_t>(a)];
}

/// Keras' name -> activation (nullopt for names it does not know). "None" and "" mean linear,
/// as in Keras.
constexpr std::optional<activation> find_activation(std::string_view name) {
  if (name.empty() || name == "None") return activation::linear;
  for (std::size_t i = 0; i < activation_names.size(); ++i)
    if (activation_names[i] == name) return static_cast<activation>(i);
  return std::nullopt;
}

}  // namespace mixprec::kernels
