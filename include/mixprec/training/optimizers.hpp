// Optimizers with Keras 3's update rules: SGD (momentum, nesterov), Adam (amsgrad) and AdamW,
// with weight_decay, clipnorm / clipvalue / global_clipnorm, loss_scale_factor and learning-rate
// schedules. Variables, gradients and every slot live in the VARIABLE dtype (float32 under the
// mixed policies, float16 under "float16"); the arithmetic is the optimizer kernels'
// (kernels/optimizer.hpp: float32 math in Keras' order, rounded once per stored value).
//
//   optimizers::Adam adam(1e-3);
//   optimizers::SGD sgd(0.1, /*momentum=*/0.9, /*nesterov=*/true, {.clipnorm = 1.0});
//   adam.apply(pairs);     // pairs: {gradient span, variable span} per variable, in a fixed order
//
// One apply(), in Keras' order: divide the gradients by loss_scale_factor (if set) -> clip (at
// most one of clipvalue, clipnorm per tensor, global_clipnorm over all) -> decoupled weight decay
// w -= w * weight_decay * lr -> the optimizer's own step -> iterations += 1. The learning rate
// (or its schedule) is read at `iterations`, the number of updates applied so far. Everything is
// checked before anything is written: a rejected apply() leaves the variables, the slots and
// `iterations` exactly as they were (the gradients, which clipping scales in place, are the
// caller's scratch).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/optimizer.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/training/schedules.hpp>

namespace mixprec::optimizers {

/// The arguments every Keras optimizer takes. At most one of the three clips may be set.
struct options {
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> clipnorm = std::nullopt;
  std::optional<double> clipvalue = std::nullopt;
  std::optional<double> global_clipnorm = std::nullopt;
  /// Keras 3's fixed loss scaling: the loss is multiplied by it and the gradients divided by it.
  std::optional<double> loss_scale_factor = std::nullopt;
};

/// One variable and its gradient, both in the variable dtype (layers/variable.hpp).
using mixprec::gradient_and_variable;
using mixprec::gradient_and_variable_of;

enum class optimizer_kind { sgd, adam, adamw };

class Optimizer {
 public:
  std::string_view class_name() const { return class_names[static_cast<std::size_t>(kind_)]; }
  optimizer_kind kind() const { return kind_; }
  /// Updates applied so far.
  std::int64_t iterations() const { return iterations_; }
  const schedules::LearningRate& learning_rate() const { return learning_rate_; }
  /// The rate the next apply() uses.
  float current_learning_rate() const { return learning_rate_.at(iterations_); }
  /// Keras' `optimizer.learning_rate = ...`: a schedule replaces a float or a schedule, a float
  /// replaces a float; the next apply() reads it. Slots and iterations are kept. A float over a
  /// schedule is Keras' TypeError (std::invalid_argument), changing nothing.
  void set_learning_rate(schedules::LearningRate learning_rate) {
    if (learning_rate_.is_schedule() && !learning_rate.is_schedule())
      throw std::invalid_argument(
          "This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` constructor "
          "argument, hence its learning rate is not settable. If you need the learning rate to be settable, you "
          "should instantiate the optimizer with a float `learning_rate` argument.");
    learning_rate_ = std::move(learning_rate);
  }
  const options& settings() const { return options_; }
  /// Keras 3's fixed loss scaling (compile() sets it for a policy with a FixedLossScale).
  void set_loss_scale_factor(double factor) {
    check_loss_scale_factor(factor);
    options_.loss_scale_factor = factor;
  }

