// The dtype registry: every scalar type mixprec knows, with Keras' name, whether it is
// floating, and its bit width. Everything else (dtype_name_v, the concepts, the runtime
// name lookup, DTypePolicy::visit) is derived from this one Hana tuple.
#pragma once

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include <boost/hana/at.hpp>
#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>

#include <mixprec/core/fixed_string.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>

namespace mixprec {

using float32 = float;
using float64 = double;
using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

/// One row of the registry.
template <class T, fixed_string Name, bool Floating>
struct dtype_entry {
  using type = T;
  static constexpr auto name = Name;
  static constexpr bool is_floating = Floating;
  static constexpr int bits = std::is_same_v<T, bool> ? 1 : static_cast<int>(sizeof(T) * 8);
};

/// All dtypes, in the order Keras lists them. Floating dtypes are the ones a mixed policy
/// may use; the others (ints, bool, complex) are valid single-dtype policies only.
inline constexpr auto dtype_registry = boost::hana::make_basic_tuple(
    boost::hana::type_c<dtype_entry<float16, "float16", true>>,
    boost::hana::type_c<dtype_entry<bfloat16, "bfloat16", true>>,
    boost::hana::type_c<dtype_entry<float, "float32", true>>,
    boost::hana::type_c<dtype_entry<double, "float64", true>>,
    boost::hana::type_c<dtype_entry<float8_e4m3fn, "float8_e4m3fn", true>>,
    boost::hana::type_c<dtype_entry<float8_e5m2, "float8_e5m2", true>>,
    boost::hana::type_c<dtype_entry<std::int8_t, "int8", false>>,
    boost::hana::type_c<dtype_entry<std::int16_t, "int16", false>>,
    boost::hana::type_c<dtype_entry<std::int32_t, "int32", false>>,
    boost::hana::type_c<dtype_entry<std::int64_t, "int64", false>>,
    boost::hana::type_c<dtype_entry<std::uint8_t, "uint8", false>>,
    boost::hana::type_c<dtype_entry<std::uint16_t, "uint16", false>>,
    boost::hana::type_c<dtype_entry<std::uint32_t, "uint32", false>>,
    boost::hana::type_c<dtype_entry<std::uint64_t, "uint64", false>>,
    boost::hana::type_c<dtype_entry<bool, "bool", false>>,
    boost::hana::type_c<dtype_entry<complex64, "complex64", false>>,
    boost::hana::type_c<dtype_entry<complex128, "complex128", false>>);

namespace detail {

template <class T, class... Entries>
constexpr std::size_t index_of_dtype(boost::hana::basic_type<Entries>...) {
  constexpr bool matches[] = {std::is_same_v<typename Entries::type, T>...};
  for (std::size_t i = 0; i < sizeof...(Entries); ++i)
    if (matches[i]) return i;
  return sizeof...(Entries);
}

template <class... Entries>
constexpr auto names_of_dtypes(boost::hana::basic_type<Entries>...) {
  return std::array<std::string_view, sizeof...(Entries)>{Entries::name.view()...};
}

}  // namespace detail

inline constexpr std::size_t dtype_count = boost::hana::length(dtype_registry);

/// Position of T in the registry, or dtype_count if T is not a dtype.
template <class T>
inline constexpr std::size_t dtype_index_v =
    boost::hana::unpack(dtype_registry, [](auto... entries) { return detail::index_of_dtype<T>(entries...); });

/// Keras' dtype names, in registry order.
inline constexpr auto dtype_names =
    boost::hana::unpack(dtype_registry, [](auto... entries) { return detail::names_of_dtypes(entries...); });

/// A type listed in the registry.
template <class T>
concept DType = dtype_index_v<T> < dtype_count;

template <class T>
struct dtype_traits {
  static_assert(DType<T>,
                "mixprec: this type is not a dtype. Dtypes are float16, bfloat16, float (float32), double "
                "(float64), float8_e4m3fn, float8_e5m2, the fixed-width integers, bool, complex64 and complex128.");
};
template <DType T>
struct dtype_traits<T> : decltype(+boost::hana::at_c<dtype_index_v<T>>(dtype_registry))::type {};

/// A floating dtype: what a mixed policy's compute and variable dtypes must be.
template <class T>
concept FloatingDType = DType<T> && dtype_traits<T>::is_floating;

/// The dtypes mixprec computes in (kernels, layers, optimizers): float16, bfloat16, float32, float64.
template <class T>
concept ComputeDType =
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Keras' name of a dtype: dtype_name_v<bfloat16> == "bfloat16", dtype_name_v<float> == "float32".
template <class T>
inline constexpr std::string_view dtype_name_v = dtype_traits<T>::name.view();

/// The dtype named `name`, as a registry position; nullopt for names Keras would reject.
constexpr std::optional<std::size_t> find_dtype(std::string_view name) {
  for (std::size_t i = 0; i < dtype_count; ++i)
    if (dtype_names[i] == name) return i;
  return std::nullopt;
}

/// Calls f(boost::hana::type_c<T>) for the dtype at `index` (< dtype_count); returns its result.
template <class F>
constexpr decltype(auto) with_dtype_at(std::size_t index, F&& f) {
  return boost::hana::unpack(dtype_registry, [&](auto... entries) -> decltype(auto) {
    using result = decltype(f(boost::hana::type_c<typename decltype(+boost::hana::at_c<0>(dtype_registry))::type::type>));
    using entry_call = result (*)(F&);
    constexpr entry_call table[] = {+[](F& g) -> result {
      return g(boost::hana::type_c<typename decltype(+entries)::type::type>);
    }...};
    return table[index](f);
  });
}

}  // namespace mixprec
