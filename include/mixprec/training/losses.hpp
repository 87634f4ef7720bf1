// Losses with Keras 3's semantics, computed in float32 whatever the model's dtypes (Keras' Loss
// converts both y_true and y_pred to float32 first), reduced "sum_over_batch_size": the sum of
// the per-sample losses divided by the batch size.
//
//   losses::SparseCategoricalCrossentropy loss(/*from_logits=*/true);
//   float value = loss.compute(losses::targets(labels), logits, classes, gradient, scale);
//
// compute() returns the loss and, when `gradient` is not empty, writes d loss / d y_pred times
// `scale` (the loss scale: scaling the gradient here is scaling the loss), computed in float32 and
// rounded once to the predictions' dtype: under mixed_float16 this is the float16 gradient that
// flows back through the model, which is why float16 training needs loss scaling.
//
// Per sample (one row of `cols` predictions p against targets t):
//   MeanSquaredError                 mean_c (p - t)^2
//   MeanAbsoluteError                mean_c |p - t|                (gradient sign(p - t), 0 at 0)
//   BinaryCrossentropy               mean_c -(t log p + (1 - t) log(1 - p)), p clipped to [1e-7, 1 - 1e-7]
//                                    (the gradient is 0 where the clip bites); from_logits: the stable
//                                    max(x, 0) - x t + log1p(exp(-|x|)); label_smoothing: t (1 - s) + s / 2
//   CategoricalCrossentropy          -sum_c t log o, o = p / sum(p) clipped to [1e-7, 1 - 1e-7];
//                                    from_logits: sum_c t (logsumexp(x) - x_c); label_smoothing: t (1 - s) + s / cols
//   SparseCategoricalCrossentropy    the same with t the one-hot row of an integer class id
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::losses {

enum class loss_kind {
  mean_squared_error,
  mean_absolute_error,
  binary_crossentropy,
  categorical_crossentropy,
  sparse_categorical_crossentropy
};

/// y_true: float targets shaped like the predictions, or one class id per row (sparse loss).
using targets = std::variant<std::span<const float>, std::span<const std::int32_t>, std::span<const std::int64_t>>;

/// Keras' fuzz factor: probabilities are clipped to [epsilon, 1 - epsilon] before the log.
inline constexpr float epsilon = 1e-7f;

namespace detail {

inline std::string shape_text(std::size_t rows, std::size_t cols) {
  // Appended, not "(" + std::string: GCC 12 reports a false -Wrestrict on the latter (bug 105329).
  std::string text = "(";
  text.append(std::to_string(rows)).append(", ").append(std::to_string(cols)).append(")");
  return text;
}

/// Row-wise log-sum-exp and softmax in float32 (max subtracted, summed in order).
struct row_softmax {
  float log_sum_exp = 0.0f;
  std::vector<float> probabilities;

  explicit row_softmax(std::span<const float> logits) : probabilities(logits.size()) {
    const float largest = *std::max_element(logits.begin(), logits.end());
    float total = 0.0f;
    for (std::size_t c = 0; c < logits.size(); ++c) total += probabilities[c] = std::exp(logits[c] - largest);
    for (float& p : probabilities) p /= total;
    log_sum_exp = largest + std::log(total);
  }
};

inline bool inside_clip(float o) { return o >= epsilon && o <= 1.0f - epsilon; }
inline float clipped(float o) { return std::clamp(o, epsilon, 1.0f - epsilon); }

}  // namespace detail

class Loss {
 public:
  loss_kind kind() const { return kind_; }
  /// Keras' name: "mean_squared_error", "sparse_categorical_crossentropy", ...
  std::string_view name() const { return names[static_cast<std::size_t>(kind_)]; }
  /// Keras' class name: "MeanSquaredError", ...
  std::string_view class_name() const { return class_names[static_cast<std::size_t>(kind_)]; }
  bool from_logits() const { return from_logits_; }
  float label_smoothing() const { return label_smoothing_; }
  std::string_view reduction() const { return "sum_over_batch_size"; }
  bool sparse() const { return kind_ == loss_kind::sparse_categorical_crossentropy; }

  /// The batch's loss (float32), and d loss / d y_pred * scale into `gradient` (rounded once to T)
  /// unless it is empty. y_pred is rows x cols, row-major. Throws std::invalid_argument for
  /// targets of the wrong count or kind, or class ids outside [0, cols); nothing is written then.
  template <class T>
  float compute(const targets& y_true, std::span<const T> y_pred, std::size_t cols, std::span<T> gradient = {},
                float scale = 1.0f) const {
    if (cols == 0 || y_pred.size() % cols != 0)
      throw std::invalid_argument(std::string(class_name()) + ": " + std::to_string(y_pred.size()) +
                                  " predictions do not form rows of " + std::to_string(cols) + ".");
    if (!gradient.empty() && gradient.size() != y_pred.size())
      throw std::invalid_argument(std::string(class_name()) + ": the gradient has " + std::to_string(gradient.size()) +
                                  " elements for " + std::to_string(y_pred.size()) + " predictions.");
    const std::size_t rows = y_pred.size() / cols;
    check_targets(y_true, rows, cols);
    if (rows == 0) return 0.0f;

    std::vector<float> p(cols), t(cols), g(cols);
    double total = 0.0;  // per-sample losses are float32; their sum is exact enough in double
    const float per_row = 1.0f / static_cast<float>(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) p[c] = static_cast<float>(y_pred[r * cols + c]);
      target_row(y_true, r, cols, t);
      total += row_loss(p, t, g);
      if (gradient.empty()) continue;
      for (std::size_t c = 0; c < cols; ++c) gradient[r * cols + c] = T(g[c] * per_row * scale);
    }
    return static_cast<float>(total / static_cast<double>(rows));
  }

  /// What compute checks of the targets for rows x cols predictions (their count and kind, class
  /// ids in [0, cols)), computing nothing: fit checks all its data so before its first step.
  void check_targets(const targets& y_true, std::size_t rows, std::size_t cols) const {
    if (sparse()) {
      std::visit(
          [&](auto labels) {
            using L = typename decltype(labels)::value_type;
            if constexpr (std::is_same_v<L, float>) {
              throw std::invalid_argument(std::string(class_name()) +
                                          " takes integer class ids (int32 or int64), not float targets; use "
                                          "CategoricalCrossentropy for one-hot or probability targets.");
            } else {
              if (labels.size() != rows)
                throw std::invalid_argument(
                    "Arguments `target` and `output` must have the same shape up until the last dimension: target.shape=(" +
                    std::to_string(labels.size()) + ",), output.shape=" + detail::shape_text(rows, cols));
              for (const L label : labels)
                if (label < 0 || static_cast<std::uint64_t>(label) >= cols)
                  throw std::invalid_argument("Received a label value of " + std::to_string(label) +
                                              " which is outside the valid range of [0, " + std::to_string(cols) + ").");
            }
          },
          y_true);
      return;
    }
    const auto* values = std::get_if<std::span<const float>>(&y_true);
    if (values == nullptr)
      throw std::invalid_argument(std::string(class_name()) +
                                  " takes float targets shaped like the predictions, not class ids; use "
                                  "SparseCategoricalCrossentropy for integer labels.");
    if (values->size() != rows * cols)
      throw std::invalid_argument("Arguments `target` and `output` must have the same shape. Received: target has " +
                                  std::to_string(values->size()) + " values, output.shape=" + detail::shape_text(rows, cols));
  }

  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json config = {{"name", name()}, {"reduction", reduction()}};
    if (kind_ >= loss_kind::binary_crossentropy) config["from_logits"] = from_logits_;
    if (kind_ == loss_kind::binary_crossentropy || kind_ == loss_kind::categorical_crossentropy) {
      config["label_smoothing"] = label_smoothing_;
      config["axis"] = -1;
    }
    return config;
  }

 protected:
  Loss(loss_kind kind, bool from_logits, float label_smoothing)
      : kind_(kind), from_logits_(from_logits), label_smoothing_(label_smoothing) {
    if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
      throw std::invalid_argument(std::string(class_name()) + ": label_smoothing must be in [0, 1]. Received: label_smoothing=" +
                                  mixprec::detail::number_text(label_smoothing));
  }

 private:
  static constexpr std::string_view names[] = {"mean_squared_error", "mean_absolute_error", "binary_crossentropy",
                                               "categorical_crossentropy", "sparse_categorical_crossentropy"};
  static constexpr std::string_view class_names[] = {"MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
                                                     "CategoricalCrossentropy", "SparseCategoricalCrossentropy"};


  /// Row r of the targets as floats, label smoothing applied.
  void target_row(const targets& y_true, std::size_t r, std::size_t cols, std::vector<float>& t) const {
    std::visit(
        [&](auto labels) {
          using L = typename decltype(labels)::value_type;
          if constexpr (std::is_same_v<L, float>) {
            std::copy_n(labels.begin() + static_cast<std::ptrdiff_t>(r * cols), cols, t.begin());
          } else {
            std::fill(t.begin(), t.end(), 0.0f);
            t[static_cast<std::size_t>(labels[r])] = 1.0f;
          }
        },
        y_true);
    if (label_smoothing_ == 0.0f) return;
    const float uniform = kind_ == loss_kind::binary_crossentropy ? 0.5f : 1.0f / static_cast<float>(cols);
    for (float& v : t) v = v * (1.0f - label_smoothing_) + label_smoothing_ * uniform;
  }

  /// One sample's loss; g = d(sample loss) / d p.
  float row_loss(const std::vector<float>& p, const std::vector<float>& t, std::vector<float>& g) const {
    const std::size_t cols = p.size();
    const float inv_cols = 1.0f / static_cast<float>(cols);
    float loss = 0.0f;
    switch (kind_) {
      case loss_kind::mean_squared_error:
        for (std::size_t c = 0; c < cols; ++c) {
          const float d = p[c] - t[c];
          loss += d * d;
          g[c] = 2.0f * d * inv_cols;
        }
        return loss * inv_cols;
      case loss_kind::mean_absolute_error:
        for (std::size_t c = 0; c < cols; ++c) {
          const float d = p[c] - t[c];
          loss += std::fabs(d);
          g[c] = (d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f) * inv_cols;
        }
        return loss * inv_cols;
      case loss_kind::binary_crossentropy:
        for (std::size_t c = 0; c < cols; ++c) {
          if (from_logits_) {
            const float x = p[c];
            const float e = std::exp(-std::fabs(x));  // never overflows
            loss += std::max(x, 0.0f) - x * t[c] + std::log1p(e);
            const float sigmoid = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
            g[c] = (sigmoid - t[c]) * inv_cols;
          } else {
            const float o = detail::clipped(p[c]);
            loss -= t[c] * std::log(o) + (1.0f - t[c]) * std::log(1.0f - o);
            g[c] = detail::inside_clip(p[c]) ? (-t[c] / o + (1.0f - t[c]) / (1.0f - o)) * inv_cols : 0.0f;
          }
        }
        return loss * inv_cols;
      case loss_kind::categorical_crossentropy:
      case loss_kind::sparse_categorical_crossentropy:
        return from_logits_ ? crossentropy_from_logits(p, t, g) : crossentropy_from_probabilities(p, t, g);
    }
    throw std::logic_error("Loss: unknown loss kind");
  }

  static float crossentropy_from_logits(const std::vector<float>& x, const std::vector<float>& t, std::vector<float>& g) {
    const detail::row_softmax softmax(x);
    float loss = 0.0f, target_total = 0.0f;
    for (std::size_t c = 0; c < x.size(); ++c) {
      // A class with target 0 adds nothing, even where its -log p is infinite (a -inf logit, or
      // logits ~1e38 apart): 0 * inf would be NaN. The sparse loss is lse - x[label].
      if (t[c] != 0.0f) loss += t[c] * (softmax.log_sum_exp - x[c]);
      target_total += t[c];
    }
    for (std::size_t c = 0; c < x.size(); ++c) g[c] = softmax.probabilities[c] * target_total - t[c];
    return loss;
  }

  /// o = p / sum(p), clipped; d/dp_j = (h_j - sum_c h_c o_c) / sum(p) with h = d loss / d o.
  static float crossentropy_from_probabilities(const std::vector<float>& p, const std::vector<float>& t,
                                               std::vector<float>& g) {
    float total = 0.0f;
    for (const float v : p) total += v;
    float loss = 0.0f, h_dot_o = 0.0f;
    for (std::size_t c = 0; c < p.size(); ++c) {
      const float o = p[c] / total;
      loss -= t[c] * std::log(detail::clipped(o));
      g[c] = detail::inside_clip(o) ? -t[c] / o : 0.0f;
      h_dot_o += g[c] * o;
    }
    for (float& v : g) v = (v - h_dot_o) / total;
    return loss;
  }

  loss_kind kind_;
  bool from_logits_;
  float label_smoothing_;
};

