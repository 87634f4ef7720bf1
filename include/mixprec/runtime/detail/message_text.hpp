// Text from outside (names, keys, policy strings, config values) as error messages show it.
// A message must never fail to build, nor carry bytes that make the next JSON dump throw: a
// layer name with invalid UTF-8 would otherwise surface as nlohmann's type_error 316, or ride
// along in the message into the caller's logs. Every throw site that echoes user input goes
// through quote_for_message (a string) or shown (a JSON value, or a string as JSON text).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixprec::detail {

/// How much of a value a message echoes: the bytes of a string, the characters of a JSON text.
inline constexpr std::size_t message_echo_limit = 256;

/// The length of the well-formed UTF-8 sequence (RFC 3629: no overlongs, surrogates or code
/// points past U+10FFFF) that starts text[at], or 0 if there is none.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead == 0xE0) length = 3, low = 0xA0;
  else if (lead >= 0xE1 && lead <= 0xEF) length = 3, high = lead == 0xED ? 0x9F : 0xBF;
  else if (lead == 0xF0) length = 4, low = 0x90;
  else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
  else if (lead == 0xF4) length = 4, high = 0x8F;
  else return 0;
  if (text.size() - at < length || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

/// Appends `text` as a message shows it: well-formed UTF-8 as it is, bytes that are not UTF-8
/// as \xNN, control characters as \xNN (`as_json`: as \u00NN, and `"` and `\` escaped too);
/// past message_echo_limit bytes, cut at a character and followed by "...(N characters)", N
/// being the whole length in bytes.
inline void append_for_message(std::string& out, std::string_view text, bool as_json) {
  const auto escape = [&](const char* prefix, unsigned char byte) {
    static constexpr char digits[] = "0123456789abcdef";
    ((out += prefix) += digits[byte >> 4]) += digits[byte & 15];
  };
  std::size_t at = 0;
  while (at < text.size() && at < message_echo_limit) {
    const auto byte = static_cast<unsigned char>(text[at]);
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0) escape("\\x", byte);
    else if (as_json && (byte == '"' || byte == '\\')) (out += '\\') += static_cast<char>(byte);
    else if (byte < 0x20 || byte == 0x7F) escape(as_json ? "\\u00" : "\\x", byte);
    else out.append(text.substr(at, length));
    at += length == 0 ? 1 : length;
  }
  if (at < text.size()) out += "...(" + std::to_string(text.size()) + " characters)";
}

/// A string for an error message (see append_for_message); the caller adds the quotes.
inline std::string quote_for_message(std::string_view text) {
  std::string out;
  append_for_message(out, text, false);
  return out;
}

/// A string for an error message as JSON text: in double quotes, escaped as JSON (see
/// append_for_message).
inline std::string shown(std::string_view text) {
  std::string out = "\"";
  append_for_message(out, text, true);
  return out + '"';
}

/// A JSON value for an error message: compact JSON, its strings (and keys) written by
/// append_for_message as JSON; past about message_echo_limit characters, cut and ended by "...".
/// Iterative, so it shows a value of any depth.
template <class Json>
  requires nlohmann::detail::is_basic_json<Json>::value
std::string shown(const Json& value) {
  std::string out;
  // The containers being written, each with its next element.
  struct open_container {
    const Json* container;
    typename Json::const_iterator next;
  };
  std::vector<open_container> open;
  const auto write = [&](const Json& v) {
    if (v.is_string()) out += shown(std::string_view(v.template get_ref<const typename Json::string_t&>()));
    else if (v.is_binary()) out += "<binary>";
    else if (!v.is_structured()) out += v.dump();  // a number, a boolean or null
    else {
      out += v.is_object() ? '{' : '[';
      open.push_back({&v, v.cbegin()});
    }
  };
  write(value);
  while (!open.empty()) {
    if (out.size() > message_echo_limit) return out + "...";
    open_container& top = open.back();
    if (top.next == top.container->cend()) {
      out += top.container->is_object() ? '}' : ']';
      open.pop_back();
      continue;
    }
    if (top.next != top.container->cbegin()) out += ',';
    const auto element = top.next++;
    if (top.container->is_object()) {
      (out += shown(std::string_view(element.key()))) += ':';
    }
    write(*element);  // may grow `open`, invalidating `top`
  }
  return out;
}

}  // namespace mixprec::detail
