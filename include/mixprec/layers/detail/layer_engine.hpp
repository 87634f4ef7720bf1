// One layer of a kind, computing in C with variables in V: the calls, the training step's
// forward pass (which records what backward needs) and backward pass, and the weight
// gradients; what depends on the kind alone (settings, shapes, size checks, state) is in its
// base, kind_engine<Kind>, compiled once per kind. Both a compile-time layer (Dense<64>) and the runtime model's generic layer own one
// and hand it their variables as weight_refs, so the two model kinds run the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <mixprec/core/dtype.hpp>
#include <mixprec/core/limits.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/detail/packed_product_weight.hpp>
#include <mixprec/layers/detail/scratch.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::detail {

/// A variable of type W from a weight spec holding `values`.
template <class W>
W make_variable(const weight_spec& spec, std::vector<typename W::true_dtype> values) {
  W variable(spec.name, typename W::value_type(std::move(values)), spec.shape, spec.trainable);
  if (spec.regularizer) variable.set_regularizer(*spec.regularizer);
  return variable;
}
/// The same, its values drawn with the seed of its path "<layer>/<weight>" (an int8 weight starts
/// at zero, as in Keras).
template <class W>
W make_variable(const std::string& layer, const weight_spec& spec) {
  using V = typename W::true_dtype;
  if constexpr (std::is_same_v<V, std::int8_t>) {
    return make_variable<W>(spec, std::vector<V>(checked_product(spec.shape, layer + "/" + spec.name)));
  } else {
    return make_variable<W>(spec, initial_values<V>(spec.initializer, spec.shape, layer + "/" + spec.name));
  }
}
/// The same from quantized values (an int8 weight's, or a V weight's).
template <class W, class V>
W make_variable(const weight_spec& spec, weight_values<V> values) {
  if constexpr (std::is_same_v<typename W::true_dtype, std::int8_t>) return make_variable<W>(spec, std::move(values.int8));
  else return make_variable<W>(spec, std::move(values.values));
}

/// The weight_ref of a variable: its true value (a kind reads it in C through math.hpp's
/// product_weight or converted).
template <class V, class R, std::size_t... E>
weight_ref<V> reference(const AutoCastVariable<V, R, E...>& variable) {
  return {variable.value().values(), {}, variable.version()};
}
/// An int8 weight's: its int8 values only.
template <class V, std::size_t... E>
weight_ref<V> reference(const AutoCastVariable<std::int8_t, std::int8_t, E...>& variable) {
  return {{}, variable.value().values()};
}

/// The state of a layer of kind Kind named `layer_name` (a kind may seed it from the name).
template <class Kind>
typename Kind::state initial_state(const typename Kind::settings& settings, std::string_view layer_name) {
  if constexpr (requires { Kind::initial_state(settings, layer_name); }) return Kind::initial_state(settings, layer_name);
  else return {};
}

/// The part of a layer that depends on its kind alone: settings, shapes, weights' specs, the
/// size checks, the state beyond the weights. Compiled once per kind, whatever the dtypes (the
/// runtime model holds every kind in up to 16 dtype pairs).
template <class Kind>
class kind_engine {
 public:
  using settings_type = typename Kind::settings;

  const settings_type& settings() const { return settings_; }
  bool trainable() const { return trainable_; }
  quantization_mode quantization() const {
    if constexpr (requires { settings_.quantization; }) return settings_.quantization;
    else return quantization_mode::none;
  }
  /// The settings and weight list a quantization mode replaced, for undo_quantization.
  struct quantization_undo {
    settings_type settings;
    std::vector<weight_spec> specs;
  };
  /// Strong guarantee: the settings change only once the new weight list exists. Returns what
  /// they replaced, so that a caller whose next step fails can put it back.
  quantization_undo adopt_quantization(quantization_mode mode) {
    quantization_undo previous{settings_quantized(mode), {}};
    std::vector<weight_spec> specs = Kind::weights(previous.settings, input_);
    std::swap(settings_, previous.settings);
    std::swap(specs_, specs);
    previous.specs = std::move(specs);
    return previous;
  }
  void undo_quantization(quantization_undo&& previous) noexcept {
    settings_ = std::move(previous.settings);
    specs_ = std::move(previous.specs);
  }
  /// The weight list of this built layer quantized in `mode`, after the kind's and the size
  /// checks (an int8 Dense's depth cap, ...), which throw before anything changes: a model checks
  /// every layer this way before it quantizes any.
  std::vector<weight_spec> quantized_specs(quantization_mode mode) const {
    return checked_weights(settings_quantized(mode), input_, 0);
  }
  /// The settings with quantization `mode`.
  settings_type settings_quantized(quantization_mode mode) const {
    settings_type quantized = settings_;
    quantized.quantization = mode;
    return quantized;
  }
  void set_trainable(bool trainable) { trainable_ = trainable; }

