// Keras 3's LossScaleOptimizer: dynamic loss scaling around another optimizer, for float16
// training (seeds 000 and 002), with tf.keras' floor and growth guard and mixprec's stall error.
//
//   optimizers::LossScaleOptimizer opt(optimizers::Adam(1e-3));   // scale 2^15, grows every 2000
//   model.compile(opt, losses::SparseCategoricalCrossentropy(true));
//   // compile() does this by itself for a model that computes in float16.
//
// A step: the model multiplies the loss by dynamic_scale() (its gradient, in fact, computed in
// float32 before it is rounded to the output's dtype) -> apply(): ONE pass over every gradient
// multiplies it by 1 / scale and checks it is finite (kernels' unscale_and_check_finite) ->
//   finite:     the inner optimizer applies the gradients (its iterations advance); after
//               dynamic_growth_steps finite steps in a row the scale doubles, if that is finite;
//   not finite: the step is skipped: weights, slots and the inner optimizer's iterations stay
//               bit-identical; the scale halves (not below minimum_scale) and the count restarts.
// Two counts: iterations() is the number of APPLIED updates (the inner optimizer's, which
// learning-rate schedules read), attempted_steps() counts skipped steps too.
// A model stuck at the minimum scale trains on nothing: when max_skipped_steps_at_minimum steps in
// a row are skipped with the scale already at its minimum, the last apply() throws (changing
// nothing) and says what to try.
//
// Fixed loss scaling is the inner optimizer's loss_scale_factor (Keras 3), never a skipped step.
// A compile-time policy may name its loss scale: loss_scales::dynamic<>, loss_scales::fixed<V>,
// loss_scales::none (struct my_policy : policies::mixed_float16 { using loss_scale = ...; }).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/loss_scale.hpp>
#include <mixprec/training/optimizers.hpp>

namespace mixprec {

namespace loss_scales {

/// Compile-time loss scales a policy type may name (`using loss_scale = ...`).
template <std::int64_t InitialScale = 32768, std::int64_t GrowthSteps = 2000>
struct dynamic {
  static_assert(InitialScale >= 1 && GrowthSteps >= 1, "loss_scales::dynamic<InitialScale, GrowthSteps>: both must be >= 1.");
  static constexpr double initial_scale = static_cast<double>(InitialScale);
  static constexpr std::int64_t growth_steps = GrowthSteps;
};
template <std::int64_t Value>
struct fixed {
  static_assert(Value >= 1, "loss_scales::fixed<Value>: a loss scale must be at least 1.");
  static constexpr double value = static_cast<double>(Value);
};
struct none {};

}  // namespace loss_scales

namespace detail {

template <class P, class = void>
struct named_loss_scale {
  using type = std::conditional_t<std::is_same_v<typename P::compute_dtype, float16>, loss_scales::dynamic<>, loss_scales::none>;
};
template <class P>
struct named_loss_scale<P, std::void_t<typename P::loss_scale>> {
  using type = typename P::loss_scale;
};

}  // namespace detail

/// The loss scale a model with policy P trains with: P::loss_scale if P names one, else dynamic
/// when P computes in float16, else none.
template <class P>
using loss_scale_of = typename detail::named_loss_scale<P>::type;

}  // namespace mixprec

namespace mixprec::optimizers {

/// mixprec's settings beyond Keras 3's arguments.
struct loss_scale_options {
  /// The scale never halves below this (tf.keras' floor is 1).
  double minimum_scale = 1.0;
  /// Consecutive skipped steps at the minimum scale after which apply() throws; 0: never.
  std::int64_t max_skipped_steps_at_minimum = 20;
};

class LossScaleOptimizer {
 public:
  explicit LossScaleOptimizer(Optimizer inner, double initial_scale = 32768.0, std::int64_t dynamic_growth_steps = 2000,
                              loss_scale_options settings = {})
      : LossScaleOptimizer(std::move(inner), mixed_precision::experimental::DynamicLossScale(
                                                 initial_scale, dynamic_growth_steps, 2.0, settings.minimum_scale),
                           settings.max_skipped_steps_at_minimum) {}
  /// With tf.keras 2.2's DynamicLossScale (its multiplier, its floor).
  LossScaleOptimizer(Optimizer inner, mixed_precision::experimental::DynamicLossScale scale,
                     std::int64_t max_skipped_steps_at_minimum = 20)
      : inner_(std::move(inner)),
        scale_(std::move(scale)),
        max_skips_(max_skipped_steps_at_minimum),
        attempted_(inner_.iterations()) {  // an inner optimizer that has stepped: its steps were attempted
    if (max_skipped_steps_at_minimum < 0)
      throw std::invalid_argument("LossScaleOptimizer: `max_skipped_steps_at_minimum` must be >= 0 (0: never stop). Received: " +
                                  std::to_string(max_skipped_steps_at_minimum));
    if (inner_.settings().loss_scale_factor)
      throw std::invalid_argument(
          "LossScaleOptimizer: the inner optimizer has a fixed `loss_scale_factor` (" +
          mixprec::detail::number_text(*inner_.settings().loss_scale_factor) +
          "); use either fixed loss scaling (loss_scale_factor) or dynamic loss scaling (LossScaleOptimizer), not both.");
  }

