// Fuzz target: DTypePolicyMap configs. The input is "<config JSON>[\0<layer path>]..." : the
// config goes to DTypePolicyMap::from_config (as nlohmann::ordered_json, the order-keeping form
// the header recommends); then every key and every extra path is looked up (get, contains),
// a key is set again (a duplicate) and popped twice. Input that does not parse as JSON is
// skipped.
// Checks: only std::invalid_argument escapes (std::out_of_range from popping a missing key); get_config
// round-trips; a rejected set or pop leaves the map as it was; an exact key finds its policy.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/runtime.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mixprec;
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size));
  const auto config = nlohmann::ordered_json::parse(parts[0], nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return 0;

  std::optional<DTypePolicyMap> map;
  if (!fuzz::accepted([&] { map = DTypePolicyMap::from_config(config); })) return 0;
  const auto saved = map->get_config();
  MIXPREC_FUZZ_CHECK(DTypePolicyMap::from_config(saved).get_config() == saved);

  const std::vector<std::string> keys = map->keys();
  MIXPREC_FUZZ_CHECK(keys.size() == map->size());
  for (const auto& key : keys) {
    MIXPREC_FUZZ_CHECK(map->contains(key));
    // An exact key wins over every regex.
    MIXPREC_FUZZ_CHECK(map->get(key) == dtype_policies::deserialize(nlohmann::json(saved["policy_map"][key])));
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    fuzz::accepted([&] { (void)map->get(parts[i]); });
    (void)map->contains(parts[i]);
  }

  if (!keys.empty()) {
    const std::string& key = keys.front();
    // A duplicate key is refused and changes nothing.
    MIXPREC_FUZZ_CHECK(!fuzz::accepted([&] { map->set(key, "float32"); }));
    MIXPREC_FUZZ_CHECK(map->get_config() == saved);
    const DTypePolicy popped = map->pop(key);
    MIXPREC_FUZZ_CHECK(!map->contains(key));
    bool missing = false;  // popping it again is a lookup of a missing key: std::out_of_range
    try {
      map->pop(key);
    } catch (const std::out_of_range&) {
      missing = true;
    }
    MIXPREC_FUZZ_CHECK(missing);
    MIXPREC_FUZZ_CHECK(map->size() == keys.size() - 1);
    // Setting it back restores the map (at the end of the order).
    map->set(key, popped);
    MIXPREC_FUZZ_CHECK(map->size() == keys.size());
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    // A rejected key or value leaves the map as it was.
    const auto now = map->get_config();
    if (!fuzz::accepted([&] { map->set(parts[i], parts[i]); })) MIXPREC_FUZZ_CHECK(map->get_config() == now);
  }
  return 0;
}
