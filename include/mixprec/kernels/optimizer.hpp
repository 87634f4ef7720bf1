// Optimizer kernels for a training step: Keras 3's SGD and Adam / AdamW updates, and the
// gradient clipping behind clipvalue, clipnorm and global_clipnorm.
//
//   kernels::sgd_update(w, g, velocity, {.learning_rate = 0.01f, .momentum = 0.9f});
//   kernels::adam_update(w, g, m, v, {}, {.learning_rate = 1e-3f, .iteration = step});  // {}: no AMSGrad
//   kernels::clip_by_value(g, 0.5f);                                                   // clipvalue
//   kernels::scale(g, clipnorm, std::max(std::sqrt(kernels::dot(g, g)), clipnorm));   // clipnorm
//
// The variable w, its gradient g and the optimizer's slots share the variable's dtype V: float,
// bfloat16 and float16 run Highway kernels (dispatched to the best target), double a scalar loop
// in double. Each element is widened exactly to float, the step is computed in float32 in
// Keras' order of operations (TensorFlow and JAX backends; the torch backend's fused foreach
// kernels group some operations differently), and each value stored (w and each slot) is
// rounded once to V, to nearest even. A slot is read back as stored by the formulas after it,
// as Keras reads a slot variable after assigning it; the weight-decayed w is not stored
// separately, so it stays in float until the update. For float variables the results equal
// Keras' float32 arithmetic bit for bit, on every target alike, and every NaN stored is the
// canonical quiet NaN. double runs the same formulas in double, on the hyperparameters as
// given (sgd_step and adam_step hold them in double; float32 arithmetic rounds them to float).
//
// The rules (lr = learning_rate, wd = weight_decay, t = iteration + 1), in evaluation order:
//   weight decay, first, if wd != 0:  w = w - (w * wd) * lr      (Keras' `w - w * wd * lr`)
//   SGD, momentum 0:  w = w - g * lr
//   SGD, momentum:    velocity = velocity * momentum - g * lr
//                     w = w + velocity,  or with nesterov  w = w + (velocity * momentum - g * lr)
//   Adam:             alpha = (lr * sqrt(1 - beta_2^t)) / (1 - beta_1^t), once per step
//                     m = m + (g - m) * (1 - beta_1)
//                     v = v + (g * g - v) * (1 - beta_2)
//                     AMSGrad: v_hat = max(v_hat, v), used for v below
//                     w = w - (m * alpha) / (sqrt(v) + epsilon)
// For float32 arithmetic (V = float, bfloat16, float16), beta^t is float32(beta) raised to
// float32(t), evaluated by std::pow in double and rounded once to float: the correctly rounded
// float32 power but for rare double roundings. Keras evaluates ops.power on float32 with the
// backend's pow, which may differ from it in the last bit, and alpha with it. 1 - beta is taken
// in double and rounded to float, as Keras computes `1 - self.beta_1` in Python. The rest of
// alpha is float32 arithmetic in the order above.
//
// Outputs never overlap inputs: every span passed to one call must lie apart from the others.
// Arguments are checked before anything is written; a bad one throws std::invalid_argument
// naming the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/ranges.hpp>
#include <mixprec/kernels/thread_pool.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/optimizer_entry_points.hpp>