  /// Fixes the input extents (batch excluded) of the layer `layer_name`; returns the weights to
  /// create. Throws std::invalid_argument (changing nothing, allocating nothing) when the kind
  /// cannot take such inputs, or when a size is over the caps of core/limits.hpp: one sample's
  /// input, output or workspace, a weight, or the layer's parameters counted after the
  /// `parameters_before` of the layers ahead of it in its model.
  std::vector<weight_spec> build(std::span<const std::size_t> input, std::string_view layer_name,
                                 std::size_t parameters_before = 0) {
    sample_sizes sample;
    sample.input = checked_activation(input, "the input");
    std::vector<std::size_t> output = Kind::output_shape(settings_, input);
    sample.output = checked_activation(output, "the output");
    if constexpr (requires { Kind::scratch_per_sample(settings_, input); }) {
      sample.scratch = Kind::scratch_per_sample(settings_, input);
      check_allocation("the workspace of one sample", sample.scratch, activation_bytes_);
    }
    std::vector<weight_spec> specs = checked_weights(settings_, input, parameters_before);
    typename Kind::state state = initial_state<Kind>(settings_, layer_name);
    input_.assign(input.begin(), input.end());
    output_shape_ = std::move(output);
    specs_ = std::move(specs);
    sample_ = sample;
    name_ = layer_name;
    state_ = std::move(state);
    pending_state_ = state_;
    return specs_;
  }
  const std::vector<std::size_t>& input_shape() const { return input_; }
  const std::vector<std::size_t>& output_shape() const { return output_shape_; }
  const std::vector<weight_spec>& weight_specs() const { return specs_; }
  /// The layer's parameters: the elements of all its weights (checked against the caps at build).
  std::size_t parameter_count() const {
    std::size_t count = 0;
    for (const weight_spec& spec : specs_) count += checked_product(spec.shape, "a weight");
    return count;
  }
  /// The output elements of a call on `batch` samples, after check_batch.
  std::size_t output_size(std::size_t batch) const {
    check_batch(batch);
    return batch * sample_.output;
  }
  /// Throws std::invalid_argument naming the layer when what a call allocates for `batch` samples
  /// (the input in the compute dtype, the output, the kind's workspace: the samples it holds at
  /// once, a chunk's for a kind that walks the batch in chunks) is over the allocation cap.
  void check_batch(std::size_t batch) const {
    const std::size_t cap_elements = get_size_limits().max_allocation_bytes / activation_bytes_;
    std::size_t scratch_samples = batch;
    if constexpr (requires { Kind::scratch_samples(batch, sample_.scratch); })
      scratch_samples = Kind::scratch_samples(batch, sample_.scratch);
    struct allocation {
      std::size_t samples, per_sample;
      const char* what;
    };
    for (const auto& [samples, per_sample, what] :
         {allocation{batch, sample_.input, "the input"}, allocation{batch, sample_.output, "the output"},
          allocation{scratch_samples, sample_.scratch, "the workspace"}}) {
      std::size_t elements = 0;
      if (!__builtin_mul_overflow(samples, per_sample, &elements) && elements <= cap_elements) continue;
      // Over the cap: the message is built only now (this runs on every call).
      const std::string where = "layer '" + quote_for_message(name_) + "' (" + std::string(Kind::keras_class) + "), a batch of " +
                                std::to_string(batch) + ": " + what;
      check_allocation(where, checked_multiply(samples, per_sample, where), activation_bytes_);
    }
  }

