// TF 2.2's experimental policy (tf.keras.mixed_precision.experimental.Policy): a dtype policy that
// also carries a loss scale, which only models use: compile() wraps the optimizer in a
// LossScaleOptimizer with it (training/loss_scale_optimizer.hpp). Layers see the plain policy.
//
//   using mixed_precision::experimental::Policy;
//   Policy p("mixed_float16");                    // loss_scale "auto": dynamic for float16
//   Policy q("mixed_float16", 1024);              // FixedLossScale(1024)
//   Policy r("mixed_float16", nullptr);           // no loss scaling
//   mixed_precision::experimental::set_policy(q); // the global policy, with its loss scale
//
// "auto" means DynamicLossScale() when the policy computes in float16 (tf.keras 2.2 says when its
// name is "mixed_float16"; mixprec includes "float16", whose gradients underflow the same way),
// none otherwise. get_config() holds "loss_scale" only when it is not the default; it serializes
// as tf.keras 2.2 did ({"class_name": "Policy", ...}), and dtype_policies::deserialize reads that
// back as the plain policy, dropping the loss scale, as tf.keras does.
#pragma once

#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/global_policy.hpp>
#include <mixprec/runtime/loss_scale.hpp>

namespace mixprec::mixed_precision::experimental {

/// Where warnings go (tf.keras logs them): std::cerr unless replaced.
inline std::ostream*& warning_stream() {
  static std::ostream* stream = &std::cerr;
  return stream;
}

/// What Policy's loss_scale argument accepts: "auto" (the default), "dynamic", a number, nullptr
/// (no loss scaling), or a loss scale.
class LossScaleArgument {
 public:
  LossScaleArgument(const char* identifier) : identifier_(identifier) {}  // NOLINT: implicit, as Python's argument
  LossScaleArgument(std::string_view identifier) : identifier_(std::string(identifier)) {}  // NOLINT
  LossScaleArgument(double value) : identifier_(value) {}                 // NOLINT
  LossScaleArgument(int value) : identifier_(value) {}                    // NOLINT
  LossScaleArgument(std::nullptr_t) : identifier_(nullptr) {}             // NOLINT
  LossScaleArgument(FixedLossScale scale) : scale_(scale) {}              // NOLINT
  LossScaleArgument(DynamicLossScale scale) : scale_(scale) {}            // NOLINT
  LossScaleArgument(LossScale scale) : scale_(std::move(scale)) {}        // NOLINT

  bool is_auto() const { return !scale_ && identifier_.is_string() && identifier_.get<std::string>() == "auto"; }
  /// The loss scale it names (not for "auto").
  template <class Deferred = void>
  std::optional<LossScale> resolve() const { return scale_ ? scale_ : get(identifier_); }

 private:
  nlohmann::json identifier_;
  std::optional<LossScale> scale_;
};

class Policy {
 public:
  template <class Deferred = void>
  explicit Policy(std::string_view name, const LossScaleArgument& loss_scale = "auto")
      : policy_(name), using_default_(loss_scale.is_auto()) {
    if (using_default_) {
      loss_scale_ = default_loss_scale(policy_);
    } else {
      loss_scale_ = loss_scale.resolve();
      if (loss_scale_ && policy_.compute_dtype() != "float16")
        *warning_stream() << "WARNING: Creating a Policy with a loss scale is only useful for float16 policies. You "
                             "passed loss_scale="
                          << repr(loss_scale_) << " for policy " << policy_.name()
                          << ". Consider not passing any loss_scale instead.\n";
    }
  }

  std::string_view name() const { return policy_.name(); }
  std::string_view compute_dtype() const { return policy_.compute_dtype(); }
  std::string_view variable_dtype() const { return policy_.variable_dtype(); }
  /// The loss scale models use (none: no loss scaling).
  const std::optional<LossScale>& loss_scale() const { return loss_scale_; }
  /// Whether the loss scale is the policy's default (the argument was "auto").
  bool using_default_loss_scale() const { return using_default_; }
  /// The plain policy, what layers use.
  const DTypePolicy& dtype_policy() const { return policy_; }
  operator const DTypePolicy&() const { return policy_; }  // NOLINT: layers take it as their dtype

  // (A template only so that a TU compiles the JSON writing where it writes a config.)
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json config = {{"name", policy_.name()}};
    if (!using_default_) config["loss_scale"] = loss_scale_ ? nlohmann::ordered_json(experimental::serialize(*loss_scale_)) : nullptr;
    return config;
  }
  template <class Deferred = void>
  static Policy from_config(const nlohmann::json& config) {
    mixprec::detail::check_json_depth(config, "The Policy config");
    if (!config.is_object() || !config.contains("name") || !config["name"].is_string())
      throw std::invalid_argument("Policy.from_config: expected {\"name\": <policy name>, \"loss_scale\": ...}; got " +
                                  mixprec::detail::shown(config) + ".");
    for (const auto& [key, value] : config.items())
      if (key != "name" && key != "loss_scale")
        throw std::invalid_argument("Policy.from_config: unknown key '" + mixprec::detail::quote_for_message(key) +
                                    "'. Accepted: name, loss_scale.");
    const std::string name = config["name"].get<std::string>();
    if (!config.contains("loss_scale")) return Policy(name);
    const std::optional<LossScale> scale = get(config["loss_scale"]);
    return scale ? Policy(name, *scale) : Policy(name, nullptr);
  }
  /// tf.keras 2.2's serialized form.
  template <class Deferred = void>
  nlohmann::ordered_json serialize() const { return {{"class_name", "Policy"}, {"config", get_config()}}; }

  friend std::ostream& operator<<(std::ostream& out, const Policy& p) {
    return out << "<Policy \"" << p.name() << "\", loss_scale=" << repr(p.loss_scale_) << ">";
  }

 private:
  friend Policy global_policy();
  Policy(DTypePolicy policy, bool using_default, std::optional<LossScale> loss_scale)
      : policy_(std::move(policy)), using_default_(using_default), loss_scale_(std::move(loss_scale)) {}
  /// "auto": dynamic for float16 compute, none otherwise.
  static std::optional<LossScale> default_loss_scale(const DTypePolicy& policy) {
    if (policy.compute_dtype() == "float16") return DynamicLossScale();
    return std::nullopt;
  }

  DTypePolicy policy_;
  bool using_default_;
  std::optional<LossScale> loss_scale_;
};

/// tf.keras 2.2's set_policy: the global dtype policy (what set_dtype_policy sets: the process-wide
/// one, or inside a policy_scope that scope's) and its loss scale, which models built afterwards take.
inline void set_policy(const Policy& policy) {
  mixprec::detail::policy_setting setting{policy.dtype_policy(), {}};
  if (!policy.using_default_loss_scale()) setting.loss_scale = policy.loss_scale();
  mixprec::detail::replace_current_policy_setting(std::move(setting));
}

/// The global policy this thread sees (any kind, quantized too) with its loss scale ("auto"
/// unless set_policy gave another).
inline Policy global_policy() {
  mixprec::detail::policy_setting setting = mixprec::detail::current_policy_setting();
  if (setting.loss_scale) return Policy(std::move(setting.policy), false, std::move(*setting.loss_scale));
  std::optional<LossScale> loss_scale = Policy::default_loss_scale(setting.policy);
  return Policy(std::move(setting.policy), true, std::move(loss_scale));
}

}  // namespace mixprec::mixed_precision::experimental
