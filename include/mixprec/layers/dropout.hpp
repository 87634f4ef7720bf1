// Dropout<Options...>(rate, name, seed): identity at inference; in training, zeroes each element
// with probability `rate` and scales the others by 1 / (1 - rate) (in the compute dtype). The
// draws come from the layer's generator, seeded by `seed`, or by the layer's name without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include <mixprec/core/cast.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/dropout.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class Dropout : public KindLayer<Dropout<Options...>, layer_kinds::dropout, policy_option_t<Options...>,
                                 !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Dropout<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = KindLayer<Dropout, layer_kinds::dropout, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;

  template <class Policy>
  using with_default_policy = std::conditional_t<has_own_policy, Dropout, Dropout<Options..., Policy>>;
  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  explicit Dropout(double rate = 0.5, std::string name = "dropout", initializers::seed_type seed = std::nullopt,
                   bool trainable = true)
      : base(std::move(name), checked({rate, seed}), trainable) {}
  template <class... Other>
  explicit Dropout(const Dropout<Other...>& spec) : Dropout(spec.rate(), spec.name(), spec.seed(), spec.trainable()) {}

  template <class X>
  static void check_input() {}

  double rate() const { return this->settings().rate; }
  initializers::seed_type seed() const { return this->settings().seed; }

 private:
  static layer_kinds::dropout::settings checked(layer_kinds::dropout::settings settings) {
    layer_kinds::dropout::check(settings);
    return settings;
  }
};

}  // namespace mixprec
