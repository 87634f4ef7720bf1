// mixprec::datasets (zlib) in a third translation unit of the single-TU program: a missing
// directory is an error that names the Debian package, and scaled<> gives float32 in [0, 1].
#include <cstdint>
#include <stdexcept>
#include <string>

#include <mixprec/datasets.hpp>

bool datasets_in_other_tu() {
  bool names_package = false;
  try {
    (void)mixprec::datasets::fashion_mnist::load_data("/nonexistent/mixprec-consumer");
  } catch (const std::invalid_argument& e) {
    names_package = std::string(e.what()).find("apt-get install dataset-fashion-mnist") != std::string::npos;
  }
  mixprec::datasets::fashion_mnist::Images images(1);
  images[1] = 255;
  const auto x = mixprec::datasets::scaled<28, 28, 1>(images);
  return names_package && x[0] == 0.0f && x[1] == 1.0f;
}
