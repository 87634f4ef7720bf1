// compile(), train_on_batch(), test_on_batch() and compute_gradients() for both model kinds
// (Sequential and RuntimeModel): one training step, written once over what both models provide
// (forward_for_training, backward, collect_gradients, finish_step, regularization_loss).
//
// A step, in Keras' order: forward pass in training mode (recording) -> the loss in float32 and
// its gradient with respect to the output, in the output's dtype -> backward pass (activation
// gradients in each layer's compute dtype, weight gradients accumulated in float32 and handed
// over in the variable dtype) -> metrics -> the optimizer's apply -> the step's end (moving
// statistics, Dropout's generator). compute_gradients runs the same code up to the backward pass
// and stops there, returning the loss and the gradients. Everything that can reject the step (the
// inputs, the labels, the metrics, the optimizer's checks) runs before anything is written: a step
// that throws leaves the weights, the optimizer's slots and iterations, the moving statistics and
// the metrics as they were.
//
// Loss scaling: when the compiled optimizer is a LossScaleOptimizer (or has Keras 3's fixed
// loss_scale_factor), the loss's gradient is computed for the loss times the scale (in float32,
// before it is rounded to the output's dtype) and so are the regularizers' gradients; the
// optimizer unscales. A skipped step (non-finite gradients) also leaves the moving statistics and
// Dropout's generator as they were. The logs then hold "loss_scale" (the scale this step used)
// and "skipped" (1 or 0); "loss" is always the unscaled loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/detail/training_entry.hpp>
#include <mixprec/models/logs.hpp>
#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/experimental_policy.hpp>
#include <mixprec/runtime/loss_scale.hpp>
#include <mixprec/training/loss_scale_optimizer.hpp>
#include <mixprec/training/losses.hpp>
#include <mixprec/training/metrics.hpp>
#include <mixprec/training/optimizers.hpp>

namespace mixprec::detail {

/// What compile() leaves in a model.
struct compiled_model final : compiled_state {
  using any_optimizer = std::variant<optimizers::Optimizer, optimizers::LossScaleOptimizer>;
  compiled_model(any_optimizer&& o, losses::Loss l) : optimizer(std::move(o)), loss(std::move(l)) {}
  any_optimizer optimizer;
  losses::Loss loss;
  std::vector<metrics::Metric> metrics;

