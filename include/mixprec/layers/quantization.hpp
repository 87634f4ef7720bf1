// Layer quantization (Keras 3's layer.quantize(mode) / model.quantize(mode)): the modes, and the
// checks every quantize() runs before it changes anything, with Keras' messages.
//
// A layer kind that has a quantized form says so (`quantizable_modes`); its settings then carry a
// `quantization` member, which a quantized policy sets when the layer is created (Keras builds a
// layer created with dtype="int8_from_float32" quantized) and quantize() sets on a built layer.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/core/quantized_policy.hpp>
#include <mixprec/runtime/detail/parse_policy_name.hpp>
#include <mixprec/runtime/dtype_policy.hpp>

namespace mixprec {

enum class quantization_mode { none, int8, float8 };

inline std::string_view quantization_mode_name(quantization_mode mode) {
  switch (mode) {
    case quantization_mode::int8: return "int8";
    case quantization_mode::float8: return "float8";
    case quantization_mode::none: break;
  }
  return "none";
}

/// "int8" or "float8"; anything else is Keras' "Invalid quantization mode" error.
inline quantization_mode parse_quantization_mode(std::string_view mode) {
  if (mode == "int8") return quantization_mode::int8;
  if (mode == "float8") return quantization_mode::float8;
  throw detail::invalid_mode(mode);
}

/// The amax history length of a compile-time float8 policy (Keras' default for others).
template <class Policy>
constexpr std::size_t amax_history_length_of(const Policy& policy) {
  if constexpr (requires { policy.amax_history_length; }) return policy.amax_history_length;
  else return default_amax_history_length;
}

/// The mode a compile-time policy quantizes in (none for a float policy).
template <class Policy>
inline constexpr quantization_mode quantization_mode_of_v = [] {
  if constexpr (!QuantizedDTypePolicyType<Policy>) return quantization_mode::none;
  else if constexpr (std::is_same_v<typename Policy::mode, quantization::int8>) return quantization_mode::int8;
  else return quantization_mode::float8;
}();

/// Whether a layer kind has a quantized form in `mode` (a kind lists its modes in
/// `quantizable_modes`, a bit per mode; none by default).
template <class Kind>
constexpr bool kind_quantizes(quantization_mode mode) {
  if constexpr (requires { Kind::quantizable_modes; })
    return mode == quantization_mode::none || (Kind::quantizable_modes & (1u << static_cast<unsigned>(mode))) != 0;
  else
    return mode == quantization_mode::none;
}

/// Whether layers computing in C with variables in V have quantized forms in `mode`: the pairs
/// of the policies a quantized policy can have as its source (float16, bfloat16, float32,
/// float64, mixed_float16, mixed_bfloat16), int8 not with float16 compute. Other pairs compile
/// no quantized arithmetic.
template <class C, class V>
constexpr bool quantizable_pair(quantization_mode mode) {
  const bool source = std::is_same_v<C, V> || (std::is_same_v<V, float> && (std::is_same_v<C, float16> ||
                                                                            std::is_same_v<C, bfloat16>));
  if (mode == quantization_mode::int8) return source && !std::is_same_v<C, float16>;
  return source && mode == quantization_mode::float8;
}

namespace detail {

/// What quantize(mode) checks on a layer before changing anything (Keras' messages).
struct quantize_request {
  std::string_view layer_name;
  bool built;
  quantization_mode current;
  std::string_view current_policy;
  std::string_view compute_dtype;
};

/// The policy a layer of policy `source` has once quantized in `mode` (Keras: QuantizedDTypePolicy
/// for int8, QuantizedFloat8DTypePolicy for float8, with the default amax history length).
inline DTypePolicy quantized_policy(quantization_mode mode, std::string_view source) {
  if (mode == quantization_mode::float8) return QuantizedFloat8DTypePolicy("float8", source);
  return QuantizedDTypePolicy(quantization_mode_name(mode), source);
}

/// The mode asked for, once every check has passed.
/// Keras' order: built, not yet quantized, a known mode, not int8 over float16 compute.
inline quantization_mode checked_quantize(const quantize_request& layer, std::string_view mode_name) {
  if (!layer.built) throw std::invalid_argument("Cannot quantize a layer that isn't yet built.");
  if (layer.current != quantization_mode::none)
    throw std::invalid_argument("Layer '" + quote_for_message(layer.layer_name) + "' is already quantized with dtype_policy='" +
                                std::string(layer.current_policy) + "'. Received: mode=" + quote_for_message(mode_name));
  const quantization_mode mode = parse_quantization_mode(mode_name);
  if (mode == quantization_mode::int8 && layer.compute_dtype == "float16")
    throw std::invalid_argument("Quantization mode='int8' doesn't work well with compute_dtype='float16'.");
  quantized_policy(mode, layer.current_policy);  // a source Keras accepts (throws Keras' error)
  return mode;
}

}  // namespace detail
}  // namespace mixprec
