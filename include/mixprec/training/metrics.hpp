// Metrics with Keras 3's semantics: each keeps a running mean of per-sample values over the
// batches it has seen (Keras' MeanMetricWrapper), read with result() and cleared with reset().
//
//   auto accuracy = metrics::get("accuracy", losses::SparseCategoricalCrossentropy(true));
//   accuracy.update(losses::targets(labels), predictions, classes);
//   accuracy.result();     // fraction of rows whose argmax is the label
//
// Per sample (a row of `cols` predictions p against targets t):
//   binary_accuracy               mean_c [ (p > 0.5) == t ]       (Keras' threshold 0.5, on p as given)
//   categorical_accuracy          argmax t == argmax p            (the first maximum wins ties)
//   sparse_categorical_accuracy   label == argmax p
//   mse / mae                     mean_c (p - t)^2 / mean_c |p - t|
// "accuracy" (or "acc") picks one of the three accuracies as Keras 2's legacy training loop did:
// binary when the loss is binary crossentropy or the predictions have one column, sparse when
// the targets are class ids, categorical otherwise. Keras 3 (and tf.keras 2's compile) looks at
// the shapes alone, so a multi-label binary crossentropy would get categorical accuracy; the
// loss says what the columns mean. The metric keeps the name it was asked by ("accuracy"), which
// is the key it has in the logs.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/training/losses.hpp>

namespace mixprec::metrics {

enum class metric_kind {
  binary_accuracy,
  categorical_accuracy,
  sparse_categorical_accuracy,
  mean_squared_error,
  mean_absolute_error
};

class Metric {
 public:
  /// The key in the logs.
  const std::string& name() const { return name_; }
  /// What it computes; empty for "accuracy" until its first update decides.
  std::optional<metric_kind> kind() const { return kind_; }

  template <class T>
  void update(const losses::targets& y_true, std::span<const T> y_pred, std::size_t cols) {
    if (cols == 0 || y_pred.size() % cols != 0)
      throw std::invalid_argument("Metric '" + name_ + "': " + std::to_string(y_pred.size()) +
                                  " predictions do not form rows of " + std::to_string(cols) + ".");
    const std::size_t rows = y_pred.size() / cols;
    const bool class_ids = !std::holds_alternative<std::span<const float>>(y_true);
    const metric_kind kind = kind_ ? *kind_ : (binary_loss_ || cols == 1) ? metric_kind::binary_accuracy
                                          : class_ids                      ? metric_kind::sparse_categorical_accuracy
                                                                           : metric_kind::categorical_accuracy;
    const bool wants_class_ids = kind == metric_kind::sparse_categorical_accuracy;
    const std::size_t expected = wants_class_ids ? rows : rows * cols;
    const std::size_t given = std::visit([](auto t) { return t.size(); }, y_true);
    if (class_ids != wants_class_ids || given != expected)
      throw std::invalid_argument("Metric '" + name_ + "' expects " + std::to_string(expected) +
                                  (wants_class_ids ? " class ids" : " float targets") + " for predictions of shape (" +
                                  std::to_string(rows) + ", " + std::to_string(cols) + "); received " +
                                  std::to_string(given) + (class_ids ? " class ids." : " float targets."));
    kind_ = kind;
    for (std::size_t r = 0; r < rows; ++r) total_ += sample_value(kind, y_true, y_pred.subspan(r * cols, cols), r);
    count_ += static_cast<double>(rows);
  }

  /// The mean over every sample seen since the last reset (0 before any).
  double result() const { return count_ == 0.0 ? 0.0 : total_ / count_; }
  void reset() {
    total_ = 0.0;
    count_ = 0.0;
  }

 private:
  friend Metric get(std::string_view identifier, const losses::Loss& loss);
  Metric(std::string name, std::optional<metric_kind> kind, bool binary_loss)
      : name_(std::move(name)), kind_(kind), binary_loss_(binary_loss) {}

  template <class T>
  static std::size_t argmax(std::span<const T> row) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < row.size(); ++c)
      if (static_cast<float>(row[c]) > static_cast<float>(row[best])) best = c;
    return best;
  }

  template <class T>
  static double sample_value(metric_kind kind, const losses::targets& y_true, std::span<const T> p, std::size_t r) {
    const std::size_t cols = p.size();
    if (kind == metric_kind::sparse_categorical_accuracy) {
      const auto label = std::visit(
          [&](auto t) -> std::int64_t {
            if constexpr (std::is_same_v<typename decltype(t)::value_type, float>) return -1;
            else return static_cast<std::int64_t>(t[r]);
          },
          y_true);
      return static_cast<std::int64_t>(argmax(p)) == label ? 1.0 : 0.0;
    }
    const auto t = std::get<std::span<const float>>(y_true).subspan(r * cols, cols);
    if (kind == metric_kind::categorical_accuracy) return argmax(p) == argmax(t) ? 1.0 : 0.0;
    double total = 0.0;
    for (std::size_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(static_cast<float>(p[c])) - static_cast<double>(t[c]);
      switch (kind) {
        case metric_kind::binary_accuracy:
          total += (static_cast<float>(p[c]) > 0.5f ? 1.0f : 0.0f) == t[c] ? 1.0 : 0.0;
          break;
        case metric_kind::mean_squared_error: total += d * d; break;
        default: total += std::fabs(d); break;
      }
    }
    return total / static_cast<double>(cols);
  }

  std::string name_;
  std::optional<metric_kind> kind_;
  bool binary_loss_;
  double total_ = 0.0;
  double count_ = 0.0;
};

/// A metric by Keras name: "accuracy" / "acc" (resolved against `loss` and the data, see above),
/// "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy", "mse" /
/// "mean_squared_error", "mae" / "mean_absolute_error". Anything else throws std::invalid_argument.
inline Metric get(std::string_view identifier, const losses::Loss& loss) {
  const std::string name(identifier);
  const bool binary_loss = loss.kind() == losses::loss_kind::binary_crossentropy;
  if (identifier == "accuracy" || identifier == "acc") return Metric(name, std::nullopt, binary_loss);
  if (identifier == "binary_accuracy") return Metric(name, metric_kind::binary_accuracy, false);
  if (identifier == "categorical_accuracy") return Metric(name, metric_kind::categorical_accuracy, false);
  if (identifier == "sparse_categorical_accuracy") return Metric(name, metric_kind::sparse_categorical_accuracy, false);
  if (identifier == "mse" || identifier == "mean_squared_error") return Metric(name, metric_kind::mean_squared_error, false);
  if (identifier == "mae" || identifier == "mean_absolute_error") return Metric(name, metric_kind::mean_absolute_error, false);
  throw std::invalid_argument("Could not interpret metric identifier: " + mixprec::detail::quote_for_message(name) +
                              ". Accepted: accuracy, acc, binary_accuracy, categorical_accuracy, "
                              "sparse_categorical_accuracy, mse, mean_squared_error, mae, mean_absolute_error.");
}

}  // namespace mixprec::metrics
