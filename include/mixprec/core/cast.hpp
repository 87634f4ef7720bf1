// cast<To>(x): the one way to change a scalar's dtype.
//
// Narrow floats widen exactly through float; anything narrows with a single correct rounding
// (from double directly, so there is no double rounding). Floating to integer truncates, as
// static_cast does.
#pragma once

#include <type_traits>

#include <mixprec/core/dtype.hpp>

namespace mixprec {

namespace detail {
template <class T>
concept narrow_floating = std::is_base_of_v<narrow_float<T, T::format, typename T::storage_type>, T>;
}  // namespace detail

template <class To, class From>
  requires DType<To> && DType<From>
constexpr To cast(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (detail::narrow_floating<From>) {
    return cast<To>(static_cast<float>(value));
  } else if constexpr (detail::narrow_floating<To>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, double>)
      return To(value);
    else
      return To(static_cast<double>(value));
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace mixprec