  /// The scale this step multiplies the loss by, if the loss is scaled.
  std::optional<float> loss_scale() const {
    if (const auto* scaled = std::get_if<optimizers::LossScaleOptimizer>(&optimizer)) return scaled->dynamic_scale();
    if (const auto factor = std::get<optimizers::Optimizer>(optimizer).settings().loss_scale_factor)
      return static_cast<float>(*factor);
    return std::nullopt;
  }
  /// Applies one step's gradients; false when a LossScaleOptimizer skipped them.
  // (A template for the reason Optimizer::apply is.)
  template <class Deferred = void>
  bool apply(std::span<const gradient_and_variable> pairs) {
    if (auto* scaled = std::get_if<optimizers::LossScaleOptimizer>(&optimizer)) return scaled->apply<Deferred>(pairs);
    std::get<optimizers::Optimizer>(optimizer).apply<Deferred>(pairs);
    return true;
  }
};

/// The optimizer that updates the weights (a LossScaleOptimizer's inner one): the one place that
/// knows where compile() keeps it.
inline optimizers::Optimizer& optimizer_of(compiled_model::any_optimizer& optimizer) {
  if (auto* scaled = std::get_if<optimizers::LossScaleOptimizer>(&optimizer)) return scaled->inner_optimizer();
  return std::get<optimizers::Optimizer>(optimizer);
}
inline optimizers::Optimizer& optimizer_of(compiled_model& compiled) { return optimizer_of(compiled.optimizer); }

/// What compile() gives a model whose policy asks for loss scaling and an optimizer that does
/// not scale yet: a LossScaleOptimizer for a dynamic scale, loss_scale_factor for a fixed one.
inline compiled_model::any_optimizer with_loss_scale(optimizers::Optimizer optimizer,
                                                     const std::optional<mixed_precision::experimental::LossScale>& scale) {
  if (!scale || optimizer.settings().loss_scale_factor) return optimizer;
  if (const auto* fixed = std::get_if<mixed_precision::experimental::FixedLossScale>(&*scale)) {
    optimizer.set_loss_scale_factor((*fixed)());
    return optimizer;
  }
  return optimizers::LossScaleOptimizer(std::move(optimizer), std::get<mixed_precision::experimental::DynamicLossScale>(*scale));
}

/// The loss scale a model's policy asks for. A compile-time Sequential: what its policy type
/// names (`using loss_scale = ...`), else dynamic if any layer computes in float16. A RuntimeModel: its
/// policy's explicit loss scale (an experimental Policy's), else dynamic if any layer computes
/// in float16.
template <class Model>
std::optional<mixed_precision::experimental::LossScale> policy_loss_scale(const Model& model) {
  using mixed_precision::experimental::DynamicLossScale;
  using mixed_precision::experimental::FixedLossScale;
  if constexpr (requires { typename Model::policy::loss_scale; }) {
    using named = typename Model::policy::loss_scale;
    if constexpr (requires { named::value; }) return FixedLossScale(named::value);
    else if constexpr (requires { named::growth_steps; }) return DynamicLossScale(named::initial_scale, named::growth_steps);
    else return std::nullopt;
  } else if constexpr (requires { typename Model::layer_types; }) {
    constexpr bool any_float16 = []<class... L>(std::tuple<L...>*) {
      return (std::is_same_v<typename L::compute_dtype, float16> || ...);
    }(static_cast<typename Model::layer_types*>(nullptr));
    if constexpr (any_float16) return DynamicLossScale();
    else return std::nullopt;
  } else {
    const auto& policy = model.dtype_policy();
    if (!policy.using_default_loss_scale()) return policy.loss_scale();
    if (model.computes_in_float16()) return DynamicLossScale();
    return std::nullopt;
  }
}

/// Labels as the loss reads them: class ids as they are, floating targets in float32 (Keras
/// casts y_true to float32).
struct prepared_targets {
  value_buffer<float> floats;
  losses::targets view;
};

template <class L>
prepared_targets prepare_targets(std::span<const L> labels) {
  prepared_targets t;
  if constexpr (std::is_same_v<L, std::int32_t> || std::is_same_v<L, std::int64_t>) {
    t.view = labels;
  } else if constexpr (std::is_integral_v<L>) {
    static_assert(sizeof(L) == 0, "Class ids are int32_t or int64_t.");
  } else {
    if (!kernels::all_finite<L>(labels))
      throw std::invalid_argument("the labels hold a non-finite value (NaN or infinity).");
    t.floats.resize(labels.size());
    kernels::convert<L, float>(labels, std::span(t.floats));
    t.view = std::span<const float>(t.floats);
  }
  return t;
}

template <class T>
void check_finite_inputs(std::span<const T> x) {
  if constexpr (!std::is_integral_v<T>)
    if (!kernels::all_finite<T>(x))
      throw std::invalid_argument("the inputs hold a non-finite value (NaN or infinity); a training step on them would "
                                  "make every weight NaN.");
}

inline compiled_model& compiled_of(compiled_slot& slot) {
  if (!slot.state) throw std::logic_error("You must call `compile()` before using the model.");
  return static_cast<compiled_model&>(*slot.state);
}

/// The metrics after this batch alone (Keras' train_on_batch resets them first), computed on
/// copies so that a rejection changes nothing.
template <class T>
std::vector<metrics::Metric> batch_metrics(const compiled_model& c, const losses::targets& targets,
                                           std::span<const T> output, std::size_t columns) {
  std::vector<metrics::Metric> result = c.metrics;
  for (auto& metric : result) {
    metric.reset();
    metric.update<T>(targets, output, columns);
  }
  return result;
}

inline Logs logs_of(double loss, const std::vector<metrics::Metric>& metrics) {
  Logs logs{{"loss", loss}};
  for (const auto& metric : metrics) logs[metric.name()] = metric.result();
  return logs;
}

/// f(values) with a model's output: a typed span (Sequential) or any_span (RuntimeModel).
template <class Output, class F>
decltype(auto) with_output(const Output& output, F&& f) {
  if constexpr (std::is_same_v<Output, any_span>) return std::visit(f, output);
  else return f(output);
}

/// What a training step and compute_gradients share: the forward pass in training mode
/// (recording), the loss (plus the regularization losses) and its gradient, the backward pass,
/// and the (gradient, variable) pairs of the trained weights. Nothing persistent is written here
/// (the engines keep the step's record until the next one); then(total_loss, output, pairs)
/// decides what to do with the result, the output still valid.
template <class Model, class Input, class Then>
decltype(auto) forward_and_backward(Model& model, const compiled_model& c, const Input& x,
                                    const losses::targets& targets, float loss_scale, Then&& then) {
  const auto output = model.forward_for_training(x);
  return with_output(output, [&](auto values) -> decltype(auto) {
    using T = typename decltype(values)::value_type;
    value_buffer<T> gradient(values.size());
    const float loss = c.loss.compute<T>(targets, values, model.output_columns(), std::span(gradient), loss_scale);
    const double total = static_cast<double>(loss) + model.regularization_loss();
    model.backward(std::span<T>(gradient), loss_scale);
    std::vector<gradient_and_variable> pairs;
    model.collect_gradients(pairs);
    return then(total, values, pairs);
  });
}

/// One training step (see the top of this file).
template <class Model, class Input>
Logs train_step(Model& model, compiled_model& c, const Input& x, const losses::targets& targets) {
  const std::optional<float> loss_scale = c.loss_scale();
  const auto step = [&](double total, auto values, std::vector<gradient_and_variable>& pairs) {
    std::vector<metrics::Metric> updated = batch_metrics(c, targets, values, model.output_columns());
    const bool applied = c.apply(pairs);
    if (applied) model.finish_step();
    c.metrics = std::move(updated);
    Logs logs = logs_of(total, c.metrics);
    if (loss_scale) {
      logs[std::string(loss_scale_key)] = *loss_scale;
      logs[std::string(skipped_key)] = applied ? 0.0 : 1.0;
    }
    return logs;
  };
  return forward_and_backward(model, c, x, targets, loss_scale.value_or(1.0f), step);
}

/// A training step's loss and gradients with nothing applied: no optimizer step, no moving
/// statistics, Dropout's generator not advanced (the next call draws the same mask), the metrics
/// untouched. The gradients are copied out in the variable dtype, shaped as trainable_weights(),
/// and are those of the loss itself: no loss scaling (a custom loop scales, if it wants to).
template <class Model, class Input>
Gradients gradient_step(Model& model, const compiled_model& c, const Input& x, const losses::targets& targets) {
  return forward_and_backward(model, c, x, targets, 1.0f, [&](double total, auto, std::vector<gradient_and_variable>& pairs) {
    const std::vector<weight_handle> weights = model.trainable_weights();
    if (weights.size() != pairs.size())
      throw std::logic_error("compute_gradients: " + std::to_string(pairs.size()) + " gradients for " +
                             std::to_string(weights.size()) + " trainable weights.");
    Gradients result{total, {}};
    result.gradients.reserve(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i)
      std::visit([&](const auto& pair) {
        using V = typename decltype(pair.gradient)::value_type;
        result.gradients.emplace_back(weights[i].extents, value_buffer<V>(pair.gradient.begin(), pair.gradient.end()));
      }, pairs[i]);
    return result;
  });
}

/// The loss (with regularization) and metrics of a batch in inference mode.
template <class Model, class T>
Logs test_step(Model& model, compiled_model& c, std::span<const T> output, const losses::targets& targets) {
  const float loss = c.loss.compute<T>(targets, output, model.output_columns());
  std::vector<metrics::Metric> updated = batch_metrics(c, targets, output, model.output_columns());
  c.metrics = std::move(updated);
  return logs_of(static_cast<double>(loss) + model.regularization_loss(), c.metrics);
}

/// compile()'s loss: a losses::... object or a Keras name. A null name is Keras' loss=None,
/// refused here already (Keras refuses it at the first step), in Keras' words.
template <class Loss>
losses::Loss compiled_loss(const Loss& loss) {
  static_assert(!std::is_null_pointer_v<Loss>, "No loss to compute. Provide a `loss` argument in `compile()`.");
  static_assert(std::is_base_of_v<losses::Loss, Loss> || std::is_convertible_v<Loss, std::string_view>,
                "compile(optimizer, loss, metrics): the loss is a losses::... object or a Keras loss name.");
  constexpr const char* no_loss = "No loss to compute. Provide a `loss` argument in `compile()`.";
  if constexpr (std::is_base_of_v<losses::Loss, Loss>) {
    return losses::Loss(loss);
  } else if constexpr (std::is_null_pointer_v<Loss>) {
    throw std::invalid_argument(no_loss);  // reported above; nothing more to report
  } else {
    if constexpr (std::is_pointer_v<Loss>)
      if (loss == nullptr) throw std::invalid_argument(no_loss);
    return losses::get(std::string_view(loss));
  }
}

template <class Model>
struct training_entry<Model, void> {
  template <class Optimizer, class Loss>
  static void compile(Model& model, Optimizer optimizer, Loss loss, const std::vector<std::string>& metric_names,
                      const CompileOptions& options) {
    static_assert(std::is_base_of_v<optimizers::Optimizer, Optimizer> ||
                      std::is_same_v<optimizers::LossScaleOptimizer, Optimizer>,
                  "compile(optimizer, loss, metrics): the optimizer is optimizers::SGD, Adam, AdamW or a "
                  "LossScaleOptimizer around one of them.");
    losses::Loss resolved = compiled_loss(loss);
    compiled_model::any_optimizer chosen = [&]() -> compiled_model::any_optimizer {
      if constexpr (std::is_same_v<optimizers::LossScaleOptimizer, Optimizer>) return std::move(optimizer);
      else if (!options.auto_scale_loss) return optimizers::Optimizer(std::move(optimizer));
      else return with_loss_scale(std::move(optimizer), policy_loss_scale(model));
    }();
    auto state = std::make_unique<compiled_model>(std::move(chosen), resolved);
    for (const std::string& name : metric_names) state->metrics.push_back(metrics::get(name, resolved));
    model.compiled_.state = std::move(state);
  }

