// DTypePolicy: Keras' dynamic, string-named dtype policy, on top of the compile-time one.
//
//   DTypePolicy p("mixed_bfloat16");
//   p.compute_dtype();                       // "bfloat16"
//   p.visit([](auto policy) { ... });        // policy is a Policy<bfloat16, float>{}
//
// A DTypePolicy is a position in a table generated from the dtype registry (see
// detail/policy_table.hpp), so every accepted name stands for exactly one compile-time type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <mixprec/core/dtype.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/detail/parse_policy_name.hpp>
#include <mixprec/runtime/detail/policy_table.hpp>
#include <mixprec/runtime/loss_scale.hpp>

namespace mixprec {

class DTypePolicy;

namespace detail {

template <class F, class... Policies>
constexpr std::size_t first_accepted_policy() {
  constexpr bool accepted[] = {std::is_invocable_v<F&, Policies>...};
  for (std::size_t i = 0; i < sizeof...(Policies); ++i)
    if (accepted[i]) return i;
  return sizeof...(Policies);
}

/// True when F accepts P and returns R.
template <class F, class P, class R>
constexpr bool returns() {
  if constexpr (std::is_invocable_v<F&, P>) return std::is_same_v<std::invoke_result_t<F&, P>, R>;
  else return false;
}

}  // namespace detail

class DTypePolicy {
 public:
  /// The global policy (see set_dtype_policy).
  DTypePolicy();
  /// A dtype name, "mixed_float16", "mixed_bfloat16", or a jmp-style string such as
  /// "p=f32,c=bf16,o=f32". Anything else throws std::invalid_argument ("Cannot convert ...").
  explicit DTypePolicy(std::string_view name) : index_(narrow(detail::parse_policy_name(name))) {}

  /// The canonical name: what Policy<...>::name of the visited type says.
  std::string_view name() const { return descriptor().name; }
  std::string_view compute_dtype() const { return dtype_names[descriptor().compute]; }
  std::string_view variable_dtype() const { return dtype_names[descriptor().variable]; }
  /// The dtype a model's output is cast to (jmp's output; the compute dtype unless given).
  std::string_view output_dtype() const { return dtype_names[descriptor().output]; }
  bool should_cast_variables() const { return descriptor().compute != descriptor().variable; }
  std::optional<std::string_view> quantization_mode() const {
    if (descriptor().mode.empty()) return std::nullopt;
    return descriptor().mode;
  }
  /// The source policy of a quantized policy ("mixed_bfloat16" in "int8_from_mixed_bfloat16").
  std::optional<std::string_view> source_name() const {
    if (descriptor().source_name.empty()) return std::nullopt;
    return descriptor().source_name;
  }
  /// Only for QuantizedFloat8DTypePolicy.
  std::optional<std::size_t> amax_history_length() const {
    if (descriptor().cls != detail::policy_class::quantized_float8) return std::nullopt;
    return amax_history_length_;
  }
  std::string_view class_name() const {
    switch (descriptor().cls) {
      case detail::policy_class::quantized: return "QuantizedDTypePolicy";
      case detail::policy_class::quantized_float8: return "QuantizedFloat8DTypePolicy";
      default: return "DTypePolicy";
    }
  }

  /// Keras' get_config: {"name": ...}, or {"mode", "source_name"[, "amax_history_length"]}.
  // (Templates only so that a TU compiles their JSON code only where it calls them.)
  template <class Deferred = void>
  nlohmann::json get_config() const;
  /// The inverse of get_config; a null name or source_name means the global policy.
  template <class Deferred = void>
  static DTypePolicy from_config(const nlohmann::json& config);

  /// Calls f with a value of the compile-time policy type this policy stands for, e.g.
  /// Policy<float16, float>{} for "mixed_float16". f is instantiated for every policy type
  /// it accepts; constrain it (requires-clause) to limit them. A policy f does not accept
  /// throws std::invalid_argument. Every accepted type must give the same return type.
  template <class F>
  decltype(auto) visit(F&& f) const;

  friend bool operator==(const DTypePolicy& a, const DTypePolicy& b) {
    return a.index_ == b.index_ && a.amax_history_length_ == b.amax_history_length_;
  }
  /// <DTypePolicy "mixed_float16">, <QuantizedDTypePolicy "int8_from_float32">
  friend std::ostream& operator<<(std::ostream& out, const DTypePolicy& policy) {
    return out << '<' << policy.class_name() << " \"" << policy.name() << "\">";
  }

