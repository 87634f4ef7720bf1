// The runtime model's layers: one generic layer, runtime_layer_of<Kind, C, V>, for every layer
// kind (layers/kinds/). A layer is created from a Keras layer config; its policy, read at run
// time, picks a compiled instantiation once (DTypePolicy::visit), and from then on it runs the
// kind's arithmetic through the same layer_engine as the compile-time layers, so a runtime model
// and a compile-time model with the same weights and policies agree bit for bit, in inference and
// in training.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/policy.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/layer_engine.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/serialization.hpp>

namespace mixprec {

namespace detail {

inline std::vector<std::size_t> with_batch(std::size_t batch, const std::vector<std::size_t>& features) {
  std::vector<std::size_t> extents{batch};
  extents.insert(extents.end(), features.begin(), features.end());
  return extents;
}

inline std::string shape_text(const std::vector<std::size_t>& features) {
  std::string text = "(batch";
  for (auto e : features) text += ", " + std::to_string(e);
  return text + ")";
}

/// Values in one of the dtypes layers run in, viewed: what a training step passes between
/// runtime layers.
using any_span = std::variant<std::span<const float16>, std::span<const bfloat16>, std::span<const float>,
                              std::span<const double>>;
/// An activation gradient in one of those dtypes, which the backward pass that receives it may
/// overwrite.
using any_gradient = std::variant<std::span<float16>, std::span<bfloat16>, std::span<float>, std::span<double>>;
/// A layer's output lent to the backward pass of the layer above (layer_engine::lend_output).
struct any_lent_output {
  any_gradient values;
  kernels::activation activation;
};

/// Values a training step passes to a layer computing in C, in C: themselves, or converted into
/// `buffer` by the convert kernel (the bits of a typed cast). Compiled once per C, so that no
/// layer class compiles a step's passes once per incoming dtype.
template <class C>
std::span<const C> in_compute_dtype(any_span values, value_buffer<C>& buffer) {
  return std::visit(
      [&]<class D>(std::span<const D> given) -> std::span<const C> {
        if constexpr (std::is_same_v<D, C>) {
          return given;
        } else {
          buffer.resize(given.size());
          kernels::convert<D, C>(given, std::span<C>(buffer));
          return buffer;
        }
      },
      values);
}
/// The same for a gradient, which the pass that receives it may overwrite.
template <class C>
std::span<C> in_compute_dtype(any_gradient values, value_buffer<C>& buffer) {
  return std::visit(
      [&]<class D>(std::span<D> given) -> std::span<C> {
        if constexpr (std::is_same_v<D, C>) {
          return given;
        } else {
          buffer.resize(given.size());
          kernels::convert<D, C>(std::span<const D>(given), std::span<C>(buffer));
          return buffer;
        }
      },
      values);
}

/// x's values in C: viewed, or converted into `buffer`. Out of line: compiled once per C, not
/// into each layer class's call.
template <class C>
[[gnu::noinline]] std::span<const C> values_in(const AnyTensor& x, value_buffer<C>& buffer) {
  if (x.holds<C>()) return x.values<C>();
  buffer = x.values_as<C>();
  return buffer;
}

}  // namespace detail

class RuntimeLayer {
 public:
  // Out of line (noinline): compiled once, not into each of the runtime model's layer classes.
  [[gnu::noinline]] RuntimeLayer(std::string name, DTypePolicy policy)
      : name_(std::move(name)), policy_(std::move(policy)) {}
  [[gnu::noinline]] virtual ~RuntimeLayer() = default;
  RuntimeLayer(const RuntimeLayer&) = delete;
  RuntimeLayer& operator=(const RuntimeLayer&) = delete;

  const std::string& name() const { return name_; }
  const DTypePolicy& dtype_policy() const { return policy_; }
  virtual std::string_view class_name() const = 0;
  /// Keras' layer.trainable: false freezes every weight of the layer.
  virtual bool trainable() const = 0;
  virtual void set_trainable(bool trainable) = 0;
  /// Creates the weights for inputs of these extents (batch excluded) and returns the output
  /// extents; throws std::invalid_argument, before allocating, when the layer cannot take such
  /// inputs or a size is over the caps (core/limits.hpp; its parameters are counted after the
  /// model's `parameters_before`).
  virtual std::vector<std::size_t> build(const std::vector<std::size_t>& input, std::size_t parameters_before) = 0;
  /// The elements of all its weights.
  virtual std::size_t parameter_count() const = 0;
  /// Throws std::invalid_argument when a call on `batch` samples would pass the size caps.
  virtual void check_batch(std::size_t batch) const = 0;
  virtual AnyTensor call(const AnyTensor& x, bool training) = 0;
  /// The layer's Keras config (name, dtype, trainable and its own settings).
  virtual nlohmann::ordered_json config() const = 0;
  /// Handles on the weights, with paths "<prefix><layer name>/<weight name>".
  virtual std::vector<weight_handle> weights(const std::string& prefix) = 0;
  /// Whether each weight (in weights() order) is trained: the layer and the weight are trainable.
  virtual std::vector<bool> trained() const = 0;
  virtual double regularization_loss() const = 0;