  /// What compile() left in the model (std::logic_error before compile()).
  static compiled_model& compiled(Model& model) { return compiled_of(model.compiled_); }
  static optimizers::Optimizer& optimizer(Model& model) { return optimizer_of(compiled(model)); }
  static optimizers::LossScaleOptimizer* loss_scale_optimizer(Model& model) {
    return std::get_if<optimizers::LossScaleOptimizer>(&compiled_of(model.compiled_).optimizer);
  }

  /// Sequential: typed tensors (their shapes checked by the compiler).
  template <class T, std::size_t... E, class L, std::size_t... F>
  static Logs train_on_batch(Model& model, const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    compiled_model& c = compiled_of(model.compiled_);
    check_finite_inputs<T>(x.values());
    const prepared_targets targets = prepare_targets<L>(y.values());
    return train_step(model, c, x, targets.view);
  }
  template <class T, std::size_t... E, class L, std::size_t... F>
  static Gradients compute_gradients(Model& model, const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    const compiled_model& c = compiled_of(model.compiled_);
    check_finite_inputs<T>(x.values());
    const prepared_targets targets = prepare_targets<L>(y.values());
    return gradient_step(model, c, x, targets.view);
  }
  template <class T, std::size_t... E, class L, std::size_t... F>
  static Logs test_on_batch(Model& model, const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    compiled_model& c = compiled_of(model.compiled_);
    const prepared_targets targets = prepare_targets<L>(y.values());
    const auto output = model(x);
    return test_step(model, c, std::span(output.values()), targets.view);
  }

