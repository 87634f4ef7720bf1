// DTypePolicyMap (Keras 3): maps layer paths to policies.
//
//   DTypePolicyMap map;                                  // default: the global policy, now
//   map.set("model/dense_0", "bfloat16");
//   map.set("model/.*/query", QuantizedDTypePolicy("int8", "float32"));
//   map.get("model/block_1/query");                      // regex match
//   map.get("model/dense_2");                            // no match: the default policy
//
// Lookup: an exact key wins; otherwise each key is tried as a regular expression that must
// match the whole path. The regexes are RE2's (libre2): matching takes time linear in the path
// (no backtracking), so no key can make a lookup blow up; RE2 has no backreferences and no
// lookaround (README, "DTypePolicyMap"). Iteration follows insertion order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/serialization.hpp>

namespace mixprec {

class DTypePolicyMap {
 public:
  /// Without a default policy, the global policy at construction time answers misses.
  DTypePolicyMap() : default_policy_(dtype_policy()) {}
  explicit DTypePolicyMap(const DTypePolicy& default_policy)
      : default_policy_(default_policy), has_default_argument_(true) {}

  /// Adds a key. The value goes through dtype_policies::get. A key that is already present,
  /// a key that is not a valid RE2 regular expression (or not valid UTF-8, longer than
  /// max_key_length, or too large to compile within key_regex_memory), or a bad value throws
  /// std::invalid_argument and leaves the map as it was.
  void set(std::string_view key, const DTypePolicy& policy) {
    insert(key, [&] { return policy; });
  }
  void set(std::string_view key, std::string_view policy) {
    insert(key, [&] { return interpret(key, [&] { return dtype_policies::get(policy); }, detail::quote_for_message(policy)); });
  }
  void set(std::string_view key, const char* policy) { set(key, std::string_view(policy)); }
  template <class Deferred = void>
  void set(std::string_view key, const nlohmann::json& policy) {
    insert(key, [&] { return interpret(key, [&] { return dtype_policies::get(policy); }, detail::shown(policy)); });
  }

  /// The policy for a layer path: exact key, else the one key whose regex matches the whole
  /// path, else the default policy. Two or more matching keys throw std::invalid_argument.
  DTypePolicy get(std::string_view path) const {
    for (const auto& item : entries_)
      if (item.key == path) return item.policy;
    const keyed_policy* match = nullptr;
    std::vector<std::string_view> matching_keys;
    for (const auto& item : entries_) {
      if (!RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *item.pattern)) continue;
      match = &item;
      matching_keys.push_back(item.key);
    }
    if (matching_keys.size() > 1)
      throw std::invalid_argument("Path '" + detail::quote_for_message(path) +
                                  "' matches multiple dtype policy specification keys: " + python_list(matching_keys) +
                                  ". Please make sure each path only matches at most one dtype policy "
                                  "specification key in the DTypePolicyMap.");
    return match ? match->policy : default_policy_;
  }
  DTypePolicy operator[](std::string_view path) const { return get(path); }

  /// Longer keys are rejected before RE2 parses them (a parse takes time and memory in
  /// proportion to the key).
  static constexpr std::size_t max_key_length = 65536;
  /// The memory RE2 may use for one key's compiled regex and its match cache (RE2's max_mem):
  /// any literal key up to max_key_length fits; counted repetitions can exceed it.
  static constexpr std::int64_t key_regex_memory = std::int64_t{1} << 20;

