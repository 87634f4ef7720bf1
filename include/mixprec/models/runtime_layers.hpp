// The runtime model's layers. A layer is created from a Keras layer config; its policy, read
// at run time, picks a compiled instantiation once (DTypePolicy::visit), and from then on it
// runs the same arithmetic as the compile-time layers (layers/detail/compute.hpp), so a runtime
// model and a compile-time model with the same weights and policies agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/policy.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/compute.hpp>
#include <mixprec/layers/detail/configs.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/serialization.hpp>

namespace mixprec {

class RuntimeLayer {
 public:
  RuntimeLayer(std::string name, DTypePolicy policy) : name_(std::move(name)), policy_(std::move(policy)) {}
  virtual ~RuntimeLayer() = default;
  RuntimeLayer(const RuntimeLayer&) = delete;
  RuntimeLayer& operator=(const RuntimeLayer&) = delete;

  const std::string& name() const { return name_; }
  const DTypePolicy& dtype_policy() const { return policy_; }
  virtual std::string_view class_name() const = 0;
  /// Creates the weights for inputs of these extents (batch excluded) and returns the output
  /// extents; throws std::invalid_argument when the layer cannot take such inputs.
  virtual std::vector<std::size_t> build(const std::vector<std::size_t>& input) = 0;
  virtual AnyTensor call(const AnyTensor& x, bool training) = 0;
  /// The layer's Keras config (name, dtype and its own settings).
  nlohmann::ordered_json config() const {
    nlohmann::ordered_json result = {{"name", name_}, {"dtype", dtype_policies::serialize(policy_)}};
    result.update(settings());
    return result;
  }
  /// Handles on the weights, with paths "<prefix><layer name>/<weight name>".
  virtual std::vector<weight_handle> weights(const std::string&) { return {}; }

 protected:
  virtual nlohmann::ordered_json settings() const = 0;

  /// The input in the compute dtype C (Keras' autocast), viewed without a copy when it is C.
  template <class C>
  struct compute_input {
    explicit compute_input(const AnyTensor& x) {
      if (x.holds<C>()) {
        values = x.values<C>();
      } else {
        converted = x.values_as<C>();
        values = converted;
      }
    }
    value_buffer<C> converted;
    std::span<const C> values;
  };

