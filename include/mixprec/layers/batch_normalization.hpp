// BatchNormalization<Options...> over the last axis (Keras' defaults: momentum 0.99,
// epsilon 1e-3, center and scale).
//
// As in Keras under mixed precision, statistics and normalization run in float32 (float64 for
// a float64 compute or variable dtype) and the output is rounded once to the compute dtype.
// gamma, beta, moving_mean and moving_variance live in the variable dtype and are read in it
// (they opt out of autocast). In training mode the batch statistics are used and the moving
// ones updated: moving = moving * momentum + batch * (1 - momentum).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/batch_normalization.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class BatchNormalization
    : public KindLayer<BatchNormalization<Options...>, layer_kinds::batch_normalization, policy_option_t<Options...>,
                       !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "BatchNormalization<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = KindLayer<BatchNormalization, layer_kinds::batch_normalization, policy_option_t<Options...>,
                         !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;
  using settings_type = layer_kinds::batch_normalization::settings;
  /// What statistics and normalization compute in: float32, float64 for float64 layers.
  using statistics_dtype =
      layer_kinds::batch_normalization::statistics_t<compute_dtype, typename base::variable_dtype>;

  template <class Policy>
  using with_default_policy =
      std::conditional_t<has_own_policy, BatchNormalization, BatchNormalization<Options..., Policy>>;
  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  explicit BatchNormalization(std::string name = "batch_normalization", double momentum = 0.99, double epsilon = 1e-3)
      : BatchNormalization(std::move(name), settings_type{.momentum = momentum, .epsilon = epsilon}) {}
  /// Every Keras setting (initializers and regularizers of gamma, beta and the moving statistics).
  BatchNormalization(std::string name, settings_type settings, bool trainable = true)
      : base(std::move(name), checked(std::move(settings)), trainable) {}
  template <class... Other>
  explicit BatchNormalization(const BatchNormalization<Other...>& spec)
      : BatchNormalization(spec.name(), spec.settings(), spec.trainable()) {}

  typename base::template plain_weight_t<dynamic> gamma, beta, moving_mean, moving_variance;

  template <class X>
  static void check_input() {
    static_assert(X::batched && X::rank >= 2,
                  "BatchNormalization needs batched inputs with a channel axis: Tensor<T, dynamic, ..., channels>.");
  }
  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.gamma, self.beta, self.moving_mean, self.moving_variance);
  }

  double momentum() const { return this->settings().momentum; }
  double epsilon() const { return this->settings().epsilon; }

 private:
  static settings_type checked(settings_type settings) {
    layer_kinds::batch_normalization::check(settings);
    return settings;
  }
};

}  // namespace mixprec
