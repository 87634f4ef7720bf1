// Sequential<Policy, Input, Layers...>: a model whose wiring the compiler checks.
//
//   using Model = Sequential<policies::mixed_float16,
//                            Input<100>,
//                            Dense<10>,                                       // mixed_float16
//                            Dense<10>,                                       // mixed_float16
//                            Activation<activations::softmax, policies::float32>>;  // its own policy
//   Model model;
//   Tensor<float, dynamic, 100> x(batch);
//   auto y = model(x);   // Tensor<float, dynamic, 10>: the type says what comes out
//
// Policy is the compile-time counterpart of set_dtype_policy: every layer without a policy of
// its own takes it (policies::infer: each such layer computes in its input's dtype). Every
// shape but the batch is known to the compiler; a layer that cannot take its predecessor's
// output is a compile error naming the layer's position and both shapes. All weights are
// built when the model is constructed, since every layer's input type is known.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/type_list.hpp>
#include <mixprec/core/infer_policy.hpp>
#include <mixprec/core/policy.hpp>
#include <mixprec/layers/detail/layer_engine.hpp>
#include <mixprec/layers/input.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/models/detail/keras_config.hpp>
#include <mixprec/models/detail/training_entry.hpp>
#include <mixprec/models/logs.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/serialization.hpp>

