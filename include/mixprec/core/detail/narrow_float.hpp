// The shared body of float16, bfloat16, float8_e4m3fn and float8_e5m2: a trivially copyable
// wrapper around the bit pattern with correctly rounded conversions and float-based arithmetic.
#pragma once

#include <cstdint>
#include <type_traits>

#include <mixprec/core/detail/minifloat_codec.hpp>

namespace mixprec::detail {

template <class Derived, minifloat_format Format, class Storage>
class narrow_float {
 public:
  using storage_type = Storage;
  static constexpr minifloat_format format = Format;

  /// Bits are left indeterminate, as for built-in arithmetic types (keeps the type trivial).
  narrow_float() = default;
  /// Rounds to nearest, ties to even. NaN stays a quiet NaN with its sign.
  constexpr explicit narrow_float(float value, overflow_mode overflow = overflow_mode::ieee)
      : bits_(static_cast<Storage>(encode_from_float(Format, value, overflow))) {}
  /// Rounds once, directly from binary64 (no double rounding through float).
  constexpr explicit narrow_float(double value, overflow_mode overflow = overflow_mode::ieee)
      : bits_(static_cast<Storage>(encode_from_double(Format, value, overflow))) {}
  template <class Integer>
    requires std::is_integral_v<Integer>
  constexpr explicit narrow_float(Integer value) : narrow_float(static_cast<double>(value)) {}

  static constexpr Derived from_bits(Storage bits) {
    Derived result{};
    result.bits_ = bits;
    return result;
  }
  constexpr Storage to_bits() const { return bits_; }

  /// Exact.
  constexpr explicit operator float() const { return decode_to_float(Format, bits_); }
  constexpr explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }

  // Arithmetic is done in float and rounded back once, as hardware without native
  // 16-bit arithmetic does. Both operands must have the same type: mixing dtypes needs
  // an explicit cast, which is the point of the dtype discipline.
  friend constexpr Derived operator+(Derived a, Derived b) { return Derived(float(a) + float(b)); }
  friend constexpr Derived operator-(Derived a, Derived b) { return Derived(float(a) - float(b)); }
  friend constexpr Derived operator*(Derived a, Derived b) { return Derived(float(a) * float(b)); }
  friend constexpr Derived operator/(Derived a, Derived b) { return Derived(float(a) / float(b)); }
  friend constexpr Derived operator-(Derived a) { return from_bits(static_cast<Storage>(a.bits_ ^ Format.sign_bit())); }
  friend constexpr Derived& operator+=(Derived& a, Derived b) { return a = a + b; }
  friend constexpr Derived& operator-=(Derived& a, Derived b) { return a = a - b; }
  friend constexpr Derived& operator*=(Derived& a, Derived b) { return a = a * b; }
  friend constexpr Derived& operator/=(Derived& a, Derived b) { return a = a / b; }

  // IEEE comparisons: NaN is unordered, -0 == +0.
  friend constexpr bool operator==(Derived a, Derived b) { return float(a) == float(b); }
  friend constexpr bool operator<(Derived a, Derived b) { return float(a) < float(b); }
  friend constexpr bool operator>(Derived a, Derived b) { return float(a) > float(b); }
  friend constexpr bool operator<=(Derived a, Derived b) { return float(a) <= float(b); }
  friend constexpr bool operator>=(Derived a, Derived b) { return float(a) >= float(b); }

 private:
  Storage bits_;
};

}  // namespace mixprec::detail
