// Layer options, given as extra template arguments in any order:
//
//   Dense<64, activations::relu, policies::mixed_bfloat16, no_bias>
//
// A dtype policy (a layer without one takes its model's, like Keras' global policy), an
// activation, and flags. Each layer lists the kinds of option it accepts and rejects the rest.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

#include <mixprec/core/infer_policy.hpp>
#include <mixprec/core/policy.hpp>

namespace mixprec {

/// The layer computes in whatever dtype its inputs come in (Keras' autocast=False).
struct no_autocast {};
/// Dense / Conv2D without a bias (Keras' use_bias=False).
struct no_bias {};
/// A weight excluded from training (add_weight option).
struct not_trainable {};

/// A layer's policy when none is given: the enclosing model's. Standalone, it is float32 (Keras'
/// default global policy).
struct model_policy {
  using resolved = policies::float32;
};

namespace detail {

template <class T>
concept policy_option = DTypePolicyType<T> || std::is_same_v<T, InferPolicy>;

/// Position of the first option satisfying Predicate, or sizeof...(Options).
template <template <class> class Predicate, class... Options>
constexpr std::size_t option_index() {
  constexpr bool matches[] = {Predicate<Options>::value..., false};
  std::size_t i = 0;
  while (i < sizeof...(Options) && !matches[i]) ++i;
  return i;
}

template <template <class> class Predicate, class... Options>
constexpr std::size_t option_count() {
  return (std::size_t{0} + ... + (Predicate<Options>::value ? 1 : 0));
}

template <template <class> class Predicate, class Default, class... Options>
struct find_option {
  static constexpr std::size_t index = option_index<Predicate, Options...>();
  using type = std::tuple_element_t<index, std::tuple<Options..., Default>>;
};

template <class T>
struct is_policy_option : std::bool_constant<policy_option<T>> {};
template <class Flag>
struct is_flag {
  template <class T>
  struct of : std::is_same<T, Flag> {};
};

}  // namespace detail

/// The first option satisfying Predicate, or Default.
template <template <class> class Predicate, class Default, class... Options>
using find_option_t = typename detail::find_option<Predicate, Default, Options...>::type;

/// The policy among Options (model_policy if none).
template <class... Options>
using policy_option_t = find_option_t<detail::is_policy_option, model_policy, Options...>;

template <class Flag, class... Options>
inline constexpr bool has_flag_v = (std::is_same_v<Flag, Options> || ...);

/// Options... contains at most one option of each kind recognised by the Predicates, and nothing else.
template <class Options, template <class> class... Predicates>
struct options_are_valid;
template <class... Options, template <class> class... Predicates>
struct options_are_valid<std::tuple<Options...>, Predicates...> {
  template <class Option>
  static constexpr bool recognized = (Predicates<Option>::value || ...);
  static constexpr bool known = (recognized<Options> && ...);
  static constexpr bool unique = ((detail::option_count<Predicates, Options...>() <= 1) && ...);
  static constexpr bool value = known && unique;
};

}  // namespace mixprec

namespace mixprec {

/// Convolution and pooling options.
template <std::size_t Height, std::size_t Width = Height>
struct strides {
  static_assert(Height > 0 && Width > 0, "strides<H, W> must be positive.");
  static constexpr std::size_t height = Height;
  static constexpr std::size_t width = Width;
};
namespace padding {
struct valid {
  static constexpr bool pads = false;
};
/// Output size ceil(input / stride), zero padding split evenly (the extra one after).
struct same {
  static constexpr bool pads = true;
};
}  // namespace padding

namespace detail {
template <class T>
struct is_strides : std::false_type {};
template <std::size_t H, std::size_t W>
struct is_strides<strides<H, W>> : std::true_type {};
template <class T>
struct is_padding : std::bool_constant<std::is_same_v<T, padding::valid> || std::is_same_v<T, padding::same>> {};
}  // namespace detail

}  // namespace mixprec
