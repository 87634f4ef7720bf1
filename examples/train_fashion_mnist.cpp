// The demo: trains a classifier on Fashion-MNIST (Debian's dataset-fashion-mnist) in C++ with a
// mixed precision policy, the way a Keras user would with train_on_batch, and reports the test
// accuracy.
//
//   train_fashion_mnist [--policy mixed_bfloat16|float32|mixed_float16] [--epochs 10]
//                       [--batch-size 128] [--limit N] [--data DIR]
//
// --limit N trains on the first N training images only (a quick run). mixed_float16 trains
// without loss scaling here: the loss-scale optimizer is the next step of the training floor.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <mixprec/datasets.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

namespace {

constexpr std::size_t pixels = 28 * 28;

struct split {
  Tensor<float, dynamic, 784> images;   // n x 784, scaled to [0, 1]
  Tensor<std::uint8_t, dynamic> labels;  // n class ids in [0, 10)
  std::size_t size() const { return labels.batch(); }
};

/// The first `limit` examples of a split, as the MLP takes them.
split first(datasets::fashion_mnist::Data&& data, std::size_t limit) {
  const std::size_t n = std::min(data.size(), limit);
  if (n < data.size()) {
    auto images = std::move(data.x).release_values();
    auto labels = std::move(data.y).release_values();
    images.resize(n * pixels);
    labels.resize(n);
    data.x = datasets::fashion_mnist::Images(std::move(images));
    data.y = datasets::fashion_mnist::Labels(std::move(labels));
  }
  return {datasets::scaled<784>(data.x), std::move(data.y)};
}

struct options {
  std::string policy = "mixed_bfloat16";
  std::size_t epochs = 10, batch_size = 128, limit = 60000;
  std::string data = datasets::fashion_mnist::default_directory.string();
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

/// Rows `order[first, first + count)` of a split as a batch.
std::pair<Tensor<float, dynamic, 784>, Tensor<std::int32_t, dynamic>> batch_of(const split& s,
                                                                              const std::vector<std::size_t>& order,
                                                                              std::size_t first, std::size_t count) {
  value_buffer<float> x(count * pixels);
  std::vector<std::int32_t> y(count);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t row = order[first + r];
    std::copy_n(s.images.row(row).begin(), pixels, x.begin() + static_cast<std::ptrdiff_t>(r * pixels));
    y[r] = s.labels[row];
  }
  return {Tensor<float, dynamic, 784>(std::move(x)), Tensor<std::int32_t, dynamic>(y)};
}

template <class P>
void train(const options& o, const split& train_set, const split& test_set) {
  using clock = std::chrono::steady_clock;
  classifier<P> model(Dense<256, activations::relu>("hidden_1"), Dropout<>(0.2, "dropout", 1),
                      Dense<128, activations::relu>("hidden_2"), Dense<10>("logits"));
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"});
  std::printf("Fashion-MNIST: %zu training and %zu test images; policy %s; 784-256-128-10 MLP, Adam(1e-3), batch %zu\n",
              train_set.size(), test_set.size(), o.policy.c_str(), o.batch_size);

  std::vector<std::size_t> order(train_set.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 shuffle(2026);
  double seconds = 0.0;
  for (std::size_t epoch = 1; epoch <= o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle);
    double loss = 0.0, correct = 0.0;
    const auto start = clock::now();
    for (std::size_t first = 0; first < order.size(); first += o.batch_size) {
      const std::size_t count = std::min(o.batch_size, order.size() - first);
      const auto [x, y] = batch_of(train_set, order, first, count);
      const Logs logs = model.train_on_batch(x, y);
      loss += logs.at("loss") * static_cast<double>(count);
      correct += logs.at("accuracy") * static_cast<double>(count);
    }
    const double epoch_seconds = std::chrono::duration<double>(clock::now() - start).count();
    seconds += epoch_seconds;
    const double n = static_cast<double>(order.size());
    std::printf("Epoch %zu/%zu - %.1fs - %.2f ms/step - loss: %.4f - accuracy: %.4f\n", epoch, o.epochs, epoch_seconds,
                1e3 * epoch_seconds / static_cast<double>((order.size() + o.batch_size - 1) / o.batch_size), loss / n,
                correct / n);
  }
  std::vector<std::size_t> all(test_set.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const auto [x, y] = batch_of(test_set, all, 0, all.size());
  const Logs test = model.test_on_batch(x, y);
  std::printf("Test: loss %.4f, accuracy %.4f (training took %.1f s)\n", test.at("loss"), test.at("accuracy"), seconds);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    auto [train_data, test_data] = datasets::fashion_mnist::load_data(o.data);
    const split train_set = first(std::move(train_data), o.limit), test_set = first(std::move(test_data), 10000);
    if (o.policy == "float32") train<policies::float32>(o, train_set, test_set);
    else if (o.policy == "mixed_float16") train<policies::mixed_float16>(o, train_set, test_set);
    else train<policies::mixed_bfloat16>(o, train_set, test_set);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
