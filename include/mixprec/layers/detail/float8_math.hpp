// Keras 3's float8 Dense (delayed scaling): the product runs on inputs and kernel
// quantize-dequantized to float8_e4m3fn, and the backward pass on the output gradient
// quantize-dequantized to float8_e5m2, each with a scale taken from the history of its tensor's
// max |value| up to the previous step. Training steps update each (scale, history) pair once,
// from the values they saw, never through the optimizer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/detail/quantize_rule.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers/kind.hpp>

namespace mixprec::detail {

/// The largest finite value of a float8 format: 448 (e4m3fn), 57344 (e5m2).
template <class F>
inline constexpr float float8_max = kernels::detail::float8_max_finite<F::format>();

/// Keras' compute_float8_scale: 1 / (fp8_max / amax) for the largest amax in the history, or
/// the scale as it was when that amax is zero or not finite (the first steps).
inline float next_float8_scale(float scale, float history_amax, float fp8_max) {
  if (!(history_amax > 0.0f) || !std::isfinite(history_amax)) return scale;
  return 1.0f / (fp8_max / history_amax);
}

/// One (scale, amax history) pair of a float8 layer: its new values after a step that saw a
/// tensor whose max |value| is `amax`, as Keras computes them: the scale from the history up to
/// the previous step ("delayed"); the history rolled left by one (Keras' roll(-1)) and `amax`
/// written at its front.
template <class V>
void update_delayed_scaling(std::span<const V> scale, std::span<const V> history, float amax, float fp8_max,
                            std::size_t scale_weight, std::vector<weight_update<V>>& updates) {
  const float history_amax = mixprec::kernels::amax(history);  // NaN if the history holds one
  const float new_scale = next_float8_scale(static_cast<float>(cast<float>(scale[0])), history_amax, fp8_max);
  std::vector<V> new_history(history.begin(), history.end());
  std::rotate(new_history.begin(), new_history.begin() + 1, new_history.end());
  new_history[0] = cast<V>(amax);
  updates.push_back({scale_weight, {cast<V>(new_scale)}});
  updates.push_back({scale_weight + 1, std::move(new_history)});
}

/// x quantize-dequantized to F with `scale` (a float8 layer's variable, in V) into `out`;
/// returns max |x|.
template <class F, class C, class V>
float quantize_dequantize_with(std::span<const C> x, std::span<const V> scale, std::span<C> out) {
  return kernels::quantize_dequantize<F, C>(x, static_cast<float>(cast<float>(scale[0])), out);
}

}  // namespace mixprec::detail
