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
#include <mixprec/layers/detail/windows.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/conv2d.hpp>
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

}  // namespace detail

template <std::size_t Filters, std::size_t KernelHeight, std::size_t KernelWidth, class... Options>
class Conv2D : public KindLayer<Conv2D<Filters, KernelHeight, KernelWidth, Options...>, layer_kinds::conv2d,
                                policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(Filters > 0 && KernelHeight > 0 && KernelWidth > 0,
                "Conv2D<Filters, KernelHeight, KernelWidth>: all three must be positive.");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option, detail::is_activation,
                                  detail::is_strides, detail::is_padding, detail::is_flag<no_bias>::template of,
                                  detail::is_flag<no_autocast>::template of>::value,
                "Conv2D<Filters, KH, KW, Options...>: the options are a dtype policy, an activation, strides<H, W>, "
                "padding::valid or padding::same, no_bias and no_autocast, each at most once.");
  using base = KindLayer<Conv2D, layer_kinds::conv2d, policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>>;

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

  explicit Conv2D(std::string name = "conv2d", weight_settings settings = {}, bool trainable = true)
      : base(std::move(name),
             {Filters,
              {KernelHeight, KernelWidth, stride::height, stride::width, padding_mode::pads},
              activation::kind,
              use_bias,
              std::move(settings)},
             trainable) {}
  template <class... Other>
  explicit Conv2D(const Conv2D<Filters, KernelHeight, KernelWidth, Other...>& spec)
      : Conv2D(spec.name(), spec.settings().weights, spec.trainable()) {}

  /// [kh, kw, in_channels, Filters]; the first extent is kh * kw * in_channels rows of the GEMM.
  typename base::template weight_t<dynamic, Filters> kernel;
  std::conditional_t<use_bias, typename base::template weight_t<Filters>, std::tuple<>> bias;

  template <class X>
  static void check_input() {
    static_assert(!std::is_void_v<output_t<X>>,
                  "Conv2D needs inputs of shape (batch, height, width, channels) at least as large as its kernel "
                  "(with padding::valid).");
  }
  template <class Self>
  static auto weights_of(Self& self) {
    if constexpr (use_bias) return std::tie(self.kernel, self.bias);
    else return std::tie(self.kernel);
  }
};

}  // namespace mixprec
