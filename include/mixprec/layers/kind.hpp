// What a layer kind describes, once, for both model kinds.
//
// A layer kind (layers/kinds/*.hpp: dense, conv2d, max_pooling2d, batch_normalization, dropout,
// activation, softmax, flatten) is a struct with
//   keras_class                         its Keras class name
//   settings                            everything a Keras config of it says (units, activation, ...)
//   state                               what a layer keeps between calls besides weights (Dropout's generator)
//   saved<C>                            what a training forward keeps for the backward pass
//   output_shape(settings, input)       shapes without the batch; throws std::invalid_argument
//   weights(settings, input)            its weights: name, shape, initializer, regularizer, trainable
//                                       (a kind without any derives from detail::weightless_kind)
//   forward<C, V>(...), backward<C, V>(...)   the math, on spans (C compute dtype, V variable dtype)
//   write_config(settings, json), read_config(reader)   its Keras config, both ways (write_config
//                                       a template over the json type, so that a TU compiles
//                                       the writing where it writes a config)
// and, for a kind with quantized forms (layers/quantization.hpp), quantizable_modes, a
// settings.quantization member, quantized_weights(...), which turns its float weights into
// the quantized ones, and quantized_forward<C, V>, quantized_backward<C, V>, the quantized math
// (forward and backward are the float math; the engine runs the quantized one only on a layer
// that was given a quantized policy or quantize()d, so that a TU whose layers are never
// quantized does not compile it).
// The compile-time layers (Dense<64, ...>) and the runtime model's one generic layer
// (models/runtime_layers.hpp) are both built from it, so they run the same arithmetic bit for bit
// and write the same configs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/regularizers.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>

