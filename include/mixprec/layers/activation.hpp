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
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class A, class... Options>
class Activation : public Layer<Activation<A, Options...>, policy_option_t<Options...>,
                                 !has_flag_v<no_autocast, Options...>> {
  static_assert(ActivationType<A>, "Activation<A>: A must be an activation (activations::relu, ...).");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Activation<A, Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = Layer<Activation, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

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

  explicit Activation(std::string name = "activation") : base(std::move(name)) {}
  template <class... Other>
  explicit Activation(const Activation<A, Other...>& spec) : Activation(spec.name()) {}

  /// Takes x by value and activates it in place: an rvalue input costs no copy.
  template <class T, std::size_t... E>
  Tensor<T, E...> call(const call_context<policy>&, Tensor<T, E...> x) {
    static_assert(std::is_same_v<T, compute_dtype>,
                  "Activation with no_autocast received inputs in another dtype than its compute dtype: convert "
                  "them first.");
    static_assert(sizeof...(E) >= 1, "Activation needs a tensor with at least one axis.");
    constexpr std::size_t last = std::array<std::size_t, sizeof...(E)>{E...}.back();
    detail::activate<T>(A::kind, std::as_const(x).values(), x.values(), last == dynamic ? x.size() : last);
    return x;
  }

  static constexpr std::string_view keras_class = "Activation";
  nlohmann::ordered_json keras_config() const { return detail::activation_config(A::kind); }
};

/// Keras' Softmax layer (last axis).
template <class... Options>
using Softmax = Activation<activations::softmax, Options...>;

}  // namespace mixprec
