// Reads a Keras config object key by key, each as the type it must have, with errors that name
// the owner and the key: a config written by someone else never surfaces as a JSON library
// exception, and a key nobody read is reported rather than silently ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace mixprec::training::detail {

/// A JSON value for an error message; invalid UTF-8 is shown replaced rather than thrown on.
inline std::string shown(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class config_reader {
 public:
  config_reader(const nlohmann::json& config, std::string owner) : config_(config), owner_(std::move(owner)) {
    if (!config.is_object()) fail("its config must be an object. Received: " + shown(config));
  }

  bool has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }
  const nlohmann::json& raw(const char* key) {
    read_.insert(key);
    return config_.at(key);
  }

  double number(const char* key, std::optional<double> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key)) {
      if (fallback) return *fallback;
      fail("`" + std::string(key) + "` must be a number. Received: " + received(key));
    }
    if (!config_[key].is_number()) fail("`" + std::string(key) + "` must be a number. Received: " + received(key));
    return config_[key].get<double>();
  }
  std::optional<double> optional_number(const char* key) {
    if (!has(key)) {
      read_.insert(key);
      return std::nullopt;
    }
    return number(key);
  }
  std::int64_t integer(const char* key, std::optional<std::int64_t> fallback = std::nullopt) {
    read_.insert(key);
    if (!has(key)) {
      if (fallback) return *fallback;
      fail("`" + std::string(key) + "` must be an integer. Received: " + received(key));
    }
    if (!config_[key].is_number_integer()) fail("`" + std::string(key) + "` must be an integer. Received: " + received(key));
    return config_[key].get<std::int64_t>();
  }
  bool boolean(const char* key, bool fallback) {
    read_.insert(key);
    if (!has(key)) return fallback;
    if (!config_[key].is_boolean()) fail("`" + std::string(key) + "` must be true or false. Received: " + received(key));
    return config_[key].get<bool>();
  }
  /// A setting mixprec does not implement: accepted only at its default (null or `neutral`).
  void unsupported(const char* key, const nlohmann::json& neutral = nullptr) {
    read_.insert(key);
    if (has(key) && config_[key] != neutral)
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

 private:
  std::string received(const char* key) const { return config_.contains(key) ? shown(config_[key]) : "nothing"; }

  const nlohmann::json& config_;
  std::string owner_;
  std::set<std::string> read_;
};

}  // namespace mixprec::training::detail