namespace mixprec {

/// A tensor shape as compile errors show it: batch_of<28, 28, 1> is (batch, 28, 28, 1).
template <std::size_t... Extents>
struct batch_of {};

namespace detail {

template <class X>
struct shown_shape;
template <class T, std::size_t... E>
struct shown_shape<Tensor<T, dynamic, E...>> {
  using type = batch_of<E...>;
};

/// Instantiated only on a wiring error: its template arguments, which the compiler prints,
/// name the layer (position 1 is the first layer after Input), the layer type and its input.
template <std::size_t LayerPosition, class LayerType, class InputShape, class InputDtype>
struct layer_cannot_take_its_input {
  static_assert(LayerPosition == 0,
                "Sequential: the layer at position LayerPosition cannot take the previous layer's output. The "
                "instantiation of layer_cannot_take_its_input<LayerPosition, LayerType, InputShape, InputDtype> "
                "above names the layer and the shape it was given (batch_of<...> lists the extents after the "
                "batch); the layer's own message, if any, says what it expects.");
  static constexpr bool reported = true;
};

template <class ExpectedShape, class GivenShape>
struct model_input_mismatch {
  static_assert(std::is_same_v<ExpectedShape, GivenShape>,
                "Sequential: the model was called with a tensor of another shape than its Input. "
                "model_input_mismatch<ExpectedShape, GivenShape> above shows both (batch_of<...> lists the "
                "extents after the batch).");
  static constexpr bool reported = true;
};

// The layers and input types the fold below has resolved so far are type_lists, not std::tuples:
// each step's operator>> is found by argument-dependent lookup, which completes the class types
// among the arguments' template arguments, and a std::tuple of every prefix of the layers and of
// their inputs is a quadratic number of classes (1071 std::_Tuple_impl over Tensor types in one
// test file, by clang's -ftime-trace).

/// The state of the type-level fold over the layers: the current tensor type, the position,
/// the layers resolved so far and the input type of each.
template <class ModelPolicy, class X, std::size_t Position, class Layers = type_list<>, class Inputs = type_list<>>
struct wiring;
template <class ModelPolicy, class X, std::size_t Position, class... Resolved, class... Inputs>
struct wiring<ModelPolicy, X, Position, type_list<Resolved...>, type_list<Inputs...>> {
  using output = X;
  using layers = std::tuple<Resolved...>;
  using inputs = std::tuple<Inputs...>;  // named, for std::tuple_element_t, not instantiated
};

template <class ModelPolicy, class X, std::size_t Position, class... Resolved, class... Inputs, class L>
auto operator>>(wiring<ModelPolicy, X, Position, type_list<Resolved...>, type_list<Inputs...>>,
                std::type_identity<L>) {
  using default_policy =
      std::conditional_t<std::is_same_v<ModelPolicy, InferPolicy>, Policy<typename X::dtype>, ModelPolicy>;
  using layer = typename L::template with_default_policy<default_policy>;
  using Y = typename layer::template output_t<X>;
  if constexpr (std::is_void_v<Y>) {
    static_assert(layer_cannot_take_its_input<Position, L, typename shown_shape<X>::type, typename X::dtype>::reported);
    // Carry on with the same tensor, so that one mistake is reported once.
    return wiring<ModelPolicy, X, Position + 1, type_list<Resolved..., layer>, type_list<Inputs..., X>>{};
  } else {
    return wiring<ModelPolicy, Y, Position + 1, type_list<Resolved..., layer>, type_list<Inputs..., X>>{};
  }
}

template <class ModelPolicy, class X0, class... Layers>
using wire = decltype((wiring<ModelPolicy, X0, 1>{} >> ... >> std::type_identity<Layers>{}));

/// Whether a model policy names an output dtype of its own, and the model's output type.
template <class P>
struct names_output_dtype : std::false_type {
  template <class Y>
  using output = Y;
};
template <class C, class V, class O>
  requires(!std::is_same_v<O, C>)
struct names_output_dtype<Policy<C, V, O>> : std::true_type {
  template <class Y>
  using output = rebind_tensor_t<Y, O>;
};

/// Threads a value through the layers with a left fold (no recursion). Each output is moved
/// into the next layer, which may reuse its buffer.
template <class X>
struct passing {
  X value;
};
template <class X, class L>
auto operator|(passing<X>&& x, std::pair<L*, bool> layer) {
  using Y = std::remove_cvref_t<decltype((*layer.first)(std::move(x.value)))>;
  return passing<Y>{layer.second ? layer.first->training_call(std::move(x.value)) : (*layer.first)(std::move(x.value))};
}

/// A training step's forward pass, threaded through the layers with a left fold: each layer's
/// engine records and returns its output, which stays alive in that engine for the backward pass.
template <class D>
struct training_pass {
  std::span<const D> values;
  std::size_t batch;
};
template <class D, class L>
auto operator|(training_pass<D> x, L* layer) {
  return training_pass<typename L::compute_dtype>{
      layer->engine().forward_for_training(x.batch, x.values, layer->weight_refs()), x.batch};
}
/// The backward pass, a right fold from the loss's gradient to the first layer (which needs no
/// input gradient). Each gradient is freed by the engine that made it (Producer's; none for the
/// loss's, nor for one written over the lent output of the layer below) as soon as the layer
/// below has consumed it.
template <class D, class Producer = void>
struct backward_pass {
  std::span<D> gradient;
  float loss_scale;
  Producer* producer = nullptr;
  /// The gradient of the next layer's pre-activation, written over its lent output.
  bool pre_activation = false;
};
/// A layer's step of the backward pass, with the layer below it (null for the first layer).
template <class L, class Below>
struct backward_step {
  L* layer;
  Below* below;
};
template <class L, class Below, class D, class P>
auto operator|(backward_step<L, Below> step, backward_pass<D, P> dy) {
  auto& engine = step.layer->engine();
  using result = backward_pass<typename L::compute_dtype, std::remove_reference_t<decltype(engine)>>;
  const auto release_dy = [&] {
    if constexpr (!std::is_void_v<P>)
      if (dy.producer) dy.producer->release_input_gradient();
  };
  // MaxPooling2D, Conv2D, Flatten and a 16-bit Dense write the layer below's pre-activation
  // gradient over that layer's output when it lends it.
  if constexpr (requires { step.below->engine().lend_output(); } &&
                std::is_same_v<typename Below::compute_dtype, typename L::compute_dtype>) {
    if (step.below)
      if (const auto lent = step.below->engine().lend_output();
          lent && engine.backward_over_input(dy.gradient, step.layer->weight_refs(), *lent, dy.loss_scale,
                                             dy.pre_activation)) {
        release_dy();
        return result{lent->values, dy.loss_scale, nullptr, true};
      }
  }
  const auto dx = engine.backward(dy.gradient, step.layer->weight_refs(), step.below != nullptr, dy.loss_scale,
                                  dy.pre_activation);
  release_dy();
  return result{dx, dy.loss_scale, &engine};
}

/// Instantiated only when a layer cannot be trained: the layer and its position.
template <std::size_t LayerPosition, class LayerType>
struct layer_has_no_backward_pass {
  static_assert(LayerPosition == 0,
                "Sequential: the layer at position LayerPosition has no backward pass: only the built-in layer kinds "
                "(Dense, Conv2D, MaxPooling2D, BatchNormalization, Dropout, Activation, Flatten) can be trained. "
                "layer_has_no_backward_pass<LayerPosition, LayerType> above names it.");
  static constexpr bool reported = true;
};

/// Instantiated only when labels cannot fit the model's output; batch_of<...> shows both shapes
/// after the batch (class ids: one per row, so their shape lacks the last axis).
template <class OutputShape, class LabelShape, class LabelDtype>
struct labels_do_not_fit_the_output {
  static_assert(sizeof(LabelDtype) == 0,
                "Sequential: the labels cannot fit the model's output. labels_do_not_fit_the_output<OutputShape, "
                "LabelShape, LabelDtype> above shows both: floating labels need the output's shape; integer class "
                "ids one per row (Tensor<int32_t, dynamic> for a (batch, classes) output).");
  static constexpr bool reported = true;
};

// What Sequential does per layer or for the whole model without needing the model's type: out of
// the class, so that a program with many models compiles each once per layer type, or once.

/// A layer's entry in a Sequential's Keras config.
template <class L>
nlohmann::ordered_json sequential_layer_entry(const L& layer) {
  nlohmann::ordered_json config = {{"name", layer.name()}};
  if constexpr (requires { layer.trainable(); }) config["trainable"] = layer.trainable();
  config["dtype"] = dtype_policies::serialize(layer.dtype_policy());
  config.update(layer.keras_config());
  return keras_layer_entry(L::keras_class, std::move(config));
}

/// Handles on a layer's weights whose training state (layer and weight trainable) is `trained`.
template <class L>
void add_weights_where(L& layer, bool trained, std::vector<weight_handle>& handles) {
  bool layer_trainable = true;
  if constexpr (requires { layer.trainable(); }) layer_trainable = layer.trainable();
  layer.for_each_weight([&](auto& w) {
    if ((layer_trainable && w.trainable()) == trained) handles.push_back(handle_of(layer.name() + "/" + w.name(), w));
  });
}

/// A layer's line in a model's summary: name, policy, parameters.
template <class L>
void describe_layer(std::ostream& out, const L& layer) {
  std::size_t parameters = 0;
  layer.for_each_weight([&](const auto& w) { parameters += w.size(); });
  out << "  " << layer.name() << "  " << layer.dtype_policy().name() << "  " << parameters << " parameters\n";
}

}  // namespace detail

template <class ModelPolicy, class InputSpecType, class... Layers>
class Sequential {
  static_assert(DTypePolicyType<ModelPolicy> || std::is_same_v<ModelPolicy, InferPolicy>,
                "Sequential<Policy, Input, Layers...>: the first argument is the model's dtype policy "
                "(policies::mixed_float16, policies::infer, ...).");
  static_assert(InputSpec<InputSpecType>,
                "Sequential<Policy, Input, Layers...>: the second argument is the input shape: Input<784>, "
                "Input<28, 28, 1> or InputOf<double, 784>.");
  static_assert(sizeof...(Layers) > 0, "Sequential needs at least one layer after its Input.");

