// Activation<A, Options...> (Keras' Activation layer) and Softmax<Options...> (over the last axis).
//
//   Activation<activations::softmax, policies::float32>   // seed 000: the float32 softmax
//
// Element-wise activations compute in float32 internally and round once to the compute dtype;
// softmax subtracts the row maximum and sums in float32.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/activation.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {

/// What Activation and Softmax share: a weightless kind over the last axis, in the policy's
/// compute dtype. They differ in their Keras class (and config) and default name.
template <class Derived, class Kind, class A, class... Options>
class activation_layer : public KindLayer<Derived, Kind, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, is_policy_option, is_flag<no_autocast>::template of>::value,
                "Activation<A, Options...> and Softmax<Options...>: the options are a dtype policy and no_autocast, "
                "each at most once.");
  using base = KindLayer<Derived, Kind, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using activation = A;
  using base::has_own_policy;
  static_assert(ComputeDType<compute_dtype>,
                "Activation computes in float16, bfloat16, float32 or float64: its policy's compute dtype is none "
                "of them.");

  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  template <class X>
  static void check_input() {
    static_assert(X::rank >= 1, "Activation needs a tensor with at least one axis.");
  }

 protected:
  activation_layer(std::string name, bool trainable) : base(std::move(name), settings_for_kind(), trainable) {}

 private:
  static typename Kind::settings settings_for_kind() {
    typename Kind::settings settings;
    settings.function = A::kind;
    return settings;
  }
};

}  // namespace detail

/// Keras' Activation layer; Activation<activations::softmax> is saved as Keras saves
/// Activation("softmax") (class Activation), Softmax<> as a Softmax layer.
template <class A, class... Options>
class Activation
    : public detail::activation_layer<Activation<A, Options...>, layer_kinds::activation, A, Options...> {
  static_assert(ActivationType<A>, "Activation<A>: A must be an activation (activations::relu, ...).");
  using base = detail::activation_layer<Activation<A, Options...>, layer_kinds::activation, A, Options...>;

 public:
  template <class Policy>
  using with_default_policy =
      std::conditional_t<base::has_own_policy, Activation, Activation<A, Options..., Policy>>;

  explicit Activation(std::string name = "activation", bool trainable = true) : base(std::move(name), trainable) {}
  template <class... Other>
  explicit Activation(const Activation<A, Other...>& spec) : Activation(spec.name(), spec.trainable()) {}
};

/// Keras' Softmax layer (last axis).
template <class... Options>
class Softmax : public detail::activation_layer<Softmax<Options...>, layer_kinds::softmax, activations::softmax,
                                                Options...> {
  using base = detail::activation_layer<Softmax<Options...>, layer_kinds::softmax, activations::softmax, Options...>;

 public:
  template <class Policy>
  using with_default_policy = std::conditional_t<base::has_own_policy, Softmax, Softmax<Options..., Policy>>;

  explicit Softmax(std::string name = "softmax", bool trainable = true) : base(std::move(name), trainable) {}
  template <class... Other>
  explicit Softmax(const Softmax<Other...>& spec) : Softmax(spec.name(), spec.trainable()) {}
};

}  // namespace mixprec
