// The Conv2D kind: 2-D convolution over NHWC inputs, by im2col and Dense's arithmetic (kernel
// [kh, kw, in_channels, filters], stored as a (kh kw in) x filters matrix); backward by the
// transposed products and col2im.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
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
  template <class Json>
  void write_config(const char* size_key, Json& config) const {
    config[size_key] = {height, width};
    config["strides"] = {stride_height, stride_width};
    config["padding"] = same ? "same" : "valid";
    config["data_format"] = "channels_last";
  }
  /// Reads the window; strides default to the window itself when `strides_default_to_size`
  /// (pooling), else to 1.
  template <class Deferred = void>
  static window read_config(detail::config_reader& read, const char* size_key,
                            std::optional<std::pair<std::size_t, std::size_t>> size_default,
                            bool strides_default_to_size) {
    static constexpr std::array<std::string_view, 2> paddings{"valid", "same"};
    static constexpr std::array<std::string_view, 1> formats{"channels_last"};
    window w;
    std::tie(w.height, w.width) = read.pair(size_key, size_default);
    std::tie(w.stride_height, w.stride_width) =
        read.pair("strides", strides_default_to_size ? std::pair{w.height, w.width} : std::pair<std::size_t, std::size_t>{1, 1});
    w.same = read.choice("padding", paddings, /*ignoring_case=*/true) == "same";
    read.choice("data_format", formats, /*ignoring_case=*/true);
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
  /// What a forward call works on per sample: its im2col columns (a row of kh kw channels per
  /// output pixel) and its output's float32 accumulator (a 16-bit compute dtype's; float32
  /// accumulates in the output, counted alike). Checked; the input shape was.
  static std::size_t scratch_per_sample(const settings& s, std::span<const std::size_t> input) {
    const std::vector<std::size_t> output = output_shape(s, input);
    const std::size_t extents[] = {output[0], output[1], s.window.height, s.window.width, input[2]};
    const std::size_t columns = detail::checked_product(extents, "the im2col columns of one sample");
    const std::size_t outputs = detail::checked_product(output, "the output of one sample");
    return detail::checked_add(columns, outputs, "the im2col columns and output of one sample");
  }
  /// How many samples' columns a call on `batch` samples holds at once: one chunk's.
  static std::size_t scratch_samples(std::size_t batch, std::size_t scratch_per_sample) {
    return detail::batch_split(batch, scratch_per_sample).largest_chunk();
  }
  static std::optional<kernels::activation> lendable_activation(const settings& s) {
    return dense::lendable(s.activation);
  }
  static std::vector<detail::weight_spec> weights(const settings& s, std::span<const std::size_t> input) {
    std::vector<detail::weight_spec> specs{{"kernel",
                                            {s.window.height, s.window.width, input[2], s.filters},
                                            s.weights.kernel_initializer,
                                            s.weights.kernel_regularizer}};
    if (s.use_bias) specs.push_back({"bias", {s.filters}, s.weights.bias_initializer, s.weights.bias_regularizer});
    return specs;
  }

  /// Chunk after chunk of samples (detail::batch_split by scratch_per_sample: conv1's output, 32
  /// filters of a 3 x 3 x 1 patch, counts more than its columns), on the kernels' threads: im2col
  /// into a per-thread buffer the size of one chunk's columns, then Dense's product into y.
  template <class C, class V>
  static void forward(const detail::forward_args<conv2d, C, V>& a) {
    const detail::conv_geometry g = a.settings.window.geometry(a.shape);
    const detail::batch_split split(g.batch, scratch_per_sample(a.settings, a.shape.features));
    std::span<C> pre_activation;
    if (a.saved && dense::keeps_pre_activation(a.settings.activation)) {
      a.saved->pre_activation.resize(a.y.size());
      pre_activation = a.saved->pre_activation;
    }
    const std::span<const C> bias = dense::bias<C>(a.settings.use_bias, a.weights);
    detail::with_product_weight<C>(
        a.weights[0].value, a.weights[0].version, g.patch(), a.settings.filters, a.packed_weight,
        [&](const auto& kernel) {
          detail::run_on_kernel_threads(split.chunks, [&](std::size_t chunk) {
            const detail::batch_chunk part(g, a.settings.filters, split, chunk);
            const std::span<C> columns = detail::scratch_buffer<C>(part.pixels() * g.patch());
            detail::im2col<C>(part.inputs(a.x), part.geometry, columns);
            detail::dense_forward<C>(columns, part.pixels(), g.patch(), kernel, bias, a.settings.filters,
                                     a.settings.activation, part.outputs(a.y), part.outputs(pre_activation));
          });
        });
  }

  /// Chunk after chunk (detail::batch_split by the im2col columns of a sample); the columns are
  /// rebuilt from x rather than kept from the forward pass (they are kh kw times the input's
  /// size). Each sample's input gradient is its own (windows never cross samples), so it is the
  /// same whatever the chunks; it is computed in blocks of samples whose products dz kernel^T (in
  /// the accumulator dtype, kh kw times their size) take no more memory than the columns. The weight
  /// gradients are sums over the whole batch, in this order: each slice of chunks
  /// (detail::batch_split) sums its chunks' products into a float32 (float64) partial, chunk
  /// after chunk (the first GEMM writes it, each next one adds to it: the GEMM's own order within
  /// a chunk); the partials are then added in slice order and rounded once to the variable dtype.
  /// The chunks and slices depend on the batch and the layer's shapes only, so the gradients
  /// are the same bits on any number of threads.
  template <class C, class V>
  static void backward(const detail::backward_args<conv2d, C, V>& a) {
    gradients<C, V>(a, nullptr);
  }

  /// backward, its input gradient written over the output the layer below lends (kind.hpp's
  /// lent_output: MaxPooling2D's, a relu or linear Conv2D's) as that layer's pre-activation
  /// gradient, chunk by chunk once the chunk's columns are built (nothing reads that part of the
  /// input after), by dense::write_lent_gradient. Saves a buffer as large as the input.
  template <class C>
  static bool writes_gradient_over_input(const settings&) {
    return true;
  }
  template <class C, class V>
  static void backward_over_input(const detail::backward_args<conv2d, C, V>& a, const detail::lent_output<C>& below) {
    gradients<C, V>(a, &below);
  }

  template <class Json>
  static void write_config(const settings& s, Json& config) {
    config["filters"] = s.filters;
    s.window.write_config("kernel_size", config);
    config["dilation_rate"] = {1, 1};
    config["groups"] = 1;
    config["activation"] = kernels::activation_name(s.activation);
    config["use_bias"] = s.use_bias;
    detail::write_weight_settings(s.weights, config);
  }
  template <class Deferred = void>
  static settings read_config(detail::config_reader& read) {
    settings s;
    s.filters = read.positive("filters");
    s.window = window::read_config(read, "kernel_size", std::nullopt, false);
    // 1 or [1, 1], as Keras standardizes it; any other dilation is not implemented.
    using extents = std::pair<std::size_t, std::size_t>;
    if (read.pair("dilation_rate", extents{1, 1}) != extents{1, 1})
      read.fail("`dilation_rate` is not supported by mixprec; it must be 1 or [1,1]. Received: " +
                detail::shown(read.raw("dilation_rate")));
    read.unsupported("groups", 1);
    s.activation = detail::read_activation(read);
    s.use_bias = read.boolean("use_bias", true);
    s.weights = detail::read_weight_settings(read);
    read.unsupported("lora_rank");
    return s;
  }

 private:
  /// backward's work: the input gradient into a.dx, or written over `below` when there is one.
  template <class C, class V>
  static void gradients(const detail::backward_args<conv2d, C, V>& a, const detail::lent_output<C>* below) {
    using A = detail::accumulator_t<C>;
    const detail::conv_geometry g = a.settings.window.geometry(a.shape);
    const detail::batch_split split(g.batch, g.out_height() * g.out_width() * g.patch());
    const std::size_t units = a.settings.filters, patch = g.patch();
    const std::span<V> kernel_gradient = a.weight_gradients[0];
    const std::span<V> bias_gradient = a.settings.use_bias ? a.weight_gradients[1] : std::span<V>();
    // Per slice: the kernel gradient's partial, then the bias gradient's.
    const std::size_t partial_size = patch * units + units;
    const std::span<A> partials = detail::scratch_buffer<A>(split.slices * partial_size);
    // Read for the input gradient only (the first layer has none).
    const bool input_gradient = below != nullptr || !a.dx.empty();
    using K = const detail::product_weight_t<C, V>;
    const std::span<K> kernel = input_gradient ? detail::product_weight<C>(a.weights[0].value) : std::span<K>();
    detail::run_on_kernel_threads(split.slices, [&](std::size_t slice) {
      const std::span<A> kernel_partial = partials.subspan(slice * partial_size, patch * units);
      const std::span<A> bias_partial = partials.subspan(slice * partial_size + patch * units, units);
      for (std::size_t chunk = split.first_chunk(slice); chunk < split.end_chunk(slice); ++chunk) {
        const detail::scratch_scope chunk_scope;  // one chunk's columns and products at a time
        const detail::batch_chunk part(g, a.settings.filters, split, chunk);
        const bool first = chunk == split.first_chunk(slice);
        const std::span<const C> dz = dense::activation_input_gradient<C>(
            dense::applied_activation(a), part.outputs(std::span<const C>(a.saved.pre_activation)), part.outputs(a.y),
            part.outputs(a.dy), units);
        if (!bias_gradient.empty()) kernels::column_sum(dz, bias_partial, units, !first);
        if (!kernel_gradient.empty()) {
          const detail::scratch_scope columns_scope;
          const std::span<C> columns = detail::scratch_buffer<C>(part.pixels() * patch);
          detail::im2col<C>(part.inputs(a.x), part.geometry, columns);
          add_kernel_product<C>(columns, part.pixels(), patch, dz, units, !first, kernel_partial);
        }
        if (!input_gradient) continue;
        // Summed over the windows in the accumulator dtype, then stored once.
        const std::span<C> dx = part.inputs(below ? below->values : a.dx);
        const std::span<A> sums = dense::input_gradient_sums<C>(dx, below);
        // Block after block of samples whose products dz kernel^T (in A) take no more memory than
        // the chunk's columns (in C): half a chunk under a 16-bit C (one sample for the CNN's conv2).
        const std::size_t block_samples = std::max<std::size_t>(1, split.largest_chunk() * sizeof(C) / sizeof(A));
        const std::size_t sample_pixels = g.out_height() * g.out_width(), sample_inputs = g.height * g.width * g.channels;
        for (std::size_t sample = 0; sample < part.geometry.batch; sample += block_samples) {
          const detail::scratch_scope block_scope;
          detail::conv_geometry block = part.geometry;
          block.batch = std::min(block_samples, part.geometry.batch - sample);
          const std::size_t rows = block.batch * sample_pixels;
          detail::col2im<A>(detail::input_gradient_products<C>(dz.subspan(sample * sample_pixels * units, rows * units),
                                                                rows, patch, kernel, units),
                            block, sums.subspan(sample * sample_inputs, block.batch * sample_inputs));
        }
        dense::store_input_gradient<C, A>(sums, dx, below);
      }
    });
    // The slices' partials of one gradient (at `offset` in each slice's part), added in slice order.
    const auto store_sum = [&](std::size_t offset, std::span<V> gradient) {
      if (gradient.empty()) return;
      const std::span<A> total = partials.subspan(offset, gradient.size());
      for (std::size_t slice = 1; slice < split.slices; ++slice)
        kernels::add_rows<A>(partials.subspan(slice * partial_size + offset, gradient.size()), gradient.size(), total,
                             gradient.size(), 1, gradient.size());
      detail::store_gradient<V, A>(total, gradient);
    };
    store_sum(0, kernel_gradient);
    store_sum(patch * units, bias_gradient);
  }

  /// kernel_partial (+)= columns^T dz: written by the first chunk of a slice, added to by the next.
  template <class C>
  static void add_kernel_product(std::span<const C> columns, std::size_t rows, std::size_t patch,
                                 std::span<const C> dz, std::size_t units, bool accumulate,
                                 std::span<detail::accumulator_t<C>> kernel_partial) {
    if constexpr (std::is_same_v<C, double>) {
      auto product = detail::matrix(kernel_partial, patch, units);
      if (accumulate) product.noalias() += detail::matrix(columns, rows, patch).transpose() * detail::matrix(dz, rows, units);
      else product.noalias() = detail::matrix(columns, rows, patch).transpose() * detail::matrix(dz, rows, units);
    } else {
      kernels::gemm(kernels::transpose::yes, kernels::transpose::no, patch, units, rows, 1.0f, columns.data(), patch,
                    dz.data(), units, accumulate ? 1.0f : 0.0f, kernel_partial.data(), units);
    }
  }
};

}  // namespace mixprec::layer_kinds
