// A string usable as a template argument and concatenated at compile time; it is how
// policy names such as "mixed_bfloat16" or "int8_from_float32" become constants.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace mixprec {

template <std::size_t N>
struct fixed_string {
  char chars[N + 1] = {};

  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&literal)[N + 1]) { std::copy_n(literal, N + 1, chars); }

  static constexpr std::size_t size() { return N; }
  constexpr std::string_view view() const { return {chars, N}; }
  constexpr operator std::string_view() const { return view(); }

  template <std::size_t M>
  friend constexpr fixed_string<N + M> operator+(const fixed_string& a, const fixed_string<M>& b) {
    fixed_string<N + M> result;
    std::copy_n(a.chars, N, result.chars);
    std::copy_n(b.chars, M, result.chars + N);
    return result;
  }
  template <std::size_t M>
  friend constexpr bool operator==(const fixed_string& a, const fixed_string<M>& b) {
    return a.view() == b.view();
  }
};

template <std::size_t N>
fixed_string(const char (&)[N]) -> fixed_string<N - 1>;

/// Decimal digits of a non-negative integer, as a fixed_string.
template <std::size_t Value>
constexpr auto fixed_string_from_number() {
  constexpr std::size_t digits = [] {
    std::size_t count = 1;
    for (std::size_t v = Value; v >= 10; v /= 10) ++count;
    return count;
  }();
  fixed_string<digits> result;
  std::size_t v = Value;
  for (std::size_t i = digits; i-- > 0; v /= 10) result.chars[i] = static_cast<char>('0' + v % 10);
  return result;
}

}  // namespace mixprec
