// Fuzz target: checkpoint files. The input is the content of a file (what save_checkpoint writes:
// a weight file whose header has a "training" section) loaded with load_checkpoint into each of
// two compiled models (checkpoint_models.hpp), one with every kind of training state.
// The header's checksums (of the training section and of each weight's values) are recomputed
// before the load when the header parses, as a forger would: otherwise nearly every mutation
// would stop at "checksum mismatch" and the training section's reader would never be reached.
// Checks: only std::invalid_argument escapes load_checkpoint; a rejected file leaves the model's
// whole training state (weights, slots, iterations, loss scale, layer states: everything a
// checkpoint holds) bit-identical; an accepted one saves and loads back to the same bytes, and a
// training step from it either runs or throws what the contract allows.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/kernels.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

#include "checkpoint_models.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace mixprec;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The input with its checksums made consistent, if its header is a JSON object whose depth
/// mixprec reads; else the input as it is.
std::string with_checksums(const std::uint8_t* data, std::size_t size) {
  std::string file(reinterpret_cast<const char*>(data), size);
  std::uint64_t header_length = 0;
  if (size < 16) return file;
  std::memcpy(&header_length, data + 8, sizeof header_length);
  if (header_length > size - 16) return file;
  const auto values = std::as_bytes(std::span(data + 16 + header_length, size - 16 - header_length));
  nlohmann::json header = nlohmann::json::parse(file.begin() + 16, file.begin() + 16 + static_cast<std::ptrdiff_t>(header_length),
                                                nullptr, /*allow_exceptions=*/false);
  try {
    detail::check_json_depth(header, "the fuzz input's header");  // dump() below recurses
  } catch (const std::invalid_argument&) {
    return file;
  }
  if (!header.is_object()) return file;
  if (header.contains("training")) header["training_fnv1a64"] = detail::json_checksum(header["training"]);
  if (auto weights = header.find("weights"); weights != header.end() && weights->is_array())
    for (auto& item : *weights) {
      if (!item.is_object()) continue;
      const auto offset = item.find("offset"), bytes = item.find("bytes");
      if (offset == item.end() || bytes == item.end() || !offset->is_number_unsigned() || !bytes->is_number_unsigned()) continue;
      const auto at = offset->get<std::uint64_t>(), count = bytes->get<std::uint64_t>();
      if (at <= values.size() && count <= values.size() - at)
        item["fnv1a64"] = detail::hex64(detail::fnv1a64(values.subspan(at, count)));
    }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error&) {  // text that is not UTF-8: left to the loader
    return file;
  }
  const std::uint64_t length = text.size();
  std::string fixed = file.substr(0, 8);
  fixed.append(reinterpret_cast<const char*>(&length), sizeof length).append(text);
  return fixed.append(reinterpret_cast<const char*>(values.data()), values.size());
}

/// One compiled model and its state before any input, as the bytes of its own checkpoint.
struct subject {
  RuntimeModel model;
  std::string directory;
  std::string initial_file = directory + "/" + model.name() + ".initial";
  std::string snapshot_file = directory + "/" + model.name() + ".snapshot";
  std::string loaded_file = directory + "/" + model.name() + ".loaded";
  std::string initial;

  subject(RuntimeModel compiled, std::string dir) : model(std::move(compiled)), directory(std::move(dir)) {
    model.train_on_batch(fuzz::training_inputs(), fuzz::training_labels());  // slots built, iterations 1
    save_checkpoint(model, initial_file);
    initial = read_file(initial_file);
  }
  /// The bytes of the model's checkpoint, written to `file`.
  std::string state(const std::string& file) {
    save_checkpoint(model, file);
    return read_file(file);
  }
  std::string state() { return state(snapshot_file); }
  void reset() {
    load_checkpoint(model, initial_file);
    MIXPREC_FUZZ_CHECK(state() == initial);
  }
};

struct harness {
  fuzz::memory_file file{"mixprec-fuzz-checkpoint"};
  std::string directory = (fs::temp_directory_path() / ("mixprec-fuzz-checkpoint-" + std::to_string(getpid()))).string();
  std::vector<subject> subjects;

  harness() {
    fs::create_directories(directory);
    subjects.reserve(2);  // the subjects stay where they were built
    subjects.emplace_back(fuzz::scaled_adam_model(), directory);
    subjects.emplace_back(fuzz::momentum_sgd_model(), directory);
  }
};

harness* the_harness = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kernels::set_num_threads(1);
  the_harness = new harness;  // lives as long as the process
  std::atexit([] {
    std::error_code error;
    fs::remove_all(the_harness->directory, error);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness& h = *the_harness;
  h.file.write(with_checksums(data, size));
  for (subject& s : h.subjects) {
    if (!fuzz::accepted([&] { load_checkpoint(s.model, h.file.path()); })) {
      MIXPREC_FUZZ_CHECK(s.state() == s.initial);
      continue;
    }
    const std::string loaded = s.state(s.loaded_file);
    s.reset();
    MIXPREC_FUZZ_CHECK(fuzz::accepted([&] { load_checkpoint(s.model, s.loaded_file); }));
    MIXPREC_FUZZ_CHECK(s.state() == loaded);
    try {
      s.model.train_on_batch(fuzz::training_inputs(), fuzz::training_labels());
    } catch (const std::runtime_error& stalled) {  // a loaded loss scale that has stalled at its minimum
      MIXPREC_FUZZ_CHECK(std::string(stalled.what()).find("training steps in a row") != std::string::npos);
    }
    s.reset();
  }
  return 0;
}
