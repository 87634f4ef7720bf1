// The global dtype policy (Keras' keras.config.set_dtype_policy / dtype_policy).
// Layers without their own policy take it. Reading and setting it is thread-safe; a name
// that is rejected leaves it unchanged, because it is parsed before the global is touched.
#pragma once

#include <mutex>
#include <string_view>

#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/detail/parse_policy_name.hpp>

namespace mixprec {

namespace detail {

/// Keras' _get_quantized_dtype_policy_by_str, or a plain policy name.
inline DTypePolicy policy_from_string(std::string_view text) {
  for (std::string_view mode : quantization_modes) {
    if (text.substr(0, mode.size()) != mode) continue;
    const std::size_t split = text.find("_from_");
    if (split == std::string_view::npos || text.find("_from_", split + 1) != std::string_view::npos)
      throw std::invalid_argument(
          "Cannot convert `policy` into a valid pair (`mode`, `source_name`) to instantiate "
          "`QuantizedDTypePolicy`. Received: policy=" + quote_for_message(text));
    const std::string_view source = text.substr(split + 6);
    if (mode == "float8") return QuantizedFloat8DTypePolicy(text.substr(0, split), source);
    return QuantizedDTypePolicy(text.substr(0, split), source);
  }
  return DTypePolicy(text);
}

}  // namespace detail

/// Replaces the global policy. Strings may name quantized policies ("int8_from_float32").
inline void set_dtype_policy(const DTypePolicy& policy) {
  auto& slot = detail::global_policy();
  std::lock_guard lock(slot.mutex);
  slot.policy = policy;
  slot.loss_scale.reset();
}

inline void set_dtype_policy(std::string_view name) { set_dtype_policy(detail::policy_from_string(name)); }

/// The global policy; float32 until set.
inline DTypePolicy dtype_policy() { return detail::read_global_policy(); }

/// Sets the global policy for a scope and restores the previous one (with the loss scale an
/// experimental set_policy gave it) when it ends:
///   { policy_scope scope("mixed_bfloat16"); ... }
class policy_scope {
 public:
  explicit policy_scope(const DTypePolicy& policy) {
    auto& slot = detail::global_policy();
    std::lock_guard lock(slot.mutex);
    previous_ = slot.policy;
    previous_loss_scale_ = slot.loss_scale;
    slot.policy = policy;
    slot.loss_scale.reset();
  }
  explicit policy_scope(std::string_view name) : policy_scope(detail::policy_from_string(name)) {}
  ~policy_scope() {
    auto& slot = detail::global_policy();
    std::lock_guard lock(slot.mutex);
    slot.policy = previous_;
    slot.loss_scale = previous_loss_scale_;
  }
  policy_scope(const policy_scope&) = delete;
  policy_scope& operator=(const policy_scope&) = delete;

 private:
  DTypePolicy previous_{"float32"};
  decltype(detail::global_policy_slot::loss_scale) previous_loss_scale_;
};

}  // namespace mixprec