  // A training step (see layer_engine.hpp): forward, recording; backward; the gradients; the end.
  virtual detail::any_span forward_for_training(std::size_t batch, detail::any_span x) = 0;
  /// dy_is_pre_activation_gradient: dy was written over this layer's lent output (lend_output).
  virtual detail::any_gradient backward(detail::any_gradient dy, bool want_input_gradient, float loss_scale,
                                        bool dy_is_pre_activation_gradient) = 0;
  /// This layer's output, lent to the layer above's backward_over_input; none if it cannot be.
  virtual std::optional<detail::any_lent_output> lend_output() = 0;
  /// backward, its input gradient written over the lent output of the layer below; false
  /// (nothing done) when this layer cannot: then backward runs.
  virtual bool backward_over_input(detail::any_gradient dy, const detail::any_lent_output& below, float loss_scale,
                                   bool dy_is_pre_activation_gradient) = 0;
  /// Frees the input gradient the last backward returned, once the layer below has consumed it.
  virtual void release_input_gradient() = 0;
  virtual void collect_gradients(std::vector<gradient_and_variable>& pairs) = 0;
  virtual void finish_step() = 0;
  /// Frees the last step's record and gradients (RuntimeModel::release_step_buffers).
  virtual void release_step_buffers() noexcept = 0;
  /// The state beyond the weights (Dropout's generator) as text, for checkpoints; empty if none.
  virtual std::string state_text() const = 0;
  virtual void restore_state_text(std::string_view text) = 0;
  virtual void check_state_text(std::string_view text) const = 0;

  /// Whether the layer's kind has a quantized form (Dense); Keras' layer.quantize(mode) on it.
  /// check_quantize throws as quantize would, changing nothing.
  virtual bool quantizable() const = 0;
  virtual void check_quantize(std::string_view mode) const = 0;
  virtual void quantize(std::string_view mode) = 0;

 protected:
  void set_dtype_policy(DTypePolicy policy) { policy_ = std::move(policy); }

 private:
  std::string name_;
  DTypePolicy policy_;
};

namespace detail {

/// The Keras config of a layer of kind Kind (name, dtype, trainable and the kind's settings);
/// compiled once per kind.
template <class Kind>
nlohmann::ordered_json layer_config(const std::string& name, bool trainable, const DTypePolicy& policy,
                                    const typename Kind::settings& settings) {
  nlohmann::ordered_json result = {
      {"name", name}, {"trainable", trainable}, {"dtype", dtype_policies::serialize(policy)}};
  Kind::write_config(settings, result);
  return result;
}

/// What a runtime layer computing in C with variables in V does with its variables, whatever its
/// kind: compiled once per dtype pair, not once per kind and pair.
template <class C, class V>
class runtime_layer_variables : public RuntimeLayer {
 public:
  using RuntimeLayer::RuntimeLayer;
  /// Out of line: compiled once per dtype pair, not into each kind's destructors.
  [[gnu::noinline]] ~runtime_layer_variables() override = default;

  std::vector<weight_handle> weights(const std::string& prefix) override {
    std::vector<weight_handle> handles;
    for (auto& v : variables_)
      std::visit([&](auto& each) { handles.push_back(handle_of(prefix + name() + "/" + each.name(), each)); }, v);
    return handles;
  }
  double regularization_loss() const override {
    double total = 0.0;
    for (const auto& v : variables_)
      if (const auto* each = std::get_if<variable>(&v)) total += static_cast<double>(each->regularization_loss());
    return total;
  }

 protected:
  using variable = AutoCastVariable<V, C, dynamic>;
  using int8_variable = Variable<std::int8_t, dynamic>;
  using any_variable = std::variant<variable, int8_variable>;