  Optimizer& inner_optimizer() { return inner_; }
  const Optimizer& inner_optimizer() const { return inner_; }
  /// The scale the next step multiplies its loss by (Keras 3's dynamic_scale).
  float dynamic_scale() const { return scale_(); }
  const mixed_precision::experimental::DynamicLossScale& loss_scale() const { return scale_; }
  float scale_loss(float loss) const { return loss * scale_(); }

  /// Applied updates (the inner optimizer's; learning-rate schedules read this one).
  std::int64_t iterations() const { return inner_.iterations(); }
  /// Steps seen, applied or skipped.
  std::int64_t attempted_steps() const { return attempted_; }
  std::int64_t skipped_steps() const { return attempted_ - inner_.iterations(); }
  /// Skipped steps in a row (0 after an applied one), and how many of them used the minimum scale.
  std::int64_t consecutive_skipped_steps() const { return consecutive_skips_; }
  std::int64_t consecutive_skipped_steps_at_minimum() const { return skips_at_minimum_; }

  /// One step with gradients of the SCALED loss (they are unscaled in place). Returns whether
  /// the inner optimizer applied them (false: the step was skipped). Pairs the inner optimizer
  /// would reject are rejected before anything (the gradients included) is written, whether the
  /// step would be applied or skipped; no pairs (every layer frozen) is a no-op, as in Keras.
  // (A template for the reason Optimizer::apply is.)
  template <class Deferred = void>
  bool apply(std::span<const gradient_and_variable> pairs) {
    if (pairs.empty()) return true;
    inner_.check(pairs);
    const float inverse = 1.0f / scale_();
    bool finite = true;
    for (const auto& pair : pairs)
      std::visit([&](const auto& p) { finite = kernels::unscale_and_check_finite(p.gradient, inverse) && finite; },
                 pair);
    const bool at_minimum = scale_.at_minimum();
    if (finite) {
      inner_.apply<Deferred>(pairs);  // checks everything before it writes; throws with nothing changed
    } else if (max_skips_ > 0 && at_minimum && skips_at_minimum_ + 1 >= max_skips_) {
      throw std::runtime_error(
          "LossScaleOptimizer: " + std::to_string(skips_at_minimum_ + 1) +
          " training steps in a row had non-finite (inf or NaN) gradients with the loss scale at its minimum (" +
          mixprec::detail::number_text(scale_()) +
          "), so the model has stopped learning: lowering the scale cannot help any more. The training has probably "
          "diverged. Try a lower learning rate, gradient clipping (clipnorm or global_clipnorm), a float32 output "
          "layer before the loss, or check the data for extreme values. (This step was not applied; the weights and "
          "the optimizer are as after the last applied step.)");
    }
    scale_.update(finite);
    ++attempted_;
    consecutive_skips_ = finite ? 0 : consecutive_skips_ + 1;
    skips_at_minimum_ = finite ? 0 : skips_at_minimum_ + (at_minimum ? 1 : 0);
    return finite;
  }
  template <class Deferred = void>
  bool apply(std::initializer_list<gradient_and_variable> pairs) {
    return apply<Deferred>(std::span<const gradient_and_variable>(pairs));
  }