  /// The layer's state beyond its weights (Dropout's generator) as text, for checkpoints; empty
  /// for kinds that have none.
  std::string state_text() const {
    if constexpr (requires(typename Kind::state s) { s.generator; }) {
      std::ostringstream text;
      text << state_.generator;
      return text.str();
    } else {
      return {};
    }
  }
  /// Restores state_text(); std::invalid_argument (nothing changed) when `text` is not one.
  void restore_state_text(std::string_view text) {
    state_ = parsed_state(text);
    pending_state_ = state_;
  }
  /// Throws as restore_state_text would, changing nothing.
  void check_state_text(std::string_view text) const { parsed_state(text); }

  /// Whether weight i is trained: the layer and the weight are both trainable.
  bool trains(std::size_t i) const { return trainable_ && specs_[i].trainable; }

 protected:
  /// activation_bytes: what an activation element is counted at in the size checks. The
  /// constructor and the destructor are out of line (noinline): compiled once per kind, not into
  /// each layer of the kind (the runtime model holds up to 16 per kind).
  [[gnu::noinline]] kind_engine(settings_type settings, std::size_t activation_bytes)
      : settings_(std::move(settings)),
        state_(),  // set by build(), which knows the layer's name
        pending_state_(),
        activation_bytes_(activation_bytes) {}
  [[gnu::noinline]] ~kind_engine() = default;
  kind_engine(const kind_engine&) = default;
  kind_engine(kind_engine&&) = default;
  kind_engine& operator=(const kind_engine&) = default;
  kind_engine& operator=(kind_engine&&) = default;

  /// The kind's weights for `settings`, each checked against the allocation cap (counted at 8
  /// bytes an element: initial values are drawn in float64) and all against the parameter cap.
  static std::vector<weight_spec> checked_weights(const settings_type& settings, std::span<const std::size_t> input,
                                                  std::size_t parameters_before) {
    std::vector<weight_spec> specs = Kind::weights(settings, input);
    std::size_t count = 0;
    for (const weight_spec& spec : specs) {
      std::string what = "the weight '" + spec.name + "' of shape [";
      for (std::size_t i = 0; i < spec.shape.size(); ++i) what += (i ? ", " : "") + std::to_string(spec.shape[i]);
      what += "]";
      const std::size_t elements = checked_product(spec.shape, what);
      check_allocation(what, elements, sizeof(double));
      count = checked_add(count, elements, "the layer's parameters");
    }
    check_parameter_count(parameters_before, count);
    return specs;
  }

  settings_type settings_;
  typename Kind::state state_;
  bool trainable_ = true;
  std::vector<std::size_t> input_, output_shape_;
  std::vector<weight_spec> specs_;
  /// The state a training step's forward pass leaves, kept until the step succeeds.
  typename Kind::state pending_state_;

 private:
  /// What one sample takes in a call, in elements: the input, the output, the kind's workspace.
  struct sample_sizes {
    std::size_t input = 0, output = 0, scratch = 0;
  };

  /// The elements of one sample of `shape`, checked against the caps.
  std::size_t checked_activation(std::span<const std::size_t> shape, const char* what) const {
    const std::size_t elements = checked_product(shape, what);
    check_allocation(std::string(what) + " of one sample", elements, activation_bytes_);
    return elements;
  }

  typename Kind::state parsed_state(std::string_view text) const {
    typename Kind::state restored = state_;
    if constexpr (requires(typename Kind::state s) { s.generator; }) {
      std::istringstream in{std::string(text)};
      in >> restored.generator;
      if (!in || !(in >> std::ws).eof())
        throw std::invalid_argument("not the state of a " + std::string(Kind::keras_class) + " layer's generator");
    } else if (!text.empty()) {
      throw std::invalid_argument("a " + std::string(Kind::keras_class) + " layer has no state beyond its weights");
    }
    return restored;
  }

  sample_sizes sample_;
  /// The layer's name, for the errors of its calls.
  std::string name_;
  std::size_t activation_bytes_;
};

/// A layer of kind Kind computing in C with variables in V: the calls and the training step's
/// passes, on top of the kind's own part.
template <class Kind, class C, class V>
class layer_engine : public kind_engine<Kind> {
  using base = kind_engine<Kind>;

 public:
  using typename base::settings_type;
  using ref = weight_ref<V>;