struct MeanSquaredError : Loss {
  MeanSquaredError() : Loss(loss_kind::mean_squared_error, false, 0.0f) {}
};
struct MeanAbsoluteError : Loss {
  MeanAbsoluteError() : Loss(loss_kind::mean_absolute_error, false, 0.0f) {}
};
struct BinaryCrossentropy : Loss {
  explicit BinaryCrossentropy(bool from_logits = false, float label_smoothing = 0.0f)
      : Loss(loss_kind::binary_crossentropy, from_logits, label_smoothing) {}
};
struct CategoricalCrossentropy : Loss {
  explicit CategoricalCrossentropy(bool from_logits = false, float label_smoothing = 0.0f)
      : Loss(loss_kind::categorical_crossentropy, from_logits, label_smoothing) {}
};
struct SparseCategoricalCrossentropy : Loss {
  explicit SparseCategoricalCrossentropy(bool from_logits = false)
      : Loss(loss_kind::sparse_categorical_crossentropy, from_logits, 0.0f) {}
};

/// A loss by Keras name ("mse", "mean_squared_error", "sparse_categorical_crossentropy", ...),
/// with Keras' defaults. Unknown names throw std::invalid_argument listing the accepted ones.
inline Loss get(std::string_view name) {
  if (name == "mse" || name == "mean_squared_error" || name == "MeanSquaredError") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error" || name == "MeanAbsoluteError") return MeanAbsoluteError();
  if (name == "binary_crossentropy" || name == "BinaryCrossentropy") return BinaryCrossentropy();
  if (name == "categorical_crossentropy" || name == "CategoricalCrossentropy") return CategoricalCrossentropy();
  if (name == "sparse_categorical_crossentropy" || name == "SparseCategoricalCrossentropy")
    return SparseCategoricalCrossentropy();
  throw std::invalid_argument("Could not interpret loss identifier: " + mixprec::detail::quote_for_message(name) +
                              ". Accepted: mse, mae, mean_squared_error, mean_absolute_error, binary_crossentropy, "
                              "categorical_crossentropy, sparse_categorical_crossentropy (or their class names).");
}

}  // namespace mixprec::losses
