// Numbers as error messages show them: the shortest text that reads back as the value
// ("0.1", "1e-07", "-1", "inf", "nan"), not std::to_string's fixed six decimals.
#pragma once

#include <charconv>
#include <string>

namespace mixprec::detail {

template <class Number>
std::string number_text(Number value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof(text), value).ptr);
}

}  // namespace mixprec::detail
