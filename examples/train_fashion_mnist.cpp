// The demo: trains a classifier on Fashion-MNIST (Debian's dataset-fashion-mnist) in C++ with a
// mixed precision policy, the way a Keras user would with model.fit (Keras 3's progress bar),
// and reports the test accuracy (model.evaluate).
//
//   train_fashion_mnist [--policy mixed_bfloat16|float32|mixed_float16] [--epochs 10]
//                       [--batch-size 128] [--limit N] [--data DIR]
//
// --limit N trains on the first N training images only (a quick run). mixed_float16 trains
// without loss scaling here: the loss-scale optimizer is the next step of the training floor.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

namespace {

constexpr std::size_t pixels = 28 * 28;

/// The bytes of a gzip-compressed file.
std::vector<unsigned char> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    throw std::runtime_error("cannot open " + path +
                             " (Fashion-MNIST comes with Debian's dataset-fashion-mnist; scripts/install-deps.sh installs it)");
  std::vector<unsigned char> bytes;
  std::array<unsigned char, 1 << 16> chunk;
  int n = 0;
  while ((n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0)
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  const bool failed = n < 0;
  gzclose(file);
  if (failed) throw std::runtime_error(path + ": not a readable gzip file");
  return bytes;
}

std::uint32_t big_endian(const std::vector<unsigned char>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) | (std::uint32_t{bytes[at + 2]} << 8) |
         std::uint32_t{bytes[at + 3]};
}

/// An IDX file's payload after checking its magic number and extents: `magic` 0x803 for
/// images (n x 28 x 28), 0x801 for labels (n).
std::vector<unsigned char> read_idx(const std::string& path, std::uint32_t magic, std::size_t& count) {
  const std::vector<unsigned char> bytes = read_gzip(path);
  const std::size_t header = magic == 0x803 ? 16 : 8;
  if (bytes.size() < header || big_endian(bytes, 0) != magic) throw std::runtime_error(path + ": not an IDX file of the expected kind");
  count = big_endian(bytes, 4);
  const std::size_t item = magic == 0x803 ? pixels : 1;
  if (magic == 0x803 && (big_endian(bytes, 8) != 28 || big_endian(bytes, 12) != 28))
    throw std::runtime_error(path + ": images are not 28 x 28");
  if (bytes.size() != header + count * item) throw std::runtime_error(path + ": truncated");
  return {bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end()};
}

struct split {
  std::vector<float> images;          // n x 784, scaled to [0, 1]
  std::vector<std::int32_t> labels;   // n class ids in [0, 10)
  std::size_t size() const { return labels.size(); }
};

split load(const std::string& dir, const std::string& prefix, std::size_t limit) {
  std::size_t n_images = 0, n_labels = 0;
  const auto images = read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz", 0x803, n_images);
  const auto labels = read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", 0x801, n_labels);
  if (n_images != n_labels) throw std::runtime_error(prefix + ": " + std::to_string(n_images) + " images but " + std::to_string(n_labels) + " labels");
  const std::size_t n = std::min(n_images, limit);
  split s;
  s.images.resize(n * pixels);
  for (std::size_t i = 0; i < n * pixels; ++i) s.images[i] = static_cast<float>(images[i]) / 255.0f;
  s.labels.assign(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(n));
  return s;
}

struct options {
  std::string policy = "mixed_bfloat16";
  std::size_t epochs = 10, batch_size = 128, limit = 60000;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing a value after " + std::string(flag));
    const std::string value = argv[++i];
    const auto number = [&] {
      std::size_t n = 0, used = 0;
      try {
        n = std::stoull(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (n == 0 || used != value.size() || value.front() == '-')
        throw std::invalid_argument(std::string(flag) + " must be a positive integer; got " + value);
      return n;
    };
    if (flag == "--policy") o.policy = value;
    else if (flag == "--epochs") o.epochs = number();
    else if (flag == "--batch-size") o.batch_size = number();
    else if (flag == "--limit") o.limit = number();
    else if (flag == "--data") o.data = value;
    else throw std::invalid_argument("unknown option " + std::string(flag) + "; known: --policy, --epochs, --batch-size, --limit, --data");
  }
  if (o.policy != "mixed_bfloat16" && o.policy != "float32" && o.policy != "mixed_float16")
    throw std::invalid_argument("--policy must be mixed_bfloat16, float32 or mixed_float16; got " + o.policy);
  return o;
}

template <class P>
using classifier = Sequential<P, Input<784>, Dense<256, activations::relu>, Dropout<>, Dense<128, activations::relu>, Dense<10>>;

/// A split as tensors: the images (n, 784) and their class ids.
std::pair<Tensor<float, dynamic, 784>, Tensor<std::int32_t, dynamic>> tensors_of(const split& s) {
  return {Tensor<float, dynamic, 784>(value_buffer<float>(s.images.begin(), s.images.end())),
          Tensor<std::int32_t, dynamic>(s.labels)};
}

template <class P>
void train(const options& o, const split& train_set, const split& test_set) {
  classifier<P> model(Dense<256, activations::relu>("hidden_1"), Dropout<>(0.2, "dropout", 1),
                      Dense<128, activations::relu>("hidden_2"), Dense<10>("logits"));
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"});
  std::printf("Fashion-MNIST: %zu training and %zu test images; policy %s; 784-256-128-10 MLP, Adam(1e-3), batch %zu\n",
              train_set.size(), test_set.size(), o.policy.c_str(), o.batch_size);
  std::fflush(stdout);

  const auto [x, y] = tensors_of(train_set);
  const auto start = std::chrono::steady_clock::now();
  model.fit(x, y, {.batch_size = o.batch_size, .epochs = static_cast<int>(o.epochs), .seed = 2026});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto [x_test, y_test] = tensors_of(test_set);
  const Logs test = model.evaluate(x_test, y_test, {.batch_size = 1000, .verbose = 0});
  std::printf("Test: loss %.4f, accuracy %.4f (training took %.1f s)\n", test.at("loss"), test.at("accuracy"), seconds);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    const split train_set = load(o.data, "train", o.limit), test_set = load(o.data, "t10k", 10000);
    if (o.policy == "float32") train<policies::float32>(o, train_set, test_set);
    else if (o.policy == "mixed_float16") train<policies::mixed_float16>(o, train_set, test_set);
    else train<policies::mixed_bfloat16>(o, train_set, test_set);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