  /// One update of every variable (see the top of this file). The variables must come in the
  /// same order, sizes and dtypes at every call: the first call creates the slots for them. No
  /// variables (every layer frozen) is a no-op, as in Keras: iterations stay, nothing is built.
  // (A template only so that a TU compiles the update and norm kernels of every variable dtype
  // where it trains, not wherever it includes the optimizers.)
  template <class Deferred = void>
  void apply(std::span<const gradient_and_variable> pairs) {
    if (pairs.empty()) return;
    check(pairs);
    const float lr = current_learning_rate();
    if (!std::isfinite(lr))
      throw std::invalid_argument(std::string(class_name()) + ": the learning rate at iteration " +
                                  std::to_string(iterations_) + " is " + text(lr) + " in float32; it must be finite.");
    if (!built()) build(pairs);
    unscale_and_clip<Deferred>(pairs);
    const double weight_decay = options_.weight_decay.value_or(0.0);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      std::visit(
          [&](const auto& pair) {
            using V = typename decltype(pair.variable)::value_type;
            auto& slots = slots_[i];
            if (kind_ == optimizer_kind::sgd) {
              const std::span<V> velocity = momentum_ == 0.0 ? std::span<V>() : std::span<V>(slot<V>(slots, 0));
              kernels::sgd_update<V>(pair.variable, pair.gradient, velocity,
                                     {.learning_rate = lr,
                                      .momentum = momentum_,
                                      .nesterov = nesterov_,
                                      .weight_decay = weight_decay});
            } else {
              const std::span<V> v_hat = amsgrad_ ? std::span<V>(slot<V>(slots, 2)) : std::span<V>();
              kernels::adam_update<V>(pair.variable, pair.gradient, slot<V>(slots, 0), slot<V>(slots, 1), v_hat,
                                      {.learning_rate = lr,
                                       .beta_1 = beta_1_,
                                       .beta_2 = beta_2_,
                                       .epsilon = epsilon_,
                                       .iteration = iterations_,
                                       .weight_decay = weight_decay});
            }
          },
          pairs[i]);
    }
    ++iterations_;
  }
  template <class Deferred = void>
  void apply(std::initializer_list<gradient_and_variable> pairs) {
    apply<Deferred>(std::span<const gradient_and_variable>(pairs));
  }

