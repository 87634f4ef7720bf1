// RuntimeModel: a Sequential model built at run time from layer configs whose policies are
// strings, DTypePolicy values, serialized policies, or entries of a DTypePolicyMap keyed by
// layer path ("sequential/dense_1") -- Keras' dynamic API on top of the compiled layers.
//
//   RuntimeModel model({784}, {layer_configs::dense(1024, "relu", "mixed_bfloat16"),
//                              layer_configs::dense(10),
//                              layer_configs::activation("softmax", "float32")});
//   AnyTensor y = model(x);
//
//   auto same = RuntimeModel::from_config(model.get_config());   // Keras' JSON, both ways
//
// Each layer picks its compiled instantiation once, when the model is built; a layer whose
// policy it does not support, an unknown layer or a bad setting is a std::invalid_argument that
// names the layer ("layer 2 ('dense_1', Dense): ...").
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/activations.hpp>
#include <mixprec/models/any_tensor.hpp>
#include <mixprec/models/detail/keras_config.hpp>
#include <mixprec/models/detail/runtime_layer_factory.hpp>
#include <mixprec/models/detail/training_entry.hpp>
#include <mixprec/models/logs.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/models/weights_io.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/dtype_policy_map.hpp>
#include <mixprec/runtime/experimental_policy.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/global_policy.hpp>
#include <mixprec/runtime/serialization.hpp>

namespace mixprec {

/// Keras layer configs, for RuntimeModel: {"class_name": ..., "config": {...}}. `dtype` is a
/// policy name, a DTypePolicy, a serialized policy, or null (the model's default).
namespace layer_configs {

template <class Deferred = void>
nlohmann::json layer(std::string_view class_name, nlohmann::json config, const nlohmann::json& dtype,
                     std::string_view name) {
  if (!dtype.is_null()) config["dtype"] = dtype;
  if (!name.empty()) config["name"] = name;
  return {{"class_name", class_name}, {"config", std::move(config)}};
}
template <class Deferred = void>
nlohmann::json dense(std::size_t units, std::string_view activation = "linear", const nlohmann::json& dtype = {},
                     std::string_view name = {}, bool use_bias = true) {
  return layer("Dense", {{"units", units}, {"activation", activation}, {"use_bias", use_bias}}, dtype, name);
}
template <class Deferred = void>
nlohmann::json activation(std::string_view activation, const nlohmann::json& dtype = {}, std::string_view name = {}) {
  return layer("Activation", {{"activation", activation}}, dtype, name);
}
template <class Deferred = void>
nlohmann::json softmax(const nlohmann::json& dtype = {}, std::string_view name = {}) {
  return layer("Softmax", {{"axis", -1}}, dtype, name);
}
template <class Deferred = void>
nlohmann::json flatten(const nlohmann::json& dtype = {}, std::string_view name = {}) {
  return layer("Flatten", nlohmann::json::object(), dtype, name);
}
template <class Deferred = void>
nlohmann::json conv2d(std::size_t filters, std::size_t kernel_height, std::size_t kernel_width,
                      std::string_view activation = "linear", std::string_view padding = "valid",
                      std::size_t stride_height = 1, std::size_t stride_width = 1,
                      const nlohmann::json& dtype = {}, std::string_view name = {}, bool use_bias = true) {
  return layer("Conv2D",
               {{"filters", filters},
                {"kernel_size", {kernel_height, kernel_width}},
                {"strides", {stride_height, stride_width}},
                {"padding", padding},
                {"activation", activation},
                {"use_bias", use_bias}},
               dtype, name);
}
template <class Deferred = void>
nlohmann::json max_pooling2d(std::size_t pool_height = 2, std::size_t pool_width = 2,
                             std::string_view padding = "valid", const nlohmann::json& dtype = {},
                             std::string_view name = {}) {
  return layer("MaxPooling2D", {{"pool_size", {pool_height, pool_width}}, {"strides", nullptr}, {"padding", padding}},
               dtype, name);
}
template <class Deferred = void>
nlohmann::json batch_normalization(double momentum = 0.99, double epsilon = 1e-3,
                                   const nlohmann::json& dtype = {}, std::string_view name = {}) {
  return layer("BatchNormalization", {{"axis", -1}, {"momentum", momentum}, {"epsilon", epsilon}}, dtype, name);
}
template <class Deferred = void>
nlohmann::json dropout(double rate, const nlohmann::json& dtype = {}, std::string_view name = {}) {
  return layer("Dropout", {{"rate", rate}}, dtype, name);
}

}  // namespace layer_configs

namespace detail {

/// Keras' default layer names: the class name in snake case ("MaxPooling2D" -> "max_pooling2d").
inline std::string default_layer_name(std::string_view class_name) {
  std::string name;
  for (std::size_t i = 0; i < class_name.size(); ++i) {
    const char c = class_name[i];
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0 && !(class_name[i - 1] >= '0' && class_name[i - 1] <= '9') &&
        !(class_name[i - 1] >= 'A' && class_name[i - 1] <= 'Z'))
      name += '_';
    name += upper ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return name;
}

}  // namespace detail

class RuntimeModel {
 public:
  /// input_shape excludes the batch: {784} or {28, 28, 1}. Layers without a dtype take the
  /// policy map's entry for "<name>/<layer name>" if a map is given, else the global policy.
  ///
  /// (The constructors are templates only so that header-only mode compiles the layers, every
  /// kind for every policy, in the translation units that build a model and nowhere else: see
  /// detail/runtime_layer_factory.hpp.)
  template <class Deferred = void>
  RuntimeModel(std::vector<std::size_t> input_shape, const std::vector<nlohmann::json>& layers,
               std::string name = "sequential", std::optional<DTypePolicyMap> policies = std::nullopt)
      : name_(std::move(name)), input_shape_(std::move(input_shape)) {
    build<Deferred>(layers, policies);
  }

