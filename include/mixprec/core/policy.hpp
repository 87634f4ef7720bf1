// Policy<Compute, Variable, Output>: a dtype policy as a type.
//
//   Compute  - the dtype a layer computes in (its inputs are cast to it),
//   Variable - the dtype its weights are stored in,
//   Output   - the dtype a model's final output is cast to (jmp's "output"; defaults to Compute).
//
// Policies are empty tags; everything about them is a compile-time constant:
//   Policy<float16, float>::name == "mixed_float16", ::should_cast_variables == true.
#pragma once

#include <optional>
#include <string_view>
#include <type_traits>

#include <mixprec/core/dtype.hpp>
#include <mixprec/core/fixed_string.hpp>

namespace mixprec {

namespace detail {

template <class Compute, class Variable, class Output>
constexpr auto policy_name() {
  if constexpr (!(DType<Compute> && DType<Variable> && DType<Output>)) {
    return fixed_string("");  // reported by Policy's static_asserts; nothing more to report
  } else {
    constexpr auto compute = dtype_traits<Compute>::name;
    constexpr auto variable = dtype_traits<Variable>::name;
    constexpr auto output = dtype_traits<Output>::name;
    if constexpr (std::is_same_v<Compute, Variable> && std::is_same_v<Compute, Output>) {
      return compute;
    } else if constexpr (std::is_same_v<Variable, float> && std::is_same_v<Output, Compute> &&
                         (std::is_same_v<Compute, float16> || std::is_same_v<Compute, bfloat16>)) {
      return fixed_string("mixed_") + compute;
    } else {
      // Any other combination is named in jmp's syntax, which DTypePolicy parses back.
      return fixed_string("params=") + variable + fixed_string(",compute=") + compute + fixed_string(",output=") +
             output;
    }
  }
}

}  // namespace detail

template <class Compute, class Variable = Compute, class Output = Compute>
struct Policy {
  static_assert(DType<Compute>, "Policy<Compute, ...>: Compute is not a mixprec dtype (see dtype_registry).");
  // Variable and Output default to Compute: a bad Compute is reported once.
  static_assert(DType<Variable> || std::is_same_v<Variable, Compute>,
                "Policy<Compute, Variable>: Variable is not a mixprec dtype (see dtype_registry).");
  static_assert(DType<Output> || std::is_same_v<Output, Compute>,
                "Policy<Compute, Variable, Output>: Output is not a mixprec dtype (see dtype_registry).");
  static_assert((std::is_same_v<Compute, Variable> && std::is_same_v<Compute, Output>) ||
                    (FloatingDType<Compute> && FloatingDType<Variable> && FloatingDType<Output>),
                "Policy<Compute, Variable, Output>: a mixed policy (dtypes that differ) needs floating dtypes for "
                "all three; integer, bool and complex dtypes are only valid alone, as in Policy<int32_t>.");

  using compute_dtype = Compute;
  using variable_dtype = Variable;
  using output_dtype = Output;

  static constexpr auto fixed_name = detail::policy_name<Compute, Variable, Output>();
  static constexpr std::string_view name = fixed_name.view();
  /// Weights are read in the compute dtype inside a layer's call (Keras' AutoCastVariable).
  static constexpr bool should_cast_variables = !std::is_same_v<Compute, Variable>;
  static constexpr std::optional<std::string_view> quantization_mode = std::nullopt;
};

namespace detail {
template <class T>
struct is_float_policy : std::false_type {};
template <class C, class V, class O>
struct is_float_policy<Policy<C, V, O>> : std::true_type {};
}  // namespace detail

/// Anything that acts as a dtype policy: Policy<> or a quantized policy.
template <class P>
concept DTypePolicyType = requires {
  typename P::compute_dtype;
  typename P::variable_dtype;
  typename P::output_dtype;
  { P::name } -> std::convertible_to<std::string_view>;
  { P::should_cast_variables } -> std::convertible_to<bool>;
} && DType<typename P::compute_dtype> && DType<typename P::variable_dtype>;

/// A plain (not quantized) policy: Policy<C, V, O>.
template <class P>
concept FloatDTypePolicyType = detail::is_float_policy<std::remove_cvref_t<P>>::value;

/// A policy whose compute and variable dtypes are floating: what layers with weights need.
template <class P>
concept FloatingDTypePolicyType =
    DTypePolicyType<P> && FloatingDType<typename P::compute_dtype> && FloatingDType<typename P::variable_dtype>;

namespace policies {
using float16 = Policy<mixprec::float16>;
using bfloat16 = Policy<mixprec::bfloat16>;
using float32 = Policy<float>;
using float64 = Policy<double>;
using float8_e4m3fn = Policy<mixprec::float8_e4m3fn>;
using float8_e5m2 = Policy<mixprec::float8_e5m2>;
using mixed_float16 = Policy<mixprec::float16, float>;
using mixed_bfloat16 = Policy<mixprec::bfloat16, float>;
}  // namespace policies

}  // namespace mixprec