  /// Throws std::invalid_argument as apply() would for these pairs (sizes, dtypes, overlaps, the
  /// variables it was built for), writing nothing: a wrapper that works on the gradients first
  /// (LossScaleOptimizer's unscaling) calls it before it does.
  void check(std::span<const gradient_and_variable> pairs) const {
    const std::string owner(class_name());
    // What a model's trainable weights changing after its optimizer's first step gives (a layer
    // frozen, unfrozen or quantized on its own): Keras needs a new compile() then, and so here.
    const std::string rebuilt = " (the slots were made at the first apply(); a model whose trainable weights changed "
                                "since, a layer frozen, unfrozen or quantized, must be compiled again).";
    if (built() && pairs.size() != shapes_.size())
      throw std::invalid_argument(owner + ": apply() received " + std::to_string(pairs.size()) +
                                  " variables, but the optimizer was built for " + std::to_string(shapes_.size()) + rebuilt);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      std::visit(
          [&](const auto& p) {
            if (p.gradient.size() != p.variable.size())
              throw std::invalid_argument(owner + ": the gradient of variable " + std::to_string(i) + " has " +
                                          std::to_string(p.gradient.size()) + " values for a variable of " +
                                          std::to_string(p.variable.size()) + ".");
            mixprec::detail::check_disjoint(p.gradient, p.variable, (owner + ": variable " + std::to_string(i)).c_str(),
                                            "its gradient", "the variable");
          },
          pairs[i]);
      if (built() && dtype_and_size(pairs[i]) != shapes_[i])
        throw std::invalid_argument(owner + ": variable " + std::to_string(i) + " is " +
                                    std::string(dtype_and_size(pairs[i]).first) + " with " +
                                    std::to_string(dtype_and_size(pairs[i]).second) + " values, but the optimizer was built for " +
                                    std::string(shapes_[i].first) + " with " + std::to_string(shapes_[i].second) + rebuilt);
    }
  }

  /// Keras' slot names: "momentum" (SGD with momentum; Adam's first moment), "velocity" and
  /// "velocity_hat" (Adam, the latter with amsgrad).
  std::vector<std::string_view> slot_names() const {
    if (kind_ == optimizer_kind::sgd) return momentum_ == 0.0 ? std::vector<std::string_view>{} : std::vector<std::string_view>{"momentum"};
    if (amsgrad_) return {"momentum", "velocity", "velocity_hat"};
    return {"momentum", "velocity"};
  }
  /// A slot of variable `index`, in the variable dtype V (std::invalid_argument if there is no
  /// such slot, variable or dtype).
  template <class V>
  std::span<const V> slot(std::size_t index, std::string_view name) const {
    const auto names = slot_names();
    const auto found = std::find(names.begin(), names.end(), name);
    if (!built() || index >= slots_.size() || found == names.end())
      throw std::invalid_argument(std::string(class_name()) + " has no slot '" + std::string(name) + "' for variable " +
                                  std::to_string(index) + ".");
    const auto* values = std::get_if<std::vector<V>>(&slots_[index][static_cast<std::size_t>(found - names.begin())]);
    if (values == nullptr)
      throw std::invalid_argument(std::string(class_name()) + ": the slots of variable " + std::to_string(index) +
                                  " are not " + std::string(dtype_name_v<V>) + ".");
    return *values;
  }

  /// For checkpoints: the slots as weights, "optimizer/<variable path>/<slot name>" shaped as
  /// the variables (`variables`: the trained weights, in apply()'s order); none before the
  /// first step. The handles are valid until the slots are rebuilt (prepare_restore).
  // (A template for the reason apply is: its loaders convert to every variable dtype.)
  template <class Deferred = void>
  std::vector<weight_handle> slot_handles(const std::vector<weight_handle>& variables) {
    std::vector<weight_handle> handles;
    if (!built()) return handles;
    if (variables.size() != slots_.size())
      throw std::invalid_argument(std::string(class_name()) + ": " + std::to_string(variables.size()) +
                                  " trained weights, but the optimizer was built for " + std::to_string(slots_.size()) + ".");
    const auto names = slot_names();
    for (std::size_t i = 0; i < variables.size(); ++i)
      for (std::size_t k = 0; k < names.size(); ++k)
        std::visit(
            [&](auto& values) {
              using V = typename std::remove_cvref_t<decltype(values)>::value_type;
              handles.push_back({"optimizer/" + variables[i].path + "/" + std::string(names[k]), dtype_name_v<V>,
                                 variables[i].extents, std::as_bytes(std::span<const V>(values)),
                                 mixprec::detail::loader<V>(values.size(), [&values](std::vector<V> loaded) {
                                   values = std::move(loaded);
                                 })});
            },
            slots_[i][k]);
    return handles;
  }
  /// For checkpoints: the optimizer after `iterations` updates, its slots zero (to be loaded
  /// through slot_handles) for `variables` if `built`, else not yet created.
  void prepare_restore(const std::vector<weight_handle>& variables, bool built, std::int64_t iterations) {
    if (iterations < 0 || iterations == std::numeric_limits<std::int64_t>::max())  // the next step counts one more
      throw std::invalid_argument(std::string(class_name()) + ": iterations must be in [0, 2^63 - 1). Received: " +
                                  std::to_string(iterations));
    if (built) {
      std::vector<std::pair<std::string_view, std::size_t>> shapes;
      for (const auto& v : variables) shapes.emplace_back(v.dtype, v.bytes.size() / mixprec::detail::dtype_size(v.dtype));
      build(std::move(shapes));
    } else {
      slots_.clear();
      shapes_.clear();
      built_ = false;
    }
    iterations_ = iterations;
  }

  /// Keras 3's get_config.
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    auto optional = [](const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr); };
    nlohmann::ordered_json config = {{"name", default_names[static_cast<std::size_t>(kind_)]},
                                     {"learning_rate", learning_rate_.get_config()},
                                     {"weight_decay", optional(options_.weight_decay)},
                                     {"clipnorm", optional(options_.clipnorm)},
                                     {"global_clipnorm", optional(options_.global_clipnorm)},
                                     {"clipvalue", optional(options_.clipvalue)},
                                     {"use_ema", false},
                                     {"ema_momentum", 0.99},
                                     {"ema_overwrite_frequency", nullptr},
                                     {"loss_scale_factor", optional(options_.loss_scale_factor)},
                                     {"gradient_accumulation_steps", nullptr}};
    if (kind_ == optimizer_kind::sgd) {
      config["momentum"] = momentum_;
      config["nesterov"] = nesterov_;
    } else {
      config["beta_1"] = beta_1_;
      config["beta_2"] = beta_2_;
      config["epsilon"] = epsilon_;
      config["amsgrad"] = amsgrad_;
    }
    return config;
  }

  /// From Keras 3's serialized form {"class_name": "Adam", "config": {...}} (or a bare name:
  /// "sgd", "adam", "adamw", with Keras' defaults). Settings mixprec does not implement
  /// (use_ema, gradient_accumulation_steps, ...) and unknown keys are errors, never ignored.
  template <class Deferred = void>
  static Optimizer from_config(const nlohmann::json& serialized);

 protected:
  Optimizer(optimizer_kind kind, schedules::LearningRate learning_rate, options settings)
      : kind_(kind), learning_rate_(std::move(learning_rate)), options_(settings) {
    const std::string owner(class_name());
    const int clips = options_.clipnorm.has_value() + options_.clipvalue.has_value() + options_.global_clipnorm.has_value();
    if (clips > 1)
      throw std::invalid_argument("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: clipnorm=" +
                                  text(options_.clipnorm) + ", clipvalue=" + text(options_.clipvalue) +
                                  ", global_clipnorm=" + text(options_.global_clipnorm));
    for (const auto& [value, name] : {std::pair{options_.clipnorm, "clipnorm"}, std::pair{options_.clipvalue, "clipvalue"},
                                      std::pair{options_.global_clipnorm, "global_clipnorm"},
                                      std::pair{options_.weight_decay, "weight_decay"}})
      if (value && !(*value >= 0.0 && std::isfinite(static_cast<float>(*value))))
        throw std::invalid_argument(owner + ": `" + name + "` must be a finite number >= 0. Received: " + name + "=" + text(value));
    if (options_.loss_scale_factor) check_loss_scale_factor(*options_.loss_scale_factor);
  }
  void set_sgd(double momentum, bool nesterov) {
    if (!(momentum >= 0.0 && momentum <= 1.0))
      throw std::invalid_argument("`momentum` must be a float between [0, 1]. Received: momentum=" + text(momentum));
    momentum_ = momentum;
    nesterov_ = nesterov;
  }
  void set_adam(double beta_1, double beta_2, double epsilon, bool amsgrad) {
    // Checked as the update kernels read them, in float32 (0.99999999 would round to 1).
    for (const auto& [value, name] : {std::pair{beta_1, "beta_1"}, std::pair{beta_2, "beta_2"}})
      if (!(value >= 0.0 && static_cast<float>(value) < 1.0f))
        throw std::invalid_argument(std::string(class_name()) + ": `" + name + "` must be in [0, 1). Received: " + name + "=" +
                                    text(value));
    if (!(epsilon >= 0.0 && std::isfinite(static_cast<float>(epsilon))))
      throw std::invalid_argument(std::string(class_name()) + ": `epsilon` must be a finite number >= 0. Received: epsilon=" +
                                  text(epsilon));
    beta_1_ = beta_1;
    beta_2_ = beta_2;
    epsilon_ = epsilon;
    amsgrad_ = amsgrad;
  }

 private:
  static constexpr std::string_view class_names[] = {"SGD", "Adam", "AdamW"};
  static constexpr std::string_view default_names[] = {"SGD", "adam", "adamw"};
  using slot_buffer = std::variant<std::vector<float>, std::vector<bfloat16>, std::vector<float16>, std::vector<double>>;

  /// Checked as float32 reads it (1e-50 is 0 there: the gradients would be divided by zero).
  void check_loss_scale_factor(double factor) const {
    if (!(static_cast<float>(factor) > 0.0f && std::isfinite(static_cast<float>(factor))))
      throw std::invalid_argument(std::string(class_name()) +
                                  ": `loss_scale_factor` must be a finite number > 0. Received: loss_scale_factor=" +
                                  text(factor));
  }

  static std::string text(std::optional<double> value) {
    return value ? mixprec::detail::number_text(*value) : "None";
  }

  bool built() const { return built_; }

  template <class V>
  static std::span<V> slot(std::vector<slot_buffer>& slots, std::size_t k) {
    return std::get<std::vector<V>>(slots[k]);
  }

  static std::pair<std::string_view, std::size_t> dtype_and_size(const gradient_and_variable& pair) {
    return std::visit(
        [](const auto& p) {
          using V = typename decltype(p.variable)::value_type;
          return std::pair<std::string_view, std::size_t>(dtype_name_v<V>, p.variable.size());
        },
        pair);
  }

  void build(std::span<const gradient_and_variable> pairs) {
    std::vector<std::pair<std::string_view, std::size_t>> shapes;
    for (const auto& pair : pairs) shapes.push_back(dtype_and_size(pair));
    build(std::move(shapes));
  }
  /// Zero slots for variables of these dtypes and sizes.
  void build(std::vector<std::pair<std::string_view, std::size_t>> shapes) {
    std::vector<std::vector<slot_buffer>> slots(shapes.size());
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto make = [&](auto zero) {
        for (std::size_t k = 0; k < slot_names().size(); ++k) slots[i].emplace_back(std::vector(shapes[i].second, zero));
      };
      const std::string_view dtype = shapes[i].first;
      if (dtype == "float32") make(0.0f);
      else if (dtype == "float64") make(0.0);
      else if (dtype == "bfloat16") make(bfloat16(0.0f));
      else if (dtype == "float16") make(float16(0.0f));
      else throw std::invalid_argument(std::string(class_name()) + ": cannot train a " + std::string(dtype) + " variable.");
    }
    slots_ = std::move(slots);
    shapes_ = std::move(shapes);
    built_ = true;
  }

  template <class Deferred>
  void unscale_and_clip(std::span<const gradient_and_variable> pairs) const {
    auto each = [&](auto&& f) {
      for (const auto& pair : pairs) std::visit([&](const auto& p) { f(p.gradient); }, pair);
    };
    // The settings are read as the gradients' arithmetic reads them: rounded to float32, but
    // in double for double gradients (Keras casts them to the variable's dtype).
    if (options_.loss_scale_factor) each([&](auto g) { kernels::scale(g, 1.0, *options_.loss_scale_factor); });
    // A clip of 0 clips nothing, as in Keras (`if self.clipnorm and self.clipnorm > 0`).
    const auto clips = [](const std::optional<double>& setting) { return setting && *setting > 0.0; };
    if (clips(options_.clipvalue)) each([&](auto g) { kernels::clip_by_value(g, *options_.clipvalue); });
    if (clips(options_.clipnorm)) {
      each([&](auto g) {
        using V = typename decltype(g)::value_type;
        if constexpr (std::is_same_v<V, double>) {
          const double clip = *options_.clipnorm, norm = std::sqrt(squared_norm(g));
          kernels::scale(g, clip, std::max(norm, clip));
        } else {
          const float clip = static_cast<float>(*options_.clipnorm);
          const float norm = std::sqrt(mixprec::kernels::dot<V>(g, g));
          kernels::scale(g, clip, std::max(norm, clip));
        }
      });
    }
    if (clips(options_.global_clipnorm)) {
      // In double when every gradient is double, else in float32.
      bool all_double = true;
      each([&](auto g) { all_double = all_double && std::is_same_v<typename decltype(g)::value_type, double>; });
      const auto factor_for = [](auto clip, auto squares) {
        const auto norm = std::sqrt(squares);
        using R = decltype(norm);
        return clip * std::min(R(1) / norm, R(1) / clip) + (norm - norm);  // NaN for a non-finite norm
      };
      double factor = 0.0;
      if (all_double) {
        double squares = 0.0;
        each([&](auto g) {
          if constexpr (std::is_same_v<typename decltype(g)::value_type, double>) squares += squared_norm(g);
        });
        factor = factor_for(*options_.global_clipnorm, squares);
      } else {
        float squares = 0.0f;
        each([&](auto g) {
          using V = typename decltype(g)::value_type;
          squares += mixprec::kernels::dot<V>(g, g);
        });
        factor = factor_for(static_cast<float>(*options_.global_clipnorm), squares);
      }
      each([&](auto g) { kernels::scale(g, factor); });
    }
  }
  /// The sum of squares of double gradients, in double (kernels::dot sums in float32).
  static double squared_norm(std::span<double> g) {
    double sum = 0.0;
    for (double x : g) sum += x * x;
    return sum;
  }

  optimizer_kind kind_;
  schedules::LearningRate learning_rate_;
  options options_;
  double momentum_ = 0.0;
  bool nesterov_ = false;
  double beta_1_ = 0.9;
  double beta_2_ = 0.999;
  double epsilon_ = 1e-7;
  bool amsgrad_ = false;
  std::int64_t iterations_ = 0;
  bool built_ = false;
  std::vector<std::vector<slot_buffer>> slots_;
  std::vector<std::pair<std::string_view, std::size_t>> shapes_;
};

