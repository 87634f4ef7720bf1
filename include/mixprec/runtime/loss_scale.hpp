// TF 2.2's loss scales (tf.mixed_precision.experimental.FixedLossScale / DynamicLossScale): the
// value a float16 model multiplies its loss by so that small gradients survive float16, and the
// rule that moves it. They are what an experimental Policy carries (runtime/experimental_policy.hpp)
// and what the LossScaleOptimizer runs (training/loss_scale_optimizer.hpp).
//
//   FixedLossScale(128)      always 128; never skips a step.
//   DynamicLossScale()       starts at 2^15; a step with non-finite gradients is skipped and
//                            divides the scale by `multiplier` (never below `minimum_scale`, 1 by
//                            default: tf.keras' floor); `increment_period` finite steps in a row
//                            multiply it (only when the product is finite).
//
// The identifiers of tf.keras' loss_scale argument: a number (Fixed), "dynamic" (Dynamic with its
// defaults), null (no loss scaling), or a serialized {"class_name": ..., "config": ...}.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::mixed_precision::experimental {

namespace detail {

/// A float as Python prints it: "32768.0", "0.5", "inf".
inline std::string python_float(double value) {
  std::string text = mixprec::detail::number_text(value);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace detail

class FixedLossScale {
 public:
  /// tf.keras: the value must be at least 1 (a scale below 1 would only lose precision).
  explicit FixedLossScale(double loss_scale_value) : value_(loss_scale_value) {
    if (!std::isfinite(static_cast<float>(loss_scale_value)))
      throw std::invalid_argument("loss_scale_value must be a finite float32 number. Received: " +
                                  mixprec::detail::number_text(loss_scale_value));
    if (loss_scale_value < 1.0) throw std::invalid_argument("loss_scale_value must be at least 1.");
  }

  float operator()() const { return static_cast<float>(value_); }
  /// A fixed scale applies every step.
  bool update(bool /*finite*/) { return true; }

  // (A template only so that a TU compiles the JSON writing where it writes a config.)
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const { return {{"loss_scale_value", value_}}; }
  friend bool operator==(const FixedLossScale&, const FixedLossScale&) = default;
  friend std::ostream& operator<<(std::ostream& out, const FixedLossScale& s) {
    return out << "FixedLossScale(" << detail::python_float(s.value_) << ")";
  }

 private:
  double value_;
};

class DynamicLossScale {
 public:
  /// tf.keras 2.2's arguments, plus mixprec's floor (`minimum_scale`, tf.keras' fixed 1).
  explicit DynamicLossScale(double initial_loss_scale = 32768.0, std::int64_t increment_period = 2000,
                            double multiplier = 2.0, double minimum_scale = 1.0)
      : initial_(initial_loss_scale), period_(increment_period), multiplier_(multiplier), minimum_(minimum_scale),
        current_(static_cast<float>(initial_loss_scale)) {
    // The scale lives in float32: its checks are on the float32 values.
    const auto positive_float = [](double v) { return static_cast<float>(v) > 0.0f && std::isfinite(static_cast<float>(v)); };
    const auto finite_float = [](double v) { return std::isfinite(static_cast<float>(v)); };
    if (!positive_float(initial_loss_scale))
      throw std::invalid_argument("DynamicLossScale: `initial_loss_scale` must be a finite float32 number > 0. Received: " +
                                  mixprec::detail::number_text(initial_loss_scale));
    if (increment_period < 1)
      throw std::invalid_argument("DynamicLossScale: `increment_period` must be an integer >= 1. Received: " +
                                  std::to_string(increment_period));
    if (!(multiplier > 1.0 && finite_float(multiplier)))
      throw std::invalid_argument("DynamicLossScale: `multiplier` must be a finite number > 1. Received: " +
                                  mixprec::detail::number_text(multiplier));
    if (!(positive_float(minimum_scale) && minimum_scale <= initial_loss_scale))
      throw std::invalid_argument("DynamicLossScale: `minimum_scale` must be a float32 number > 0 and at most `initial_loss_scale` (" +
                                  mixprec::detail::number_text(initial_loss_scale) +
                                  "). Received: " + mixprec::detail::number_text(minimum_scale));
  }

  /// The current scale.
  float operator()() const { return current_; }
  /// Finite steps in a row since the scale last changed.
  std::int64_t num_good_steps() const { return good_steps_; }
  double initial_loss_scale() const { return initial_; }
  std::int64_t increment_period() const { return period_; }
  double multiplier() const { return multiplier_; }
  double minimum_scale() const { return minimum_; }
  bool at_minimum() const { return current_ <= static_cast<float>(minimum_); }

  /// One step's verdict; returns whether the step's gradients should be applied. Finite: count
  /// it, and on the increment_period-th in a row multiply the scale (kept only if finite) and
  /// restart the count. Not finite: divide the scale (not below the minimum), restart the count.
  bool update(bool finite) {
    if (finite) {
      if (good_steps_ + 1 >= period_) {
        const float grown = static_cast<float>(static_cast<double>(current_) * multiplier_);
        if (std::isfinite(grown)) current_ = grown;
        good_steps_ = 0;
      } else {
        ++good_steps_;
      }
      return true;
    }
    current_ = std::max(static_cast<float>(static_cast<double>(current_) / multiplier_), static_cast<float>(minimum_));
    good_steps_ = 0;
    return false;
  }

  /// Restores a saved state (a checkpoint): the scale and the count of good steps.
  void restore(float current, std::int64_t good_steps) {
    if (!(current > 0.0f && std::isfinite(current)) || good_steps < 0 || good_steps >= period_)
      throw std::invalid_argument("DynamicLossScale: cannot restore scale " + mixprec::detail::number_text(current) +
                                  " with " + std::to_string(good_steps) + " good steps (increment_period " +
                                  std::to_string(period_) + ").");
    current_ = current;
    good_steps_ = good_steps;
  }

  /// tf.keras' config; minimum_scale only when it is not tf.keras' 1.
  // (A template only so that a TU compiles the JSON writing where it writes a config.)
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json config = {
        {"initial_loss_scale", initial_}, {"increment_period", period_}, {"multiplier", multiplier_}};
    if (minimum_ != 1.0) config["minimum_scale"] = minimum_;
    return config;
  }
  /// Same settings (the state is not compared).
  friend bool operator==(const DynamicLossScale& a, const DynamicLossScale& b) {
    return a.initial_ == b.initial_ && a.period_ == b.period_ && a.multiplier_ == b.multiplier_ && a.minimum_ == b.minimum_;
  }
  friend std::ostream& operator<<(std::ostream& out, const DynamicLossScale& s) {
    return out << "DynamicLossScale(current_loss_scale=" << detail::python_float(s.current_)
               << ", num_good_steps=" << s.good_steps_ << ", initial_loss_scale=" << detail::python_float(s.initial_)
               << ", increment_period=" << s.period_ << ", multiplier=" << detail::python_float(s.multiplier_) << ")";
  }

 private:
  double initial_;
  std::int64_t period_;
  double multiplier_;
  double minimum_;
  float current_;
  std::int64_t good_steps_ = 0;
};

using LossScale = std::variant<FixedLossScale, DynamicLossScale>;

inline std::ostream& operator<<(std::ostream& out, const LossScale& scale) {
  std::visit([&](const auto& s) { out << s; }, scale);
  return out;
}
inline std::string repr(const std::optional<LossScale>& scale) {
  if (!scale) return "None";
  std::ostringstream text;
  text << *scale;
  return text.str();
}

/// {"class_name": "DynamicLossScale", "config": {...}}, as tf.keras 2.2 serialized it.
// (A template only so that a TU compiles the JSON writing where it writes a config.)
template <class Deferred = void>
nlohmann::ordered_json serialize(const LossScale& scale) {
  return std::visit(
      [](const auto& s) -> nlohmann::ordered_json {
        const char* name = std::is_same_v<std::remove_cvref_t<decltype(s)>, FixedLossScale> ? "FixedLossScale"
                                                                                            : "DynamicLossScale";
        return {{"class_name", name}, {"config", s.get_config()}};
      },
      scale);
}

/// tf.keras' loss_scale identifiers: a number -> FixedLossScale; "dynamic" -> DynamicLossScale();
/// null -> none; a serialized loss scale. Anything else: "Could not interpret loss scale
/// identifier: <x>".
template <class Deferred = void>
std::optional<LossScale> get(const nlohmann::json& identifier) {
  const auto bad = [&] {
    return std::invalid_argument("Could not interpret loss scale identifier: " + mixprec::detail::shown(identifier) +
                                 ". Accepted: a number (FixedLossScale), \"dynamic\" (DynamicLossScale), null (no loss "
                                 "scaling), or {\"class_name\": \"FixedLossScale\" | \"DynamicLossScale\", \"config\": {...}}.");
  };
  mixprec::detail::check_json_depth(identifier, "The loss scale identifier");
  if (identifier.is_null()) return std::nullopt;
  if (identifier.is_number() && !identifier.is_boolean()) return FixedLossScale(identifier.get<double>());
  if (identifier.is_string()) {
    if (identifier.get<std::string>() == "dynamic") return DynamicLossScale();
    throw bad();
  }
  if (!identifier.is_object() || !identifier.contains("class_name") || !identifier["class_name"].is_string()) throw bad();
  const std::string class_name = identifier["class_name"].get<std::string>();
  const nlohmann::json config = identifier.value("config", nlohmann::json::object());
  if (!config.is_object()) throw bad();
  const auto number = [&](const char* key, double fallback) {
    const auto it = config.find(key);
    if (it == config.end()) return fallback;
    if (!it->is_number() || it->is_boolean())
      throw std::invalid_argument(class_name + ": '" + key + "' must be a number. Received: " + mixprec::detail::shown(*it));
    return it->get<double>();
  };
  const auto known = [&](std::initializer_list<const char*> keys) {
    for (const auto& [key, value] : config.items()) {
      bool found = false;
      for (const char* k : keys) found = found || key == k;
      if (!found)
        throw std::invalid_argument(class_name + ": unknown config key '" + mixprec::detail::quote_for_message(key) +
                                    "'. Accepted: " +
                                    (keys.size() == 1 ? "loss_scale_value."
                                                      : "initial_loss_scale, increment_period, multiplier, minimum_scale."));
    }
  };
  if (class_name == "FixedLossScale") {
    known({"loss_scale_value"});
    if (!config.contains("loss_scale_value"))
      throw std::invalid_argument("FixedLossScale: the config needs 'loss_scale_value'.");
    return FixedLossScale(number("loss_scale_value", 0.0));
  }
  if (class_name == "DynamicLossScale") {
    known({"initial_loss_scale", "increment_period", "multiplier", "minimum_scale"});
    const double period = number("increment_period", 2000.0);
    if (period != std::floor(period) || !(period >= 1.0 && period <= 9.0e18))
      throw std::invalid_argument("DynamicLossScale: 'increment_period' must be an integer >= 1. Received: " +
                                  mixprec::detail::shown(config["increment_period"]));
    return DynamicLossScale(number("initial_loss_scale", 32768.0), static_cast<std::int64_t>(period),
                            number("multiplier", 2.0), number("minimum_scale", 1.0));
  }
  throw bad();
}

}  // namespace mixprec::mixed_precision::experimental
