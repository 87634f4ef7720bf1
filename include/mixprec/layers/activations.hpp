// Activations as layer options (Dense<64, activations::relu>); by Keras name at run time, the
// enum kernels::activation (kernels/activation.hpp) names them.
#pragma once

#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>

#include <mixprec/kernels/activation.hpp>

namespace mixprec {

// The names of the previous release, kept for one more: layers take the kernels' one enum.
using activation_kind [[deprecated("use mixprec::kernels::activation")]] = kernels::activation;
[[deprecated("use mixprec::kernels::activation_names")]] inline constexpr const auto& activation_names =
    kernels::activation_names;
// A template, so that an unqualified activation_name(kind) prefers kernels::activation_name,
// which argument-dependent lookup also finds, to an ambiguity.
template <std::same_as<kernels::activation> Kind>
[[deprecated("use mixprec::kernels::activation_name")]] constexpr std::string_view activation_name(Kind kind) {
  return kernels::activation_name(kind);
}
[[deprecated("use mixprec::kernels::find_activation")]] constexpr std::optional<kernels::activation> find_activation(
    std::string_view name) {
  return kernels::find_activation(name);
}

namespace activations {
template <kernels::activation Kind>
struct tag {
  static constexpr kernels::activation kind = Kind;
  static constexpr std::string_view name = kernels::activation_name(Kind);
};
using linear = tag<kernels::activation::linear>;
using relu = tag<kernels::activation::relu>;
/// Exact: x Phi(x) = 0.5 x erfc(-x / sqrt(2)), Phi the standard normal CDF.
using gelu = tag<kernels::activation::gelu>;
/// Keras' gelu(approximate=True): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
using gelu_approximate = tag<kernels::activation::gelu_approximate>;
using sigmoid = tag<kernels::activation::sigmoid>;
using tanh = tag<kernels::activation::tanh>;
using exponential = tag<kernels::activation::exponential>;
/// Over the last axis, max-subtracted, accumulated in float32.
using softmax = tag<kernels::activation::softmax>;
}  // namespace activations

namespace detail {
template <class T>
struct is_activation : std::false_type {};
template <kernels::activation K>
struct is_activation<activations::tag<K>> : std::true_type {};
}  // namespace detail

template <class T>
concept ActivationType = detail::is_activation<T>::value;

}  // namespace mixprec
