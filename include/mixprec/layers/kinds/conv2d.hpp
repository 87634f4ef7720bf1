// The Conv2D kind: 2-D convolution over NHWC inputs, by im2col and Dense's arithmetic (kernel
// [kh, kw, in_channels, filters], stored as a (kh kw in) x filters matrix); backward by the
// transposed products and col2im.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/limits.hpp>

#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/detail/windows.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/kinds/dense.hpp>

namespace mixprec::layer_kinds {

/// A 2-D window: its size, strides and padding (Conv2D's kernel, MaxPooling2D's pool).
struct window {
  std::size_t height = 1, width = 1, stride_height = 1, stride_width = 1;
  bool same = false;

  detail::conv_geometry geometry(const detail::call_shape& shape) const {
    return {shape.batch, shape.features[0], shape.features[1], shape.features[2], height, width, stride_height,
            stride_width, same};
  }
  /// The output extents for an input (height, width, channels); `channels` 0 keeps the input's.
  std::vector<std::size_t> output_shape(std::string_view layer, std::span<const std::size_t> input,
                                        std::size_t channels) const {
    if (input.size() != 3)
      throw std::invalid_argument(std::string(layer) + " needs inputs of shape (batch, height, width, channels).");
    const std::size_t oh = detail::window_output(input[0], height, stride_height, same);
    const std::size_t ow = detail::window_output(input[1], width, stride_width, same);
    if (oh == 0 || ow == 0)
      throw std::invalid_argument(std::string(layer) + ": the " + std::to_string(height) + "x" + std::to_string(width) +
                                  " window does not fit the input (padding valid).");
    return {oh, ow, channels == 0 ? input[2] : channels};
  }
  void write_config(const char* size_key, nlohmann::ordered_json& config) const {
    config[size_key] = {height, width};
    config["strides"] = {stride_height, stride_width};
    config["padding"] = same ? "same" : "valid";
    config["data_format"] = "channels_last";
  }
  /// Reads the window; strides default to the window itself when `strides_default_to_size`
  /// (pooling), else to 1.
  static window read_config(detail::config_reader& read, const char* size_key,
                            std::optional<std::pair<std::size_t, std::size_t>> size_default,
                            bool strides_default_to_size) {
    static constexpr std::array<std::string_view, 2> paddings{"valid", "same"};
    static constexpr std::array<std::string_view, 1> formats{"channels_last"};
    window w;
    std::tie(w.height, w.width) = read.pair(size_key, size_default);
    std::tie(w.stride_height, w.stride_width) =
        read.pair("strides", strides_default_to_size ? std::pair{w.height, w.width} : std::pair<std::size_t, std::size_t>{1, 1});
    w.same = read.choice("padding", paddings) == "same";
    read.choice("data_format", formats);
    return w;
  }
};

struct conv2d {
  static constexpr std::string_view keras_class = "Conv2D";
  struct settings {
    std::size_t filters = 1;
    layer_kinds::window window = {};
    kernels::activation activation = kernels::activation::linear;
    bool use_bias = true;
    weight_settings weights = {};
  };
  using state = detail::no_state;
  template <class C>
  using saved = dense::saved<C>;

  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    return s.window.output_shape("Conv2D", input, s.filters);
  }
  /// The im2col columns of one sample: a row of kh kw channels per output pixel (checked; the
  /// input shape was).
  static std::size_t scratch_per_sample(const settings& s, std::span<const std::size_t> input) {
    const std::vector<std::size_t> output = output_shape(s, input);
    const std::size_t extents[] = {output[0], output[1], s.window.height, s.window.width, input[2]};
    return detail::checked_product(extents, "the im2col columns of one sample");
  }
  static std::vector<detail::weight_spec> weights(const settings& s, std::span<const std::size_t> input) {
    std::vector<detail::weight_spec> specs{{"kernel",
                                            {s.window.height, s.window.width, input[2], s.filters},
                                            s.weights.kernel_initializer,
                                            s.weights.kernel_regularizer}};
    if (s.use_bias) specs.push_back({"bias", {s.filters}, s.weights.bias_initializer, s.weights.bias_regularizer});
    return specs;
  }

  template <class C, class V>
  static void forward(const detail::forward_args<conv2d, C, V>& a) {
    const detail::conv_geometry g = a.settings.window.geometry(a.shape);
    const std::size_t rows = g.batch * g.out_height() * g.out_width();
    const std::span<C> columns = detail::scratch_buffer<C, columns_buffer>(rows * g.patch());
    detail::im2col<C>(a.x, g, columns);
    std::span<C> pre_activation;
    if (a.saved && dense::keeps_pre_activation(a.settings.activation)) {
      a.saved->pre_activation.resize(a.y.size());
      pre_activation = a.saved->pre_activation;
    }
    detail::dense_forward<C>(columns, rows, g.patch(), a.weights[0].read, dense::bias(a.settings.use_bias, a.weights),
                             a.settings.filters, a.settings.activation, a.y, pre_activation);
  }

  /// The columns are rebuilt from x rather than kept from the forward pass: they are kh kw times
  /// the input's size.
  template <class C, class V>
  static void backward(const detail::backward_args<conv2d, C, V>& a) {
    const detail::conv_geometry g = a.settings.window.geometry(a.shape);
    const std::size_t rows = g.batch * g.out_height() * g.out_width(), patch = g.patch();
    const std::span<const C> dz =
        dense::activation_input_gradient(a.settings.activation, a.saved, a.y, a.dy, a.settings.filters);
    const std::span<C> columns = detail::scratch_buffer<C, columns_buffer>(rows * patch);
    detail::im2col<C>(a.x, g, columns);
    detail::dense_backward<C, V>(columns, rows, patch, a.weights[0].read, a.settings.filters, dz, a.weight_gradients[0],
                                 a.settings.use_bias ? a.weight_gradients[1] : std::span<V>(), std::span<C>());
    if (a.dx.empty()) return;
    using A = detail::accumulator_t<C>;
    const std::span<A> sums = detail::scratch_buffer<A, input_gradient_buffer>(a.dx.size());
    detail::col2im<A>(detail::input_gradient_products<C>(dz, rows, patch, a.weights[0].read, a.settings.filters), g,
                      sums);
    detail::store_gradient<C, A>(sums, a.dx);
  }

  static void write_config(const settings& s, nlohmann::ordered_json& config) {
    config["filters"] = s.filters;
    s.window.write_config("kernel_size", config);
    config["dilation_rate"] = {1, 1};
    config["groups"] = 1;
    config["activation"] = kernels::activation_name(s.activation);
    config["use_bias"] = s.use_bias;
    detail::write_weight_settings(s.weights, config);
  }
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.filters = read.positive("filters");
    s.window = window::read_config(read, "kernel_size", std::nullopt, false);
    read.unsupported("dilation_rate", nlohmann::json::array({1, 1}));
    read.unsupported("groups", 1);
    s.activation = detail::read_activation(read);
    s.use_bias = read.boolean("use_bias", true);
    s.weights = detail::read_weight_settings(read);
    read.unsupported("lora_rank");
    return s;
  }

 private:
  struct columns_buffer;
  struct input_gradient_buffer;
};

}  // namespace mixprec::layer_kinds
