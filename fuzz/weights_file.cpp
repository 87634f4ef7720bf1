// Fuzz target: weight files. The input is the content of a file (what save_weights writes: magic,
// header length, JSON header, values) loaded into a small fixed model (weights_model.hpp) with
// RuntimeModel::load_weights. The bytes are served from memory: a memfd, opened through
// /proc/self/fd (load_weights takes a path).
// Checks: only std::invalid_argument escapes; a rejected file leaves every weight bit-identical;
// an accepted file's weights save and load back bit-identically.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <mixprec/kernels.hpp>
#include <mixprec/models.hpp>

#include "fuzz_common.hpp"
#include "weights_model.hpp"

namespace {

using namespace mixprec;
using weight_bytes = std::vector<std::vector<std::byte>>;

weight_bytes bytes_of(RuntimeModel& model) {
  weight_bytes result;
  for (const auto& w : model.weights()) result.emplace_back(w.bytes.begin(), w.bytes.end());
  return result;
}

/// Puts the weights back as they were before the input (each input starts from the same model).
void restore(RuntimeModel& model, const weight_bytes& values) {
  auto handles = model.weights();
  for (std::size_t i = 0; i < handles.size(); ++i) handles[i].load(handles[i].dtype, values[i]);
}

struct harness {
  RuntimeModel model = fuzz::weights_model();
  weight_bytes initial = bytes_of(model);
  fuzz::memory_file file{"mixprec-fuzz-weights"};
  // Where an accepted file is saved again (save_weights writes a real file and renames it).
  std::string resaved = (std::filesystem::temp_directory_path() / ("mixprec-fuzz-weights-" + std::to_string(getpid()))).string();
};

harness* the_harness = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kernels::set_num_threads(1);
  the_harness = new harness;  // lives as long as the process
  std::atexit([] {
    std::error_code error;
    std::filesystem::remove(the_harness->resaved, error);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness& h = *the_harness;
  h.file.write(fuzz::as_text(data, size));
  if (!fuzz::accepted([&] { h.model.load_weights(h.file.path()); })) {
    MIXPREC_FUZZ_CHECK(bytes_of(h.model) == h.initial);
    return 0;
  }
  const weight_bytes loaded = bytes_of(h.model);
  h.model.save_weights(h.resaved);
  restore(h.model, h.initial);
  MIXPREC_FUZZ_CHECK(fuzz::accepted([&] { h.model.load_weights(h.resaved); }));
  MIXPREC_FUZZ_CHECK(bytes_of(h.model) == loaded);
  restore(h.model, h.initial);
  return 0;
}
