// The Dense kind: y = activation(x kernel + bias) over the last axis; quantized to int8 (Keras 3's
// Dense.quantize("int8")), y = activation(dequantize(quantize_rows(x) kernel_int8) + bias); in
// float8 (delayed scaling), the product of float8-rounded inputs and kernel (float8_math.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/float8_math.hpp>
#include <mixprec/layers/detail/int8_math.hpp>
#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec::layer_kinds {

struct dense {
  static constexpr std::string_view keras_class = "Dense";
  struct settings {
    std::size_t units = 1;
    kernels::activation activation = kernels::activation::linear;
    bool use_bias = true;
    weight_settings weights = {};
    /// Set by the layer's policy or by quantize(), not by the config's keys.
    quantization_mode quantization = quantization_mode::none;
    /// float8: the length of each amax history (the policy's).
    std::size_t amax_history_length = default_amax_history_length;
  };
  static constexpr unsigned quantizable_modes =
      1u << static_cast<unsigned>(quantization_mode::int8) | 1u << static_cast<unsigned>(quantization_mode::float8);
  using state = detail::no_state;
  /// The pre-activation x kernel + bias, for activations whose gradient needs it; float8: the
  /// float8-rounded inputs and kernel the product ran on.
  template <class C>
  struct saved {
    value_buffer<C> pre_activation;
    value_buffer<C> float8_inputs, float8_kernel;
  };

  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    if (input.empty()) throw std::invalid_argument("Dense needs inputs with a feature axis.");
    std::vector<std::size_t> output(input.begin(), input.end());
    output.back() = s.units;
    return output;
  }
  /// Keras' order: kernel, bias; int8: kernel (int8, frozen), bias, kernel_scale (frozen);
  /// float8: kernel, bias, then a frozen scale (shape ()) and amax history per quantized tensor:
  /// inputs, kernel, outputs_grad.
  static std::vector<detail::weight_spec> weights(const settings& s, std::span<const std::size_t> input) {
    const bool int8 = s.quantization == quantization_mode::int8;
    if (int8 && input.back() > kernels::detail::gemm_int8_max_depth)
      throw std::invalid_argument("Dense: an int8 kernel takes at most " +
                                  std::to_string(kernels::detail::gemm_int8_max_depth) +
                                  " input features (its int8 products are summed in int32); this layer has " +
                                  std::to_string(input.back()) + ".");
    std::vector<detail::weight_spec> specs;
    if (int8) specs.push_back({"kernel", {input.back(), s.units}, initializers::zeros{}, {}, false, false, true});
    else specs.push_back({"kernel", {input.back(), s.units}, s.weights.kernel_initializer, s.weights.kernel_regularizer});
    if (s.use_bias) specs.push_back({"bias", {s.units}, s.weights.bias_initializer, s.weights.bias_regularizer});
    if (int8) specs.push_back({"kernel_scale", {s.units}, initializers::ones{}, {}, false, false});
    if (s.quantization == quantization_mode::float8)
      for (const char* tensor : float8_tensors) {
        specs.push_back({std::string(tensor) + "_scale", {}, initializers::ones{}, {}, false, false});
        specs.push_back({std::string(tensor) + "_amax_history", {s.amax_history_length}, initializers::zeros{}, {}, false, false});
      }
    return specs;
  }
  static constexpr const char* float8_tensors[] = {"inputs", "kernel", "outputs_grad"};

  /// The int8 layer's weights (in weights(int8 settings) order) from the float layer's: per
  /// output column, scale = 127 / (max |kernel| + 1e-7) and kernel_int8 = round(kernel * scale).
  template <class V>
  static std::vector<detail::weight_values<V>> quantized_weights(const settings& s, std::span<const std::size_t> input,
                                                                 std::span<const std::span<const V>> float_weights) {
    std::vector<detail::weight_values<V>> values;
    const auto copy = [](std::span<const V> w) { return detail::weight_values<V>{{w.begin(), w.end()}, {}}; };
    if (s.quantization == quantization_mode::int8) {
      detail::int8_columns<V> kernel = detail::quantize_columns<V>(float_weights[0], input.back(), s.units);
      values.push_back({{}, std::move(kernel.values)});
      if (s.use_bias) values.push_back(copy(float_weights[1]));
      values.push_back({std::move(kernel.scales), {}});
    } else {  // float8: the float weights stay; scales start at 1, histories at 0
      for (const auto& w : float_weights) values.push_back(copy(w));
      for (std::size_t i = 0; i < std::size(float8_tensors); ++i) {
        values.push_back({{cast<V>(1.0)}, {}});
        values.push_back({std::vector<V>(s.amax_history_length, cast<V>(0.0)), {}});
      }
    }
    return values;
  }

  /// The float arithmetic (the layer engine runs quantized_forward on a quantized layer).
  template <class C, class V>
  static void forward(const detail::forward_args<dense, C, V>& a) {
    const std::size_t in = a.shape.last();
    const std::span<C> pre_activation = pre_activation_record(a);
    const std::span<const C> bias_values = bias<C>(a.settings.use_bias, a.weights);
    detail::with_product_weight<C>(a.weights[0].value, a.weights[0].version, in, a.settings.units, a.packed_weight,
                                   [&](const auto& kernel) {
                                     detail::dense_forward<C>(a.x, a.x.size() / in, in, kernel, bias_values,
                                                              a.settings.units, a.settings.activation, a.y,
                                                              pre_activation);
                                   });
  }
  /// int8: y = activation(dequantize(quantize_rows(x) kernel_int8) + bias); float8: forward on
  /// the float8-rounded inputs and kernel (float8_forward).
  template <class C, class V>
  static void quantized_forward(const detail::forward_args<dense, C, V>& a) {
    const std::span<C> pre_activation = pre_activation_record(a);
    if constexpr (quantizable_pair<C, V>(quantization_mode::int8)) {
      if (a.settings.quantization == quantization_mode::int8) {
        const std::size_t in = a.shape.last();
        return detail::int8_dense_forward<C, V>(a.x, a.x.size() / in, in, a.weights[0].int8, a.weights.back().value,
                                                bias<C>(a.settings.use_bias, a.weights), a.settings.units,
                                                a.settings.activation, a.y, pre_activation);
      }
    }
    if constexpr (quantizable_pair<C, V>(quantization_mode::float8)) {
      if (a.settings.quantization == quantization_mode::float8) return float8_forward<C, V>(a, pre_activation);
    }
    throw_not_compiled(a.settings);
  }
  /// Where a training step keeps the pre-activation (for activations whose gradient reads it);
  /// empty when it is not kept.
  template <class C, class V>
  static std::span<C> pre_activation_record(const detail::forward_args<dense, C, V>& a) {
    if (!a.saved || !keeps_pre_activation(a.settings.activation)) return {};
    a.saved->pre_activation.resize(a.y.size());
    return a.saved->pre_activation;
  }

  /// The float arithmetic (the layer engine runs quantized_backward on a quantized layer).
  template <class C, class V>
  static void backward(const detail::backward_args<dense, C, V>& a) {
    const std::size_t in = a.shape.last(), units = a.settings.units;
    const std::span<const C> dz = activation_input_gradient<C>(applied_activation(a), a.saved.pre_activation, a.y, a.dy, units);
    // Read for the input gradient only (none for the first layer, nor in backward_over_input).
    using K = const detail::product_weight_t<C, V>;
    const std::span<K> kernel = a.dx.empty() ? std::span<K>() : detail::product_weight<C>(a.weights[0].value);
    detail::dense_backward<C, V>(a.x, a.x.size() / in, in, kernel, units, dz, a.weight_gradients[0],
                                 bias_gradient_of(a), a.dx);
  }
  /// int8: the kernel is frozen; the input gradient flows through the dequantized kernel
  /// (straight through the inputs' rounding), as in Keras.
  template <class C, class V>
  static void quantized_backward(const detail::backward_args<dense, C, V>& a) {
    const std::size_t in = a.shape.last(), units = a.settings.units;
    const std::span<const C> dz = activation_input_gradient<C>(applied_activation(a), a.saved.pre_activation, a.y, a.dy, units);
    const std::span<V> bias_gradient = bias_gradient_of(a);
    if constexpr (quantizable_pair<C, V>(quantization_mode::int8)) {
      if (a.settings.quantization == quantization_mode::int8) {
        const std::span<const C> kernel =
            a.dx.empty() ? std::span<const C>()
                         : detail::dequantized_kernel<C, V>(a.weights[0].int8, a.weights.back().value, units);
        return detail::dense_backward<C, V>(a.x, a.x.size() / in, in, kernel, units, dz, {}, bias_gradient, a.dx);
      }
    }
    if constexpr (quantizable_pair<C, V>(quantization_mode::float8)) {
      if (a.settings.quantization == quantization_mode::float8) {
        // The bias gradient is dz's; the product's gradients run on dz rounded to float8_e5m2,
        // straight through the rounding of the inputs and the kernel.
        const std::size_t first = float8_first_scale(a.settings);
        const std::span<C> dz_float8 = detail::scratch_buffer<C>(dz.size());
        const float amax = detail::quantize_dequantize_with<float8_e5m2>(dz, a.weights[first + 4].value, dz_float8);
        if (a.training)  // a frozen layer's scales stay (Keras: its variables are not trained)
          detail::update_delayed_scaling<V>(a.weights[first + 4].value, a.weights[first + 5].value, amax,
                                            detail::float8_max<float8_e5m2>, first + 4, a.updates);
        detail::dense_backward<C, V>(a.saved.float8_inputs, a.x.size() / in, in,
                                     std::span<const C>(a.saved.float8_kernel), units, dz_float8,
                                     a.weight_gradients[0], {}, a.dx);
        return detail::dense_backward<C, V>(a.x, a.x.size() / in, in, {}, units, dz, {}, bias_gradient, {});
      }
    }
    throw_not_compiled(a.settings);
  }
  template <class C, class V>
  static std::span<V> bias_gradient_of(const detail::backward_args<dense, C, V>& a) {
    return a.settings.use_bias ? a.weight_gradients[1] : std::span<V>();
  }

  /// backward, its input gradient written over the output the layer below lends (kind.hpp's
  /// lent_output) as that layer's pre-activation gradient (write_lent_gradient), where the
  /// products dz kernel^T are in scratch memory anyway: a 16-bit compute dtype (a float32 one
  /// writes them straight into dx), unquantized. Saves a buffer as large as the input.
  template <class C>
  static bool writes_gradient_over_input(const settings& s) {
    return !std::is_same_v<detail::accumulator_t<C>, C> && s.quantization == quantization_mode::none;
  }
  template <class C, class V>
  static void backward_over_input(const detail::backward_args<dense, C, V>& a, const detail::lent_output<C>& below) {
    backward<C, V>(a);  // the weight gradients (a.dx is empty), dz written over a.dy
    const detail::scratch_scope scope;
    const std::size_t in = a.shape.last();
    const auto products = detail::input_gradient_products<C>(std::span<const C>(a.dy), a.x.size() / in, in,
                                                             detail::product_weight<C>(a.weights[0].value),
                                                             a.settings.units);
    write_lent_gradient<C, detail::accumulator_t<C>>(products, below.activation, below.values);
  }
  /// Writes over `y`, the output a layer lends (kind.hpp's lent_output) whose activation is
  /// `activation`, that layer's pre-activation gradient, given its output gradient dx in the
  /// accumulator dtype A: piece by piece, dx rounded to C in scratch memory, then
  /// activation_input_gradient, copied over y. The bits of the two layers' separate backward
  /// passes (dx rounded to C, then the activation's gradient), without a buffer of y's size.
  template <class C, class A>
  static void write_lent_gradient(std::span<const A> dx, kernels::activation activation, std::span<C> y) {
    constexpr std::size_t piece = std::size_t{1} << 14;
    const detail::scratch_scope scope;
    const std::span<C> rounded = detail::scratch_buffer<C>(std::min(piece, y.size()));
    for (std::size_t first = 0; first < y.size(); first += piece) {
      const std::size_t count = std::min(piece, y.size() - first);
      const std::span<C> gradient = rounded.first(count);
      detail::store_gradient<C, A>(dx.subspan(first, count), gradient);
      // `activation` is lendable, never softmax: the row length does not matter.
      const std::span<const C> dz = activation_input_gradient<C>(activation, {}, y.subspan(first, count), gradient, count);
      std::copy(dz.begin(), dz.end(), y.begin() + static_cast<std::ptrdiff_t>(first));
    }
  }

  /// Where a windowed backward pass (Conv2D, MaxPooling2D) sums a part dx of its input gradient
  /// in the accumulator dtype A: in place when A is C and dx is not the lent output of the layer
  /// below (whose values the activation's gradient reads), else in scratch memory of the
  /// caller's scope. store_input_gradient then writes the sums to dx: rounded once, or as the
  /// lending layer's pre-activation gradient (write_lent_gradient) when there is a `below`.
  template <class C, class A = detail::accumulator_t<C>>
  static std::span<A> input_gradient_sums(std::span<C> dx, const detail::lent_output<C>* below) {
    if constexpr (std::is_same_v<A, C>)
      if (!below) return dx;
    return detail::scratch_buffer<A>(dx.size());
  }
  template <class C, class A>
  static void store_input_gradient(std::span<const A> sums, std::span<C> dx, const detail::lent_output<C>* below) {
    if (below) write_lent_gradient<C, A>(sums, below->activation, dx);
    else detail::store_gradient<C, A>(sums, dx);
  }

  template <class Json>
  static void write_config(const settings& s, Json& config) {
    config["units"] = s.units;
    config["activation"] = kernels::activation_name(s.activation);
    config["use_bias"] = s.use_bias;
    detail::write_weight_settings(s.weights, config);
  }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.units = read.positive("units");
    s.activation = detail::read_activation(read);
    s.use_bias = read.boolean("use_bias", true);
    s.weights = detail::read_weight_settings(read);
    read.unsupported("lora_rank");
    return s;
  }

  /// float8: the product of the inputs and kernel rounded to float8_e4m3fn with their scales;
  /// a training step records both (for backward) and the new scales and histories.
  template <class C, class V>
  static void float8_forward(const detail::forward_args<dense, C, V>& a, std::span<C> pre_activation) {
    const std::size_t in = a.shape.last(), first = float8_first_scale(a.settings);
    const std::span<const C> kernel = detail::converted<C>(a.weights[0].value);
    const auto buffer = [&](value_buffer<C>* kept, std::size_t n) {
      if (!kept) return detail::scratch_buffer<C>(n);
      kept->resize(n);
      return std::span<C>(*kept);
    };
    const std::span<C> inputs = buffer(a.saved ? &a.saved->float8_inputs : nullptr, a.x.size());
    const std::span<C> weights = buffer(a.saved ? &a.saved->float8_kernel : nullptr, kernel.size());
    const float inputs_amax = detail::quantize_dequantize_with<float8_e4m3fn>(a.x, a.weights[first].value, inputs);
    const float kernel_amax = detail::quantize_dequantize_with<float8_e4m3fn>(kernel, a.weights[first + 2].value, weights);
    detail::dense_forward<C>(inputs, a.x.size() / in, in, weights, bias<C>(a.settings.use_bias, a.weights), a.settings.units,
                             a.settings.activation, a.y, pre_activation);
    if (a.saved && a.trainable) {  // Keras updates the scales in training steps of a trained layer only
      constexpr float e4m3_max = detail::float8_max<float8_e4m3fn>;
      detail::update_delayed_scaling<V>(a.weights[first].value, a.weights[first + 1].value, inputs_amax, e4m3_max,
                                        first, a.updates);
      detail::update_delayed_scaling<V>(a.weights[first + 2].value, a.weights[first + 3].value, kernel_amax, e4m3_max,
                                        first + 2, a.updates);
    }
  }
  /// A quantized policy's (compute, variable) pair always has its quantized arithmetic
  /// compiled (KindLayer and the runtime factory check it): reaching this is a bug.
  [[noreturn]] static void throw_not_compiled(const settings& s) {
    throw std::logic_error("Dense: the " + std::string(quantization_mode_name(s.quantization)) +
                           " arithmetic is not compiled for this compute and variable dtype.");
  }
  /// The position of inputs_scale among a float8 layer's weights.
  static std::size_t float8_first_scale(const settings& s) { return s.use_bias ? 2 : 1; }

  // Shared with Conv2D, whose math is Dense's over im2col rows.
  static bool keeps_pre_activation(kernels::activation kind) {
    return kind != kernels::activation::linear && kind != kernels::activation::relu &&
           kind != kernels::activation::softmax;
  }
  /// The bias in C (rounded into scratch memory of the caller's scope when V is not C); empty
  /// without one.
  template <class C, class V>
  static std::span<const C> bias(bool use_bias, std::span<const detail::weight_ref<V>> weights) {
    return use_bias ? detail::converted<C>(weights[1].value) : std::span<const C>();
  }
  /// The activation whose gradient a layer above may apply while writing this layer's
  /// pre-activation gradient over its output (kind.hpp's lent_output): linear and relu, whose
  /// gradients read the output only (relu's output is positive where its input is).
  static std::optional<kernels::activation> lendable_activation(const settings& s) {
    return lendable(s.activation);
  }
  static std::optional<kernels::activation> lendable(kernels::activation kind) {
    if (kind == kernels::activation::linear || kind == kernels::activation::relu) return kind;
    return std::nullopt;
  }
  /// The activation whose gradient the backward pass applies: none (linear) when dy is already
  /// the pre-activation's gradient.
  template <class Args>
  static kernels::activation applied_activation(const Args& a) {
    return a.dy_is_pre_activation_gradient ? kernels::activation::linear : a.settings.activation;
  }
  /// dz = dy act'(z), written over dy (the backward pass owns it: kind.hpp's backward_args).
  template <class C>
  static std::span<const C> activation_input_gradient(kernels::activation kind, std::span<const C> pre_activation,
                                                      std::span<const C> y, std::span<C> dy, std::size_t units) {
    if (kind == kernels::activation::linear) return dy;
    const std::span<const C> at = keeps_pre_activation(kind) ? pre_activation : y;
    detail::activation_gradient<C>(kind, at, y, dy, dy, units);
    return dy;
  }
};

}  // namespace mixprec::layer_kinds