  /// A Keras Sequential config (Keras 3 or tf.keras 2.x): {"class_name": "Sequential",
  /// "config": {"name": ..., "layers": [InputLayer, ...]}}, or the inner config alone. Without
  /// an InputLayer, the first layer's "batch_input_shape" / "batch_shape" (or the model's
  /// "build_input_shape") gives the input shape. Any error is a std::invalid_argument naming the
  /// key (and the layer); the model's other keys (module, registered_name, build_config,
  /// compile_config) are Keras' metadata and are not read.
  template <class Deferred = void>
  static RuntimeModel from_config(const nlohmann::json& config, std::optional<DTypePolicyMap> policies = std::nullopt) {
    detail::check_json_depth(config, "The Sequential config");
    static constexpr std::array<std::string_view, 1> sequential{"Sequential"};
    detail::config_reader wrapper(config, model_errors);
    wrapper.choice("class_name", sequential);
    const nlohmann::json& body = wrapper.has("config") ? wrapper.raw("config") : config;
    if (!body.is_object()) wrapper.fail("`config` must be an object. Received: " + detail::shown(body));
    detail::config_reader read(body, model_errors);
    if (!read.has("layers") || !read.raw("layers").is_array() || read.raw("layers").empty())
      read.fail("`layers` must be a non-empty array of layer configs. Received: " +
                (read.has("layers") ? detail::shown(read.raw("layers")) : std::string("nothing")));
    std::vector<nlohmann::json> layers(read.raw("layers").begin(), read.raw("layers").end());
    std::string name = "sequential";
    read.skip("name");  // null or absent: the default
    if (read.has("name")) {
      if (!read.raw("name").is_string()) read.fail("`name` must be a string. Received: " + detail::shown(read.raw("name")));
      name = read.raw("name").get<std::string>();
    }
    // Keras reads neither on load (the layers carry their own dtype and trainable), but they must
    // be what Keras writes. The model's dtype is its policy (the global one if none): a policy
    // with an output dtype of its own casts the model's output to it.
    read.boolean("trainable", true);
    std::optional<DTypePolicy> model_policy;
    read.skip("dtype");  // null or absent: the global policy
    if (read.has("dtype")) {
      try {
        model_policy = dtype_policies::get(read.raw("dtype"));
      } catch (const std::invalid_argument& error) {
        read.fail(std::string("`dtype`: ") + error.what());
      }
    }
    std::optional<std::vector<std::size_t>> input = read_batch_shape(read, "build_input_shape");
    read.finish();  // a key nobody reads (a misspelt one) is an error, not ignored

    const nlohmann::json& first = layers.front();
    if (first.is_object() && first.contains("class_name") && first["class_name"] == "InputLayer") {
      input = read_input_layer(first);
      layers.erase(layers.begin());
    } else if (first.is_object() && first.contains("config") && first["config"].is_object()) {
      detail::config_reader first_config(first["config"], model_errors + ": the first layer");
      if (auto shape = read_layer_batch_shape(first_config)) input = std::move(shape);
    }
    if (!input)
      throw std::invalid_argument(model_errors +
                                  ": no input shape: start with an InputLayer or give the first layer a "
                                  "'batch_input_shape'.");
    RuntimeModel model(*input, layers, std::move(name), std::move(policies));
    if (model_policy) model.model_policy_ = *model_policy;
    return model;
  }