 private:
  std::string name_;
  DTypePolicy policy_;
};

namespace detail {

template <class V, class C>
using runtime_weight = AutoCastVariable<V, C, dynamic>;

/// A runtime weight with the same initial values a compile-time layer of that name would draw.
template <class V, class C, class Initializer>
runtime_weight<V, C> make_runtime_weight(const std::string& layer, const std::string& weight,
                                         std::vector<std::size_t> shape, const Initializer& initializer,
                                         bool trainable = true) {
  auto values = initial_values<V>(initializer, shape, layer + "/" + weight);
  return runtime_weight<V, C>(weight, Tensor<V, dynamic>(std::move(values)), std::move(shape), trainable);
}

template <class Weight>
weight_handle runtime_handle(const std::string& prefix, const std::string& layer, Weight& weight) {
  return handle_of(prefix + layer + "/" + weight.name(), weight);
}

inline std::size_t product(const std::vector<std::size_t>& extents) {
  return std::accumulate(extents.begin(), extents.end(), std::size_t{1}, std::multiplies<>());
}

inline std::vector<std::size_t> with_batch(std::size_t batch, const std::vector<std::size_t>& features) {
  std::vector<std::size_t> extents{batch};
  extents.insert(extents.end(), features.begin(), features.end());
  return extents;
}

inline std::string shape_text(const std::vector<std::size_t>& features) {
  std::string text = "(batch";
  for (auto e : features) text += ", " + std::to_string(e);
  return text + ")";
}

}  // namespace detail

/// Dense over the last axis; C compute, V variable dtype.
template <class C, class V>
class RuntimeDense final : public RuntimeLayer {
 public:
  RuntimeDense(std::string name, DTypePolicy policy, std::size_t units, activation_kind activation, bool use_bias)
      : RuntimeLayer(std::move(name), std::move(policy)), units_(units), activation_(activation), use_bias_(use_bias) {}
  std::string_view class_name() const override { return "Dense"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override {
    if (input.empty()) throw std::invalid_argument("Dense needs inputs with a feature axis; got " + detail::shape_text(input) + ".");
    in_ = input.back();
    kernel_ = detail::make_runtime_weight<V, C>(name(), "kernel", {in_, units_}, initializers::glorot_uniform{});
    if (use_bias_) bias_ = detail::make_runtime_weight<V, C>(name(), "bias", {units_}, initializers::zeros{});
    auto output = input;
    output.back() = units_;
    return output;
  }
  AnyTensor call(const AnyTensor& x, bool) override {
    const compute_input<C> input(x);
    const std::size_t rows = x.size() / in_;
    value_buffer<C> y(rows * units_);
    std::span<const C> bias;
    if (use_bias_) bias = bias_.compute_value().values();
    detail::dense_forward<C>(input.values, rows, in_, kernel_.compute_value().values(), bias, units_, activation_, y);
    auto extents = x.extents();
    extents.back() = units_;
    return AnyTensor(std::move(extents), std::move(y));
  }
  std::vector<weight_handle> weights(const std::string& prefix) override {
    std::vector<weight_handle> handles{detail::runtime_handle(prefix, name(), kernel_)};
    if (use_bias_) handles.push_back(detail::runtime_handle(prefix, name(), bias_));
    return handles;
  }

 private:
  nlohmann::ordered_json settings() const override { return detail::dense_config(units_, activation_, use_bias_); }
  std::size_t units_;
  activation_kind activation_;
  bool use_bias_;
  std::size_t in_ = 0;
  detail::runtime_weight<V, C> kernel_, bias_;
};

/// Activation / Softmax.
template <class C>
class RuntimeActivation final : public RuntimeLayer {
 public:
  RuntimeActivation(std::string name, DTypePolicy policy, activation_kind activation, bool softmax_layer)
      : RuntimeLayer(std::move(name), std::move(policy)), activation_(activation), softmax_layer_(softmax_layer) {}
  std::string_view class_name() const override { return softmax_layer_ ? "Softmax" : "Activation"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override {
    if (input.empty()) throw std::invalid_argument("an activation needs inputs with a feature axis.");
    cols_ = input.back();
    return input;
  }
  AnyTensor call(const AnyTensor& x, bool) override {
    const compute_input<C> input(x);
    value_buffer<C> y(x.size());
    detail::activate<C>(activation_, input.values, y, cols_);
    return AnyTensor(x.extents(), std::move(y));
  }

 private:
  nlohmann::ordered_json settings() const override {
    if (softmax_layer_) return {{"axis", -1}};
    return detail::activation_config(activation_);
  }
  activation_kind activation_;
  bool softmax_layer_;
  std::size_t cols_ = 1;
};

template <class C>
class RuntimeFlatten final : public RuntimeLayer {
 public:
  using RuntimeLayer::RuntimeLayer;
  std::string_view class_name() const override { return "Flatten"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override { return {detail::product(input)}; }
  AnyTensor call(const AnyTensor& x, bool) override {
    const std::size_t batch = x.batch();
    return AnyTensor({batch, batch ? x.size() / batch : 0}, x.values_as<C>());
  }

 private:
  nlohmann::ordered_json settings() const override { return detail::flatten_config(); }
};

struct window_settings {
  std::size_t height, width, stride_height, stride_width;
  bool same;
};

inline std::vector<std::size_t> window_build(std::string_view layer, const std::vector<std::size_t>& input,
                                             const window_settings& w, std::size_t channels) {
  if (input.size() != 3)
    throw std::invalid_argument(std::string(layer) + " needs inputs of shape (batch, height, width, channels); got " +
                                detail::shape_text(input) + ".");
  const std::size_t oh = detail::window_output(input[0], w.height, w.stride_height, w.same);
  const std::size_t ow = detail::window_output(input[1], w.width, w.stride_width, w.same);
  if (oh == 0 || ow == 0)
    throw std::invalid_argument(std::string(layer) + ": the " + std::to_string(w.height) + "x" + std::to_string(w.width) +
                                " window does not fit the " + detail::shape_text(input) + " input (padding valid).");
  return {oh, ow, channels == 0 ? input[2] : channels};
}

template <class C, class V>
class RuntimeConv2D final : public RuntimeLayer {
 public:
  RuntimeConv2D(std::string name, DTypePolicy policy, std::size_t filters, window_settings window,
                activation_kind activation, bool use_bias)
      : RuntimeLayer(std::move(name), std::move(policy)),
        filters_(filters), window_(window), activation_(activation), use_bias_(use_bias) {}
  std::string_view class_name() const override { return "Conv2D"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override {
    auto output = window_build("Conv2D", input, window_, filters_);
    input_ = input;
    kernel_ = detail::make_runtime_weight<V, C>(name(), "kernel", {window_.height, window_.width, input[2], filters_},
                                                initializers::glorot_uniform{});
    if (use_bias_) bias_ = detail::make_runtime_weight<V, C>(name(), "bias", {filters_}, initializers::zeros{});
    return output;
  }
  AnyTensor call(const AnyTensor& x, bool) override {
    const compute_input<C> input(x);
    const detail::conv_geometry g{x.batch(), input_[0], input_[1], input_[2], window_.height, window_.width,
                                  window_.stride_height, window_.stride_width, window_.same};
    value_buffer<C> y(g.batch * g.out_height() * g.out_width() * filters_);
    std::span<const C> bias;
    if (use_bias_) bias = bias_.compute_value().values();
    detail::conv2d_forward<C>(input.values, g, kernel_.compute_value().values(), bias, filters_, activation_, y);
    return AnyTensor({g.batch, g.out_height(), g.out_width(), filters_}, std::move(y));
  }
  std::vector<weight_handle> weights(const std::string& prefix) override {
    std::vector<weight_handle> handles{detail::runtime_handle(prefix, name(), kernel_)};
    if (use_bias_) handles.push_back(detail::runtime_handle(prefix, name(), bias_));
    return handles;
  }

 private:
  nlohmann::ordered_json settings() const override {
    return detail::conv2d_config(filters_, window_.height, window_.width, window_.stride_height, window_.stride_width,
                                 window_.same, activation_, use_bias_);
  }
  std::size_t filters_;
  window_settings window_;
  activation_kind activation_;
  bool use_bias_;
  std::vector<std::size_t> input_;
  detail::runtime_weight<V, C> kernel_, bias_;
};

template <class C>
class RuntimeMaxPooling2D final : public RuntimeLayer {
 public:
  RuntimeMaxPooling2D(std::string name, DTypePolicy policy, window_settings window)
      : RuntimeLayer(std::move(name), std::move(policy)), window_(window) {}
  std::string_view class_name() const override { return "MaxPooling2D"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override {
    auto output = window_build("MaxPooling2D", input, window_, 0);
    input_ = input;
    return output;
  }
  AnyTensor call(const AnyTensor& x, bool) override {
    const compute_input<C> input(x);
    const detail::conv_geometry g{x.batch(), input_[0], input_[1], input_[2], window_.height, window_.width,
                                  window_.stride_height, window_.stride_width, window_.same};
    value_buffer<C> y(g.batch * g.out_height() * g.out_width() * g.channels);
    detail::max_pool2d<C>(input.values, g, y);
    return AnyTensor({g.batch, g.out_height(), g.out_width(), g.channels}, std::move(y));
  }

 private:
  nlohmann::ordered_json settings() const override {
    return detail::window_config("pool_size", window_.height, window_.width, window_.stride_height,
                                 window_.stride_width, window_.same);
  }
  window_settings window_;
  std::vector<std::size_t> input_;
};

template <class C, class V>
class RuntimeBatchNormalization final : public RuntimeLayer {
  using S = std::conditional_t<std::is_same_v<C, double> || std::is_same_v<V, double>, double, float>;

