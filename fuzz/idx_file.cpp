// Fuzz target: Fashion-MNIST's IDX files. The input is a pair of files (idx_input.hpp: an images
// file and a labels file, gzip-compressed by the input or by the harness) written as
// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz into a directory of the harness's and
// read with datasets::fashion_mnist::load_split.
// Checks: only std::invalid_argument escapes; what loads has as many labels as images, each a
// class id.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <mixprec/datasets.hpp>

#include "fuzz_common.hpp"
#include "idx_input.hpp"

namespace {

namespace fs = std::filesystem;

fs::path directory;

void put(const fs::path& file, const std::string& content) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out.flush()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // In memory where there is a /dev/shm.
  const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  directory = base / ("mixprec-fuzz-idx-" + std::to_string(getpid()));
  fs::create_directories(directory);
  std::atexit([] {
    std::error_code error;
    fs::remove_all(directory, error);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mixprec;
  const auto files = fuzz::decode_idx_input(fuzz::as_text(data, size));
  if (!files) return 0;
  put(directory / "t10k-images-idx3-ubyte.gz", files->images);
  put(directory / "t10k-labels-idx1-ubyte.gz", files->labels);
  fuzz::accepted([&] {
    const auto split = datasets::fashion_mnist::load_split(directory, "t10k");
    MIXPREC_FUZZ_CHECK(split.x.batch() == split.y.batch());
    MIXPREC_FUZZ_CHECK(std::all_of(split.y.values().begin(), split.y.values().end(), [](std::uint8_t y) { return y < 10; }));
  });
  return 0;
}
