// keras.dtype_policies.get / serialize / deserialize.
//
// Loads Keras 3 serialized dicts, the tf.keras 2.x forms (a bare string, class_name "Policy",
// and the experimental "PolicyV1", whose loss_scale is dropped), and jmp-style strings.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/global_policy.hpp>

namespace mixprec::dtype_policies {

/// {"module": ..., "class_name": ..., "config": get_config(), "registered_name": null}
template <class Deferred = void>
nlohmann::json serialize(const DTypePolicy& policy) {
  const bool quantized = policy.quantization_mode().has_value();
  return {{"module", quantized ? "keras.dtype_policies" : "keras"},
          {"class_name", policy.class_name()},
          {"config", policy.get_config()},
          {"registered_name", nullptr}};
}

inline DTypePolicy get(std::string_view identifier) { return detail::policy_from_string(identifier); }
inline DTypePolicy get(const char* identifier) { return get(std::string_view(identifier)); }
inline DTypePolicy get(const std::string& identifier) { return get(std::string_view(identifier)); }
inline DTypePolicy get(const DTypePolicy& policy) { return policy; }
template <class Deferred = void>
DTypePolicy get(const nlohmann::json& identifier);

template <class Deferred = void>
DTypePolicy deserialize(const nlohmann::json& config) {
  detail::check_json_depth(config, "The serialized dtype policy");
  if (config.is_string()) return get(config.get_ref<const std::string&>());  // tf.keras 2.x bare name
  if (!config.is_object() || !config.contains("class_name"))
    throw std::invalid_argument("Could not deserialize a dtype policy from " + detail::shown(config) +
                                ": expected a policy name or an object with 'class_name' and 'config'.");
  if (!config["class_name"].is_string())
    throw std::invalid_argument("Could not deserialize a dtype policy from " + detail::shown(config) +
                                ": its 'class_name' must be a string.");
  const auto& class_name = config["class_name"].get_ref<const std::string&>();
  const auto inner = config.find("config");
  if (inner == config.end() || !inner->is_object())
    throw std::invalid_argument("Could not deserialize the " + detail::quote_for_message(class_name) +
                                ": its 'config' must be an object.");
  if (class_name == "Policy" || class_name == "PolicyV1") {
    // tf.keras 2.x; PolicyV1 (the experimental policy) may carry a loss_scale, silently dropped.
    nlohmann::json plain = *inner;
    plain.erase("loss_scale");
    return DTypePolicy::from_config(plain);
  }
  constexpr std::array<std::string_view, 4> classes{"DTypePolicy", "FloatDTypePolicy", "QuantizedDTypePolicy",
                                                    "QuantizedFloat8DTypePolicy"};
  for (std::string_view known : classes) {
    if (class_name != known) continue;
    // Keras builds the class from the config's keys (cls(**config)): a QuantizedFloat8DTypePolicy
    // config with a mode but no amax_history_length takes the constructor's default.
    nlohmann::json keys = *inner;
    if (known == "QuantizedFloat8DTypePolicy" && keys.contains("mode") && !keys.contains("amax_history_length"))
      keys["amax_history_length"] = default_amax_history_length;
    DTypePolicy policy = DTypePolicy::from_config(keys);
    const std::string_view expected = known == "FloatDTypePolicy" ? "DTypePolicy" : known;
    if (policy.class_name() != expected)
      throw std::invalid_argument("Could not deserialize a " + class_name + " from the config " +
                                  detail::shown(*inner) + ", which describes a " +
                                  std::string(policy.class_name()) + ".");
    return policy;
  }
  if (class_name == "DTypePolicyMap")
    throw std::invalid_argument("A DTypePolicyMap is not a single dtype policy: load it with "
                                "DTypePolicyMap::from_config.");
  throw std::invalid_argument("Unknown dtype policy class_name '" + detail::quote_for_message(class_name) +
                              "'. Expected one of DTypePolicy, FloatDTypePolicy, QuantizedDTypePolicy, "
                              "QuantizedFloat8DTypePolicy, or the tf.keras 2.x Policy and PolicyV1.");
}

/// null: the global policy; a string: get(string); an object: deserialize. Nothing else.
template <class Deferred>
DTypePolicy get(const nlohmann::json& identifier) {
  if (identifier.is_null()) return dtype_policy();
  if (identifier.is_string()) return get(identifier.get_ref<const std::string&>());
  if (identifier.is_object()) return deserialize(identifier);
  throw std::invalid_argument(
      "Cannot interpret `dtype` argument. Expected a string or an instance of DTypePolicy. Received: dtype=" +
      detail::shown(identifier));
}

}  // namespace mixprec::dtype_policies

namespace mixprec {
/// nlohmann::json conversions (found by ADL): `json j = policy;` serializes, `j.get<DTypePolicy>()`
/// reads any form dtype_policies::get accepts.
template <class Json>
  requires nlohmann::detail::is_basic_json<Json>::value
void to_json(Json& j, const DTypePolicy& policy) {
  j = dtype_policies::serialize(policy);
}
template <class Json>
  requires nlohmann::detail::is_basic_json<Json>::value
void from_json(const Json& j, DTypePolicy& policy) {
  detail::check_json_depth(j, "The dtype policy JSON");  // before the copy, which recurses
  policy = dtype_policies::get(nlohmann::json(j));
}
}  // namespace mixprec
