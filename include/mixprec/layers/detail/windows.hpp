// Convolution and pooling windows over NHWC tensors: Keras' output sizes and "same" padding, a
// walk over every window's rows, and im2col / col2im, shared by Conv2D and MaxPooling2D.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include <mixprec/core/cast.hpp>
#include <mixprec/kernels/elementwise.hpp>

namespace mixprec::detail {

/// Output length of a convolution / pooling window along one axis (Keras' formula). Written so
/// that no extent, however large, overflows; a window larger than the input fits with "same"
/// (the padding makes room) and not with "valid" (0).
constexpr std::size_t window_output(std::size_t input, std::size_t window, std::size_t stride, bool same) {
  if (same) return input / stride + (input % stride != 0);
  return input < window ? 0 : (input - window) / stride + 1;
}
/// Zeros added before the input along one axis for "same" padding (the rest goes after): half of
/// what the last window reaches past the input. Every window still holds an input pixel.
constexpr std::size_t padding_before(std::size_t input, std::size_t window, std::size_t stride, bool same) {
  if (!same) return 0;
  const std::size_t output = window_output(input, window, stride, true);
  const std::size_t last_start = (output - 1) * stride;  // < input
  const std::size_t inside = input - last_start;          // pixels the last window covers
  return window > inside ? (window - inside) / 2 : 0;
}

struct conv_geometry {
  std::size_t batch, height, width, channels;  // input, NHWC
  std::size_t kernel_height, kernel_width, stride_height, stride_width;
  bool same;
  std::size_t out_height() const { return window_output(height, kernel_height, stride_height, same); }
  std::size_t out_width() const { return window_output(width, kernel_width, stride_width, same); }
  std::size_t patch() const { return kernel_height * kernel_width * channels; }
};

/// How Conv2D and MaxPooling2D walk a batch: in chunks of consecutive samples, the kernels'
/// threads taking one chunk (or one slice of chunks) at a time. A chunk holds about
/// `chunk_elements` elements of per-sample work (Conv2D: im2col columns; MaxPooling2D: input),
/// so that the per-thread scratch no longer grows with the batch and stays in cache; the chunk
/// count is rounded up to a multiple of 4 (as the batch allows) so that 2 or 4 threads get even
/// shares, and the samples are spread evenly over the chunks. Slices are at most `max_slices`
/// runs of consecutive chunks (Conv2D's weight gradient keeps one partial sum per slice). All of
/// it depends on the batch and the per-sample size only, never on the number of threads: results
/// are the same on any thread count.
struct batch_split {
  static constexpr std::size_t chunk_elements = std::size_t{1} << 17, max_slices = 4;
  std::size_t batch, chunks, slices;

  batch_split(std::size_t batch_size, std::size_t elements_per_sample)
      : batch(batch_size), chunks(chunk_count(batch_size, elements_per_sample)), slices(std::min(chunks, max_slices)) {}

  /// The samples of the largest chunk: what a thread's scratch holds at once.
  std::size_t largest_chunk() const { return (batch + chunks - 1) / chunks; }
  /// Samples [first, end) of chunk `chunk` < chunks.
  std::size_t first_sample(std::size_t chunk) const { return batch * chunk / chunks; }
  std::size_t end_sample(std::size_t chunk) const { return batch * (chunk + 1) / chunks; }
  /// Chunks [first, end) of slice `slice` < slices.
  std::size_t first_chunk(std::size_t slice) const { return chunks * slice / slices; }
  std::size_t end_chunk(std::size_t slice) const { return chunks * (slice + 1) / slices; }

 private:
  static std::size_t chunk_count(std::size_t batch_size, std::size_t elements_per_sample) {
    if (batch_size == 0) return 1;  // one empty chunk: the call still runs (and writes its empty outputs)
    const std::size_t per_chunk = std::max<std::size_t>(1, chunk_elements / std::max<std::size_t>(1, elements_per_sample));
    const std::size_t needed = batch_size / per_chunk + (batch_size % per_chunk != 0);
    return std::min(batch_size, (needed + 3) / 4 * 4);
  }
};

/// Samples [first, first + geometry.batch) of a call over NHWC tensors: their geometry and their
/// parts of the batch's input and output tensors (an empty span, a tensor not kept, stays empty).
struct batch_chunk {
  conv_geometry geometry;
  std::size_t first_input, inputs_size, first_output, outputs_size;