  // Templates only so that a TU compiles a call (its output cast: every dtype pair's conversion
  // kernel) where it calls a model, not wherever it includes this header.
  template <class Deferred = void>
  AnyTensor operator()(const AnyTensor& x) {
    return run<Deferred>(x, false);
  }
  template <class Deferred = void>
  AnyTensor training_call(const AnyTensor& x) {
    return run<Deferred>(x, true);
  }
  template <class T, std::size_t... E>
  AnyTensor operator()(const Tensor<T, E...>& x) {
    return run<void>(AnyTensor(x), false);
  }

  const std::string& name() const { return name_; }
  std::size_t size() const { return layers_.size(); }
  RuntimeLayer& layer(std::size_t i) { return *layers_.at(i); }
  const RuntimeLayer& layer(std::size_t i) const { return *layers_.at(i); }
  RuntimeLayer& layer(std::string_view layer_name) {
    for (auto& l : layers_)
      if (l->name() == layer_name) return *l;
    throw std::out_of_range("RuntimeModel '" + detail::quote_for_message(name_) + "' has no layer '" +
                            detail::quote_for_message(layer_name) + "'.");
  }
  const std::vector<std::size_t>& input_shape() const { return input_shape_; }
  /// The model's own policy: the global one when it was built (with the loss scale that
  /// mixed_precision::experimental::set_policy gave it). compile() reads its loss scale.
  const mixed_precision::experimental::Policy& dtype_policy() const { return policy_; }
  /// Whether some layer computes in float16 (and its gradients could underflow).
  bool computes_in_float16() const {
    for (const auto& l : layers_)
      if (l->dtype_policy().compute_dtype() == "float16") return true;
    return false;
  }
  const std::vector<std::size_t>& output_shape() const { return output_shape_; }
  /// The elements of all the weights (Keras' count_params()).
  std::size_t parameter_count() const {
    std::size_t count = 0;
    for (const auto& l : layers_) count += l->parameter_count();
    return count;
  }