 private:
  friend DTypePolicy QuantizedDTypePolicy(std::string_view, std::optional<std::string_view>);
  friend DTypePolicy QuantizedFloat8DTypePolicy(std::string_view, std::optional<std::string_view>, std::size_t);

  struct from_table_t {};
  DTypePolicy(from_table_t, std::size_t index, std::size_t amax_history_length = 0)
      : index_(narrow(index)), amax_history_length_(amax_history_length) {}

  static std::uint8_t narrow(std::size_t index) { return static_cast<std::uint8_t>(index); }
  const detail::policy_descriptor& descriptor() const { return detail::policy_table[index_]; }

  template <class R, class F, class P>
  static R visit_one(F& f, std::size_t amax_history_length) {
    // A visitor returning another type for P is reported by visit's static_assert, not here too.
    if constexpr (detail::returns<F, P, R>()) {
      P policy{};
      if constexpr (requires { policy.amax_history_length = amax_history_length; })
        policy.amax_history_length = amax_history_length;
      else
        (void)amax_history_length;
      return f(policy);
    } else {
      (void)f;
      (void)amax_history_length;
      throw std::invalid_argument("DTypePolicy::visit: the visitor does not accept the policy '" +
                                  std::string(P::name) + "'.");
    }
  }

  std::uint8_t index_;
  std::size_t amax_history_length_ = 0;  // only QuantizedFloat8DTypePolicy uses it
};

/// Keras' QuantizedDTypePolicy(mode, source_name): "int8_from_<source>" or "float8_from_<source>".
/// Without a source, the global policy's name is used.
DTypePolicy QuantizedDTypePolicy(std::string_view mode, std::optional<std::string_view> source_name = {});
/// Keras' QuantizedFloat8DTypePolicy(mode, source_name, amax_history_length = 1024); mode must be "float8".
DTypePolicy QuantizedFloat8DTypePolicy(std::string_view mode, std::optional<std::string_view> source_name = {},
                                       std::size_t amax_history_length = default_amax_history_length);

// ---- the global policy -------------------------------------------------------------------
// A process-wide setting (set_dtype_policy outside any scope), and per thread a chain of open
// policy_scopes whose innermost one that thread sees instead (Keras keeps this state per thread).

namespace detail {

/// A global policy, with the loss scale an experimental policy gave it (mixed_precision::
/// experimental::set_policy): empty when the policy's default ("auto") applies.
struct policy_setting {
  DTypePolicy policy;
  std::optional<std::optional<mixed_precision::experimental::LossScale>> loss_scale;
};

struct global_policy_slot {
  std::mutex mutex;
  policy_setting setting{DTypePolicy("float32"), {}};  // Keras: floatx()
};

/// One slot per program (inline function statics are shared by every translation unit).
inline global_policy_slot& global_policy() {
  static global_policy_slot slot;
  return slot;
}

/// An open policy_scope: its setting, and the scope it is nested in on the same thread.
struct open_policy_scope {
  policy_setting setting;
  open_policy_scope* enclosing;
};

/// This thread's innermost open policy_scope; null outside any. Only this thread touches its
/// chain, so it needs no lock.
inline open_policy_scope*& innermost_policy_scope() {
  thread_local open_policy_scope* innermost = nullptr;
  return innermost;
}

/// What this thread sees: its innermost scope's setting, else the process-wide one.
inline policy_setting current_policy_setting() {
  if (const open_policy_scope* scope = innermost_policy_scope()) return scope->setting;
  auto& slot = global_policy();
  std::lock_guard lock(slot.mutex);
  return slot.setting;
}

/// Replaces what this thread sees: its innermost scope's setting (until the scope ends), else
/// the process-wide one.
inline void replace_current_policy_setting(policy_setting setting) {
  if (open_policy_scope* scope = innermost_policy_scope()) {
    scope->setting = std::move(setting);
    return;
  }
  auto& slot = global_policy();
  std::lock_guard lock(slot.mutex);
  slot.setting = std::move(setting);
}

inline DTypePolicy read_global_policy() { return current_policy_setting().policy; }

inline std::string global_policy_name() { return std::string(read_global_policy().name()); }

}  // namespace detail

inline DTypePolicy::DTypePolicy() : DTypePolicy(detail::read_global_policy()) {}

inline DTypePolicy QuantizedDTypePolicy(std::string_view mode, std::optional<std::string_view> source_name) {
  const std::string source = source_name ? std::string(*source_name) : detail::global_policy_name();
  return DTypePolicy(DTypePolicy::from_table_t{},
                     detail::parse_quantized_policy(detail::policy_class::quantized, mode, source));
}

inline DTypePolicy QuantizedFloat8DTypePolicy(std::string_view mode, std::optional<std::string_view> source_name,
                                              std::size_t amax_history_length) {
  const std::string source = source_name ? std::string(*source_name) : detail::global_policy_name();
  const std::size_t index = detail::parse_quantized_policy(detail::policy_class::quantized_float8, mode, source);
  if (amax_history_length == 0)
    throw std::invalid_argument("`amax_history_length` must be a positive integer. Received: amax_history_length=0");
  return DTypePolicy(DTypePolicy::from_table_t{}, index, amax_history_length);
}

/// The runtime policy a compile-time policy stands for: the inverse of DTypePolicy::visit.
template <DTypePolicyType P>
DTypePolicy to_dtype_policy(const P& policy = {}) {
  if constexpr (QuantizedFloat8DTypePolicyType<P>)
    return QuantizedFloat8DTypePolicy("float8", P::source_policy::name, policy.amax_history_length);
  else if constexpr (QuantizedDTypePolicyType<P>)
    return QuantizedDTypePolicy(*P::quantization_mode, P::source_policy::name);
  else
    return DTypePolicy(P::name);
}

template <class F>
decltype(auto) DTypePolicy::visit(F&& f) const {
  return [&]<class... P>(detail::type_list<P...>) -> decltype(auto) {
    constexpr std::size_t first = detail::first_accepted_policy<F, P...>();
    static_assert(first < sizeof...(P),
                  "DTypePolicy::visit: the visitor accepts none of the policy types (it is called with a "
                  "Policy<...> or a quantized policy value).");
    using result = std::invoke_result_t<F&, std::tuple_element_t<first, std::tuple<P...>>>;
    static_assert((... && (detail::returns<F, P, result>() || !std::is_invocable_v<F&, P>)),
                  "DTypePolicy::visit: the visitor must return the same type for every policy it accepts.");
    using thunk = result (*)(F&, std::size_t);
    static constexpr thunk table[] = {&visit_one<result, F, P>...};
    return table[index_](f, amax_history_length_);
  }(detail::visitable_policies{});
}

template <class Deferred>
nlohmann::json DTypePolicy::get_config() const {
  if (!quantization_mode()) return {{"name", name()}};
  nlohmann::json config = {{"mode", descriptor().mode}, {"source_name", descriptor().source_name}};
  if (auto length = amax_history_length()) config["amax_history_length"] = *length;
  return config;
}

namespace detail {

template <class Deferred = void>
std::invalid_argument bad_config(const nlohmann::json& config, std::string_view why) {
  return std::invalid_argument("Invalid DTypePolicy config " + shown(config) + ": " +
                               std::string(why));
}

/// A string member, or nullopt when it is absent or null (Keras: use the global policy).
template <class Deferred = void>
std::optional<std::string_view> optional_string(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw bad_config(config, "'" + std::string(key) + "' must be a string.");
  return it->get_ref<const std::string&>();
}

}  // namespace detail

template <class Deferred>
DTypePolicy DTypePolicy::from_config(const nlohmann::json& config) {
  detail::check_json_depth(config, "The DTypePolicy config");
  if (!config.is_object()) throw detail::bad_config(config, "a config is a JSON object.");
  const bool quantized = config.contains("mode");
  for (const auto& [key, value] : config.items()) {
    const bool known = quantized ? (key == "mode" || key == "source_name" || key == "amax_history_length")
                                 : key == "name";
    if (!known)
      throw detail::bad_config(config, "unexpected key '" + detail::quote_for_message(key) +
                                           "'; expected 'name', or 'mode', 'source_name' and 'amax_history_length'.");
  }
  if (!quantized) {
    const auto name = detail::optional_string(config, "name");
    return name ? DTypePolicy(*name) : DTypePolicy();
  }
  const auto mode = detail::optional_string(config, "mode");
  if (!mode) throw detail::bad_config(config, "'mode' must be a string.");
  const auto source = detail::optional_string(config, "source_name");
  if (!config.contains("amax_history_length")) return QuantizedDTypePolicy(*mode, source);
  const auto& length = config["amax_history_length"];
  // JSON text reads non-negative integers as unsigned (up to 2^64 - 1); built JSON may hold signed ones.
  const bool positive = length.is_number_unsigned() ? length.get<std::uint64_t>() >= 1
                                                    : length.is_number_integer() && length.get<std::int64_t>() >= 1;
  if (!positive) throw detail::bad_config(config, "'amax_history_length' must be a positive integer.");
  return QuantizedFloat8DTypePolicy(*mode, source, length.get<std::size_t>());
}

}  // namespace mixprec