namespace mixprec::kernels {

namespace detail {

inline void check_finite(float value, const char* what, const char* name) {
  if (!std::isfinite(value))
    throw std::invalid_argument(std::string(what) + ": " + name + " must be finite; got " + mixprec::detail::number_text(value) + ".");
}

/// A slot (or the gradient) must have as many elements as the variable.
inline void check_size_matches(std::size_t size, std::size_t variable_size, const char* what, const char* name) {
  if (size != variable_size)
    throw std::invalid_argument(std::string(what) + ": " + name + " has " + std::to_string(size) +
                                " elements but w has " + std::to_string(variable_size) + "; they must match.");
}

/// Runs update(first, count) over the elements [0, n) in blocks on the kernels' thread pool (a
/// small n on the calling thread). Every block starts at a multiple of any vector length, so
/// each element goes through the same operations wherever the blocks fall: the updates are the
/// same bits on any number of threads.
template <class Update>
void for_each_block(std::size_t n, Update&& update) {
  constexpr std::size_t block = std::size_t{1} << 15, parallel_from = std::size_t{1} << 17;
  if (n < parallel_from) return update(std::size_t{0}, n);
  gemm_thread_pool()->run((n + block - 1) / block, [&](std::size_t index) {
    const std::size_t first = index * block;
    update(first, std::min(block, n - first));
  });
}

struct named_bytes {
  std::span<const std::byte> bytes;
  const char* name;
};

/// Every pair of the spans lies apart.
inline void check_apart(const char* what, std::initializer_list<named_bytes> spans) {
  for (auto a = spans.begin(); a != spans.end(); ++a)
    for (auto b = a + 1; b != spans.end(); ++b)
      mixprec::detail::check_disjoint(a->bytes, b->bytes, what, a->name, b->name);
}

/// Whether V computes in float32 (the kernel dtypes) rather than double.
template <class V>
constexpr bool float32_arithmetic = !std::is_same_v<V, double>;

/// A hyperparameter as V's arithmetic reads it: rounded to float for float32 arithmetic.
template <class V>
double as_read(double value) {
  return float32_arithmetic<V> ? static_cast<double>(static_cast<float>(value)) : value;
}
/// The value must be finite as V's arithmetic reads it (1e39 is infinite in float32).
template <class V>
void check_finite_as_read(double value, const char* what, const char* name) {
  if (!std::isfinite(as_read<V>(value)))
    throw std::invalid_argument(std::string(what) + ": " + name + " must be finite" +
                                (float32_arithmetic<V> ? " in float32" : "") + "; got " +
                                mixprec::detail::number_text(value) + ".");
}

template <class V>
void check_sgd_step(const sgd_step& step) {
  check_finite(step.learning_rate, "sgd_update", "the learning rate");
  if (!(step.momentum >= 0.0 && step.momentum <= 1.0))
    throw std::invalid_argument("sgd_update: `momentum` must be a float between [0, 1]. Got " +
                                mixprec::detail::number_text(step.momentum) + ".");
  check_finite_as_read<V>(step.weight_decay, "sgd_update", "weight_decay");
}

template <class V>
void check_beta(double beta, const char* name) {
  if (!(beta >= 0.0 && beta < 1.0))
    throw std::invalid_argument(std::string("adam_update: ") + name + " must be in [0, 1); got " + mixprec::detail::number_text(beta) +
                                ".");
  // float32(beta) = 1 would make beta^t = 1 and alpha a division by zero.
  if (float32_arithmetic<V> && static_cast<float>(beta) == 1.0f)
    throw std::invalid_argument(std::string("adam_update: ") + name + " = " + mixprec::detail::number_text(beta) +
                                " rounds to 1 in float32, which float32 arithmetic needs below 1.");
}

template <class V>
void check_adam_step(const adam_step& step) {
  check_finite(step.learning_rate, "adam_update", "the learning rate");
  check_beta<V>(step.beta_1, "beta_1");
  check_beta<V>(step.beta_2, "beta_2");
  if (!(step.epsilon >= 0.0 && std::isfinite(as_read<V>(step.epsilon))))
    throw std::invalid_argument("adam_update: epsilon must be finite and >= 0; got " + mixprec::detail::number_text(step.epsilon) + ".");
  if (step.iteration < 0 || step.iteration == std::numeric_limits<std::int64_t>::max())
    throw std::invalid_argument("adam_update: iteration (the steps taken before this one) must be in [0, 2^63 - 1); got " +
                                mixprec::detail::number_text(step.iteration) + ".");
  check_finite_as_read<V>(step.weight_decay, "adam_update", "weight_decay");
}

/// Adam's per-step scalars in float32 arithmetic, as described at the top of this file.
inline adam_scalars float32_adam_scalars(const adam_step& step) {
  const auto t = static_cast<double>(static_cast<float>(step.iteration + 1));  // Keras casts the step to float32
  const auto power = [t](double beta) {
    return static_cast<float>(std::pow(static_cast<double>(static_cast<float>(beta)), t));
  };
  const float beta_1_power = power(step.beta_1);
  const float beta_2_power = power(step.beta_2);
  const float alpha = step.learning_rate * std::sqrt(1.0f - beta_2_power) / (1.0f - beta_1_power);
  return {step.learning_rate,
          static_cast<float>(step.weight_decay),
          alpha,
          static_cast<float>(1.0 - step.beta_1),
          static_cast<float>(1.0 - step.beta_2),
          static_cast<float>(step.epsilon)};
}

/// AMSGrad's max: NaN in either gives NaN; of equal values v_hat stays (as in the kernels).
inline double amsgrad_max(double v_hat, double v) { return std::isnan(v) || v > v_hat ? v : v_hat; }

}  // namespace detail

/// One step of Keras' SGD on the variable w with gradient g (the rules above). velocity is the
/// momentum slot, as large as w; it may be empty only when step.momentum is 0 (then w = w - g *
/// lr). A velocity with momentum 0 is updated as Keras does with a momentum that rounds to 0 in
/// the variable's dtype (velocity = velocity * 0 - g * lr). Throws std::invalid_argument, before
/// writing anything, if the learning rate or weight decay is not finite, momentum is outside
/// [0, 1], a size differs, or two spans overlap.
template <class V>
  requires ComputeDType<V>
void sgd_update(std::span<V> w, std::span<const V> g, std::span<V> velocity, const sgd_step& step) {
  detail::check_sgd_step<V>(step);
  const std::size_t n = w.size();
  detail::check_size_matches(g.size(), n, "sgd_update", "g");
  if (velocity.empty() && step.momentum != 0.0) {
    if (n != 0)
      throw std::invalid_argument("sgd_update: momentum " + mixprec::detail::number_text(step.momentum) +
                                  " needs a velocity as large as w (" + std::to_string(n) + " elements); it is empty.");
  } else if (!velocity.empty()) {
    detail::check_size_matches(velocity.size(), n, "sgd_update", "velocity");
  }
  detail::check_apart("sgd_update", {{std::as_bytes(w), "w"}, {std::as_bytes(g), "g"}, {std::as_bytes(velocity), "velocity"}});
  if (n == 0) return;
  V* const slot = velocity.empty() ? nullptr : velocity.data();
  if constexpr (detail::has_optimizer_kernel<V>) {
    detail::for_each_block(n, [&](std::size_t first, std::size_t count) {
      V* const velocity_block = slot == nullptr ? nullptr : slot + first;
      detail::sgd_update(w.data() + first, g.data() + first, velocity_block, count, step);
    });
  } else {
    const double lr = step.learning_rate, wd = step.weight_decay, momentum = step.momentum;
    for (std::size_t i = 0; i < n; ++i) {
      const double decayed = wd != 0.0 ? w[i] - w[i] * wd * lr : w[i];
      if (slot == nullptr) {
        w[i] = decayed - g[i] * lr;
      } else {
        velocity[i] = velocity[i] * momentum - g[i] * lr;
        w[i] = decayed + (step.nesterov ? velocity[i] * momentum - g[i] * lr : velocity[i]);
      }
    }
  }
}

/// One step of Keras' Adam (AdamW: the same with step.weight_decay set) on the variable w with
/// gradient g (the rules above). m and v are the first and second moment slots, as large as w;
/// v_hat is AMSGrad's slot: empty for plain Adam, as large as w for AMSGrad. Throws
/// std::invalid_argument, before writing anything, if the learning rate or weight decay is not
/// finite, a beta is outside [0, 1) (or rounds to 1 in float32 arithmetic), epsilon is negative
/// or not finite, iteration is negative, a size differs, or two spans overlap.
template <class V>
  requires ComputeDType<V>
void adam_update(std::span<V> w, std::span<const V> g, std::span<V> m, std::span<V> v, std::span<V> v_hat,
                 const adam_step& step) {
  detail::check_adam_step<V>(step);
  const std::size_t n = w.size();
  detail::check_size_matches(g.size(), n, "adam_update", "g");
  detail::check_size_matches(m.size(), n, "adam_update", "m");
  detail::check_size_matches(v.size(), n, "adam_update", "v");
  if (!v_hat.empty()) detail::check_size_matches(v_hat.size(), n, "adam_update", "v_hat (AMSGrad's slot, or empty)");
  detail::check_apart("adam_update", {{std::as_bytes(w), "w"},
                                      {std::as_bytes(g), "g"},
                                      {std::as_bytes(m), "m"},
                                      {std::as_bytes(v), "v"},
                                      {std::as_bytes(v_hat), "v_hat"}});
  if (n == 0) return;
  V* const amsgrad = v_hat.empty() ? nullptr : v_hat.data();
  if constexpr (std::is_same_v<V, double>) {
    const double t = static_cast<double>(step.iteration + 1);
    const double lr = step.learning_rate, wd = step.weight_decay, epsilon = step.epsilon;
    const double alpha = lr * std::sqrt(1.0 - std::pow(step.beta_2, t)) / (1.0 - std::pow(step.beta_1, t));
    for (std::size_t i = 0; i < n; ++i) {
      const double decayed = wd != 0.0 ? w[i] - w[i] * wd * lr : w[i];
      m[i] = m[i] + (g[i] - m[i]) * (1.0 - step.beta_1);
      v[i] = v[i] + (g[i] * g[i] - v[i]) * (1.0 - step.beta_2);
      const double second_moment = amsgrad == nullptr ? v[i] : (v_hat[i] = detail::amsgrad_max(v_hat[i], v[i]));
      w[i] = decayed - (m[i] * alpha) / (std::sqrt(second_moment) + epsilon);
    }
  } else {
    const detail::adam_scalars scalars = detail::float32_adam_scalars(step);
    detail::for_each_block(n, [&](std::size_t first, std::size_t count) {
      V* const v_hat_block = amsgrad == nullptr ? nullptr : amsgrad + first;
      detail::adam_update(w.data() + first, g.data() + first, m.data() + first, v.data() + first, v_hat_block, count,
                          scalars);
    });
  }
}

/// Keras' clipvalue: g = clamp(g, -clip, clip) in place, rounded once to V (a clamped element
/// becomes V(clip), clip read as V's arithmetic reads it: rounded to float but for double). NaN
/// stays NaN (the canonical quiet NaN), -0 stays -0, clip = inf changes nothing else. Throws
/// std::invalid_argument if clip is negative or NaN.
template <class V>
  requires ComputeDType<V>
void clip_by_value(std::span<V> g, double clip) {
  if (!(clip >= 0.0))
    throw std::invalid_argument("clip_by_value: clip must be >= 0; got " + mixprec::detail::number_text(clip) + ".");
  if constexpr (detail::has_optimizer_kernel<V>) {
    detail::clip_by_value(g.data(), g.size(), static_cast<float>(clip));
  } else {
    for (double& x : g) x = x > clip ? clip : (x < -clip ? -clip : x);
  }
}

/// g = (g * multiplier) / divisor in place, computed in float32 (the factors rounded to float;
/// double in double) and rounded once to V. Keras' clipnorm is scale(g, clipnorm, max(norm,
/// clipnorm)) with norm = sqrt(dot(g, g)) (see reduce.hpp). Any values are accepted: a NaN or
/// infinite factor gives NaN or infinite gradients, as Keras' clipping does for a gradient whose
/// norm is not finite.
template <class V>
  requires ComputeDType<V>
void scale(std::span<V> g, double multiplier, double divisor) {
  if constexpr (detail::has_optimizer_kernel<V>) {
    detail::scale(g.data(), g.size(), static_cast<float>(multiplier), static_cast<float>(divisor));
  } else {
    for (double& x : g) x = x * multiplier / divisor;
  }
}

/// g = g * factor in place, rounded once to V: Keras' global_clipnorm multiplies every gradient
/// by factor = clip * min(1 / norm, 1 / clip) + (norm - norm) (NaN for a norm that is not
/// finite), the norm taken over all the gradients.
template <class V>
  requires ComputeDType<V>
void scale(std::span<V> g, double factor) {
  scale(g, factor, 1.0);  // dividing by 1 is exact
}

/// The optimizer kernels on any contiguous ranges (std::vector, std::array, spans): V is the
/// variable's element type, and the gradient and slots convert to spans of V (an empty slot: {}).
template <detail::output_range W>
  requires ComputeDType<detail::range_element_t<W>>
void sgd_update(W&& w, std::span<const detail::range_element_t<W>> g, std::span<detail::range_element_t<W>> velocity,
                const sgd_step& step) {
  kernels::sgd_update(detail::output_span(std::forward<W>(w)), g, velocity, step);
}
template <detail::output_range W>
  requires ComputeDType<detail::range_element_t<W>>
void adam_update(W&& w, std::span<const detail::range_element_t<W>> g, std::span<detail::range_element_t<W>> m,
                 std::span<detail::range_element_t<W>> v, std::span<detail::range_element_t<W>> v_hat,
                 const adam_step& step) {
  kernels::adam_update(detail::output_span(std::forward<W>(w)), g, m, v, v_hat, step);
}
template <detail::output_range G>
  requires ComputeDType<detail::range_element_t<G>>
void clip_by_value(G&& g, double clip) {
  kernels::clip_by_value(detail::output_span(std::forward<G>(g)), clip);
}
template <detail::output_range G>
  requires ComputeDType<detail::range_element_t<G>>
void scale(G&& g, double multiplier, double divisor) {
  kernels::scale(detail::output_span(std::forward<G>(g)), multiplier, divisor);
}
template <detail::output_range G>
  requires ComputeDType<detail::range_element_t<G>>
void scale(G&& g, double factor) {
  kernels::scale(detail::output_span(std::forward<G>(g)), factor);
}

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>