  batch_chunk(const conv_geometry& batch, std::size_t output_channels, const batch_split& split, std::size_t chunk)
      : geometry(batch) {
    const std::size_t first = split.first_sample(chunk), count = split.end_sample(chunk) - first;
    const std::size_t input_sample = batch.height * batch.width * batch.channels;
    const std::size_t output_sample = batch.out_height() * batch.out_width() * output_channels;
    geometry.batch = count;
    first_input = first * input_sample;
    inputs_size = count * input_sample;
    first_output = first * output_sample;
    outputs_size = count * output_sample;
  }
  /// Its sample n < geometry.batch, as a chunk of its own.
  batch_chunk sample(std::size_t n) const {
    batch_chunk one = *this;
    one.geometry.batch = 1;
    one.inputs_size = inputs_size / geometry.batch;
    one.outputs_size = outputs_size / geometry.batch;
    one.first_input += n * one.inputs_size;
    one.first_output += n * one.outputs_size;
    return one;
  }
  /// The output pixels of the chunk (rows of its im2col columns).
  std::size_t pixels() const { return geometry.batch * geometry.out_height() * geometry.out_width(); }
  template <class T>
  std::span<T> inputs(std::span<T> batch) const {
    return batch.empty() ? batch : batch.subspan(first_input, inputs_size);
  }
  template <class T>
  std::span<T> outputs(std::span<T> batch) const {
    return batch.empty() ? batch : batch.subspan(first_output, outputs_size);
  }
};

/// The part of one output pixel's window that lies inside the input: window rows
/// [first_ky, first_ky + rows) and columns [first_kx, first_kx + columns); its first input pixel
/// is first_input_pixel, and each next row starts `width` pixels on (a window row is contiguous
/// in NHWC, whatever the strides). Pixels are indices: element offsets are pixel * channels.
struct window_part {
  std::size_t first_ky, rows, first_kx, columns, first_input_pixel;
};

/// Calls visit(output_pixel, window_part) for every output pixel, in NHW order; the positions in
/// "same" padding are left out. Every window holds at least one input pixel.
template <class Visit>
void for_each_window(const conv_geometry& g, Visit&& visit) {
  const std::size_t oh = g.out_height(), ow = g.out_width();
  const std::size_t top = padding_before(g.height, g.kernel_height, g.stride_height, g.same);
  const std::size_t left = padding_before(g.width, g.kernel_width, g.stride_width, g.same);
  for (std::size_t n = 0; n < g.batch; ++n)
    for (std::size_t oy = 0; oy < oh; ++oy) {
      // Window rows ky in [first_ky, end_ky) land inside the input: top <= oy * sh + ky < top + height.
      const std::size_t y0 = oy * g.stride_height;
      const std::size_t first_ky = top > y0 ? top - y0 : 0;
      const std::size_t end_ky = std::min(g.kernel_height, top + g.height - y0);
      for (std::size_t ox = 0; ox < ow; ++ox) {
        const std::size_t x0 = ox * g.stride_width;
        const std::size_t first_kx = left > x0 ? left - x0 : 0;
        const std::size_t end_kx = std::min(g.kernel_width, left + g.width - x0);
        visit((n * oh + oy) * ow + ox,
              window_part{first_ky, end_ky - first_ky, first_kx, end_kx - first_kx,
                          (n * g.height + (y0 + first_ky - top)) * g.width + (x0 + first_kx - left)});
      }
    }
}

/// Calls visit(output_pixel, first_slot, slots, first_input_pixel) for every row of every
/// output pixel's window, with the part of that row inside the input: `slots` window positions
/// from first_slot = ky * kernel_width + kx, which read the consecutive input pixels from
/// first_input_pixel on.
template <class Visit>
void for_each_window_run(const conv_geometry& g, Visit&& visit) {
  for_each_window(g, [&](std::size_t out, const window_part& w) {
    for (std::size_t r = 0; r < w.rows; ++r)
      visit(out, (w.first_ky + r) * g.kernel_width + w.first_kx, w.columns, w.first_input_pixel + r * g.width);
  });
}

/// im2col: one row per output pixel, holding its receptive field (kh, kw, c order, zero padded).
template <class C>
void im2col(std::span<const C> x, const conv_geometry& g, std::span<C> columns) {
  const std::size_t patch = g.patch();
  // Only "same" padding leaves positions that no input pixel fills.
  if (g.same) std::fill(columns.begin(), columns.end(), cast<C>(0));
  for_each_window_run(g, [&](std::size_t out, std::size_t slot, std::size_t slots, std::size_t in) {
    const C* pixels = x.data() + in * g.channels;
    std::copy(pixels, pixels + slots * g.channels, columns.data() + out * patch + slot * g.channels);
  });
}

/// The adjoint of im2col: dx (float32 or float64 accumulators, zeroed first) receives every column
/// entry at the input pixel it was copied from, output pixel after output pixel (the same order
/// on every target), each window added as a block by add_rows.
template <class A>
void col2im(std::span<const A> columns, const conv_geometry& g, std::span<A> dx) {
  const std::size_t patch = g.patch(), c = g.channels;
  std::fill(dx.begin(), dx.end(), A(0));
  for_each_window(g, [&](std::size_t out, const window_part& w) {
    const std::size_t row_length = w.columns * c, from_stride = g.kernel_width * c, to_stride = g.width * c;
    const std::size_t from = out * patch + (w.first_ky * g.kernel_width + w.first_kx) * c;
    const std::size_t to = w.first_input_pixel * c;
    kernels::add_rows<A>(columns.subspan(from, (w.rows - 1) * from_stride + row_length), from_stride,
                         dx.subspan(to, (w.rows - 1) * to_stride + row_length), to_stride, w.rows, row_length);
  });
}

}  // namespace mixprec::detail
