// Fuzz target: policy strings. The input is a name ("mixed_float16", "p=f32,c=bf16",
// "int8_from_mixed_bfloat16", ...) given to every entry point that parses one: DTypePolicy(name),
// dtype_policies::get, set_dtype_policy, policy_scope, the experimental Policy; an input
// "<mode>\0<source>" also goes to QuantizedDTypePolicy and QuantizedFloat8DTypePolicy.
// Checks: only std::invalid_argument escapes; a rejected name leaves the global policy as it
// was; an accepted policy's name parses back to it, and so do its config and serialized JSON.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <mixprec/runtime.hpp>

#include "fuzz_common.hpp"

namespace {

using namespace mixprec;

/// What holds for every policy the parsers return.
void check_round_trips(const DTypePolicy& policy) {
  // Names go back through the parser of their kind: as in Keras, dtype_policies::get reads every
  // name that starts with a quantization mode as quantized ("int8" and "float8_e4m3fn" are not).
  if (!policy.quantization_mode()) {
    MIXPREC_FUZZ_CHECK(DTypePolicy(policy.name()) == policy);
  } else {
    // The name says all but the class and a float8 history length: QuantizedDTypePolicy("float8",
    // ...) is a class apart from get's QuantizedFloat8DTypePolicy, as in Keras.
    const DTypePolicy again = dtype_policies::get(policy.name());
    MIXPREC_FUZZ_CHECK(again.name() == policy.name());
    if (again.class_name() == policy.class_name() &&
        policy.amax_history_length().value_or(default_amax_history_length) == default_amax_history_length)
      MIXPREC_FUZZ_CHECK(again == policy);
  }
  MIXPREC_FUZZ_CHECK(dtype_policies::deserialize(dtype_policies::serialize(policy)) == policy);
  MIXPREC_FUZZ_CHECK(DTypePolicy::from_config(policy.get_config()) == policy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view name = fuzz::as_text(data, size);
  const DTypePolicy before = dtype_policy();

  std::optional<DTypePolicy> parsed;
  if (fuzz::accepted([&] { parsed = DTypePolicy(name); })) check_round_trips(*parsed);
  std::optional<DTypePolicy> got;
  if (fuzz::accepted([&] { got = dtype_policies::get(name); })) check_round_trips(*got);
  // A name both accept means the same to both.
  if (parsed && got) MIXPREC_FUZZ_CHECK(*got == *parsed);

  if (fuzz::accepted([&] { set_dtype_policy(name); })) {
    MIXPREC_FUZZ_CHECK(got && dtype_policy() == *got);
    set_dtype_policy(before);
  }
  MIXPREC_FUZZ_CHECK(dtype_policy() == before);

  fuzz::accepted([&] {
    policy_scope scope(name);
    MIXPREC_FUZZ_CHECK(got && dtype_policy() == *got);
  });
  MIXPREC_FUZZ_CHECK(dtype_policy() == before);

  fuzz::accepted([&] { (void)mixed_precision::experimental::Policy(name); });

  const auto parts = fuzz::split_at_nul(name);
  if (parts.size() >= 2) {
    std::optional<DTypePolicy> quantized;
    if (fuzz::accepted([&] { quantized = QuantizedDTypePolicy(parts[0], parts[1]); })) check_round_trips(*quantized);
    const std::size_t history = parts.size() >= 3 ? parts[2].size() + 1 : default_amax_history_length;
    if (fuzz::accepted([&] { quantized = QuantizedFloat8DTypePolicy(parts[0], parts[1], history); }))
      check_round_trips(*quantized);
  }
  MIXPREC_FUZZ_CHECK(dtype_policy() == before);
  return 0;
}
