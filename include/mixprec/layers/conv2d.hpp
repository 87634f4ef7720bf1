// Conv2D<Filters, KernelHeight, KernelWidth, Options...>: 2-D convolution over NHWC inputs, by
// im2col and the kernels' GEMM. Kernel [kh, kw, in_channels, Filters], bias [Filters].
//
//   Conv2D<32, 3, 3, activations::relu, padding::same, strides<2>>
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/dense.hpp>
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {
/// Output tensor of a 2-D window op over (batch, height, width, channels), or void when the
/// input is not of that shape or the window does not fit.
template <class X, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, bool Same, std::size_t Channels>
struct window_output_tensor {
  using type = void;
};
template <class T, std::size_t H, std::size_t W, std::size_t C, std::size_t KH, std::size_t KW, std::size_t SH,
          std::size_t SW, bool Same, std::size_t Channels>
  requires(window_output(H, KH, SH, Same) > 0 && window_output(W, KW, SW, Same) > 0)
struct window_output_tensor<Tensor<T, dynamic, H, W, C>, KH, KW, SH, SW, Same, Channels> {
  using type = Tensor<T, dynamic, window_output(H, KH, SH, Same), window_output(W, KW, SW, Same),
                      Channels == 0 ? C : Channels>;
};

template <class T, std::size_t H, std::size_t W, std::size_t C>
conv_geometry geometry_of(const Tensor<T, dynamic, H, W, C>& x, std::size_t kh, std::size_t kw, std::size_t sh,
                          std::size_t sw, bool same) {
  return {x.batch(), H, W, C, kh, kw, sh, sw, same};
}
}  // namespace detail

template <std::size_t Filters, std::size_t KernelHeight, std::size_t KernelWidth, class... Options>
class Conv2D : public Layer<Conv2D<Filters, KernelHeight, KernelWidth, Options...>, policy_option_t<Options...>,
                            !has_flag_v<no_autocast, Options...>> {
  static_assert(Filters > 0 && KernelHeight > 0 && KernelWidth > 0,
                "Conv2D<Filters, KernelHeight, KernelWidth>: all three must be positive.");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option, detail::is_activation,
                                  detail::is_strides, detail::is_padding, detail::is_flag<no_bias>::template of,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Conv2D<Filters, KH, KW, Options...>: the options are a dtype policy, an activation, strides<H, W>, "
                "padding::valid or padding::same, no_bias and no_autocast, each at most once.");
  using base = Layer<Conv2D, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;
  using activation = find_option_t<detail::is_activation, activations::linear, Options...>;
  using stride = find_option_t<detail::is_strides, strides<1>, Options...>;
  using padding_mode = find_option_t<detail::is_padding, padding::valid, Options...>;
  static constexpr bool use_bias = !has_flag_v<no_bias, Options...>;
  static_assert(ComputeDType<compute_dtype>,
                "Conv2D computes in float16, bfloat16, float32 or float64: its policy's compute dtype is none of them.");

  template <class Policy>
  using with_default_policy =
      std::conditional_t<has_own_policy, Conv2D, Conv2D<Filters, KernelHeight, KernelWidth, Options..., Policy>>;
  /// void when X is not (batch, height, width, channels) or the kernel does not fit.
  template <class X>
  using output_t = typename detail::window_output_tensor<rebind_tensor_t<X, compute_dtype>, KernelHeight, KernelWidth,
                                                         stride::height, stride::width, padding_mode::pads,
                                                         Filters>::type;

  explicit Conv2D(std::string name = "conv2d", weight_settings settings = {})
      : base(std::move(name)), settings_(std::move(settings)) {}
  template <class... Other>
  explicit Conv2D(const Conv2D<Filters, KernelHeight, KernelWidth, Other...>& spec)
      : Conv2D(spec.name(), spec.settings()) {}

  const weight_settings& settings() const { return settings_; }

  /// [kh, kw, in_channels, Filters]; the first extent is kh * kw * in_channels rows of the GEMM.
  typename base::template weight_t<dynamic, Filters> kernel;
  std::conditional_t<use_bias, typename base::template weight_t<Filters>, std::tuple<>> bias;

  template <class X>
  void build(const X&) {
    static_assert(!std::is_void_v<output_t<X>>,
                  "Conv2D needs inputs of shape (batch, height, width, channels) at least as large as its kernel "
                  "(with padding::valid).");
    constexpr std::size_t channels = X::shape_type::extents[3];
    kernel = this->template add_weight<dynamic, Filters>("kernel", {KernelHeight, KernelWidth, channels, Filters},
                                                         settings_.kernel_initializer);
    detail::apply_regularizer(kernel, settings_.kernel_regularizer);
    if constexpr (use_bias) {
      bias = this->template add_weight<Filters>("bias", settings_.bias_initializer);
      detail::apply_regularizer(bias, settings_.bias_regularizer);
    }
  }

  template <class X>
  output_t<X> call(const call_context<policy>& context, const X& x) {
    static_assert(std::is_same_v<typename X::dtype, compute_dtype>,
                  "Conv2D with no_autocast received inputs in another dtype than its compute dtype: convert them "
                  "first.");
    output_t<X> y(x.batch(), uninitialized);
    std::span<const compute_dtype> bias_values;
    if constexpr (use_bias) bias_values = context.read(bias).values();
    detail::conv2d_forward<compute_dtype>(
        x.values(),
        detail::geometry_of(x, KernelHeight, KernelWidth, stride::height, stride::width, padding_mode::pads),
        context.read(kernel).values(), bias_values, Filters, activation::kind, y.values());
    return y;
  }

  template <class Self>
  static auto weights_of(Self& self) {
    if constexpr (use_bias) return std::tie(self.kernel, self.bias);
    else return std::tie(self.kernel);
  }

  static constexpr std::string_view keras_class = "Conv2D";
  nlohmann::ordered_json keras_config() const {
    return detail::conv2d_config(Filters, KernelHeight, KernelWidth, stride::height, stride::width, padding_mode::pads,
                                 activation::kind, use_bias);
  }

 private:
  weight_settings settings_;
};

}  // namespace mixprec