  /// Keras 3's Sequential config; from_config(get_config()) rebuilds the same model.
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const auto& l : layers_) layers.push_back(detail::keras_layer_entry(l->class_name(), l->config()));
    return detail::sequential_config(name_, dtype_policies::serialize(model_policy_), input_shape_, "float32",
                                     std::move(layers));
  }
  /// The dtype the model's outputs come in: the last layer's compute dtype, or the output dtype
  /// its policy names when that is another (jmp-style "p=float32,c=bfloat16,o=float32": the model
  /// casts its output, as Sequential<Policy<bfloat16, float, float>, ...> does). The model's
  /// policy is the global one when it was built, or its config's "dtype".
  std::string_view output_dtype() const {
    if (const auto cast = output_cast()) return *cast;
    return layers_.back()->dtype_policy().compute_dtype();
  }

  // ---- Training (the training floor drives these: #include <mixprec/training.hpp>) ----

  /// Keras' compile: compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true),
  /// {"accuracy"}). The loss may also be a Keras name ("mse").
  template <class Optimizer, class Loss>
  void compile(Optimizer optimizer, Loss loss, std::vector<std::string> metrics = {}, CompileOptions options = {}) {
    detail::training_entry<RuntimeModel, detail::dependent_void<Optimizer>>::compile(*this, std::move(optimizer), std::move(loss),
                                                                 std::move(metrics), options);
  }
  /// The compiled optimizer that updates the weights (a LossScaleOptimizer's inner one).
  template <class M = RuntimeModel>
  decltype(auto) optimizer() {
    return detail::training_entry<M>::optimizer(*this);
  }
  /// The LossScaleOptimizer compile() chose or was given, or nullptr.
  template <class M = RuntimeModel>
  auto loss_scale_optimizer() {
    return detail::training_entry<M>::loss_scale_optimizer(*this);
  }
  /// One training step on a batch; logs["loss"] and one entry per metric, for this batch. y holds
  /// int32 / int64 class ids (one per row) for a sparse loss, else floats shaped like the output.
  template <class X = AnyTensor>
  Logs train_on_batch(const X& x, const AnyTensor& y) {
    return detail::training_entry<RuntimeModel, detail::dependent_void<X>>::train_on_batch(*this, as_any(x), y);
  }
  /// A training step's loss and gradients, nothing applied (a GradientTape): gradients[i] is
  /// d loss / d trainable_weights()[i], in its variable dtype and shape. The forward pass runs in
  /// training mode (batch statistics, Dropout's mask) but no weight, moving statistic, metric or
  /// generator changes: two calls give the same result.
  template <class X = AnyTensor>
  Gradients compute_gradients(const X& x, const AnyTensor& y) {
    return detail::training_entry<RuntimeModel, detail::dependent_void<X>>::compute_gradients(*this, as_any(x), y);
  }
  /// The loss and metrics of a batch in inference mode; nothing changes.
  template <class X = AnyTensor>
  Logs test_on_batch(const X& x, const AnyTensor& y) {
    return detail::training_entry<RuntimeModel, detail::dependent_void<X>>::test_on_batch(*this, as_any(x), y);
  }

  /// Keras' fit: epochs of (shuffled) batches of train_on_batch, validation, callbacks; returns
  /// the History. model.fit(x, y, {.batch_size = 64, .epochs = 5}).
  template <class Options = FitOptions<AnyTensor, AnyTensor>>
  auto fit(const AnyTensor& x, const AnyTensor& y, const Options& options = {}) {
    return detail::training_entry<RuntimeModel, detail::loop_entry<Options>>::fit(*this, x, y, options);
  }
  /// The loss and metrics over all of x, in batches (inference mode; nothing changes).
  template <class Options = EvaluateOptions>
  Logs evaluate(const AnyTensor& x, const AnyTensor& y, const Options& options = {}) {
    return detail::training_entry<RuntimeModel, detail::loop_entry<Options>>::evaluate(*this, x, y, options);
  }
  /// model(x) in batches, the outputs concatenated.
  template <class Options = PredictOptions>
  AnyTensor predict(const AnyTensor& x, const Options& options = {}) {
    return detail::training_entry<RuntimeModel, detail::loop_entry<Options>>::predict(*this, x, options);
  }

  /// Handles on the weights a training step updates (layer and weight trainable), and on the rest.
  std::vector<weight_handle> trainable_weights() { return weights_where(true); }
  std::vector<weight_handle> non_trainable_weights() { return weights_where(false); }

  /// A training step's forward pass: every layer records what its backward pass needs; returns
  /// the output, valid until the next step or release_step_buffers(). (A template for the reason
  /// operator() is.)
  template <class Deferred = void>
  detail::any_span forward_for_training(const AnyTensor& x) {
    check_input(x);
    detail::any_span values = x.visit([&](auto v) -> detail::any_span {
      if constexpr (std::is_integral_v<typename decltype(v)::value_type>)
        throw std::invalid_argument("RuntimeModel '" + detail::quote_for_message(name_) + "': the inputs are " + std::string(x.dtype()) +
                                    " values; a model takes floating inputs.");
      else
        return v;
    });
    check_batch(x.batch());
    for (auto& l : layers_) values = l->forward_for_training(x.batch(), values);
    if (const auto cast = output_cast()) {
      cast_output_ = converted<Deferred>(values, output_extents(x.batch()), *cast);
      return cast_output_.visit([](auto v) -> detail::any_span {
        if constexpr (ComputeDType<typename decltype(v)::value_type>) return v;
        else throw std::logic_error("RuntimeModel: an output cast to class ids");
      });
    }
    return values;
  }
  /// The backward pass from the gradient of the loss with respect to the output (overwritten on
  /// the way); that gradient is of the loss times loss_scale, and so are the regularizers'
  /// gradients added on the way. Each layer's input gradient is freed once the layer below has
  /// consumed it. Once per forward_for_training: it writes gradients over the outputs that
  /// layers lend (kind.hpp's lent_output), which a second pass would read.
  void backward(detail::any_gradient output_gradient, float loss_scale = 1.0f) {
    bool pre_activation = false;  // output_gradient was written over layer i's lent output
    for (std::size_t i = layers_.size(); i-- > 0;) {
      // MaxPooling2D, Conv2D, Flatten and a 16-bit Dense write the layer below's pre-activation
      // gradient over that layer's output when it lends it.
      const std::optional<detail::any_lent_output> below = i > 0 ? layers_[i - 1]->lend_output() : std::nullopt;
      if (below && layers_[i]->backward_over_input(output_gradient, *below, loss_scale, pre_activation)) {
        output_gradient = below->values;
        pre_activation = true;
      } else {
        output_gradient = layers_[i]->backward(output_gradient, i != 0, loss_scale, pre_activation);
        pre_activation = false;
      }
      if (i + 1 < layers_.size()) layers_[i + 1]->release_input_gradient();
    }
  }
  void collect_gradients(std::vector<gradient_and_variable>& pairs) {
    for (auto& l : layers_) l->collect_gradients(pairs);
  }
  void finish_step() {
    for (auto& l : layers_) l->finish_step();
  }
  /// Frees what training steps keep from one to the next (every layer's record and weight
  /// gradients): what the model holds is then its weights and its state. fit() calls it when it
  /// returns; the next step allocates them again.
  void release_step_buffers() noexcept {
    for (auto& l : layers_) l->release_step_buffers();
    cast_output_ = AnyTensor();
  }
  /// Each layer's state beyond its weights (Dropout's generator), as text, for checkpoints.
  std::vector<std::string> layer_states() const {
    std::vector<std::string> states;
    for (const auto& l : layers_) states.push_back(l->state_text());
    return states;
  }
  /// Restores layer_states(); all or nothing (std::invalid_argument naming the layer).
  void restore_layer_states(const std::vector<std::string>& states) {
    check_layer_states(states);
    for (std::size_t i = 0; i < states.size(); ++i) layers_[i]->restore_state_text(states[i]);
  }
  /// Throws as restore_layer_states would, changing nothing.
  void check_layer_states(const std::vector<std::string>& states) const {
    if (states.size() != layers_.size())
      throw std::invalid_argument("RuntimeModel '" + detail::quote_for_message(name_) + "': " + std::to_string(states.size()) + " layer states for " +
                                  std::to_string(layers_.size()) + " layers.");
    for (std::size_t i = 0; i < states.size(); ++i) detail::checked_state(*layers_[i], layers_[i]->name(), states[i]);
  }
  double regularization_loss() const {
    double total = 0.0;
    for (const auto& l : layers_) total += l->regularization_loss();
    return total;
  }
  /// The size of the output's last axis (the classes a loss sees per row).
  std::size_t output_columns() const { return output_shape_.back(); }

  /// Handles on every weight, paths "<layer>/<weight>".
  std::vector<weight_handle> weights() {
    std::vector<weight_handle> all;
    for (auto& l : layers_)
      for (auto& w : l->weights("")) all.push_back(std::move(w));
    return all;
  }
  template <class Deferred = void>
  void save_weights(const std::string& file) { mixprec::save_weights(weights(), file); }
  template <class Deferred = void>
  void load_weights(const std::string& file) { mixprec::load_weights(weights(), file); }

  /// Keras' model.quantize(mode): every layer with a quantized form (Dense) is quantized and
  /// runs the quantized arithmetic from then on; the others keep their policies. Every layer is
  /// checked first, so an error (an unknown mode, a layer already quantized) changes nothing.
  /// The model is no longer compiled: its weights changed, so compile() again to train it.
  void quantize(std::string_view mode) {
    parse_quantization_mode(mode);
    bool changed = false;
    for (const auto& l : layers_)
      if (l->quantizable()) l->check_quantize(mode);
    for (auto& l : layers_)
      if (l->quantizable()) {
        l->quantize(mode);
        changed = true;
      }
    if (changed) compiled_.state.reset();
  }

  friend std::ostream& operator<<(std::ostream& out, const RuntimeModel& model) {
    out << "RuntimeModel '" << model.name_ << "', input " << detail::shape_text(model.input_shape_) << '\n';
    for (const auto& l : model.layers_) out << "  " << l->name() << " (" << l->class_name() << ") " << l->dtype_policy() << '\n';
    return out << "  output " << detail::shape_text(model.output_shape_) << '\n';
  }

 private:
  static inline const std::string model_errors = "Invalid Sequential config";

  /// A Keras batch shape under `key` ([null, d1, ...]: a batch size or null, then positive
  /// extents), without the batch; nothing when the key is absent or null.
  template <class Deferred = void>
  static std::optional<std::vector<std::size_t>> read_batch_shape(detail::config_reader& read, const char* key) {
    if (!read.has(key)) {
      read.skip(key);
      return std::nullopt;
    }
    const nlohmann::json& value = read.raw(key);
    const auto extent = [](const nlohmann::json& e) { return detail::config_reader::non_negative_value(e).value_or(0); };
    bool valid = value.is_array() && value.size() >= 2 && (value[0].is_null() || extent(value[0]) > 0);
    std::vector<std::size_t> shape;
    for (std::size_t i = 1; valid && i < value.size(); ++i) {
      valid = extent(value[i]) > 0;
      shape.push_back(extent(value[i]));
    }
    if (!valid)
      read.fail("`" + std::string(key) + "` must be [null, d1, ...] with positive integer extents. Received: " +
                detail::shown(value));
    return shape;
  }
  /// A layer's "batch_shape" (Keras 3) or "batch_input_shape" (tf.keras 2), both checked.
  template <class Deferred = void>
  static std::optional<std::vector<std::size_t>> read_layer_batch_shape(detail::config_reader& read) {
    std::optional<std::vector<std::size_t>> keras3 = read_batch_shape(read, "batch_shape");
    std::optional<std::vector<std::size_t>> tf2 = read_batch_shape(read, "batch_input_shape");
    return keras3 ? keras3 : tf2;
  }
  /// The input shape an InputLayer gives; its other settings must be the ones mixprec supports.
  template <class Deferred = void>
  static std::vector<std::size_t> read_input_layer(const nlohmann::json& layer) {
    const nlohmann::json& config = layer.contains("config") ? layer["config"] : nlohmann::json::object();
    detail::config_reader read(config, model_errors + ": the InputLayer");
    std::optional<std::vector<std::size_t>> shape = read_layer_batch_shape(read);
    if (!shape) read.fail("it has no `batch_shape` (Keras 3) or `batch_input_shape` (tf.keras 2).");
    for (const char* key : {"name", "dtype"}) {
      read.skip(key);
      if (read.has(key) && !read.raw(key).is_string())
        read.fail("`" + std::string(key) + "` must be a string. Received: " + detail::shown(read.raw(key)));
    }
    // The inputs' dtype: a model takes any of the floating dtypes layers compute in (the first
    // layer casts), so the config's is checked, not kept.
    if (read.has("dtype")) {
      const std::string dtype = read.raw("dtype").get<std::string>();
      if (dtype != "float16" && dtype != "bfloat16" && dtype != "float32" && dtype != "float64")
        read.fail("`dtype` " + detail::shown(read.raw("dtype")) +
                  " is not an input dtype a model takes: float16, bfloat16, float32 or float64.");
    }
    for (const char* key : {"sparse", "ragged", "optional"}) read.unsupported(key, false);
    read.finish();
    return *shape;
  }

  template <class Deferred>
  void build(const std::vector<nlohmann::json>& layers, const std::optional<DTypePolicyMap>& policies) {
    if (input_shape_.empty()) throw std::invalid_argument("RuntimeModel '" + detail::quote_for_message(name_) + "': the input shape is empty.");
    for (std::size_t extent : input_shape_)
      if (extent == 0)
        throw std::invalid_argument("RuntimeModel '" + detail::quote_for_message(name_) + "': the input shape " + detail::shape_text(input_shape_) +
                                    " has an extent 0.");
    std::set<std::string> names;
    std::vector<std::size_t> shape = input_shape_;
    std::size_t parameters = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto& spec = layers[i];
      detail::layer_site site{i + 1, "?", "?"};
      detail::check_json_depth(spec, "Layer " + std::to_string(i + 1) + "'s config");
      if (!spec.is_object())
        throw site.error("a layer config is an object {\"class_name\": ..., \"config\": {...}}. Received: " +
                         detail::shown(spec));
      if (!spec.contains("class_name") || !spec["class_name"].is_string())
        throw site.error("`class_name` must be a string. Received: " +
                         (spec.contains("class_name") ? detail::shown(spec["class_name"]) : std::string("nothing")));
      site.class_name = spec["class_name"].get<std::string>();
      const nlohmann::json config = spec.contains("config") ? spec["config"] : nlohmann::json::object();
      if (!config.is_object()) throw site.error("`config` must be an object. Received: " + detail::shown(config));
      if (config.contains("name") && !config["name"].is_null() && !config["name"].is_string())
        throw site.error("`name` must be a string. Received: " + detail::shown(config["name"]));
      site.name = config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : "";
      if (site.name.empty()) site.name = detail::first_free_name(detail::default_layer_name(site.class_name), names);
      if (!names.insert(site.name).second)
        throw site.error("the name '" + detail::quote_for_message(site.name) + "' is already used; layer names must be unique.");
      detail::config_reader model_keys(config, site.owner());
      read_layer_batch_shape(model_keys);  // only the first layer's counts (from_config), but each must be valid
      auto layer = detail::make_runtime_layer<Deferred>(config, policy_for(config, site, policies), site);
      try {
        shape = layer->build(shape, parameters);
      } catch (const std::invalid_argument& error) {
        throw site.error(std::string(error.what()) + " (its input is " + detail::shape_text(shape) + ")");
      }
      parameters += layer->parameter_count();
      layers_.push_back(std::move(layer));
    }
    output_shape_ = shape;
  }

  template <class Deferred = void>
  DTypePolicy policy_for(const nlohmann::json& config, const detail::layer_site& site,
                         const std::optional<DTypePolicyMap>& policies) const {
    const auto it = config.find("dtype");
    if (it != config.end() && !it->is_null()) {
      try {
        return dtype_policies::get(nlohmann::json(*it));
      } catch (const std::invalid_argument& error) {
        throw site.error(std::string("bad dtype policy: ") + error.what());
      }
    }
    if (policies) return policies->get(name_ + "/" + site.name);
    return dtype_policy();
  }

  /// x as an AnyTensor: itself, or a compile-time tensor's copy.
  template <class X>
  static decltype(auto) as_any(const X& x) {
    if constexpr (std::is_same_v<X, AnyTensor>) return (x);
    else return AnyTensor(x);
  }
  void check_input(const AnyTensor& x) const {
    const std::vector<std::size_t> features(x.extents().begin() + (x.extents().empty() ? 0 : 1), x.extents().end());
    if (x.extents().empty() || features != input_shape_)
      throw std::invalid_argument("RuntimeModel '" + detail::quote_for_message(name_) + "' expects inputs of shape " + detail::shape_text(input_shape_) +
                                  "; got " + (x.extents().empty() ? std::string("a scalar") : detail::shape_text(features)) + ".");
  }
  std::vector<weight_handle> weights_where(bool trained) {
    std::vector<weight_handle> handles;
    for (auto& l : layers_) {
      const std::vector<bool> flags = l->trained();
      std::vector<weight_handle> all = l->weights("");
      for (std::size_t i = 0; i < all.size(); ++i)
        if (flags[i] == trained) handles.push_back(std::move(all[i]));
    }
    return handles;
  }

  /// Every layer's sizes for this batch, before any layer runs: a batch over the size caps
  /// changes no layer's state (moving statistics, Dropout's generator).
  void check_batch(std::size_t batch) const {
    for (const auto& l : layers_) l->check_batch(batch);
  }

  template <class Deferred>
  AnyTensor run(const AnyTensor& x, bool training) {
    check_input(x);
    check_batch(x.batch());
    AnyTensor y = x;
    for (auto& l : layers_) y = l->call(y, training);
    if (const auto cast = output_cast())
      return y.visit([&](auto v) -> AnyTensor {
        if constexpr (ComputeDType<typename decltype(v)::value_type>) return converted<Deferred>(v, y.extents(), *cast);
        else throw std::logic_error("RuntimeModel: class ids out of a layer");
      });
    return y;
  }

  /// The output dtype of the model's policy, when it is not the compute dtype (the output is
  /// cast); a quantized policy casts nothing, as Sequential's does not.
  std::optional<std::string_view> output_cast() const {
    if (model_policy_.quantization_mode() || model_policy_.output_dtype() == model_policy_.compute_dtype())
      return std::nullopt;
    return model_policy_.output_dtype();
  }
  std::vector<std::size_t> output_extents(std::size_t batch) const {
    std::vector<std::size_t> extents{batch};
    extents.insert(extents.end(), output_shape_.begin(), output_shape_.end());
    return extents;
  }
  /// `values` converted to the dtype named `dtype` (float16, bfloat16, float32 or float64).
  template <class Deferred>
  static AnyTensor converted(detail::any_span values, std::vector<std::size_t> extents, std::string_view dtype) {
    return with_dtype_at(*find_dtype(dtype), [&](auto type) -> AnyTensor {
      using T = typename decltype(type)::type;
      if constexpr (ComputeDType<T>) {
        return std::visit(
            [&](auto from) {
              value_buffer<T> out(from.size());
              kernels::convert<typename decltype(from)::value_type, T>(from, std::span(out));
              return AnyTensor(std::move(extents), std::move(out));
            },
            values);
      } else {
        throw std::logic_error("RuntimeModel: a policy's output dtype " + std::string(dtype) + " is not a compute dtype");
      }
    });
  }

  template <class, class>
  friend struct detail::training_entry;

  std::string name_;
  mixed_precision::experimental::Policy policy_ = mixed_precision::experimental::global_policy();
  /// The model's dtype policy (the global one when built, or its config's): its output dtype.
  DTypePolicy model_policy_ = policy_.dtype_policy();
  /// A training step's output cast to that dtype, when it casts.
  AnyTensor cast_output_;
  detail::compiled_slot compiled_;
  std::vector<std::size_t> input_shape_;
  std::vector<std::size_t> output_shape_;
  std::vector<std::unique_ptr<RuntimeLayer>> layers_;
};

}  // namespace mixprec