  /// Removes a key and returns its policy; a missing key throws std::out_of_range.
  DTypePolicy pop(std::string_view key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key != key) continue;
      DTypePolicy policy = it->policy;
      entries_.erase(it);
      return policy;
    }
    throw std::out_of_range("'" + detail::quote_for_message(key) + "' is not a key of the DTypePolicyMap.");
  }

  /// Exact keys only (no regex matching), as Python's `in`.
  bool contains(std::string_view key) const {
    for (const auto& item : entries_)
      if (item.key == key) return true;
    return false;
  }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> result;
    for (const auto& item : entries_) result.push_back(item.key);
    return result;
  }

  const DTypePolicy& default_policy() const { return default_policy_; }
  /// "map_" + the default policy's name.
  std::string name() const { return "map_" + std::string(default_policy_.name()); }
  std::string_view compute_dtype() const { return default_policy_.compute_dtype(); }
  std::string_view variable_dtype() const { return default_policy_.variable_dtype(); }
  std::optional<std::string_view> quantization_mode() const { return default_policy_.quantization_mode(); }

  /// {"default_policy": serialized policy or null, "policy_map": {key: serialized policy}},
  /// as an ordered_json so that the keys keep their insertion order through a round trip.
  // (A template only so that a TU compiles the JSON writing where it writes a config.)
  template <class Deferred = void>
  nlohmann::ordered_json get_config() const {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto& item : entries_) map[item.key] = dtype_policies::serialize(item.policy);
    nlohmann::ordered_json config;
    config["default_policy"] = has_default_argument_ ? dtype_policies::serialize(default_policy_) : nlohmann::json();
    config["policy_map"] = std::move(map);
    return config;
  }

  /// Accepts get_config()'s output and Keras' (a null default means the global policy). Pass an
  /// nlohmann::ordered_json (nlohmann::json sorts keys) to keep the file's key order.
  template <class Json>
    requires nlohmann::detail::is_basic_json<Json>::value
  static DTypePolicyMap from_config(const Json& config) {
    detail::check_json_depth(config, "The DTypePolicyMap config");
    if (!config.is_object())
      throw std::invalid_argument("Invalid DTypePolicyMap config " + detail::shown(config) +
                                  ": expected an object with 'default_policy' and 'policy_map'.");
    for (const auto& [key, value] : config.items())
      if (key != "default_policy" && key != "policy_map")
        throw std::invalid_argument("Invalid DTypePolicyMap config: unexpected key '" +
                                    detail::quote_for_message(key) + "'; expected 'default_policy' and 'policy_map'.");
    const auto default_it = config.find("default_policy");
    DTypePolicyMap map;
    if (default_it != config.end() && !default_it->is_null()) {
      if (default_it->is_object() && default_it->contains("class_name") &&
          (*default_it)["class_name"] == "DTypePolicyMap")
        throw std::invalid_argument("`default_policy` cannot be a `DTypePolicyMap`.");
      try {
        map = DTypePolicyMap(dtype_policies::get(nlohmann::json(*default_it)));
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument(std::string("Invalid DTypePolicyMap config: bad 'default_policy': ") + error.what());
      }
    }
    const auto policies_it = config.find("policy_map");
    if (policies_it == config.end() || policies_it->is_null()) return map;
    if (!policies_it->is_object())
      throw std::invalid_argument("Invalid DTypePolicyMap config: 'policy_map' must be an object of key: policy.");
    for (const auto& [key, value] : policies_it->items()) map.set(key, nlohmann::json(value));
    return map;
  }

  /// <DTypePolicyMap default_policy=float32, mapping=[('model/dense', 'bfloat16')]>
  friend std::ostream& operator<<(std::ostream& out, const DTypePolicyMap& map) {
    out << "<DTypePolicyMap default_policy=" << map.default_policy_.name() << ", mapping=[";
    for (std::size_t i = 0; i < map.entries_.size(); ++i)
      out << (i ? ", " : "") << "('" << map.entries_[i].key << "', '" << map.entries_[i].policy.name() << "')";
    return out << "]>";
  }

 private:
  struct keyed_policy {
    std::string key;
    DTypePolicy policy;
    std::shared_ptr<const RE2> pattern;  // compiled once; immutable, so copies of the map share it
  };

  /// UTF-8, as Keras' paths are text (`.` is one character, not one byte); errors come back as
  /// values (log_errors off: nothing is written to stderr); a bounded budget per key.
  static RE2::Options key_regex_options() {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingUTF8);
    options.set_log_errors(false);
    options.set_max_mem(key_regex_memory);
    return options;
  }

  static std::shared_ptr<const RE2> compile_key(std::string_view key) {
    if (key.size() > max_key_length)
      throw std::invalid_argument("The DTypePolicyMap key '" + detail::quote_for_message(key) + "' is too long: " +
                                  std::to_string(key.size()) + " bytes; at most " + std::to_string(max_key_length) +
                                  " (max_key_length).");
    auto pattern = std::make_shared<const RE2>(re2::StringPiece(key.data(), key.size()), key_regex_options());
    if (pattern->ok()) return pattern;
    const std::string shown_key = "The DTypePolicyMap key '" + detail::quote_for_message(key) + "'";
    if (pattern->error_code() == RE2::ErrorPatternTooLarge)
      throw std::invalid_argument(shown_key + " is too large: its compiled regex needs more than " +
                                  std::to_string(key_regex_memory >> 10) + " KiB (key_regex_memory).");
    throw std::invalid_argument(shown_key + " is not a valid regular expression (" +
                                detail::quote_for_message(pattern->error()) +
                                "). Keys are RE2 regexes in UTF-8, matched against whole layer paths; RE2 has no "
                                "backreferences and no lookaround.");
  }

  template <class Get>
  static DTypePolicy interpret(std::string_view key, Get&& get, const std::string& shown_value) {
    try {
      return get();
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument("Cannot interpret the assigned value by `keras.dtype_policies.get`. Received: " +
                                  shown_value + " for key '" + detail::quote_for_message(key) +
                                  "' (" + error.what() + ")");
    }
  }

  /// Adds the key with the policy make_policy() returns, read only once the key is known to be
  /// new (Keras checks the key before it reads the value).
  template <class MakePolicy>
  void insert(std::string_view key, MakePolicy&& make_policy) {
    for (const auto& item : entries_)
      if (item.key == key) {
        std::ostringstream message;
        message << detail::quote_for_message(key) << " already exist in the DTypePolicyMap with value " << item.policy
                << ". Please make sure to not use duplicated keys.";
        throw std::invalid_argument(message.str());
      }
    DTypePolicy policy = make_policy();
    entries_.push_back({std::string(key), std::move(policy), compile_key(key)});
  }

  static std::string python_list(const std::vector<std::string_view>& items) {
    std::string text = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
      text += (i ? ", '" : "'") + detail::quote_for_message(items[i]) + "'";
    return text + "]";
  }

  DTypePolicy default_policy_;
  bool has_default_argument_ = false;
  std::vector<keyed_policy> entries_;
};

}  // namespace mixprec
