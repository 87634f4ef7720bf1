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
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class... Options>
class BatchNormalization : public Layer<BatchNormalization<Options...>, policy_option_t<Options...>,
                                        !has_flag_v<no_autocast, Options...>> {
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option,
                                  detail::is_flag<no_autocast>::template of>::value,
                "BatchNormalization<Options...>: the options are a dtype policy and no_autocast, each at most once.");
  using base = Layer<BatchNormalization, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using typename base::variable_dtype;
  using base::has_own_policy;
  static_assert(ComputeDType<compute_dtype> && ComputeDType<variable_dtype>,
                "BatchNormalization computes in float16, bfloat16, float32 or float64.");
  /// The dtype of the statistics and of the normalization arithmetic.
  using statistics_dtype =
      std::conditional_t<std::is_same_v<compute_dtype, double> || std::is_same_v<variable_dtype, double>, double,
                         float>;

  template <class Policy>
  using with_default_policy =
      std::conditional_t<has_own_policy, BatchNormalization, BatchNormalization<Options..., Policy>>;
  template <class X>
  using output_t = rebind_tensor_t<X, compute_dtype>;

  explicit BatchNormalization(std::string name = "batch_normalization", double momentum = 0.99,
                              double epsilon = 1e-3)
      : base(std::move(name)), momentum_(momentum), epsilon_(epsilon) {
    if (!(momentum >= 0.0 && momentum <= 1.0))
      throw std::invalid_argument("BatchNormalization: momentum must be in [0, 1]; got " + std::to_string(momentum) + ".");
    if (!(epsilon > 0.0))
      throw std::invalid_argument("BatchNormalization: epsilon must be positive; got " + std::to_string(epsilon) + ".");
  }
  template <class... Other>
  explicit BatchNormalization(const BatchNormalization<Other...>& spec)
      : BatchNormalization(spec.name(), spec.momentum(), spec.epsilon()) {}

  typename base::template plain_weight_t<dynamic> gamma, beta, moving_mean, moving_variance;

  template <class X>
  void build(const X&) {
    static_assert(X::batched && X::rank >= 2,
                  "BatchNormalization needs batched inputs with a channel axis: Tensor<T, dynamic, ..., channels>.");
    constexpr std::size_t channels = X::shape_type::extents[X::rank - 1];
    gamma = this->template add_weight<dynamic>("gamma", {channels}, initializers::ones{}, no_autocast{});
    beta = this->template add_weight<dynamic>("beta", {channels}, initializers::zeros{}, no_autocast{});
    moving_mean =
        this->template add_weight<dynamic>("moving_mean", {channels}, initializers::zeros{}, no_autocast{}, not_trainable{});
    moving_variance = this->template add_weight<dynamic>("moving_variance", {channels}, initializers::ones{},
                                                         no_autocast{}, not_trainable{});
  }

  template <class X>
  output_t<X> call(const call_context<policy>& context, const X& x) {
    static_assert(std::is_same_v<typename X::dtype, compute_dtype>,
                  "BatchNormalization with no_autocast received inputs in another dtype than its compute dtype.");
    output_t<X> y(x.batch(), uninitialized);
    detail::batch_norm_call<compute_dtype, statistics_dtype>(x.values(), X::shape_type::extents[X::rank - 1], gamma,
                                                            beta, moving_mean, moving_variance, context.training(),
                                                            momentum_, epsilon_, y.values());
    return y;
  }

  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.gamma, self.beta, self.moving_mean, self.moving_variance);
  }

  static constexpr std::string_view keras_class = "BatchNormalization";
  nlohmann::ordered_json keras_config() const { return detail::batch_normalization_config(momentum_, epsilon_); }

  double momentum() const { return momentum_; }
  double epsilon() const { return epsilon_; }

 private:
  double momentum_;
  double epsilon_;
};

}  // namespace mixprec