  /// Activations are counted at sizeof(C) bytes an element, 16-bit ones at 4 (widened to float32
  /// for some work).
  explicit layer_engine(settings_type settings)
      : base(std::move(settings), sizeof(C) > sizeof(float) ? sizeof(C) : sizeof(float)) {}

  /// Makes the kind's quantized arithmetic (quantized_forward, quantized_backward) the one a
  /// quantized layer runs. Named only here, and this only where a layer may run quantized (a
  /// quantized policy's compile-time layer, adopt_quantization, and every runtime layer, whose
  /// policy is read at run time): a TU whose compile-time layers are never quantized does not
  /// compile the quantized arithmetic.
  void use_quantized_arithmetic() {
    if constexpr (requires { Kind::quantizable_modes; })
      quantized_ = {&Kind::template quantized_forward<C, V>, &Kind::template quantized_backward<C, V>};
  }
  /// kind_engine's, with the quantized arithmetic made the one the layer runs.
  typename base::quantization_undo adopt_quantization(quantization_mode mode) {
    use_quantized_arithmetic();
    return base::adopt_quantization(mode);
  }

  /// What quantizing the built layer in `mode` gives: the new weights' specs and values (from
  /// the float weights' values, in weight order). Nothing changes until adopt_quantization.
  std::pair<std::vector<weight_spec>, std::vector<weight_values<V>>> quantized_weights(
      quantization_mode mode, std::span<const std::span<const V>> float_weights) const {
    std::vector<weight_spec> specs = this->quantized_specs(mode);
    return {std::move(specs),
            Kind::template quantized_weights<V>(this->settings_quantized(mode), this->input_, float_weights)};
  }

  /// y = layer(x) outside a training step, for inputs of the shape given (a layer without
  /// weights takes any shape its kind accepts); in training mode, non-trainable weights' new
  /// values land in `updates` for the caller to assign now.
  void call(call_shape shape, std::span<const C> x, std::span<const ref> weights, std::span<C> y, bool training,
            std::vector<weight_update<V>>& updates) {
    this->check_batch(shape.batch);
    const scratch_scope scope;
    run_forward(forward_args<Kind, C, V>{this->settings_, this->state_, shape, x, weights, y, training, this->trainable_,
                                     nullptr, updates, &packed_weight_});
  }

  /// A training step's forward pass over x (in any dtype: cast to C here, Keras' autocast). The
  /// output stays owned by the engine until the next step (or release_step_buffers()); nothing
  /// persistent changes before commit().
  template <class D>
  std::span<const C> forward_for_training(std::size_t batch, std::span<const D> x, std::span<const ref> weights) {
    this->check_batch(batch);
    return forward_in_compute_dtype(batch, in_compute_dtype(x, converted_input_), weights);
  }

  /// The backward pass of the last forward_for_training. dy comes in the next layer's compute
  /// dtype (or the loss's) and is cast to C, the gradient of the cast; it is the pass's to
  /// overwrite (kind.hpp's backward_args). Fills gradient(i) for every trained weight
  /// (regularizers' gradients added in V, times the loss scale that dy carries) and returns dx
  /// in C, if wanted: the engine holds it until release_input_gradient(), which the model calls
  /// as soon as the layer below has consumed it, so that no more than two activation gradients
  /// are alive at a time and none between steps. Once per forward_for_training (a layer above
  /// may have written over this layer's lent output). dy_is_pre_activation_gradient: dy was
  /// written over this layer's lent output (lend_output).
  template <class D>
  std::span<C> backward(std::span<D> dy, std::span<const ref> weights, bool want_input_gradient,
                        float loss_scale = 1.0f, bool dy_is_pre_activation_gradient = false) {
    const std::span<C> dx = backward_in_compute_dtype(in_compute_dtype(dy, converted_gradient_), weights,
                                                      want_input_gradient, loss_scale, dy_is_pre_activation_gradient);
    free_buffer(converted_gradient_);
    return dx;
  }