  using wiring = detail::wire<ModelPolicy, typename InputSpecType::tensor, Layers...>;
  static constexpr bool model_casts_output = detail::names_output_dtype<ModelPolicy>::value;

 public:
  using policy = ModelPolicy;
  using input_type = typename InputSpecType::tensor;
  /// The layers as the model runs them: each with its resolved policy.
  using layer_types = typename wiring::layers;
  /// What model(x) returns: the last layer's output, cast to the policy's output dtype when
  /// the model's policy names one of its own (jmp's "output": Policy<bfloat16, float, float>).
  using output_type = typename detail::names_output_dtype<ModelPolicy>::template output<typename wiring::output>;
  static constexpr std::size_t layer_count = sizeof...(Layers);

  /// Default-configured layers.
  Sequential() { name_and_build(); }
  /// Configured layers (Dense<10>("logits"), Dropout<>(0.2), ...), in order.
  explicit Sequential(const Layers&... layers) : layers_(layers...) { name_and_build(); }

  template <std::size_t I>
  auto& layer() {
    return std::get<I>(layers_);
  }
  template <std::size_t I>
  const auto& layer() const {
    return std::get<I>(layers_);
  }

  /// Inference. x must have the Input's shape; any floating dtype (the layers cast it).
  template <class T, std::size_t... E>
  output_type operator()(const Tensor<T, E...>& x) {
    return run(x, false);
  }
  /// Training mode (Dropout drops, BatchNormalization uses and updates batch statistics).
  template <class T, std::size_t... E>
  output_type training_call(const Tensor<T, E...>& x) {
    return run(x, true);
  }

