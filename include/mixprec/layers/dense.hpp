// Dense<Units, Options...>: y = activation(x W + b) over the last axis.
//
//   Dense<10>                                            // the model's policy, linear, with bias
//   Dense<64, activations::relu, policies::mixed_float16>
//   Dense<8, no_bias, no_autocast>
//   Dense<64, QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>>   // int8 kernel
//
// Under mixed_float16 the kernel and bias are float32 (the variable dtype), read as float16
// inside call, and the output is float16. The kernel is [input features, Units], built from
// the first input. An int8 Dense (an int8 policy, or quantize("int8") on a built float Dense)
// holds an int8 kernel and per-unit scales instead, and computes as Keras 3's int8 Dense does
// (layers/detail/int8_math.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/dense.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/layers/regularizers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>

namespace mixprec {

namespace detail {
/// The same extents with the last replaced: the output of a layer acting on the last axis.
template <class X, std::size_t Last>
struct replace_last_extent;
template <class T, std::size_t... E, std::size_t Last>
struct replace_last_extent<Tensor<T, E...>, Last> {
  static constexpr std::array<std::size_t, sizeof...(E)> in{E...};
  template <std::size_t... I>
  static auto make(std::index_sequence<I...>) -> Tensor<T, (I + 1 == sizeof...(E) ? Last : in[I])...>;
  using type = decltype(make(std::make_index_sequence<sizeof...(E)>{}));
};
}  // namespace detail

template <std::size_t Units, class... Options>
class Dense : public KindLayer<Dense<Units, Options...>, layer_kinds::dense, policy_option_t<Options...>,
                               !has_flag_v<no_autocast, Options...>> {
  static_assert(Units > 0, "Dense<Units>: Units must be positive.");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option, detail::is_activation,
                                  detail::is_flag<no_bias>::template of, detail::is_flag<no_autocast>::template of>::value,
                "Dense<Units, Options...>: the options are a dtype policy (policies::...), an activation "
                "(activations::relu, ...), no_bias and no_autocast, each at most once.");
  using base = KindLayer<Dense, layer_kinds::dense, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using activation = find_option_t<detail::is_activation, activations::linear, Options...>;
  static constexpr std::size_t units = Units;
  static constexpr bool use_bias = !has_flag_v<no_bias, Options...>;
  using base::has_own_policy;
  static_assert(ComputeDType<compute_dtype>,
                "Dense computes in float16, bfloat16, float32 or float64: its policy's compute dtype is none of them.");

  /// This layer under `Policy` unless it has a policy of its own (how Sequential applies its policy).
  template <class Policy>
  using with_default_policy = std::conditional_t<has_own_policy, Dense, Dense<Units, Options..., Policy>>;
  /// The output type for an input of type X; void unless X is batched with a feature axis.
  template <class X>
  using output_t = typename std::conditional_t<X::batched && (X::rank >= 2),
                                               detail::replace_last_extent<rebind_tensor_t<X, compute_dtype>, Units>,
                                               std::type_identity<void>>::type;

  explicit Dense(std::string name = "dense", weight_settings settings = {}, bool trainable = true)
      : base(std::move(name), {Units, activation::kind, use_bias, std::move(settings)}, trainable) {}
  /// The same layer under other options (Sequential applies its policy this way).
  template <class... Other>
  explicit Dense(const Dense<Units, Other...>& spec) : Dense(spec.name(), spec.settings().weights, spec.trainable()) {}

  /// The float kernel, [input features, Units] (empty once the layer is int8).
  typename base::template weight_t<dynamic, Units> kernel;
  std::conditional_t<use_bias, typename base::template weight_t<Units>, std::tuple<>> bias;
  /// An int8 layer's kernel, and its per-unit scales (a float8 layer's: the kernel's one scale);
  /// empty while the layer is float. A quantized policy builds them; quantize(mode) makes them
  /// from the float kernel.
  Variable<std::int8_t, dynamic, Units> int8_kernel;
  typename base::template plain_weight_t<dynamic> kernel_scale;
  /// A float8 layer's scales (one value each) and amax histories (delayed scaling).
  typename base::template plain_weight_t<dynamic> inputs_scale, inputs_amax_history, kernel_amax_history,
      outputs_grad_scale, outputs_grad_amax_history;

  template <class X>
  static void check_input() {
    static_assert(X::batched && X::rank >= 2,
                  "Dense needs batched inputs with a feature axis: Tensor<T, dynamic, ..., features>.");
  }
  /// Keras' weights: kernel, bias; int8: kernel (int8), bias, kernel_scale; float8: kernel, bias,
  /// then the scale and amax history of the inputs, the kernel and the output gradient.
  template <class Self, class F>
  static void for_each_weight_of(Self& self, F& f) {
    const quantization_mode mode = self.quantization();
    if (mode == quantization_mode::int8) f(self.int8_kernel);
    else f(self.kernel);
    if constexpr (use_bias) f(self.bias);
    if (mode == quantization_mode::int8) f(self.kernel_scale);
    if (mode == quantization_mode::float8) {
      f(self.inputs_scale);
      f(self.inputs_amax_history);
      f(self.kernel_scale);
      f(self.kernel_amax_history);
      f(self.outputs_grad_scale);
      f(self.outputs_grad_amax_history);
    }
  }

 private:
  friend base;
  void release_float_weights() {
    if (this->quantization() == quantization_mode::int8) kernel = {};
  }
};

}  // namespace mixprec
