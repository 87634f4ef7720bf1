// Weight regularizers (Keras' l1, l2, l1_l2). They run in the variable dtype, as in Keras: every
// step of the sum is rounded to the weight's own dtype.
#pragma once

#include <span>
#include <type_traits>
#include <variant>

#include <mixprec/core/cast.hpp>

namespace mixprec::regularizers {

/// factor * sum(|w|)
struct l1 {
  double factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    T total = cast<T>(0);
    for (const T& v : w) total = T(total + (v < cast<T>(0) ? T(-v) : v));
    return T(cast<T>(factor) * total);
  }
};

/// factor * sum(w^2)
struct l2 {
  double factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    T total = cast<T>(0);
    for (const T& v : w) total = T(total + T(v * v));
    return T(cast<T>(factor) * total);
  }
};

/// l1 * sum(|w|) + l2 * sum(w^2)
struct l1_l2 {
  double l1_factor = 0.01;
  double l2_factor = 0.01;
  template <class T>
  T operator()(std::span<const T> w) const {
    return T(l1{l1_factor}(w) + l2{l2_factor}(w));
  }
};

/// Any of them (for run-time configuration).
using any = std::variant<l1, l2, l1_l2>;

}  // namespace mixprec::regularizers

namespace mixprec {
template <class R>
concept RegularizerType = std::is_same_v<R, regularizers::l1> || std::is_same_v<R, regularizers::l2> ||
                          std::is_same_v<R, regularizers::l1_l2> || std::is_same_v<R, regularizers::any>;
}  // namespace mixprec
