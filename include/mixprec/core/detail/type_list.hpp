// A list of types to expand as a pack, and the concatenation of lists.
#pragma once

#include <cstddef>

namespace mixprec::detail {

/// One class per list, whatever its length: cheaper to build and to join than a std::tuple or a
/// hana tuple of types.
template <class... T>
struct type_list {
  static constexpr std::size_t size = sizeof...(T);
};

// Joined by partial specialization rather than a fold of an operator: an operator is found by
// argument-dependent lookup, which completes every listed class.
template <class... Lists>
struct join_lists;  // of type_lists only: anything else has no definition
template <>
struct join_lists<> {
  using type = type_list<>;
};
template <class... A>
struct join_lists<type_list<A...>> {
  using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct join_lists<type_list<A...>, type_list<B...>, Rest...> : join_lists<type_list<A..., B...>, Rest...> {};

/// The lists' types, in order.
template <class... Lists>
using join_t = typename join_lists<Lists...>::type;

}  // namespace mixprec::detail
