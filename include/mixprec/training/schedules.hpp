// Learning rates: a constant or a schedule of the optimizer's iteration count (the number of
// updates it has applied), with Keras 3's formulas, computed in double and handed out as float.
//
//   optimizers::Adam adam(schedules::ExponentialDecay(1e-3, 1000, 0.96));
//
//   ExponentialDecay(initial_learning_rate, decay_steps, decay_rate, staircase = false)
//       initial_learning_rate * decay_rate ^ (step / decay_steps)     (step / decay_steps floored when staircase)
//   CosineDecay(initial_learning_rate, decay_steps, alpha = 0, warmup_target = none, warmup_steps = 0)
//       without warmup: initial_learning_rate * ((1 - alpha) * 0.5 (1 + cos(pi min(step, decay_steps) / decay_steps)) + alpha);
//       with warmup: linear from initial_learning_rate to warmup_target over warmup_steps, then the
//       cosine from warmup_target over the next decay_steps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::schedules {

namespace detail {
inline void check_positive(double value, const char* what) {
  if (!(value > 0.0) || !std::isfinite(value))
    throw std::invalid_argument(std::string(what) + " must be a positive finite number. Received: " + what + "=" +
                                mixprec::detail::number_text(value));
}
inline void check_finite_nonnegative(double value, const char* what) {
  if (!(value >= 0.0) || !std::isfinite(value))
    throw std::invalid_argument(std::string(what) + " must be a finite number >= 0. Received: " + what + "=" +
                                mixprec::detail::number_text(value));
}
}  // namespace detail

class ExponentialDecay {
 public:
  ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate, bool staircase = false)
      : initial_learning_rate_(initial_learning_rate), decay_steps_(decay_steps), decay_rate_(decay_rate),
        staircase_(staircase) {
    detail::check_finite_nonnegative(initial_learning_rate, "initial_learning_rate");
    if (decay_steps <= 0)
      throw std::invalid_argument("Argument `decay_steps` must be > 0. Received: decay_steps=" + std::to_string(decay_steps));
    detail::check_positive(decay_rate, "decay_rate");
  }
  double operator()(std::int64_t step) const {
    double progress = static_cast<double>(step) / static_cast<double>(decay_steps_);
    if (staircase_) progress = std::floor(progress);
    return initial_learning_rate_ * std::pow(decay_rate_, progress);
  }
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    return {{"initial_learning_rate", initial_learning_rate_}, {"decay_steps", decay_steps_}, {"decay_rate", decay_rate_},
            {"staircase", staircase_}, {"name", "ExponentialDecay"}};
  }

 private:
  double initial_learning_rate_;
  std::int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

class CosineDecay {
 public:
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps, double alpha = 0.0,
              std::optional<double> warmup_target = std::nullopt, std::int64_t warmup_steps = 0)
      : initial_learning_rate_(initial_learning_rate), decay_steps_(decay_steps), alpha_(alpha),
        warmup_target_(warmup_target), warmup_steps_(warmup_steps) {
    detail::check_finite_nonnegative(initial_learning_rate, "initial_learning_rate");
    if (decay_steps <= 0)
      throw std::invalid_argument("Argument `decay_steps` must be > 0. Received: decay_steps=" + std::to_string(decay_steps));
    if (!(alpha >= 0.0 && alpha <= 1.0))
      throw std::invalid_argument("Argument `alpha` must be in [0, 1]. Received: alpha=" + mixprec::detail::number_text(alpha));
    if (warmup_target) detail::check_finite_nonnegative(*warmup_target, "warmup_target");
    if (warmup_steps < 0)
      throw std::invalid_argument("Argument `warmup_steps` must be >= 0. Received: warmup_steps=" + std::to_string(warmup_steps));
  }
  double operator()(std::int64_t step) const {
    if (warmup_target_ && step < warmup_steps_)
      return initial_learning_rate_ + (*warmup_target_ - initial_learning_rate_) * static_cast<double>(step) /
                                         static_cast<double>(warmup_steps_);
    const double start = warmup_target_ ? *warmup_target_ : initial_learning_rate_;
    const double decayed_steps = static_cast<double>(std::min(step - (warmup_target_ ? warmup_steps_ : 0), decay_steps_));
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * decayed_steps / static_cast<double>(decay_steps_)));
    return start * ((1.0 - alpha_) * cosine + alpha_);
  }
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    return {{"initial_learning_rate", initial_learning_rate_},
            {"decay_steps", decay_steps_},
            {"alpha", alpha_},
            {"name", "CosineDecay"},
            {"warmup_target", warmup_target_ ? nlohmann::ordered_json(*warmup_target_) : nlohmann::ordered_json(nullptr)},
            {"warmup_steps", warmup_steps_}};
  }

 private:
  double initial_learning_rate_;
  std::int64_t decay_steps_;
  double alpha_;
  std::optional<double> warmup_target_;
  std::int64_t warmup_steps_;
};

