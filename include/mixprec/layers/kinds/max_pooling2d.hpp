// The MaxPooling2D kind: the maximum over each window (NHWC); strides default to the pool size.
// Backward routes each output's gradient to the first input of its window that holds the maximum
// (in ky, kx order: the one the forward pass returned). It lends its output to the layer above
// (kind.hpp's lent_output) and then finds the maxima again from its input.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/cast.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers/detail/math.hpp>
#include <mixprec/layers/detail/windows.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/kinds/conv2d.hpp>

namespace mixprec::layer_kinds {

struct max_pooling2d : detail::weightless_kind {
  static constexpr std::string_view keras_class = "MaxPooling2D";
  struct settings {
    layer_kinds::window window = {2, 2, 2, 2, false};
  };
  using state = detail::no_state;
  template <class C>
  using saved = detail::nothing_saved<C>;

  static std::vector<std::size_t> output_shape(const settings& s, std::span<const std::size_t> input) {
    return s.window.output_shape("MaxPooling2D", input, 0);
  }

  template <class C, class V>
  static void forward(const detail::forward_args<max_pooling2d, C, V>& a) {
    for_each_chunk(a.settings.window.geometry(a.shape), [&](const detail::batch_chunk& part) {
      pool<C>(part.inputs(a.x), part.geometry, part.outputs(a.y));
    });
  }

  template <class C, class V>
  static void backward(const detail::backward_args<max_pooling2d, C, V>& a) {
    if (!a.dx.empty()) gradients<C, V>(a, nullptr);
  }

  /// backward, written over the input lent by the layer below (kind.hpp's lent_output): the
  /// gradient of that layer's pre-activation, sample by sample once the sample's windows are
  /// routed (nothing reads that part of the input after), by dense::write_lent_gradient. The
  /// bits of backward followed by the lending layer's, without a buffer as large as the input
  /// (conv1's output: the CNN's largest).
  template <class C>
  static bool writes_gradient_over_input(const settings&) {
    return true;
  }
  template <class C, class V>
  static void backward_over_input(const detail::backward_args<max_pooling2d, C, V>& a,
                                  const detail::lent_output<C>& below) {
    gradients<C, V>(a, &below);
  }

  /// The output, lent as it is (no activation): the layer above may write its input gradient over
  /// it; backward then finds the maxima again from the input (maxima).
  static std::optional<kernels::activation> lendable_activation(const settings&) { return kernels::activation::linear; }

  template <class Json>
  static void write_config(const settings& s, Json& config) { s.window.write_config("pool_size", config); }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    return {window::read_config(read, "pool_size", std::pair<std::size_t, std::size_t>{2, 2}, true)};
  }

  /// MaxPooling2D, NHWC: each window row is folded into its output pixel by column_max. A window
  /// holding NaN gives its first NaN (in ky, kx order), bits kept (16-bit: quiet, sign kept, as
  /// column_max rounds). "same" windows ignore the padding.
  template <class C>
  static void pool(std::span<const C> x, const detail::conv_geometry& g, std::span<C> y) {
    std::fill(y.begin(), y.end(), cast<C>(-std::numeric_limits<float>::infinity()));
    detail::for_each_window_run(g, [&](std::size_t out, std::size_t, std::size_t slots, std::size_t in) {
      kernels::column_max<C>(x.subspan(in * g.channels, slots * g.channels), y.subspan(out * g.channels, g.channels));
    });
  }

 private:
  /// visit(chunk) for chunks of samples (detail::batch_split by input size) on the kernels'
  /// threads. Windows never cross samples, so every chunking gives the same bits.
  template <class Visit>
  static void for_each_chunk(const detail::conv_geometry& g, Visit&& visit) {
    const detail::batch_split split(g.batch, g.height * g.width * g.channels);
    detail::run_on_kernel_threads(split.chunks, [&](std::size_t chunk) {
      visit(detail::batch_chunk(g, g.channels, split, chunk));
    });
  }

  /// backward's work, sample by sample: the gradients of overlapping windows summed in the
  /// accumulator dtype (dense::input_gradient_sums), then stored once into a.dx or written over
  /// `below` when there is one.
  template <class C, class V>
  static void gradients(const detail::backward_args<max_pooling2d, C, V>& a, const detail::lent_output<C>* below) {
    using A = detail::accumulator_t<C>;
    for_each_sample(a.settings.window.geometry(a.shape), [&](const detail::batch_chunk& part) {
      const std::span<C> dx = part.inputs(below ? below->values : a.dx);
      const std::span<A> sums = dense::input_gradient_sums<C>(dx, below);
      route<C>(part.inputs(a.x), maxima(a, part), part.outputs(a.dy), part.geometry, sums);
      dense::store_input_gradient<C, A>(sums, dx, below);
    });
  }

  /// visit(sample) for each sample of each chunk, in a scratch scope of its own: the backward
  /// pass's sums (in the accumulator dtype) are one sample's at a time.
  template <class Visit>
  static void for_each_sample(const detail::conv_geometry& g, Visit&& visit) {
    for_each_chunk(g, [&](const detail::batch_chunk& chunk) {
      for (std::size_t n = 0; n < chunk.geometry.batch; ++n) {
        const detail::scratch_scope sample_scope;
        visit(chunk.sample(n));
      }
    });
  }

  /// A chunk's outputs for the backward pass: the forward pass's, or none when the layer above
  /// wrote over them (dy is the lent output): column_max_backward then finds each window's
  /// maximum again from the input, the same bits.
  template <class C, class V>
  static std::span<const C> maxima(const detail::backward_args<max_pooling2d, C, V>& a, const detail::batch_chunk& part) {
    return a.dy_is_pre_activation_gradient ? std::span<const C>() : part.outputs(a.y);
  }

  /// dx = 0, then each output's gradient added to the first input of its window that holds the
  /// maximum (column_max_backward, one window at a time: overlapping windows sum in order, in A =
  /// accumulator_t<C>). y empty: each window's maximum is found from x.
  template <class C, class A>
  static void route(std::span<const C> x, std::span<const C> y, std::span<const C> dy, const detail::conv_geometry& g,
                    std::span<A> dx) {
    std::fill(dx.begin(), dx.end(), A(0));
    const std::size_t c = g.channels, row_stride = g.width * c;
    detail::for_each_window(g, [&](std::size_t out, const detail::window_part& w) {
      const std::size_t first = w.first_input_pixel * c, row_length = w.columns * c;
      const std::size_t extent = (w.rows - 1) * row_stride + row_length;
      const std::span<const C> maximum = y.empty() ? y : y.subspan(out * c, c);
      kernels::column_max_backward<C>(x.subspan(first, extent), maximum, dy.subspan(out * c, c),
                                      dx.subspan(first, extent), w.rows, row_length, row_stride);
    });
  }
};

}  // namespace mixprec::layer_kinds