  /// f(path, weight) for every weight, in order; paths are "<layer name>/<weight name>".
  template <class F>
  void for_each_weight(F&& f) {
    std::apply([&](auto&... layers) { (layers.for_each_weight([&](auto& w) { f(layers.name() + "/" + w.name(), w); }), ...); },
               layers_);
  }
  template <class F>
  void for_each_weight(F&& f) const {
    std::apply([&](const auto&... layers) {
      (layers.for_each_weight([&](const auto& w) { f(layers.name() + "/" + w.name(), w); }), ...);
    }, layers_);
  }

  /// Handles on every weight (paths "<layer>/<weight>"), for save_weights / load_weights.
  std::vector<weight_handle> weights() {
    std::vector<weight_handle> handles;
    for_each_weight([&](const std::string& path, auto& w) { handles.push_back(handle_of(path, w)); });
    return handles;
  }
  void save_weights(const std::string& file) { mixprec::save_weights(weights(), file); }
  /// All or nothing: a bad file leaves every weight as it was.
  void load_weights(const std::string& file) { mixprec::load_weights(weights(), file); }

  /// Keras' model.quantize(mode): every layer with a quantized form (Dense) is quantized and
  /// runs the quantized arithmetic from then on (its type stays; its dtype_policy() and config
  /// say "int8_from_..."); the others keep their policies. Every layer is checked first, so an
  /// error changes nothing. The model is no longer compiled: compile() again to train it.
  void quantize(std::string_view mode) {
    parse_quantization_mode(mode);
    std::apply([&](auto&... layers) { (check_quantize(layers, mode), ...); }, layers_);
    bool changed = false;
    std::apply([&](auto&... layers) { ((changed = quantize_layer(layers, mode) || changed), ...); }, layers_);
    if (changed) compiled_.state.reset();
  }

  /// Keras 3's Sequential config: RuntimeModel::from_config(model.get_config()) builds the same
  /// model at run time.
  nlohmann::ordered_json get_config(std::string name = "sequential") const {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    std::apply([&](const auto&... each) { (layers.push_back(detail::sequential_layer_entry(each)), ...); }, layers_);
    // The model's policy, which RuntimeModel reads back for its output dtype (the infer policy has
    // no runtime form: every layer writes its own).
    nlohmann::ordered_json model_dtype = nullptr;
    if constexpr (DTypePolicyType<ModelPolicy>) model_dtype = dtype_policies::serialize(to_dtype_policy(ModelPolicy{}));
    return detail::sequential_config(std::move(name), model_dtype, std::span(input_type::shape_type::extents).subspan(1),
                                     dtype_name_v<typename input_type::dtype>, std::move(layers));
  }

  // ---- Training (the training floor drives these: #include <mixprec/training.hpp>) ----

