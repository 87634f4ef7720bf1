// The BatchNormalization kind, over the last axis, computed in float32 (float64 for float64
// layers) whatever the compute dtype: y = (x - mean) / sqrt(variance + epsilon) * gamma + beta.
// Training uses the batch's mean and biased variance and moves the moving statistics
// (m = m momentum + batch (1 - momentum)); inference, and a frozen layer (Keras 3), use the moving
// statistics. Its weights are never autocast.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/normalization.hpp>
#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::layer_kinds {

struct batch_normalization {
  static constexpr std::string_view keras_class = "BatchNormalization";
  struct settings {
    /// The normalized axis as a config gives it: -1, or its index counting the batch axis (what
    /// tf.keras 2 writes, as a list of one: [3] for NHWC images). It must be the last axis.
    std::int64_t axis = -1;
    double momentum = 0.99;
    double epsilon = 1e-3;
    initializers::any gamma_initializer = initializers::ones{};
    initializers::any beta_initializer = initializers::zeros{};
    initializers::any moving_mean_initializer = initializers::zeros{};
    initializers::any moving_variance_initializer = initializers::ones{};
    std::optional<regularizers::any> gamma_regularizer = std::nullopt;
    std::optional<regularizers::any> beta_regularizer = std::nullopt;
  };
  using state = detail::no_state;
  /// The statistics the output was normalized with, per channel.
  template <class C>
  struct saved {
    std::vector<double> mean, inverse_deviation;
  };
  enum weight_index : std::size_t { gamma, beta, moving_mean, moving_variance };
  /// float32, or float64 when either dtype is.
  template <class C, class V>
  using statistics_t = std::conditional_t<std::is_same_v<C, double> || std::is_same_v<V, double>, double, float>;

