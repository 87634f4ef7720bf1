// Flatten<Options...>: (batch, d1, d2, ...) -> (batch, d1 * d2 * ...).
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class Flatten : public Layer<Flatten<Options...>, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Flatten<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = Layer<Flatten, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;

  template <class Policy>
  using with_default_policy = std::conditional_t<has_own_policy, Flatten, Flatten<Options..., Policy>>;
  template <class X>
  using output_t = Tensor<typename rebind_tensor_t<X, compute_dtype>::dtype, dynamic, X::row_size>;

  explicit Flatten(std::string name = "flatten") : base(std::move(name)) {}
  template <class... Other>
  explicit Flatten(const Flatten<Other...>& spec) : Flatten(spec.name()) {}

  /// Takes x by value: an rvalue (a previous layer's output) is reshaped without a copy.
  template <class T, std::size_t... E>
  Tensor<T, dynamic, Tensor<T, E...>::row_size> call(const call_context<policy>&, Tensor<T, E...> x) {
    static_assert(Tensor<T, E...>::batched, "Flatten needs batched inputs: Tensor<T, dynamic, ...>.");
    return Tensor<T, dynamic, Tensor<T, E...>::row_size>(std::move(x).release_values());
  }

  static constexpr std::string_view keras_class = "Flatten";
  nlohmann::ordered_json keras_config() const { return detail::flatten_config(); }
};

}  // namespace mixprec
