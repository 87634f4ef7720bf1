// Turns policy strings into positions in the policy table, with Keras' error messages.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/detail/policy_table.hpp>

namespace mixprec::detail {

inline std::invalid_argument cannot_convert(std::string_view name, std::string_view hint = {}) {
  std::string message = "Cannot convert '" + quote_for_message(name) +
                        "' to a mixed precision DTypePolicy. Valid policies include 'mixed_float16', "
                        "'mixed_bfloat16', and the name of any float dtype such as 'float32'.";
  if (!hint.empty()) message.append(" ").append(hint);
  return std::invalid_argument(message);
}

constexpr std::optional<std::size_t> find_policy(policy_class cls, std::size_t compute, std::size_t variable,
                                                 std::size_t output) {
  for (std::size_t i = 0; i < policy_table.size(); ++i) {
    const auto& d = policy_table[i];
    if (d.cls == cls && d.compute == compute && d.variable == variable && d.output == output) return i;
  }
  return std::nullopt;
}

constexpr std::optional<std::size_t> find_policy_named(policy_class cls, std::string_view name) {
  for (std::size_t i = 0; i < policy_table.size(); ++i)
    if (policy_table[i].cls == cls && policy_table[i].name == name) return i;
  return std::nullopt;
}

constexpr std::optional<std::size_t> find_quantized_policy(policy_class cls, std::string_view mode,
                                                           std::string_view source_name) {
  for (std::size_t i = 0; i < policy_table.size(); ++i) {
    const auto& d = policy_table[i];
    if (d.cls == cls && d.mode == mode && d.source_name == source_name) return i;
  }
  return std::nullopt;
}

inline constexpr std::string_view jmp_dtype_help =
    "Dtypes are float16 (f16, half), bfloat16 (bf16), float32 (f32, full) and float64 (f64).";

/// jmp's dtype spellings, restricted to the dtypes a mixed policy may combine.
inline std::size_t parse_jmp_dtype(std::string_view policy, std::string_view key, std::string_view value) {
  struct alias {
    std::string_view spelling;
    std::string_view dtype;
  };
  static constexpr std::array<alias, 10> aliases{{{"f16", "float16"}, {"half", "float16"}, {"float16", "float16"},
                                                  {"bf16", "bfloat16"}, {"bfloat16", "bfloat16"},
                                                  {"f32", "float32"}, {"full", "float32"}, {"float32", "float32"},
                                                  {"f64", "float64"}, {"float64", "float64"}}};
  for (const auto& a : aliases)
    if (a.spelling == value) return *find_dtype(a.dtype);
  throw cannot_convert(policy, "Unknown dtype '" + quote_for_message(value) + "' for '" + std::string(key) + "'. " +
                                   std::string(jmp_dtype_help));
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// jmp policy strings: "params=float32,compute=bfloat16,output=float32" or "p=f32,c=bf16,o=f32".
/// Output defaults to compute, compute to params.
inline std::size_t parse_jmp_policy(std::string_view policy) {
  std::optional<std::size_t> dtypes[3];  // params, compute, output
  std::string_view rest = policy;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const std::size_t equals = part.find('=');
    if (equals == std::string_view::npos)
      throw cannot_convert(policy, "Each part of a jmp-style policy must be key=dtype; got '" +
                                       quote_for_message(part) + "'.");
    const std::string_view key = trim(part.substr(0, equals));
    const std::string_view value = trim(part.substr(equals + 1));
    int slot = -1;
    if (key == "p" || key == "params") slot = 0;
    if (key == "c" || key == "compute") slot = 1;
    if (key == "o" || key == "output") slot = 2;
    if (slot < 0)
      throw cannot_convert(policy, "Unknown key '" + quote_for_message(key) +
                                       "'; jmp-style keys are 'params' (p), 'compute' (c) and 'output' (o).");
    if (dtypes[slot])
      throw cannot_convert(policy, "The key '" + std::string(key) + "' is given twice.");
    dtypes[slot] = parse_jmp_dtype(policy, key, value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!dtypes[0]) throw cannot_convert(policy, "A jmp-style policy needs 'params' (p).");
  const std::size_t params = *dtypes[0];
  const std::size_t compute = dtypes[1].value_or(params);
  const std::size_t output = dtypes[2].value_or(compute);
  if (auto index = find_policy(policy_class::dtype_policy, compute, params, output)) return *index;
  throw cannot_convert(policy, "The output dtype must be the compute or the params dtype.");
}

/// A plain policy name: a dtype name, mixed_float16, mixed_bfloat16 or a jmp-style string.
inline std::size_t parse_policy_name(std::string_view name) {
  if (auto index = find_policy_named(policy_class::dtype_policy, name)) return *index;
  if (name.find('=') != std::string_view::npos) return parse_jmp_policy(name);
  if (name == "string") throw cannot_convert(name, "'string' is a Keras dtype, but it has no C++ compute type.");
  if (name == "_infer" || name == "infer")
    throw cannot_convert(name, "The deprecated infer policy exists only at compile time: mixprec::policies::infer.");
  constexpr std::string_view removed_suffix = "_float32_vars";
  if (name.size() > removed_suffix.size() && name.substr(name.size() - removed_suffix.size()) == removed_suffix)
    throw cannot_convert(name, "Policies ending in '_float32_vars' were removed; use 'mixed_float16' or "
                               "'mixed_bfloat16' instead.");
  throw cannot_convert(name);
}

inline constexpr std::array<std::string_view, 2> quantization_modes{"int8", "float8"};

inline std::invalid_argument invalid_mode(std::string_view mode, std::string_view expected = "('int8', 'float8')") {
  return std::invalid_argument("Invalid quantization mode. Expected one of " + std::string(expected) +
                               ". Received: mode=" + quote_for_message(mode));
}

/// The table position of a quantized policy; the source is parsed first, as Keras does.
inline std::size_t parse_quantized_policy(policy_class cls, std::string_view mode, std::string_view source_name) {
  const auto& source = policy_table[parse_policy_name(source_name)];
  if (mode != quantization_modes[0] && mode != quantization_modes[1]) throw invalid_mode(mode);
  if (cls == policy_class::quantized_float8 && mode != "float8") throw invalid_mode(mode, "('float8',)");
  if (mode == "int8" && source.compute == *find_dtype("float16"))
    throw std::invalid_argument("Quantization mode='int8' doesn't work well with compute_dtype='float16'.");
  if (auto index = find_quantized_policy(cls, mode, source.name)) return *index;
  throw std::invalid_argument("Quantization needs a floating source policy: 'float16', 'bfloat16', 'float32', "
                              "'float64', 'mixed_float16' or 'mixed_bfloat16'. Received: source_name=" +
                              quote_for_message(source_name));
}

}  // namespace mixprec::detail