struct SGD : Optimizer {
  explicit SGD(schedules::LearningRate learning_rate = 0.01, double momentum = 0.0, bool nesterov = false,
               options settings = {})
      : Optimizer(optimizer_kind::sgd, std::move(learning_rate), settings) {
    set_sgd(momentum, nesterov);
  }
};

struct Adam : Optimizer {
  explicit Adam(schedules::LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999,
                double epsilon = 1e-7, bool amsgrad = false, options settings = {})
      : Optimizer(optimizer_kind::adam, std::move(learning_rate), settings) {
    set_adam(beta_1, beta_2, epsilon, amsgrad);
  }
};

/// Adam with decoupled weight decay: the `weight_decay` argument, or `settings.weight_decay`, or
/// 0.004 when neither is given (both, with different values, is std::invalid_argument).
struct AdamW : Optimizer {
  explicit AdamW(schedules::LearningRate learning_rate = 0.001, std::optional<double> weight_decay = std::nullopt,
                 double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7, bool amsgrad = false,
                 options settings = {})
      : Optimizer(optimizer_kind::adamw, std::move(learning_rate), with_weight_decay(settings, weight_decay)) {
    set_adam(beta_1, beta_2, epsilon, amsgrad);
  }

 private:
  static options with_weight_decay(options settings, std::optional<double> weight_decay) {
    if (weight_decay && settings.weight_decay && *settings.weight_decay != *weight_decay)
      throw std::invalid_argument("AdamW: `weight_decay` is given twice, as " + mixprec::detail::number_text(*weight_decay) +
                                  " and as settings.weight_decay=" + mixprec::detail::number_text(*settings.weight_decay) +
                                  "; give it once.");
    settings.weight_decay = weight_decay ? weight_decay : settings.weight_decay.value_or(0.004);
    return settings;
  }
};