  /// The scale's state, for checkpoints: {"scale", "good_steps", "attempted_steps",
  /// "consecutive_skipped_steps", "consecutive_skipped_steps_at_minimum"}.
  template <class Deferred = void>
  nlohmann::ordered_json state() const {
    return {{"scale", scale_()},
            {"good_steps", scale_.num_good_steps()},
            {"attempted_steps", attempted_},
            {"consecutive_skipped_steps", consecutive_skips_},
            {"consecutive_skipped_steps_at_minimum", skips_at_minimum_}};
  }
  /// Restores state() (after the inner optimizer's iterations have been restored).
  template <class Deferred = void>
  void restore_state(const nlohmann::json& state) {
    mixprec::detail::config_reader c(state, "LossScaleOptimizer state");
    const double scale = c.number("scale");
    // A scale the optimizer can reach: a float32 number from minimum_scale up (below it the scaled
    // loss may underflow, every gradient be zero and no step be skipped). The range is checked
    // before the cast, which is undefined beyond float's.
    const double minimum = static_cast<float>(scale_.minimum_scale());  // the floor update() applies
    if (!(scale >= minimum && scale <= std::numeric_limits<float>::max() &&
          static_cast<double>(static_cast<float>(scale)) == scale))
      c.fail("`scale` must be a float32 number from minimum_scale (" + mixprec::detail::number_text(minimum) +
             ") up. Received: " + mixprec::detail::number_text(scale));
    const std::int64_t good = c.integer("good_steps"), attempted = c.integer("attempted_steps"),
                       skips = c.integer("consecutive_skipped_steps"),
                       skips_at_minimum = c.integer("consecutive_skipped_steps_at_minimum");
    c.finish();
    if (attempted == std::numeric_limits<std::int64_t>::max())  // the next step counts one more
      throw std::invalid_argument("LossScaleOptimizer state: `attempted_steps` must be below 2^63 - 1. Received: " +
                                  std::to_string(attempted));
    if (attempted < inner_.iterations() || skips < 0 || skips > attempted - inner_.iterations() ||
        skips_at_minimum < 0 || skips_at_minimum > skips)
      throw std::invalid_argument("LossScaleOptimizer state: " + std::to_string(attempted) + " attempted steps and " +
                                  std::to_string(skips) + " skipped in a row do not fit " +
                                  std::to_string(inner_.iterations()) + " applied.");
    mixed_precision::experimental::DynamicLossScale restored = scale_;
    restored.restore(static_cast<float>(scale), good);
    scale_ = restored;
    attempted_ = attempted;
    consecutive_skips_ = skips;
    skips_at_minimum_ = skips_at_minimum;
  }

  /// Keras 3's config: the inner optimizer serialized, initial_scale, dynamic_growth_steps;
  /// mixprec's settings only when they are not the defaults.
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json config = {
        {"name", "loss_scale_optimizer"},
        {"inner_optimizer", {{"module", "keras.optimizers"}, {"class_name", inner_.class_name()}, {"config", inner_.get_config()}, {"registered_name", nullptr}}},
        {"initial_scale", scale_.initial_loss_scale()},
        {"dynamic_growth_steps", scale_.increment_period()}};
    if (scale_.multiplier() != 2.0) config["multiplier"] = scale_.multiplier();
    if (scale_.minimum_scale() != 1.0) config["minimum_scale"] = scale_.minimum_scale();
    if (max_skips_ != 20) config["max_skipped_steps_at_minimum"] = max_skips_;
    return config;
  }
  template <class Deferred = void>
  static LossScaleOptimizer from_config(const nlohmann::json& config) {
    mixprec::detail::check_json_depth(config, "The LossScaleOptimizer config");
    mixprec::detail::config_reader c(config, "LossScaleOptimizer");
    if (c.has("name")) c.raw("name");  // a label only
    if (!c.has("inner_optimizer"))
      throw std::invalid_argument("LossScaleOptimizer: the config needs 'inner_optimizer'.");
    Optimizer inner = Optimizer::from_config(c.raw("inner_optimizer"));
    // Keras 3 writes the base optimizer's arguments too; the wrapper itself uses none of them.
    for (const char* key : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency",
                            "loss_scale_factor", "gradient_accumulation_steps"})
      c.unsupported(key);
    c.unsupported("use_ema", false);
    c.number("ema_momentum", 0.99);
    const double initial = c.number("initial_scale", 32768.0);
    const std::int64_t growth = c.integer("dynamic_growth_steps", 2000);
    const double multiplier = c.number("multiplier", 2.0), minimum = c.number("minimum_scale", 1.0);
    const std::int64_t max_skips = c.integer("max_skipped_steps_at_minimum", 20);
    c.finish();
    return LossScaleOptimizer(std::move(inner),
                              mixed_precision::experimental::DynamicLossScale(initial, growth, multiplier, minimum),
                              max_skips);
  }

 private:
  Optimizer inner_;
  mixed_precision::experimental::DynamicLossScale scale_;
  std::int64_t max_skips_;
  std::int64_t attempted_;
  std::int64_t consecutive_skips_ = 0;
  std::int64_t skips_at_minimum_ = 0;
};

}  // namespace mixprec::optimizers
