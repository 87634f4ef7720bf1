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
template <class A>
using activation_layer_kind =
    std::conditional_t<std::is_same_v<A, activations::softmax>, layer_kinds::softmax, layer_kinds::activation>;
}  // namespace detail

template <class A, class... Options>
class Activation : public KindLayer<Activation<A, Options...>, detail::activation_layer_kind<A>,
                                    policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(ActivationType<A>, "Activation<A>: A must be an activation (activations::relu, ...).");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Activation<A, Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using kind = detail::activation_layer_kind<A>;
  using base = KindLayer<Activation, kind, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using activation = A;
  using base::has_own_policy;
  static_assert(ComputeDType<compute_dtype>,
                "Activation computes in float16, bfloat16, float32 or float64: its policy's compute dtype is none "
                "of them.");

  template <class Policy>
  using with_default_policy =
      std::conditional_t<has_own_policy, Activation, Activation<A, Options..., Policy>>;
  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  explicit Activation(std::string name = "activation", bool trainable = true)
      : base(std::move(name), settings_for_kind(), trainable) {}
  template <class... Other>
  explicit Activation(const Activation<A, Other...>& spec) : Activation(spec.name(), spec.trainable()) {}

  template <class X>
  static void check_input() {
    static_assert(X::rank >= 1, "Activation needs a tensor with at least one axis.");
  }

 private:
  static typename kind::settings settings_for_kind() {
    typename kind::settings settings;
    settings.function = A::kind;
    return settings;
  }
};

/// Keras' Softmax layer (last axis).
template <class... Options>
using Softmax = Activation<activations::softmax, Options...>;

}  // namespace mixprec
