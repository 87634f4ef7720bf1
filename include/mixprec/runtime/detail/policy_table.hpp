// The finite set of compile-time policies a runtime DTypePolicy can stand for, generated
// from the dtype registry, and a descriptor table that maps between the two worlds.
// A DTypePolicy is an index into this table (plus the float8 amax history length).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>

#include <mixprec/core/detail/type_list.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/policy.hpp>
#include <mixprec/core/quantized_policy.hpp>

namespace mixprec::detail {

// The policy lists are type_lists. Built with hana::concat and hana::flatten, the same table cost
// every translation unit that includes the runtime policies about 75 MB of compiler memory and a
// third of a second.

/// The dtypes a mixed or jmp-style policy may combine, and quantized sources compute in.
using mixable_dtypes = type_list<float16, bfloat16, float, double>;

/// jmp's output dtype is the compute or the params dtype.
template <class C, class V>
using mixed_policies_for = std::conditional_t<std::is_same_v<C, V>, type_list<>, type_list<Policy<C, V, C>, Policy<C, V, V>>>;

template <class Dtypes>
struct mixed_policies_of;
/// Every mixed policy, by compute dtype, then variable dtype.
template <class... D>
struct mixed_policies_of<type_list<D...>> {
  template <class C>
  using with_compute = join_t<mixed_policies_for<C, D>...>;
  using type = join_t<with_compute<D>...>;
};

/// int8 over float16 compute is rejected, as in Keras.
template <class Source>
using quantized_policies_over =
    join_t<std::conditional_t<std::is_same_v<typename Source::compute_dtype, float16>, type_list<>,
                              type_list<QuantizedPolicy<quantization::int8, Source>>>,
           type_list<QuantizedPolicy<quantization::float8, Source>,
                     QuantizedFloat8Policy<Source, dynamic_amax_history_length>>>;

template <class Sources>
struct quantized_policies_of;
template <class... Source>
struct quantized_policies_of<type_list<Source...>> {
  using type = join_t<quantized_policies_over<Source>...>;
};

/// Called with the dtype registry's entries (hana::unpack): their dtypes.
struct dtypes_of_entries {
  template <class... Entries>
  constexpr auto operator()(boost::hana::basic_type<Entries>...) const {
    return type_list<typename Entries::type...>{};
  }
};

/// The single-dtype policy of each dtype.
template <class Dtypes>
struct single_policies_of;
template <class... D>
struct single_policies_of<type_list<D...>> {
  using type = type_list<Policy<D>...>;
};

/// Quantization sources are the policies Keras can name: a float dtype or mixed_*.
using quantization_sources = join_t<typename single_policies_of<mixable_dtypes>::type,
                                    type_list<policies::mixed_float16, policies::mixed_bfloat16>>;

/// Every policy type DTypePolicy::visit can produce, in table order.
using visitable_policies =
    join_t<typename single_policies_of<decltype(boost::hana::unpack(dtype_registry, dtypes_of_entries{}))>::type,
           typename mixed_policies_of<mixable_dtypes>::type,
           typename quantized_policies_of<quantization_sources>::type>;

inline constexpr std::size_t visitable_policy_count = visitable_policies::size;

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

inline constexpr auto policy_table = []<class... P>(type_list<P...>) {
  return std::array<policy_descriptor, sizeof...(P)>{describe_policy<P>()...};
}(visitable_policies{});

static_assert(visitable_policy_count < 256, "DTypePolicy stores its table position in one byte");

}  // namespace mixprec::detail