  /// Creates the variables of these specs, drawing their initial values.
  void create_variables(const std::vector<weight_spec>& specs) {
    std::vector<any_variable> variables;
    for (const weight_spec& spec : specs) {
      if (spec.int8) variables.emplace_back(make_variable<int8_variable>(name(), spec));
      else variables.emplace_back(make_variable<variable>(name(), spec));
    }
    variables_ = std::move(variables);
  }
  /// The quantized variables for these specs and values (from layer_engine::quantized_weights);
  /// nothing changes until replace_variables.
  std::vector<any_variable> quantized_variables(const std::vector<weight_spec>& specs,
                                                std::vector<weight_values<V>>& values) const {
    std::vector<any_variable> quantized;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].int8) quantized.emplace_back(make_variable<int8_variable>(specs[i], std::move(values[i])));
      else quantized.emplace_back(make_variable<variable>(specs[i], std::move(values[i])));
    }
    return quantized;
  }
  void replace_variables(std::vector<any_variable> variables) { variables_ = std::move(variables); }
  /// The float variables' values, in order.
  std::vector<std::span<const V>> float_values() const {
    std::vector<std::span<const V>> values;
    for (const auto& v : variables_)
      if (const auto* each = std::get_if<variable>(&v)) values.push_back(each->value().values());
    return values;
  }
  /// Assigns the new values of non-trainable weights a call gives.
  void assign(const std::vector<weight_update<V>>& updates) {
    for (const auto& update : updates) std::get<variable>(variables_[update.weight]).assign_values(std::span<const V>(update.value));
  }
  std::vector<weight_ref<V>> refs() const {
    std::vector<weight_ref<V>> result;
    for (const auto& v : variables_) std::visit([&](const auto& each) { result.push_back(reference<V>(each)); }, v);
    return result;
  }
  template <class F>
  void for_each_indexed_variable(F&& f) {
    for (std::size_t i = 0; i < variables_.size(); ++i) std::visit([&](auto& each) { f(each, i); }, variables_[i]);
  }

 private:
  std::vector<any_variable> variables_;
};

}  // namespace detail

/// A layer of kind Kind computing in C with variables in V (an int8 layer's kernel in int8; a
/// kind without weights has V = C whatever its policy's variable dtype).
template <class Kind, class C, class V>
class runtime_layer_of final : public detail::runtime_layer_variables<C, V> {
  using base = detail::runtime_layer_variables<C, V>;

 public:
  /// Out of line: compiled once per layer class, not into the factory once per policy that
  /// selects the class (make_runtime_layer.hpp).
  [[gnu::noinline]] runtime_layer_of(std::string name, DTypePolicy policy, typename Kind::settings settings,
                                     bool trainable)
      : base(std::move(name), std::move(policy)), engine_(std::move(settings)) {
    engine_.set_trainable(trainable);
    if (engine_.quantization() != quantization_mode::none) engine_.use_quantized_arithmetic();
  }
  std::string_view class_name() const override { return Kind::keras_class; }
  bool trainable() const override { return engine_.trainable(); }
  void set_trainable(bool trainable) override { engine_.set_trainable(trainable); }

  std::vector<std::size_t> build(const std::vector<std::size_t>& input, std::size_t parameters_before) override {
    this->create_variables(engine_.build(input, this->name(), parameters_before));
    built_ = true;
    return engine_.output_shape();
  }
  std::size_t parameter_count() const override { return engine_.parameter_count(); }
  void check_batch(std::size_t batch) const override { engine_.check_batch(batch); }

  AnyTensor call(const AnyTensor& x, bool training) override {
    const std::size_t batch = x.batch();
    const std::size_t output_size = engine_.output_size(batch);  // checks the batch's sizes first
    value_buffer<C> converted;
    const std::span<const C> input = detail::values_in(x, converted);
    value_buffer<C> y(output_size);
    std::vector<detail::weight_update<V>> updates;
    engine_.call({batch, engine_.input_shape()}, input, this->refs(), y, training, updates);
    this->assign(updates);
    return AnyTensor(detail::with_batch(batch, engine_.output_shape()), std::move(y));
  }

  nlohmann::ordered_json config() const override {
    return detail::layer_config<Kind>(this->name(), trainable(), this->dtype_policy(), engine_.settings());
  }
  std::vector<bool> trained() const override {
    std::vector<bool> result;
    for (std::size_t i = 0; i < engine_.weight_specs().size(); ++i) result.push_back(engine_.trains(i));
    return result;
  }

