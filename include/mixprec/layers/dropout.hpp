// Dropout<Options...>(rate): identity at inference; in training, zeroes each element with
// probability `rate` and scales the others by 1 / (1 - rate) (in the compute dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include <mixprec/core/cast.hpp>
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class Dropout : public Layer<Dropout<Options...>, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Dropout<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = Layer<Dropout, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;

  template <class Policy>
  using with_default_policy = std::conditional_t<has_own_policy, Dropout, Dropout<Options..., Policy>>;
  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  explicit Dropout(double rate = 0.5, std::string name = "dropout", std::uint64_t seed = 0)
      : base(std::move(name)), rate_(rate), seed_(seed), rng_(seed) {
    if (!(rate >= 0.0 && rate < 1.0))
      throw std::invalid_argument("Dropout: rate must be in [0, 1); got " + std::to_string(rate) + ".");
  }
  template <class... Other>
  explicit Dropout(const Dropout<Other...>& spec) : Dropout(spec.rate(), spec.name(), spec.seed()) {}

  /// Takes x by value and works in place: an rvalue input costs no copy.
  template <class X>
  X call(const call_context<policy>& context, X x) {
    if (context.training()) detail::dropout_in_place<typename X::dtype>(x.values(), rate_, rng_);
    return x;
  }

  static constexpr std::string_view keras_class = "Dropout";
  nlohmann::ordered_json keras_config() const { return detail::dropout_config(rate_, seed_); }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }

 private:
  double rate_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace mixprec
