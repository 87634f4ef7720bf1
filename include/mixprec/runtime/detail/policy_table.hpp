// The finite set of compile-time policies a runtime DTypePolicy can stand for, generated
// from the dtype registry, and a descriptor table that maps between the two worlds.
// A DTypePolicy is an index into this table (plus the float8 amax history length).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <boost/hana/concat.hpp>
#include <boost/hana/flatten.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>

#include <mixprec/core/dtype.hpp>
#include <mixprec/core/policy.hpp>
#include <mixprec/core/quantized_policy.hpp>

namespace mixprec::detail {

namespace hana = boost::hana;

/// The dtypes a mixed or jmp-style policy may combine, and quantized sources compute in.
inline constexpr auto mixable_dtypes = hana::tuple_t<float16, bfloat16, float, double>;

template <class C, class V>
constexpr auto mixed_policies_for() {
  if constexpr (std::is_same_v<C, V>) {
    return hana::tuple_t<>;
  } else {  // jmp's output dtype is the compute or the params dtype
    return hana::tuple_t<Policy<C, V, C>, Policy<C, V, V>>;
  }
}

template <class C>
constexpr auto mixed_policies_with_compute(hana::basic_type<C>) {
  return hana::unpack(mixable_dtypes, [](auto... v) {
    return hana::flatten(hana::make_tuple(mixed_policies_for<C, typename decltype(v)::type>()...));
  });
}

template <class Source>
constexpr auto quantized_policies_over(hana::basic_type<Source>) {
  auto float8 = hana::tuple_t<QuantizedPolicy<quantization::float8, Source>,
                              QuantizedFloat8Policy<Source, dynamic_amax_history_length>>;
  if constexpr (std::is_same_v<typename Source::compute_dtype, float16>) {
    return float8;  // int8 over float16 compute is rejected, as in Keras
  } else {
    return hana::concat(hana::tuple_t<QuantizedPolicy<quantization::int8, Source>>, float8);
  }
}

inline constexpr auto single_dtype_policies = hana::unpack(
    dtype_registry, [](auto... entries) { return hana::tuple_t<Policy<typename decltype(+entries)::type::type>...>; });

inline constexpr auto mixed_policies = hana::unpack(
    mixable_dtypes, [](auto... c) { return hana::flatten(hana::make_tuple(mixed_policies_with_compute(c)...)); });

/// Quantization sources are the policies Keras can name: a float dtype or mixed_*.
inline constexpr auto quantization_sources = hana::concat(
    hana::unpack(mixable_dtypes, [](auto... t) { return hana::tuple_t<Policy<typename decltype(t)::type>...>; }),
    hana::tuple_t<policies::mixed_float16, policies::mixed_bfloat16>);

inline constexpr auto quantized_policies = hana::unpack(
    quantization_sources, [](auto... s) { return hana::flatten(hana::make_tuple(quantized_policies_over(s)...)); });

/// Every policy type DTypePolicy::visit can produce, in table order.
inline constexpr auto visitable_policies =
    hana::concat(hana::concat(single_dtype_policies, mixed_policies), quantized_policies);

inline constexpr std::size_t visitable_policy_count = hana::length(visitable_policies);

enum class policy_class : std::uint8_t { dtype_policy, quantized, quantized_float8 };

struct policy_descriptor {
  policy_class cls;
  std::uint8_t compute;   // dtype registry positions
  std::uint8_t variable;
  std::uint8_t output;
  std::string_view name;
  std::string_view mode;         // empty unless quantized
  std::string_view source_name;  // empty unless quantized
};

template <class P>
constexpr policy_descriptor describe_policy() {
  policy_descriptor d{policy_class::dtype_policy,
                      static_cast<std::uint8_t>(dtype_index_v<typename P::compute_dtype>),
                      static_cast<std::uint8_t>(dtype_index_v<typename P::variable_dtype>),
                      static_cast<std::uint8_t>(dtype_index_v<typename P::output_dtype>),
                      P::name, {}, {}};
  if constexpr (QuantizedDTypePolicyType<P>) {
    d.cls = QuantizedFloat8DTypePolicyType<P> ? policy_class::quantized_float8 : policy_class::quantized;
    d.mode = *P::quantization_mode;
    d.source_name = P::source_policy::name;
  }
  return d;
}

inline constexpr auto policy_table = hana::unpack(visitable_policies, [](auto... p) {
  return std::array<policy_descriptor, sizeof...(p)>{describe_policy<typename decltype(p)::type>()...};
});

static_assert(visitable_policy_count < 256, "DTypePolicy stores its table position in one byte");

}  // namespace mixprec::detail