  /// This layer's output of the last forward_for_training, lent to the layer above's backward
  /// pass to write this layer's pre-activation gradient over (kind.hpp's lent_output), or none
  /// when the kind's backward cannot take that gradient (Kind::lendable_activation). The model
  /// then passes it back to backward with dy_is_pre_activation_gradient.
  std::optional<lent_output<C>> lend_output() {
    if constexpr (requires { Kind::lendable_activation(this->settings_); })
      if (const std::optional<kernels::activation> activation = Kind::lendable_activation(this->settings_))
        return lent_output<C>{output_, *activation};
    return std::nullopt;
  }
  /// backward, its input gradient written over `below`, the lent output of the layer below, as
  /// that layer's pre-activation gradient (Kind::backward_over_input); `below` must be this
  /// layer's input as it was given (not a cast). False, nothing done, when that cannot be: the
  /// model then calls backward.
  template <class D>
  bool backward_over_input(std::span<D> dy, std::span<const ref> weights, const lent_output<C>& below,
                           float loss_scale = 1.0f, bool dy_is_pre_activation_gradient = false) {
    if (!writes_gradient_over(below)) return false;
    backward_in_compute_dtype(in_compute_dtype(dy, converted_gradient_), weights, false, loss_scale,
                              dy_is_pre_activation_gradient, &below);
    free_buffer(converted_gradient_);
    return true;
  }
  /// Whether backward_over_input would write over `below` (else it returns false at once).
  bool writes_gradient_over(const lent_output<C>& below) const {
    if constexpr (requires { Kind::template writes_gradient_over_input<C>(this->settings_); })
      return Kind::template writes_gradient_over_input<C>(this->settings_) &&
             below.values.data() == input_values_.data() && below.values.size() == input_values_.size();
    else
      return false;
  }

  /// Frees the dx the last backward returned (the model calls it once the layer below has read it).
  void release_input_gradient() { free_buffer(input_gradient_); }

  /// Frees what a training step keeps for the next one to reuse: the record of its forward pass
  /// (output, input cast to C, the kind's saved values, the non-trainable weights' new values)
  /// and the weight gradients. The next step allocates them again.
  void release_step_buffers() noexcept {
    free_buffer(output_);
    free_buffer(converted_input_);
    free_buffer(converted_gradient_);
    free_buffer(input_gradient_);
    saved_ = {};
    input_values_ = {};
    std::vector<weight_update<V>>().swap(updates_);  // committed (or dropped) by then
    for (value_buffer<V>& gradient : gradients_) free_buffer(gradient);
  }

  /// Weight i's gradient from the last backward (in V); empty after release_step_buffers().
  std::span<V> gradient(std::size_t i) { return gradients_[i]; }

  /// Makes the step's forward effects permanent (the generator's draws); returns the new values
  /// of non-trainable weights for the caller to assign.
  const std::vector<weight_update<V>>& commit() {
    this->state_ = this->pending_state_;
    return updates_;
  }