namespace mixprec {

/// Initializers and regularizers of a layer's kernel and bias (Keras' constructor arguments).
struct weight_settings {
  initializers::any kernel_initializer = initializers::glorot_uniform{};
  initializers::any bias_initializer = initializers::zeros{};
  std::optional<regularizers::any> kernel_regularizer = std::nullopt;
  std::optional<regularizers::any> bias_regularizer = std::nullopt;
};

namespace detail {

/// One weight of a layer kind, for inputs of a given shape.
struct weight_spec {
  std::string name;
  /// As Keras reports it (a Conv2D kernel: {kh, kw, in, filters}).
  std::vector<std::size_t> shape;
  initializers::any initializer;
  std::optional<regularizers::any> regularizer = std::nullopt;
  bool trainable = true;
  /// Read in the compute dtype inside a call (false: in the variable dtype, BatchNormalization's).
  bool autocast = true;
  /// Stored as int8, not in the variable dtype (an int8 Dense's kernel; never trained).
  bool int8 = false;
};

template <class C>
class packed_product_weight;

/// A weight as a kind's math reads it: its true value in the variable dtype V (no compute-dtype
/// copy is kept: the products round a float32 weight to a 16-bit compute dtype as they pack it,
/// math.hpp's product_weight); an int8 weight has only its int8 values.
template <class V>
struct weight_ref {
  std::span<const V> value;
  std::span<const std::int8_t> int8 = {};
  /// The variable's version (AutoCastVariable::version); 0: unknown, nothing derived is kept.
  std::uint64_t version = 0;
};

/// A weight's values, in V or (an int8 weight) in int8: what quantizing a layer gives each weight.
template <class V>
struct weight_values {
  std::vector<V> values;
  std::vector<std::int8_t> int8;
};

/// A new value a forward pass gives a non-trainable weight (BatchNormalization's moving
/// statistics). Training steps apply it only once the step has succeeded.
template <class V>
struct weight_update {
  std::size_t weight;
  std::vector<V> value;
};

/// The shape of one call: the batch and the extents after it.
struct call_shape {
  std::size_t batch;
  std::span<const std::size_t> features;
  std::size_t feature_size() const {
    std::size_t size = 1;
    for (std::size_t e : features) size *= e;
    return size;
  }
  std::size_t last() const { return features.empty() ? 1 : features.back(); }
};

/// A kind with nothing to keep between calls, or nothing to save for backward.
struct no_state {};
template <class C>
struct nothing_saved {};

/// The base of a kind without weights (Flatten, Dropout, ...). Its layers never touch the
/// variable dtype, so the runtime model compiles one per compute dtype, not one per
/// (compute, variable) pair (models/detail/make_runtime_layer.hpp).
struct weightless_kind {
  template <class Settings>
  static std::vector<weight_spec> weights(const Settings&, std::span<const std::size_t>) {
    return {};
  }
};
template <class Kind>
inline constexpr bool kind_has_weights = !std::is_base_of_v<weightless_kind, Kind>;

/// What a kind's forward pass gets.
template <class Kind, class C, class V>
struct forward_args {
  const typename Kind::settings& settings;
  typename Kind::state& state;
  call_shape shape;
  std::span<const C> x;
  std::span<const weight_ref<V>> weights;
  /// The output; element-wise kinds accept y aliasing x exactly (in place).
  std::span<C> y;
  bool training;
  /// The layer's trainable flag (a frozen BatchNormalization runs in inference mode, as in Keras).
  bool trainable;
  /// Where to keep what backward needs; null unless the call is a training step's.
  typename Kind::template saved<C>* saved;
  /// New values of non-trainable weights (moving statistics), applied by the caller.
  std::vector<weight_update<V>>& updates;
  /// Where a kind keeps its product weight packed between inference calls (math.hpp); null in a
  /// training step's forward pass.
  detail::packed_product_weight<C>* packed_weight = nullptr;
};

/// What a kind's backward pass gets: the forward's input x and output y (both in C), dy, and
/// where to write dx (in C; empty when no one needs it: the first layer) and each weight's
/// gradient (in V; an empty span for a weight that is not trained). dy is the kind's to
/// overwrite (no one reads it after this pass): Dense and Conv2D turn it into dz in place
/// rather than holding another buffer of its size. dx never overlaps it.
template <class Kind, class C, class V>
struct backward_args {
  const typename Kind::settings& settings;
  call_shape shape;
  const typename Kind::template saved<C>& saved;
  std::span<const C> x;
  std::span<const C> y;
  std::span<const weight_ref<V>> weights;
  std::span<C> dy;
  std::span<C> dx;
  std::span<const std::span<V>> weight_gradients;
  /// False for a frozen BatchNormalization, which Keras runs in inference mode.
  bool training;
  /// New values of non-trainable weights the backward pass gives (a float8 Dense's output
  /// gradient scale), applied with the forward pass's when the step succeeds.
  std::vector<weight_update<V>>& updates;
  /// dy is already the gradient of the pre-activation: the layer above wrote it over this
  /// layer's lent output (lent_output), its activation's gradient applied. y is not to be read.
  bool dy_is_pre_activation_gradient = false;
};

/// A layer's output lent to the backward pass of the layer above, which writes over it the
/// gradient of this layer's pre-activation (MaxPooling2D above a Conv2D, a Conv2D above
/// MaxPooling2D): so that gradient needs no buffer of its own as large as the output.
/// `activation` is the lending layer's, one whose gradient reads the output only (Dense's and
/// Conv2D's lendable_activation; MaxPooling2D and Flatten lend theirs as linear).
template <class C>
struct lent_output {
  std::span<C> values;
  kernels::activation activation;
};

/// A config's axis must be the last one of inputs of shape `input` (batch excluded): -1, or its
/// index counting the batch axis, as Keras reads both. `what` begins the error: "Softmax runs over".
inline void check_last_axis(std::int64_t axis, std::span<const std::size_t> input, const char* what) {
  const auto last = static_cast<std::int64_t>(input.size());  // its index, the batch axis being 0
  if (axis != -1 && axis != last)
    throw std::invalid_argument(std::string(what) + " the last axis only: axis=-1, or " + std::to_string(last) +
                                " for inputs of rank " + std::to_string(last + 1) + " (with the batch axis). Received: axis=" +
                                std::to_string(axis));
}

/// The Keras config entries of a regularizer slot (null when none).
// (A template for the reason regularizers::serialize is.)
template <class Deferred = void>
nlohmann::ordered_json regularizer_config(const std::optional<regularizers::any>& regularizer) {
  return regularizer ? regularizers::serialize(*regularizer) : nlohmann::ordered_json(nullptr);
}
template <class Deferred = void>
std::optional<regularizers::any> read_regularizer(config_reader& read, const char* key) {
  if (!read.has(key)) {
    read.skip(key);
    return std::nullopt;
  }
  try {
    return regularizers::get(read.raw(key));
  } catch (const std::invalid_argument& error) {
    read.fail("`" + std::string(key) + "`: " + error.what());
  }
}
template <class Deferred = void>
initializers::any read_initializer(config_reader& read, const char* key, initializers::any fallback) {
  if (!read.has(key)) {
    read.skip(key);
    return fallback;
  }
  try {
    return initializers::get(read.raw(key));
  } catch (const std::invalid_argument& error) {
    read.fail("`" + std::string(key) + "`: " + error.what());
  }
}
template <class Deferred = void>
kernels::activation read_activation(config_reader& read, const char* key = "activation") {
  if (!read.has(key)) {
    read.skip(key);
    return kernels::activation::linear;
  }
  const nlohmann::json& value = read.raw(key);
  if (value.is_string())
    if (auto kind = kernels::find_activation(value.get_ref<const std::string&>())) return *kind;
  std::string known;
  for (auto name : kernels::activation_names) known += (known.empty() ? "" : ", ") + std::string(name);
  read.fail("unknown activation " + shown(value) + "; known: " + known + ".");
}

/// Kernel and bias settings in a Dense / Conv2D config, both ways.
template <class Json>
void write_weight_settings(const weight_settings& w, Json& config) {
  config["kernel_initializer"] = initializers::serialize(w.kernel_initializer);
  config["bias_initializer"] = initializers::serialize(w.bias_initializer);
  config["kernel_regularizer"] = regularizer_config(w.kernel_regularizer);
  config["bias_regularizer"] = regularizer_config(w.bias_regularizer);
  config["activity_regularizer"] = nullptr;
  config["kernel_constraint"] = nullptr;
  config["bias_constraint"] = nullptr;
}
template <class Deferred = void>
weight_settings read_weight_settings(config_reader& read) {
  weight_settings w;
  w.kernel_initializer = read_initializer(read, "kernel_initializer", initializers::glorot_uniform{});
  w.bias_initializer = read_initializer(read, "bias_initializer", initializers::zeros{});
  w.kernel_regularizer = read_regularizer(read, "kernel_regularizer");
  w.bias_regularizer = read_regularizer(read, "bias_regularizer");
  for (const char* key : {"activity_regularizer", "kernel_constraint", "bias_constraint"}) read.unsupported(key);
  return w;
}

}  // namespace detail
}  // namespace mixprec