  static void check(const settings& s) {
    if (!(s.momentum >= 0.0 && s.momentum <= 1.0))
      throw std::invalid_argument("BatchNormalization: momentum must be in [0, 1]; got " + detail::number_text(s.momentum) + ".");
    if (!(s.epsilon > 0.0))
      throw std::invalid_argument("BatchNormalization: epsilon must be positive; got " + detail::number_text(s.epsilon) + ".");
  }

  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    if (input.empty()) throw std::invalid_argument("BatchNormalization needs inputs with a channel axis.");
    detail::check_last_axis(s.axis, input, "BatchNormalization normalizes");
    return {input.begin(), input.end()};
  }
  static std::vector<detail::weight_spec> weights(const settings& s, std::span<const std::size_t> input) {
    const std::size_t channels = input.back();
    return {{"gamma", {channels}, s.gamma_initializer, s.gamma_regularizer, true, false},
            {"beta", {channels}, s.beta_initializer, s.beta_regularizer, true, false},
            {"moving_mean", {channels}, s.moving_mean_initializer, std::nullopt, false, false},
            {"moving_variance", {channels}, s.moving_variance_initializer, std::nullopt, false, false}};
  }

  template <class C, class V>
  static void forward(const detail::forward_args<batch_normalization, C, V>& a) {
    using S = statistics_t<C, V>;
    const std::size_t channels = a.shape.last();
    const std::span<const S> x = detail::converted<S>(a.x);
    std::vector<S> mean(channels), variance(channels);
    if (a.training && a.trainable) {
      if (x.empty()) throw std::invalid_argument("BatchNormalization: training needs a non-empty batch.");
      std::vector<double> batch_mean(channels), batch_variance(channels);
      kernels::batch_norm_moments<S>(x, channels, batch_mean, batch_variance);
      for (std::size_t c = 0; c < channels; ++c) {
        mean[c] = static_cast<S>(batch_mean[c]);
        variance[c] = static_cast<S>(batch_variance[c]);
      }
      const auto m = static_cast<S>(a.settings.momentum);
      for (std::size_t index : {moving_mean, moving_variance}) {
        const std::vector<S>& batch = index == moving_mean ? mean : variance;
        const std::vector<S> moving = wide<V, S>(a.weights[index].value);
        std::vector<V> updated(channels);
        for (std::size_t c = 0; c < channels; ++c) updated[c] = cast<V>(static_cast<S>(moving[c] * m + batch[c] * (S(1) - m)));
        a.updates.push_back({index, std::move(updated)});
      }
    } else {
      mean = wide<V, S>(a.weights[moving_mean].value);
      variance = wide<V, S>(a.weights[moving_variance].value);
    }
    const std::vector<S> g = wide<V, S>(a.weights[gamma].value), b = wide<V, S>(a.weights[beta].value);
    const auto eps = static_cast<S>(a.settings.epsilon);
    std::vector<S> scale(channels), shift(channels);
    for (std::size_t c = 0; c < channels; ++c) {
      scale[c] = g[c] / std::sqrt(variance[c] + eps);
      shift[c] = b[c] - mean[c] * scale[c];
    }
    if constexpr (std::is_same_v<C, S>) {
      kernels::scale_shift_columns<S>(x, scale, shift, a.y);
    } else {
      const std::span<S> y = detail::scratch_buffer<S>(a.y.size());
      kernels::scale_shift_columns<S>(x, scale, shift, y);
      kernels::convert<S, C>(y, a.y);
    }
    if (a.saved) {
      a.saved->mean.assign(mean.begin(), mean.end());
      a.saved->inverse_deviation.resize(channels);
      for (std::size_t c = 0; c < channels; ++c)
        a.saved->inverse_deviation[c] = static_cast<double>(S(1) / std::sqrt(variance[c] + eps));
    }
  }

  /// With x_hat = (x - mean) / deviation and N elements per channel: dbeta = sum dy, dgamma =
  /// sum dy x_hat; in training dx = gamma / deviation (dy - dbeta / N - x_hat dgamma / N), in
  /// inference dx = gamma dy / deviation. Computed in S, sums accumulated in double.
  template <class C, class V>
  static void backward(const detail::backward_args<batch_normalization, C, V>& a) {
    using S = statistics_t<C, V>;
    const std::size_t channels = a.shape.last();
    const std::span<const S> x = detail::converted<S>(a.x);
    const std::span<const S> dy = detail::converted<S>(a.dy);
    std::vector<S> mean(channels), inverse_deviation(channels);
    for (std::size_t c = 0; c < channels; ++c) {
      mean[c] = static_cast<S>(a.saved.mean[c]);
      inverse_deviation[c] = static_cast<S>(a.saved.inverse_deviation[c]);
    }
    std::vector<double> sum_dy(channels), sum_dy_x_hat(channels);
    kernels::batch_norm_backward_sums<S>(x, dy, mean, inverse_deviation, sum_dy, sum_dy_x_hat);
    const auto store = [&](std::size_t index, const std::vector<double>& sums) {
      const std::span<V> out = a.weight_gradients[index];
      for (std::size_t c = 0; c < out.size(); ++c) out[c] = cast<V>(static_cast<S>(sums[c]));
    };
    store(gamma, sum_dy_x_hat);
    store(beta, sum_dy);
    if (a.dx.empty()) return;
    const std::vector<S> g = wide<V, S>(a.weights[gamma].value);
    std::vector<S> factor(channels), mean_dy(channels), mean_dy_x_hat(channels);
    const auto n = static_cast<S>(a.x.size() / channels);
    for (std::size_t c = 0; c < channels; ++c) {
      factor[c] = g[c] * inverse_deviation[c];
      // In inference mode (a frozen layer) the statistics are constants: dx = factor dy.
      mean_dy[c] = a.training ? static_cast<S>(sum_dy[c]) / n : S(0);
      mean_dy_x_hat[c] = a.training ? static_cast<S>(sum_dy_x_hat[c]) / n : S(0);
    }
    const std::span<S> dx = [&] {
      if constexpr (std::is_same_v<C, S>) return a.dx;
      else return detail::scratch_buffer<S>(a.dx.size());
    }();
    if (a.training) {
      kernels::batch_norm_input_gradient<S>(x, dy, mean, inverse_deviation, factor, mean_dy, mean_dy_x_hat, dx);
    } else {
      const std::vector<S> no_shift(channels, S(0));
      kernels::scale_shift_columns<S>(dy, factor, no_shift, dx);
    }
    if constexpr (!std::is_same_v<C, S>) kernels::convert<S, C>(dx, a.dx);
  }

  template <class Json>
  static void write_config(const settings& s, Json& config) {
    config["axis"] = s.axis;
    config["momentum"] = s.momentum;
    config["epsilon"] = s.epsilon;
    config["center"] = true;
    config["scale"] = true;
    config["beta_initializer"] = initializers::serialize(s.beta_initializer);
    config["gamma_initializer"] = initializers::serialize(s.gamma_initializer);
    config["moving_mean_initializer"] = initializers::serialize(s.moving_mean_initializer);
    config["moving_variance_initializer"] = initializers::serialize(s.moving_variance_initializer);
    config["beta_regularizer"] = detail::regularizer_config(s.beta_regularizer);
    config["gamma_regularizer"] = detail::regularizer_config(s.gamma_regularizer);
    config["beta_constraint"] = nullptr;
    config["gamma_constraint"] = nullptr;
    config["synchronized"] = false;
  }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    settings s;
    if (read.has("axis") && read.raw("axis").is_array()) {  // tf.keras 2: a list of axes
      const nlohmann::json& axes = read.raw("axis");
      if (axes.size() != 1 || !axes[0].is_number_integer() ||
          (axes[0].is_number_unsigned() && axes[0].get<std::uint64_t>() > 64))
        read.fail("`axis` must be one axis, the last (mixprec normalizes no other). Received: axis=" +
                  detail::shown(axes));
      s.axis = axes[0].get<std::int64_t>();
    } else {
      s.axis = read.integer("axis", -1);
    }
    s.momentum = read.number("momentum", 0.99);
    s.epsilon = read.number("epsilon", 1e-3);
    read.unsupported("center", true);
    read.unsupported("scale", true);
    s.beta_initializer = detail::read_initializer(read, "beta_initializer", initializers::zeros{});
    s.gamma_initializer = detail::read_initializer(read, "gamma_initializer", initializers::ones{});
    s.moving_mean_initializer = detail::read_initializer(read, "moving_mean_initializer", initializers::zeros{});
    s.moving_variance_initializer = detail::read_initializer(read, "moving_variance_initializer", initializers::ones{});
    s.beta_regularizer = detail::read_regularizer(read, "beta_regularizer");
    s.gamma_regularizer = detail::read_regularizer(read, "gamma_regularizer");
    read.unsupported("beta_constraint");
    read.unsupported("gamma_constraint");
    read.unsupported("synchronized", false);
    read.unsupported("renorm", false);
    try {
      check(s);
    } catch (const std::invalid_argument& error) {
      read.fail(error.what());
    }
    return s;
  }

 private:
  template <class V, class S>
  static std::vector<S> wide(std::span<const V> values) {
    std::vector<S> out(values.size());
    kernels::convert<V, S>(values, std::span(out));
    return out;
  }
};

}  // namespace mixprec::layer_kinds