template <class Deferred>
Optimizer Optimizer::from_config(const nlohmann::json& serialized) {
  using mixprec::detail::shown;
  mixprec::detail::check_json_depth(serialized, "The optimizer config");
  if (serialized.is_string()) {
    const auto name = serialized.get<std::string>();
    if (name == "sgd" || name == "SGD") return SGD();
    if (name == "adam" || name == "Adam") return Adam();
    if (name == "adamw" || name == "AdamW") return AdamW();
    throw std::invalid_argument("Could not interpret optimizer identifier: " + shown(serialized) +
                                ". Accepted: sgd, adam, adamw (or SGD, Adam, AdamW).");
  }
  if (!serialized.is_object() || !serialized.contains("class_name") || !serialized["class_name"].is_string() ||
      !serialized.contains("config"))
    throw std::invalid_argument("Could not interpret optimizer identifier: " + shown(serialized) +
                                ". Expected {\"class_name\": ..., \"config\": {...}} or a name.");
  const std::string class_name = serialized["class_name"].get<std::string>();
  mixprec::detail::config_reader c(serialized["config"], mixprec::detail::quote_for_message(class_name));
  if (c.has("name")) c.raw("name");  // a label only
  auto learning_rate = [&](double fallback) {
    return c.has("learning_rate") ? schedules::LearningRate::from_config(c.raw("learning_rate"))
                                  : schedules::LearningRate(c.number("learning_rate", fallback));
  };
  c.unsupported("use_ema", false);
  c.number("ema_momentum", 0.99);  // used only with use_ema
  c.unsupported("ema_overwrite_frequency");
  c.unsupported("gradient_accumulation_steps");
  options settings{.weight_decay = c.optional_number("weight_decay"),
                   .clipnorm = c.optional_number("clipnorm"),
                   .clipvalue = c.optional_number("clipvalue"),
                   .global_clipnorm = c.optional_number("global_clipnorm"),
                   .loss_scale_factor = c.optional_number("loss_scale_factor")};
  auto finished = [&](Optimizer optimizer) {
    c.finish();
    return optimizer;
  };
  if (class_name == "SGD")
    return finished(SGD(learning_rate(0.01), c.number("momentum", 0.0), c.boolean("nesterov", false), settings));
  if (class_name == "Adam" || class_name == "AdamW") {
    auto rate = learning_rate(0.001);
    const double beta_1 = c.number("beta_1", 0.9), beta_2 = c.number("beta_2", 0.999), epsilon = c.number("epsilon", 1e-7);
    const bool amsgrad = c.boolean("amsgrad", false);
    if (class_name == "Adam") return finished(Adam(rate, beta_1, beta_2, epsilon, amsgrad, settings));
    if (c.present_but_null("weight_decay"))  // Keras' AdamW(weight_decay=None)
      c.fail("Argument `weight_decay` must be a float. Received: weight_decay=None");
    return finished(AdamW(rate, std::nullopt, beta_1, beta_2, epsilon, amsgrad, settings));
  }
  throw std::invalid_argument("Could not interpret optimizer identifier: " + shown(serialized["class_name"]) +
                              ". Accepted class names: SGD, Adam, AdamW.");
}

}  // namespace mixprec::optimizers
