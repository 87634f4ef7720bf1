// Compile-time policies: names, dtypes, concepts, quantized policies, the infer policy.
#include <doctest/doctest.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

#include <mixprec/core.hpp>

using namespace mixprec;

// Names: Keras' for the policies Keras has, jmp's syntax for any other combination.
static_assert(policies::mixed_float16::name == "mixed_float16");
static_assert(policies::mixed_bfloat16::name == "mixed_bfloat16");
static_assert(policies::float32::name == "float32" && policies::float64::name == "float64");
static_assert(policies::bfloat16::name == "bfloat16" && policies::float16::name == "float16");
static_assert(Policy<std::int32_t>::name == "int32" && Policy<bool>::name == "bool");
static_assert(Policy<bfloat16, float, float>::name == "params=float32,compute=bfloat16,output=float32");
static_assert(Policy<float, bfloat16>::name == "params=bfloat16,compute=float32,output=float32");
static_assert(Policy<float16, double>::name == "params=float64,compute=float16,output=float16");
static_assert(Policy<float8_e4m3fn, float>::name == "params=float32,compute=float8_e4m3fn,output=float8_e4m3fn");

// Dtypes and variable casting.
static_assert(std::is_same_v<policies::mixed_float16::compute_dtype, float16>);
static_assert(std::is_same_v<policies::mixed_float16::variable_dtype, float>);
static_assert(std::is_same_v<policies::mixed_float16::output_dtype, float16>);
static_assert(std::is_same_v<Policy<bfloat16, float, float>::output_dtype, float>);
static_assert(policies::mixed_bfloat16::should_cast_variables);
static_assert(!policies::float32::should_cast_variables && !policies::float16::should_cast_variables);
static_assert(!policies::float32::quantization_mode.has_value());
static_assert(std::is_empty_v<policies::mixed_float16> && std::is_trivially_default_constructible_v<Policy<double>>);

// Concepts.
static_assert(DTypePolicyType<policies::float32> && DTypePolicyType<Policy<std::uint8_t>>);
static_assert(FloatDTypePolicyType<policies::mixed_bfloat16>);
static_assert(FloatingDTypePolicyType<policies::mixed_bfloat16> && !FloatingDTypePolicyType<Policy<std::int64_t>>);
static_assert(!DTypePolicyType<int> && !DTypePolicyType<float16> && !DTypePolicyType<InferPolicy>);

// Quantized policies.
using int8_bf16 = QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>;
static_assert(int8_bf16::name == "int8_from_mixed_bfloat16");
static_assert(*int8_bf16::quantization_mode == "int8");
static_assert(std::is_same_v<int8_bf16::compute_dtype, bfloat16> && std::is_same_v<int8_bf16::variable_dtype, float>);
static_assert(int8_bf16::should_cast_variables);
static_assert(DTypePolicyType<int8_bf16> && QuantizedDTypePolicyType<int8_bf16>);
static_assert(!QuantizedDTypePolicyType<policies::float32> && !FloatDTypePolicyType<int8_bf16>);
using float8_f16 = QuantizedFloat8Policy<policies::mixed_float16>;  // float8 over float16 is fine
static_assert(float8_f16::name == "float8_from_mixed_float16" && *float8_f16::quantization_mode == "float8");
static_assert(float8_f16::amax_history_length == 1024);
static_assert(QuantizedFloat8Policy<policies::float32, 16>::amax_history_length == 16);
static_assert(QuantizedFloat8DTypePolicyType<float8_f16> && !QuantizedFloat8DTypePolicyType<int8_bf16>);
static_assert(QuantizedPolicy<quantization::float8, policies::float32>::name == "float8_from_float32");

// The deprecated infer policy deduces from the input dtype.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<policies::infer, InferPolicy>);
#pragma GCC diagnostic pop
static_assert(std::is_same_v<resolve_policy_t<InferPolicy, bfloat16>, policies::bfloat16>);
static_assert(std::is_same_v<resolve_policy_t<InferPolicy, double>, policies::float64>);
static_assert(std::is_same_v<resolve_policy_t<policies::mixed_float16, double>, policies::mixed_float16>);

TEST_CASE("quantized float8 policies with a run-time amax history length") {
  QuantizedFloat8Policy<policies::mixed_bfloat16, dynamic_amax_history_length> policy;
  CHECK(policy.amax_history_length == default_amax_history_length);
  policy.amax_history_length = 16;
  CHECK(policy.amax_history_length == 16);
  CHECK(decltype(policy)::name == "float8_from_mixed_bfloat16");
}

TEST_CASE("policy names are usable at run time") {
  CHECK(std::string_view(policies::mixed_float16::name) == "mixed_float16");
  CHECK(policies::mixed_float16::fixed_name.size() == 13);
}