  /// Keras' compile: compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true),
  /// {"accuracy"}). The loss may also be a Keras name ("mse").
  template <class Optimizer, class Loss>
  void compile(Optimizer optimizer, Loss loss, std::vector<std::string> metrics = {}, CompileOptions options = {}) {
    detail::training_entry<Sequential, detail::dependent_void<Optimizer>>::compile(*this, std::move(optimizer), std::move(loss),
                                                                 std::move(metrics), options);
  }
  /// The compiled optimizer that updates the weights (a LossScaleOptimizer's inner one).
  template <class M = Sequential>
  decltype(auto) optimizer() {
    return detail::training_entry<M>::optimizer(*this);
  }
  /// The LossScaleOptimizer compile() chose or was given, or nullptr.
  template <class M = Sequential>
  auto loss_scale_optimizer() {
    return detail::training_entry<M>::loss_scale_optimizer(*this);
  }
  /// One training step on a batch; logs["loss"] and one entry per metric, for this batch.
  /// y: floating targets shaped like the output, or integer class ids, one per row.
  template <class T, std::size_t... E, class L, std::size_t... F>
  Logs train_on_batch(const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    check_labels<L, F...>();
    return detail::training_entry<Sequential, detail::dependent_void<T>>::train_on_batch(*this, x, y);
  }
  /// A training step's loss and gradients, nothing applied (a GradientTape): gradients[i] is
  /// d loss / d trainable_weights()[i], in its variable dtype and shape. The forward pass runs in
  /// training mode (batch statistics, Dropout's mask) but no weight, moving statistic, metric or
  /// generator changes: two calls give the same result.
  template <class T, std::size_t... E, class L, std::size_t... F>
  Gradients compute_gradients(const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    check_labels<L, F...>();
    return detail::training_entry<Sequential, detail::dependent_void<T>>::compute_gradients(*this, x, y);
  }
  /// The loss and metrics of a batch in inference mode; nothing changes.
  template <class T, std::size_t... E, class L, std::size_t... F>
  Logs test_on_batch(const Tensor<T, E...>& x, const Tensor<L, F...>& y) {
    check_labels<L, F...>();
    return detail::training_entry<Sequential, detail::dependent_void<T>>::test_on_batch(*this, x, y);
  }

  /// Keras' fit: epochs of (shuffled) batches of train_on_batch, validation, callbacks; returns
  /// the History. x and y have a dynamic batch. model.fit(x, y, {.batch_size = 64, .epochs = 5}).
  template <class T, std::size_t... E, class L, std::size_t... F,
            class Options = FitOptions<Tensor<T, E...>, Tensor<L, F...>>>
  auto fit(const Tensor<T, E...>& x, const Tensor<L, F...>& y, const Options& options = {}) {
    check_labels<L, F...>();
    return detail::training_entry<Sequential, detail::loop_entry<Options>>::fit(*this, x, y, options);
  }
  /// The loss and metrics over all of x, in batches (inference mode; nothing changes).
  template <class T, std::size_t... E, class L, std::size_t... F, class Options = EvaluateOptions>
  Logs evaluate(const Tensor<T, E...>& x, const Tensor<L, F...>& y, const Options& options = {}) {
    check_labels<L, F...>();
    return detail::training_entry<Sequential, detail::loop_entry<Options>>::evaluate(*this, x, y, options);
  }
  /// model(x) in batches, the outputs concatenated.
  template <class T, std::size_t... E, class Options = PredictOptions>
  output_type predict(const Tensor<T, E...>& x, const Options& options = {}) {
    return detail::training_entry<Sequential, detail::loop_entry<Options>>::predict(*this, x, options);
  }

  /// Handles on the weights a training step updates (layer and weight trainable), and on the rest.
  std::vector<weight_handle> trainable_weights() { return weights_where(true); }
  std::vector<weight_handle> non_trainable_weights() { return weights_where(false); }

