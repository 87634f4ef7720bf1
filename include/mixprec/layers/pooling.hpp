// MaxPooling2D<PoolHeight, PoolWidth, Options...>: the maximum over each window (NHWC).
// Strides default to the pool size (Keras). A window holding a NaN gives NaN.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>

#include <mixprec/layers/conv2d.hpp>
#include <mixprec/layers/kind_layer.hpp>
#include <mixprec/layers/kinds/max_pooling2d.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <std::size_t PoolHeight = 2, std::size_t PoolWidth = PoolHeight, class... Options>
class MaxPooling2D : public KindLayer<MaxPooling2D<PoolHeight, PoolWidth, Options...>, layer_kinds::max_pooling2d,
                                     policy_option_t<Options...>, !has_flag_v<no_autocast, Options...>> {
  static_assert(PoolHeight > 0 && PoolWidth > 0, "MaxPooling2D<H, W>: the pool size must be positive.");
  static_assert(options_are_valid<std::tuple<Options...>, detail::is_policy_option, detail::is_strides,
                                  detail::is_padding, detail::is_flag<no_autocast>::template of>::value,
                "MaxPooling2D<H, W, Options...>: the options are a dtype policy, strides<H, W>, padding::valid or "
                "padding::same and no_autocast, each at most once.");
  using base = KindLayer<MaxPooling2D, layer_kinds::max_pooling2d, policy_option_t<Options...>,
                         !has_flag_v<no_autocast, Options...>>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using base::has_own_policy;
  using stride = find_option_t<detail::is_strides, strides<PoolHeight, PoolWidth>, Options...>;
  using padding_mode = find_option_t<detail::is_padding, padding::valid, Options...>;

  template <class Policy>
  using with_default_policy =
      std::conditional_t<has_own_policy, MaxPooling2D, MaxPooling2D<PoolHeight, PoolWidth, Options..., Policy>>;
  template <class X>
  using output_t = typename detail::window_output_tensor<rebind_tensor_t<X, compute_dtype>, PoolHeight, PoolWidth,
                                                         stride::height, stride::width, padding_mode::pads, 0>::type;

  explicit MaxPooling2D(std::string name = "max_pooling2d", bool trainable = true)
      : base(std::move(name), {{PoolHeight, PoolWidth, stride::height, stride::width, padding_mode::pads}}, trainable) {}
  template <class... Other>
  explicit MaxPooling2D(const MaxPooling2D<PoolHeight, PoolWidth, Other...>& spec)
      : MaxPooling2D(spec.name(), spec.trainable()) {}

  template <class X>
  static void check_input() {
    static_assert(!std::is_void_v<output_t<X>>,
                  "MaxPooling2D needs inputs of shape (batch, height, width, channels) at least as large as its pool "
                  "(with padding::valid).");
  }
};

}  // namespace mixprec
