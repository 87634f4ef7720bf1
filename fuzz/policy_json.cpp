// Fuzz target: policy JSON. The input is a JSON document (what dtype_policies::serialize writes,
// a policy config, tf.keras 2.x's "Policy" with a loss scale, ...) given to
// dtype_policies::deserialize and get, DTypePolicy::from_config, the experimental Policy's
// from_config and the loss scale identifiers. Input that does not parse as JSON is skipped:
// nlohmann's parser is not what is tested.
// Checks: only std::invalid_argument escapes; what is accepted serializes and parses back to
// itself; the global policy is never changed.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include <mixprec/runtime.hpp>

#include "fuzz_common.hpp"

namespace {

using namespace mixprec;

void check_round_trips(const DTypePolicy& policy) {
  MIXPREC_FUZZ_CHECK(dtype_policies::deserialize(dtype_policies::serialize(policy)) == policy);
  MIXPREC_FUZZ_CHECK(DTypePolicy::from_config(policy.get_config()) == policy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  const DTypePolicy before = dtype_policy();

  std::optional<DTypePolicy> policy;
  if (fuzz::accepted([&] { policy = dtype_policies::deserialize(json); })) check_round_trips(*policy);
  if (fuzz::accepted([&] { policy = dtype_policies::get(json); })) check_round_trips(*policy);
  if (fuzz::accepted([&] { policy = DTypePolicy::from_config(json); })) check_round_trips(*policy);

  namespace experimental = mixed_precision::experimental;
  std::optional<experimental::Policy> legacy;
  if (fuzz::accepted([&] { legacy = experimental::Policy::from_config(json); })) {
    const auto again = experimental::Policy::from_config(legacy->get_config());
    MIXPREC_FUZZ_CHECK(again.dtype_policy() == legacy->dtype_policy());
    MIXPREC_FUZZ_CHECK(again.get_config() == legacy->get_config());
  }
  std::optional<experimental::LossScale> scale;
  if (fuzz::accepted([&] { scale = experimental::get(json); }) && scale)
    MIXPREC_FUZZ_CHECK(experimental::serialize(*experimental::get(experimental::serialize(*scale))) ==
                       experimental::serialize(*scale));

  MIXPREC_FUZZ_CHECK(dtype_policy() == before);
  return 0;
}
