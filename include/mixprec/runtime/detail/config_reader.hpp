// Reads a Keras config object key by key, each as the type it must have, with errors that name
// the owner and the key: a config written by someone else never surfaces as a JSON library
// exception, and a key nobody read is reported rather than silently ignored. Layers, optimizers
// and schedules all read their configs through it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/number_text.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::detail {

/// A template only so that a TU that reads no config does not compile the readers' JSON code (a
/// non-template class's inline members instantiate what they call, called or not); use
/// `config_reader`.
template <class Deferred = void>
class basic_config_reader {
 public:
  basic_config_reader(const nlohmann::json& config, std::string owner) : config_(config), owner_(std::move(owner)) {
    if (!config.is_object()) fail("its config must be an object. Received: " + shown(config));
  }

  bool has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }
  /// Whether `key` is there, written as null (where Keras takes null as "use the default", has()
  /// is false for it; where Keras rejects None, this tells).
  bool present_but_null(const char* key) const { return config_.contains(key) && config_[key].is_null(); }
  const nlohmann::json& raw(const char* key) {
    read_.insert(key);
    if (!config_.contains(key)) fail(std::string("`") + key + "` is missing.");
    return config_[key];
  }
  /// Marks a key as handled elsewhere (a layer's name and dtype, read by the model).
  void skip(const char* key) { read_.insert(key); }

  double number(const char* key, std::optional<double> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key)) {
      if (fallback) return *fallback;
      fail("`" + std::string(key) + "` must be a number. Received: " + received(key));
    }
    if (!config_[key].is_number()) fail("`" + std::string(key) + "` must be a number. Received: " + received(key));
    const double value = config_[key].get<double>();
    // A JSON built in C++ can hold inf or NaN, which its text writes as null: rejected, so that a
    // config saved and read back cannot silently mean another setting.
    if (!std::isfinite(value)) fail("`" + std::string(key) + "` must be a finite number. Received: " + number_text(value));
    return value;
  }
  std::optional<double> optional_number(const char* key) {
    if (!has(key)) {
      read_.insert(key);
      return std::nullopt;
    }
    return number(key);
  }
  /// An integer in [-2^63, 2^63), written as one (2.0 is not).
  std::int64_t integer(const char* key, std::optional<std::int64_t> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key) && fallback) return *fallback;
    const nlohmann::json& value = has(key) ? config_[key] : nlohmann::json();
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      fail("`" + std::string(key) + "` must be an integer in [-2^63, 2^63). Received: " + received(key));
    return value.get<std::int64_t>();
  }
  /// A non-negative integer up to 2^64 - 1 (a seed); `fallback` when absent or null.
  /// An integer in [0, 2^64), or nothing (null or absent: a seed not given).
  std::optional<std::uint64_t> optional_non_negative(const char* key) {
    read_.insert(key);
    if (!has(key)) return std::nullopt;
    const std::optional<std::uint64_t> value = non_negative_value(config_[key]);
    if (!value) fail("`" + std::string(key) + "` must be a non-negative integer or null. Received: " + received(key));
    return *value;
  }
  /// A positive integer (units, filters).
  std::size_t positive(const char* key, std::optional<std::size_t> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key) && fallback) return *fallback;
    const std::optional<std::uint64_t> value = has(key) ? non_negative_value(config_[key]) : std::nullopt;
    if (!value || *value == 0) fail("`" + std::string(key) + "` must be a positive integer. Received: " + received(key));
    return *value;
  }
  /// A positive integer or a pair of them ([2, 3], or 2 for both).
  std::pair<std::size_t, std::size_t> pair(const char* key,
                                           std::optional<std::pair<std::size_t, std::size_t>> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key) && fallback) return *fallback;
    const nlohmann::json& value = has(key) ? config_[key] : nlohmann::json();
    const auto one = [&](const nlohmann::json& v) {
      const std::optional<std::uint64_t> extent = non_negative_value(v);
      if (!extent || *extent == 0)
        fail("`" + std::string(key) + "` must be a positive integer or a pair of them. Received: " + received(key));
      return *extent;
    };
    if (value.is_array() && value.size() == 2) return {one(value[0]), one(value[1])};
    const std::size_t both = one(value);
    return {both, both};
  }
  bool boolean(const char* key, bool fallback) {
    read_.insert(key);
    if (!has(key)) return fallback;
    if (!config_[key].is_boolean()) fail("`" + std::string(key) + "` must be true or false. Received: " + received(key));
    return config_[key].get<bool>();
  }
  /// One of `choices` (the first when the key is absent); `ignoring_case`: in any case, as Keras
  /// reads padding and data_format ("SAME" is "same").
  std::string_view choice(const char* key, std::span<const std::string_view> choices, bool ignoring_case = false) {
    read_.insert(key);
    if (!has(key)) return choices.front();
    if (config_[key].is_string()) {
      std::string given = config_[key].get<std::string>();
      if (ignoring_case)
        for (char& c : given) c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
      for (std::string_view option : choices)
        if (given == option) return option;
    }
    std::string accepted;
    for (std::string_view option : choices) accepted += (accepted.empty() ? "\"" : ", \"") + std::string(option) + "\"";
    fail("`" + std::string(key) + "` must be one of " + accepted + ". Received: " + received(key));
  }
  /// A setting mixprec does not implement: accepted only at its default (null or `neutral`),
  /// written as such (an integer setting at 1.0 is not 1: JSON text compared, not numbers).
  void unsupported(const char* key, const nlohmann::json& neutral = nullptr) {
    read_.insert(key);
    if (has(key) && shown(config_[key]) != shown(neutral))
      fail("`" + std::string(key) + "` is not supported by mixprec; it must be " + shown(neutral) +
           ". Received: " + received(key));
  }
  /// Throws for any key not read: mixprec would otherwise ignore that setting.
  void finish() const {
    for (const auto& [key, value] : config_.items())
      if (!read_.contains(key))
        fail("unknown setting `" + shown(nlohmann::json(key)) + "` (value " + shown(value) + ").");
  }
  [[noreturn]] void fail(const std::string& what) const { throw std::invalid_argument(owner_ + ": " + what); }

  /// An integer written as one (no read through double) in [0, 2^64), or nothing.
  static std::optional<std::uint64_t> non_negative_value(const nlohmann::json& value) {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
      return static_cast<std::uint64_t>(value.get<std::int64_t>());
    return std::nullopt;
  }

 private:
  std::string received(const char* key) const { return config_.contains(key) ? shown(config_[key]) : "nothing"; }

  const nlohmann::json& config_;
  std::string owner_;
  std::set<std::string> read_;
};

using config_reader = basic_config_reader<>;

}  // namespace mixprec::detail
