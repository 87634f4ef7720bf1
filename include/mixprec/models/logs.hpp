// Logs: what a training or evaluation step reports, Keras' logs dict ("loss", "accuracy", ...).
// CompileOptions: compile()'s settings beyond the optimizer, the loss and the metrics.
// Gradients: what compute_gradients reports, the loss and d loss / d weight for each trainable
// weight (a GradientTape's answer, for custom training loops).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <mixprec/models/any_tensor.hpp>

namespace mixprec {

using Logs = std::map<std::string, double>;

/// The log keys of loss scaling (pinned): the scale a step used, and 1 if it was skipped (an
/// epoch's logs: the last step's scale, and the number of skipped steps).
inline constexpr std::string_view loss_scale_key = "loss_scale";
inline constexpr std::string_view skipped_key = "skipped";

/// compile(optimizer, loss, metrics, options).
struct CompileOptions {
  /// Keras 3's auto_scale_loss: a model whose policy asks for loss scaling (it computes in
  /// float16, or carries a loss scale) gets it unless this is false.
  bool auto_scale_loss = true;
};

/// The result of model.compute_gradients(x, y).
struct Gradients {
  /// The loss plus the regularization losses: the number train_on_batch would report as "loss".
  double loss = 0.0;
  /// One per entry of model.trainable_weights(), in that order: the gradient of `loss` with
  /// respect to that weight, in the weight's (variable) dtype and with its shape.
  std::vector<AnyTensor> gradients;
};

}  // namespace mixprec
