// Fuzz target: RuntimeModel configs. The input is a Keras Sequential config (what
// RuntimeModel::get_config writes) given to RuntimeModel::from_config; a model that builds is
// called once on zeros of its input shape (one sample, whose sizes the build checked against the
// caps) and rebuilt from its own get_config().
// Input that does not parse as JSON is skipped.
// Checks: only std::invalid_argument escapes; a model that builds runs, with the output shape
// it announced; from_config(get_config()) rebuilds the same config; the global policy is never
// changed.
//
// Memory: LLVMFuzzerInitialize sets mixprec's size caps far below libFuzzer's memory limit, so a
// config that asks for more must be rejected by mixprec before it allocates.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/kernels.hpp>
#include <mixprec/models.hpp>

#include "fuzz_common.hpp"

namespace {

constexpr std::size_t batch = 1;  // a larger batch may pass the caps, rightly rejected
// The harness's own bound on the input it builds (values per example), not mixprec's cap.
constexpr std::size_t max_input_values = std::size_t{1} << 16;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mixprec::kernels::set_num_threads(1);  // one input at a time; no pool threads to account for
  // The size caps, well under libFuzzer's -malloc_limit_mb (the RSS limit, 2 GiB): a config that
  // asks for more must be rejected by mixprec, before it allocates, not by the fuzzer.
  mixprec::set_size_limits({.max_parameters = 4'000'000, .max_allocation_bytes = std::size_t{64} << 20});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mixprec;
  const auto config = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return 0;
  const DTypePolicy before = dtype_policy();

  std::optional<RuntimeModel> model;
  const bool built = fuzz::accepted([&] { model = RuntimeModel::from_config(config); });
  MIXPREC_FUZZ_CHECK(dtype_policy() == before);
  if (!built) return 0;

  const auto saved = model->get_config();
  std::optional<RuntimeModel> rebuilt;
  MIXPREC_FUZZ_CHECK(fuzz::accepted([&] { rebuilt = RuntimeModel::from_config(saved); }));
  MIXPREC_FUZZ_CHECK(rebuilt->get_config() == saved);

  std::size_t values = 1;
  for (std::size_t extent : model->input_shape())
    if (__builtin_mul_overflow(values, extent, &values) || values > max_input_values) return 0;
  std::vector<std::size_t> extents{batch};
  extents.insert(extents.end(), model->input_shape().begin(), model->input_shape().end());
  const AnyTensor x(extents, std::vector<float>(batch * values, 0.0f));
  AnyTensor y;
  MIXPREC_FUZZ_CHECK(fuzz::accepted([&] { y = (*model)(x); }));
  std::vector<std::size_t> expected{batch};
  expected.insert(expected.end(), model->output_shape().begin(), model->output_shape().end());
  MIXPREC_FUZZ_CHECK(y.extents() == expected);
  return 0;
}