  /// A training step's forward pass: every layer records what its backward pass needs; returns
  /// the output (in the output dtype), valid until the next step or release_step_buffers().
  template <class T, std::size_t... E>
  std::span<const typename output_type::dtype> forward_for_training(const Tensor<T, E...>& x) {
    static_assert(detail::model_input_mismatch<typename detail::shown_shape<input_type>::type,
                                               typename detail::shown_shape<Tensor<T, E...>>::type>::reported);
    if constexpr (first_untrainable_layer != 0) {
      // Reported here, before the passes below would fail on that layer with a less helpful error.
      static_assert(detail::layer_has_no_backward_pass<first_untrainable_layer,
                                                       std::tuple_element_t<first_untrainable_layer - 1, layer_types>>::reported);
      return {};
    } else {
      check_batch(x.batch());
      const auto output = std::apply(
          [&](auto&... layers) { return (detail::training_pass<T>{x.values(), x.batch()} | ... | &layers).values; },
          layers_);
      if constexpr (model_casts_output) {
        cast_output_.resize(output.size());
        kernels::convert<typename decltype(output)::value_type, typename output_type::dtype>(output,
                                                                                            std::span(cast_output_));
        return cast_output_;
      } else {
        return output;
      }
    }
  }
  /// The backward pass from the gradient of the loss with respect to the output (overwritten on
  /// the way); that gradient is of the loss times loss_scale, and so are the regularizers'
  /// gradients added on the way. Once per forward_for_training: it writes gradients over the
  /// outputs that layers lend (kind.hpp's lent_output), which a second pass would read.
  void backward(std::span<typename output_type::dtype> output_gradient, float loss_scale = 1.0f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::backward_step<std::tuple_element_t<I, layer_types>, std::tuple_element_t<(I == 0 ? 0 : I - 1), layer_types>>{
           &std::get<I>(layers_), I == 0 ? nullptr : &std::get<(I == 0 ? 0 : I - 1)>(layers_)} |
       ... | detail::backward_pass<typename output_type::dtype>{output_gradient, loss_scale});
    }(std::make_index_sequence<layer_count>{});
  }
  void collect_gradients(std::vector<gradient_and_variable>& pairs) {
    std::apply([&](auto&... layers) { (layers.collect_gradients(pairs), ...); }, layers_);
  }
  void finish_step() {
    std::apply([&](auto&... layers) { (layers.finish_step(), ...); }, layers_);
  }
  /// Frees what training steps keep from one to the next (every layer's record and weight
  /// gradients, the output's cast): what the model holds is then its weights and its state.
  /// fit() calls it when it returns; the next step allocates them again.
  void release_step_buffers() noexcept {
    std::apply([](auto&... layers) { (layers.engine().release_step_buffers(), ...); }, layers_);
    if constexpr (model_casts_output) detail::free_buffer(cast_output_);
  }
  /// Each layer's state beyond its weights (Dropout's generator), as text, for checkpoints.
  std::vector<std::string> layer_states() {
    return std::apply([](auto&... layers) { return std::vector<std::string>{layers.engine().state_text()...}; }, layers_);
  }
  /// Restores layer_states(); all or nothing (std::invalid_argument naming the layer).
  void restore_layer_states(const std::vector<std::string>& states) {
    check_layer_states(states);
    std::size_t i = 0;
    std::apply([&](auto&... layers) { (layers.engine().restore_state_text(states[i++]), ...); }, layers_);
  }
  /// Throws as restore_layer_states would, changing nothing.
  void check_layer_states(const std::vector<std::string>& states) {
    if (states.size() != layer_count)
      throw std::invalid_argument("Sequential: " + std::to_string(states.size()) + " layer states for " +
                                  std::to_string(layer_count) + " layers.");
    std::size_t i = 0;
    std::apply([&](auto&... layers) { (detail::checked_state(layers.engine(), layers.name(), states[i++]), ...); }, layers_);
  }
  double regularization_loss() const {
    return std::apply([](const auto&... layers) { return (0.0 + ... + layers.regularization_loss()); }, layers_);
  }
  /// The size of the output's last axis (the classes a loss sees per row).
  static constexpr std::size_t output_columns() { return output_type::shape_type::extents[output_type::rank - 1]; }

  std::size_t parameter_count() const {
    std::size_t count = 0;
    for_each_weight([&](const std::string&, const auto& w) { count += w.size(); });
    return count;
  }

  /// One line per layer: name, policy, output shape, parameters.
  friend std::ostream& operator<<(std::ostream& out, const Sequential& model) {
    out << "Sequential (policy " << model_policy_name() << ")\n";
    std::apply([&](const auto&... layers) { (detail::describe_layer(out, layers), ...); }, model.layers_);
    return out << "  parameters: " << model.parameter_count() << '\n';
  }

 private:
  static std::string_view model_policy_name() { return ModelPolicy::name; }

  /// Every layer's sizes for this batch, before any layer runs: a batch over the size caps
  /// changes no layer's state (moving statistics, Dropout's generator).
  void check_batch(std::size_t batch) const {
    std::apply([&](const auto&... layers) { (layers.engine().check_batch(batch), ...); }, layers_);
  }

  template <class T, std::size_t... E>
  output_type run(const Tensor<T, E...>& x, bool training) {
    static_assert(detail::model_input_mismatch<typename detail::shown_shape<input_type>::type,
                                               typename detail::shown_shape<Tensor<T, E...>>::type>::reported);
    check_batch(x.batch());
    auto y = std::apply(
        [&](auto&... layers) {
          return (detail::passing<const Tensor<T, E...>&>{x} | ... | std::pair{&layers, training}).value;
        },
        layers_);
    if constexpr (model_casts_output) return tensor_cast<typename output_type::dtype>(y);
    else return y;
  }

  /// The position (from 1) of the first layer without a backward pass; 0 when all have one.
  static constexpr std::size_t first_untrainable_layer = []<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t position = 0;
    ((position = position != 0 || requires(std::tuple_element_t<I, layer_types>& layer) { layer.engine(); }
                     ? position
                     : I + 1),
     ...);
    return position;
  }(std::make_index_sequence<layer_count>{});
  template <class L, std::size_t... F>
  static void check_labels() {
    using labels = Tensor<L, F...>;
    using output_shape = typename detail::shown_shape<output_type>::type;
    constexpr bool class_ids = std::is_integral_v<L>;
    if constexpr (!labels::batched) {
      static_assert(detail::labels_do_not_fit_the_output<output_shape, Tensor<L, F...>, L>::reported);
    } else {
      using label_shape = typename detail::shown_shape<labels>::type;
      constexpr bool fits =
          class_ids ? (labels::rank + 1 == output_type::rank || (labels::rank == output_type::rank &&
                                                                 labels::shape_type::extents[labels::rank - 1] == 1))
                    : std::is_same_v<label_shape, output_shape>;
      if constexpr (!fits) static_assert(detail::labels_do_not_fit_the_output<output_shape, label_shape, L>::reported);
    }
  }
  template <class L>
  static void check_quantize(const L& layer, std::string_view mode) {
    if constexpr (requires { layer.checked_quantization(mode); }) layer.checked_quantization(mode);
  }
  /// Whether the layer has a quantized form (and was quantized).
  template <class L>
  static bool quantize_layer(L& layer, std::string_view mode) {
    if constexpr (requires { layer.quantize(mode); }) {
      layer.quantize(mode);
      return true;
    } else {
      return false;
    }
  }
  std::vector<weight_handle> weights_where(bool trained) {
    std::vector<weight_handle> handles;
    std::apply([&](auto&... layers) { (detail::add_weights_where(layers, trained, handles), ...); }, layers_);
    return handles;
  }

  /// Keras' layer names (the first "dense" keeps its name, the next become dense_1, dense_2...:
  /// detail::first_free_name), then every layer built for its input.
  void name_and_build() {
    std::set<std::string> taken;
    std::apply([&](auto&... layers) {
      (layers.set_name(*taken.insert(detail::first_free_name(layers.name(), taken)).first), ...);
    }, layers_);
    build_all(std::make_index_sequence<layer_count>{});
  }
  template <std::size_t... I>
  void build_all(std::index_sequence<I...>) {
    (std::get<I>(layers_).template build_for<input_of<I>>(), ...);
  }
  /// The input tensor type of layer I.
  template <std::size_t I>
  using input_of = std::tuple_element_t<I, typename wiring::inputs>;

  template <class, class>
  friend struct detail::training_entry;

  layer_types layers_;
  value_buffer<typename output_type::dtype> cast_output_;
  detail::compiled_slot compiled_;
};

}  // namespace mixprec