  /// RuntimeModel: AnyTensors.
  static Logs train_on_batch(Model& model, const AnyTensor& x, const AnyTensor& y) {
    compiled_model& c = compiled_of(model.compiled_);
    x.visit([](auto values) { check_finite_inputs(values); });
    const prepared_targets targets = runtime_targets(model, x, y);
    return train_step(model, c, x, targets.view);
  }
  static Gradients compute_gradients(Model& model, const AnyTensor& x, const AnyTensor& y) {
    const compiled_model& c = compiled_of(model.compiled_);
    x.visit([](auto values) { check_finite_inputs(values); });
    const prepared_targets targets = runtime_targets(model, x, y);
    return gradient_step(model, c, x, targets.view);
  }
  static Logs test_on_batch(Model& model, const AnyTensor& x, const AnyTensor& y) {
    compiled_model& c = compiled_of(model.compiled_);
    const prepared_targets targets = runtime_targets(model, x, y);
    const AnyTensor output = model(x);
    return output.visit([&](auto values) -> Logs {
      if constexpr (std::is_integral_v<typename decltype(values)::value_type>)
        throw std::logic_error("a model's output is floating");
      else
        return test_step(model, c, values, targets.view);
    });
  }

  /// What train_on_batch (finite_rows: the first rows of x; 0 for test_on_batch's checks) checks
  /// of its data, over all of x and y at once, writing nothing: fit runs it on the training and
  /// validation data before its first step, so that bad data anywhere changes nothing.
  template <class T, std::size_t... E, class L, std::size_t... F>
  static void check_data(Model& model, const Tensor<T, E...>& x, const Tensor<L, F...>& y, std::size_t finite_rows) {
    const compiled_model& c = compiled_of(model.compiled_);
    check_finite_inputs<T>(x.values().first(finite_rows * (x.size() / x.batch())));
    c.loss.check_targets(prepare_targets<L>(y.values()).view, x.batch(), model.output_columns());
  }
  static void check_data(Model& model, const AnyTensor& x, const AnyTensor& y, std::size_t finite_rows) {
    const compiled_model& c = compiled_of(model.compiled_);
    model.check_input(x);
    x.visit([&](auto values) { check_finite_inputs(values.first(finite_rows * (values.size() / x.batch()))); });
    c.loss.check_targets(runtime_targets(model, x, y).view, x.batch(), model.output_columns());
  }

