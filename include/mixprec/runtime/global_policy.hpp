// The global dtype policy (Keras' keras.config.set_dtype_policy / dtype_policy). Layers without
// their own policy take it. Each thread sees its innermost open policy_scope's policy, else the
// process-wide one; reading and setting are thread-safe. A name that is rejected leaves it
// unchanged, because it is parsed before the global state is touched.
#pragma once

#include <exception>
#include <string_view>

#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/detail/parse_policy_name.hpp>

namespace mixprec {

namespace detail {

/// Keras' _get_quantized_dtype_policy_by_str, or a plain policy name.
inline DTypePolicy policy_from_string(std::string_view text) {
  for (std::string_view mode : quantization_modes) {
    if (text.substr(0, mode.size()) != mode) continue;
    // Python's split("_from_") into exactly two parts: a second match starts after the first
    // ("int8_from_from_float32" splits into "int8" and "from_float32").
    constexpr std::string_view separator = "_from_";
    const std::size_t split = text.find(separator);
    if (split == std::string_view::npos || text.find(separator, split + separator.size()) != std::string_view::npos)
      throw std::invalid_argument(
          "Cannot convert `policy` into a valid pair (`mode`, `source_name`) to instantiate "
          "`QuantizedDTypePolicy`. Received: policy=" + quote_for_message(text));
    const std::string_view source = text.substr(split + separator.size());
    if (mode == "float8") return QuantizedFloat8DTypePolicy(text.substr(0, split), source);
    return QuantizedDTypePolicy(text.substr(0, split), source);
  }
  return DTypePolicy(text);
}

}  // namespace detail

/// Outside any policy_scope (on this thread): replaces the process-wide policy, which every
/// thread outside a scope sees. Inside one: replaces that scope's policy until the scope ends.
/// Either way it drops the loss scale an experimental set_policy gave (back to "auto").
/// Strings may name quantized policies ("int8_from_float32").
inline void set_dtype_policy(const DTypePolicy& policy) { detail::replace_current_policy_setting({policy, {}}); }

inline void set_dtype_policy(std::string_view name) { set_dtype_policy(detail::policy_from_string(name)); }

/// The global policy this thread sees: its innermost policy_scope's, else the process-wide one
/// (float32 until set).
inline DTypePolicy dtype_policy() { return detail::read_global_policy(); }

/// Sets the global policy for this thread until the scope ends, with the default ("auto") loss
/// scale; other threads do not see it. Scopes nest; when one ends, the thread sees what it saw
/// before (an enclosing scope's policy, or the process-wide one, as it is now).
///   { policy_scope scope("mixed_bfloat16"); ... }
/// A scope must end on the thread that began it (ending it elsewhere calls std::terminate).
class policy_scope {
 public:
  explicit policy_scope(const DTypePolicy& policy) : scope_{{policy, {}}, detail::innermost_policy_scope()} {
    detail::innermost_policy_scope() = &scope_;
  }
  explicit policy_scope(std::string_view name) : policy_scope(detail::policy_from_string(name)) {}
  ~policy_scope() {
    // Usually the innermost; a scope that ends out of order (held by objects destroyed in
    // another order) is unlinked where it is, and the others stay open.
    detail::open_policy_scope** link = &detail::innermost_policy_scope();
    while (*link != &scope_) {
      if (*link == nullptr) std::terminate();  // not on this thread's chain: ended on another thread
      link = &(*link)->enclosing;
    }
    *link = scope_.enclosing;
  }
  policy_scope(const policy_scope&) = delete;
  policy_scope& operator=(const policy_scope&) = delete;

 private:
  detail::open_policy_scope scope_;
};

}  // namespace mixprec