 public:
  RuntimeBatchNormalization(std::string name, DTypePolicy policy, double momentum, double epsilon)
      : RuntimeLayer(std::move(name), std::move(policy)), momentum_(momentum), epsilon_(epsilon) {}
  std::string_view class_name() const override { return "BatchNormalization"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override {
    if (input.empty()) throw std::invalid_argument("BatchNormalization needs inputs with a channel axis.");
    channels_ = input.back();
    gamma_ = detail::make_runtime_weight<V, V>(name(), "gamma", {channels_}, initializers::ones{});
    beta_ = detail::make_runtime_weight<V, V>(name(), "beta", {channels_}, initializers::zeros{});
    moving_mean_ = detail::make_runtime_weight<V, V>(name(), "moving_mean", {channels_}, initializers::zeros{}, false);
    moving_variance_ =
        detail::make_runtime_weight<V, V>(name(), "moving_variance", {channels_}, initializers::ones{}, false);
    return input;
  }
  AnyTensor call(const AnyTensor& x, bool training) override {
    const compute_input<C> input(x);
    value_buffer<C> y(x.size());
    detail::batch_norm_call<C, S>(input.values, channels_, gamma_, beta_, moving_mean_, moving_variance_, training,
                                  momentum_, epsilon_, std::span(y));
    return AnyTensor(x.extents(), std::move(y));
  }
  std::vector<weight_handle> weights(const std::string& prefix) override {
    return {detail::runtime_handle(prefix, name(), gamma_), detail::runtime_handle(prefix, name(), beta_),
            detail::runtime_handle(prefix, name(), moving_mean_), detail::runtime_handle(prefix, name(), moving_variance_)};
  }

 private:
  nlohmann::ordered_json settings() const override { return detail::batch_normalization_config(momentum_, epsilon_); }
  double momentum_, epsilon_;
  std::size_t channels_ = 0;
  detail::runtime_weight<V, V> gamma_, beta_, moving_mean_, moving_variance_;
};

template <class C>
class RuntimeDropout final : public RuntimeLayer {
 public:
  RuntimeDropout(std::string name, DTypePolicy policy, double rate, std::uint64_t seed)
      : RuntimeLayer(std::move(name), std::move(policy)), rate_(rate), seed_(seed), rng_(seed) {}
  std::string_view class_name() const override { return "Dropout"; }
  std::vector<std::size_t> build(const std::vector<std::size_t>& input) override { return input; }
  AnyTensor call(const AnyTensor& x, bool training) override {
    auto y = x.values_as<C>();
    if (training) detail::dropout_in_place<C>(std::span(y), rate_, rng_);
    return AnyTensor(x.extents(), std::move(y));
  }

 private:
  nlohmann::ordered_json settings() const override { return detail::dropout_config(rate_, seed_); }
  double rate_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace mixprec