  detail::any_span forward_for_training(std::size_t batch, detail::any_span x) override {
    const auto weights = this->refs();
    engine_.check_batch(batch);  // before converting the input, as the engine's cast would be
    return engine_.forward_for_training(batch, detail::in_compute_dtype(x, converted_input_), weights);
  }
  detail::any_gradient backward(detail::any_gradient dy, bool want_input_gradient, float loss_scale,
                                bool dy_is_pre_activation_gradient) override {
    const auto weights = this->refs();
    const std::span<C> dx = engine_.backward(detail::in_compute_dtype(dy, converted_gradient_), weights,
                                             want_input_gradient, loss_scale, dy_is_pre_activation_gradient);
    detail::free_buffer(converted_gradient_);  // freed now, as the engine frees its own
    return dx;
  }
  std::optional<detail::any_lent_output> lend_output() override {
    if (const auto lent = engine_.lend_output()) return detail::any_lent_output{lent->values, lent->activation};
    return std::nullopt;
  }
  bool backward_over_input(detail::any_gradient dy, const detail::any_lent_output& below, float loss_scale,
                           bool dy_is_pre_activation_gradient) override {
    const auto* values = std::get_if<std::span<C>>(&below.values);
    if (values == nullptr) return false;
    const detail::lent_output<C> lent{*values, below.activation};
    if (!engine_.writes_gradient_over(lent)) return false;  // before dy is converted for nothing
    engine_.backward_over_input(detail::in_compute_dtype(dy, converted_gradient_), this->refs(), lent, loss_scale,
                                dy_is_pre_activation_gradient);
    detail::free_buffer(converted_gradient_);
    return true;
  }
  void release_input_gradient() override { engine_.release_input_gradient(); }
  void collect_gradients(std::vector<gradient_and_variable>& pairs) override {
    detail::collect_gradients(engine_, [&](auto f) { this->for_each_indexed_variable(f); }, pairs);
  }
  void finish_step() override {
    detail::finish_step(engine_, [&](auto f) { this->for_each_indexed_variable(f); });
  }
  void release_step_buffers() noexcept override {
    engine_.release_step_buffers();
    detail::free_buffer(converted_input_);
    detail::free_buffer(converted_gradient_);
  }
  std::string state_text() const override { return engine_.state_text(); }
  void restore_state_text(std::string_view text) override { engine_.restore_state_text(text); }
  void check_state_text(std::string_view text) const override { engine_.check_state_text(text); }

  bool quantizable() const override { return requires { Kind::quantizable_modes; }; }
  void check_quantize(std::string_view mode) const override { checked_quantization(mode); }
  void quantize(std::string_view mode) override {
    const quantization_mode m = checked_quantization(mode);
    if constexpr (requires { Kind::quantizable_modes; } && (quantizable_pair<C, V>(quantization_mode::int8) ||
                                                           quantizable_pair<C, V>(quantization_mode::float8))) {
      const std::vector<std::span<const V>> float_weights = this->float_values();
      auto [specs, values] = engine_.quantized_weights(m, float_weights);
      std::vector<typename base::any_variable> quantized = this->quantized_variables(specs, values);
      DTypePolicy quantized_policy = detail::quantized_policy(m, this->dtype_policy().name());
      engine_.adopt_quantization(m);  // the last step that can throw; nothing changed before it
      this->replace_variables(std::move(quantized));
      this->set_dtype_policy(std::move(quantized_policy));
    }
  }

 private:
  quantization_mode checked_quantization(std::string_view mode) const {
    if (!quantizable())
      throw std::invalid_argument("Layer '" + detail::quote_for_message(this->name()) + "' (" + std::string(Kind::keras_class) +
                                  ") has no quantized form; Dense layers do.");
    const quantization_mode m = detail::checked_quantize(
        {this->name(), built_, engine_.quantization(), this->dtype_policy().name(), dtype_name_v<C>}, mode);
    if constexpr (requires { Kind::quantizable_modes; }) engine_.quantized_specs(m);
    return m;
  }

  detail::layer_engine<Kind, C, V> engine_;
  bool built_ = false;
  /// A training step's input and output gradient converted to C, when they come in another
  /// dtype; the input stays until the next step, since the engine's record views it.
  value_buffer<C> converted_input_, converted_gradient_;
};

}  // namespace mixprec