 private:
  /// y against the output's shape: class ids one per row, floating targets the output's shape.
  static prepared_targets runtime_targets(const Model& model, const AnyTensor& x, const AnyTensor& y) {
    std::vector<std::size_t> expected = with_batch(x.batch(), model.output_shape());
    if (!y.floating()) expected.pop_back();
    std::vector<std::size_t> given = y.extents();
    if (!y.floating() && given.size() == expected.size() + 1 && given.back() == 1) given.pop_back();
    if (given != expected) {
      throw std::invalid_argument("RuntimeModel '" + mixprec::detail::quote_for_message(model.name()) + "': labels of shape " + extents_text(y.extents()) + " (" +
                                  std::string(y.dtype()) + ") do not fit the output " +
                                  extents_text(with_batch(x.batch(), model.output_shape())) +
                                  (y.floating() ? ": floating targets need the output's shape."
                                                : ": class ids come one per row."));
    }
    return y.visit([](auto labels) {
      using L = typename decltype(labels)::value_type;
      if constexpr (std::is_integral_v<L> && !std::is_same_v<L, std::int32_t> && !std::is_same_v<L, std::int64_t>)
        return prepared_targets{};
      else
        return prepare_targets<L>(labels);
    });
  }
};

}  // namespace mixprec::detail