/// A learning rate: a constant or a schedule of the iteration count.
class LearningRate {
 public:
  LearningRate(double value) : rate_(value) {  // NOLINT: implicit, as Keras takes a float
    if (!std::isfinite(value) || value < 0.0)
      throw std::invalid_argument("Argument `learning_rate` must be a finite number >= 0 or a schedule. Received: learning_rate=" +
                                  mixprec::detail::number_text(value));
  }
  LearningRate(ExponentialDecay schedule) : rate_(schedule) {}  // NOLINT
  LearningRate(CosineDecay schedule) : rate_(schedule) {}       // NOLINT

  /// The rate for the update after `iterations` applied updates.
  float at(std::int64_t iterations) const {
    return static_cast<float>(std::visit(
        [&](const auto& rate) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(rate)>, double>) return rate;
          else return rate(iterations);
        },
        rate_));
  }
  bool is_schedule() const { return !std::holds_alternative<double>(rate_); }

  /// A float, or the schedule serialized as Keras 3 does.
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    return std::visit(
        [](const auto& rate) -> nlohmann::ordered_json {
          using R = std::remove_cvref_t<decltype(rate)>;
          if constexpr (std::is_same_v<R, double>) {
            return rate;
          } else {
            return {{"module", "keras.optimizers.schedules"},
                    {"class_name", rate.get_config()["name"]},
                    {"config", rate.get_config()},
                    {"registered_name", nullptr}};
          }
        },
        rate_);
  }

  template <class Deferred = void>
  static LearningRate from_config(const nlohmann::json& config) {
    using mixprec::detail::shown;
    mixprec::detail::check_json_depth(config, "The learning rate config");
    if (config.is_number()) return LearningRate(config.get<double>());
    if (!config.is_object() || !config.contains("class_name") || !config.contains("config"))
      throw std::invalid_argument("learning_rate: expected a number or a serialized schedule. Received: " + shown(config));
    const std::string class_name = config["class_name"].is_string() ? config["class_name"].get<std::string>() : "";
    mixprec::detail::config_reader c(config["config"], mixprec::detail::quote_for_message(class_name));
    if (c.has("name")) c.raw("name");  // a label only
    if (class_name == "ExponentialDecay") {
      ExponentialDecay schedule(c.number("initial_learning_rate"), c.integer("decay_steps"), c.number("decay_rate"),
                                c.boolean("staircase", false));
      c.finish();
      return schedule;
    }
    if (class_name == "CosineDecay") {
      CosineDecay schedule(c.number("initial_learning_rate"), c.integer("decay_steps"), c.number("alpha", 0.0),
                           c.optional_number("warmup_target"), c.integer("warmup_steps", 0));
      c.finish();
      return schedule;
    }
    throw std::invalid_argument("Unknown learning rate schedule " + shown(config["class_name"]) +
                                ". Accepted: ExponentialDecay, CosineDecay.");
  }

 private:
  std::variant<double, ExponentialDecay, CosineDecay> rate_;
};

}  // namespace mixprec::schedules
