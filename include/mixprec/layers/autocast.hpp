// autocast_to<Compute>(x): what a layer's call receives. Every floating tensor inside x, however
// deeply nested (std::tuple, std::pair, std::array, std::vector, Hana structs), is converted to
// the compute dtype; integer and bool tensors (ids, masks) and everything else pass through.
// Where nothing needs converting the result is a reference to x itself: no copy.
//
// A struct is nested data when it is adapted with BOOST_HANA_DEFINE_STRUCT and is a template
// over its dtype (template <class T> struct Pair { ... }), so that Pair<float> can become
// Pair<bfloat16>.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/at_key.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/pair.hpp>

#include <mixprec/core/dtype.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {

template <class S, class To>
struct rebind_struct {
  using type = void;
};
template <template <class> class S, class T, class To>
struct rebind_struct<S<T>, To> {
  using type = S<To>;
};

template <class Compute, class X>
struct needs_autocast : std::false_type {};

template <class Compute, class T, std::size_t... E>
struct needs_autocast<Compute, Tensor<T, E...>>
    : std::bool_constant<FloatingDType<T> && !std::is_same_v<T, Compute>> {};
template <class Compute, class... Ts>
struct needs_autocast<Compute, std::tuple<Ts...>> : std::bool_constant<(needs_autocast<Compute, Ts>::value || ...)> {};
template <class Compute, class A, class B>
struct needs_autocast<Compute, std::pair<A, B>>
    : std::bool_constant<needs_autocast<Compute, A>::value || needs_autocast<Compute, B>::value> {};
template <class Compute, class X, std::size_t N>
struct needs_autocast<Compute, std::array<X, N>> : needs_autocast<Compute, X> {};
template <class Compute, class X, class Allocator>
struct needs_autocast<Compute, std::vector<X, Allocator>> : needs_autocast<Compute, X> {};

template <class Compute, class X>
constexpr bool struct_needs_autocast() {
  if constexpr (boost::hana::Struct<X>::value) {
    bool needed = false;
    boost::hana::for_each(boost::hana::accessors<X>(), [&](auto accessor) {
      using member = std::remove_cvref_t<decltype(boost::hana::second(accessor)(std::declval<const X&>()))>;
      needed = needed || needs_autocast<Compute, member>::value || struct_needs_autocast<Compute, member>();
    });
    return needed;
  } else {
    return false;
  }
}

}  // namespace detail

/// True when autocast_to<Compute> has something to convert in an X.
template <class Compute, class X>
inline constexpr bool needs_autocast_v =
    detail::needs_autocast<Compute, std::remove_cvref_t<X>>::value ||
    detail::struct_needs_autocast<Compute, std::remove_cvref_t<X>>();

template <class Compute, class X>
decltype(auto) autocast_to(const X& x) {
  if constexpr (!needs_autocast_v<Compute, X>) {
    return (x);  // a reference: nothing to convert
  } else if constexpr (TensorType<X>) {
    return tensor_cast<Compute>(x);
  } else if constexpr (requires { x.first; x.second; }) {  // std::pair
    using first = decltype(autocast_to<Compute>(x.first));
    using second = decltype(autocast_to<Compute>(x.second));
    return std::pair<first, second>(autocast_to<Compute>(x.first), autocast_to<Compute>(x.second));
  } else if constexpr (requires { std::tuple_size<X>::value; } && !requires { x.size(); }) {  // std::tuple
    return std::apply(
        [](const auto&... elements) {
          return std::tuple<decltype(autocast_to<Compute>(elements))...>(autocast_to<Compute>(elements)...);
        },
        x);
  } else if constexpr (requires { std::tuple_size<X>::value; }) {  // std::array
    using element = std::remove_cvref_t<decltype(autocast_to<Compute>(x[0]))>;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<element, sizeof...(I)>{autocast_to<Compute>(x[I])...};
    }(std::make_index_sequence<std::tuple_size<X>::value>{});
  } else if constexpr (requires { x.begin(); x.size(); }) {  // std::vector
    std::vector<std::remove_cvref_t<decltype(autocast_to<Compute>(x[0]))>> result;
    result.reserve(x.size());
    for (const auto& element : x) result.push_back(autocast_to<Compute>(element));
    return result;
  } else {
    using target = typename detail::rebind_struct<X, Compute>::type;
    static_assert(!std::is_void_v<target>,
                  "autocast: this struct holds floating tensors, so a layer must receive it in its compute dtype; "
                  "make it a template over its dtype (template <class T> struct S { Tensor<T, ...> ...; }) so that "
                  "S<float> can become S<compute_dtype>.");
    target result;
    boost::hana::for_each(boost::hana::accessors<X>(), [&](auto accessor) {
      boost::hana::at_key(result, boost::hana::first(accessor)) = autocast_to<Compute>(boost::hana::second(accessor)(x));
    });
    return result;
  }
}

/// The type a layer's call receives for an argument of type X (a reference when nothing changes).
template <class Compute, class X>
using autocast_t = decltype(autocast_to<Compute>(std::declval<const X&>()));

}  // namespace mixprec