 private:
  /// values in C: themselves, or cast into `buffer`. Only this depends on the dtype a training
  /// step hands the layer; the passes below are compiled once per (kind, C, V).
  template <class D>
  static auto in_compute_dtype(std::span<D> values, value_buffer<C>& buffer) {
    using result = std::span<std::conditional_t<std::is_const_v<D>, const C, C>>;
    if constexpr (std::is_same_v<std::remove_const_t<D>, C>) {
      return result(values);
    } else {
      buffer.resize(values.size());
      kernels::convert<std::remove_const_t<D>, C>(values, std::span(buffer));
      return result(buffer);
    }
  }
  std::span<const C> forward_in_compute_dtype(std::size_t batch, std::span<const C> x, std::span<const ref> weights) {
    batch_ = batch;
    input_values_ = x;
    output_.resize(this->output_size(batch));
    this->pending_state_ = this->state_;
    updates_.clear();
    packed_weight_.release();
    const scratch_scope scope;
    run_forward(forward_args<Kind, C, V>{this->settings_, this->pending_state_, {batch, this->input_}, input_values_,
                                     weights, output_, true, this->trainable_, &saved_, updates_});
    return output_;
  }
  /// The kind's float arithmetic, or its quantized one on a quantized layer.
  void run_forward(const forward_args<Kind, C, V>& args) const {
    if (this->quantization() == quantization_mode::none) return Kind::template forward<C, V>(args);
    quantized().forward(args);
  }
  void run_backward(const backward_args<Kind, C, V>& args) const {
    if (this->quantization() == quantization_mode::none) return Kind::template backward<C, V>(args);
    quantized().backward(args);
  }
  struct quantized_arithmetic {
    void (*forward)(const forward_args<Kind, C, V>&) = nullptr;
    void (*backward)(const backward_args<Kind, C, V>&) = nullptr;
  };
  const quantized_arithmetic& quantized() const {
    if (!quantized_.forward)
      throw std::logic_error(std::string(Kind::keras_class) +
                             ": a quantized layer without its quantized arithmetic (use_quantized_arithmetic).");
    return quantized_;
  }
  /// With `below`, the kind's backward_over_input writes the input gradient over it.
  std::span<C> backward_in_compute_dtype(std::span<C> dy_c, std::span<const ref> weights, bool want_input_gradient,
                                         float loss_scale, bool dy_is_pre_activation_gradient,
                                         const lent_output<C>* below = nullptr) {
    const std::vector<weight_spec>& specs = this->specs_;
    gradients_.resize(specs.size());
    std::vector<std::span<V>> gradients(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (this->trains(i)) {
        gradients_[i].resize(weights[i].value.size());
        gradients[i] = gradients_[i];
      }
    input_gradient_.resize(want_input_gradient ? input_values_.size() : 0);
    const scratch_scope scope;
    const backward_args<Kind, C, V> args{this->settings_, {batch_, this->input_}, saved_, input_values_,
                                         output_,         weights,          dy_c,   input_gradient_,
                                         gradients,       this->trainable_, updates_, dy_is_pre_activation_gradient};
    if constexpr (requires { Kind::template writes_gradient_over_input<C>(this->settings_); }) {
      if (below) Kind::template backward_over_input<C, V>(args, *below);  // unquantized (writes_gradient_over)
      else run_backward(args);
    } else {
      run_backward(args);
    }
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (this->trains(i) && specs[i].regularizer)
        std::visit([&](const auto& r) { r.template add_gradient<V>(weights[i].value, gradients[i], loss_scale); },
                   *specs[i].regularizer);
    return input_gradient_;
  }

  // The last training step's record.
  std::vector<weight_update<V>> updates_;
  std::size_t batch_ = 0;
  std::span<const C> input_values_;
  value_buffer<C> converted_input_, output_, converted_gradient_, input_gradient_;
  typename Kind::template saved<C> saved_;
  std::vector<value_buffer<V>> gradients_;
  packed_product_weight<C> packed_weight_;
  quantized_arithmetic quantized_;
};

}  // namespace mixprec::detail

namespace mixprec::detail {

/// The (gradient, variable) pairs of a layer's trained weights, after its backward pass.
/// for_each_weight(f) calls f(variable, index) for each of the layer's variables.
template <class Engine, class ForEachWeight>
void collect_gradients(Engine& engine, ForEachWeight&& for_each_weight, std::vector<gradient_and_variable>& pairs) {
  for_each_weight([&](auto& variable, std::size_t i) {
    using V = typename std::remove_cvref_t<decltype(variable)>::true_dtype;
    if constexpr (FloatingDType<V>)  // an int8 weight is never trained
      if (engine.trains(i)) pairs.push_back(gradient_and_variable_of<V>{engine.gradient(i), variable.values_to_update()});
  });
}

/// Ends a training step that succeeded: the non-trainable weights' new values (moving
/// statistics) assigned, the generator advanced.
template <class Engine, class ForEachWeight>
void finish_step(Engine& engine, ForEachWeight&& for_each_weight) {
  const auto& updates = engine.commit();
  for_each_weight([&](auto& variable, std::size_t i) {
    using V = typename std::remove_cvref_t<decltype(variable)>::true_dtype;
    if constexpr (FloatingDType<V>)  // updates are for float weights (moving statistics)
      for (const auto& update : updates)
        if (update.weight == i) variable.assign_values(std::span<const V>(update.value));
  });
}

/// layer.check_state_text(text), the error naming the layer (an engine or a runtime layer).
template <class Layer>
void checked_state(const Layer& layer, const std::string& name, std::string_view text) {
  try {
    layer.check_state_text(text);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument("layer '" + quote_for_message(name) + "': " + error.what() + ".");
  }
}

}  // namespace mixprec::detail
