// Quantized policies as types (Keras' QuantizedDTypePolicy / QuantizedFloat8DTypePolicy):
//
//   QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>::name == "int8_from_mixed_bfloat16"
//   QuantizedFloat8Policy<policies::float32>::amax_history_length == 1024
//
// The compute and variable dtypes are the source policy's.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

#include <mixprec/core/fixed_string.hpp>
#include <mixprec/core/policy.hpp>

namespace mixprec {

namespace quantization {
struct int8 {
  static constexpr fixed_string name = "int8";
};
struct float8 {
  static constexpr fixed_string name = "float8";
};
}  // namespace quantization

template <class Mode>
concept QuantizationMode = std::is_same_v<Mode, quantization::int8> || std::is_same_v<Mode, quantization::float8>;

template <class Mode, class Source>
struct QuantizedPolicy {
  static_assert(QuantizationMode<Mode>,
                "QuantizedPolicy<Mode, Source>: Mode must be quantization::int8 or quantization::float8.");
  static_assert(FloatDTypePolicyType<Source> && FloatingDType<typename Source::compute_dtype>,
                "QuantizedPolicy<Mode, Source>: Source must be a floating Policy<...>, such as "
                "policies::float32 or policies::mixed_bfloat16.");
  static_assert(!(std::is_same_v<Mode, quantization::int8> &&
                  std::is_same_v<typename Source::compute_dtype, mixprec::float16>),
                "Quantization mode='int8' doesn't work well with compute_dtype='float16'. "
                "Use a bfloat16 or float32 source policy, or quantization::float8.");

  using mode = Mode;
  using source_policy = Source;
  using compute_dtype = typename Source::compute_dtype;
  using variable_dtype = typename Source::variable_dtype;
  using output_dtype = typename Source::output_dtype;

  static constexpr auto fixed_name = Mode::name + fixed_string("_from_") + Source::fixed_name;
  static constexpr std::string_view name = fixed_name.view();
  static constexpr bool should_cast_variables = Source::should_cast_variables;
  static constexpr std::optional<std::string_view> quantization_mode = Mode::name.view();
};

/// QuantizedFloat8Policy<Source, dynamic_amax_history_length> keeps the length as a run-time
/// member (as std::span does with std::dynamic_extent); DTypePolicy::visit produces it.
inline constexpr std::size_t dynamic_amax_history_length = static_cast<std::size_t>(-1);
inline constexpr std::size_t default_amax_history_length = 1024;

template <class Source, std::size_t AmaxHistoryLength = default_amax_history_length>
struct QuantizedFloat8Policy : QuantizedPolicy<quantization::float8, Source> {
  static_assert(AmaxHistoryLength > 0, "QuantizedFloat8Policy: the amax history needs at least one entry.");
  static constexpr std::size_t amax_history_length = AmaxHistoryLength;
};

template <class Source>
struct QuantizedFloat8Policy<Source, dynamic_amax_history_length> : QuantizedPolicy<quantization::float8, Source> {
  std::size_t amax_history_length = default_amax_history_length;
};

namespace detail {
template <class T>
struct is_quantized_policy : std::false_type {};
template <class M, class S>
struct is_quantized_policy<QuantizedPolicy<M, S>> : std::true_type {};
template <class S, std::size_t N>
struct is_quantized_policy<QuantizedFloat8Policy<S, N>> : std::true_type {};

template <class T>
struct is_quantized_float8_policy : std::false_type {};
template <class S, std::size_t N>
struct is_quantized_float8_policy<QuantizedFloat8Policy<S, N>> : std::true_type {};
}  // namespace detail

template <class P>
concept QuantizedDTypePolicyType = detail::is_quantized_policy<std::remove_cvref_t<P>>::value;

/// QuantizedFloat8Policy<...>: a float8 policy with an amax history (Keras' QuantizedFloat8DTypePolicy).
template <class P>
concept QuantizedFloat8DTypePolicyType = detail::is_quantized_float8_policy<std::remove_cvref_t<P>>::value;

}  // namespace mixprec
