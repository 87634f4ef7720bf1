// Flatten<Options...>: (batch, d1, d2, ...) -> (batch, d1 * d2 * ...).
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/flatten.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class Flatten : public KindLayer<Flatten<Options...>, layer_kinds::flatten, policy_option_t<Options...>,
                                 !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Flatten<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = KindLayer<Flatten, layer_kinds::flatten, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;

  template <class Policy>
  using with_default_policy = std::conditional_t<has_own_policy, Flatten, Flatten<Options..., Policy>>;
  template <class X>
  using output_t = Tensor<typename rebind_tensor_t<X, compute_dtype>::dtype, dynamic, X::row_size>;

  explicit Flatten(std::string name = "flatten", bool trainable = true) : base(std::move(name), {}, trainable) {}
  template <class... Other>
  explicit Flatten(const Flatten<Other...>& spec) : Flatten(spec.name(), spec.trainable()) {}

  template <class X>
  static void check_input() {
    static_assert(X::batched, "Flatten needs batched inputs: Tensor<T, dynamic, ...>.");
  }
};

}  // namespace mixprec
